/**
 * Limits (docs/security.md) against a real broker's server: body bytes, record bytes, records per request, WebSocket
 * frame bytes, open connections, requests in flight on a data socket, per-principal rates (token buckets on a manual
 * clock), and where webhooks may go. Each answers a typed error (or closes the socket) and stores nothing refused.
 */
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import WebSocket from 'ws';
import { describe, expect, it } from 'vitest';
import { BinaryApi } from '../../src/client/binary-api.js';
import { HttpApi } from '../../src/client/http-api.js';
import { ManualClock } from '../../src/common/clock.js';
import { postBatch } from '../../src/security/webhook-post.js';
import { decodeFrame, encodeFrame, FRAME_KIND } from '../../src/protocol/data-frames.js';
import { OutboundPolicy } from '../../src/security/outbound.js';
import { Quotas } from '../../src/security/quotas.js';
import { encodeBatch } from '../../src/protocol/record-batch.js';
import { asyncCodeOf, errorOf } from '../helpers/errors.js';
import { serveSecured } from '../helpers/secured-broker.js';

const one = (value: string | Buffer) => ({ key: null, value: Buffer.from(value) });

describe('quotas', () => {
  it('let a burst of one second through, then refuse with the wait, per principal; a refused request takes nothing', () => {
    const clock = new ManualClock(1_000);
    const quotas = new Quotas(clock, { requestsPerSec: 3, produceBytesPerSec: 1000 });
    for (let i = 0; i < 3; i++) quotas.take('alice');
    expect(errorOf(() => quotas.take('alice')).context).toMatchObject({ quota: 'requestsPerSec', limit: 3, retryAfterMs: 334 });
    quotas.take('bob'); // each principal has its own buckets
    clock.advance(333);
    expect(errorOf(() => quotas.take('alice')).code).toBe('RATE_LIMITED');
    clock.advance(1);
    quotas.take('alice');

    // One produce above a second's worth passes, then the debt is paid before the next.
    clock.advance(10_000);
    quotas.take('carol', 2500);
    expect(errorOf(() => quotas.take('carol', 1)).context).toMatchObject({ quota: 'produceBytesPerSec', retryAfterMs: 1500 });
    clock.advance(1500);
    expect(errorOf(() => quotas.take('carol', 1)).code).toBe('RATE_LIMITED'); // exactly out of debt is not yet credit
    clock.advance(1);
    quotas.take('carol', 1);
    expect(new Quotas(clock, { requestsPerSec: 0, produceBytesPerSec: 0 }).limited).toBe(false);
  });

  it('hold HTTP requests and data-path frames to the principal\'s rates', async () => {
    const clock = new ManualClock(1_000);
    const { url } = await serveSecured({ server: { quotas: new Quotas(clock, { requestsPerSec: 5, produceBytesPerSec: 0 }) } });
    const api = new HttpApi(url, { token: '' });
    await api.createTopic({ topic: 't', partitions: 1 });
    for (let i = 0; i < 4; i++) await api.listTopics();
    const refused = await api.listTopics().then(() => undefined, (e: unknown) => e as { code: string; context: Record<string, unknown> });
    expect(refused).toMatchObject({ code: 'RATE_LIMITED', context: { principal: 'anonymous', retryAfterMs: 200 } });
    const res = await fetch(`${url}/health`); // public routes are not counted
    expect(res.status).toBe(200);
    clock.advance(1000);
    // Six produce frames on the data path: five answered, the sixth refused.
    const kinds = await new Promise<number[]>((resolve, reject) => {
      const ws = new WebSocket(`${url.replace('http', 'ws')}/data`);
      const batch = encodeBatch([one('r')], 0, 0);
      const seen: number[] = [];
      ws.on('open', () => {
        for (let id = 1; id <= 6; id++) ws.send(encodeFrame(FRAME_KIND.PRODUCE, id, { topic: 't', batches: [{ partition: 0, bytes: batch.length }] }, [batch]));
      });
      ws.on('message', (data: Buffer) => {
        seen.push(decodeFrame(data).kind);
        if (seen.length === 6) { ws.close(); resolve(seen); }
      });
      ws.on('error', reject);
    });
    expect(kinds.filter((k) => k === FRAME_KIND.PRODUCED)).toHaveLength(5);
    expect(kinds.filter((k) => k === FRAME_KIND.ERROR)).toHaveLength(1);
    clock.advance(1000);
    expect((await api.describeTopic('t')).partitions[0]!.highWatermark).toBe(5);
  });


  it('count a produce\'s body bytes as they are read, chunked or not', async () => {
    const clock = new ManualClock(1_000);
    const { url } = await serveSecured({ server: { quotas: new Quotas(clock, { requestsPerSec: 0, produceBytesPerSec: 1000 }) } });
    await new HttpApi(url, { token: '' }).createTopic({ topic: 't', partitions: 1 });
    /** A produce sent chunked (no content-length), in two writes. */
    const chunked = (text: string) => new Promise<number>((resolve, reject) => {
      const req = http.request(`${url}/topics/t/records`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      req.on('error', reject);
      req.write(text.slice(0, 10));
      req.end(text.slice(10));
    });
    const body = JSON.stringify({ records: [{ value: 'x'.repeat(1500) }] });
    expect(await chunked(body)).toBe(200); // a second's worth and more passes, then the debt is paid
    expect(await chunked(body)).toBe(429);
    clock.advance(500);
    expect(await chunked(body)).toBe(429); // 26 bytes still owed
    clock.advance(100);
    expect(await chunked(body)).toBe(200);
  });
});

describe('request limits', () => {
  it('refuse bodies, records and requests above the limits whole, and close a socket sending a frame above its limit', async () => {
    const { url } = await serveSecured({
      broker: { maxRecordBytes: 2048, maxRecordsPerRequest: 10 },
      server: { limits: { maxBodyBytes: 64 * 1024, maxFrameBytes: 32 * 1024 } },
    });
    const api = new HttpApi(url, { token: '' });
    const binary = new BinaryApi(url, { token: '' });
    await api.createTopic({ topic: 't', partitions: 1 });
    const records = (n: number, bytes = 10) => Array.from({ length: n }, () => one(Buffer.alloc(bytes, 'x')));

    expect(await asyncCodeOf(api.produce({ topic: 't', records: records(40, 2000) }))).toBe('REQUEST_TOO_LARGE'); // ~107 KB of base64
    expect(await asyncCodeOf(api.produce({ topic: 't', records: records(11) }))).toBe('REQUEST_TOO_LARGE');
    expect(await asyncCodeOf(binary.produce({ topic: 't', records: records(11) }))).toBe('REQUEST_TOO_LARGE');
    expect(await asyncCodeOf(api.produce({ topic: 't', records: records(1, 4096) }))).toBe('RECORD_TOO_LARGE');
    await api.produce({ topic: 't', records: records(10) });
    await binary.produce({ topic: 't', records: records(10) });
    expect((await api.describeTopic('t')).partitions[0]!.highWatermark).toBe(20);
    binary.close();

    // A frame above the limit closes the socket with 1009 (message too big).
    const closed = await new Promise<number>((resolve) => {
      const ws = new WebSocket(`${url.replace('http', 'ws')}/data`);
      ws.on('open', () => ws.send(encodeFrame(FRAME_KIND.PRODUCE, 1, { topic: 't', batches: [] }, [Buffer.alloc(40 * 1024)])));
      ws.on('close', (code) => resolve(code));
    });
    expect(closed).toBe(1009);
    expect((await api.describeTopic('t')).partitions[0]!.highWatermark).toBe(20);
  });

  it('answers a connection above the limit 503 RESOURCE_EXHAUSTED and serves again once one closes; closes silent ones', async () => {
    const { url } = await serveSecured({ server: { limits: { maxConnections: 2, idleTimeoutMs: 1000 } } });
    const { port } = new URL(url);
    const open = await Promise.all([0, 1].map(() => new Promise<net.Socket>((resolve) => {
      const s = net.connect(Number(port), '127.0.0.1', () => resolve(s));
    })));
    const answer = await new Promise<string>((resolve) => {
      const s = net.connect(Number(port), '127.0.0.1', () => s.write('GET /health HTTP/1.1\r\nhost: x\r\n\r\n'));
      let text = '';
      s.on('data', (d: Buffer) => (text += d.toString()));
      s.on('close', () => resolve(text));
    });
    expect(answer).toMatch(/^HTTP\/1\.1 503/);
    expect(JSON.parse(answer.slice(answer.indexOf('{')))).toMatchObject({ code: 'RESOURCE_EXHAUSTED', resource: 'connections', limit: 2 });
    open[0]!.destroy();
    await expect.poll(async () => (await fetch(`${url}/health`).catch(() => ({ status: 0 }))).status).toBe(200);
    // A connection that never sends a request does not hold its place past the idle timeout.
    await new Promise<void>((resolve) => open[1]!.once('close', () => resolve()));
  });

  it('does not cut a request waiting for its answer longer than the idle timeout, and times the connection out once answered', async () => {
    const { url } = await serveSecured({ server: { limits: { idleTimeoutMs: 300 } } });
    const api = new HttpApi(url, { token: '' });
    await api.createTopic({ topic: 'quiet', partitions: 1 });
    const { port } = new URL(url);
    const socket = net.connect(Number(port), '127.0.0.1');
    let text = '';
    socket.on('data', (d: Buffer) => (text += d.toString()));
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    // A long poll of 1 s on an empty partition: 700 ms past the idle timeout with nothing sent either way.
    const body = JSON.stringify({ partitions: [{ partition: 0, offset: 0 }], maxWaitMs: 1000 });
    socket.write(`POST /topics/quiet/fetch HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`);
    const started = performance.now();
    await expect.poll(() => text, { timeout: 5000 }).toMatch(/^HTTP\/1\.1 200[\s\S]*"records":\[\]/);
    expect(performance.now() - started).toBeGreaterThanOrEqual(900);
    await closed; // idle again once answered: closed by the idle timeout (the test times out if never)
  });

  it('pauses reading a data socket while it has the most requests in flight, then answers every one', async () => {
    const { url } = await serveSecured({ server: { limits: { maxInFlightPerConnection: 1 } } });
    const api = new HttpApi(url, { token: '' });
    await api.createTopic({ topic: 'quiet', partitions: 1 });
    await api.createTopic({ topic: 'busy', partitions: 1 });
    const answers: number[] = [];
    await new Promise<void>((resolve, reject) => {
      const ws = new WebSocket(`${url.replace('http', 'ws')}/data`);
      ws.on('open', () => {
        // A long-poll on an empty topic holds the one slot: the fetch of another topic waits behind it.
        ws.send(encodeFrame(FRAME_KIND.FETCH, 1, { topic: 'quiet', partitions: [{ partition: 0, offset: 0 }], maxWaitMs: 300 }));
        ws.send(encodeFrame(FRAME_KIND.FETCH, 2, { topic: 'busy', partitions: [{ partition: 0, offset: 0 }] }));
      });
      ws.on('message', (data: Buffer) => {
        answers.push(decodeFrame(data).requestId);
        if (answers.length === 2) { ws.close(); resolve(); }
      });
      ws.on('error', reject);
    });
    expect(answers).toEqual([1, 2]);
  });
});

describe('where webhooks may go', () => {
  it('http(s) only, and by default no internal destination, by literal or by resolution; webhookAllowPrivate allows them', async () => {
    const { url } = await serveSecured();
    const api = new HttpApi(url, { token: '' });
    await api.createTopic({ topic: 't', partitions: 1 });
    const subscribe = (pushEndpoint: string) => api.subscribe({ groupId: 'g', topic: 't', deliveryMode: 'push', pushEndpoint });
    for (const endpoint of ['http://127.0.0.1:9/hook', 'http://[::1]/hook', 'http://10.0.0.7/hook', 'http://localhost:8080/', 'http://LOCALHOST./x',
      'http://metadata.localhost/', 'http://[64:ff9b::7f00:1]:9/hook', 'http://[2002:a9fe:a9fe::]/latest/meta-data/', 'http://[::ffff:127.0.0.1]:9/']) {
      expect(await asyncCodeOf(subscribe(endpoint)), endpoint).toBe('FORBIDDEN');
    }
    expect(await asyncCodeOf(subscribe('ftp://example.com/x'))).toBe('INVALID_REQUEST');
    expect(await asyncCodeOf(api.addAlertSink('http://192.168.0.10/alerts'))).toBe('FORBIDDEN');
    await subscribe('https://93.184.216.34/hook'); // public: accepted (nothing is sent yet)
    await api.addAlertSink('https://93.184.216.34/alerts');

    // A name that resolves to an internal address (the machine's own name) is refused when the POST connects.
    const outcome = await postBatch(`http://${os.hostname()}:7399/hook`, '{}', {}, 5000, new AbortController(), new OutboundPolicy());
    expect(outcome).toMatchObject({ ok: false });
    expect(!outcome.ok && outcome.error).toMatch(/resolves to .*(loopback|this machine)/);

    // --webhook-deny-private is the default, kept; --webhook-allow-private lets them through.
    const compat = new HttpApi((await serveSecured({ broker: { webhookDenyPrivate: true } })).url, { token: '' });
    await compat.createTopic({ topic: 't', partitions: 1 });
    expect(await asyncCodeOf(compat.subscribe({ groupId: 'g', topic: 't', deliveryMode: 'push', pushEndpoint: 'http://127.0.0.1:9/hook' }))).toBe('FORBIDDEN');
    // (test/delivery/webhook.test.ts delivers to push endpoints on 127.0.0.1 with it.)
    const open = new HttpApi((await serveSecured({ broker: { webhookAllowPrivate: true } })).url, { token: '' });
    await open.addAlertSink('http://192.168.0.10/alerts');
    await open.addAlertSink('http://[64:ff9b::7f00:1]/alerts');
    await expect(serveSecured({ broker: { webhookAllowPrivate: true, webhookDenyPrivate: true } })).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
  });
});

import net from 'node:net';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { Broker } from '../../src/broker/broker.js';
import { createHttpServer } from '../../src/server/http-server.js';
import { Onelog } from '../../src/client/index.js';
import { OnelogError } from '../../src/protocol/errors.js';
import { tmpDir } from '../helpers/tmp.js';

let broker: Broker;
let app: FastifyInstance;

beforeEach(async () => {
  broker = await Broker.open({ dataDir: tmpDir(), maxRecordBytes: 1000 });
  app = createHttpServer(broker);
  await broker.createTopic({ topic: 't', partitions: 2 });
});
afterEach(async () => {
  await app.close();
  await broker.close();
});

const post = (url: string, payload: unknown) => app.inject({ method: 'POST', url, payload: payload as object });

describe('HTTP API', () => {
  it('answers a disk or descriptor shortage met outside the log store (catalog, offsets) as RESOURCE_EXHAUSTED, 503', async () => {
    const full = Object.assign(new Error('SQLITE_FULL: database or disk is full'), { code: 'SQLITE_FULL' });
    vi.spyOn(broker, 'createTopic').mockRejectedValueOnce(full);
    const res = await post('/topics', { topic: 'u', partitions: 1 });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ code: 'RESOURCE_EXHAUSTED', resource: 'disk', errno: 'SQLITE_FULL' });
    vi.spyOn(broker, 'listTopics').mockRejectedValueOnce(Object.assign(new Error('EMFILE: too many open files'), { code: 'EMFILE' }));
    expect((await app.inject({ method: 'GET', url: '/topics' })).json()).toMatchObject({ code: 'RESOURCE_EXHAUSTED', resource: 'open-files' });
    expect((await app.inject({ method: 'GET', url: '/topics' })).statusCode).toBe(200); // then normal service
  });

  it('produces JSON values as their text and reads them back in utf8', async () => {
    const res = await post('/topics/t/records', {
      records: [
        { key: 'k', value: { a: 1 }, partition: 1, headers: { h: 'x' }, timestamp: '2015-09-12T00:00:00Z' },
        { value: 'plain', partition: 1, timestamp: 5 },
      ],
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ topic: 't', offsets: [{ partition: 1, offset: 0 }, { partition: 1, offset: 1 }] });
    const fetched = await post('/topics/t/fetch', { partitions: [{ partition: 1, offset: 0 }] });
    expect(fetched.json().partitions[0].records).toEqual([
      { offset: 0, timestamp: Date.parse('2015-09-12T00:00:00Z'), key: 'k', value: '{"a":1}', headers: { h: 'x' } },
      { offset: 1, timestamp: 5, key: null, value: 'plain', headers: {} },
    ]);
  });

  it('answers errors as { code, message, ...context } with the registry status, keeping what was stored', async () => {
    await post('/topics/t/records', { records: [{ value: 'kept', partition: 0 }] });
    const cases: Array<[Promise<{ statusCode: number; json(): { code: string; message: string } }>, number, string]> = [
      [post('/topics/nope/records', { records: [{ value: 'x' }] }), 404, 'UNKNOWN_TOPIC'],
      [post('/topics/t/records', { records: [{ value: 'x', partition: -1 }] }), 400, 'INVALID_REQUEST'],
      [post('/topics/t/records', { records: [{ value: 'x', partition: 7 }] }), 404, 'UNKNOWN_PARTITION'],
      [post('/topics/t/records', { records: [{ value: 'x', partition: 0 }, { value: 'y'.repeat(2000) }] }), 413, 'RECORD_TOO_LARGE'],
      [post('/topics/t/records', { records: [] }), 400, 'INVALID_REQUEST'],
      [post('/topics/t/records', { records: [{ value: 'x', timestamp: 'yesterday' }] }), 400, 'INVALID_RECORD'],
      [post('/topics/t/records', { encoding: 'base64', records: [{ value: 'aGVsbG8=!!!garbage' }] }), 400, 'INVALID_RECORD'],
      [post('/topics/t/records', { encoding: 'base64', records: [{ value: '%%%' }] }), 400, 'INVALID_RECORD'],
      [app.inject({ method: 'POST', url: '/topics/t/records', headers: { 'content-type': 'application/json' }, payload: '{"records": [' }), 400, 'INVALID_REQUEST'],
      [app.inject({ method: 'GET', url: '/nowhere' }), 404, 'NOT_FOUND'],
      [post('/topics', { topic: 't', partitions: 1 }), 409, 'TOPIC_ALREADY_EXISTS'],
      [post('/topics/t/delete-records', { partition: 0, beforeOffset: 99 }), 409, 'OFFSET_OUT_OF_RANGE'],
      [post('/topics/t/delete-records', { partition: 0, beforeOffset: -1001 }), 409, 'OFFSET_OUT_OF_RANGE'],
      [post('/groups/g/offsets', { topic: 't', offsets: [{ partition: 0, offset: -1 }] }), 400, 'INVALID_REQUEST'],
      [post('/groups/g/offsets/reset', { topic: 't', spec: { to: 'sideways' } }), 400, 'INVALID_REQUEST'],
      [app.inject({ method: 'GET', url: '/groups/unknown' }), 404, 'UNKNOWN_GROUP'],
    ];
    for (const [pending, status, code] of cases) {
      const res = await pending;
      expect(res.statusCode, code).toBe(status);
      expect(res.json().code).toBe(code);
      expect(res.json().message.length).toBeGreaterThan(10);
    }
    const tooLarge = (await post('/topics/t/records', { records: [{ value: 'y'.repeat(2000) }] })).json();
    expect(tooLarge).toMatchObject({ topic: 't', index: 0, maxRecordBytes: 1000 });
    const d = (await app.inject({ method: 'GET', url: '/topics/t' })).json();
    expect(d.partitions.map((p: { highWatermark: number }) => p.highWatermark)).toEqual([1, 0]);
    // A commit ahead of the log is taken, as Kafka takes it; -1 deletes records up to the high watermark.
    expect((await post('/groups/g/offsets', { topic: 't', offsets: [{ partition: 0, offset: 5 }] })).statusCode).toBe(204);
    expect((await post('/topics/t/delete-records', { partition: 0, beforeOffset: -1 })).json()).toMatchObject({ previousLogStartOffset: 0, logStartOffset: 1 });
  });

  it('alters a topic and enforces its retention on demand', async () => {
    await post('/topics/t/records', { records: [{ value: 'old', partition: 0, timestamp: 1000 }, { value: 'new', partition: 0 }] });
    const altered = await post('/topics/t/config', { config: { retentionMs: 60_000 } });
    expect(altered.statusCode).toBe(200);
    expect(altered.json().config.retentionMs).toBe(60_000);
    const bad = await post('/topics/t/config', { config: { retentionMs: 'soon' } });
    expect([bad.statusCode, bad.json().code]).toEqual([400, 'INVALID_CONFIG']);
    const r = await post('/topics/t/enforce-retention', {});
    expect(r.json().partitions).toEqual([
      { partition: 0, previousLogStartOffset: 0, logStartOffset: 1, reason: 'retention-time' },
      { partition: 1, previousLogStartOffset: 0, logStartOffset: 0, reason: null },
    ]);
  });

  it('serves the typed client over a real socket, bytes intact', async () => {
    const address = await app.listen({ port: 0, host: '127.0.0.1' });
    const onelog = new Onelog({ url: address });
    const binary = Buffer.from([0, 255, 1, 254, 10, 13]);
    await onelog.producer().send({ topic: 't', messages: [{ key: binary, value: binary, headers: { b: binary }, partition: 0 }] });
    const consumer = onelog.consumer({ groupId: 'g', startPolicy: 'earliest', maxWaitMs: 50 });
    consumer.subscribe({ topic: 't' });
    const seen: Buffer[] = [];
    await consumer.run({
      eachMessage: async ({ message }) => {
        seen.push(message.value!, message.key!, message.headers[0]!.value!);
        await consumer.stop();
      },
    });
    expect(seen).toEqual([binary, binary, binary]);
    const g = await onelog.admin().describeGroup('g');
    expect(g.subscriptions[0]!.partitions[0]!.committedOffset).toBe(1);
    await expect(onelog.admin().describeTopic('missing')).rejects.toMatchObject({ code: 'UNKNOWN_TOPIC' });
    await expect(new Onelog({ url: 'http://127.0.0.1:1' }).admin().listTopics()).rejects.toBeInstanceOf(OnelogError);
  });

  it('answers a request that reaches it while it closes BROKER_CLOSED (retriable), not a bare 503', async () => {
    const address = await app.listen({ port: 0, host: '127.0.0.1' });
    // The first request is held in its handler while the server begins to close; the second is sent on the same
    // kept-alive connection once the first is answered (as a produce on a client's kept-alive connection during a SIGTERM).
    let release: () => void = () => {};
    let reached: () => void = () => {};
    const inHandler = new Promise<void>((resolve) => (reached = resolve));
    const listTopics = broker.listTopics.bind(broker);
    vi.spyOn(broker, 'listTopics').mockImplementationOnce(async () => {
      reached();
      await new Promise<void>((resolve) => (release = resolve));
      return listTopics();
    });
    const { port } = new URL(address);
    const socket = net.connect(Number(port), '127.0.0.1');
    let text = '';
    let firstAnswered: () => void = () => {};
    const answered = new Promise<void>((resolve) => (firstAnswered = resolve));
    socket.on('data', (d: Buffer) => {
      text += d.toString();
      if (text.includes('"partitions":2}]}')) firstAnswered();
    });
    const ended = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.write('GET /topics HTTP/1.1\r\nHost: x\r\n\r\n');
    await inHandler;
    const closing = app.close();
    // The server stops listening once its preClose hooks ran: the closing state is set by then.
    while (app.server.listening) await new Promise((resolve) => setImmediate(resolve));
    release();
    await answered;
    const body = JSON.stringify({ records: [{ value: 'x', partition: 0 }] });
    socket.write(`POST /topics/t/records HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    // Answered, the connection ends (so the closing server is not held by it).
    await ended;
    await closing;
    const answers = text.split(/(?=HTTP\/1\.1 )/);
    expect(answers.map((a) => a.slice(0, 12))).toEqual(['HTTP/1.1 200', 'HTTP/1.1 503']);
    expect(JSON.parse(answers[1]!.slice(answers[1]!.indexOf('\r\n\r\n') + 4))).toMatchObject({ code: 'BROKER_CLOSED' });
    expect(OnelogError.fromJSON({ code: 'BROKER_CLOSED', message: '' }).retriable).toBe(true);
    expect((await broker.fetch({ topic: 't', partitions: [{ partition: 0, offset: 0 }] })).partitions[0]!.records).toEqual([]);
  });

  it('names the cluster\'s lease in every answer when given one (cluster mode), and in none otherwise', async () => {
    expect((await app.inject({ method: 'GET', url: '/topics' })).headers['x-onelog-lease-ms']).toBeUndefined();
    const leased = createHttpServer(broker, { leaseMs: 2500 });
    try {
      expect((await leased.inject({ method: 'GET', url: '/topics' })).headers['x-onelog-lease-ms']).toBe('2500');
      expect((await leased.inject({ method: 'GET', url: '/topics/missing' })).headers['x-onelog-lease-ms']).toBe('2500');
    } finally {
      await leased.close();
    }
  });

  it('runs a member through join, fenced commit, heartbeat, leave and group delete over HTTP', async () => {
    const joined = await post('/groups/g/members', { topics: ['t'], startPolicy: 'earliest', sessionTimeoutMs: 10_000, clientId: 'curl' });
    expect(joined.statusCode).toBe(200);
    const member = joined.json();
    expect(member).toMatchObject({ groupId: 'g', generationId: 1, heartbeatIntervalMs: 3000, state: 'Stable' });
    expect(member.memberId).toMatch(/^curl-/);
    expect(member.assignment).toEqual([{ topic: 't', partition: 0, offset: 0 }, { topic: 't', partition: 1, offset: 0 }]);
    await post('/topics/t/records', { records: [{ value: 'a', partition: 0 }] });

    const stale = await post('/groups/g/offsets', { topic: 't', memberId: member.memberId, generationId: 0, offsets: [{ partition: 0, offset: 1 }] });
    expect(stale.statusCode).toBe(409);
    expect(stale.json()).toMatchObject({ code: 'ILLEGAL_GENERATION', currentGenerationId: 1 });
    const anonymous = await post('/groups/g/offsets', { topic: 't', offsets: [{ partition: 0, offset: 1 }] });
    expect(anonymous.json().code).toBe('UNKNOWN_MEMBER_ID');
    const ok = await post('/groups/g/offsets', { topic: 't', memberId: member.memberId, generationId: 1, offsets: [{ partition: 0, offset: 1 }] });
    expect(ok.statusCode).toBe(204);

    const fetched = await post('/topics/t/fetch', {
      groupId: 'g', memberId: member.memberId, generationId: 1, partitions: [{ partition: 0, offset: 1 }],
    });
    expect(fetched.json()).toMatchObject({ generationId: 1, partitions: [{ partition: 0, records: [] }] });
    const beat = await post(`/groups/g/members/${member.memberId}/heartbeat`, { generationId: 1, owned: member.assignment });
    expect(beat.json()).toMatchObject({ generationId: 1, state: 'Stable' });

    expect((await app.inject({ method: 'DELETE', url: '/groups/g' })).json().code).toBe('NON_EMPTY_GROUP');
    expect((await app.inject({ method: 'DELETE', url: `/groups/g/members/${member.memberId}` })).statusCode).toBe(204);
    const described = (await app.inject({ method: 'GET', url: '/groups/g' })).json();
    expect(described).toMatchObject({ state: 'Empty', members: [] });
    expect(described.subscriptions[0].partitions[0].committedOffset).toBe(1);
    expect((await app.inject({ method: 'DELETE', url: '/groups/g' })).statusCode).toBe(204);
    expect((await app.inject({ method: 'GET', url: '/groups/g' })).json().code).toBe('UNKNOWN_GROUP');
  });

  it('issues producer ids and stores a retried idempotent produce once', async () => {
    const { producerId, producerEpoch } = (await post('/producers', {})).json();
    const body = { records: [{ value: 'once', partition: 1 }], idempotence: { producerId, producerEpoch, baseSequences: { 1: 0 } } };
    const first = await post('/topics/t/records', body);
    const retry = await post('/topics/t/records', body);
    expect(retry.json()).toEqual(first.json());
    const gap = await post('/topics/t/records', { ...body, idempotence: { ...body.idempotence, baseSequences: { 1: 5 } } });
    expect(gap.json()).toMatchObject({ code: 'OUT_OF_ORDER_SEQUENCE', expectedSequence: 1, baseSequence: 5 });
    const fetched = await post('/topics/t/fetch', { partitions: [{ partition: 1, offset: 0 }] });
    expect(fetched.json().partitions[0].records.map((r: { value: string }) => r.value)).toEqual(['once']);
  });

  it('refuses a misspelt field of a group request, naming it, instead of ignoring it', async () => {
    const res = await post('/groups/g/members', { topics: ['t'], onOutofRange: 'earliest' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'INVALID_REQUEST', field: 'onOutofRange' });
    expect(res.json().message).toContain('unknown field "onOutofRange"');
    const commit = await post('/groups/g/offsets', { topic: 't', memberId: 'm', offsets: [{ partition: 0, offset: 0 }] });
    expect(commit.json()).toMatchObject({ code: 'INVALID_REQUEST' });
    expect(commit.json().message).toContain('generationId must be the integer from the member\'s last join or heartbeat answer');
  });
});

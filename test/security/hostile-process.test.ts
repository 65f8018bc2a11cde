/**
 * Hostile input against a real `onelog serve` process (bin/onelog.js, with its Kafka listener), where an uncaught
 * exception ends the process: every handler outside fastify's request lifecycle (WebSocket upgrades, push-stream
 * and data-socket messages, Kafka socket data) is guarded (src/common/guard.ts). The regression first: an upgrade whose path
 * holds a malformed percent-escape once killed the broker. Then fast-check drives every upgrade path (with
 * arbitrary paths, escapes and headers), the push stream's frame types and WebSocket frame headers, the data
 * socket's frame header of every kind, the Kafka request header of every API (and unknown ones), cut short or
 * replaced by random bytes, the frames real Kafka clients sent (test/kafka/golden/) with bytes flipped, cut short and
 * sizes that lie, and, on a second broker that has users, what a connection may send before SASL (frame sizes
 * around its 512 KiB limit, SASL requests with arbitrary bodies): after each case the process must be alive and
 * answering, and after each channel every record acknowledged before the fuzz (over HTTP and over Kafka) must read
 * back as it was written, the Kafka listener must hold no buffered bytes once its connections closed, and nothing
 * may have been logged at error (a throw that was not a typed 4xx error). `ONELOG_FUZZ_RUNS=N` runs N cases per
 * channel (default 60).
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { Kafka, logLevel } from 'kafkajs';
import WebSocket from 'ws';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { decodeFrame, encodeFrame, FRAME_KIND } from '../../src/protocol/data-frames.js';
import { ERRORS } from '../../src/protocol/errors.js';
import { encodeBatch } from '../../src/protocol/record-batch.js';
import { PUSH_FRAME_TYPES } from '../../src/server/push-socket.js';
import { KAFKA_APIS } from '../../src/kafka/listener.js';
import { startServer } from '../helpers/processes.js';
import type { ServerProcess } from '../helpers/processes.js';
import { readEdits } from '../helpers/wikiticker.js';

const RUNS = Number(process.env.ONELOG_FUZZ_RUNS ?? 60);
const CODES = new Set(Object.keys(ERRORS));
const EDITS = readEdits().slice(0, 30);
/** A WebSocket key (any 16 bytes, base64), as a client sends it. */
const WS_KEY = 'dGhlIHNhbXBsZSBub25jZQ==';

let server: ServerProcess;
/** The data directory, kept for the whole file (tmpDir's is removed after each test). */
let dataDir: string;
let httpPort: number;
let kafkaPort: number;
/** Lines the server logged at error or above: a handler's throw that was not a typed error (src/common/guard.ts). */
const errorLines: Array<Record<string, unknown>> = [];
/** What `edits` was acknowledged to hold before any fuzzing: values by partition, in offset order. */
const acknowledged: string[][] = [[], []];

beforeAll(async () => {
  let kafka = '';
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'onelog-hostile-'));
  server = await startServer(dataDir, {
    args: ['--kafka-port', '0'],
    onLog: (entry) => {
      if (typeof entry.kafka === 'string') kafka = entry.kafka;
      if ((entry.level as number) >= 50) errorLines.push(entry);
    },
  });
  httpPort = Number(new URL(server.url).port);
  kafkaPort = Number(kafka.split(':').at(-1));
  for (const topic of ['edits', 'fuzz']) {
    expect((await post('/topics', { topic, partitions: topic === 'edits' ? 2 : 1 })).status).toBe(201);
  }
  const records = EDITS.map((e, i) => ({ key: e.key, value: e.value, partition: i % 2 }));
  const res = await post('/topics/edits/records', { records, encoding: 'utf8' });
  expect(res.status).toBe(200);
  const { offsets } = (await res.json()) as { offsets: Array<{ partition: number; offset: number }> };
  offsets.forEach(({ partition, offset }, i) => (acknowledged[partition]![offset] = records[i]!.value));
});

// No input may make a handler throw anything but a typed 4xx error (the guard logs the rest at error).
afterEach(() => {
  expect(errorLines.splice(0)).toEqual([]);
});

afterAll(async () => {
  await server?.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

function post(path: string, body: unknown): Promise<Response> {
  return fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

/** The process (`server` unless told) has not exited and answers /health. */
async function expectAlive(what: string, of = server): Promise<void> {
  expect({ exitCode: of.proc.exitCode, signal: of.proc.signalCode }, what).toEqual({ exitCode: null, signal: null });
  expect((await fetch(`${of.url}/health`)).status, what).toBe(200);
}

/** Every record acknowledged before the fuzz reads back at its offset, as written (of `server` unless told). */
async function expectAcknowledgedReadable(of = { url: server.url, acknowledged, token: '' }): Promise<void> {
  for (const [partition, values] of of.acknowledged.entries()) {
    const res = await fetch(`${of.url}/topics/edits/fetch`, {
      method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${of.token}` },
      body: JSON.stringify({ partitions: [{ partition, offset: 0 }], maxRecords: values.length, encoding: 'utf8' }),
    });
    const { partitions } = (await res.json()) as { partitions: Array<{ records: Array<{ offset: number; value: string }> }> };
    expect(partitions[0]!.records.slice(0, values.length).map((r) => [r.offset, r.value])).toEqual(values.map((v, offset) => [offset, v]));
  }
}

/**
 * The Kafka listener holds no bytes once the fuzz's connections closed (`onelog_kafka_buffered_bytes` is 0, no
 * connection paused): none leaked into its budget, which would stop it reading once full.
 */
async function expectKafkaBuffersFreed(of = { url: server.url, token: '' }): Promise<void> {
  const gauge = async (name: string) => {
    const text = await (await fetch(`${of.url}/metrics`, { headers: { authorization: `Bearer ${of.token}` } })).text();
    return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
  };
  await vi.waitFor(async () => expect([await gauge('onelog_kafka_buffered_bytes'), await gauge('onelog_kafka_connections_paused')]).toEqual([0, 0]),
    { timeout: 5000, interval: 20 });
}

/** Sends `bytes` on a new Kafka connection to `port`, ends it, and resolves once the connection closed. */
async function kafkaExchange(port: number, bytes: Buffer): Promise<void> {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('data', () => undefined);
  socket.on('error', () => undefined);
  socket.end(bytes);
  await closed(socket);
}

/** ApiVersions v0, correlation id 7: once answered, the request before it was handled. */
const KAFKA_PROBE = Buffer.from([0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 7, 0, 0]);

/** A typed error body: a registry code below 500 and a message. */
function expectTypedError(json: { code?: unknown; message?: unknown }, what: string): void {
  expect(CODES.has(String(json.code)), `${what}: ${JSON.stringify(json).slice(0, 300)}`).toBe(true);
  expect(ERRORS[json.code as keyof typeof ERRORS].httpStatus, `${what}: ${JSON.stringify(json).slice(0, 300)}`).toBeLessThan(500);
  expect(typeof json.message).toBe('string');
}

/**
 * Sends `request` on a new connection to the HTTP port: resolves with the answer's status and body once the server
 * closed the connection, or at once for a 101 (the socket is then destroyed, or handed to `upgraded`).
 */
function rawHttp(request: string, upgraded?: (socket: net.Socket) => Promise<void>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(httpPort, '127.0.0.1', () => socket.write(request));
    let received = Buffer.alloc(0);
    let done = false;
    const onData = (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const head = received.indexOf('\r\n\r\n');
      if (head < 0 || !received.subarray(0, 12).toString().startsWith('HTTP/1.1 101')) return;
      done = true;
      socket.off('data', onData);
      resolve({ status: 101, body: '' });
      if (upgraded) upgraded(socket).catch(reject);
      else socket.destroy();
    };
    socket.on('data', onData);
    socket.on('error', () => undefined); // a close follows
    socket.on('close', () => {
      if (done) return;
      const text = received.toString('utf8');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
      resolve({ status, body: text.slice(text.indexOf('\r\n\r\n') + 4) });
    });
  });
}

function upgradeRequest(path: string, headers: Record<string, string> = {}, method = 'GET'): string {
  const all = { host: 'localhost', connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-key': WS_KEY, 'sec-websocket-version': '13', ...headers };
  return `${method} ${path} HTTP/1.1\r\n${Object.entries(all).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`;
}

/** Resolves once `socket` closed. */
const closed = (socket: net.Socket) => new Promise<void>((resolve) => {
  if (socket.destroyed) resolve();
  else socket.once('close', () => resolve());
});

describe('hostile input against a running onelog serve', () => {
  it('answers an upgrade whose path holds a malformed percent-escape 400 INVALID_REQUEST, closes it, and lives on', async () => {
    for (const path of ['/groups/%E0%A4%A/stream', '/groups/%/stream', '/groups/%ZZ/stream?x=1']) {
      const { status, body } = await rawHttp(upgradeRequest(path));
      expect(status, path).toBe(400);
      const json = JSON.parse(body) as { code: string; message: string };
      expect(json.code).toBe('INVALID_REQUEST');
      expect(json.message).toMatch(/percent-encoding/);
      await expectAlive(path);
    }
    // Any other path is answered 404 NOT_FOUND with the same error body.
    const other = await rawHttp(upgradeRequest('/elsewhere'));
    expect([other.status, (JSON.parse(other.body) as { code: string }).code]).toEqual([404, 'NOT_FOUND']);
    await expectAcknowledgedReadable();
  });

  it('fuzz: upgrades of every path, with arbitrary paths, escapes and headers, answered 101 or a typed error and closed', async () => {
    const escape = fc.oneof(
      fc.constantFrom('%', '%E0%A4%A', '%ZZ', '%00', '%2F', '%25', '%C3%28', '%F0%9F%92%A5', '%ED%A0%80', '%FF', '%e2%82', '%%', '%2'),
      fc.integer({ min: 0, max: 255 }).map((b) => `%${b.toString(16).padStart(2, '0')}`),
      fc.string({ unit: fc.constantFrom(...'abcXYZ019-_.~!$&\'()*+,;=:@'), maxLength: 12 }),
    );
    const segment = fc.array(escape, { maxLength: 4 }).map((parts) => parts.join(''));
    const path = fc.oneof(
      fc.tuple(segment, fc.constantFrom('/stream', '/stream/', '/streams', '')).map(([g, tail]) => `/groups/${g}${tail}`),
      fc.constantFrom('/data', '/data/', '/data?x=%', '/DATA', '/', '/groups', '/groups//stream', '/push-streams', '/health', '/topics/edits/records'),
      fc.array(segment, { minLength: 1, maxLength: 4 }).map((s) => `/${s.join('/')}`),
    ).chain((p) => fc.option(segment, { nil: undefined }).map((q) => (q === undefined ? p : `${p}?${q}`)));
    const token = fc.string({ unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABC0123456789+/=-_,; .'), maxLength: 40 }).map((s) => s.trim() || 'x');
    const headers = fc.record({
      upgrade: fc.oneof(fc.constantFrom('websocket', 'WebSocket', 'h2c', 'websocket, h2c'), token),
      'sec-websocket-key': fc.oneof(fc.constant(WS_KEY), token),
      'sec-websocket-version': fc.oneof(fc.constantFrom('13', '8', '0', '99', '13, 8'), token),
      'sec-websocket-protocol': token,
      'sec-websocket-extensions': fc.oneof(fc.constantFrom('permessage-deflate', 'permessage-deflate; client_max_window_bits=99', 'x; y="'), token),
      authorization: fc.oneof(fc.constantFrom('Bearer x', 'Basic Og==', 'Bearer'), token),
      'x-anything': token,
    }, { requiredKeys: ['upgrade'] });
    const method = fc.constantFrom('GET', 'GET', 'GET', 'POST', 'DELETE');
    await fc.assert(fc.asyncProperty(path, headers, method, async (p, h, m) => {
      const what = `${m} ${p} ${JSON.stringify(h)}`;
      const { status, body } = await rawHttp(upgradeRequest(p, h, m));
      if (status !== 101) {
        expect(status, what).toBeGreaterThanOrEqual(400);
        expectTypedError(JSON.parse(body) as { code?: unknown }, what);
      }
      await expectAlive(what);
    }), { numRuns: RUNS * 3 });
    await expectAcknowledgedReadable();
  });

  it('fuzz: push stream frames of every type, and arbitrary WebSocket frame headers, on /groups/:g/stream and /data', async () => {
    const value = fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constantFrom(-1, 0, 2 ** 53, 1e308, 'fuzz', 'edits', '', null, ['fuzz'], 'NaN'));
    const frame = fc.oneof(
      { weight: 6, arbitrary: fc.record({
        type: fc.oneof(fc.constantFrom(...PUSH_FRAME_TYPES), value), topics: value, topic: value, partition: value, offset: value, records: value,
        bytes: value, reason: value, commitMode: value, startPolicy: value, sessionTimeoutMs: value, clientId: value,
      }, { requiredKeys: ['type'] }).map((f) => JSON.stringify(f)) },
      { weight: 1, arbitrary: fc.oneof(fc.constantFrom('', '{', 'null', '[]', '{"type":'), fc.string({ maxLength: 50 })) },
    );
    const subscribe = JSON.stringify({ type: 'subscribe', topics: ['fuzz'], startPolicy: 'earliest', sessionTimeoutMs: 10_000 });
    const session = (groupId: string, frames: string[]) => new Promise<void>((resolve, reject) => {
      const ws = new WebSocket(`ws://127.0.0.1:${httpPort}/groups/${encodeURIComponent(groupId)}/stream`);
      ws.on('open', () => {
        for (const f of frames) ws.send(f);
        ws.send(JSON.stringify({ type: 'probe' }));
      });
      ws.on('message', (data: Buffer) => {
        try {
          const answer = JSON.parse(data.toString()) as { type: string; code?: string; message?: string };
          expect(['records', 'partition-error', 'error', 'nacked']).toContain(answer.type);
          if (answer.type === 'error') expectTypedError(answer, frames.join(' '));
          if (answer.type === 'error' && answer.message?.includes('"probe"')) ws.close();
        } catch (err) {
          reject(err as Error);
          ws.terminate();
        }
      });
      ws.on('error', () => undefined); // a close follows
      ws.on('close', () => resolve());
    });
    await fc.assert(fc.asyncProperty(fc.constantFrom('g', 'g2', '💥 %', 'a'.repeat(300)), fc.boolean(), fc.array(frame, { minLength: 1, maxLength: 4 }),
      async (groupId, subscribed, frames) => {
        await session(groupId, subscribed ? [subscribe, ...frames] : frames);
        await expectAlive(`${groupId}: ${frames.join(' ')}`);
      }), { numRuns: RUNS });

    // A raw WebSocket frame after the handshake: any FIN/RSV bits, opcode, mask bit and declared length, then a
    // probe and the end of the stream; the server closes the connection.
    const wsFrame = fc.record({
      fin: fc.boolean(), rsv: fc.integer({ min: 0, max: 7 }), opcode: fc.integer({ min: 0, max: 15 }), masked: fc.boolean(),
      length: fc.oneof(fc.integer({ min: 0, max: 125 }), fc.constantFrom(126, 127)),
      extended: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), payload: fc.uint8Array({ maxLength: 200 }),
    }).map(({ fin, rsv, opcode, masked, length, extended, payload }) => {
      const head = [((fin ? 1 : 0) << 7) | (rsv << 4) | opcode, ((masked ? 1 : 0) << 7) | length];
      const ext = Buffer.alloc(length === 126 ? 2 : length === 127 ? 8 : 0);
      if (length === 126) ext.writeUInt16BE(Number(extended & 0xffffn));
      if (length === 127) ext.writeBigUInt64BE(extended);
      return Buffer.concat([Buffer.from(head), ext, masked ? Buffer.from([1, 2, 3, 4]) : Buffer.alloc(0), Buffer.from(payload)]);
    });
    const probe = Buffer.from([0x81, 0x80 | 2, 0, 0, 0, 0, ...Buffer.from('{}')]);
    await fc.assert(fc.asyncProperty(fc.constantFrom('/groups/g/stream', '/data'), wsFrame, async (path, bytes) => {
      const { status } = await rawHttp(upgradeRequest(path), async (socket) => {
        socket.on('data', () => undefined);
        socket.end(Buffer.concat([bytes, probe]));
        await closed(socket);
      });
      expect(status).toBe(101);
      await expectAlive(`${path} ${bytes.toString('hex')}`);
    }), { numRuns: RUNS });
    await expectAcknowledgedReadable();
  });

  it('fuzz: data frames with every kind\'s header (kind, request id, JSON length) and body arbitrary', async () => {
    const batch = encodeBatch(EDITS.slice(0, 3).map((e) => ({ key: Buffer.from(e.key), value: Buffer.from(e.value), headers: [] })), 0, Date.now());
    const TEMPLATES: Record<number, unknown> = {
      [FRAME_KIND.PRODUCE]: { topic: 'fuzz', batches: [{ partition: 0, bytes: batch.length }] },
      [FRAME_KIND.FETCH]: { topic: 'fuzz', partitions: [{ partition: 0, offset: 0 }], maxRecords: 5, maxWaitMs: 0 },
      [FRAME_KIND.COMMIT]: { groupId: 'g', topic: 'fuzz', offsets: [{ partition: 0, offset: 0 }] },
    };
    const PROBE = 0xffff_fff0;
    const frame = fc.record({
      kind: fc.oneof(fc.constantFrom(FRAME_KIND.PRODUCE, FRAME_KIND.FETCH, FRAME_KIND.COMMIT), fc.integer({ min: 0, max: 255 })),
      requestId: fc.integer({ min: 0, max: PROBE - 1 }),
      json: fc.option(fc.jsonValue({ maxDepth: 3 }), { nil: undefined, freq: 2 }),
      jsonBytes: fc.option(fc.oneof(fc.integer({ min: -3, max: 3 }), fc.nat({ max: 0xffff_ffff })), { nil: undefined, freq: 2 }),
      payload: fc.oneof(fc.constant(batch), fc.uint8Array({ maxLength: 100 }).map((a) => Buffer.from(a)), fc.constant(Buffer.alloc(0))),
      cut: fc.option(fc.nat({ max: 200 }), { nil: undefined, freq: 4 }),
    }).map(({ kind, requestId, json, jsonBytes, payload, cut }) => {
      const bytes = Buffer.from(encodeFrame(FRAME_KIND.PRODUCE, requestId, json === undefined ? TEMPLATES[kind] ?? {} : json, payload));
      bytes.writeUInt8(kind, 0);
      if (jsonBytes !== undefined) bytes.writeUInt32BE(jsonBytes > 3 ? jsonBytes : Math.max(0, bytes.readUInt32BE(5) + jsonBytes), 5);
      return cut === undefined ? bytes : bytes.subarray(0, cut);
    });
    // One socket until the server closes it (a frame it cannot read), then a new one.
    const opened: WebSocket[] = [];
    const open = () => new Promise<WebSocket>((resolve) => {
      const s = new WebSocket(`ws://127.0.0.1:${httpPort}/data`);
      opened.push(s);
      s.on('error', () => undefined);
      s.on('open', () => resolve(s));
    });
    await fc.assert(fc.asyncProperty(frame, async (bytes) => {
      const last = opened.at(-1);
      const socket = last?.readyState === WebSocket.OPEN ? last : await open();
      await new Promise<void>((resolve, reject) => {
        const done = () => {
          socket.off('message', onMessage);
          socket.off('close', done);
          resolve();
        };
        const onMessage = (data: Buffer) => {
          try {
            const answer = decodeFrame(data);
            expect([FRAME_KIND.PRODUCED, FRAME_KIND.FETCHED, FRAME_KIND.COMMITTED, FRAME_KIND.ERROR]).toContain(answer.kind);
            if (answer.kind === FRAME_KIND.ERROR) expectTypedError(answer.json as { code?: unknown }, bytes.subarray(0, 100).toString('hex'));
            if (answer.requestId === PROBE) done();
          } catch (err) {
            reject(err as Error);
          }
        };
        socket.on('message', onMessage);
        socket.on('close', done);
        socket.send(bytes);
        socket.send(encodeFrame(FRAME_KIND.FETCH, PROBE, TEMPLATES[FRAME_KIND.FETCH]));
      });
      await expectAlive(bytes.subarray(0, 100).toString('hex'));
    }), { numRuns: RUNS * 2 });
    for (const s of opened) s.close();
    await expectAcknowledgedReadable();
  });

  it('fuzz: Kafka requests with every API\'s header (size, key, version, correlation id, client id), arbitrary bodies, cut short, or random bytes', async () => {
    const keys = KAFKA_APIS.map((a) => a.key);
    const headed = fc.record({
      apiKey: fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...keys) }, { weight: 1, arbitrary: fc.integer({ min: -32768, max: 32767 }) }),
      apiVersion: fc.oneof(fc.integer({ min: -1, max: 17 }), fc.integer({ min: -32768, max: 32767 })),
      correlationId: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
      clientIdLength: fc.option(fc.integer({ min: -2, max: 40 }), { nil: undefined }),
      body: fc.uint8Array({ maxLength: 300 }),
      size: fc.option(fc.oneof(fc.integer({ min: -10, max: 10 }), fc.constantFrom(-1, 2 ** 31 - 1, 100 * 2 ** 20 + 1)), { nil: undefined, freq: 4 }),
      cut: fc.option(fc.nat({ max: 320 }), { nil: undefined, freq: 5 }),
    }).map(({ apiKey, apiVersion, correlationId, clientIdLength, body, size, cut }) => {
      const clientId = Buffer.from('fuzz');
      const header = Buffer.alloc(10);
      header.writeInt16BE(apiKey, 0);
      header.writeInt16BE(apiVersion, 2);
      header.writeInt32BE(correlationId, 4);
      header.writeInt16BE(clientIdLength ?? clientId.length, 8);
      const payload = Buffer.concat([header, clientId, Buffer.from(body)]);
      const declared = Buffer.alloc(4);
      declared.writeInt32BE(size === undefined ? payload.length : Math.abs(size) <= 10 ? payload.length + size : size);
      const frame = Buffer.concat([declared, payload]);
      return cut === undefined ? frame : frame.subarray(0, cut); // cut short: the frames after it are read as its rest
    });
    const request = fc.oneof({ weight: 5, arbitrary: headed }, { weight: 1, arbitrary: fc.uint8Array({ minLength: 1, maxLength: 64 }).map((b) => Buffer.from(b)) });
    await fc.assert(fc.asyncProperty(fc.array(request, { minLength: 1, maxLength: 3 }), async (frames) => {
      await kafkaExchange(kafkaPort, Buffer.concat([...frames, KAFKA_PROBE]));
      await expectAlive(frames.map((f) => f.subarray(0, 40).toString('hex')).join(' '));
    }), { numRuns: RUNS * 3 });
    await expectAcknowledgedReadable();
    await expectKafkaBuffersFreed();
  });

  it('fuzz: the frames kcat, kafkajs and platformatic sent, bytes flipped, cut short and sizes that lie; records produced over Kafka stay', async () => {
    // Records acknowledged over Kafka before the fuzz, at the offsets kafkajs was answered.
    const producer = new Kafka({ brokers: [`127.0.0.1:${kafkaPort}`], clientId: 'fuzz', logLevel: logLevel.NOTHING, retry: { retries: 0 } }).producer();
    await producer.connect();
    const values = EDITS.slice(0, 6).map((e) => `kafka ${e.value}`);
    for (const [i, value] of values.entries()) {
      const [sent] = await producer.send({ topic: 'edits', messages: [{ value, partition: i % 2 }] });
      acknowledged[sent!.partition]![Number(sent!.baseOffset)] = value;
    }
    await producer.disconnect();
    await expectAcknowledgedReadable();

    // The golden frames name topic `edits`: renamed `golds` (same length; DeleteTopics' `doomd`) so a fuzzed
    // DeleteTopics or DeleteRecords cannot delete what was acknowledged. CreateTopics is left out (a fuzzed one may
    // create a topic a Fetch waits on).
    for (const topic of ['golds', 'doomd']) expect((await post('/topics', { topic, partitions: 3 })).status).toBe(201);
    const golden = path.join(import.meta.dirname, '../kafka/golden');
    const seeds = ['kcat', 'kafkajs', 'platformatic'].flatMap((client) => fs.readdirSync(path.join(golden, client))
      .filter((f) => f.endsWith('.bin') && !f.startsWith('CreateTopics'))
      .map((f) => Buffer.from(fs.readFileSync(path.join(golden, client, f)).toString('latin1')
        .replaceAll('edits', f.startsWith('DeleteTopics') ? 'doomd' : 'golds'), 'latin1')));
    const sized = (frame: Buffer, size = frame.length) => {
      const prefix = Buffer.alloc(4);
      prefix.writeInt32BE(size);
      return Buffer.concat([prefix, frame, KAFKA_PROBE]);
    };
    // Unchanged, they reach the handlers: the Produce requests store their records.
    for (const seed of seeds) await kafkaExchange(kafkaPort, sized(seed));
    await vi.waitFor(async () => {
      const golds = (await (await fetch(`${server.url}/topics/golds`)).json()) as { partitions: Array<{ highWatermark: number }> };
      expect(golds.partitions.reduce((n, p) => n + p.highWatermark, 0)).toBeGreaterThan(0);
    }, { timeout: 5000, interval: 20 });
    const mutation = fc.record({
      seed: fc.nat({ max: seeds.length - 1 }),
      flips: fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 8 }),
      cut: fc.option(fc.nat(), { nil: undefined }),
      lie: fc.option(fc.oneof(fc.integer({ min: -8, max: 8 }), fc.constantFrom(-1, 2 ** 31 - 1, 100 * 2 ** 20 + 1)), { nil: undefined, freq: 3 }),
    });
    await fc.assert(fc.asyncProperty(mutation, async ({ seed, flips, cut, lie }) => {
      let frame = Buffer.from(seeds[seed]!);
      for (const [at, byte] of flips) frame[at % frame.length] = byte;
      if (cut !== undefined) frame = frame.subarray(0, cut % (frame.length + 1));
      await kafkaExchange(kafkaPort, sized(frame, lie === undefined ? frame.length : Math.abs(lie) <= 8 ? Math.max(0, frame.length + lie) : lie));
      await expectAlive(`${seed} ${JSON.stringify({ flips, cut, lie })}`);
    }), { numRuns: RUNS * 3 });
    await expectAcknowledgedReadable();
    await expectKafkaBuffersFreed();
  });

  describe('on a broker with users, before SASL', () => {
    let secured: ServerProcess;
    let securedDir: string;
    let securedKafka = 0;
    const securedAcknowledged: string[][] = [[], []];
    let token = '';
    beforeAll(async () => {
      let kafka = '';
      securedDir = fs.mkdtempSync(path.join(os.tmpdir(), 'onelog-hostile-sasl-'));
      secured = await startServer(securedDir, {
        args: ['--kafka-port', '0', '--kafka-max-buffered-bytes', String(1024 * 1024)],
        onLog: (entry) => {
          if (typeof entry.kafka === 'string') kafka = entry.kafka;
          if ((entry.level as number) >= 50) errorLines.push(entry);
        },
      });
      securedKafka = Number(kafka.split(':').at(-1));
      const created = await fetch(`${secured.url}/users`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ user: 'ops' }) });
      token = ((await created.json()) as { token: string }).token;
      const call = (p: string, body: unknown) => fetch(`${secured.url}${p}`, {
        method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify(body),
      });
      expect((await call('/topics', { topic: 'edits', partitions: 2 })).status).toBe(201);
      const records = EDITS.map((e, i) => ({ key: e.key, value: e.value, partition: i % 2 }));
      const { offsets } = (await (await call('/topics/edits/records', { records, encoding: 'utf8' })).json()) as { offsets: Array<{ partition: number; offset: number }> };
      offsets.forEach(({ partition, offset }, i) => (securedAcknowledged[partition]![offset] = records[i]!.value));
    });
    afterAll(async () => {
      await secured?.stop();
      fs.rmSync(securedDir, { recursive: true, force: true });
    });

    it('fuzz: frame sizes around the 512 KiB limit, ApiVersions and SASL requests with arbitrary bodies, random bytes', async () => {
      const LIMIT = 512 * 1024;
      const saslFrame = fc.record({
        apiKey: fc.oneof({ weight: 4, arbitrary: fc.constantFrom(18, 17, 36) }, { weight: 1, arbitrary: fc.constantFrom(...KAFKA_APIS.map((a) => a.key)) }),
        apiVersion: fc.integer({ min: -1, max: 4 }),
        body: fc.oneof(
          fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)),
          fc.constantFrom('PLAIN', 'SCRAM-SHA-256', 'GSSAPI', '').map((m) => Buffer.concat([Buffer.from([0, m.length]), Buffer.from(m)])),
          fc.string({ maxLength: 80 }).map((t) => { const b = Buffer.from(`\0ops\0${t}`); const n = Buffer.alloc(4); n.writeInt32BE(b.length); return Buffer.concat([n, b]); }),
        ),
        // A size that lies: around the limit, far above it, or a little off the frame's.
        size: fc.option(fc.oneof(fc.integer({ min: LIMIT - 2, max: LIMIT + 2 }), fc.constantFrom(100 * 2 ** 20, 2 ** 31 - 1), fc.integer({ min: -4, max: 4 })), { nil: undefined }),
        sentOfBody: fc.option(fc.nat({ max: 70_000 }), { nil: undefined, freq: 3 }),
      }).map(({ apiKey, apiVersion, body, size, sentOfBody }) => {
        const header = Buffer.alloc(12);
        header.writeInt16BE(apiKey, 4);
        header.writeInt16BE(apiVersion, 6);
        header.writeInt32BE(1, 8);
        const payload = Buffer.concat([header.subarray(4), Buffer.from([0, 1]), Buffer.from('f'), body, Buffer.alloc(sentOfBody ?? 0)]);
        header.writeInt32BE(size === undefined ? payload.length : Math.abs(size) <= 4 ? Math.max(0, payload.length + size) : size, 0);
        return Buffer.concat([header.subarray(0, 4), payload]);
      });
      const bytes = fc.oneof({ weight: 5, arbitrary: saslFrame }, { weight: 1, arbitrary: fc.uint8Array({ minLength: 1, maxLength: 64 }).map((b) => Buffer.from(b)) });
      await fc.assert(fc.asyncProperty(fc.array(bytes, { minLength: 1, maxLength: 3 }), async (frames) => {
        await kafkaExchange(securedKafka, Buffer.concat([...frames, KAFKA_PROBE]));
        await expectAlive(frames.map((f) => f.subarray(0, 40).toString('hex')).join(' '), secured);
      }), { numRuns: RUNS * 2 });
      await expectAcknowledgedReadable({ url: secured.url, acknowledged: securedAcknowledged, token });
      await expectKafkaBuffersFreed({ url: secured.url, token });
    });
  });
});

/**
 * Hostile input against a real `onelog serve` process (bin/onelog.js, with its Kafka listener), where an uncaught
 * exception ends the process: every handler outside fastify's request lifecycle (WebSocket upgrades, push-stream
 * and data-socket messages, Kafka socket data) is guarded (src/guard.ts). The regression first: an upgrade whose path
 * holds a malformed percent-escape once killed the broker. Then fast-check drives every upgrade path (with
 * arbitrary paths, escapes and headers), the push stream's frame types and WebSocket frame headers, the data
 * socket's frame header of every kind, and the Kafka request header of every API (and unknown ones): after each case
 * the process must be alive and answering, and after each channel every record acknowledged before the fuzz must
 * read back as it was written, and nothing may have been logged at error (a throw that was not a typed 4xx error). `ONELOG_FUZZ_RUNS=N` runs N cases per channel (default 60).
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import WebSocket from 'ws';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
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
/** Lines the server logged at error or above: a handler's throw that was not a typed error (src/guard.ts). */
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

/** The process has not exited and answers /health. */
async function expectAlive(what: string): Promise<void> {
  expect({ exitCode: server.proc.exitCode, signal: server.proc.signalCode }, what).toEqual({ exitCode: null, signal: null });
  expect((await fetch(`${server.url}/health`)).status, what).toBe(200);
}

/** Every record acknowledged before the fuzz reads back at its offset, as written. */
async function expectAcknowledgedReadable(): Promise<void> {
  for (const [partition, values] of acknowledged.entries()) {
    const res = await post('/topics/edits/fetch', { partitions: [{ partition, offset: 0 }], maxRecords: values.length, encoding: 'utf8' });
    const { partitions } = (await res.json()) as { partitions: Array<{ records: Array<{ offset: number; value: string }> }> };
    expect(partitions[0]!.records.slice(0, values.length).map((r) => [r.offset, r.value])).toEqual(values.map((v, offset) => [offset, v]));
  }
}

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

  it('fuzz: Kafka requests with every API\'s header (size, key, version, correlation id, client id) and arbitrary bodies', async () => {
    const keys = KAFKA_APIS.map((a) => a.key);
    const request = fc.record({
      apiKey: fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...keys) }, { weight: 1, arbitrary: fc.integer({ min: -32768, max: 32767 }) }),
      apiVersion: fc.oneof(fc.integer({ min: -1, max: 17 }), fc.integer({ min: -32768, max: 32767 })),
      correlationId: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
      clientIdLength: fc.option(fc.integer({ min: -2, max: 40 }), { nil: undefined }),
      body: fc.uint8Array({ maxLength: 300 }),
      size: fc.option(fc.oneof(fc.integer({ min: -10, max: 10 }), fc.constantFrom(-1, 2 ** 31 - 1, 100 * 2 ** 20 + 1)), { nil: undefined, freq: 4 }),
    }).map(({ apiKey, apiVersion, correlationId, clientIdLength, body, size }) => {
      const clientId = Buffer.from('fuzz');
      const header = Buffer.alloc(10);
      header.writeInt16BE(apiKey, 0);
      header.writeInt16BE(apiVersion, 2);
      header.writeInt32BE(correlationId, 4);
      header.writeInt16BE(clientIdLength ?? clientId.length, 8);
      const payload = Buffer.concat([header, clientId, Buffer.from(body)]);
      const declared = Buffer.alloc(4);
      declared.writeInt32BE(size === undefined ? payload.length : Math.abs(size) <= 10 ? payload.length + size : size);
      return Buffer.concat([declared, payload]);
    });
    // ApiVersions v0, correlation id 7: once answered, the request before it was handled.
    const probe = Buffer.from([0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 7, 0, 0]);
    await fc.assert(fc.asyncProperty(fc.array(request, { minLength: 1, maxLength: 3 }), async (frames) => {
      const socket = net.connect(kafkaPort, '127.0.0.1');
      socket.on('data', () => undefined);
      socket.on('error', () => undefined);
      socket.end(Buffer.concat([...frames, probe]));
      await closed(socket);
      await expectAlive(frames.map((f) => f.subarray(0, 40).toString('hex')).join(' '));
    }), { numRuns: RUNS * 3 });
    await expectAcknowledgedReadable();
  });
});

/**
 * Hostile input (docs/security.md) against a running broker's server, over real sockets: fast-check generated and
 * mutated HTTP bodies, push-stream JSON frames and binary data frames (truncated, wrong lengths, huge counts, bad
 * CRCs, wrong magic, negative offsets, NaN and 2^53+ numbers, unicode names). Every one is answered a typed 4xx error
 * (or accepted as valid), or its socket is closed; the broker never crashes, never stores part of a refused produce,
 * and after a restart its data verifies against what it acknowledged. The corpus (hostile-corpus.json) replays the
 * bad inputs these tests found, first, on every run. `ONELOG_FUZZ_RUNS=N` runs N cases per channel (default 60).
 */
import fs from 'node:fs';
import fc from 'fast-check';
import WebSocket from 'ws';
import { describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { decodeFrame, encodeFrame, FRAME_KIND } from '../../src/protocol/data-frames.js';
import { ERRORS } from '../../src/protocol/errors.js';
import { encodeBatch, readBatchHeader, validateBatch } from '../../src/protocol/record-batch.js';
import { serveSecured } from '../helpers/secured-broker.js';
import { readEdits } from '../helpers/wikiticker.js';

const RUNS = Number(process.env.ONELOG_FUZZ_RUNS ?? 60);
const EDITS = readEdits();
const CODES = new Set(Object.keys(ERRORS));

interface CorpusCase {
  name: string;
  channel: 'http' | 'push' | 'data';
  /** http: `METHOD /path`; push: the group; data: unused */
  target?: string;
  /** http and push: the text sent; data: the frame as hex */
  body: string;
}
const CORPUS = JSON.parse(fs.readFileSync(new URL('./hostile-corpus.json', import.meta.url), 'utf8')) as CorpusCase[];

/** Values that break naive parsers: negatives, 2^53+, huge, fractional, NaN as text, unicode, empty, wrong types. */
const hostileValue = fc.oneof(
  fc.constantFrom(-1, 0, 1, -0, 1.5, 2 ** 31, 2 ** 53, 2 ** 53 + 2, 1e308, -1e308, Number.MAX_SAFE_INTEGER),
  fc.constantFrom('NaN', 'Infinity', '', ' ', '-1', '1e400', 'a'.repeat(5000), '💥\u0000\u202e名前', '../../etc/passwd', '%00', '__proto__', 'constructor'),
  fc.constantFrom(null, true, false, [], {}, [null], { __proto__: { polluted: 1 } }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.integer(), fc.double(),
);

/** A JSON value like `valid` with some leaves replaced by hostile ones, keys dropped or added. */
function mutated(valid: unknown): fc.Arbitrary<unknown> {
  if (Array.isArray(valid)) {
    const items = valid as unknown[];
    return fc.oneof(hostileValue, fc.array(fc.oneof(...items.map(mutated)), { maxLength: 5 }), fc.tuple(...items.map(mutated)));
  }
  if (valid !== null && typeof valid === 'object') {
    const entries = Object.entries(valid as Record<string, unknown>);
    return fc.oneof(
      { weight: 1, arbitrary: hostileValue },
      {
        weight: 4,
        arbitrary: fc.tuple(fc.tuple(...entries.map(([k, v]) => fc.option(mutated(v), { nil: undefined, freq: 4 }).map((m) => [k, m] as const))),
          fc.dictionary(fc.string({ maxLength: 8 }), hostileValue, { maxKeys: 2 }))
          .map(([kept, extra]) => ({ ...extra, ...Object.fromEntries(kept.filter(([, v]) => v !== undefined)) })),
      },
    );
  }
  return fc.oneof({ weight: 1, arbitrary: fc.constant(valid) }, { weight: 2, arbitrary: hostileValue });
}

/** Bodies of the routes that take one, valid; the fuzzer mutates them. (No pushEndpoint or alert sink: nothing leaves loopback.) */
const ROUTES: Array<{ route: string; body: unknown }> = [
  { route: 'POST /topics/edits/records', body: { records: [{ key: 'k', value: 'v', headers: { h: 'x' }, partition: 0, timestamp: 1 }], encoding: 'utf8' } },
  { route: 'POST /topics/edits/fetch', body: { partitions: [{ partition: 0, offset: 0 }], maxRecords: 5, maxBytes: 1000, maxWaitMs: 0, groupId: 'g' } },
  { route: 'POST /topics', body: { topic: 'made', partitions: 1, config: { 'retention.ms': 1000 } } },
  { route: 'POST /topics/edits/delete-records', body: { partition: 0, beforeOffset: 0 } },
  { route: 'POST /topics/edits/config', body: { config: { 'retention.ms': 60000 } } },
  { route: 'POST /groups/g/subscriptions', body: { topic: 'edits', startPolicy: 'earliest', maxInFlight: 2, retry: { delaysMs: [10], maxAttempts: 2 } } },
  { route: 'POST /groups/g/offsets', body: { topic: 'edits', offsets: [{ partition: 0, offset: 1, metadata: 'm' }] } },
  { route: 'POST /groups/g/offsets/reset', body: { topic: 'edits', partition: 0, spec: { to: 'offset', offset: 0 }, execute: true } },
  { route: 'POST /groups/g/members', body: { topics: ['edits'], sessionTimeoutMs: 10000, commitMode: 'after-processing' } },
  { route: 'POST /groups/g/members/m/heartbeat', body: { generationId: 1, owned: [{ topic: 'edits', partition: 0 }] } },
  { route: 'POST /groups/g/nacks', body: { topic: 'edits', partition: 0, offset: 0, reason: 'r' } },
  { route: 'POST /groups/g/checkpoints', body: { name: 'c' } },
  { route: 'POST /acls', body: { principal: 'p', resourceType: 'topic', resourceName: 'edits', operation: 'read' } },
];

/** Raw texts no generator above makes: not JSON, or JSON with NaN / huge exponents, or a different shape. */
const rawBody = fc.oneof(
  fc.constantFrom('', '{', '{"records":', '[]', 'null', '{"records":[{"value":NaN}]}', '{"partitions":[{"partition":0,"offset":1e400}]}',
    '{"records":[{"value":"x"}],"records":5}', '\u0000\u0001', '{"a":'.repeat(2000)),
  fc.string({ unit: 'binary', maxLength: 200 }),
);

async function harness() {
  const served = await serveSecured({ broker: { maxRecordsPerRequest: 1000 }, server: { limits: { maxBodyBytes: 256 * 1024, maxFrameBytes: 256 * 1024, maxInFlightPerConnection: 1 } } });
  const base = served.url;
  const { broker } = served;
  await broker.createTopic({ topic: 'edits', partitions: 2 });
  const seed = EDITS.slice(0, 20).map((e) => ({ key: Buffer.from(e.key), value: Buffer.from(e.value), headers: [] }));
  await broker.produce({ topic: 'edits', records: seed });
  /** Records each partition of `edits` is known to hold: what was acknowledged. */
  const acknowledged = [0, 0];
  for (const p of (await broker.describeTopic('edits')).partitions) acknowledged[p.partition] = p.highWatermark;
  const highWatermarks = async () => (await broker.describeTopic('edits')).partitions.map((p) => p.highWatermark);
  return { served, base, broker, acknowledged, highWatermarks };
}

/** A response of the broker: accepted, or a typed 4xx error (never a 5xx, never an untyped body). */
function expectTypedAnswer(status: number, text: string, what: string): void {
  if (status < 300) return;
  expect(status, `${what} -> ${status} ${text.slice(0, 300)}`).toBeGreaterThanOrEqual(400);
  expect(status, `${what} -> ${status} ${text.slice(0, 300)}`).toBeLessThan(500);
  const body = JSON.parse(text) as { code?: string; message?: string };
  expect(CODES.has(body.code ?? ''), `${what} -> ${text.slice(0, 300)}`).toBe(true);
  expect(typeof body.message).toBe('string');
}

describe('hostile input', () => {
  it('HTTP bodies: generated, mutated and raw, each answered typed; a refused produce stores nothing', async () => {
    const { base, served, acknowledged, highWatermarks } = await harness();
    const send = async (route: string, text: string) => {
      const [method, path] = route.split(' ') as [string, string];
      const before = await highWatermarks();
      const res = await fetch(`${base}${path}`, { method, headers: { 'content-type': 'application/json' }, body: text });
      const answer = await res.text();
      expectTypedAnswer(res.status, answer, `${route} ${text.slice(0, 200)}`);
      const after = await highWatermarks();
      if (route === 'POST /topics/edits/records' && res.ok) {
        const { offsets } = JSON.parse(answer) as { offsets: Array<{ partition: number }> };
        for (const { partition } of offsets) acknowledged[partition]!++;
      }
      expect(after, `${route} ${text.slice(0, 200)} stored ${res.ok ? 'other than acknowledged' : 'part of a refused request'}`).toEqual(acknowledged);
      expect(before.every((hw, p) => hw <= after[p]!)).toBe(true);
    };
    for (const c of CORPUS.filter((c) => c.channel === 'http')) await send(c.target!, c.body);
    const routeAndBody = fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom(...ROUTES).chain(({ route, body }) => mutated(body).map((b) => [route, JSON.stringify(b) ?? 'null'] as const)) },
      { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...ROUTES.map((r) => r.route)), rawBody) },
      { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...ROUTES.map((r) => r.route)), fc.jsonValue().map((v) => JSON.stringify(v))) },
    );
    await fc.assert(fc.asyncProperty(routeAndBody, async ([route, text]) => send(route, text)), { numRuns: RUNS * 4 });
    expect((await fetch(`${base}/health`)).status).toBe(200);
    await verifyAfterRestart(served, acknowledged);
  });

  it('push stream frames: answered with typed error frames, or the stream closed', async () => {
    const { base, served, acknowledged } = await harness();
    const wsBase = base.replace('http', 'ws');
    const session = (groupId: string, frames: string[]) => new Promise<void>((resolve, reject) => {
      const ws = new WebSocket(`${wsBase}/groups/${encodeURIComponent(groupId)}/stream`);
      ws.on('open', () => {
        for (const f of frames) ws.send(f);
        ws.send(JSON.stringify({ type: 'probe' }));
      });
      ws.on('message', (data: Buffer) => {
        const frame = JSON.parse(data.toString()) as { type: string; code?: string; message?: string };
        expect(['records', 'partition-error', 'error', 'nacked'], data.toString().slice(0, 300)).toContain(frame.type);
        if (frame.type === 'error') expect(CODES.has(frame.code ?? ''), data.toString().slice(0, 300)).toBe(true);
        if (frame.type === 'error' && frame.message?.includes('"probe"')) ws.close();
      });
      ws.on('close', (code) => {
        try {
          expect([1000, 1005, 1008, 1009], `close ${code}`).toContain(code);
          resolve();
        } catch (err) {
          reject(err as Error);
        }
      });
      ws.on('error', () => undefined); // a close follows
    });
    for (const c of CORPUS.filter((c) => c.channel === 'push')) await session(c.target!, [c.body]);
    const subscribe = { type: 'subscribe', topics: ['edits'], commitMode: 'after-processing', startPolicy: 'earliest', sessionTimeoutMs: 10000 };
    const frame = fc.oneof(
      mutated(subscribe), mutated({ type: 'credit', records: 10, bytes: 10000 }), mutated({ type: 'ack', topic: 'edits', partition: 0, offset: 1 }),
      mutated({ type: 'nack', topic: 'edits', partition: 0, offset: 0, reason: 'r' }), fc.jsonValue(),
    ).map((v) => JSON.stringify(v) ?? 'null');
    await fc.assert(fc.asyncProperty(fc.constantFrom('g', 'g2', '💥', 'a'.repeat(300)), fc.array(fc.oneof(frame, rawBody), { minLength: 1, maxLength: 4 }),
      async (groupId, frames) => session(groupId, [JSON.stringify(subscribe), ...frames])), { numRuns: RUNS });
    expect((await fetch(`${base}/health`)).status).toBe(200);
    await verifyAfterRestart(served, acknowledged);
  });

  it('binary data frames: truncated, lengths and counts wrong, CRC and magic broken; a refused produce stores nothing', async () => {
    const { base, served, acknowledged, highWatermarks } = await harness();
    const ws = await new Promise<WebSocket>((resolve) => {
      const s = new WebSocket(`${base.replace('http', 'ws')}/data`);
      s.on('open', () => resolve(s));
    });
    let socket = ws;
    // One request in flight (the server's limit): answers come in order, the probe's last.
    const PROBE = 0xffff_fff0;
    const exchange = async (bytes: Buffer): Promise<Array<{ kind: number; json: unknown }>> => {
      if (socket.readyState !== WebSocket.OPEN) {
        socket = await new Promise<WebSocket>((resolve) => {
          const s = new WebSocket(`${base.replace('http', 'ws')}/data`);
          s.on('open', () => resolve(s));
        });
      }
      const s = socket;
      return new Promise((resolve) => {
        const answers: Array<{ kind: number; json: unknown }> = [];
        const onMessage = (data: Buffer) => {
          const answer = decodeFrame(data);
          if (answer.requestId === PROBE) return done();
          answers.push({ kind: answer.kind, json: answer.json });
        };
        const done = () => {
          s.off('message', onMessage);
          s.off('close', done);
          resolve(answers);
        };
        s.on('message', onMessage);
        s.on('close', done);
        s.send(bytes);
        s.send(encodeFrame(FRAME_KIND.FETCH, PROBE, { topic: 'edits', partitions: [{ partition: 0, offset: 0 }], maxRecords: 1 }));
      });
    };
    const check = async (bytes: Buffer) => {
      const answers = await exchange(bytes);
      const after = await highWatermarks();
      for (const a of answers) {
        expect([FRAME_KIND.PRODUCED, FRAME_KIND.FETCHED, FRAME_KIND.ERROR]).toContain(a.kind);
        if (a.kind === FRAME_KIND.ERROR) {
          const code = (a.json as { code?: string }).code ?? '';
          expect(CODES.has(code), JSON.stringify(a.json)).toBe(true);
          expect(ERRORS[code as keyof typeof ERRORS].httpStatus, JSON.stringify(a.json)).toBeLessThan(500);
        }
        if (a.kind === FRAME_KIND.PRODUCED) {
          for (const b of (a.json as { batches: Array<{ partition: number; baseOffset: number; lastOffset: number }> }).batches) {
            acknowledged[b.partition]! += b.lastOffset - b.baseOffset + 1;
          }
        }
      }
      expect(after, `frame ${bytes.subarray(0, 120).toString('hex')}`).toEqual(acknowledged);
    };
    for (const c of CORPUS.filter((c) => c.channel === 'data')) await check(Buffer.from(c.body, 'hex'));

    const batch = encodeBatch(EDITS.slice(20, 25).map((e) => ({ key: Buffer.from(e.key), value: Buffer.from(e.value), headers: [] })), 0, Date.now());
    const produce = (json: unknown, payload: Buffer) => encodeFrame(FRAME_KIND.PRODUCE, 7, json, payload);
    const valid = { topic: 'edits', batches: [{ partition: 1, bytes: batch.length }] };
    const frames = fc.oneof(
      // A valid frame cut short, or with bytes flipped anywhere (header, JSON, batch: CRC, magic, counts, lengths).
      fc.nat({ max: 400 }).map((n) => produce(valid, batch).subarray(0, n)),
      fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }).map((flips) => {
        const f = Buffer.from(produce(valid, batch));
        for (const [at, byte] of flips) f[at % f.length] = byte;
        return f;
      }),
      // Batch fields set to hostile values: record count, length, magic, producer id, base offset.
      fc.tuple(fc.constantFrom(8, 16, 57, 43, 0, 61), fc.constantFrom(0, 0xff, 0x7f, 0x80)).map(([at, byte]) => {
        const b = Buffer.from(batch);
        b.fill(byte, at, Math.min(at + 4, b.length));
        return produce(valid, b);
      }),
      // The JSON part mutated (wrong lengths, negative partitions, unicode topics), and fetches with hostile requests.
      mutated(valid).map((json) => produce(json, batch)),
      mutated({ topic: 'edits', partitions: [{ partition: 0, offset: 3 }], maxRecords: 10, maxBytes: 5000, groupId: 'g' })
        .map((json) => encodeFrame(FRAME_KIND.FETCH, 8, json)),
      fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)),
    );
    await fc.assert(fc.asyncProperty(frames, check), { numRuns: RUNS * 3 });
    socket.close();
    expect((await fetch(`${base}/health`)).status).toBe(200);
    await verifyAfterRestart(served, acknowledged);
  });
});

/** Restarts the broker on its data and checks every batch of `edits` is whole and it holds exactly what was acknowledged. */
async function verifyAfterRestart(served: { dataDir: string; stop(): Promise<void> }, acknowledged: number[]): Promise<void> {
  await served.stop();
  const broker = await Broker.open({ dataDir: served.dataDir });
  try {
    const logStarts = (await broker.describeTopic('edits')).partitions.map((p) => p.logStartOffset);
    for (const [partition, expected] of acknowledged.entries()) {
      // A generated delete-records may have moved the log start on purpose: what is below it is not served.
      let offset = logStarts[partition]!;
      while (offset < expected) {
        const fetched = await broker.fetchBatches({ topic: 'edits', partitions: [{ partition, offset }], maxBytes: 1024 * 1024 });
        const { batches, highWatermark } = fetched.partitions[0]!;
        expect(highWatermark).toBe(expected);
        expect(batches.length).toBeGreaterThan(0);
        for (let pos = 0; pos < batches.length;) {
          const size = validateBatch(batches, pos);
          expect(typeof size, `partition ${partition} at byte ${pos}: ${String(size)}`).toBe('number');
          const header = readBatchHeader(batches.subarray(pos));
          expect(header.baseOffset).toBeLessThanOrEqual(offset);
          offset = header.baseOffset + header.lastOffsetDelta + 1;
          pos += size as number;
        }
      }
      expect(offset).toBe(expected);
    }
  } finally {
    await broker.close();
  }
}

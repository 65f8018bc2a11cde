/**
 * The idempotent producer's state kept durable by the segment engine (src/log/segments/producer-snapshots.ts):
 * rebuilt after a clean close, a simulated crash, a torn tail and a real SIGKILL; forgetting by retention and
 * by the producer bound, also after a crash; compaction; and a fast-check model of one producer's sends,
 * retries and restarts.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/common/clock.js';
import { encodeBatch, readBatchHeader } from '../../src/protocol/record-batch.js';
import type { PartitionLog } from '../../src/log/segments/partition-log.js';
import { LogSegment } from '../../src/log/segments/segment.js';
import { asyncCodeOf } from '../helpers/errors.js';
import { tmpDir } from '../helpers/tmp.js';
import { activeLogPath, batchSpans, logFiles, RecordingLogger, releaseHeldSyncs, T0 } from './log-fixtures.js';
import { batch, openedLogs, PID, seqs, snapshotFiles, values } from './producer-fixtures.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

const { open, shut, closeAll } = openedLogs();
afterEach(async () => {
  releaseHeldSyncs();
  vi.restoreAllMocks();
  await closeAll();
});

describe('idempotent producer: durability', () => {
  /** Appends batches of 2 records for producer PID from `fromSeq`; 300-byte segments roll every few batches. */
  async function produce(log: PartitionLog, fromSeq: number, batches: number): Promise<void> {
    for (let b = 0; b < batches; b++) await log.appendBatch(batch(fromSeq + 2 * b, 2));
  }

  async function expectStateAt(log: PartitionLog, nextSeq: number): Promise<void> {
    const end = log.logEndOffset;
    expect(await log.appendBatch(batch(nextSeq - 2, 2))).toEqual({ baseOffset: end - 2, lastOffset: end - 1, duplicate: true });
    expect(await asyncCodeOf(log.appendBatch(batch(nextSeq + 1)))).toBe('OUT_OF_ORDER_SEQUENCE');
    expect(log.producerState(PID)!.batches).toHaveLength(5);
  }

  it('survives a clean close and reopen, from the snapshot alone', async () => {
    const dir = tmpDir();
    let log = open(dir, { segmentBytes: 300 });
    await produce(log, 0, 20);
    expect(logFiles(dir).length).toBeGreaterThan(3);
    await shut(log);
    // The snapshot at the active segment's base (from its roll) and the one at the log end (clean close).
    expect(snapshotFiles(dir)).toEqual([`${logFiles(dir).at(-1)!.slice(0, 20)}.snapshot`, `${String(40).padStart(20, '0')}.snapshot`]);
    const forEachBatch = vi.spyOn(LogSegment.prototype, 'forEachBatch');
    log = open(dir, { segmentBytes: 300 });
    expect(forEachBatch).not.toHaveBeenCalled(); // nothing after the snapshot to replay
    vi.restoreAllMocks();
    await expectStateAt(log, 40);
    expect(await log.appendBatch(batch(40, 2))).toEqual({ baseOffset: 40, lastOffset: 41 });
    await shut(log);
    log = open(dir, { segmentBytes: 300 });
    expect(values(log)).toEqual(seqs(0, 42));
  });

  it('survives a crash (reopen without close): the snapshot at the active segment plus a replay of its headers', async () => {
    const dir = tmpDir();
    const crashed = open(dir, { segmentBytes: 300 });
    await produce(crashed, 0, 23);
    const active = logFiles(dir).at(-1)!.slice(0, 20);
    expect(snapshotFiles(dir)).toEqual([`${active}.snapshot`]);
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'recovery-point.json'), 'utf8'))).toEqual({ recoveryPoint: Number(active), clean: false });
    const log = open(dir, { segmentBytes: 300 }); // `crashed` is never closed before this
    await expectStateAt(log, 46);
    expect(values(log)).toEqual(seqs(0, 46));
  });

  it('after a crash in the first segment (no roll yet), rebuilds from the marker snapshot at its base', async () => {
    const dir = tmpDir();
    const crashed = open(dir);
    await crashed.append([{ key: null, value: Buffer.from('plain') }]);
    await produce(crashed, 0, 6);
    expect(snapshotFiles(dir)).toEqual([`${'0'.repeat(20)}.snapshot`]);
    const log = open(dir);
    await expectStateAt(log, 12);
  });

  it('a torn tail loses the last batch: its retry is written again, not taken for a duplicate', async () => {
    const dir = tmpDir();
    const crashed = open(dir, { segmentBytes: 300 });
    await produce(crashed, 0, 9);
    const file = activeLogPath(dir);
    const last = batchSpans(file).at(-1)!;
    fs.truncateSync(file, last.position + last.bytes - 5);
    const log = open(dir, { segmentBytes: 300 });
    expect(log.logEndOffset).toBe(16);
    expect(await log.appendBatch(batch(16, 2))).toEqual({ baseOffset: 16, lastOffset: 17 });
    expect(await log.appendBatch(batch(16, 2))).toEqual({ baseOffset: 16, lastOffset: 17, duplicate: true });
    expect(values(log)).toEqual(seqs(0, 18));
  });

  it('never uses a clean-close snapshot above the log end after the tail was cut (recovery-point.test.ts style crash)', async () => {
    const dir = tmpDir();
    let log = open(dir, { segmentBytes: 300 });
    await produce(log, 0, 9);
    await shut(log);
    const checkpoint = path.join(dir, 'recovery-point.json');
    const { recoveryPoint } = JSON.parse(fs.readFileSync(checkpoint, 'utf8')) as { recoveryPoint: number };
    expect(snapshotFiles(dir)).toContain(`${String(recoveryPoint).padStart(20, '0')}.snapshot`);
    // A crash after the clean close wrote its snapshot, before its checkpoint: the last roll's checkpoint stays,
    // and the active segment's tail above it may be cut.
    fs.writeFileSync(checkpoint, JSON.stringify({ recoveryPoint: Number(logFiles(dir).at(-1)!.slice(0, 20)), clean: false }));
    const file = activeLogPath(dir);
    fs.truncateSync(file, fs.statSync(file).size - 7);
    log = open(dir, { segmentBytes: 300 });
    expect(log.logEndOffset).toBe(16);
    expect(log.producerState(PID)!.batches.at(-1)).toMatchObject({ baseSequence: 14, lastOffset: 15 });
    expect(await log.appendBatch(batch(16, 2))).toEqual({ baseOffset: 16, lastOffset: 17 });
    expect(snapshotFiles(dir).every((f) => Number(f.slice(0, 20)) <= 16)).toBe(true);
  });

  it('skips an unreadable snapshot, warns, and replays the whole log', async () => {
    const dir = tmpDir();
    const crashed = open(dir, { segmentBytes: 300 });
    await produce(crashed, 0, 12);
    const [snapshot] = snapshotFiles(dir);
    fs.writeFileSync(path.join(dir, snapshot!), '{"version":1,"offs');
    const logger = new RecordingLogger();
    const log = open(dir, { segmentBytes: 300, logger });
    expect(logger.warns.map((w) => w.msg)).toContain('skipped an unreadable producer state snapshot');
    await expectStateAt(log, 24);
    expect(JSON.parse(fs.readFileSync(path.join(dir, snapshot!), 'utf8'))).toMatchObject({ version: 1, offset: Number(snapshot!.slice(0, 20)) });
  });

  it('survives SIGKILL of a real process: every acknowledged batch is stored once, and retries find it', async () => {
    const dir = tmpDir();
    // The child appends 1 to 3 records per batch from sequence argv[2] on, printing `send` before and `ack` after.
    const script = `
      import fs from 'node:fs';
      import { PartitionLog } from ${JSON.stringify(path.join(ROOT, 'src/log/segments/partition-log.ts'))};
      import { encodeBatch } from ${JSON.stringify(path.join(ROOT, 'src/protocol/record-batch.ts'))};
      import { DEFAULT_TOPIC_CONFIG } from ${JSON.stringify(path.join(ROOT, 'src/protocol/topic-config.ts'))};
      import { FileCache } from ${JSON.stringify(path.join(ROOT, 'src/log/segments/file-cache.ts'))};
      const [dir, from] = process.argv.slice(1);
      const log = PartitionLog.open(dir, 't', 0, { config: { ...DEFAULT_TOPIC_CONFIG, flushPolicy: 'always', segmentBytes: 4096 },
        indexIntervalBytes: 512, clock: { now: () => Date.now() }, logger: { info() {}, warn() {} },
        files: new FileCache({ maxOpenFiles: 8 }) });
      for (let seq = Number(from); ; ) {
        const n = 1 + (seq % 3);
        const records = Array.from({ length: n }, (_, i) => ({ key: null, value: Buffer.from('0:' + (seq + i)) }));
        fs.writeSync(1, 'send ' + seq + ' ' + n + '\\n');
        const r = await log.appendBatch(encodeBatch(records, 0, Date.now(), { producerId: ${PID}, producerEpoch: 0, baseSequence: seq }));
        fs.writeSync(1, 'ack ' + seq + ' ' + n + ' ' + r.baseOffset + '\\n');
        seq += n;
      }`;
    const acked = new Map<number, { n: number; baseOffset: number }>();
    let next = 0;
    for (let run = 0; run < 4; run++) {
      const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, dir, String(next)], {
        cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'],
      });
      let inFlight: { seq: number; n: number } | undefined;
      let acks = 0;
      const lines = readline.createInterface({ input: child.stdout! });
      lines.on('line', (line) => {
        const [kind, ...fields] = line.split(' ');
        const [seq, n, base] = fields.map(Number) as [number, number, number];
        if (kind === 'send') inFlight = { seq, n };
        else if (kind === 'ack') {
          acked.set(seq, { n, baseOffset: base });
          if (++acks === 30 + run * 7) child.kill('SIGKILL');
        }
      });
      // 'close' comes after stdout is drained: every line the child wrote before the kill has been read.
      const signal = await new Promise<NodeJS.Signals | null>((resolve) => child.once('close', (_code, sig) => resolve(sig)));
      expect(signal).toBe('SIGKILL');
      // The producer retries what was in flight, then every acknowledged batch still among its last 5.
      const log = open(dir, { segmentBytes: 4096 });
      const sent = inFlight!;
      const r = await log.appendBatch(batch(sent.seq, sent.n));
      if (acked.has(sent.seq)) expect(r).toEqual({ baseOffset: acked.get(sent.seq)!.baseOffset, lastOffset: acked.get(sent.seq)!.baseOffset + sent.n - 1, duplicate: true });
      acked.set(sent.seq, { n: sent.n, baseOffset: r.baseOffset });
      const lastFive = [...acked.keys()].sort((a, b) => a - b).slice(-5);
      for (const seq of lastFive) {
        const { n, baseOffset } = acked.get(seq)!;
        expect(await log.appendBatch(batch(seq, n))).toEqual({ baseOffset, lastOffset: baseOffset + n - 1, duplicate: true });
      }
      next = sent.seq + sent.n;
      expect(values(log)).toEqual(seqs(0, next));
      await shut(log);
    }
  });
});

describe('idempotent producer: forgetting', () => {
  it('forgets a producer whose batches were all deleted; it must start again at 0 (also after a reopen)', async () => {
    const dir = tmpDir();
    let log = open(dir, { segmentBytes: 300 });
    await log.appendBatch(batch(0, 2, 0, 1));
    await log.appendBatch(batch(0, 2, 0, 2));
    await log.appendBatch(batch(2, 2, 0, 1));
    await log.appendBatch(batch(2, 2, 0, 2));
    log.deleteRecordsBefore(6, 'delete-records');
    expect(log.producerState(1)).toBeUndefined();
    expect(log.producerState(2)).toBeDefined();
    expect(await asyncCodeOf(log.appendBatch(batch(4, 1, 0, 1)))).toBe('UNKNOWN_PRODUCER_ID');
    const crashed = log;
    log = open(dir, { segmentBytes: 300 }); // crash: the snapshot still names producer 1
    void crashed;
    expect(log.producerState(1)).toBeUndefined();
    expect(await asyncCodeOf(log.appendBatch(batch(4, 1, 0, 1)))).toBe('UNKNOWN_PRODUCER_ID');
    expect(await log.appendBatch(batch(0, 1, 0, 1))).toEqual({ baseOffset: 8, lastOffset: 8 });
    expect(await log.appendBatch(batch(4, 1, 0, 2))).toEqual({ baseOffset: 9, lastOffset: 9 });
  });

  it('a forgotten producer that starts over at 0 is rebuilt the same after a crash (its old batches not mistaken for retries)', async () => {
    const dir = tmpDir();
    const crashed = open(dir);
    await crashed.appendBatch(batch(0, 2, 0, 1));
    await crashed.appendBatch(batch(0, 1, 0, 2));
    crashed.deleteRecordsBefore(2, 'delete-records');
    expect(await crashed.appendBatch(batch(0, 2, 0, 1))).toEqual({ baseOffset: 3, lastOffset: 4 });
    const log = open(dir); // the replay sees producer 1's old batch at 0-1 and its new start at 3-4
    expect(log.producerState(1)!.batches).toEqual([{ baseSequence: 0, lastSequence: 1, baseOffset: 3, lastOffset: 4 }]);
    expect(await log.appendBatch(batch(0, 2, 0, 1))).toEqual({ baseOffset: 3, lastOffset: 4, duplicate: true });
  });

  it('time retention forgets producers with their expired batches (ManualClock)', async () => {
    const dir = tmpDir();
    const clock = new ManualClock(T0);
    const log = open(dir, { clock, segmentBytes: 300, retentionMs: 60_000 });
    await log.appendBatch(encodeBatch([{ key: null, value: Buffer.from('old') }], 0, clock.now(), { producerId: 1, producerEpoch: 0, baseSequence: 0 }));
    clock.advance(50_000);
    await log.appendBatch(encodeBatch([{ key: null, value: Buffer.from('new') }], 0, clock.now(), { producerId: 2, producerEpoch: 0, baseSequence: 0 }));
    clock.advance(20_000);
    expect(log.enforceRetention()).toMatchObject({ logStartOffset: 1, reason: 'retention-time' });
    expect(log.producerState(1)).toBeUndefined();
    expect(log.producerState(2)!.batches).toHaveLength(1);
  });

  it(`keeps at most maxProducers producers, forgetting the one that appended least recently (also after a crash)`, async () => {
    const dir = tmpDir();
    const log = open(dir, { maxProducers: 3 });
    for (const pid of [1, 2, 3]) await log.appendBatch(batch(0, 1, 0, pid));
    await log.appendBatch(batch(1, 1, 0, 1));
    await log.appendBatch(batch(0, 1, 0, 4));
    expect([1, 2, 3, 4].map((pid) => log.producerState(pid) !== undefined)).toEqual([true, false, true, true]);
    expect(await asyncCodeOf(log.appendBatch(batch(1, 1, 0, 2)))).toBe('UNKNOWN_PRODUCER_ID');
    const reopened = open(dir, { maxProducers: 3 });
    expect([1, 2, 3, 4].map((pid) => reopened.producerState(pid) !== undefined)).toEqual([true, false, true, true]);
  });
});

describe('idempotent producer: compaction', () => {
  it('the cleaner keeps batches\' producer fields, and the state survives compaction and a crash', async () => {
    const dir = tmpDir();
    const clock = new ManualClock(T0);
    const crashed = open(dir, { clock, segmentBytes: 400, cleanupPolicy: 'compact', minCompactionLagMs: 0 });
    for (let s = 0; s < 30; s++) await crashed.appendBatch(batch(s, 1, 0, PID, `k${s % 3}`));
    const stats = await crashed.compact(true);
    expect(stats!.recordsAfter).toBeLessThan(stats!.recordsBefore);
    for (const f of logFiles(dir)) {
      const data = fs.readFileSync(path.join(dir, f));
      for (const span of batchSpans(path.join(dir, f))) {
        expect(readBatchHeader(data, span.position)).toMatchObject({ producerId: PID, producerEpoch: 0, baseSequence: span.baseOffset });
      }
    }
    const log = open(dir, { clock, segmentBytes: 400, cleanupPolicy: 'compact', minCompactionLagMs: 0 });
    expect(await log.appendBatch(batch(29, 1, 0, PID, 'k2'))).toEqual({ baseOffset: 29, lastOffset: 29, duplicate: true });
    expect(await log.appendBatch(batch(30, 1, 0, PID, 'k0'))).toEqual({ baseOffset: 30, lastOffset: 30 });
  });
});

describe('idempotent producer: model (fast-check)', () => {
  type Op =
    | { kind: 'send'; count: number }
    | { kind: 'retry'; back: number }
    | { kind: 'burst'; count: number; retries: number }
    | { kind: 'gap'; by: number }
    | { kind: 'bump' }
    | { kind: 'reopen' }
    | { kind: 'crash' };
  const opSpec: fc.Arbitrary<Op> = fc.oneof(
    { weight: 6, arbitrary: fc.record({ kind: fc.constant('send' as const), count: fc.integer({ min: 1, max: 4 }) }) },
    { weight: 4, arbitrary: fc.record({ kind: fc.constant('retry' as const), back: fc.nat({ max: 7 }) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('burst' as const), count: fc.integer({ min: 1, max: 3 }), retries: fc.integer({ min: 1, max: 3 }) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('gap' as const), by: fc.integer({ min: 1, max: 3 }) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('bump' as const) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('reopen' as const) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('crash' as const) }) },
  );

  it('random sends, retries, epoch bumps, reopens and crashes: every sequence stored exactly once, in order', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opSpec, { minLength: 1, maxLength: 40 }), fc.integer({ min: 200, max: 2000 }), async (ops, segmentBytes) => {
        const dir = tmpDir();
        const mine: PartitionLog[] = [];
        const reopen = () => {
          const l = open(dir, { segmentBytes });
          mine.push(l);
          return l;
        };
        let log = reopen();
        let epoch = 0;
        let nextSeq = 0;
        const expected: string[] = [];
        /** Batches this epoch, oldest first. */
        let sent: { seq: number; count: number; baseOffset: number }[] = [];
        const send = async (count: number) => {
          const r = await log.appendBatch(batch(nextSeq, count, epoch));
          expect(r).toEqual({ baseOffset: expected.length, lastOffset: expected.length + count - 1 });
          sent.push({ seq: nextSeq, count, baseOffset: r.baseOffset });
          expected.push(...seqs(nextSeq, nextSeq + count, epoch));
          nextSeq += count;
        };
        try {
          for (const op of ops) {
            switch (op.kind) {
              case 'send':
                await send(op.count);
                break;
              case 'retry': {
                const i = sent.length - 1 - op.back;
                if (i < 0) break;
                const b = sent[i]!;
                const p = log.appendBatch(batch(b.seq, b.count, epoch));
                if (op.back < 5) expect(await p).toEqual({ baseOffset: b.baseOffset, lastOffset: b.baseOffset + b.count - 1, duplicate: true });
                else expect(await asyncCodeOf(p)).toBe('OUT_OF_ORDER_SEQUENCE');
                break;
              }
              case 'burst': {
                // A send and its retries, all in flight together.
                const base = expected.length;
                const all = Array.from({ length: 1 + op.retries }, () => log.appendBatch(batch(nextSeq, op.count, epoch)));
                const results = await Promise.all(all);
                expect(results[0]).toEqual({ baseOffset: base, lastOffset: base + op.count - 1 });
                for (const r of results.slice(1)) expect(r).toEqual({ ...results[0], duplicate: true });
                sent.push({ seq: nextSeq, count: op.count, baseOffset: base });
                expected.push(...seqs(nextSeq, nextSeq + op.count, epoch));
                nextSeq += op.count;
                break;
              }
              case 'gap':
                expect(await asyncCodeOf(log.appendBatch(batch(nextSeq + op.by, 1, epoch)))).toBe(sent.length > 0 || epoch > 0 ? 'OUT_OF_ORDER_SEQUENCE' : 'UNKNOWN_PRODUCER_ID');
                break;
              case 'bump':
                if (sent.length > 0) {
                  const old = sent.at(-1)!;
                  epoch++;
                  nextSeq = 0;
                  sent = [];
                  await send(1);
                  expect(await asyncCodeOf(log.appendBatch(batch(old.seq, old.count, epoch - 1)))).toBe('INVALID_PRODUCER_EPOCH');
                }
                break;
              case 'reopen':
                await shut(log);
                log = reopen();
                break;
              case 'crash':
                log = reopen(); // the old one is left open, as a killed process leaves its files
                break;
            }
            expect(log.logEndOffset).toBe(expected.length);
          }
          expect(values(log)).toEqual(expected);
          await shut(log);
          log = reopen();
          expect(values(log)).toEqual(expected);
        } finally {
          for (const l of mine) {
            await shut(l);
          }
        }
      }),
      { numRuns: 60 },
    );
  });
});

/**
 * The idempotent producer's storage half (Kafka's ProducerStateManager): retries answered with the stored
 * copy's offsets and never written twice, sequence gaps, fencing, epochs, unknown producers; the state
 * rebuilt after a clean close, a simulated crash, a torn tail and a real SIGKILL; forgetting by retention
 * and by the producer bound; compaction; and a fast-check model of one producer's sends, retries and restarts.
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
import { PartitionLog as Log } from '../../src/log/segments/partition-log.js';
import {
  lastSequenceOf, MAX_SEQUENCE, nextSequence, ProducerStateManager,
} from '../../src/log/segments/producer-state.js';
import { LogSegment } from '../../src/log/segments/segment.js';
import { asyncCodeOf, asyncErrorOf } from '../helpers/errors.js';
import { tmpDir } from '../helpers/tmp.js';
import type { LogOverrides } from './log-fixtures.js';
import {
  activeLogPath, batchSpans, holdSyncs, logFiles, logOptions, readAll, RecordingLogger, releaseHeldSyncs, smallFileCache, T0,
} from './log-fixtures.js';

const PID = 4242;
const ROOT = path.resolve(import.meta.dirname, '../..');

// Logs opened by a test; those a test "crashed" (abandoned without close) are closed only after it ends.
const opened = new Set<PartitionLog>();
afterEach(async () => {
  releaseHeldSyncs();
  vi.restoreAllMocks();
  for (const log of opened) await log.close();
  opened.clear();
});

type Options = LogOverrides & { maxProducers?: number };

function open(dir: string, overrides: Options = {}): PartitionLog {
  const { maxProducers, ...rest } = overrides;
  const log = Log.open(dir, 't', 0, { ...logOptions(rest), ...(maxProducers === undefined ? {} : { maxProducers }) });
  opened.add(log);
  return log;
}

async function shut(log: PartitionLog): Promise<void> {
  opened.delete(log);
  await log.close();
}

/** An idempotent batch of `count` records whose values are `<epoch>:<sequence>`. */
function batch(baseSequence: number, count = 1, producerEpoch = 0, producerId = PID, key?: string): Buffer {
  const records = Array.from({ length: count }, (_, i) => ({
    key: key === undefined ? null : Buffer.from(key),
    value: Buffer.from(`${producerEpoch}:${baseSequence + i}`),
  }));
  return encodeBatch(records, 0, T0, { producerId, producerEpoch, baseSequence });
}

/** The values of every readable record, in offset order. */
function values(log: PartitionLog): string[] {
  return readAll(log).map((r) => r.value!.toString());
}

const seqs = (from: number, to: number, epoch = 0) => Array.from({ length: to - from }, (_, i) => `${epoch}:${from + i}`);

function snapshotFiles(dir: string): string[] {
  return fs.readdirSync(dir).filter((f) => f.endsWith('.snapshot')).sort();
}


const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('idempotent producer: appends', () => {
  it('acknowledges a retry of the last batch with the original offsets and stores it once', async () => {
    const log = open(tmpDir());
    expect(await log.appendBatch(batch(0, 3))).toEqual({ baseOffset: 0, lastOffset: 2 });
    expect(await log.appendBatch(batch(3, 2))).toEqual({ baseOffset: 3, lastOffset: 4 });
    expect(await log.appendBatch(batch(3, 2))).toEqual({ baseOffset: 3, lastOffset: 4, duplicate: true });
    expect(log.logEndOffset).toBe(5);
    expect(values(log)).toEqual(seqs(0, 5));
    expect(readAll(log).map((r) => r.offset)).toEqual([0, 1, 2, 3, 4]);
    expect(await log.appendBatch(batch(5))).toEqual({ baseOffset: 5, lastOffset: 5 });
  });

  it('recognises a retry of any of the last 5 batches; an older one is out of order', async () => {
    const log = open(tmpDir());
    for (let s = 0; s < 7; s++) await log.appendBatch(batch(s));
    expect(await log.appendBatch(batch(2))).toEqual({ baseOffset: 2, lastOffset: 2, duplicate: true });
    expect(await log.appendBatch(batch(4))).toEqual({ baseOffset: 4, lastOffset: 4, duplicate: true });
    const err = await asyncErrorOf(log.appendBatch(batch(1)));
    expect(err.code).toBe('OUT_OF_ORDER_SEQUENCE');
    expect(err.context).toMatchObject({ expectedSequence: 7, baseSequence: 1 });
    // Same base sequence, different range: not a retry.
    expect(await asyncCodeOf(log.appendBatch(batch(6, 2)))).toBe('OUT_OF_ORDER_SEQUENCE');
    expect(values(log)).toEqual(seqs(0, 7));
    expect(log.producerState(PID)!.batches.map((b) => b.baseSequence)).toEqual([2, 3, 4, 5, 6]);
  });

  it('refuses a sequence gap with OUT_OF_ORDER_SEQUENCE and writes nothing', async () => {
    const dir = tmpDir();
    const log = open(dir);
    await log.appendBatch(batch(0, 2));
    const bytes = fs.statSync(activeLogPath(dir)).size;
    const err = await asyncErrorOf(log.appendBatch(batch(3)));
    expect(err.code).toBe('OUT_OF_ORDER_SEQUENCE');
    expect(err.context).toEqual({ topic: 't', partition: 0, producerId: PID, producerEpoch: 0, expectedSequence: 2, baseSequence: 3 });
    expect(err.message).toContain('expected 2');
    expect(log.logEndOffset).toBe(2);
    expect(fs.statSync(activeLogPath(dir)).size).toBe(bytes);
    expect(await log.appendBatch(batch(2))).toEqual({ baseOffset: 2, lastOffset: 2 });
  });

  it('fences an older epoch with INVALID_PRODUCER_EPOCH', async () => {
    const log = open(tmpDir());
    await log.appendBatch(batch(0, 1, 0));
    await log.appendBatch(batch(0, 1, 1));
    const err = await asyncErrorOf(log.appendBatch(batch(1, 1, 0)));
    expect(err.code).toBe('INVALID_PRODUCER_EPOCH');
    expect(err.context).toMatchObject({ topic: 't', partition: 0, producerId: PID, producerEpoch: 0, currentEpoch: 1 });
    // Even a retry of a batch the old epoch stored is fenced.
    expect(await asyncCodeOf(log.appendBatch(batch(0, 1, 0)))).toBe('INVALID_PRODUCER_EPOCH');
    expect(values(log)).toEqual(['0:0', '1:0']);
  });

  it('a new epoch restarts at sequence 0', async () => {
    const log = open(tmpDir());
    await log.appendBatch(batch(0, 5, 0));
    const err = await asyncErrorOf(log.appendBatch(batch(5, 1, 1)));
    expect(err.code).toBe('OUT_OF_ORDER_SEQUENCE');
    expect(err.context).toMatchObject({ producerEpoch: 1, expectedSequence: 0, baseSequence: 5 });
    expect(await log.appendBatch(batch(0, 2, 1))).toEqual({ baseOffset: 5, lastOffset: 6 });
    expect(await log.appendBatch(batch(0, 2, 1))).toEqual({ baseOffset: 5, lastOffset: 6, duplicate: true });
    expect(log.producerState(PID)).toEqual({
      producerId: PID, producerEpoch: 1, batches: [{ baseSequence: 0, lastSequence: 1, baseOffset: 5, lastOffset: 6 }],
    });
  });

  it('refuses an unknown producer whose first batch does not start at 0 with UNKNOWN_PRODUCER_ID', async () => {
    const log = open(tmpDir());
    const err = await asyncErrorOf(log.appendBatch(batch(3)));
    expect(err.code).toBe('UNKNOWN_PRODUCER_ID');
    expect(err.context).toMatchObject({ topic: 't', partition: 0, producerId: PID, baseSequence: 3 });
    expect(log.logEndOffset).toBe(0);
    expect(await log.appendBatch(batch(0))).toEqual({ baseOffset: 0, lastOffset: 0 });
  });

  it('refuses an idempotent batch with a negative epoch or sequence with INVALID_RECORD', async () => {
    const log = open(tmpDir());
    const bad = encodeBatch([{ key: null, value: Buffer.from('x') }], 0, T0, { producerId: PID, producerEpoch: 0, baseSequence: -1 });
    expect(await asyncCodeOf(log.appendBatch(bad))).toBe('INVALID_RECORD');
    expect(log.logEndOffset).toBe(0);
  });

  it('keeps producers apart, and batches without a producer id skip the state and leave no snapshot file', async () => {
    const dir = tmpDir();
    let log = open(dir, { segmentBytes: 300 });
    for (let i = 0; i < 20; i++) await log.append([{ key: null, value: Buffer.from(`plain-${i}`.padEnd(40, '.')) }]);
    expect(logFiles(dir).length).toBeGreaterThan(2);
    await shut(log);
    expect(snapshotFiles(dir)).toEqual([]);
    log = open(dir, { segmentBytes: 300 });
    expect(log.producerState(-1)).toBeUndefined();
    await log.appendBatch(batch(0, 1, 0, 1));
    await log.appendBatch(batch(0, 1, 0, 2));
    await log.appendBatch(batch(1, 1, 0, 1));
    expect(await log.appendBatch(batch(0, 1, 0, 2))).toEqual({ baseOffset: 21, lastOffset: 21, duplicate: true });
    expect(await asyncCodeOf(log.appendBatch(batch(2, 1, 0, 2)))).toBe('OUT_OF_ORDER_SEQUENCE');
  });
});

describe('idempotent producer: sequence arithmetic', () => {
  const state = () => ProducerStateManager.inMemory({ maxProducers: 10, logger: new RecordingLogger(), topic: 't', partition: 0, files: smallFileCache() });
  const fields = (baseSequence: number, lastOffsetDelta = 0, producerEpoch = 0) => ({ producerId: 1, producerEpoch, baseSequence, lastOffsetDelta });

  it('sequences are int32 and wrap to 0 after 2^31-1, as Kafka', () => {
    expect(MAX_SEQUENCE).toBe(2 ** 31 - 1);
    expect(nextSequence(MAX_SEQUENCE)).toBe(0);
    expect(lastSequenceOf(MAX_SEQUENCE - 1, 1)).toBe(MAX_SEQUENCE);
    expect(lastSequenceOf(MAX_SEQUENCE - 1, 3)).toBe(1);
    expect(lastSequenceOf(MAX_SEQUENCE, 0)).toBe(MAX_SEQUENCE);

    const s = state();
    s.update(fields(MAX_SEQUENCE - 1, 1), 100);
    expect(s.check(fields(0))).toBeNull();
    expect(s.check(fields(MAX_SEQUENCE - 1, 1))).toEqual({ baseOffset: 100, lastOffset: 101 });
    expect(() => s.check(fields(MAX_SEQUENCE))).toThrow(expect.objectContaining({ code: 'OUT_OF_ORDER_SEQUENCE', context: expect.objectContaining({ expectedSequence: 0 }) }));
    // A batch across the wrap: sequences MAX, 0, 1.
    s.update(fields(0, 1), 102);
    s.update(fields(2, 0), 104);
    const t = state();
    t.update(fields(MAX_SEQUENCE - 2, 1), 0);
    t.update(fields(MAX_SEQUENCE, 2), 2);
    expect(t.check(fields(MAX_SEQUENCE, 2))).toEqual({ baseOffset: 2, lastOffset: 4 });
    expect(t.check(fields(2))).toBeNull();
    expect(t.get(1)!.batches.at(-1)).toEqual({ baseSequence: MAX_SEQUENCE, lastSequence: 1, baseOffset: 2, lastOffset: 4 });
  });

  it('keeps at most 5 batches per producer, in a ring', () => {
    const s = state();
    for (let i = 0; i < 12; i++) s.update(fields(i), i);
    expect(s.get(1)!.batches.map((b) => b.baseSequence)).toEqual([7, 8, 9, 10, 11]);
    expect(s.check(fields(7))).toEqual({ baseOffset: 7, lastOffset: 7 });
    expect(() => s.check(fields(6))).toThrow(expect.objectContaining({ code: 'OUT_OF_ORDER_SEQUENCE' }));
  });
});

describe('idempotent producer: flush.policy=always', () => {
  it('concurrent retries of a batch in flight resolve with its offsets once it is durable, and it is written once', async () => {
    const syncs = holdSyncs();
    const dir = tmpDir();
    const log = open(dir);
    const first = log.appendBatch(batch(0, 2));
    const retries = [log.appendBatch(batch(0, 2)), log.appendBatch(batch(0, 2))];
    const next = log.appendBatch(batch(2, 1));
    const nextRetry = log.appendBatch(batch(2, 1));
    let done = 0;
    for (const p of [first, ...retries, next, nextRetry]) void p.then(() => done++);
    await settle();
    expect(done).toBe(0);
    expect(log.highWatermark).toBe(0);
    expect(log.logEndOffset).toBe(3);
    syncs.releaseAll();
    while (done < 5) {
      await settle();
      syncs.releaseAll();
    }
    expect(await first).toEqual({ baseOffset: 0, lastOffset: 1 });
    for (const r of retries) expect(await r).toEqual({ baseOffset: 0, lastOffset: 1, duplicate: true });
    expect(await next).toEqual({ baseOffset: 2, lastOffset: 2 });
    expect(await nextRetry).toEqual({ baseOffset: 2, lastOffset: 2, duplicate: true });
    expect(batchSpans(activeLogPath(dir)).map((b) => [b.baseOffset, b.lastOffset])).toEqual([[0, 1], [2, 2]]);
    expect(values(log)).toEqual(seqs(0, 3));
  });
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
                opened.delete(log);
                await log.close();
                log = reopen();
                break;
              case 'crash':
                log = reopen(); // the old one is left open, as a killed process leaves its files
                break;
            }
            expect(log.logEndOffset).toBe(expected.length);
          }
          expect(values(log)).toEqual(expected);
          opened.delete(log);
          await log.close();
          log = reopen();
          expect(values(log)).toEqual(expected);
        } finally {
          for (const l of mine) {
            opened.delete(l);
            await l.close();
          }
        }
      }),
      { numRuns: 60 },
    );
  });
});

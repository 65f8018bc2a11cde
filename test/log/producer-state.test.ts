/**
 * The idempotent producer's rules (src/log/producer-state.ts, Kafka's ProducerStateManager): retries answered
 * with the stored copy's offsets and never written twice, sequence gaps, fencing, epochs, unknown producers,
 * sequence arithmetic, the ring of batches, forgetting by log start and by the producer bound, copies; through
 * the state itself and through the segment engine's appends.
 */
import fs from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { encodeBatch } from '../../src/protocol/record-batch.js';
import {
  lastSequenceOf, MAX_SEQUENCE, nextSequence, ProducerStateManager,
} from '../../src/log/producer-state.js';
import { asyncCodeOf, asyncErrorOf } from '../helpers/errors.js';
import { tmpDir } from '../helpers/tmp.js';
import { activeLogPath, batchSpans, holdSyncs, logFiles, readAll, releaseHeldSyncs, T0 } from './log-fixtures.js';
import { batch, openedLogs, PID, seqs, snapshotFiles, values } from './producer-fixtures.js';

const { open, shut, closeAll } = openedLogs();
afterEach(async () => {
  releaseHeldSyncs();
  vi.restoreAllMocks();
  await closeAll();
});

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

describe('idempotent producer: the state', () => {
  const state = (maxProducers = 10) => new ProducerStateManager({ maxProducers, topic: 't', partition: 0 });
  const fields = (baseSequence: number, lastOffsetDelta = 0, producerEpoch = 0, producerId = 1) => ({ producerId, producerEpoch, baseSequence, lastOffsetDelta });

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

  it('forgets producers whose newest batch ends below the log start, and the least recently appended past the bound', () => {
    const s = state(3);
    for (const pid of [1, 2, 3]) s.update(fields(0, 1, 0, pid), 2 * pid);
    s.update(fields(2, 0, 0, 1), 8);
    s.update(fields(0, 0, 0, 4), 9);
    expect([1, 2, 3, 4].map((pid) => s.get(pid) !== undefined)).toEqual([true, false, true, true]);
    expect(s.producers().map((p) => p.producerId)).toEqual([3, 1, 4]);
    expect(s.evictBelow(8)).toBe(1);
    expect(s.size).toBe(2);
    expect(() => s.check(fields(2, 0, 0, 3))).toThrow(expect.objectContaining({ code: 'UNKNOWN_PRODUCER_ID' }));
    expect(s.evictBelow(8)).toBe(0);
  });

  it('a copy answers as the state does, and changes to it leave the state as it is', () => {
    const s = state();
    s.update(fields(0, 2), 0);
    s.update(fields(0, 0, 0, 2), 3);
    const c = s.copy();
    expect(c.producers()).toEqual(s.producers());
    expect(c.check(fields(0, 2))).toEqual({ baseOffset: 0, lastOffset: 2 });
    c.update(fields(3), 4);
    c.update(fields(0, 0, 0, 3), 5);
    expect(s.get(1)!.batches).toHaveLength(1);
    expect(s.get(3)).toBeUndefined();
    expect(s.check(fields(3))).toBeNull();
  });

  it('replace orders producers by their newest batch and keeps the bound', () => {
    const s = state(2);
    s.replace([
      { producerId: 7, producerEpoch: 0, batches: [[0, 0, 5, 5]] },
      { producerId: 8, producerEpoch: 1, batches: [[0, 0, 1, 1], [1, 1, 2, 2]] },
      { producerId: 9, producerEpoch: 0, batches: [[4, 4, 0, 0]] },
    ]);
    expect(s.producers()).toEqual([
      { producerId: 8, producerEpoch: 1, batches: [[0, 0, 1, 1], [1, 1, 2, 2]] },
      { producerId: 7, producerEpoch: 0, batches: [[0, 0, 5, 5]] },
    ]);
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

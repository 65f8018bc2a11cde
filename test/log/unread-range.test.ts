/**
 * What is left to read from an offset: on a compacted log (offsets with gaps, several segments), the count
 * equals the records a reader gets, the first timestamp is the first of them, and the bytes are those from
 * its batch to the end; past the walk's bound the count is an estimate, and says so. On a plain log the first
 * unread record is found inside a batch of many without decoding the batch whole.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { unreadRange } from '../../src/log/segments/unread-range.js';
import { tmpDir } from '../helpers/tmp.js';
import { openLog, readAll, T0 } from './log-fixtures.js';

describe('unread range', () => {
  it('counts the records a reader gets from any offset of a compacted log', async () => {
    await fc.assert(fc.asyncProperty(
      fc.array(fc.integer({ min: 0, max: 5 }), { minLength: 1, maxLength: 60 }),
      fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 20 }),
      async (keys, batchSizes) => {
        const log = openLog(tmpDir(), { cleanupPolicy: 'compact', segmentBytes: 400, minCompactionLagMs: 0 });
        try {
          let k = 0;
          for (let b = 0; k < keys.length; b++) {
            const size = batchSizes[b % batchSizes.length]!;
            await log.append(keys.slice(k, k + size).map((key, i) => ({ key: Buffer.from(`k${key}`), value: Buffer.from(`v${k + i}`), timestamp: T0 - 1000 + k + i })));
            k += size;
          }
          await log.compact(true);
          const all = readAll(log, 0, 1 << 30, 1 << 30);
          const view = { segments: log.segmentsForCleaning, highWatermark: log.highWatermark };
          for (let offset = 0; offset <= log.highWatermark; offset++) {
            const segment = log.segmentsForCleaning.filter((s) => s.baseOffset <= offset).length - 1;
            const range = unreadRange(view, offset, Math.max(segment, 0), true);
            const unread = all.filter((r) => r.offset >= offset);
            expect(range).toMatchObject({ records: unread.length, estimate: false, firstTimestamp: unread[0]?.timestamp ?? null });
            expect(log.unread(offset).records).toBe(unread.length);
          }
        } finally {
          await log.close();
        }
      },
    ), { numRuns: 30 });
  });

  it('finds the first unread record inside multi-record batches of a plain log, and past gaps a compaction left', async () => {
    await fc.assert(fc.asyncProperty(
      fc.array(fc.integer({ min: 1, max: 30 }), { minLength: 1, maxLength: 12 }),
      fc.boolean(),
      async (batchSizes, compacted) => {
        const log = openLog(tmpDir(), { cleanupPolicy: compacted ? 'compact' : 'delete', segmentBytes: 600, minCompactionLagMs: 0, retentionMs: -1 });
        try {
          let n = 0;
          for (const size of batchSizes) {
            // Keys repeat every 7 records: compaction leaves gaps inside and across batches.
            await log.append(Array.from({ length: size }, (_, i) => ({ key: Buffer.from(`k${(n + i) % 7}`), value: Buffer.from(`v${n + i}`), timestamp: T0 - 100_000 + 10 * (n + i) })));
            n += size;
          }
          if (compacted) await log.compact(true);
          const all = readAll(log, 0, 1 << 30, 1 << 30);
          const view = { segments: log.segmentsForCleaning, highWatermark: log.highWatermark };
          for (let offset = 0; offset <= log.highWatermark; offset++) {
            const segment = log.segmentsForCleaning.filter((s) => s.baseOffset <= offset).length - 1;
            // Read as a plain log (countGaps false): records are offsets, the first timestamp that of the first record a reader gets.
            const first = all.find((r) => r.offset >= offset);
            expect(unreadRange(view, offset, Math.max(segment, 0), false)).toMatchObject(first === undefined
              ? { records: 0, firstTimestamp: null, bytes: 0 }
              : { records: log.highWatermark - offset, estimate: false, firstTimestamp: first.timestamp });
          }
        } finally {
          await log.close();
        }
      },
    ), { numRuns: 30 });
  });

  it('estimates past its bound from the density counted, and says so', async () => {
    const log = openLog(tmpDir(), { cleanupPolicy: 'compact' });
    try {
      // 20 batches of 2 records each, every other key superseded: half the offsets are left after compaction.
      for (let b = 0; b < 20; b++) {
        await log.append([{ key: Buffer.from(`a${b}`), value: Buffer.from('x') }, { key: Buffer.from('same'), value: Buffer.from(`y${b}`) }]);
      }
      await log.compact(true);
      const view = { segments: log.segmentsForCleaning, highWatermark: log.highWatermark };
      const exact = unreadRange(view, 0, 0, true);
      expect(exact).toMatchObject({ records: 21, estimate: false });
      const estimated = unreadRange(view, 0, 0, true, 4);
      expect(estimated.estimate).toBe(true);
      expect(estimated.records).toBeGreaterThanOrEqual(18);
      expect(estimated.records).toBeLessThanOrEqual(24);
      // Bytes do not depend on the bound: from the first unread record's batch to the end of the log.
      expect(estimated.bytes).toBe(exact.bytes);
      expect(exact.bytes).toBe(log.sizeBytes);
    } finally {
      await log.close();
    }
  });
});

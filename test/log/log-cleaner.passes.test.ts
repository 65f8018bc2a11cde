/**
 * Compaction in several passes (more keys than the dedupe buffer holds), each key written twice far apart as
 * the 20,000,000-key benchmark does (bench/scale/compaction.ts): every pass must drop the older records of the
 * keys whose later record lies in its range, and the stats must count every pass and every segment. Also the
 * case that benchmark hit: an on-demand compaction asked for while a background one is under way.
 */
import { describe, expect, it, vi } from 'vitest';
import type { RecordInput } from '../../src/protocol/types.js';
import { LogCleaner } from '../../src/log/compaction.js';
import { OFFSET_MAP_SLOT_BYTES } from '../../src/log/offset-map.js';
import type { PartitionLog } from '../../src/log/segments/partition-log.js';
import { tmpDir } from '../helpers/tmp.js';
import { openLog, readAll } from './log-fixtures.js';

/** Distinct keys, each written in two rounds (0..KEYS-1, then again), one record per batch. */
const KEYS = 30;
/** A 10-slot buffer: 7 slots used (the largest prime), 6 keys a pass at the 0.9 load factor. */
const DEDUPE_BUFFER_BYTES = 10 * OFFSET_MAP_SLOT_BYTES;
/** About four one-record batches a segment: some twenty segments. */
const SEGMENT_BYTES = 300;

const keyed = (k: number, round: number): RecordInput => ({ key: Buffer.from(`k${String(k).padStart(2, '0')}`), value: Buffer.from(`r${round}`) });

async function writeRound(log: PartitionLog, round: number): Promise<void> {
  for (let k = 0; k < KEYS; k++) await log.append([keyed(k, round)]);
}

/** `[offset, key, value]` of every record. */
const view = (log: PartitionLog) => readAll(log).map((r) => [r.offset, r.key?.toString() ?? null, r.value?.toString() ?? null]);

/** The log once compacted: the second round only, at its offsets (it starts at `secondRound`). */
const secondRoundOnly = (secondRound: number) =>
  Array.from({ length: KEYS }, (_, k) => [secondRound + k, `k${String(k).padStart(2, '0')}`, 'r1']);

describe('compaction in several passes', () => {
  it('drops each key\'s older record in whichever pass maps its later one, and counts every pass and segment', async () => {
    const cleaner = new LogCleaner({ dedupeBufferBytes: DEDUPE_BUFFER_BYTES });
    expect(cleaner.maxKeysPerPass).toBe(6);
    const log = openLog(tmpDir(), { cleaner, cleanupPolicy: 'compact', segmentBytes: SEGMENT_BYTES });
    await writeRound(log, 0);
    const secondRound = log.logEndOffset;
    await writeRound(log, 1);
    const firstRoundSegments = log.segmentsForCleaning.filter((s) => s.baseOffset < secondRound).length;
    expect(log.segmentsForCleaning.length).toBeGreaterThan(12);

    const stats = await log.compact(true);
    expect(view(log)).toEqual(secondRoundOnly(secondRound));
    expect(stats).toEqual({
      passes: Math.ceil((2 * KEYS) / cleaner.maxKeysPerPass), // one key a batch: each pass maps exactly 6 records
      segments: firstRoundSegments, // those holding a first-round record; the second round's stay as they are
      recordsBefore: 2 * KEYS,
      recordsAfter: KEYS,
      tombstonesRemoved: 0,
      bytesBefore: expect.any(Number),
      bytesAfter: expect.any(Number),
    });
    expect(stats!.bytesAfter).toBeLessThan(stats!.bytesBefore);
    // A compaction of a compacted log finds nothing to remove, in as many passes as its keys need.
    expect(await log.compact(true)).toMatchObject({ passes: KEYS / cleaner.maxKeysPerPass, segments: 0, recordsBefore: KEYS, recordsAfter: KEYS });
    await log.close();
  });

  it('compacts what was appended before an on-demand call made while a background compaction runs', async () => {
    // The benchmark's failure: the broker's timer started a compaction while the keys were produced; the
    // on-demand call that came later got that compaction's stats (4 passes over the first ~10M offsets, 3
    // segments, nothing removed) and the second round stayed.
    const cleaner = new LogCleaner({ dedupeBufferBytes: DEDUPE_BUFFER_BYTES });
    const log = openLog(tmpDir(), { cleaner, cleanupPolicy: 'compact', segmentBytes: SEGMENT_BYTES });
    await log.append([{ key: null, value: Buffer.from('no key') }]); // so that the background pass rewrites a segment
    await writeRound(log, 0);
    const secondRound = log.logEndOffset;

    // Hold the background pass at its first segment swap, with the log as it was when it began.
    const swap = log.replaceSegment.bind(log);
    let reached!: () => void;
    let release!: () => void;
    const atSwap = new Promise<void>((resolve) => (reached = resolve));
    const released = new Promise<void>((resolve) => (release = resolve));
    vi.spyOn(log, 'replaceSegment').mockImplementationOnce(async (segment, cleanedPath) => {
      reached();
      await released;
      return swap(segment, cleanedPath);
    });
    const background = log.compact(); // as the broker's timer calls it: the active segment stays
    await atSwap;
    await writeRound(log, 1);
    const firstRoundSegments = log.segmentsForCleaning.filter((s) => s.baseOffset < secondRound).length;
    const onDemand = log.compact(true);
    release();

    const [first, stats] = await Promise.all([background, onDemand]);
    expect(first).toMatchObject({ segments: 1, recordsAfter: first!.recordsBefore - 1 }); // the record without a key
    expect(view(log)).toEqual(secondRoundOnly(secondRound));
    expect(stats).toMatchObject({
      passes: Math.ceil((2 * KEYS) / cleaner.maxKeysPerPass),
      segments: firstRoundSegments,
      recordsBefore: 2 * KEYS,
      recordsAfter: KEYS,
    });
    expect(cleaner.allocatedBytes).toBe(0);
    await log.close();
  });

  it('runs one more compaction for all the on-demand calls made while one runs, and none for a background call', async () => {
    const cleaner = new LogCleaner({ dedupeBufferBytes: DEDUPE_BUFFER_BYTES });
    const log = openLog(tmpDir(), { cleaner, cleanupPolicy: 'compact', segmentBytes: SEGMENT_BYTES });
    await writeRound(log, 0);
    await writeRound(log, 1);
    const clean = vi.spyOn(cleaner, 'withKeyMap');
    const running = log.compact(true);
    const background = log.compact();
    const [a, b] = [log.compact(true), log.compact(true)];
    expect(background).toBe(running);
    expect(a).toBe(b);
    await Promise.all([running, a]);
    expect(clean).toHaveBeenCalledTimes(2);
    expect(await a).toMatchObject({ segments: 0, recordsBefore: KEYS, recordsAfter: KEYS }); // nothing left to do
    await log.close();
  });
});

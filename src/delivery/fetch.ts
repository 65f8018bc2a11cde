/**
 * Pull delivery: reads several partitions of one topic from given offsets, long-polling when nothing is
 * ready. Per-partition failures (an offset out of range) are returned as values so the other partitions
 * still deliver.
 */
import type { FetchedPartition } from '../protocol/fetch.js';
import { OnelogError } from '../protocol/errors.js';
import type { Partition } from '../log/partition.js';

/** Limits of one fetch. */
export interface FetchLimits {
  /** Most records over all partitions. */
  maxRecords: number;
  /** Byte budget over all partitions; each partition read gets what is left (its first batch always fits). */
  maxBytes: number;
  /** Longest wait for new records when none is ready, ms. */
  maxWaitMs: number;
}

/** One partition to read and where from. */
export interface FetchTarget {
  log: Partition;
  offset: number;
  /**
   * Most records handed out of this partition, within the fetch's `maxRecords` (1 or 0: a group's suspect records,
   * handed out one at a time, coordinator/delivery-counts.ts); its `nextOffset` then stops after them. @default no cap
   */
  maxRecords?: number | undefined;
}

function isReady(t: FetchTarget): boolean {
  return t.offset !== t.log.highWatermark;
}

/**
 * Reads records from each target. Waits up to `maxWaitMs` when every target is at its high watermark;
 * a target outside `[logStartOffset, highWatermark]` counts as ready, and answers with its error at once.
 * Partitions are served in the given order until the budget is spent: callers rotate the order so none starves.
 */
export async function fetchPartitions(targets: readonly FetchTarget[], limits: FetchLimits): Promise<FetchedPartition[]> {
  await waitForAny(targets, limits.maxWaitMs);
  let recordsLeft = limits.maxRecords;
  let bytesLeft = limits.maxBytes;
  const out: FetchedPartition[] = [];
  // One partition after another: each read gets the budget the ones before it left.
  for (const { log, offset, maxRecords: cap } of targets) out.push(await (async (): Promise<FetchedPartition> => {
    const state = { partition: log.partition, logStartOffset: log.logStartOffset, highWatermark: log.highWatermark };
    try {
      if (recordsLeft <= 0 || bytesLeft <= 0 || cap === 0 || offset === log.highWatermark) return { ...state, records: [], nextOffset: offset };
      const { records, nextOffset } = await log.fetch(offset, { maxRecords: Math.min(recordsLeft, cap ?? Infinity), maxBytes: bytesLeft });
      recordsLeft -= records.length;
      for (const r of records) bytesLeft -= (r.key?.length ?? 0) + (r.value?.length ?? 0);
      return { ...state, records, nextOffset };
    } catch (err) {
      if (err instanceof OnelogError) return { ...state, records: [], nextOffset: offset, error: err.toJSON() };
      throw err;
    }
  })());
  return out;
}

/** Long-poll: waits up to `maxWaitMs` unless some target is ready (has records, or an error to answer). */
async function waitForAny(targets: readonly FetchTarget[], maxWaitMs: number): Promise<void> {
  if (targets.some(isReady) || maxWaitMs <= 0) return;
  await Promise.race(targets.map((t) => t.log.waitForData(t.offset, maxWaitMs)));
}

/** One partition's part of a binary fetch: whole batches as stored. */
export interface FetchedBatches extends Omit<FetchedPartition, 'records'> {
  /** Whole RecordBatch v2 batches; the first may hold records before the requested offset. */
  batches: Buffer;
}

/**
 * As {@link fetchPartitions}, but answers each partition's batches as stored, undecoded (the binary data
 * path): whole batches, so `maxRecords` is approximate (the reader trims, and takes no record at or past a
 * partition's `nextOffset`) and the first batch of a partition always fits `maxBytes`.
 */
export async function fetchPartitionBatches(targets: readonly FetchTarget[], limits: FetchLimits): Promise<FetchedBatches[]> {
  await waitForAny(targets, limits.maxWaitMs);
  let bytesLeft = limits.maxBytes;
  let recordsLeft = limits.maxRecords;
  const out: FetchedBatches[] = [];
  for (const { log, offset, maxRecords: cap } of targets) out.push(await (async (): Promise<FetchedBatches> => {
    const state = { partition: log.partition, logStartOffset: log.logStartOffset, highWatermark: log.highWatermark };
    try {
      if (bytesLeft <= 0 || recordsLeft <= 0 || cap === 0 || offset === log.highWatermark) return { ...state, batches: Buffer.alloc(0), nextOffset: offset };
      const read = await log.readBatches(offset, bytesLeft, Math.min(recordsLeft, cap ?? Infinity));
      const { batches } = read;
      // A capped partition's whole batches may hold more: the reader takes none at or past nextOffset.
      const nextOffset = cap === undefined ? read.nextOffset : Math.min(read.nextOffset, offset + cap);
      bytesLeft -= batches.length;
      recordsLeft -= nextOffset - offset;
      return { ...state, batches, nextOffset };
    } catch (err) {
      if (err instanceof OnelogError) return { ...state, batches: Buffer.alloc(0), nextOffset: offset, error: err.toJSON() };
      throw err;
    }
  })());
  return out;
}

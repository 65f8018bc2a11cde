/**
 * What is left to read in a partition from an offset, for lag and retention headroom (docs/monitoring.md):
 * how many records (exact on a plain log, where offsets have no gaps; counted from batch headers where
 * compaction left gaps, and estimated past a bound), the timestamp of the first of them, and the bytes from
 * the batch holding it to the end of the log, which is what size retention weighs (see retention.ts: the log
 * start moves to the first batch from which the rest of the log fits in retention.bytes).
 */
import { decodeRecordAt, decodeRecords } from '../../protocol/record-batch.js';
import type { LogSegment } from './segment.js';
import type { UnreadRange } from '../partition.js';

/** What the walk reads of a partition log. */
export interface UnreadView {
  readonly segments: readonly LogSegment[];
  readonly highWatermark: number;
}


/** Batch headers a count walks before it estimates the rest from the density so far. */
const COUNT_WALK_BATCHES = 10_000;

/**
 * The unread range from `offset` (at or above the log start).
 * @param segments index of the segment holding `offset` (the last whose base offset is <= it)
 * @param countGaps count records from batch headers (compacted topics); otherwise records = offsets
 * @param maxBatches batch headers counted before the rest is estimated
 */
export function unreadRange(view: UnreadView, offset: number, segment: number, countGaps: boolean, maxBatches = COUNT_WALK_BATCHES): UnreadRange {
  const hw = view.highWatermark;
  const none: UnreadRange = { records: 0, estimate: false, firstTimestamp: null, bytes: 0 };
  if (offset >= hw) return none;
  let firstTimestamp: number | null = null;
  let bytes = 0;
  let records = 0;
  let walked = 0;
  let reached = offset; // the offsets below it are counted
  for (let i = segment; i < view.segments.length; i++) {
    const s = view.segments[i]!;
    if (firstTimestamp !== null) {
      bytes += s.size;
      if (!countGaps || walked >= maxBatches) continue;
    }
    s.forEachBatch(Math.max(offset, s.baseOffset), (header, batch, position) => {
      if (header.baseOffset >= hw) return false;
      const lastOffset = header.baseOffset + header.lastOffsetDelta;
      if (lastOffset < offset) return true;
      if (firstTimestamp === null) {
        // A log with no gaps holds the record at the offset: it alone is decoded, those before it skipped by length
        // (a batch of 1,000 records took ~100 µs to decode whole, which an evaluation of every group paid per partition).
        const first = countGaps ? undefined : decodeRecordAt(batch, 0, Math.max(offset, header.baseOffset));
        const unread = first !== undefined ? [first] : decodeRecords(batch).filter((r) => r.offset >= offset && r.offset < hw);
        if (unread.length === 0) return true; // compaction emptied its records from the offset on
        firstTimestamp = unread[0]!.timestamp;
        bytes = s.size - position;
        records = unread.length; // counted only where there are gaps
      } else {
        records += header.recordCount;
      }
      reached = Math.min(lastOffset + 1, hw);
      return countGaps && ++walked < maxBatches;
    });
  }
  if (firstTimestamp === null) return none;
  if (!countGaps) return { records: hw - offset, estimate: false, firstTimestamp, bytes };
  // Past the bound, the rest of the range is assumed as dense as what was counted.
  const estimate = walked >= maxBatches && reached < hw;
  if (estimate) records += Math.round((hw - reached) * (records / (reached - offset)));
  return { records, estimate, firstTimestamp, bytes };
}

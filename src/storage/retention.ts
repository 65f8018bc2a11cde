/**
 * Retention (Kafka's retention.ms / retention.bytes): where the log start offset must move so that no
 * expired record is ever served. The boundary is exact, not segment-granular:
 *
 * - by time: the first record whose timestamp is >= now − retentionMs (everything before it is older, since
 *   the time index promises that); the high watermark when every record is older;
 * - by size: the first batch from which the batches to the end of the log fit in retentionBytes.
 *
 * The caller moves the log start offset there (with the reason) and deletes the segments wholly below it.
 */
import type { LogStartReason } from './log-start-reason.js';
import type { LogSegment } from './segment.js';

/** What retention reads of a partition log. */
export interface RetentionView {
  readonly segments: readonly LogSegment[];
  readonly logStartOffset: number;
  readonly highWatermark: number;
  /** First readable offset with timestamp >= `timestamp`, or the high watermark. */
  offsetForTimestamp(timestamp: number): number;
}

/** The retention settings, from the topic's configuration. */
export interface RetentionConfig {
  cleanupPolicy: string;
  /** -1 = unlimited */
  retentionMs: number;
  /** -1 = unlimited */
  retentionBytes: number;
}

/** Where the log start offset must go and why. */
export interface RetentionTarget {
  offset: number;
  reason: Extract<LogStartReason, 'retention-time' | 'retention-size'>;
}

/**
 * The new log start offset retention requires at `now` (ms), or null when nothing expired. Topics whose
 * cleanup policy lacks `delete` keep everything.
 */
export function retentionTarget(view: RetentionView, config: RetentionConfig, now: number): RetentionTarget | null {
  if (!config.cleanupPolicy.split(',').includes('delete')) return null;
  let best: RetentionTarget | null = null;
  if (config.retentionMs >= 0) {
    const offset = view.offsetForTimestamp(now - config.retentionMs);
    if (offset > view.logStartOffset) best = { offset, reason: 'retention-time' };
  }
  if (config.retentionBytes >= 0) {
    const offset = sizeBoundary(view, config.retentionBytes);
    if (offset > (best?.offset ?? view.logStartOffset)) best = { offset, reason: 'retention-size' };
  }
  return best;
}

/** Base offset of the first batch from which the rest of the log fits in `retentionBytes`. */
function sizeBoundary(view: RetentionView, retentionBytes: number): number {
  let after = 0; // bytes of the segments after the one being looked at
  for (let i = view.segments.length - 1; i >= 0; i--) {
    const segment = view.segments[i]!;
    if (after + segment.size <= retentionBytes) {
      after += segment.size;
      continue;
    }
    // The boundary is inside this segment: the first batch whose bytes to the segment's end, plus `after`, fit.
    let boundary = i + 1 < view.segments.length ? view.segments[i + 1]!.baseOffset : view.highWatermark;
    let position = 0;
    segment.forEachBatch(segment.baseOffset, (header, batch) => {
      if (segment.size - position + after <= retentionBytes) {
        boundary = header.baseOffset;
        return false;
      }
      position += batch.length;
      return true;
    });
    return Math.min(boundary, view.highWatermark);
  }
  return view.logStartOffset;
}

/**
 * The segment engine's answer to retention by size (the rule is log/retention.ts): the first batch from which the
 * batches to the end of the log fit in retention.bytes, found from the segments' sizes and one segment's batch headers.
 */
import type { LogSegment } from './segment.js';

/** What retention by size reads of a partition log. */
export interface RetentionView {
  readonly segments: readonly LogSegment[];
  readonly logStartOffset: number;
  readonly highWatermark: number;
}

/**
 * Base offset of the first batch from which the rest of the log fits in `retentionBytes`: the segment engine's
 * answer to retention by size (log/retention.ts).
 */
export function sizeBoundary(view: RetentionView, retentionBytes: number): number {
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

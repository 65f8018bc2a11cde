/**
 * The drain estimate of a group's partition (docs/monitoring.md, "Drain estimate"): how long the group takes to read
 * what it has not read at its recent consume rate, beside how long until time retention deletes the first unread
 * record, and which comes first. Pure: computed from the partition's stored health samples.
 */
import { DRAIN_WINDOW_MS } from '../protocol/monitoring-api.js';
import type { DrainEstimate, HealthSample } from '../protocol/monitoring-api.js';

/**
 * Estimates from `samples` (oldest first), as of the newest: the consume rate is the committed offset's forward moves
 * (a reset back moves nothing) over the samples of the last {@link DRAIN_WINDOW_MS} before it, per second of the time
 * they span; the time to drain is the newest lag at that rate (records appended meanwhile not counted); the newest
 * `headroomMs` is when time retention deletes the first unread record.
 */
export function drainEstimate(samples: readonly HealthSample[]): DrainEstimate {
  const newest = samples.at(-1);
  if (newest === undefined || newest.lag === null || newest.committedOffset === null) {
    return { at: newest?.at ?? null, consumeRecordsPerSec: null, windowMs: 0, drainMs: null, retentionInMs: newest?.headroomMs ?? null, outcome: 'unknown' };
  }
  const recent = samples.filter((s) => s.at >= newest.at - DRAIN_WINDOW_MS && s.committedOffset !== null);
  const windowMs = newest.at - recent[0]!.at;
  let read = 0;
  for (let i = 1; i < recent.length; i++) read += Math.max(0, recent[i]!.committedOffset! - recent[i - 1]!.committedOffset!);
  const rate = windowMs > 0 ? read / (windowMs / 1000) : null;
  const retentionInMs = newest.headroomMs;
  const estimate = (drainMs: number | null, outcome: DrainEstimate['outcome']): DrainEstimate =>
    ({ at: newest.at, consumeRecordsPerSec: rate, windowMs, drainMs, retentionInMs, outcome });
  if (newest.lag === 0) return estimate(0, 'caught-up');
  if (rate === null) return estimate(null, 'unknown');
  const drainMs = rate > 0 ? Math.ceil((newest.lag / rate) * 1000) : null;
  if (retentionInMs === null) return estimate(drainMs, drainMs === null ? 'not-draining' : 'drains-first');
  return estimate(drainMs, drainMs !== null && drainMs < retentionInMs ? 'drains-first' : 'retention-first');
}

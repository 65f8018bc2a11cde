/**
 * A group's health in one partition, from facts read elsewhere (docs/monitoring.md): lag in offsets and
 * records, time lag, retention headroom in time and bytes, records lost, and the state. Pure: no I/O.
 */
import type { HealthSettings, PartitionHealth } from '../protocol/monitoring-api.js';
import type { UnreadRange } from '../storage/unread-range.js';

/** What the health of a group's partition is computed from. */
export interface PartitionFacts {
  /** null: the group never committed the partition (no position yet). */
  committedOffset: number | null;
  /** When it last committed, ms since the epoch. */
  commitTimestamp: number | null;
  logStartOffset: number;
  highWatermark: number;
  /** Whether the group paused the partition (an out-of-range offset). */
  paused: boolean;
  /** What is left to read from max(committedOffset, logStartOffset); null without a commit. */
  unread: UnreadRange | null;
  /** The topic's time retention, ms; -1 when there is none (or its cleanup policy does not delete). */
  retentionMs: number;
  /** The topic's size retention, bytes; -1 when there is none (or its cleanup policy does not delete). */
  retentionBytes: number;
  /** Since when unread records have been seen waiting (ms since the epoch); null when there are none. */
  unreadSince: number | null;
}

/**
 * A partition's health, and the conditions behind it that alerts follow one by one (the state shows only the
 * most urgent): `atRisk` and `stalled` may hold beside `data-lost` or `paused`.
 */
export interface PartitionAssessment {
  health: PartitionHealth;
  /** Unread records with headroom below the warn ratio. */
  atRisk: boolean;
  /** Unread records waiting stallMs with no commit. */
  stalled: boolean;
}

/** The health of a group's partition at `now` (ms since the epoch). */
export function assessPartition(f: PartitionFacts, settings: HealthSettings, now: number): PartitionAssessment {
  if (f.committedOffset === null || f.unread === null) {
    const health: PartitionHealth = {
      lag: null, unreadRecords: null, unreadRecordsEstimate: false, lostRecords: 0, timeLagMs: null, headroomMs: null, headroomBytes: null,
      state: f.paused ? 'paused' : 'ok',
    };
    return { health, atRisk: false, stalled: false };
  }
  const position = Math.min(Math.max(f.committedOffset, f.logStartOffset), f.highWatermark);
  const lostRecords = Math.max(0, f.logStartOffset - f.committedOffset);
  const { unread } = f;
  const waiting = unread.firstTimestamp !== null;
  const timeLagMs = waiting ? Math.max(0, now - unread.firstTimestamp!) : 0;
  const headroomMs = f.retentionMs < 0 ? null : f.retentionMs - timeLagMs;
  const headroomBytes = f.retentionBytes < 0 ? null : f.retentionBytes - unread.bytes;
  const atRisk = waiting && (
    (headroomMs !== null && headroomMs < settings.headroomWarnRatio * f.retentionMs) ||
    (headroomBytes !== null && headroomBytes < settings.headroomWarnRatio * f.retentionBytes));
  // Stalled: records have waited stallMs (since they were first seen, or since the last commit if later).
  const stalled = waiting && now - Math.max(f.commitTimestamp ?? 0, f.unreadSince ?? now) >= settings.stallMs;
  const state = lostRecords > 0 ? 'data-lost'
    : f.paused ? 'paused'
      : atRisk ? 'at-risk'
        : stalled ? 'stalled'
          : waiting ? 'lagging' : 'ok';
  const health: PartitionHealth = {
    lag: f.highWatermark - position, unreadRecords: unread.records, unreadRecordsEstimate: unread.estimate, lostRecords,
    timeLagMs, headroomMs, headroomBytes, state,
  };
  return { health, atRisk, stalled };
}

/**
 * A group's health in one partition, from facts read elsewhere (docs/monitoring.md): lag in offsets and
 * records, time lag, retention headroom in time and bytes, records lost, and the state. Pure: no I/O.
 */
import type { HealthSettings, PartitionHealth } from '../protocol/monitoring-api.js';
import type { UnreadRange } from '../log/partition.js';

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
  /**
   * Since when this broker has seen unread records waiting (ms since the epoch); null when there are none. Only
   * bounds the first unread record's timestamp from above (a producer's clock ahead of the broker's).
   */
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
  /**
   * The earliest later moment (ms since the epoch) at which `atRisk` or `stalled`, not holding now, starts to hold
   * if nothing changes (no commit, no retention run, no record deleted); null when neither would. The alert
   * evaluator evaluates the group then, so an alert never waits for the evaluation timer.
   */
  dueAt: number | null;
}

/** The health of a group's partition at `now` (ms since the epoch). */
export function assessPartition(f: PartitionFacts, settings: HealthSettings, now: number): PartitionAssessment {
  if (f.committedOffset === null || f.unread === null) {
    const health: PartitionHealth = {
      lag: null, unreadRecords: null, unreadRecordsEstimate: false, lostRecords: 0, timeLagMs: null, headroomMs: null, headroomBytes: null,
      state: f.paused ? 'paused' : 'ok',
    };
    return { health, atRisk: false, stalled: false, dueAt: null };
  }
  const position = Math.min(Math.max(f.committedOffset, f.logStartOffset), f.highWatermark);
  const lostRecords = Math.max(0, f.logStartOffset - f.committedOffset);
  const { unread } = f;
  const waiting = unread.firstTimestamp !== null;
  const timeLagMs = waiting ? Math.max(0, now - unread.firstTimestamp!) : 0;
  const headroomMs = f.retentionMs < 0 ? null : f.retentionMs - timeLagMs;
  const headroomBytes = f.retentionBytes < 0 ? null : f.retentionBytes - unread.bytes;
  // At risk by time from the moment the first unread record's headroom falls below the ratio of retention.ms.
  const riskByTimeAt = waiting && f.retentionMs >= 0 ? Math.floor(unread.firstTimestamp! + f.retentionMs * (1 - settings.headroomWarnRatio)) + 1 : null;
  const atRisk = waiting && (
    (riskByTimeAt !== null && now >= riskByTimeAt) ||
    (headroomBytes !== null && headroomBytes < settings.headroomWarnRatio * f.retentionBytes));
  // Stalled: the first unread record has waited stallMs (since its timestamp, or since the broker first saw it if
  // that is earlier) and no commit came in that time.
  const stallAt = waiting ? Math.max(f.commitTimestamp ?? 0, Math.min(unread.firstTimestamp!, f.unreadSince ?? now)) + settings.stallMs : null;
  const stalled = stallAt !== null && now >= stallAt;
  const due = [...(atRisk || riskByTimeAt === null ? [] : [riskByTimeAt]), ...(stalled || stallAt === null ? [] : [stallAt])];
  const dueAt = due.length === 0 ? null : Math.min(...due);
  const state = lostRecords > 0 ? 'data-lost'
    : f.paused ? 'paused'
      : atRisk ? 'at-risk'
        : stalled ? 'stalled'
          : waiting ? 'lagging' : 'ok';
  const health: PartitionHealth = {
    lag: f.highWatermark - position, unreadRecords: unread.records, unreadRecordsEstimate: unread.estimate, lostRecords,
    timeLagMs, headroomMs, headroomBytes, state,
  };
  return { health, atRisk, stalled, dueAt };
}

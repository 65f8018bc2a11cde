/**
 * A broker's health at a glance (`GET /overview`, the console's first page, docs/monitoring.md "Console: overview"):
 * topics by size with their rates, groups worst first, the active alerts, in one bounded answer, so the console need not describe
 * every topic and group. Pure types.
 */
import type { GroupState } from './groups.js';
import type { GroupAlert, GroupAlertKind, PartitionHealthState, TopicRatePoint } from './monitoring-api.js';
import type { GroupType } from './types.js';

export interface OverviewRequest {
  /** At most this many topics, groups and alerts each, 1 to 1,000. @default 100 */
  limit?: number;
}

/** A topic's size. */
export interface OverviewTopic {
  topic: string;
  partitions: number;
  /** Bytes of its partitions' logs. */
  sizeBytes: number;
  /** Offsets from the log start to the high watermark, summed over its partitions (fewer records where compaction left gaps). */
  records: number;
  /**
   * Produce and consume rates (records/s, bytes/s) averaged over the last 5 complete minutes (`RATE_WINDOW_MS`),
   * counted by every broker sharing the catalog (docs/monitoring.md, "Console: charts that last").
   */
  rates: Omit<TopicRatePoint, 'at'>;
}

/** A group's health, the figures it is ordered by. */
export interface OverviewGroup {
  groupId: string;
  type: GroupType;
  state: GroupState;
  members: number;
  topics: string[];
  /** The most urgent state of its partitions (docs/monitoring.md); null when its partitions were not assessed (see `assessed`). */
  worstState: PartitionHealthState | null;
  /** Lag summed over its committed partitions, records; null when not assessed. */
  totalLag: number | null;
  /** The largest time lag of its partitions, ms; null when none was committed or not assessed. */
  maxTimeLagMs: number | null;
  /** Its unresolved alerts. */
  activeAlerts: number;
  /** The most severe kind among them, or null. */
  worstAlert: GroupAlertKind | null;
  /** Whether its partitions were read: false past the answer's budget of group partitions ({@link MAX_OVERVIEW_GROUP_PARTITIONS}). */
  assessed: boolean;
}

/** The answer of `overview`. */
export interface Overview {
  /** When it was read, ms since the epoch. */
  at: number;
  /** Largest first (by bytes, then records, then name); at most `limit`. */
  topics: OverviewTopic[];
  /** Every topic, also those not listed. */
  topicCount: number;
  /** Worst first: by the most severe active alert, then the worst partition state, then time lag, then lag, then id; at most `limit`. */
  groups: OverviewGroup[];
  groupCount: number;
  /** Unresolved alerts, the most severe kind first, then the most recent; at most `limit`. */
  alerts: GroupAlert[];
  activeAlertCount: number;
}

/** Most group partitions one overview reads the health of; groups past it are listed with `assessed: false`. */
export const MAX_OVERVIEW_GROUP_PARTITIONS = 20_000;

/** Alert kinds, the most severe first (unlisted kinds, such as the one-off `offset-jump`, come last). */
export const ALERT_SEVERITY: readonly GroupAlertKind[] = [
  'storage-corruption', 'data-lost', 'offset-out-of-range', 'retention-headroom', 'consumer-stalled', 'dead-letter-depth', 'offset-jump',
];

/** Partition states, the most urgent first (the order docs/monitoring.md gives). */
export const STATE_URGENCY: readonly PartitionHealthState[] = ['data-lost', 'paused', 'at-risk', 'stalled', 'lagging', 'ok'];

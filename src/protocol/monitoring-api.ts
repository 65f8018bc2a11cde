/**
 * What onelog tells operators about its consumers (docs/monitoring.md): the health of each group's partition
 * (lag in records and in time, retention headroom, a state), and alerts with their history and notification
 * sinks. Shapes shared by the broker, the HTTP API, the CLI and the console.
 */

/**
 * A group's partition, in the order an operator must act on it (the first that holds wins):
 * - `data-lost`: the committed offset is below the log start (retention or a delete removed records the group
 *   had not read);
 * - `paused`: the group stopped reading it until a reset (its offset fell out of range);
 * - `at-risk`: unread records will be deleted by retention soon: headroom below the subscription's
 *   `headroomWarnRatio` of retention.ms or retention.bytes;
 * - `stalled`: unread records and no commit for the subscription's `stallMs`;
 * - `lagging`: unread records;
 * - `ok`: caught up, or never committed (no position yet).
 */
export type PartitionHealthState = 'ok' | 'lagging' | 'at-risk' | 'data-lost' | 'paused' | 'stalled';


/**
 * A group's lag over every partition of its subscriptions, the figures lag tools (Burrow, kafka-lag-exporter) show
 * first: partitions without a commit (no position yet) count in none of them.
 */
export interface GroupLagTotals {
  /** The sum of the partitions' `lag`, records. */
  totalLag: number;
  /** The partition with the largest `lag` (the first of them in topic and partition order); null without a committed partition. */
  maxLag: { topic: string; partition: number; lag: number } | null;
  /** The partition with the largest `timeLagMs`, ms; null without a committed partition. */
  maxTimeLag: { topic: string; partition: number; timeLagMs: number } | null;
}

/** How far a group is behind in a partition and how long until retention deletes what it has not read. */
export interface PartitionHealth {
  /**
   * Offsets still readable that the group has not read: highWatermark − max(committedOffset, logStartOffset)
   * (offsets deleted before it read them are `lostRecords`, not lag); null without a commit.
   */
  lag: number | null;
  /** Records among those offsets (fewer than `lag` where compaction left gaps); null without a commit. */
  unreadRecords: number | null;
  /** Whether `unreadRecords` is an estimate (a compacted range longer than 10,000 batches is extrapolated). */
  unreadRecordsEstimate: boolean;
  /** Offsets below the log start the group never read: logStartOffset − committedOffset, else 0. */
  lostRecords: number;
  /** now − the timestamp of the first unread record, ms; 0 when caught up; null without a commit. */
  timeLagMs: number | null;
  /**
   * retention.ms − (now − the first unread record's timestamp), ms: how long until time retention deletes it;
   * negative once overdue (until retention runs); retention.ms when caught up; null when the topic has no time
   * retention or the group no commit.
   */
  headroomMs: number | null;
  /**
   * retention.bytes − the bytes from the first unread record's batch to the end of the log: how many bytes can
   * still be appended before size retention deletes it; retention.bytes when caught up; null when the topic has
   * no size retention or the group no commit.
   */
  headroomBytes: number | null;
  state: PartitionHealthState;
}

/** The thresholds of a subscription's health (set with `groups create|alter`). */
export interface HealthSettings {
  /** `at-risk` below this fraction of retention.ms (or retention.bytes) left; 0 to 1. @default 0.25 */
  headroomWarnRatio: number;
  /** `stalled` after unread records wait this long with no commit, ms. @default 300000 (5 minutes) */
  stallMs: number;
}

/** The thresholds a subscription starts with. */
export const DEFAULT_HEALTH_SETTINGS: HealthSettings = { headroomWarnRatio: 0.25, stallMs: 300_000 };

/**
 * Kinds of alerts. Raised once per episode and resolved when the condition clears: `retention-headroom`
 * (at-risk), `data-lost`, `offset-out-of-range` (a paused partition), `dead-letter-depth`, `consumer-stalled`,
 * `storage-corruption` (a corrupt batch in the partition's files, until the log start passes it).
 * One-off, born resolved: `offset-jump` (an out-of-range policy skipped records).
 */
export type GroupAlertKind =
  | 'retention-headroom' | 'data-lost' | 'offset-out-of-range' | 'offset-jump' | 'dead-letter-depth' | 'consumer-stalled'
  | 'storage-corruption';


/** An alert about a group's partition (a `dead-letter-depth` alert names partition 0 of the topic), with its history. */
export interface GroupAlert {
  /** Stable id (`onelog alerts ack ID`). */
  id: number;
  groupId: string;
  kind: GroupAlertKind;
  topic: string;
  partition: number;
  message: string;
  context: Record<string, unknown>;
  /** When it was raised, ms since the epoch. */
  createdAt: number;
  /** When the condition cleared, ms since the epoch; null while it holds. */
  resolvedAt: number | null;
  /** When a person acknowledged it, ms since the epoch; null until then. */
  acknowledgedAt: number | null;
  /** Who acknowledged it (free text the caller gave, e.g. `alice@host`); null until then. */
  acknowledgedBy: string | null;
}

export interface AlertListRequest {
  /** Only alerts not resolved. @default false */
  active?: boolean;
  /** Only this group's. */
  groupId?: string;
  /** At most this many, most recent first; 1 to 10,000. @default 100 */
  limit?: number;
}

export interface AcknowledgeAlertRequest {
  id: number;
  /** Who acknowledges. @default 'unknown' */
  requestedBy?: string;
}

/** Where raised and resolved alerts are POSTed (`onelog alerts notify --webhook URL`). */
export interface AlertSink {
  id: number;
  /** An http(s) URL. */
  url: string;
  /** ms since the epoch */
  createdAt: number;
}

/** How far back a history answer reaches (`GET /groups/:group/history?hours=N`, `GET /topics/:topic/history?hours=N`). */
export interface HistoryRange {
  /** The last this many hours, 1 to {@link HISTORY_HOURS}. @default 24 */
  hours?: number;
}

/** Hours of history the broker keeps (and the longest range asked for). */
export const HISTORY_HOURS = 24;

/** The step of the stored history: one sample (or count) per minute, ms. */
export const HISTORY_STEP_MS = 60_000;

/** The span a topic's recent rates are averaged over (the overview's), ms: the last 5 complete minutes. */
export const RATE_WINDOW_MS = 5 * HISTORY_STEP_MS;

/**
 * One sample of a group's partition health (the console's charts): the last one the broker took in its minute (it
 * samples at each evaluation, see docs/monitoring.md).
 */
export interface HealthSample {
  /** When it was taken, ms since the epoch. */
  at: number;
  lag: number | null;
  timeLagMs: number | null;
  headroomMs: number | null;
  headroomBytes: number | null;
  /** The group's committed offset then (what the drain estimate's consume rate is measured on); null without a commit. */
  committedOffset: number | null;
}

/**
 * Which comes first for a group's partition, reading what it has not read at its recent consume rate or retention
 * deleting it (docs/monitoring.md, "Drain estimate"):
 * - `caught-up`: no lag;
 * - `drains-first`: at the recent rate the group catches up before time retention deletes its first unread record
 *   (or the topic has no time retention);
 * - `retention-first`: time retention deletes unread records first (`retentionInMs`), the group reading too slowly or not at all;
 * - `not-draining`: the group read nothing in the window and no time retention deletes anything: lag only grows;
 * - `unknown`: no commit (no position), or fewer than two samples in the window (no consume rate).
 */
export type DrainOutcome = 'caught-up' | 'drains-first' | 'retention-first' | 'not-draining' | 'unknown';

/** The drain estimate of a group's partition, from its health samples of the last {@link DRAIN_WINDOW_MS}, as of the newest. */
export interface DrainEstimate {
  /** When the newest sample was taken, ms since the epoch: the times below count from then; null without a sample. */
  at: number | null;
  /** Records the group committed per second over the window (offsets moved forward only; a reset back counts nothing). */
  consumeRecordsPerSec: number | null;
  /** The window the rate was measured over: from the oldest sample within {@link DRAIN_WINDOW_MS} to the newest, ms. */
  windowMs: number;
  /** lag / consumeRecordsPerSec, ms: the time to read what is unread (records appended meanwhile not counted); null when not reading. */
  drainMs: number | null;
  /** The sample's `headroomMs`: when time retention deletes the first unread record; null without time retention. */
  retentionInMs: number | null;
  outcome: DrainOutcome;
}

/** The consume rate of a drain estimate is measured over the samples of the last this many ms. */
export const DRAIN_WINDOW_MS = 15 * 60_000;

/** A group's partition: its samples oldest first, and its drain estimate. */
export interface PartitionHistory {
  topic: string;
  partition: number;
  samples: HealthSample[];
  drain: DrainEstimate;
}

/**
 * Most samples a group history answers over all its partitions: a group with more partitions than fit at one sample
 * a minute is answered one sample every {@link GroupHistory.stepMs} (about 120 bytes of JSON a sample: 6 MB at most).
 */
export const MAX_HISTORY_SAMPLES = 50_000;

/**
 * A group's health samples per partition, oldest first: one per minute (the last evaluation's of that minute) over
 * the range asked for (the last 24 hours at most), stored in the catalog so a restart keeps them; fewer for a group
 * of many partitions ({@link MAX_HISTORY_SAMPLES}).
 */
export interface GroupHistory {
  groupId: string;
  /** The range's start, ms since the epoch. */
  fromMs: number;
  /**
   * The time between the samples answered, ms: 60,000 (every minute), or a multiple of it when the range's samples of
   * every partition would exceed {@link MAX_HISTORY_SAMPLES} (then the samples of the minutes that are multiples of
   * it since the epoch). The drain estimates use every sample of the last 15 minutes whatever the step.
   */
  stepMs: number;
  partitions: PartitionHistory[];
}

/**
 * A topic's produce and consume rates over one minute. Produce counts the records appended (and their record
 * batches' bytes); consume the records answered to fetches (pull, push, webhooks, the binary path) and their bytes,
 * as `onelog_produced_*` and `onelog_fetched_*` count them: a record fetched twice counts twice.
 */
export interface TopicRatePoint {
  /** The minute's start, ms since the epoch. */
  at: number;
  produceRecordsPerSec: number;
  produceBytesPerSec: number;
  consumeRecordsPerSec: number;
  consumeBytesPerSec: number;
}

/** A topic's rates, one point per complete minute of the range, oldest first (a minute without traffic: zeros). */
export interface TopicHistory {
  topic: string;
  /** The range's start, ms since the epoch. */
  fromMs: number;
  points: TopicRatePoint[];
}

/** What an alert sink receives, one POST per event, in order. */
export interface AlertNotification {
  event: 'raised' | 'resolved';
  alert: GroupAlert;
}

/**
 * Table shapes of the catalog, as the query layer (Kysely) sees them. Times are ms since the epoch. Integer columns come
 * back as bigint-typed numbers on PostgreSQL: the repositories Number() them all.
 */
import type { CompressionType, FlushPolicy } from '../protocol/topic-config.js';
import type { ColumnType, Generated } from 'kysely';
import type { GroupAlertKind } from '../protocol/monitoring-api.js';
import type { CleanupPolicy, DeliveryMode, OutOfRangePolicy, StartPolicy } from '../protocol/types.js';

export interface TopicsTable {
  name: string;
  partitions: number;
  cleanup_policy: CleanupPolicy;
  /** -1 = unlimited */
  retention_ms: number;
  /** -1 = unlimited */
  retention_bytes: number;
  segment_bytes: number;
  created_at: number;
  segment_ms: number;
  delete_retention_ms: number;
  min_compaction_lag_ms: number;
  flush_policy: FlushPolicy;
  flush_ms: number;
  flush_messages: number;
  compression_type: CompressionType;
}

export interface GroupsTable {
  group_id: string;
  created_at: number;
  /** JSON of the group's Kafka configs by name (migration 0018); null: none. */
  configs: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface SubscriptionsTable {
  group_id: string;
  topic: string;
  delivery_mode: DeliveryMode;
  start_policy: StartPolicy;
  created_at: number;
  on_out_of_range: OutOfRangePolicy;
  /** A push subscription's webhook URL; null: pushed to WebSocket members (or a pull subscription). */
  push_endpoint: string | null;
  max_in_flight: number;
  /** JSON array of ms; null: no retry policy. */
  retry_delays_ms: string | null;
  max_attempts: number | null;
  dead_letter_topic: string | null;
  /** Tier topics created for the subscription (kept, and drained, when a policy shrinks or is removed). */
  retry_tiers: number;
  dead_letter_alert_depth: number;
  webhook_max_attempts: number;
  headroom_warn_ratio: number;
  stall_ms: number;
  /**
   * When the group first committed an offset of the topic (set once, at that commit); null until then, and for a
   * subscription whose commits all came before the column did. What tells a lost offset store from a new one.
   */
  first_commit_at: number | null;
  /** A share group's settings as JSON (`{ lockMs, ordering, maxInFlightRecords }`); null: a consumer group's subscription. */
  share_settings: string | null;
}

/** A partition a group stopped reading until an explicit reset; `error` is the error's JSON body. */
export interface PausedPartitionsTable {
  group_id: string;
  topic: string;
  partition: number;
  error: string;
  paused_at: number;
}

export interface GroupAlertsTable {
  id: Generated<number>;
  group_id: string;
  kind: GroupAlertKind;
  topic: string;
  partition: number;
  message: string;
  /** JSON object */
  context: string;
  created_at: number;
  /** When the condition cleared; null while it holds (one-off alerts are born resolved). */
  resolved_at: number | null;
  acknowledged_at: number | null;
  acknowledged_by: string | null;
}

/** A webhook raised and resolved alerts are POSTed to. */
export interface AlertSinksTable {
  id: Generated<number>;
  url: string;
  created_at: number;
}

/** A redrive or purge of dead letters: offsets `[first_offset, end_offset)` of the dead-letter topic. */
export interface DeadLetterActionsTable {
  id: Generated<number>;
  group_id: string;
  topic: string;
  action: 'redrive' | 'purge';
  first_offset: number;
  end_offset: number;
  records: number;
  requested_by: string;
  executed_at: number;
}

export interface OffsetResetsTable {
  id: Generated<number>;
  group_id: string;
  topic: string;
  partition: number;
  old_offset: number | null;
  new_offset: number;
  spec: string;
  requested_by: string;
  executed_at: number;
}

export interface OffsetCheckpointsTable {
  group_id: string;
  name: string;
  topic: string;
  partition: number;
  offset: number;
  created_at: number;
}

export interface ProducerIdsTable {
  producer_id: Generated<number>;
  created_at: number;
}

/** A topic deleted from the catalog whose partition directories and committed offsets are still to be removed. */
export interface TopicDeletionsTable {
  name: string;
  partitions: number;
  requested_at: number;
}

/** A principal and its bearer token (only a salted hash of the token's secret). */
export interface UsersTable {
  name: string;
  admin: number;
  token_id: string;
  token_salt: string;
  token_hash: string;
  token_scram: string | null;
  created_at: number;
  rotated_at: number | null;
}

/** An operation done, by whom (docs/security.md). */
export interface AuditLogTable {
  id: Generated<number>;
  at: number;
  principal: string;
  action: string;
  target: string;
  /** JSON */
  details: string;
  /** `done` or `refused` */
  outcome: Generated<string>;
}

/** One ACL (docs/security.md); a row is unique on all its columns. */
export interface AclsTable {
  principal: string;
  resource_type: string;
  resource_name: string;
  pattern_type: string;
  operation: string;
  permission: string;
}

/** The data directory whose log this catalog describes (one row, `singleton` = 1). */
export interface LogOwnerTable {
  singleton: number;
  /** The id in `<dataDir>/log-owner`. */
  data_dir_id: string;
}

/** A group's partition whose health the history keeps (docs/monitoring.md, "Console: charts that last"). */
export interface HealthSeriesTable {
  id: Generated<number>;
  group_id: string;
  topic: string;
  partition: number;
}

/** A series' sample of one minute: the last the broker took in it (nulls as in PartitionHealth). */
export interface HealthSamplesTable {
  series_id: number;
  /** The minute's start. */
  minute: number;
  /** When the sample was taken. */
  at: number;
  lag: number | null;
  time_lag_ms: number | null;
  headroom_ms: number | null;
  headroom_bytes: number | null;
  committed_offset: number | null;
}

/** A topic's traffic in one minute, summed over the brokers that served it. */
export interface TopicTrafficTable {
  topic: string;
  /** The minute's start. */
  minute: number;
  produced_records: number;
  produced_bytes: number;
  fetched_records: number;
  fetched_bytes: number;
}

export interface CatalogSchema {
  topics: TopicsTable;
  groups: GroupsTable;
  subscriptions: SubscriptionsTable;
  paused_partitions: PausedPartitionsTable;
  group_alerts: GroupAlertsTable;
  offset_resets: OffsetResetsTable;
  offset_checkpoints: OffsetCheckpointsTable;
  producer_ids: ProducerIdsTable;
  dead_letter_actions: DeadLetterActionsTable;
  alert_sinks: AlertSinksTable;
  topic_deletions: TopicDeletionsTable;
  users: UsersTable;
  audit_log: AuditLogTable;
  acls: AclsTable;
  log_owner: LogOwnerTable;
  health_series: HealthSeriesTable;
  health_samples: HealthSamplesTable;
  topic_traffic: TopicTrafficTable;
}

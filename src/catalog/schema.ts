/** Table shapes of the catalog, as the query layer (Kysely) sees them. Times are ms since the epoch. */
import type { CompressionType, FlushPolicy } from '../protocol/topic-config.js';
import type { CleanupPolicy, DeliveryMode, StartPolicy } from '../protocol/types.js';

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
}

export interface SubscriptionsTable {
  group_id: string;
  topic: string;
  delivery_mode: DeliveryMode;
  start_policy: StartPolicy;
  created_at: number;
}

export interface CatalogSchema {
  topics: TopicsTable;
  groups: GroupsTable;
  subscriptions: SubscriptionsTable;
}

/**
 * Topics as the API offers them (docs/http-api.md): creation, settings, descriptions, and the operations that move a
 * log start offset (delete-records, retention on demand) or compact on demand. Pure types: importing this loads nothing.
 */
import type { GroupPartition } from './groups.js';
import type { PartitionState } from './partitions.js';
import type { TopicConfig } from './topic-config.js';

export interface CreateTopicRequest {
  topic: string;
  /** 1 to 10,000 */
  partitions: number;
  /** Settings that differ from the defaults (`DEFAULT_TOPIC_CONFIG`). */
  config?: Partial<TopicConfig>;
}

export interface AlterTopicRequest {
  topic: string;
  /** Settings to change; the others keep their values. */
  config: Partial<TopicConfig>;
}

/**
 * The broker a partition's produces go to (Kafka's partition leader): in cluster mode the holder of its partition
 * lease, its sequencer (docs/cluster.md); on the embedded default the one broker.
 */
export interface PartitionLeader {
  /** Its `--broker-id`; null on the embedded default. */
  brokerId: number | null;
  /** The URL of its HTTP API, as it advertised it; null if it is not live in the registry (or, embedded, not served over HTTP). */
  url: string | null;
  /** The lease's epoch (the fencing token its commits carry, raised at every change of holder); null on the embedded default. */
  epoch: number | null;
}

export interface TopicDescription {
  topic: string;
  /**
   * Each partition, with the bytes of its log on disk; with `describeTopic(topic, { leaders: true })` (always over HTTP)
   * its `leader`: null in cluster mode while nobody holds its lease (the next broker to produce to it takes it).
   */
  partitions: Array<PartitionState & { sizeBytes: number; leader?: PartitionLeader | null }>;
  config: TopicConfig;
  /** ms since the epoch */
  createdAt: number;
  /** With `describeTopic(topic, { groups: true })`: every group subscribed to the topic, by group id. */
  groups?: Array<{ groupId: string; partitions: GroupPartition[] }>;
}

export interface DescribeTopicOptions {
  /** Add each subscribed group's partitions (`onelog topics describe T --groups`). @default false */
  groups?: boolean;
  /**
   * Add each partition's leader (`onelog topics describe`; `GET /topics/:topic` always does): in cluster mode a read of
   * the topic's partition leases and of the broker registry in PostgreSQL, so the Kafka listener's own describes leave
   * it out. @default false
   */
  leaders?: boolean;
}

export interface TopicSummary {
  topic: string;
  partitions: number;
}

export interface DeleteRecordsRequest {
  topic: string;
  partition: number;
  /**
   * Records below this offset become unreadable: from the log start offset to the high watermark, or -1 for the high
   * watermark (every record), as Kafka's DeleteRecords; any other value is refused with `OFFSET_OUT_OF_RANGE`.
   */
  beforeOffset: number;
}

export interface DeleteRecordsResult {
  topic: string;
  partition: number;
  previousLogStartOffset: number;
  logStartOffset: number;
}

/** What deleting a topic deleted. */
export interface DeleteTopicResult {
  topic: string;
  /** Partitions deleted. */
  partitions: number;
  /** Groups whose subscription to the topic (and committed offsets of it) were deleted, by id. */
  groups: string[];
}

/** What one retention pass did to each partition of a topic. */
export interface RetentionResult {
  topic: string;
  partitions: Array<{
    partition: number;
    previousLogStartOffset: number;
    logStartOffset: number;
    /** Why the log start offset moved (`retention-time`, `retention-size`), or null when nothing expired. */
    reason: string | null;
  }>;
}

/** Compacts a topic now, its active segments sealed first (`onelog topics compact TOPIC [--wait]`). */
export interface CompactTopicRequest {
  topic: string;
  /** Answer once every partition is compacted; false: only start it (answered with `completed: false`). @default true */
  wait?: boolean;
}

/**
 * What a compaction did to a partition (see src/log/segments/log-cleaner.ts). The records and bytes are those of
 * the segments it cleaned (closed, past `min.compaction.lag.ms`), before and after it, whether it rewrote them
 * or found nothing to remove.
 */
export interface CompactionStats {
  /** Segments rewritten (a segment in which nothing was removed is left as it is). */
  segments: number;
  recordsBefore: number;
  recordsAfter: number;
  /** Tombstones removed because their delete horizon passed. */
  tombstonesRemoved: number;
  bytesBefore: number;
  bytesAfter: number;
  /**
   * Key-map passes the compaction took: 1 when the log's keys fit in the cleaner's dedupe buffer
   * (`serve --cleaner-dedupe-buffer-bytes`), more when they did not; 0 when no segment was old enough.
   */
  passes: number;
}

/** What a compaction pass did to each partition of a topic. */
export interface CompactionResult {
  topic: string;
  /** False when the pass was only started (not waited for). */
  completed: boolean;
  partitions: Array<{ partition: number } & CompactionStats>;
}

/**
 * The operations onelog offers, as one interface: the embedded {@link Broker} implements it in-process and
 * the HTTP client implements it over the network, so producers, consumers and admin code run on either.
 * Pure types: importing this loads nothing.
 */
import type { TopicConfig } from './topic-config.js';
import type { DeliveryMode, RecordInput, StartPolicy, StoredRecord } from './types.js';

export type { TopicConfig } from './topic-config.js';

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

/** Where a partition's log begins and ends. */
export interface PartitionState {
  partition: number;
  logStartOffset: number;
  highWatermark: number;
}

export interface TopicDescription {
  topic: string;
  partitions: PartitionState[];
  config: TopicConfig;
  /** ms since the epoch */
  createdAt: number;
}

export interface TopicSummary {
  topic: string;
  partitions: number;
}

export interface DeleteRecordsRequest {
  topic: string;
  partition: number;
  /** Records below this offset become unreadable; must be <= the high watermark. */
  beforeOffset: number;
}

export interface DeleteRecordsResult {
  topic: string;
  partition: number;
  previousLogStartOffset: number;
  logStartOffset: number;
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

/** What one compaction pass did to one partition. */
export interface CompactionStats {
  /** Segments rewritten. */
  segments: number;
  recordsBefore: number;
  recordsAfter: number;
  /** Tombstones removed because their delete horizon passed. */
  tombstonesRemoved: number;
  bytesBefore: number;
  bytesAfter: number;
}

/** What a compaction pass did to each partition of a topic. */
export interface CompactionResult {
  topic: string;
  /** False when the pass was only started (not waited for). */
  completed: boolean;
  partitions: Array<{ partition: number } & CompactionStats>;
}

/** A record to produce; without `partition` the broker picks one (murmur2 of the key, or spread if null). */
export interface ProduceRecord extends RecordInput {
  partition?: number;
}

export interface ProduceRequest {
  topic: string;
  records: ProduceRecord[];
}

/** Where each record of a produce request landed, in request order. */
export interface ProduceResult {
  topic: string;
  offsets: Array<{ partition: number; offset: number }>;
}

export interface FetchRequest {
  topic: string;
  /** The group fetching, if any: named in errors (e.g. its committed offset when out of range). */
  groupId?: string;
  /** Partitions to read and the offset to read each from. */
  partitions: Array<{ partition: number; offset: number }>;
  /** Most records in the answer, over all partitions. @default 500 (Kafka's max.poll.records) */
  maxRecords?: number;
  /** Byte budget over all partitions (a partition's first batch is always returned). @default 1 MiB */
  maxBytes?: number;
  /** How long to wait for new records when none are ready, ms. @default 0; at most 30,000 */
  maxWaitMs?: number;
}

/** A per-partition error, returned as a value so the other partitions of a fetch still flow. */
export interface PartitionError {
  code: string;
  message: string;
  [context: string]: unknown;
}

export interface FetchedPartition extends PartitionState {
  records: StoredRecord[];
  /**
   * Where the next fetch of this partition starts: after the last record, or further when compaction left
   * offsets empty after it. Equal to the requested offset when nothing was read.
   */
  nextOffset: number;
  error?: PartitionError;
}

export interface FetchResult {
  topic: string;
  partitions: FetchedPartition[];
}

export interface SubscribeRequest {
  groupId: string;
  topic: string;
  /** Where a partition with no committed offset starts; stored on the subscription. @default the stored one, else 'latest' */
  startPolicy?: StartPolicy;
  /** @default the stored one, else 'pull' */
  deliveryMode?: DeliveryMode;
}

export interface SubscriptionInfo {
  groupId: string;
  topic: string;
  deliveryMode: DeliveryMode;
  startPolicy: StartPolicy;
}

/** The subscription and the offset each partition resumes from. */
export interface SubscribeResult {
  subscription: SubscriptionInfo;
  positions: Array<{ partition: number; offset: number }>;
}

export interface CommitRequest {
  groupId: string;
  topic: string;
  /** Each `offset` is the NEXT offset to read (last processed + 1), between 0 and the high watermark. */
  offsets: Array<{ partition: number; offset: number; metadata?: string }>;
}

export interface GroupSummary {
  groupId: string;
  topics: string[];
  /** ms since the epoch */
  createdAt: number;
}

export interface GroupPartition extends PartitionState {
  /** The next offset the group reads, or null if it never committed this partition. */
  committedOffset: number | null;
  /** highWatermark − committedOffset, in offsets (after compaction, offsets may have gaps); null without a commit. */
  lag: number | null;
  /** ms since the epoch, or null */
  commitTimestamp: number | null;
}

export interface GroupDescription {
  groupId: string;
  /** ms since the epoch */
  createdAt: number;
  subscriptions: Array<SubscriptionInfo & { partitions: GroupPartition[] }>;
}

/** Where an offset reset moves a group (Kafka's kafka-consumer-groups --reset-offsets). */
export type ResetSpec =
  | { to: 'earliest' }
  | { to: 'latest' }
  | { to: 'offset'; offset: number }
  /** first record with timestamp >= `timestamp` (ms since the epoch); the high watermark if none */
  | { to: 'datetime'; timestamp: number }
  | { to: 'shift'; shiftBy: number };

export interface ResetOffsetsRequest {
  groupId: string;
  topic: string;
  /** One partition; default: every partition of the topic. */
  partition?: number;
  spec: ResetSpec;
  /** Apply the plan; without it the call is a dry run. @default false */
  execute?: boolean;
}

export interface ResetOffsetsResult {
  groupId: string;
  topic: string;
  executed: boolean;
  partitions: Array<{
    partition: number;
    currentOffset: number | null;
    newOffset: number;
    /** Set when the target was outside [logStartOffset, highWatermark] and was clamped to it. */
    clamped?: 'logStartOffset' | 'highWatermark';
  }>;
}

/** Everything a client can ask of onelog. */
export interface OnelogApi {
  createTopic(request: CreateTopicRequest): Promise<TopicDescription>;
  listTopics(): Promise<TopicSummary[]>;
  describeTopic(topic: string): Promise<TopicDescription>;
  alterTopic(request: AlterTopicRequest): Promise<TopicDescription>;
  deleteRecords(request: DeleteRecordsRequest): Promise<DeleteRecordsResult>;
  enforceRetention(topic: string): Promise<RetentionResult>;
  /** Compacts a topic now (its active segments sealed first); with `wait: false` only starts it. */
  compactTopic(request: { topic: string; wait?: boolean }): Promise<CompactionResult>;
  produce(request: ProduceRequest): Promise<ProduceResult>;
  fetch(request: FetchRequest): Promise<FetchResult>;
  subscribe(request: SubscribeRequest): Promise<SubscribeResult>;
  commitOffsets(request: CommitRequest): Promise<void>;
  listGroups(): Promise<GroupSummary[]>;
  describeGroup(groupId: string): Promise<GroupDescription>;
  resetOffsets(request: ResetOffsetsRequest): Promise<ResetOffsetsResult>;
}

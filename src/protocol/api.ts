/**
 * The operations onelog offers, as one interface: the embedded {@link Broker} implements it in-process and
 * the HTTP client implements it over the network, so producers, consumers and admin code run on either.
 * Pure types: importing this loads nothing.
 */
import type { AcknowledgeAlertRequest, AlertListRequest, AlertSink, GroupAlert, GroupHistory, GroupLagTotals, PartitionHealth } from './monitoring-api.js';
import type { RecordSection } from './record-batch.js';
import type { RetryPolicy } from './retry-policy.js';
import type { TopicConfig } from './topic-config.js';
import type { CommitMode, DeliveryMode, GroupType, OutOfRangePolicy, RecordInput, ShareOrdering, StartPolicy, StoredRecord } from './types.js';

export type { TopicConfig } from './topic-config.js';
export type { RetryPolicy } from './retry-policy.js';
export type * from './monitoring-api.js';

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
  /** Each partition, with the bytes of its log on disk. */
  partitions: Array<PartitionState & { sizeBytes: number }>;
  config: TopicConfig;
  /** ms since the epoch */
  createdAt: number;
  /** With `describeTopic(topic, { groups: true })`: every group subscribed to the topic, by group id. */
  groups?: Array<{ groupId: string; partitions: GroupPartition[] }>;
}

export interface DescribeTopicOptions {
  /** Add each subscribed group's partitions (`onelog topics describe T --groups`). @default false */
  groups?: boolean;
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

/** An audited operation and who did it (docs/security.md). `at`: ms since the epoch. */
export interface AuditEntry {
  id: number;
  at: number;
  /** The authenticated user, or `anonymous` (no user existed: protected mode's loopback client, or an `--insecure` broker). */
  principal: string;
  action: string;
  /** What it was done to: `group:G`, `topic:T`, `user:U`, `cluster`. */
  target: string;
  /**
   * `done`: the operation succeeded. `refused`: the principal was not allowed (FORBIDDEN); `details` then holds the
   * `request` refused (a route, frame or Kafka broker method of the permission table), the ACL `operation` it needed
   * (`admin` for an admin's), the `code` and the `reason`, and `suppressed`: refusals of the principal left out before it.
   */
  outcome: 'done' | 'refused';
  details: Record<string, unknown>;
}

/** A user just created or given a new token: the token is shown this once. */
export interface CreatedUser {
  user: string;
  admin: boolean;
  /** `onelog_<id>_<secret>`: send as `Authorization: Bearer TOKEN`. */
  token: string;
}

/** A user as listed (never its token). Times are ms since the epoch. */
export interface UserSummary {
  user: string;
  admin: boolean;
  createdAt: number;
  rotatedAt: number | null;
}

/** What an ACL names: a topic, a consumer group, or the cluster (as Kafka's resource types). */
export type AclResourceType = 'topic' | 'group' | 'cluster';
/** The operations an ACL allows or denies (Kafka's, plus `reset` for groups; `all` matches every one). */
export const ACL_OPERATIONS = ['read', 'write', 'create', 'delete', 'alter', 'describe', 'reset', 'all'] as const;
export type AclOperation = (typeof ACL_OPERATIONS)[number];

/**
 * One ACL (docs/security.md): `principal` (a user name, or `*` for every user) may (`allow`) or may not (`deny`)
 * do `operation` on the resources of `resourceType` named `resourceName` (`literal`; `*` names every one) or
 * starting with it (`prefix`). A cluster ACL names no resource (`resourceName` is `""`). Deny wins over allow; with no ACL that
 * allows it, an operation is refused (admins are never refused, as Kafka's super.users).
 */
export interface AclBinding {
  principal: string;
  resourceType: AclResourceType;
  resourceName: string;
  patternType: 'literal' | 'prefix';
  operation: AclOperation;
  permission: 'allow' | 'deny';
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

/**
 * What a compaction did to a partition (see src/storage/log-cleaner.ts). The records and bytes are those of
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

/** A record to produce; without `partition` the broker picks one (murmur2 of the key, or spread if null). */
export interface ProduceRecord extends RecordInput {
  partition?: number;
}

export interface ProduceRequest {
  topic: string;
  records: ProduceRecord[];
  /**
   * Makes the produce idempotent (Kafka's enable.idempotence): every record must name its `partition`;
   * a partition's records get consecutive sequences from `baseSequences[partition]`. A retry of the same
   * request is acknowledged with the original offsets and stored once; a sequence gap is refused with
   * `OUT_OF_ORDER_SEQUENCE`.
   */
  idempotence?: ProducerIdempotence;
}

/** A producer's identity and where its sequences stand, per partition. */
export interface ProducerIdempotence {
  /** From {@link OnelogApi.initProducerId}. */
  producerId: number;
  producerEpoch: number;
  /** partition -> sequence of the request's first record in that partition (int32, wraps to 0) */
  baseSequences: Record<number, number>;
}

/** A producer id and epoch issued by the broker. */
export interface ProducerIdentity {
  producerId: number;
  producerEpoch: number;
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
  /**
   * The group member fetching, with its generation: then every partition must be assigned to it
   * (`UNKNOWN_MEMBER_ID`, `ILLEGAL_GENERATION`, `NOT_ASSIGNED` otherwise), and an offset below the log start
   * pauses the partition for the group (or jumps, if the subscription's `onOutOfRange` says so).
   */
  memberId?: string;
  generationId?: number;
  /** Partitions to read and the offset to read each from. */
  partitions: Array<{ partition: number; offset: number }>;
  /** Most records in the answer, over all partitions. @default 500 (Kafka's max.poll.records) */
  maxRecords?: number;
  /** Byte budget over all partitions (a partition's first batch is always returned). @default 1 MiB */
  maxBytes?: number;
  /** How long to wait for new records when none are ready, ms. @default 0; at most 30,000 */
  maxWaitMs?: number;
  /**
   * A group member's fetch sent ahead, while the batch before it is handled: an offset outside the log is answered
   * as the partition's `OFFSET_OUT_OF_RANGE` error without applying the subscription's `onOutOfRange` (no pause, no
   * jump and its commit), which the member's next fetch applies once the batch's commit went out. @default false
   */
  ahead?: boolean;
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
  /** For a member's fetch: the group's current generation; above the member's, it should heartbeat now. */
  generationId?: number;
  /** For a member's fetch: true when a heartbeat now would change its assignment (a grant or revocation waits). */
  assignmentChanged?: boolean;
}

export interface SubscribeRequest {
  groupId: string;
  topic: string;
  /** Where a partition with no committed offset starts; stored on the subscription. @default the stored one, else 'latest' */
  startPolicy?: StartPolicy;
  /** @default the stored one, else 'pull' */
  deliveryMode?: DeliveryMode;
  /** What to do when the committed offset falls below the log start. @default the stored one, else 'pause' */
  onOutOfRange?: OutOfRangePolicy;
  /**
   * For push: the http(s) URL the broker POSTs batches to (as a Pub/Sub push subscription); null: records
   * are pushed to the group's WebSocket members. @default the stored one, else null
   */
  pushEndpoint?: string | null;
  /** For a webhook: most requests in flight per partition (order is kept). @default the stored one, else 1; 1 to 100 */
  maxInFlight?: number;
  /**
   * The retry policy (docs/retries.md): records a member nacks (or whose handler throws) move to delay tiers,
   * then to the dead-letter topic; null removes it (nacks are then refused; tier records still pending are
   * delivered). Setting it creates the tier topics and the dead-letter topic. @default the stored one, else none
   */
  retry?: RetryPolicyInput | null;
  /**
   * Without a retry policy: deliveries of a record before it goes to the dead-letter topic `<topic>.<group>.dlq`
   * (created), counting deliveries that ended with their consumer dying (docs/retries.md: a member that ended
   * holding it); null removes the bound. With a retry policy, its `maxAttempts` is the bound and this is refused.
   * @default the stored one, else none; 1 to 100
   */
  maxDeliveries?: number | null;
  /**
   * `share`: a share group (docs/consumer-groups.md): members read the same partitions side by side, each record
   * acquired by one member under a lock, delivered at most `maxDeliveries` times (default 5) before its dead letters.
   * A group's type is set when it is created and never changes. @default the stored one, else 'consumer'
   */
  type?: GroupType;
  /** A share group: how long a member holds an acquired record, ms, 1,000 to 3,600,000. @default the stored one, else 30000 */
  lockMs?: number;
  /** A share group: `key` hands out each key's records one at a time, in order. @default the stored one, else 'none' */
  ordering?: ShareOrdering;
  /** A share group: most records of a partition in flight, 1 to 100,000. @default the stored one, else 2000 */
  maxInFlightRecords?: number;
  /** Dead letters waiting (neither redriven nor purged) that raise a `dead-letter-depth` alert. @default the stored one, else 1; >= 1 */
  deadLetterAlertDepth?: number;
  /**
   * For a webhook with a retry policy: POSTs of a batch (its own backoff) before its records are nacked.
   * @default the stored one, else 5; 1 to 100
   */
  webhookMaxAttempts?: number;
  /** `at-risk` below this fraction of retention left (0 < ratio < 1). @default the stored one, else 0.25 */
  headroomWarnRatio?: number;
  /** `stalled` after unread records wait this long with no commit, ms (1,000 to 30 days). @default the stored one, else 300000 */
  stallMs?: number;
}

/**
 * The fields of a {@link SubscribeRequest} that set one of the subscription's stored settings (every field but its
 * group and topic). A request naming any of them, `null` included, writes it, so it needs `alter` on the group
 * (docs/security.md); the coordinator reads a request's settings through this list alone.
 */
export const SUBSCRIPTION_SETTINGS = [
  'startPolicy', 'deliveryMode', 'onOutOfRange', 'pushEndpoint', 'maxInFlight', 'retry', 'maxDeliveries', 'type', 'lockMs', 'ordering', 'maxInFlightRecords',
  'deadLetterAlertDepth', 'webhookMaxAttempts',
  'headroomWarnRatio', 'stallMs',
] as const satisfies ReadonlyArray<keyof SubscribeRequest>;

/** A stored subscription setting a request may set. */
export type SubscriptionSetting = (typeof SUBSCRIPTION_SETTINGS)[number];

/** The fields of a {@link JoinGroupRequest} (and a push stream's subscribe frame) that set a stored subscription setting. */
export const JOIN_SETTINGS = ['startPolicy', 'onOutOfRange'] as const satisfies ReadonlyArray<keyof JoinGroupRequest & SubscriptionSetting>;

/** A retry policy as a request sets it. */
export interface RetryPolicyInput {
  /** Delay before each retry tier, ms (1 to 10 tiers, each 1 ms to 7 days). */
  delaysMs: number[];
  /** Deliveries before dead-lettering, the first included; 1 to 100. @default delaysMs.length + 1 */
  maxAttempts?: number;
  /** An existing topic of one partition, or a name to create. @default `<topic>.<group>.dlq` */
  deadLetterTopic?: string;
}

export interface SubscriptionInfo {
  groupId: string;
  topic: string;
  deliveryMode: DeliveryMode;
  startPolicy: StartPolicy;
  onOutOfRange: OutOfRangePolicy;
  pushEndpoint: string | null;
  maxInFlight: number;
  /** null: no retry policy (a nack is refused, a throwing handler stops its partition). */
  retry: RetryPolicy | null;
  /** Without a retry policy: deliveries before a record is dead-lettered (crash-counted), else null. */
  maxDeliveries: number | null;
  /** Where dead letters go: the policy's, or `maxDeliveries`'s; kept after either is removed. */
  deadLetterTopic: string | null;
  type: GroupType;
  /** A share group's settings, null for a consumer group. */
  share: { lockMs: number; ordering: ShareOrdering; maxInFlightRecords: number } | null;
  deadLetterAlertDepth: number;
  webhookMaxAttempts: number;
  headroomWarnRatio: number;
  stallMs: number;
}

/** The subscription and the offset each partition resumes from. */
export interface SubscribeResult {
  subscription: SubscriptionInfo;
  /** Per partition: where to read from, or (paused for the group, e.g. `OFFSET_OUT_OF_RANGE`) the error instead. */
  positions: Array<{ partition: number; offset?: number; error?: PartitionError }>;
}

export interface CommitRequest {
  groupId: string;
  topic: string;
  /**
   * The committing member and its generation. Without them the commit is accepted only while the group has
   * no live member (a standalone consumer, as Kafka's); with them, every partition must be the member's.
   */
  memberId?: string;
  generationId?: number;
  /** Each `offset` is the NEXT offset to read (last processed + 1), between 0 and the high watermark. */
  offsets: Array<{ partition: number; offset: number; metadata?: string }>;
}

/** Consumer group states, as Kafka's KIP-848 protocol (docs/consumer-groups.md: how each answers requests). */
export type GroupState = 'Empty' | 'Reconciling' | 'Stable' | 'Dead';

/** A topic partition. */
export interface TopicPartition {
  topic: string;
  partition: number;
}

/** Partition assignors the coordinator offers (as Kafka's range, round-robin and sticky/uniform). */
export type AssignorName = 'range' | 'round-robin' | 'sticky';

export interface JoinGroupRequest {
  groupId: string;
  /** Topics the member consumes; each gets (or keeps) a subscription of the group. */
  topics: string[];
  /** A member that sends no heartbeat for this long is removed, ms. @default 45000 (Kafka's session.timeout.ms); 1000 to 3600000 */
  sessionTimeoutMs?: number;
  /**
   * How long the member may take to release partitions revoked from it before it is removed, ms (Kafka's rebalance
   * timeout, the consumer's max.poll.interval.ms: a member whose application is busy keeps heartbeating meanwhile).
   * @default its session timeout; 1000 to 3600000
   */
  rebalanceTimeoutMs?: number;
  /** Every live member must use the same one. @default 'sticky' */
  assignor?: AssignorName;
  /** Shown in `groups describe`. @default 'after-processing' */
  commitMode?: CommitMode;
  /** Free text naming the client, shown in `groups describe` and used as the member id's prefix. @default 'consumer' */
  clientId?: string;
  /** Start policy for subscriptions this join creates or changes. @default the stored one, else 'latest' */
  startPolicy?: StartPolicy;
  /** Out-of-range policy for subscriptions this join creates or changes. @default the stored one, else 'pause' */
  onOutOfRange?: OutOfRangePolicy;
  /**
   * Commit the start position of a partition never committed when it is first granted (so records deleted before
   * the group reads them pause it). false for Kafka members: nothing is committed, and the client's
   * auto.offset.reset decides where it starts, as in Kafka. @default true
   */
  commitStartPositions?: boolean;
}

/** A partition of a member's assignment. */
export interface AssignedPartition extends TopicPartition {
  /** Present when the partition is new to the member in this answer: where it starts reading. */
  offset?: number;
  /**
   * Present, instead of `offset`, when the partition is new to the member in this answer and paused for the
   * group (e.g. `OFFSET_OUT_OF_RANGE`): do not fetch it. Later answers list it without repeating the error;
   * an executed reset revokes it and grants it again with an offset.
   */
  error?: PartitionError;
}

/** What the coordinator tells a member after a join or heartbeat. */
export interface MemberAssignment {
  groupId: string;
  memberId: string;
  /** The generation the member now belongs to: send it with every fetch, commit and heartbeat. */
  generationId: number;
  /**
   * The partitions the member may consume now. A partition it held before and that is missing here is
   * revoked: stop it, commit what was processed, then heartbeat without it.
   */
  assignment: AssignedPartition[];
  /** Heartbeat at least this often, ms: a third of the session timeout, at most 3000 (Kafka's heartbeat.interval.ms). */
  heartbeatIntervalMs: number;
  state: GroupState;
}

export interface HeartbeatRequest {
  groupId: string;
  memberId: string;
  generationId: number;
  /** Every partition the member still holds (revoked partitions it finished with are left out). */
  owned: TopicPartition[];
}

export interface LeaveGroupRequest {
  groupId: string;
  memberId: string;
  /**
   * The member ends as a crashed one does (the broker's push stream whose client vanished): the deliveries of records
   * it held uncommitted are counted as if its session had timed out (docs/retries.md), but its partitions move at once.
   * @default false
   */
  abandoned?: boolean;
}

/** A live member as `groups describe` shows it. */
export interface MemberDescription {
  memberId: string;
  clientId: string;
  commitMode: CommitMode;
  generationId: number;
  sessionTimeoutMs: number;
  /** ms since the epoch */
  lastHeartbeatAt: number;
  /** Partitions it holds now (being revoked included). */
  assignment: TopicPartition[];
}

/** One executed offset reset. */
export interface OffsetResetRecord {
  topic: string;
  partition: number;
  oldOffset: number | null;
  newOffset: number;
  /** The reset spec, as text (e.g. `to-earliest`, `to-checkpoint before-deploy`). */
  spec: string;
  /** Who asked (free text the caller gave, e.g. `alice@host`). */
  requestedBy: string;
  /** ms since the epoch */
  executedAt: number;
}

export interface CheckpointRequest {
  groupId: string;
  /** 1 to 200 characters. */
  name: string;
}

export interface CheckpointDescription {
  groupId: string;
  name: string;
  /** ms since the epoch */
  createdAt: number;
  offsets: Array<TopicPartition & { offset: number }>;
}

export interface GroupSummary {
  groupId: string;
  /** `share` for a share group (docs/consumer-groups.md), else `consumer` (a group with no subscription yet too). */
  type: GroupType;
  state: GroupState;
  members: number;
  topics: string[];
  /** ms since the epoch */
  createdAt: number;
}

/** A group's position in a partition and its health (docs/monitoring.md). */
export interface GroupPartition extends PartitionState, PartitionHealth {
  /** The next offset the group reads, or null if it never committed this partition. */
  committedOffset: number | null;
  /** ms since the epoch, or null */
  commitTimestamp: number | null;
  /** The member holding the partition, or null. */
  memberId: string | null;
  /** Set while the partition is paused for the group: why, and what to do. */
  paused: PartitionError | null;
  /**
   * A share group's records in flight in the partition: held by members (`acquired`) and waiting to be (`available`,
   * released or not yet handed out); the committed offset is its start offset, the time lag the oldest one's age.
   */
  share?: { acquired: number; available: number };
}

/** A group: its members, its subscriptions with their partitions, its lag totals over them, its history. */
export interface GroupDescription extends GroupLagTotals {
  groupId: string;
  /** ms since the epoch */
  createdAt: number;
  state: GroupState;
  generationId: number;
  assignor: AssignorName | null;
  members: MemberDescription[];
  /** A share group's members, each with when it was last heard from (ms since the epoch); absent for a consumer group. */
  shareMembers?: Array<{ memberId: string; lastSeenAt: number }>;
  subscriptions: Array<SubscriptionInfo & {
    partitions: GroupPartition[];
    /** The subscription's retry tier topics (delivered to its members with the topic), with records not yet committed. */
    retryTiers: Array<{ topic: string; delayMs: number; backlog: number }>;
    /** Its dead-letter topic and the dead letters neither redriven nor purged; null without a retry policy. */
    deadLetter: { topic: string; depth: number } | null;
  }>;
  /** Most recent first, at most 20 (`onelog alerts list --group G` shows all). */
  alerts: GroupAlert[];
  /** Executed offset resets, most recent first, at most 20. */
  resets: OffsetResetRecord[];
  /** Executed dead-letter redrives and purges, most recent first, at most 20: offsets `[firstOffset, endOffset)` of the topic's dead letters. */
  deadLetterActions: Array<{
    topic: string; action: 'redrive' | 'purge'; firstOffset: number; endOffset: number; records: number; requestedBy: string;
    /** ms since the epoch */
    executedAt: number;
  }>;
  checkpoints: Array<{ name: string; createdAt: number; topics: string[] }>;
}

/** Where an offset reset moves a group (Kafka's kafka-consumer-groups --reset-offsets). */
export type ResetSpec =
  | { to: 'earliest' }
  | { to: 'latest' }
  | { to: 'offset'; offset: number }
  /** first record with timestamp >= `timestamp` (ms since the epoch); the high watermark if none */
  | { to: 'datetime'; timestamp: number }
  | { to: 'shift'; shiftBy: number }
  /** the offset a named checkpoint saved for the partition (partitions it lacks keep their offset) */
  | { to: 'checkpoint'; name: string };

export interface ResetOffsetsRequest {
  groupId: string;
  topic: string;
  /** One partition; default: every partition of the topic. */
  partition?: number;
  spec: ResetSpec;
  /**
   * Apply the plan; without it the call is a dry run. With live members the coordinator first revokes the
   * partitions (their owners commit and let go), applies the reset, then assigns them again: the call
   * resolves once applied. @default false
   */
  execute?: boolean;
  /** Who asks, recorded with the executed reset. @default 'unknown' */
  requestedBy?: string;
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

/** A produce of encoded RecordBatch v2 batches (the binary data path), refused or stored whole. */
export interface ProduceBatchesRequest {
  topic: string;
  /** Whole batches as a client encoded them (base offset 0; the broker restamps it), each for its partition, in order. */
  batches: Array<{ partition: number; batch: Buffer }>;
}

/** Where each produced batch landed, in request order; `duplicate` when it was an idempotent retry already stored. */
export interface ProduceBatchesResult {
  batches: Array<{ partition: number; baseOffset: number; lastOffset: number; duplicate?: boolean }>;
}

/** A binary fetch's answer: each partition's stored batches, undecoded. */
export interface BatchFetchResult extends Omit<FetchResult, 'partitions'> {
  partitions: Array<Omit<FetchedPartition, 'records'> & { batches: Buffer }>;
}

/** The binary data path, offered by the embedded broker (and served by `onelog serve` on `GET /data`). */
export interface BinaryDataApi {
  produceBatches(request: ProduceBatchesRequest): Promise<ProduceBatchesResult>;
  fetchBatches(request: FetchRequest): Promise<BatchFetchResult>;
  /** A group member's commit, carried on the data socket beside its fetches. */
  commitOffsets(request: CommitRequest): Promise<void>;
  /** A share group member's acquisition (as {@link OnelogApi.shareFetch}, its records as stored) and acknowledgements, on the data socket. */
  shareFetchSections(request: ShareFetchRequest): Promise<SharedSections>;
  shareAcknowledge(request: ShareAckRequest): Promise<ShareAckResult>;
}

/** A share group member's acquisition (docs/consumer-groups.md): records of the topic's partitions, each locked for it. */
export interface ShareFetchRequest {
  groupId: string;
  topic: string;
  /** The member's own id (any text it keeps, 1 to 255 characters): it acknowledges with it. */
  memberId: string;
  /** Most records, over every partition. @default 500; 1 to 10,000 */
  maxRecords?: number;
  /**
   * Byte budget of the records' keys, values and headers, over every partition: what would pass it stays available,
   * uncounted (a first record larger than the budget is still handed out, alone, as Kafka's fetch does).
   * @default 16777216 (16 MiB); 1 to 67108864
   */
  maxBytes?: number;
  /** How long to wait while none can be acquired, ms. @default 0; at most 30,000 */
  maxWaitMs?: number;
  /** The member ends when not heard from for this long, ms (its records are then released). @default the last one given, else 45000; 1,000 to 3,600,000 */
  sessionTimeoutMs?: number;
  /**
   * Acquire from these partitions only (a Kafka member's share session names the partitions it fetches), each once,
   * from 0 to the topic's partition count - 1. @default every partition of the topic
   */
  partitions?: number[];
}

/** A record acquired by a share group's member. */
export interface SharedRecord extends StoredRecord {
  partition: number;
  /** Its deliveries, this one included (Kafka's delivery count). */
  deliveryCount: number;
}

export interface ShareFetchResult {
  groupId: string;
  topic: string;
  memberId: string;
  /** How long the member holds each record before it is released, ms; renew to hold it longer. */
  lockMs: number;
  records: SharedRecord[];
}

/**
 * A share acquisition as the log stores its records (the binary data path's form of a {@link ShareFetchResult}): per
 * partition, the records acquired in offset order, as sections of stored bytes, and their delivery counts in the same order.
 */
export interface SharedSections extends Omit<ShareFetchResult, 'records'> {
  partitions: Array<{ partition: number; sections: RecordSection[]; deliveryCounts: number[] }>;
}

/** A member's outcomes of records it holds: accept (done), release (deliver again, after `delayMs`), reject (dead letters), renew (hold longer). */
export interface ShareAckRequest {
  groupId: string;
  topic: string;
  memberId: string;
  /**
   * 1 to 10,000, each offset once (none with `leave`). `reason`: a reject's, kept in its dead letter; a release's, kept
   * in the dead letter if that was its last delivery allowed.
   */
  acks: Array<{ partition: number; offset: number; type: 'accept' | 'release' | 'reject' | 'renew'; delayMs?: number; reason?: string }>;
  /**
   * The member leaves the group once these outcomes are applied (a consumer that stops, as Kafka's ShareGroupHeartbeat
   * with member epoch -1): what it still holds, in any topic, is released at once (its deliveries counted), and it is no
   * longer listed. @default false
   */
  leave?: boolean;
}

/** Per partition of the acknowledgements: applied, or refused whole with its error (`INVALID_RECORD_STATE`). */
export interface ShareAckResult {
  groupId: string;
  topic: string;
  partitions: Array<{ partition: number; error?: PartitionError }>;
}

/**
 * "I could not process this record" (docs/retries.md): the broker appends it, durably, to the next retry tier
 * of the subscription (or, after `maxAttempts`, to its dead-letter topic); then it counts as processed and the
 * member commits past it as usual. Fenced as a commit is.
 */
export interface NackRequest {
  groupId: string;
  /** The topic the record was delivered from: the subscribed topic or one of its retry tiers. */
  topic: string;
  partition: number;
  offset: number;
  /** Why, kept in the moved record's `onelog.failure.reason` header (at most 4096 characters kept). */
  reason: string;
  /** As for a commit: without them the nack is accepted only while the group has no live member. */
  memberId?: string;
  generationId?: number;
  /**
   * Deliveries of the record this member made that all failed, this one included (a webhook dispatcher's POSTs of it
   * alone), 1 to 100: counted against the subscription's `maxAttempts` (or `maxDeliveries`) with its earlier attempts
   * and crash deliveries. @default 1
   */
  deliveries?: number;
}

/** Nacks of several records of one partition in one request (the consumer sends a batch's nacks so): moved in order, sharing fdatasyncs. */
export interface NackBatchRequest extends Omit<NackRequest, 'offset' | 'reason'> {
  /** 1 to 10,000 records. */
  records: Array<{ offset: number; reason: string }>;
}

/** Where a nacked record went. */
export interface NackResult {
  /** The tier topic (or dead-letter topic), partition and offset of the moved record. */
  topic: string;
  partition: number;
  offset: number;
  /** The attempt its next delivery will be (tier), or the attempts made (dead-letter topic). */
  attempt: number;
  deadLettered: boolean;
  /** The record had been moved already (a retried nack): nothing was appended again. */
  duplicate: boolean;
}

/** A record in a dead-letter topic, as `dlq list` shows it. */
export interface DeadLetter {
  /** Its offset in the dead-letter topic. */
  offset: number;
  original: { topic: string; partition: number; offset: number; timestamp: number };
  /** Deliveries made before it was dead-lettered. */
  attempts: number;
  /** The last failure's reason. */
  reason: string;
  /** ms since the epoch */
  firstFailureAt: number;
  lastFailureAt: number;
  /** UTF-8 text, or null. */
  key: string | null;
  /** The first 200 characters of the value as UTF-8 text, or null. */
  valuePreview: string | null;
}

export interface DeadLetterListRequest {
  groupId: string;
  topic: string;
  /** Most records listed, oldest first. @default 100; 1 to 10000 */
  limit?: number;
}

export interface DeadLetterList {
  groupId: string;
  topic: string;
  deadLetterTopic: string;
  /** Dead letters neither redriven nor purged. */
  depth: number;
  records: DeadLetter[];
}

/** Sends dead letters back to the group (only), as attempt 1, through its first retry tier, due at once. */
export interface RedriveRequest {
  groupId: string;
  topic: string;
  /** One dead letter, by its offset in the dead-letter topic; or `all`. */
  offset?: number;
  all?: boolean;
  /** Apply; without it the call is a dry run. @default false */
  execute?: boolean;
  /** Who asks, recorded with the redrive. @default 'unknown' */
  requestedBy?: string;
}

export interface RedriveResult {
  groupId: string;
  topic: string;
  executed: boolean;
  /** The dead letters redriven (or, dry run, that would be). */
  records: Array<Pick<DeadLetter, 'offset' | 'original' | 'attempts'>>;
  /** Depth after the redrive (dry run: now). */
  depth: number;
}

/** Discards dead letters below an offset of the dead-letter topic. */
export interface PurgeRequest {
  groupId: string;
  topic: string;
  beforeOffset: number;
  /** @default false (dry run) */
  execute?: boolean;
  /** @default 'unknown' */
  requestedBy?: string;
}

export interface PurgeResult {
  groupId: string;
  topic: string;
  executed: boolean;
  /** Dead letters discarded (dry run: that would be), not counting those already redriven. */
  records: number;
  depth: number;
}

/** Everything a client can ask of onelog. */
export interface OnelogApi {
  createTopic(request: CreateTopicRequest): Promise<TopicDescription>;
  listTopics(): Promise<TopicSummary[]>;
  /** A topic's settings and partitions; with `groups`, every group subscribed to it, partition by partition. */
  describeTopic(topic: string, options?: DescribeTopicOptions): Promise<TopicDescription>;
  alterTopic(request: AlterTopicRequest): Promise<TopicDescription>;
  deleteRecords(request: DeleteRecordsRequest): Promise<DeleteRecordsResult>;
  /**
   * Deletes a topic: its records, and every group's subscription to it and committed offsets of it.
   * @throws OnelogError `UNKNOWN_TOPIC`, `TOPIC_IN_USE` (a subscription's retry policy uses it)
   */
  deleteTopic(topic: string): Promise<DeleteTopicResult>;
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
  /** Becomes a member of a group; the answer carries the member id, generation and first assignment. */
  joinGroup(request: JoinGroupRequest): Promise<MemberAssignment>;
  /** Keeps the membership alive, reports what the member still holds, and answers its current assignment. */
  heartbeat(request: HeartbeatRequest): Promise<MemberAssignment>;
  /** Leaves at once (its partitions move now, not after the session timeout). */
  leaveGroup(request: LeaveGroupRequest): Promise<void>;
  /** Deletes a group with no live members: its committed offsets, subscriptions, pauses, checkpoints, history. */
  deleteGroup(groupId: string): Promise<void>;
  /** Saves the group's committed offsets under a name, for `resetOffsets({ spec: { to: 'checkpoint' } })`. */
  saveCheckpoint(request: CheckpointRequest): Promise<CheckpointDescription>;
  /** Issues a new idempotent producer identity. */
  initProducerId(): Promise<ProducerIdentity>;
  /** Moves a record the member could not process to the subscription's next retry tier or its dead-letter topic. */
  nack(request: NackRequest): Promise<NackResult>;
  /** A share group member's acquisition of records, each locked for it (docs/consumer-groups.md). */
  shareFetch(request: ShareFetchRequest): Promise<ShareFetchResult>;
  /** A share group member's outcomes of records it holds: accept, release, reject, renew. */
  shareAcknowledge(request: ShareAckRequest): Promise<ShareAckResult>;
  /** As {@link nack} for several records of one partition, in order; answers where each went, in request order. */
  nackBatch(request: NackBatchRequest): Promise<NackResult[]>;
  /** The depth and the oldest dead letters of a subscription. */
  listDeadLetters(request: DeadLetterListRequest): Promise<DeadLetterList>;
  /** Sends dead letters back to the group (dry run unless `execute`). */
  redriveDeadLetters(request: RedriveRequest): Promise<RedriveResult>;
  /** Discards dead letters below an offset (dry run unless `execute`). */
  purgeDeadLetters(request: PurgeRequest): Promise<PurgeResult>;
  /** Alerts of every group (or one), most recent first. */
  listAlerts(request?: AlertListRequest): Promise<GroupAlert[]>;
  /** Records who acknowledged an alert; it stays active until its condition clears. */
  acknowledgeAlert(request: AcknowledgeAlertRequest): Promise<GroupAlert>;
  /** Adds a webhook every raised and resolved alert is POSTed to (once per URL). */
  addAlertSink(url: string): Promise<AlertSink>;
  listAlertSinks(): Promise<AlertSink[]>;
  /** Removes a webhook sink by id. */
  removeAlertSink(id: number): Promise<void>;
  /** A group's recent health samples per partition (kept by the broker for the last hour at most). */
  groupHistory(groupId: string): Promise<GroupHistory>;
}

/**
 * The operations onelog offers, as one interface: the embedded {@link Broker} implements it in-process and
 * the HTTP client implements it over the network, so producers, consumers and admin code run on either.
 * Each noun's request and answer types have a file of their own beside this one (topics.ts, produce.ts, fetch.ts,
 * subscriptions.ts, groups.ts, offsets.ts, share-groups.ts, nacks.ts, dead-letters.ts, monitoring-api.ts,
 * security.ts). Pure types: importing this loads nothing.
 */
import type { DeadLetterList, DeadLetterListRequest, PurgeRequest, PurgeResult, RedriveRequest, RedriveResult } from './dead-letters.js';
import type { BatchFetchResult, FetchRequest, FetchResult } from './fetch.js';
import type { GroupDescription, GroupSummary, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, MemberAssignment } from './groups.js';
import type { AcknowledgeAlertRequest, AlertListRequest, AlertSink, GroupAlert, GroupHistory } from './monitoring-api.js';
import type { NackBatchRequest, NackRequest, NackResult } from './nacks.js';
import type { CheckpointDescription, CheckpointRequest, CommitRequest, ResetOffsetsRequest, ResetOffsetsResult } from './offsets.js';
import type { ProduceBatchesRequest, ProduceBatchesResult, ProduceRequest, ProduceResult, ProducerIdentity } from './produce.js';
import type { ShareAckRequest, ShareAckResult, SharedSections, ShareFetchRequest, ShareFetchResult } from './share-groups.js';
import type { SubscribeRequest, SubscribeResult } from './subscriptions.js';
import type {
  AlterTopicRequest, CompactionResult, CompactTopicRequest, CreateTopicRequest, DeleteRecordsRequest, DeleteRecordsResult, DeleteTopicResult,
  DescribeTopicOptions, RetentionResult, TopicDescription, TopicSummary,
} from './topics.js';

// Named here for src/catalog/catalog.ts, which imports these five from this module.
export type { OffsetResetRecord } from './offsets.js';
export type { PartitionError, TopicPartition } from './partitions.js';
export type { AclBinding, AuditEntry } from './security.js';

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
  compactTopic(request: CompactTopicRequest): Promise<CompactionResult>;
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

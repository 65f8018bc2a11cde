/**
 * The operations onelog offers, as one interface: the embedded {@link Broker} implements it in-process and
 * the HTTP client implements it over the network, so producers, consumers and admin code run on either.
 * Each noun's request and answer types have a file of their own beside this one (topics.ts, produce.ts, fetch.ts,
 * subscriptions.ts, groups.ts, offsets.ts, share-groups.ts, nacks.ts, dead-letters.ts, monitoring-api.ts,
 * overview.ts, cluster.ts, security.ts). Pure types: importing this loads nothing.
 */
import type { DeadLetterList, DeadLetterListRequest, PurgeRequest, PurgeResult, RedriveRequest, RedriveResult } from './dead-letters.js';
import type { ClusterDescription, ClusterDrainStart } from './cluster.js';
import type { BatchFetchResult, FetchRequest, FetchResult } from './fetch.js';
import type { GroupDescription, GroupSummary, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, MemberAssignment } from './groups.js';
import type {
  AcknowledgeAlertRequest, AlertListRequest, AlertSink, GroupAlert, GroupHistory, HistoryRange, TopicHistory,
} from './monitoring-api.js';
import type { Overview, OverviewRequest } from './overview.js';
import type { NackBatchRequest, NackRequest, NackResult } from './nacks.js';
import type { CheckpointDescription, CheckpointRequest, CommitRequest, ResetOffsetsRequest, ResetOffsetsResult } from './offsets.js';
import type { ProduceBatchesRequest, ProduceBatchesResult, ProduceRequest, ProduceResult, ProducerIdentity } from './produce.js';
import type { RecordPage, RecordPageRequest } from './record-pages.js';
import type { ShareAckRequest, ShareAckResult, SharedSections, ShareFetchRequest, ShareFetchResult } from './share-groups.js';
import type { SubscribeRequest, SubscribeResult } from './subscriptions.js';
import type {
  AlterTopicRequest, CompactionResult, CompactTopicRequest, CreateTopicRequest, DeleteRecordsRequest, DeleteRecordsResult, DeleteTopicResult,
  DescribeTopicOptions, RetentionResult, TopicDescription, TopicSummary,
} from './topics.js';

/** The binary data path, offered by the embedded broker (and served by `onelog serve` on `GET /data`). */
export interface BinaryDataApi {
  /**
   * Appends client-encoded RecordBatch v2 batches as they are, each validated whole first; stored whole or refused
   * whole, resolved as {@link OnelogApi.produce}.
   * @throws OnelogError as {@link OnelogApi.produce}, and `CORRUPT_MESSAGE` (a batch that fails its length, CRC-32C or
   *   magic check, or whose records do not decode), `UNSUPPORTED_COMPRESSION` (codec bits 5 to 7); `INVALID_REQUEST`
   *   for no batch
   */
  produceBatches(request: ProduceBatchesRequest): Promise<ProduceBatchesResult>;
  /** As {@link OnelogApi.fetch}, each partition's batches as stored, undecoded. @throws OnelogError as {@link OnelogApi.fetch} */
  fetchBatches(request: FetchRequest): Promise<BatchFetchResult>;
  /** A group member's commit, carried on the data socket beside its fetches. @throws OnelogError as {@link OnelogApi.commitOffsets} */
  commitOffsets(request: CommitRequest): Promise<void>;
  /**
   * A share group member's acquisition (as {@link OnelogApi.shareFetch}, its records as stored) and acknowledgements, on the data socket.
   * @throws OnelogError as {@link OnelogApi.shareFetch}
   */
  shareFetchSections(request: ShareFetchRequest): Promise<SharedSections>;
  /** @throws OnelogError as {@link OnelogApi.shareAcknowledge} */
  shareAcknowledge(request: ShareAckRequest): Promise<ShareAckResult>;
}

/**
 * Everything a client can ask of onelog.
 *
 * Every method rejects with an `OnelogError` (src/protocol/errors.ts; docs/errors.md says what each code means,
 * whether it is retriable and what to do). Each method names the codes its request can meet; besides those, any
 * may answer:
 * - `BROKER_CLOSED`: the broker is closed or shutting down;
 * - `STORAGE_ERROR`: a store failed a read or a write (after a failed write of the catalog or the offset store every
 *   write is refused until a restart; reads go on); `RESOURCE_EXHAUSTED`: the disk, open files or memory ran out,
 *   nothing was done (retriable);
 * - over HTTP ({@link HttpApi}, {@link BinaryApi}): `NETWORK_ERROR` (the server was not reached, or did not answer
 *   within `requestTimeoutMs`), `UNAUTHENTICATED`, `FORBIDDEN` (an ACL refused it, docs/security.md), `RATE_LIMITED`,
 *   `REQUEST_TOO_LARGE` (a body above `serve --max-body-bytes`), `REQUEST_TIMED_OUT` (the request was not received
 *   whole in time), `INVALID_REQUEST` for a body that is not the route's JSON;
 * - in cluster mode (docs/cluster.md): `NOT_COORDINATOR` for a group's requests (join, heartbeat, leave, a member's
 *   fetch, commit, nack, reset, checkpoint, describe, delete, subscribe, share acquisitions and acknowledgements)
 *   when another broker coordinates the group, naming it; the HTTP client sends the request there.
 *
 * A group id is 1 to 255 characters without control characters (`INVALID_REQUEST` otherwise). A topic that does not
 * exist is `UNKNOWN_TOPIC`, or `INVALID_TOPIC` when no topic could have its name. Offsets and timestamps are numbers up
 * to 2^53 − 1, timestamps and times in ms since the epoch.
 */
export interface OnelogApi {
  /**
   * Creates a topic and its partitions, all or nothing (a refused or failed creation leaves no topic).
   * @throws OnelogError `INVALID_TOPIC` (1 to 249 of `[a-zA-Z0-9._-]`, not `.` or `..`), `INVALID_PARTITIONS` (1 to
   *   10,000), `INVALID_CONFIG` (an unknown setting or a bad value, naming what is valid), `TOPIC_ALREADY_EXISTS`
   */
  createTopic(request: CreateTopicRequest): Promise<TopicDescription>;
  /** Every topic with its partition count, by name. */
  listTopics(): Promise<TopicSummary[]>;
  /**
   * A topic's settings and partitions (log start offset, high watermark, bytes on disk); with `groups`, every group
   * subscribed to it, partition by partition.
   * @throws OnelogError `UNKNOWN_TOPIC`
   */
  describeTopic(topic: string, options?: DescribeTopicOptions): Promise<TopicDescription>;
  /**
   * Changes settings of a topic, at once on every partition; the others keep their values.
   * @throws OnelogError `UNKNOWN_TOPIC`, `INVALID_CONFIG`
   */
  alterTopic(request: AlterTopicRequest): Promise<TopicDescription>;
  /**
   * Moves a partition's log start offset forward (Kafka's DeleteRecords): records below `beforeOffset` are never
   * served again.
   * @throws OnelogError `UNKNOWN_TOPIC`, `UNKNOWN_PARTITION`, `INVALID_REQUEST` (a partition that is not an integer
   *   >= 0), `INVALID_OFFSET` (`beforeOffset` not an integer), `OFFSET_OUT_OF_RANGE` (below the log start offset or
   *   above the high watermark, and not -1), naming the offsets allowed
   */
  deleteRecords(request: DeleteRecordsRequest): Promise<DeleteRecordsResult>;
  /**
   * Deletes a topic: its records, and every group's subscription to it and committed offsets of it.
   * @throws OnelogError `UNKNOWN_TOPIC`, `TOPIC_IN_USE` (a subscription's retry
   *   policy uses it: a retry tier or dead-letter topic, or a subscribed topic with tiers; delete that group first)
   */
  deleteTopic(topic: string): Promise<DeleteTopicResult>;
  /** Applies the topic's retention now (it also runs every 5 minutes). @throws OnelogError `UNKNOWN_TOPIC` */
  enforceRetention(topic: string): Promise<RetentionResult>;
  /**
   * Compacts a topic now (its active segments sealed first); with `wait: false` only starts it.
   * @throws OnelogError `UNKNOWN_TOPIC`, `INVALID_CONFIG` (its `cleanup.policy` lacks `compact`)
   */
  compactTopic(request: CompactTopicRequest): Promise<CompactionResult>;
  /**
   * Appends records; resolves once every record is written and synced as the topic's `flush.policy` says
   * (docs/storage-format.md), with each record's partition and offset in request order. A record goes to its
   * `partition`, else to murmur2 of its key, else (null key) to the topic's sticky partition. Every record is checked
   * before any is written, so a refused request stores nothing; with `idempotence`, a retried request is stored once
   * and answers the original offsets.
   * @throws OnelogError `UNKNOWN_TOPIC`, `UNKNOWN_PARTITION`; `INVALID_RECORD` (no record, a keyless record on a
   *   compacted topic, a timestamp out of range, a record of an idempotent request without its partition);
   *   `RECORD_TOO_LARGE` (a record's key, value and headers, plus 24 bytes, above the broker's `maxRecordBytes`,
   *   default 1 MiB); `REQUEST_TOO_LARGE` (more records than its `maxRecordsPerRequest`, default 100,000);
   *   `INVALID_REQUEST` (a partition that is not an integer >= 0, bad idempotence fields); `UNKNOWN_PRODUCER_ID`,
   *   `INVALID_PRODUCER_EPOCH`, `OUT_OF_ORDER_SEQUENCE` (idempotence); `RESOURCE_EXHAUSTED` (`resource: disk`) before
   *   anything is written. A failure once some partitions stored their batches names them in `stored`, and each
   *   record's partition and offset, if stored, in `records`. In cluster mode, `NOT_LEADER_OR_FOLLOWER` for a partition
   *   another broker leads, naming `leaderBrokerId` and `leaderUrl` (the HTTP client sends the rest there).
   */
  produce(request: ProduceRequest): Promise<ProduceResult>;
  /**
   * Reads partitions of a topic from the offsets given, waiting up to `maxWaitMs` while none has records. A
   * partition's failure is answered as its `error`, a value, and the other partitions still deliver:
   * `OFFSET_OUT_OF_RANGE` for an offset outside `[logStartOffset, highWatermark]` (with `groupId`, naming the group's
   * position; a member's offset below the log start pauses the partition for the group, or jumps as its subscription's
   * `onOutOfRange` says), `CORRUPT_MESSAGE` for a stored batch that fails its check, or another error of reading
   * the partition (`RESOURCE_EXHAUSTED`, `STORAGE_ERROR`).
   * @throws OnelogError `UNKNOWN_TOPIC`, `UNKNOWN_PARTITION`, `INVALID_OFFSET` (an offset that is not an integer >= 0),
   *   `INVALID_REQUEST` (no partitions array, `memberId` without `groupId` or `generationId`, a limit out of its bounds);
   *   a member's fetch: `UNKNOWN_MEMBER_ID`, `ILLEGAL_GENERATION` (neither its generation nor the one before),
   *   `NOT_ASSIGNED` (a partition it does not hold)
   */
  fetch(request: FetchRequest): Promise<FetchResult>;
  /**
   * A page of one partition's records, oldest first, for browsing (no group, nothing committed): from an offset, from
   * a timestamp (the first record at or after it) or the newest; with `key`, only records whose key matches (exact or
   * prefix) among at most `maxScanRecords` read, the offsets read answered in `scanned`; values cut past
   * `maxValueBytes` (`valueTruncated`, the full size in `valueBytes`). Read on from `nextOffset`.
   * @throws OnelogError `UNKNOWN_TOPIC`, `UNKNOWN_PARTITION`; `INVALID_REQUEST` (more than one start, a bound out of
   *   range, naming what is allowed; `keyMatch` without `key`); `INVALID_OFFSET` (not an integer >= 0);
   *   `OFFSET_OUT_OF_RANGE` (an offset outside `[logStartOffset, highWatermark]`, naming both)
   */
  browseRecords(request: RecordPageRequest): Promise<RecordPage>;
  /**
   * Creates or changes a group's subscription to a topic (the settings the request names; the others keep theirs),
   * creating the group, and the retry tier and dead-letter topics a retry policy or `maxDeliveries` needs; answers
   * the subscription and where each partition resumes, a partition paused for the group (`OFFSET_OUT_OF_RANGE`)
   * answering its error as a value instead.
   * @throws OnelogError `UNKNOWN_TOPIC`; `INVALID_REQUEST` for a setting out of its bounds, a retry policy that does
   *   not fit (a delay not shorter than the topic's `retention.ms`, `maxDeliveries` beside a policy, a dead-letter
   *   topic in use, holding records or of more than one partition, a tier topic of the wrong partition count), a type
   *   other than the group's, share settings on a consumer group, push, a retry policy or no delivery limit on a share
   *   group, or a `pushEndpoint` that is not an absolute http(s) URL; `INVALID_TOPIC` for a bad `deadLetterTopic`;
   *   `FORBIDDEN` (`reason: private-address`) for a `pushEndpoint` the broker's outbound policy refuses
   */
  subscribe(request: SubscribeRequest): Promise<SubscribeResult>;
  /**
   * Commits offsets of one topic in one durable write, each the NEXT offset to read; nothing is committed if any
   * entry is refused. A member's commit is fenced: the member and its generation current, every partition its own.
   * @throws OnelogError `INVALID_REQUEST` (a bad shape, `memberId` without `generationId`, a share group: its
   *   acknowledgements move its offsets), `INVALID_OFFSET` (not an integer >= 0), `UNKNOWN_TOPIC`,
   *   `UNKNOWN_PARTITION`, `UNKNOWN_MEMBER_ID` (an unknown member, or no member id while the group has live members),
   *   `ILLEGAL_GENERATION` (not the member's generation, or below the group's fence after a coordinator change),
   *   `NOT_ASSIGNED`
   */
  commitOffsets(request: CommitRequest): Promise<void>;
  /** Every group with its type, state, member count and subscribed topics. */
  listGroups(): Promise<GroupSummary[]>;
  /**
   * A group's state, members and subscriptions with each partition's position and health (docs/monitoring.md), its
   * lag totals, recent alerts, resets, dead-letter actions and checkpoints.
   * @throws OnelogError `UNKNOWN_GROUP`
   */
  describeGroup(groupId: string): Promise<GroupDescription>;
  /**
   * Plans a reset of a group's offsets of a topic (a dry run) or, with `execute`, applies it: with live members, once
   * their partitions are revoked and let go (the call resolves once applied). Targets outside
   * `[logStartOffset, highWatermark]` are clamped and marked; an executed reset is recorded and lifts the partitions' pauses.
   * @throws OnelogError `INVALID_REQUEST` (a bad spec), `INVALID_OFFSET` (a negative `to: offset`), `UNKNOWN_TOPIC`,
   *   `UNKNOWN_PARTITION`, `UNKNOWN_CHECKPOINT`; `BROKER_CLOSED` or, in cluster mode, `NOT_COORDINATOR` when the broker
   *   stopped (coordinating the group) before the reset's safe point: nothing was reset
   */
  resetOffsets(request: ResetOffsetsRequest): Promise<ResetOffsetsResult>;
  /**
   * Becomes a member of a group, subscribing it to the topics; the answer carries the member id, generation and
   * first assignment.
   * @throws OnelogError `UNKNOWN_TOPIC`, `INVALID_REQUEST` (no topics,
   *   an option out of its bounds, naming the allowed values; a share group, whose members do not join),
   *   `INCONSISTENT_GROUP_PROTOCOL` (live members use another assignor)
   */
  joinGroup(request: JoinGroupRequest): Promise<MemberAssignment>;
  /**
   * Keeps the membership alive, reports what the member still holds, and answers its current assignment.
   * @throws OnelogError `UNKNOWN_MEMBER_ID` (it left, missed its session timeout, or the broker restarted),
   *   `ILLEGAL_GENERATION`: the member joins again; `INVALID_REQUEST` (`owned` not an array)
   */
  heartbeat(request: HeartbeatRequest): Promise<MemberAssignment>;
  /** Leaves at once (its partitions move now, not after the session timeout); an unknown member is ignored. */
  leaveGroup(request: LeaveGroupRequest): Promise<void>;
  /**
   * Deletes a group with no live members: its committed offsets, subscriptions, pauses, checkpoints, history; its
   * retry tier and dead-letter topics are emptied.
   * @throws OnelogError `UNKNOWN_GROUP`, `NON_EMPTY_GROUP` (live members, of a consumer or a share group)
   */
  deleteGroup(groupId: string): Promise<void>;
  /**
   * Saves the group's committed offsets under a name (replacing one of that name), for
   * `resetOffsets({ spec: { to: 'checkpoint' } })`.
   * @throws OnelogError `UNKNOWN_GROUP`, `INVALID_REQUEST` (a name not 1 to 200 characters)
   */
  saveCheckpoint(request: CheckpointRequest): Promise<CheckpointDescription>;
  /** Issues a new idempotent producer identity (an id never reused, epoch 0). */
  initProducerId(): Promise<ProducerIdentity>;
  /**
   * Moves a record the member could not process to the subscription's next retry tier or its dead-letter topic,
   * durably, once (a repeated nack answers the first move, `duplicate: true`). Fenced as a commit.
   * @throws OnelogError `NO_RETRY_POLICY` (neither a retry policy nor `maxDeliveries` for the topic), `UNKNOWN_TOPIC`,
   *   `UNKNOWN_PARTITION`, `UNKNOWN_MEMBER_ID`, `ILLEGAL_GENERATION`, `NOT_ASSIGNED`, `INVALID_OFFSET` (not an integer
   *   >= 0), `OFFSET_OUT_OF_RANGE` (no record there: below the log start or at the high watermark or above),
   *   `INVALID_REQUEST` (a reason that is not text, `deliveries` outside 1 to 100, a share group: its members reject)
   */
  nack(request: NackRequest): Promise<NackResult>;
  /**
   * A share group member's acquisition of records, each locked for it (docs/consumer-groups.md).
   * @throws OnelogError `UNKNOWN_TOPIC`, `INVALID_REQUEST` (no share subscription of the group to the topic, a member
   *   id not 1 to 255 characters, a limit out of its bounds, a partition out of range or named twice)
   */
  shareFetch(request: ShareFetchRequest): Promise<ShareFetchResult>;
  /**
   * A share group member's outcomes of records it holds: accept, release, reject, renew. A partition whose
   * acknowledgements name a record the member does not hold answers `INVALID_RECORD_STATE` as a value and changes
   * nothing; the others apply, on disk before this resolves.
   * @throws OnelogError `UNKNOWN_TOPIC`, `UNKNOWN_PARTITION`, `INVALID_OFFSET`, `INVALID_REQUEST` (no share
   *   subscription, a member id not 1 to 255 characters, not 1 to 10,000 acks, a bad type or delay, an offset named twice)
   */
  shareAcknowledge(request: ShareAckRequest): Promise<ShareAckResult>;
  /**
   * As {@link nack} for several records of one partition (1 to 10,000), in order, sharing fdatasyncs; every record is
   * checked before any is moved. Answers where each went, in request order. @throws OnelogError as {@link nack}
   */
  nackBatch(request: NackBatchRequest): Promise<NackResult[]>;
  /**
   * The depth and the oldest dead letters of a subscription.
   * @throws OnelogError `UNKNOWN_GROUP`, `NO_RETRY_POLICY` (the subscription never had a dead-letter topic),
   *   `INVALID_REQUEST` (the group does not subscribe to the topic, a limit outside 1 to 10,000)
   */
  listDeadLetters(request: DeadLetterListRequest): Promise<DeadLetterList>;
  /**
   * Sends dead letters back to the group (dry run unless `execute`), recorded with who asked.
   * @throws OnelogError as {@link listDeadLetters}; `INVALID_REQUEST` (not exactly one of `offset`, `offsets` and `all`; no
   *   offsets or more than 10,000), `INVALID_OFFSET` (no waiting dead letter at an offset named: nothing is redriven),
   *   `NO_RETRY_POLICY` (executed without a retry tier to send them through)
   */
  redriveDeadLetters(request: RedriveRequest): Promise<RedriveResult>;
  /**
   * Discards dead letters below an offset of the dead-letter topic (dry run unless `execute`), recorded with who asked.
   * @throws OnelogError as {@link listDeadLetters}; `INVALID_OFFSET` (not an integer >= 0, or above the dead-letter
   *   topic's high watermark)
   */
  purgeDeadLetters(request: PurgeRequest): Promise<PurgeResult>;
  /** Alerts of every group (or one), most recent first. @throws OnelogError `INVALID_REQUEST` (a limit outside 1 to 10,000) */
  listAlerts(request?: AlertListRequest): Promise<GroupAlert[]>;
  /**
   * Records who acknowledged an alert (the first acknowledgement stays); it stays active until its condition clears.
   * @throws OnelogError `NOT_FOUND` (no alert with that id), `INVALID_REQUEST` (an id below 1, `requestedBy` not 1 to
   *   200 characters)
   */
  acknowledgeAlert(request: AcknowledgeAlertRequest): Promise<GroupAlert>;
  /**
   * Adds a webhook every raised and resolved alert is POSTed to (once per URL: the sink already added is answered).
   * @throws OnelogError `INVALID_REQUEST` (not an absolute http(s) URL), `FORBIDDEN` (`reason: private-address`: the
   *   broker's outbound policy refuses the address)
   */
  addAlertSink(url: string): Promise<AlertSink>;
  /** The alert sinks, a password in a URL shown as `***`. */
  listAlertSinks(): Promise<AlertSink[]>;
  /** Removes a webhook sink by id. @throws OnelogError `NOT_FOUND` (no sink with that id), `INVALID_REQUEST` (an id below 1) */
  removeAlertSink(id: number): Promise<void>;
  /**
   * A group's health samples per partition, one per minute over the last `range.hours` (kept 24 hours, across
   * restarts), each partition with its drain estimate.
   * @throws OnelogError `UNKNOWN_GROUP`, `INVALID_REQUEST` (hours not an integer from 1 to 24)
   */
  groupHistory(groupId: string, range?: HistoryRange): Promise<GroupHistory>;
  /**
   * A topic's produce and consume rates (records/s, bytes/s) per minute over the last `range.hours` (kept 24 hours).
   * @throws OnelogError `UNKNOWN_TOPIC`, `INVALID_REQUEST` (hours not an integer from 1 to 24)
   */
  topicHistory(topic: string, range?: HistoryRange): Promise<TopicHistory>;
  /**
   * The broker's health at a glance: topics by size, groups worst first, the active alerts, each list bounded
   * (docs/monitoring.md, "Console: overview").
   * @throws OnelogError `INVALID_REQUEST` (a limit outside 1 to 1,000)
   */
  overview(request?: OverviewRequest): Promise<Overview>;
  /**
   * The cluster: its live brokers (each one's id, URLs, heartbeat age, partitions led, groups coordinated) and the leases
   * held now; on the embedded default one broker and no lease (docs/cluster.md).
   */
  describeCluster(): Promise<ClusterDescription>;
  /**
   * Marks a live broker of the cluster draining (`onelog cluster drain BROKER`, docs/cluster.md): at its next lease
   * balance pass (within a third of `--lease-ms`) it hands its partition leases over to the brokers leading fewest
   * (after committing the appends in flight), gives its group and job leases up, and takes none until it restarts.
   * Answers at once: {@link describeCluster} shows when it holds nothing (the CLI waits for that).
   * @returns the broker and the leases it held when marked
   * @throws OnelogError `INVALID_REQUEST` on the embedded default (no cluster), or for a broker id that is not an integer
   *   from 0 to 2^31 - 1; `NOT_FOUND` when no live broker has that id; `STORAGE_ERROR`
   */
  drainBroker(brokerId: number): Promise<ClusterDrainStart>;
}

/**
 * The embedded broker: opens a data directory and offers every onelog operation in-process
 * ({@link OnelogApi}). It composes the three stores, split by access pattern:
 *
 * - log store: `<dataDir>/log/<topic>-<partition>/` segment files (log/segments/log-manager.ts);
 * - offset store: `<dataDir>/offsets/` (LMDB), or Redis or PostgreSQL (`offsets`, see store-engines.ts);
 * - catalog: `<dataDir>/catalog.sqlite` (SQLite through Kysely, catalog/catalog.ts), or PostgreSQL (`catalog`).
 *
 * One broker per data directory: `<dataDir>/broker.lock` refuses a second live one (`DATA_DIR_LOCKED`). A data
 * directory missing its log, or an offset store missing the offsets of groups that committed, is refused
 * (`STORAGE_ERROR`) rather than served as if new.
 *
 * Durability: a produce resolves once its records are written, and synced as the topic's flush.policy says
 * (see docs/storage-format.md): it survives kill -9 always, power loss under `always`. A commit resolves
 * after LMDB's synced write transaction; a catalog change after SQLite's FULL-synchronous commit.
 *
 * This class is the facade: each operation checks that the broker is open and hands the request to the part that
 * serves it ({@link BrokerParts}, built in order by broker/open.ts); the read path is {@link FetchPath}, the cluster's
 * routing {@link ClusterRouting}.
 */
import type { SubscriptionRecord } from '../catalog/subscriptions.js';
import type { BrokerInfo } from '../cluster/brokers.js';
import { checkCommitRequest, checkJoinRequest, checkMember, checkResetRequest, checkSubscribeRequest } from '../coordinator/request-checks.js';
import { SHARE_DEFAULTS } from '../coordinator/subscriptions.js';
import type { ResolvedSubscribeRequest } from '../coordinator/subscriptions.js';
import { checkNackRecords } from '../delivery/retries.js';
import type { CreateTopic } from '../delivery/retries.js';
import { WebhookDispatcher } from '../delivery/webhook.js';
import type { GroupOffset } from '../offsets/offset-store.js';
import type { BinaryDataApi, OnelogApi } from '../protocol/api.js';
import type { BrokerChange, ChangeSource } from '../protocol/changes.js';
import type { ClusterDescription, ClusterDrainStart } from '../protocol/cluster.js';
import type { HealthReport } from '../protocol/health.js';
import type { Overview, OverviewRequest } from '../protocol/overview.js';
import type { DeadLetterList, DeadLetterListRequest, PurgeRequest, PurgeResult, RedriveRequest, RedriveResult } from '../protocol/dead-letters.js';
import type { BatchFetchResult, FetchRequest, FetchResult } from '../protocol/fetch.js';
import type { GroupDescription, GroupSummary, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, MemberAssignment } from '../protocol/groups.js';
import type {
  AcknowledgeAlertRequest, AlertListRequest, AlertSink, GroupAlert, GroupHistory, HistoryRange, TopicHistory,
} from '../protocol/monitoring-api.js';
import type { NackBatchRequest, NackRequest, NackResult } from '../protocol/nacks.js';
import type { CheckpointDescription, CheckpointRequest, CommitRequest, ResetOffsetsRequest, ResetOffsetsResult } from '../protocol/offsets.js';
import type { ProduceBatchesRequest, ProduceBatchesResult, ProduceRequest, ProduceResult, ProducerIdentity } from '../protocol/produce.js';
import type { RecordPage, RecordPageRequest } from '../protocol/record-pages.js';
import type { ShareAckRequest, ShareAckResult, SharedSections, ShareFetchRequest, ShareFetchResult } from '../protocol/share-groups.js';
import type { SubscribeRequest, SubscribeResult } from '../protocol/subscriptions.js';
import type {
  AlterTopicRequest, CompactionResult, CompactTopicRequest, CreateTopicRequest, DeleteRecordsRequest, DeleteRecordsResult, DeleteTopicResult,
  DescribeTopicOptions, RetentionResult, TopicDescription, TopicSummary,
} from '../protocol/topics.js';
import { sharedRecords } from '../protocol/data-frames.js';
import { OnelogError } from '../protocol/errors.js';
import { checkGroupId } from '../protocol/validate.js';
import type { FileCacheStats } from '../log/segments/file-cache.js';
import { ClusterRouting } from './cluster-routing.js';
import { describeCluster, describeCoordinator, describeLeaders, drainBroker } from './cluster-view.js';
import { readOverview } from './overview.js';
import { FetchPath } from './fetch-path.js';
import { openBroker } from './open.js';
import { RecordBrowser } from './record-browser.js';
import type { BrokerParts } from './open.js';
import type { BrokerOptions } from './options.js';

export class Broker implements OnelogApi, BinaryDataApi, ChangeSource {
  private closed = false;
  /** The users requests are authenticated against (docs/security.md). */
  readonly users: BrokerParts['users'];
  /** Who may do what on which topic, group or the cluster (docs/security.md). */
  readonly acls: BrokerParts['acls'];
  /** Who did which offset, data or user operation (docs/security.md). */
  readonly audit: BrokerParts['audit'];
  /** Prometheus metrics (`GET /metrics`, docs/monitoring.md). */
  readonly metrics: BrokerParts['metrics'];
  private readonly routing: ClusterRouting;
  private readonly fetchPath: FetchPath;
  /** Pages of a partition's records for the console's record browser. */
  private readonly recordBrowser: RecordBrowser;
  /** POSTs the records of webhook subscriptions (docs/delivery.md), consuming through this broker. */
  private readonly webhooks: WebhookDispatcher;
  /** The retry tiers' topics are created as any other, once the broker is open. */
  private readonly createTopicNow: CreateTopic = (request) => this.createTopic(request);

  private constructor(private readonly parts: BrokerParts) {
    ({ users: this.users, acls: this.acls, audit: this.audit, metrics: this.metrics } = parts);
    this.routing = new ClusterRouting(parts.logs, parts.membership, parts.placement, parts.clock);
    this.fetchPath = new FetchPath(parts.logs, this.routing, parts.groups, parts.retries, parts.shareGroups, parts.metrics);
    this.recordBrowser = new RecordBrowser(parts.logs);
    this.webhooks = new WebhookDispatcher(this, parts.logger, { ...parts.options.webhooks, outbound: parts.outbound });
  }

  /**
   * Opens the broker on `options.dataDir` (see broker/open.ts): migrates the catalog, opens the offset store, and opens
   * every topic's partitions, recovering torn log tails; then starts the webhook subscriptions' dispatchers.
   * @throws OnelogError `DATA_DIR_LOCKED`; `STORAGE_ERROR` for a missing log directory, or for an offset store that
   *   holds none of the offsets of groups the catalog says committed (unless `allowMissingOffsets`); `INVALID_CONFIG`
   */
  static async open(options: BrokerOptions): Promise<Broker> {
    const broker = new Broker(await openBroker(options));
    try {
      await broker.webhooks.start(await broker.parts.catalog.subscriptions.listWithWebhook());
    } catch (err) {
      await broker.close();
      throw err;
    }
    return broker;
  }

  /** @see TopicAdmin.create */
  async createTopic(request: CreateTopicRequest): Promise<TopicDescription> {
    this.checkOpen();
    const created = await this.parts.topics.create(request);
    this.parts.changes.publish({ type: 'topic', topic: created.topic, change: 'created' });
    return created;
  }

  /** @see TopicAdmin.alter */
  async alterTopic(request: AlterTopicRequest): Promise<TopicDescription> {
    this.checkOpen();
    const altered = await this.parts.topics.alter(request);
    this.parts.changes.publish({ type: 'topic', topic: altered.topic, change: 'altered' });
    return altered;
  }

  async listTopics(): Promise<TopicSummary[]> {
    this.checkOpen();
    return this.parts.topics.list();
  }

  /** @see TopicAdmin.describe; with `leaders`, each partition's leader (describeLeaders, cluster-view.ts). */
  async describeTopic(topic: string, options: DescribeTopicOptions = {}): Promise<TopicDescription> {
    this.checkOpen();
    const described = await this.routing.whenCurrent(topic, [], () => this.parts.topics.describe(topic, options));
    if (options.leaders !== true) return described;
    const leaders = await describeLeaders(this.routing, this.parts.placement, topic, described.partitions.map((p) => p.partition));
    return { ...described, partitions: described.partitions.map((p) => ({ ...p, leader: leaders.get(p.partition) ?? null })) };
  }

  /** @see TopicAdmin.deleteRecords */
  async deleteRecords(request: DeleteRecordsRequest): Promise<DeleteRecordsResult> {
    this.checkOpen();
    return this.routing.whenCurrent(request.topic, [request.partition], () => this.parts.topics.deleteRecords(request));
  }

  /** @see TopicAdmin.delete; the webhooks of the deleted subscriptions stop, its share-partitions and metrics go. */
  async deleteTopic(topic: string): Promise<DeleteTopicResult> {
    this.checkOpen();
    const { subscriptions, ...result } = await this.parts.topics.delete(topic);
    this.parts.shareGroups.topicDeleted(topic);
    this.metrics.deleteTopic(topic);
    for (const sub of subscriptions) if (sub.pushEndpoint) await this.webhooks.refresh({ ...sub, pushEndpoint: null });
    this.parts.changes.publish({ type: 'topic', topic, change: 'deleted' });
    return result;
  }

  /** @see TopicAdmin.enforceRetention */
  async enforceRetention(topic: string): Promise<RetentionResult> {
    this.checkOpen();
    return this.parts.topics.enforceRetention(topic);
  }

  /** @see TopicAdmin.compact */
  async compactTopic(request: CompactTopicRequest): Promise<CompactionResult> {
    this.checkOpen();
    return this.parts.topics.compact(request);
  }

  /**
   * The first offset of a partition whose record's timestamp is >= `timestamp` (ms), or the high watermark when
   * every record is older (Kafka's ListOffsets by timestamp).
   * @throws OnelogError `UNKNOWN_TOPIC`, `UNKNOWN_PARTITION`
   */
  async offsetForTimestamp(topic: string, partition: number, timestamp: number): Promise<number> {
    this.checkOpen();
    return this.routing.whenCurrent(topic, [partition], () => this.parts.logs.get(topic, partition).offsetForTimestamp(timestamp));
  }

  /** @see RecordBrowser.page; in cluster mode the partition is brought up to date first. */
  async browseRecords(request: RecordPageRequest): Promise<RecordPage> {
    this.checkOpen();
    return this.routing.whenCurrent(request.topic, [request.partition], () => this.recordBrowser.page(request));
  }

  /** A group's committed offsets, every topic (none for a group that does not exist), as Kafka's OffsetFetch reads them. */
  async committedOffsets(groupId: string): Promise<GroupOffset[]> {
    this.checkOpen();
    await this.parts.shareGroups.commitStarts(checkGroupId(groupId));
    return this.parts.offsets.list(groupId);
  }

  /**
   * Checks a group id (the Kafka listener's share group requests call it first, so that its ACL check, `read` on the
   * group, comes before anything they do). @throws OnelogError `INVALID_REQUEST` for a bad group id
   */
  async authorizeGroup(groupId: string): Promise<void> {
    this.checkOpen();
    checkGroupId(groupId);
  }

  /** A group's configs set over the Kafka protocol (IncrementalAlterConfigs on a group), by name; none for an unknown group. */
  async groupConfigs(groupId: string): Promise<Record<string, string>> {
    this.checkOpen();
    return this.parts.catalog.groups.configs(checkGroupId(groupId));
  }

  /**
   * Replaces a group's Kafka configs, durably, creating the group (with no subscription yet) if it does not exist, as
   * Kafka keeps a group's configs before its first member.
   */
  async setGroupConfigs(groupId: string, configs: Readonly<Record<string, string>>): Promise<void> {
    this.checkOpen();
    await this.parts.catalog.groups.setConfigs(checkGroupId(groupId), configs, this.parts.clock.now());
  }

  /**
   * Cluster mode: registers this broker in the cluster with the addresses clients reach it at (its HTTP API, its
   * Kafka listener), so that `NOT_COORDINATOR` answers and Kafka's Metadata name them; heartbeats from then on.
   * Nothing on the embedded default.
   * @throws OnelogError `ALREADY_EXISTS` if a live broker has this broker id; `STORAGE_ERROR`
   */
  async advertise(addresses: { url: string; kafkaAddress?: string | null }): Promise<void> {
    this.checkOpen();
    await this.routing.advertise(addresses);
  }

  /**
   * The live brokers of the cluster, by id (those advertised, heartbeat within 10 s); null on the embedded default.
   * @throws OnelogError `STORAGE_ERROR`
   */
  async liveBrokers(): Promise<BrokerInfo[] | null> {
    this.checkOpen();
    return this.routing.liveBrokers();
  }

  /** This broker's id in its cluster (`--broker-id`), or null on the embedded default. */
  get brokerId(): number | null {
    return this.routing.brokerId;
  }

  /**
   * Cluster mode: each partition's sequencer among `topics`, the broker holding its lease now, by topic then
   * partition (Kafka's Metadata); partitions nobody holds are left out (the next broker to produce to one takes it).
   * Null on the embedded default, where this broker leads every partition.
   * @throws OnelogError `STORAGE_ERROR`
   */
  async partitionLeaders(topics: readonly string[]): Promise<Map<string, Map<number, number>> | null> {
    this.checkOpen();
    return this.routing.partitionLeaders(topics);
  }

  /**
   * Cluster mode: the broker coordinating `groupId` now, the holder of its lease `group:<groupId>` (Kafka's
   * FindCoordinator); null when nobody holds it (the next broker asked for the group takes it) and on the embedded
   * default (this broker coordinates every group).
   * @throws OnelogError `STORAGE_ERROR`
   */
  async groupCoordinator(groupId: string): Promise<number | null> {
    this.checkOpen();
    return this.routing.groupCoordinator(groupId);
  }

  /** The log store's file-handle cache: descriptors open, budget, hits, opens, evictions (diagnostics, benchmarks). */
  fileCacheStats(): FileCacheStats {
    return this.parts.files.stats();
  }

  private checkOpen(): void {
    if (this.closed) throw new OnelogError('BROKER_CLOSED', 'the broker is closed');
  }

  /** @see FetchPath.fetch */
  async fetch(request: FetchRequest): Promise<FetchResult> {
    this.checkOpen();
    return this.fetchPath.fetch(request);
  }

  /** @see FetchPath.fetchBatches */
  async fetchBatches(request: FetchRequest): Promise<BatchFetchResult> {
    this.checkOpen();
    return this.fetchPath.fetchBatches(request);
  }

  /**
   * @see ProducePath.produce; in cluster mode, a partition another broker leads is refused `NOT_LEADER_OR_FOLLOWER`
   * naming it (`leaderBrokerId`, `leaderUrl`)
   */
  async produce(request: ProduceRequest): Promise<ProduceResult> {
    this.checkOpen();
    return this.routing.whenCurrent(request.topic, [], () => this.routing.naming(this.parts.producing.produce(request)));
  }

  /** @see ProducePath.produceBatches; refusals as {@link produce} */
  async produceBatches(request: ProduceBatchesRequest): Promise<ProduceBatchesResult> {
    this.checkOpen();
    return this.routing.whenCurrent(request.topic, [], () => this.routing.naming(this.parts.producing.produceBatches(request)));
  }

  /** @see ProducePath.initProducerId */
  async initProducerId(): Promise<ProducerIdentity> {
    this.checkOpen();
    return this.parts.producing.initProducerId();
  }

  /**
   * A share group member's acquisition: records of the topic's partitions, each locked for it (see {@link ShareGroups.acquire}).
   * In cluster mode the group's coordinator serves it.
   * @throws OnelogError `INVALID_REQUEST` (not a share group, a bad field), `UNKNOWN_TOPIC`, `NOT_COORDINATOR`
   */
  async shareFetch(request: ShareFetchRequest): Promise<ShareFetchResult> {
    return sharedRecords(await this.shareFetchSections(request));
  }

  /** @see FetchPath.shareFetchSections */
  async shareFetchSections(request: ShareFetchRequest): Promise<SharedSections> {
    this.checkOpen();
    return this.fetchPath.shareFetchSections(request);
  }

  /** @see FetchPath.shareAcknowledge */
  async shareAcknowledge(request: ShareAckRequest): Promise<ShareAckResult> {
    this.checkOpen();
    return this.fetchPath.shareAcknowledge(request);
  }

  /** @see GroupCoordinator.subscribe */
  async subscribe(request: SubscribeRequest): Promise<SubscribeResult> {
    this.checkOpen();
    checkSubscribeRequest(request);
    if (request.pushEndpoint !== undefined && request.pushEndpoint !== null) this.parts.outbound.check(request.pushEndpoint, 'pushEndpoint');
    // The request takes its place in the group's order now; its topic is brought up to date and its retry policy
    // resolved (tier and dead-letter topics created) meanwhile.
    const resolving = this.routing.current(request.topic, 'all').then(() => this.resolveSubscription(request));
    const result = await this.parts.groups.subscribe(request.groupId, resolving);
    if (result.subscription.type === 'share') await this.parts.shareGroups.configure(request.groupId, request.topic);
    const sub = await this.parts.groups.findSubscription(request.groupId, request.topic);
    if (sub?.deadLetterTopic) await this.parts.deadLetters.checkAlert(sub); // a new alert depth may raise or resolve it
    await this.webhooks.refresh(result.subscription); // starts, restarts or stops the subscription's webhook dispatcher
    this.parts.changes.publish({ type: 'group', groupId: request.groupId, change: 'changed' });
    return result;
  }

  /**
   * A subscribe request with its retry policy and delivery limit resolved: their tier and dead-letter topics created.
   * @throws OnelogError `UNKNOWN_TOPIC`; `INVALID_REQUEST` for a policy the topic cannot serve
   */
  private async resolveSubscription(request: SubscribeRequest): Promise<ResolvedSubscribeRequest> {
    this.parts.logs.partitionCount(request.topic); // UNKNOWN_TOPIC
    const retry = await this.parts.retries.preparePolicy(request.groupId, request.topic, request.retry, this.createTopicNow);
    // A share group always has a delivery limit, so a dead-letter topic.
    const share = (await this.parts.groups.groupType(request.groupId) ?? request.type) === 'share';
    const maxDeliveries = request.maxDeliveries ?? (share ? SHARE_DEFAULTS.maxDeliveries : undefined);
    const maxDeliveriesDeadLetterTopic = await this.parts.retries.prepareMaxDeliveries(request.groupId, request.topic, maxDeliveries, this.createTopicNow);
    return { ...request, retry, ...(maxDeliveriesDeadLetterTopic === undefined ? {} : { maxDeliveriesDeadLetterTopic }) };
  }

  /**
   * @see GroupCoordinator.joinGroup
   * @throws OnelogError `INVALID_REQUEST` for a bad option (naming the allowed values)
   */
  async joinGroup(request: JoinGroupRequest): Promise<MemberAssignment> {
    this.checkOpen();
    checkJoinRequest(request);
    const joined = await this.parts.groups.joinGroup(request, this.routing.topicsCurrent(request.topics));
    this.parts.changes.publish({ type: 'group', groupId: request.groupId, change: 'changed' });
    return joined;
  }

  /** @see GroupCoordinator.heartbeat */
  async heartbeat(request: HeartbeatRequest): Promise<MemberAssignment> {
    this.checkOpen();
    checkGroupId(request.groupId);
    if (!Array.isArray(request.owned)) throw new OnelogError('INVALID_REQUEST', 'owned must be an array of { topic, partition }');
    return this.parts.groups.heartbeat(request);
  }

  /** @see GroupCoordinator.leaveGroup */
  async leaveGroup(request: LeaveGroupRequest): Promise<void> {
    this.checkOpen();
    await this.parts.groups.leaveGroup({ groupId: checkGroupId(request.groupId), memberId: request.memberId, abandoned: request.abandoned === true });
    this.parts.changes.publish({ type: 'group', groupId: request.groupId, change: 'changed' });
  }

  /**
   * @see GroupCoordinator.deleteGroup; the group's retry tier topics and dead-letter topics are emptied too
   * (their log start moves to the high watermark). A share group with live members is refused (`NON_EMPTY_GROUP`).
   */
  async deleteGroup(groupId: string): Promise<void> {
    this.checkOpen();
    checkGroupId(groupId);
    // Its retry tiers and dead letters go with it (the topics stay, emptied): a group created again under the
    // same id starts clean.
    this.parts.shareGroups.checkEmpty(groupId);
    const owned = (await this.parts.catalog.subscriptions.list(groupId)).flatMap((s) =>
      [...this.parts.groups.retryTopics.tiersOf(groupId, s.topic), ...(s.deadLetterTopic ? [s.deadLetterTopic] : [])]);
    await this.parts.groups.deleteGroup(groupId);
    this.parts.retries.deleteGroup(groupId);
    this.parts.shareGroups.deleteGroup(groupId);
    for (const topic of owned) {
      if (!(await this.parts.catalog.topics.get(topic))) continue;
      await this.routing.whenCurrent(topic, 'all', async () => {
        for (const log of this.parts.logs.partitions(topic)) await log.deleteRecordsBefore(log.highWatermark, 'delete-records');
      });
    }
    this.parts.changes.publish({ type: 'group', groupId, change: 'deleted' });
  }

  /**
   * @see Retries.nack; fenced as a commit ({@link GroupCoordinator.checkNack})
   * @throws OnelogError `NO_RETRY_POLICY`, `UNKNOWN_MEMBER_ID`, `ILLEGAL_GENERATION`, `NOT_ASSIGNED`, `INVALID_OFFSET`,
   *   `OFFSET_OUT_OF_RANGE`, `UNKNOWN_TOPIC`, `UNKNOWN_PARTITION`
   */
  async nack(request: NackRequest): Promise<NackResult> {
    const { offset, reason, ...rest } = request;
    return (await this.nackBatch({ ...rest, records: [{ offset, reason }] }))[0]!;
  }

  /** @see nack; several records of one partition, in order, sharing fdatasyncs */
  async nackBatch(request: NackBatchRequest): Promise<NackResult[]> {
    this.checkOpen();
    checkGroupId(request.groupId);
    checkMember(request);
    checkNackRecords(request);
    return this.parts.retries.nack(request, await this.parts.groups.checkNack(request, this.routing.current(request.topic, [request.partition])));
  }

  /** @see DeadLetters.list */
  async listDeadLetters(request: DeadLetterListRequest): Promise<DeadLetterList> {
    return this.parts.deadLetters.list(request, await this.deadLetterSubscription(request));
  }

  /** @see DeadLetters.redrive */
  async redriveDeadLetters(request: RedriveRequest): Promise<RedriveResult> {
    return this.parts.deadLetters.redrive(request, await this.deadLetterSubscription(request), this.parts.retries);
  }

  /** @see DeadLetters.purge */
  async purgeDeadLetters(request: PurgeRequest): Promise<PurgeResult> {
    return this.parts.deadLetters.purge(request, await this.deadLetterSubscription(request));
  }

  /** @throws OnelogError `UNKNOWN_GROUP`, `NO_RETRY_POLICY` (no dead-letter topic) */
  private async deadLetterSubscription(request: { groupId: string; topic: string }): Promise<SubscriptionRecord> {
    this.checkOpen();
    const { groupId, topic } = request;
    checkGroupId(groupId);
    if (!(await this.parts.catalog.groups.get(groupId))) throw new OnelogError('UNKNOWN_GROUP', `group ${groupId} does not exist`, { groupId });
    const sub = await this.parts.groups.findSubscription(groupId, topic);
    if (!sub) throw new OnelogError('INVALID_REQUEST', `group ${groupId} does not subscribe to ${topic}`, { groupId, topic });
    if (!sub.deadLetterTopic) {
      throw new OnelogError('NO_RETRY_POLICY', `group ${groupId} has no dead-letter topic for ${topic}: give it a retry policy ` +
        `(onelog groups alter ${groupId} --topic ${topic} --retry 1s,30s --max-attempts 3)`, { groupId, topic });
    }
    return sub;
  }

  /** @see GroupCoordinator.saveCheckpoint */
  async saveCheckpoint(request: CheckpointRequest): Promise<CheckpointDescription> {
    this.checkOpen();
    checkGroupId(request.groupId);
    // As a reset's: a share group's start offsets committed first.
    if (this.parts.shareGroups.holdsPartitions(request.groupId)) await this.parts.shareGroups.commitStarts(request.groupId);
    return this.parts.groups.saveCheckpoint(request);
  }

  /** @see GroupCoordinator.commit */
  async commitOffsets(request: CommitRequest): Promise<void> {
    this.checkOpen();
    checkCommitRequest(request);
    return this.parts.groups.commit(request, this.routing.current(request.topic, request.offsets.map((o) => o.partition)));
  }

  async listGroups(): Promise<GroupSummary[]> {
    this.checkOpen();
    return this.parts.groups.listGroups();
  }

  /** @see GroupCoordinator.describeGroup; with the group's coordinator (describeCoordinator, cluster-view.ts). */
  async describeGroup(groupId: string): Promise<GroupDescription> {
    this.checkOpen();
    checkGroupId(groupId);
    // A share group's start offsets committed, then a state the describe shows has its alert raised first (docs/monitoring.md).
    await this.parts.shareGroups.commitStarts(groupId);
    await this.parts.monitor.evaluateGroupNow(groupId);
    const described = await this.parts.shareGroups.describe(await this.parts.groups.describeGroup(groupId));
    return { ...described, coordinator: await describeCoordinator(this.routing, groupId) };
  }

  /** Evaluates every group's alerts now (the broker also does every `monitoring.alertCheckIntervalMs`). */
  async evaluateAlerts(): Promise<void> {
    this.checkOpen();
    await this.parts.monitor.evaluate();
  }

  /** @see Alerts.list */
  async listAlerts(request: AlertListRequest = {}): Promise<GroupAlert[]> {
    this.checkOpen();
    if (request.groupId !== undefined) checkGroupId(request.groupId);
    return this.parts.monitor.listAlerts(request);
  }

  /** @see Alerts.acknowledge */
  async acknowledgeAlert(request: AcknowledgeAlertRequest): Promise<GroupAlert> {
    this.checkOpen();
    return this.parts.monitor.acknowledgeAlert(request.id, request.requestedBy ?? 'unknown');
  }

  /** @see AlertNotifier.addSink */
  async addAlertSink(url: string): Promise<AlertSink> {
    this.checkOpen();
    return this.parts.monitor.addAlertSink(url);
  }

  async listAlertSinks(): Promise<AlertSink[]> {
    this.checkOpen();
    return this.parts.monitor.listAlertSinks();
  }

  /** @see AlertNotifier.removeSink */
  async removeAlertSink(id: number): Promise<void> {
    this.checkOpen();
    return this.parts.monitor.removeAlertSink(id);
  }

  /**
   * A group's health samples per partition over the range, oldest first, with each partition's drain estimate (the
   * console's charts; docs/monitoring.md).
   * @throws OnelogError `UNKNOWN_GROUP`, `INVALID_REQUEST` (hours not an integer from 1 to 24)
   */
  async groupHistory(groupId: string, range: HistoryRange = {}): Promise<GroupHistory> {
    this.checkOpen();
    if (!(await this.parts.catalog.groups.get(checkGroupId(groupId)))) throw new OnelogError('UNKNOWN_GROUP', `group ${groupId} does not exist`, { groupId });
    return { groupId, ...await this.parts.monitor.groupHistory(groupId, range) };
  }

  /**
   * A topic's produce and consume rates per minute over the range, oldest first (docs/monitoring.md).
   * @throws OnelogError `UNKNOWN_TOPIC`, `INVALID_REQUEST` (hours not an integer from 1 to 24)
   */
  async topicHistory(topic: string, range: HistoryRange = {}): Promise<TopicHistory> {
    this.checkOpen();
    await this.routing.whenCurrent(topic, [], () => this.parts.logs.partitionCount(topic)); // UNKNOWN_TOPIC
    return { topic, ...await this.parts.monitor.topicHistory(topic, range) };
  }

  /** @see readOverview */
  async overview(request: OverviewRequest = {}): Promise<Overview> {
    this.checkOpen();
    return readOverview({
      logs: this.parts.logs, monitor: this.parts.monitor, topics: () => this.parts.topics.list(), groups: () => this.parts.groups.listGroups(),
      rates: () => this.parts.monitor.rates.recent(),
      now: () => this.parts.clock.now(),
    }, request);
  }

  /**
   * Probes every dependency now (the catalog, the offsets, the log; each within `health.timeoutMs`) and reports each with
   * its status: `GET /health` (health.ts). Never throws.
   */
  async health(): Promise<HealthReport> {
    return this.parts.health.check();
  }

  /** @see describeCluster (cluster-view.ts) @throws OnelogError `STORAGE_ERROR` */
  async describeCluster(): Promise<ClusterDescription> {
    this.checkOpen();
    return describeCluster({
      routing: this.routing, placement: this.parts.placement,
      counts: async () => ({
        partitions: (await this.parts.topics.list()).reduce((sum, t) => sum + t.partitions, 0), groups: (await this.parts.groups.listGroups()).length,
      }),
    });
  }

  /** @see drainBroker (cluster-view.ts) @throws OnelogError `INVALID_REQUEST`, `NOT_FOUND`, `STORAGE_ERROR` */
  async drainBroker(brokerId: number): Promise<ClusterDrainStart> {
    this.checkOpen();
    return drainBroker({ routing: this.routing, placement: this.parts.placement }, brokerId);
  }

  /** @see ChangeFeed */
  watchChanges(listener: (change: BrokerChange) => void): () => void {
    return this.parts.changes.watchChanges(listener);
  }

  /** @see GroupCoordinator.resetOffsets */
  async resetOffsets(request: ResetOffsetsRequest): Promise<ResetOffsetsResult> {
    this.checkOpen();
    checkResetRequest(request);
    // A share group's start offsets are committed first: those commits take their places in the group's order before
    // the reset takes its own (a classic group's reset takes its place now).
    if (this.parts.shareGroups.holdsPartitions(request.groupId)) await this.parts.shareGroups.commitStarts(request.groupId);
    return this.parts.groups.resetOffsets(request, this.routing.current(request.topic, 'all'));
  }

  /**
   * Answers every waiting long-poll fetch now, and lets no new one wait: the first step of a shutdown, so
   * the HTTP server can drain at once.
   */
  endWaits(): void {
    void this.webhooks.stop(); // aborts in-flight POSTs, leaves the groups; close() awaits it
    this.parts.logs.endWaits();
    this.parts.groups.close();
  }

  /** Waits for pending appends to sync, then closes the logs, the offset store and the catalog. */
  async close(): Promise<void> {
    if (this.closed) return;
    // Webhook dispatchers leave their groups while the broker still answers (endWaits ends their long-polls).
    this.endWaits();
    await this.webhooks.stop();
    if (this.closed) return;
    this.closed = true;
    this.parts.background.stop();
    // A clean stop leaves share groups' committed offsets current (a crash leaves them up to a session tick behind).
    await this.parts.shareGroups.commitStarts().catch((err: unknown) => this.parts.logger.warn({ err: (err as Error).message }, 'share group start offsets not committed at close'));
    await this.parts.monitor.stop();
    this.parts.health.close();
    this.parts.groups.close();
    await this.parts.membership?.close();
    await this.parts.placement?.close(); // gives the job leases up, before the log ends the pool it shares
    await this.parts.logs.close();
    await this.parts.offsets.close();
    await this.parts.catalog.close();
    await this.parts.outbound.close();
    this.parts.unlock();
  }
}

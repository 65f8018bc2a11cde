/**
 * The embedded broker: opens a data directory and offers every onelog operation in-process
 * ({@link OnelogApi}). It composes the three stores, split by access pattern:
 *
 * - log store: `<dataDir>/log/<topic>-<partition>/` segment files ({@link LogManager});
 * - offset store: `<dataDir>/offsets/` (LMDB), or Redis or PostgreSQL (`offsets`, see store-engines.ts);
 * - catalog: `<dataDir>/catalog.sqlite` (SQLite through Kysely, {@link Catalog}), or PostgreSQL (`catalog`).
 *
 * One broker per data directory: `<dataDir>/broker.lock` refuses a second live one (`DATA_DIR_LOCKED`). A data
 * directory missing its log, or an offset store missing the offsets of groups that committed, is refused
 * (`STORAGE_ERROR`) rather than served as if new.
 *
 * Durability: a produce resolves once its records are written, and synced as the topic's flush.policy says
 * (see docs/storage-format.md): it survives kill -9 always, power loss under `always`. A commit resolves
 * after LMDB's synced write transaction; a catalog change after SQLite's FULL-synchronous commit.
 */
import fs from 'node:fs';
import path from 'node:path';
import { systemClock } from './clock.js';
import type { Clock } from './clock.js';
import type { Catalog } from './catalog/catalog.js';
import { dataDirId, lockDataDir } from './data-dir-lock.js';
import { GroupCoordinator } from './coordinator/group-coordinator.js';
import { ShareGroups } from './coordinator/share-groups.js';
import { SHARE_DEFAULTS } from './coordinator/subscriptions.js';
import { offsetOutOfRange } from './coordinator/out-of-range.js';
import { DeadLetters } from './delivery/dead-letters.js';
import { checkNackRecords, recordsAsBatches, Retries } from './delivery/retries.js';
import { fetchPartitionBatches, fetchPartitions } from './delivery/fetch.js';
import type { FetchLimits, FetchTarget } from './delivery/fetch.js';
import { WebhookDispatcher } from './delivery/webhook.js';
import type { WebhookOptions } from './delivery/webhook.js';
import type { GroupOffset, OffsetStore } from './offsets/offset-store.js';
import type {
  BatchFetchResult, BinaryDataApi, FetchedPartition, ProduceBatchesRequest, ProduceBatchesResult,
  AlterTopicRequest, CheckpointDescription, CheckpointRequest, CommitRequest, CompactionResult, CreateTopicRequest,
  DeleteRecordsRequest, DeleteRecordsResult, DeleteTopicResult, FetchRequest, FetchResult, GroupDescription, GroupSummary, HeartbeatRequest,
  JoinGroupRequest, LeaveGroupRequest, MemberAssignment, OnelogApi, ProduceRequest, ProduceResult,
  ProducerIdentity, ResetOffsetsRequest, ResetOffsetsResult, RetentionResult, SubscribeRequest, SubscribeResult,
  TopicDescription, TopicSummary, NackBatchRequest, NackRequest, NackResult, DeadLetterList, DeadLetterListRequest, RedriveRequest, RedriveResult,
  PurgeRequest, PurgeResult, AcknowledgeAlertRequest, AlertListRequest, AlertSink, DescribeTopicOptions, GroupAlert, GroupHistory,
  ShareAckRequest, ShareAckResult, SharedSections, ShareFetchRequest, ShareFetchResult,
} from './protocol/api.js';
import type { SubscriptionRecord } from './catalog/catalog.js';
import { sharedRecords } from './protocol/data-frames.js';
import { OnelogError } from './protocol/errors.js';
import { pickTopicConfig } from './protocol/topic-config.js';
import { checkCommitRequest, checkJoinRequest, checkMember, checkResetRequest, checkSubscribeRequest } from './coordinator/request-checks.js';
import { checkGroupId, checkInteger } from './protocol/validate.js';
import { FileCache } from './storage/file-cache.js';
import { makeDir, narrowDataDir } from './storage/file-modes.js';
import type { FileCacheStats } from './storage/file-cache.js';
import { LogManager } from './storage/log-manager.js';
import { defaultMaxOpenFiles } from './storage/open-files-limit.js';
import { DEFAULT_DEDUPE_BUFFER_BYTES, LogCleaner } from './storage/log-cleaner.js';
import { silentLogger } from './logger.js';
import { BrokerMetrics } from './monitoring/metrics.js';
import { Users } from './security/users.js';
import { Acls } from './security/acls.js';
import { OutboundPolicy } from './security/outbound.js';
import { Audit } from './security/audit.js';
import type { MetricsOptions } from './monitoring/metrics.js';
import { Monitor } from './monitoring/monitor.js';
import { BackgroundTasks } from './background-tasks.js';
import { finishTopicDeletions, TopicAdmin } from './topic-admin.js';
import { ProducePath } from './produce-path.js';
import type { MonitorOptions } from './monitoring/monitor.js';
import type { Logger } from './logger.js';
import { WriteFence } from './write-fence.js';
import { checkStoreEngines, describeOffsetStore, openCatalog, openObjectLogs, openOffsetStore } from './store-engines.js';
import { findLostOffsets, lostOffsetsRefusal, pauseLostOffsets } from './coordinator/lost-offsets.js';
import type { Logs } from './storage/logs.js';
import type { StoreEngines } from './store-engines.js';
import type { ClusterMembership } from './cluster/membership.js';
import type { BrokerInfo } from './cluster/brokers.js';

/**
 * Options of the embedded broker. `catalog` and `offsets` ({@link StoreEngines}) move those two stores to
 * PostgreSQL and Redis (cluster mode, docs/cluster.md); by default they live in the data directory.
 */
export interface BrokerOptions extends StoreEngines {
  /** Directory holding the log, and the offset store and the catalog unless `catalog` / `offsets` name servers; created if missing. */
  dataDir: string;
  /** @default the system clock */
  clock?: Clock;
  /** @default no logging */
  logger?: Logger;
  /** Largest record accepted (key + value + headers), bytes. @default 1048576 (1 MiB, as Kafka's max.message.bytes) */
  maxRecordBytes?: number;
  /** Produce splits a partition's records into batches of about this size, bytes. @default 1048576 */
  maxBatchBytes?: number;
  /** Most records one produce request may carry (`REQUEST_TOO_LARGE` beyond). @default 100000 */
  maxRecordsPerRequest?: number;
  /**
   * How often retention runs over every topic, ms; 0 = never on a schedule (only on demand).
   * @default 300000 (Kafka's log.retention.check.interval.ms)
   */
  retentionCheckIntervalMs?: number;
  /** How often compacted topics are compacted in the background, ms; 0 = only on demand. @default 15000 */
  compactionIntervalMs?: number;
  /** How often members past their session timeout are removed, ms; 0 = only when their group is next used. @default 500 */
  sessionCheckIntervalMs?: number;
  /** Webhook delivery (push subscriptions with a pushEndpoint): ack deadline, retry backoff, batch limits. @default see WebhookOptions */
  webhooks?: WebhookOptions;
  /**
   * File descriptors the log store may hold open at once (segments, indexes, checkpoints; see
   * storage/file-cache.ts); at least 8. Files are opened on demand and closed least-recently-used beyond it.
   * @default {@link defaultMaxOpenFiles}: the process's soft open-files limit less room for connections,
   *   LMDB and SQLite
   */
  maxOpenFiles?: number;
  /**
   * Most bytes of compaction's key map, shared by every partition (Kafka's `log.cleaner.dedupe.buffer.size`;
   * `serve --cleaner-dedupe-buffer-bytes`): 24 bytes a key, so the default maps about 2.5 million keys per
   * pass; a partition with more keys is compacted in several passes. Partitions compact one at a time, each
   * holding only as much as its log can need; none is held between compactions. From 48 to 2147483648 (2 GiB).
   * @default 67108864 (64 MiB, {@link DEFAULT_DEDUPE_BUFFER_BYTES})
   */
  cleanerDedupeBufferBytes?: number;
  /**
   * How often the log store closes files unused since the check before, ms, so that at rest its descriptors go
   * back to connections; 0 = never. @default 30000 (a file closes after 30 to 60 s unused)
   */
  fileIdleCheckIntervalMs?: number;
  /** Alert evaluation (its interval), notification delivery and the health history. @default see MonitorOptions */
  monitoring?: MonitorOptions;
  /** Bounds of the per-partition metric series. @default see MetricsOptions */
  metrics?: MetricsOptions;
  /** Answer clients not on loopback while no user exists (protected mode off; `serve --insecure`). @default false */
  insecure?: boolean;
  /**
   * Allow webhooks (push endpoints, alert sinks) to internal destinations: loopback, private, link-local and the other
   * addresses that are not globally reachable, and the machine's own addresses (`serve --webhook-allow-private`;
   * docs/security.md). @default false: they are refused, `FORBIDDEN` (`reason: private-address`) for a URL naming one,
   * a failed POST for a host name resolving to one
   */
  webhookAllowPrivate?: boolean;
  /**
   * Refuse webhooks to internal destinations (`serve --webhook-deny-private`): the default, kept for compatibility.
   * @default true unless webhookAllowPrivate; both true is `INVALID_CONFIG`
   */
  webhookDenyPrivate?: boolean;
  /**
   * Start even though the offset store holds none of the committed offsets of groups the catalog says committed (a
   * lost or restored `offsets/data.mdb`, a flushed Redis; `serve --allow-missing-offsets`, docs/guarantees.md). Their
   * partitions are then paused for those groups with `OFFSET_OUT_OF_RANGE` and an `offset-out-of-range` alert, never
   * started at their start policy, until `onelog offsets reset ... --execute` decides where each resumes.
   * @default false: such a start is refused with `STORAGE_ERROR` naming the offset store
   */
  allowMissingOffsets?: boolean;
}

const FETCH_DEFAULTS = { maxRecords: 500, maxBytes: 1024 * 1024, maxWaitMs: 0 };
const MAX_WAIT_MS = 30_000;

export class Broker implements OnelogApi, BinaryDataApi {
  private closed = false;
  private background!: BackgroundTasks;
  /** Creates, alters, describes topics; moves their log start offsets on demand. Set once open. */
  private topics!: TopicAdmin;
  /** Appends produced records and batches; issues producer ids. Set once open. */
  private producing!: ProducePath;
  /** The users requests are authenticated against (docs/security.md); set once open. */
  users!: Users;
  /** Who may do what on which topic, group or the cluster (docs/security.md); set once open. */
  acls!: Acls;
  /** Who did which offset, data or user operation (docs/security.md); set once open. */
  audit!: Audit;
  /** Prometheus metrics (`GET /metrics`, docs/monitoring.md); set once open. */
  metrics!: BrokerMetrics;
  /** POSTs the records of webhook subscriptions (docs/delivery.md); set once open. */
  private webhooks: WebhookDispatcher | null = null;
  /** Where webhooks may go. Set once open. */
  private outbound!: OutboundPolicy;
  /** Nacked records through retry tiers (docs/retries.md); set once open. */
  private retries!: Retries;
  private deadLetters!: DeadLetters;
  /** Share groups' partitions and members (docs/consumer-groups.md); set once open. */
  private shareGroups!: ShareGroups;
  /** This broker in its cluster (registry, group leases); null on the embedded default. */
  private membership: ClusterMembership | null = null;

  private constructor(
    private readonly catalog: Catalog,
    private readonly offsets: OffsetStore,
    private readonly logs: Logs,
    private readonly files: FileCache,
    private readonly groups: GroupCoordinator,
    private readonly monitor: Monitor,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly unlock: () => void,
  ) {}

  /**
   * Opens the broker on `options.dataDir`: migrates the catalog, opens the offset store, and opens every
   * topic's partitions, recovering torn log tails.
   * @throws OnelogError `DATA_DIR_LOCKED`; `STORAGE_ERROR` for a missing log directory, or for an offset store that
   *   holds none of the offsets of groups the catalog says committed (unless `allowMissingOffsets`); `INVALID_CONFIG`
   */
  static async open(options: BrokerOptions): Promise<Broker> {
    checkStoreEngines(options);
    const outbound = new OutboundPolicy({ allowPrivate: options.webhookAllowPrivate, denyPrivate: options.webhookDenyPrivate });
    const clock = options.clock ?? systemClock;
    const logger = options.logger ?? silentLogger;
    makeDir(options.dataDir);
    narrowDataDir(options.dataDir, logger);
    const unlock = lockDataDir(options.dataDir);
    try {
      return await Broker.openLocked(options, clock, logger, unlock, outbound);
    } catch (err) {
      unlock();
      await outbound.close();
      throw err;
    }
  }

  private static async openLocked(options: BrokerOptions, clock: Clock, logger: Logger, unlock: () => void, outbound: OutboundPolicy): Promise<Broker> {
    const files = new FileCache({ maxOpenFiles: options.maxOpenFiles ?? defaultMaxOpenFiles() });
    const cleaner = new LogCleaner({ dedupeBufferBytes: options.cleanerDedupeBufferBytes ?? DEFAULT_DEDUPE_BUFFER_BYTES });
    const fence = new WriteFence(clock, logger);
    const catalog = await openCatalog(options, options.dataDir, fence, clock, logger);
    const topics = await catalog.listTopics();
    const { logs, membership }: { logs: Logs; membership: ClusterMembership | null } = await (options.log === undefined
      ? Broker.openLocalLogs(options, catalog, topics, files, cleaner, clock, logger).then((local) => ({ logs: local, membership: null }))
      : openObjectLogs(options, catalog, clock, logger, { intervalMs: options.compactionIntervalMs, cleaner })).catch(async (err: unknown) => {
      await catalog.close();
      throw err;
    });
    const offsets = await openOffsetStore(options, options.dataDir, fence, () => logs.ensureDiskRoom(0), logger).catch(async (err: unknown) => {
      await membership?.close();
      await logs.close();
      await catalog.close();
      throw err;
    });
    fence.onFailure((failure) => logs.stopWrites(failure));
    membership?.onReplaced((failure) => logs.stopWrites(failure));
    await finishTopicDeletions(catalog, offsets, logs, logger);
    const started = Date.now();
    const report = await logs.start(topics.map((t) => ({ name: t.name, partitions: t.partitions, config: pickTopicConfig(t) })));
    logger.info({ ...report, maxOpenFiles: files.maxOpenFiles, ms: Date.now() - started }, 'opened the log store');
    const offsetStore = describeOffsetStore(options, options.dataDir);
    const lost = await findLostOffsets(catalog, offsets, new Map(topics.map((t) => [t.name, t.partitions])));
    if (lost.length > 0 && options.allowMissingOffsets !== true) {
      await membership?.close();
      await logs.close();
      await offsets.close();
      await catalog.close();
      throw lostOffsetsRefusal(lost, offsetStore, options.dataDir);
    }
    const monitor = await Monitor.open(catalog, offsets, logs, clock, logger, {
      ...options.monitoring, notifications: { ...options.monitoring?.notifications, outbound },
      scheduleGate: logs.jobGate?.('job:alerts') ?? options.monitoring?.scheduleGate, // cluster mode: one broker's timer evaluates
    });
    if (lost.length > 0) await pauseLostOffsets(lost, { catalog, logs, alerts: monitor.alerts, clock, logger }, offsetStore);
    // A corrupt batch found in a partition's files raises a storage-corruption alert for the groups reading it.
    logs.watchCorruption?.((topic) => void monitor.evaluate({ topic }));
    const groups: GroupCoordinator = new GroupCoordinator(catalog, offsets, logs, clock, logger, monitor, {
      reset: async (groupId, topic) => {
        broker.retries.forget(groupId, topic);
        if ((await groups.findSubscription(groupId, topic))?.type === 'share') await broker.shareGroups.reset(groupId, topic);
        void monitor.evaluate({ groupId });
      },
      committed: (groupId, topic, offsets) => {
        broker.retries.committed(groupId, topic, offsets);
        // A commit moves the group forward: it can only clear conditions, so only a group with one open is evaluated.
        if (monitor.alerts.hasOpen(groupId)) void monitor.evaluate({ groupId });
      },
      deadLetterDepth: (sub): Promise<number> => broker.deadLetters.depth(sub),
      deadLetterIfSpent: (groupId, topic, partition, offset, crashes) => broker.retries.deadLetterIfSpent(groupId, topic, partition, offset, crashes),
    }, membership?.groups);
    await groups.start();
    const broker: Broker = new Broker(catalog, offsets, logs, files, groups, monitor, clock, logger, unlock);
    broker.membership = membership;
    broker.outbound = outbound;
    broker.acls = await Acls.open(catalog, logger);
    broker.users = await Users.open(catalog, clock, logger, broker.acls, options.insecure ?? false);
    broker.audit = new Audit(catalog, clock, logger);
    broker.topics = new TopicAdmin(catalog, logs, offsets, groups, monitor, clock, logger);
    broker.deadLetters = new DeadLetters(logs, catalog, clock, logger, monitor.alerts, () => broker.retries);
    broker.metrics = new BrokerMetrics({
      catalog, logs, monitor, deadLetterDepth: (sub) => broker.deadLetters.depth(sub), shareGroups: () => broker.shareGroups.gauges(),
    }, options.metrics);
    const limits = {
      maxRecordBytes: options.maxRecordBytes ?? 1024 * 1024, maxBatchBytes: options.maxBatchBytes ?? 1024 * 1024,
      maxRecordsPerRequest: options.maxRecordsPerRequest ?? 100_000,
    };
    broker.producing = new ProducePath(logs, catalog, clock, broker.metrics, limits, (topic) => monitor.recordsArrived(topic), await catalog.lastProducerId());
    broker.retries = new Retries({
      logs, offsets, catalog, clock, retryTopics: groups.retryTopics, findSubscription: (groupId, topic) => groups.findSubscription(groupId, topic),
      createTopic: (request) => broker.createTopic(request),
      deadLettered: async (sub) => void (await broker.deadLetters.checkAlert(sub)),
    });
    broker.shareGroups = new ShareGroups({
      logs, offsets, clock, logger,
      subscription: async (groupId, topic) => {
        const sub = await groups.findSubscription(groupId, topic);
        if (sub?.type === 'share') return sub;
        throw new OnelogError('INVALID_REQUEST', `group ${groupId} has no share subscription to ${topic}: create one with ` +
          `onelog groups create ${groupId} --topic ${topic} --type share${sub ? ` (it is a ${sub.type} group)` : ''}`, { groupId, topic });
      },
      deadLetter: (sub, partition, offset, deliveries, reason) => broker.retries.deadLetterShared(sub, partition, offset, deliveries, reason),
      commit: (groupId, topic, partition, offset) => groups.commitShareStart(groupId, topic, partition, offset),
    });
    broker.webhooks = new WebhookDispatcher(broker, logger, { ...options.webhooks, outbound: broker.outbound });
    await broker.webhooks.start(await catalog.listWebhookSubscriptions());
    // Retention visits every partition (opening idle ones just for it); compaction only those loaded: a partition
    // not opened since start-up had no appends since, and is compacted when next used or on demand.
    broker.background = new BackgroundTasks(logger, async () => (await catalog.listTopics()).map((t) => t.name));
    broker.background.everyTopic(options.retentionCheckIntervalMs ?? 300_000, 'retention', async (topic) => {
      const moved = await Promise.all(await broker.logs.visit(topic, (log) => Promise.resolve(log.enforceRetention()).catch((err: unknown) => {
        logger.warn({ topic, partition: log.partition, err: (err as Error).message }, 'retention failed');
        return null;
      }), (partition, err) => logger.warn({ topic, partition, err: err.message }, 'retention failed')));
      if (moved.some((m) => m !== null)) await monitor.evaluate({ topic });
    }, logs.jobGate?.('job:retention')); // cluster mode: one broker at a time
    broker.background.everyTopic(options.compactionIntervalMs ?? 15_000, 'compaction', (topic) =>
      Promise.all(broker.logs.loaded(topic).map((log) => log.compact())));
    broker.background.repeat(options.sessionCheckIntervalMs ?? 500, 'session expiry', () => groups.expireMembers());
    broker.background.repeat(options.sessionCheckIntervalMs ?? 500, 'share member and lock expiry', () => broker.shareGroups.expire());
    broker.background.repeat(options.fileIdleCheckIntervalMs ?? 30_000, 'closing idle files', async () => files.closeIdle());
    for (const job of logs.backgroundJobs?.() ?? []) broker.background.repeat(job.intervalMs, job.name, job.run);
    monitor.start();
    return broker;
  }

  /**
   * The log on the data directory's segment files: the catalog must describe this data directory's log (one broker
   * per catalog while the log is local), and the log directory must hold the catalog's topics.
   * @throws OnelogError `INVALID_CONFIG` for a catalog of another data directory; `STORAGE_ERROR` for a missing log directory
   */
  private static async openLocalLogs(
    options: BrokerOptions, catalog: Catalog, topics: readonly { name: string; partitions: number }[], files: FileCache, cleaner: LogCleaner,
    clock: Clock, logger: Logger,
  ): Promise<LogManager> {
    const ownId = dataDirId(options.dataDir);
    const owner = await catalog.claimLogOwner(ownId);
    if (owner !== ownId && owner.startsWith('s3://')) {
      throw new OnelogError('INVALID_CONFIG', `the catalog describes the log in object storage at ${owner}: start this broker with ` +
        '--log s3://BUCKET/PREFIX?endpoint=URL naming it and --broker-id N (docs/cluster.md)', { dataDir: options.dataDir, ownerId: owner });
    }
    if (owner !== ownId) {
      throw new OnelogError('INVALID_CONFIG', `the catalog describes the log of another data directory (${owner}), not this one's ` +
        `(${options.dataDir}, ${ownId}): while the log is in a data directory, one broker per catalog. Start this broker on that data ` +
        'directory, give it a catalog of its own, or put the log in object storage (--log s3://..., docs/cluster.md)',
      { dataDir: options.dataDir, dataDirId: ownId, ownerId: owner });
    }
    const logDir = path.join(options.dataDir, 'log');
    if (!holdsAnyPartition(logDir, topics)) {
      // Not a half-created topic to repair: every topic's records are gone from where they should be.
      const shared = options.catalog === undefined ? '' : ' With --catalog on PostgreSQL and no --log the log is in the data directory: ' +
        'start each broker of that catalog on its own data directory, one broker per catalog (docs/cluster.md).';
      throw new OnelogError('STORAGE_ERROR', `the catalog lists ${topics.length} topic(s) but the log directory ${logDir} is missing ` +
        'or holds none of their partitions: is a volume not mounted, or was the data directory copied without it? Put it back; ' +
        `to start over, use an empty --data-dir.${shared}`, { dataDir: options.dataDir, topics: topics.length });
    }
    return new LogManager(logDir, { clock, logger, indexIntervalBytes: 4096, files, cleaner });
  }

  /** @see TopicAdmin.create */
  async createTopic(request: CreateTopicRequest): Promise<TopicDescription> {
    this.checkOpen();
    return this.topics.create(request);
  }

  /** @see TopicAdmin.alter */
  async alterTopic(request: AlterTopicRequest): Promise<TopicDescription> {
    this.checkOpen();
    return this.topics.alter(request);
  }

  async listTopics(): Promise<TopicSummary[]> {
    this.checkOpen();
    return this.topics.list();
  }

  /** @see TopicAdmin.describe */
  async describeTopic(topic: string, options: DescribeTopicOptions = {}): Promise<TopicDescription> {
    this.checkOpen();
    const refreshing = this.refresh(topic);
    if (refreshing) await refreshing;
    return this.topics.describe(topic, options);
  }

  /** @see TopicAdmin.deleteRecords */
  async deleteRecords(request: DeleteRecordsRequest): Promise<DeleteRecordsResult> {
    this.checkOpen();
    const refreshing = this.refresh(request.topic, [request.partition]);
    if (refreshing) await refreshing;
    return this.topics.deleteRecords(request);
  }

  /** @see TopicAdmin.delete; the webhooks of the deleted subscriptions stop, its share-partitions and metrics go. */
  async deleteTopic(topic: string): Promise<DeleteTopicResult> {
    this.checkOpen();
    const { subscriptions, ...result } = await this.topics.delete(topic);
    this.shareGroups.topicDeleted(topic);
    this.metrics.deleteTopic(topic);
    for (const sub of subscriptions) if (sub.pushEndpoint) await this.webhooks?.refresh({ ...sub, pushEndpoint: null });
    return result;
  }

  /** @see TopicAdmin.enforceRetention */
  async enforceRetention(topic: string): Promise<RetentionResult> {
    this.checkOpen();
    return this.topics.enforceRetention(topic);
  }

  /** @see TopicAdmin.compact */
  async compactTopic(request: { topic: string; wait?: boolean }): Promise<CompactionResult> {
    this.checkOpen();
    return this.topics.compact(request);
  }

  /**
   * The first offset of a partition whose record's timestamp is >= `timestamp` (ms), or the high watermark when
   * every record is older (Kafka's ListOffsets by timestamp).
   * @throws OnelogError `UNKNOWN_TOPIC`, `UNKNOWN_PARTITION`
   */
  async offsetForTimestamp(topic: string, partition: number, timestamp: number): Promise<number> {
    this.checkOpen();
    const refreshing = this.refresh(topic, [partition]);
    if (refreshing) await refreshing;
    return this.logs.get(topic, partition).offsetForTimestamp(timestamp);
  }

  /** A group's committed offsets, every topic (none for a group that does not exist), as Kafka's OffsetFetch reads them. */
  async committedOffsets(groupId: string): Promise<GroupOffset[]> {
    this.checkOpen();
    const committing = this.shareGroups.commitStarts(checkGroupId(groupId));
    if (committing) await committing;
    return this.offsets.list(groupId);
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
    return this.catalog.groupConfigs(checkGroupId(groupId));
  }

  /**
   * Replaces a group's Kafka configs, durably, creating the group (with no subscription yet) if it does not exist, as
   * Kafka keeps a group's configs before its first member.
   */
  async setGroupConfigs(groupId: string, configs: Readonly<Record<string, string>>): Promise<void> {
    this.checkOpen();
    await this.catalog.setGroupConfigs(checkGroupId(groupId), configs, this.clock.now());
  }

  /**
   * Cluster mode: registers this broker in the cluster with the addresses clients reach it at (its HTTP API, its
   * Kafka listener), so that `NOT_COORDINATOR` answers and Kafka's Metadata name them; heartbeats from then on.
   * Nothing on the embedded default.
   * @throws OnelogError `ALREADY_EXISTS` if a live broker has this broker id; `STORAGE_ERROR`
   */
  async advertise(addresses: { url: string; kafkaAddress?: string | null }): Promise<void> {
    this.checkOpen();
    await this.membership?.advertise(addresses);
  }

  /**
   * The live brokers of the cluster, by id (those advertised, heartbeat within 10 s); null on the embedded default.
   * @throws OnelogError `STORAGE_ERROR`
   */
  async liveBrokers(): Promise<BrokerInfo[] | null> {
    this.checkOpen();
    return this.membership === null ? null : this.membership.liveBrokers();
  }

  /** This broker's id in its cluster (`--broker-id`), or null on the embedded default. */
  get brokerId(): number | null {
    return this.membership?.brokerId ?? null;
  }

  /**
   * Cluster mode: each partition's sequencer among `topics`, the broker holding its lease now, by topic then
   * partition (Kafka's Metadata); partitions nobody holds are left out (the next broker to produce to one takes it).
   * Null on the embedded default, where this broker leads every partition.
   * @throws OnelogError `STORAGE_ERROR`
   */
  async partitionLeaders(topics: readonly string[]): Promise<Map<string, Map<number, number>> | null> {
    this.checkOpen();
    return (await this.logs.partitionLeaders?.(topics)) ?? null;
  }

  /**
   * Cluster mode: the broker coordinating `groupId` now, the holder of its lease `group:<groupId>` (Kafka's
   * FindCoordinator); null when nobody holds it (the next broker asked for the group takes it) and on the embedded
   * default (this broker coordinates every group).
   * @throws OnelogError `STORAGE_ERROR`
   */
  async groupCoordinator(groupId: string): Promise<number | null> {
    this.checkOpen();
    return (await this.membership?.groups.holder(groupId)) ?? null;
  }

  /** The log store's file-handle cache: descriptors open, budget, hits, opens, evictions (diagnostics, benchmarks). */
  fileCacheStats(): FileCacheStats {
    return this.files.stats();
  }

  /**
   * Brings a topic up to date with what other brokers did (cluster mode, see {@link Logs.refresh}): its layout, and
   * the positions of `partitions` (`'all'`: every one). Input not yet checked is left for the checks that follow.
   * @returns undefined when there is nothing to wait for (the local engine), so a caller that does not wait keeps
   *   its place in the order of the group's requests
   */
  private refresh(topic: unknown, partitions: readonly unknown[] | 'all' = []): Promise<void> | undefined {
    if (typeof topic !== 'string') return undefined;
    const layout = this.logs.refresh(topic);
    if (layout === undefined) return undefined;
    return layout.then(async () => {
      if (!this.logs.has(topic)) return;
      const wanted = partitions === 'all' ? [...Array(this.logs.partitionCount(topic)).keys()]
        : partitions.filter((p): p is number => typeof p === 'number');
      if (wanted.length > 0) await this.logs.refresh(topic, wanted);
    });
  }

  private checkOpen(): void {
    if (this.closed) throw new OnelogError('BROKER_CLOSED', 'the broker is closed');
  }

  /**
   * Reads partitions of a topic from given offsets (long-poll up to `maxWaitMs`). A partition whose offset is
   * outside its log answers with `OFFSET_OUT_OF_RANGE` as a value, naming the group when one is given. A
   * member's fetch is fenced (see {@link GroupCoordinator.checkFetch}), and an offset below the log start
   * applies the subscription's out-of-range policy (pause, or jump via `nextOffset`).
   * @throws OnelogError `UNKNOWN_MEMBER_ID`, `ILLEGAL_GENERATION`, `NOT_ASSIGNED` for a member's fetch
   */
  async fetch(request: FetchRequest): Promise<FetchResult> {
    const result = await this.groupFetch(request, fetchPartitions, (parts) => parts);
    let bytes = 0;
    let records = 0;
    for (const p of result.partitions) {
      records += p.records.length;
      for (const r of p.records) bytes += (r.key?.length ?? 0) + (r.value?.length ?? 0);
    }
    this.metrics.fetched(request.topic, records, bytes);
    return result;
  }

  /**
   * As {@link fetch}, but answers each partition's batches as stored, undecoded (the binary data path):
   * whole batches, so the answer may hold a few records more than `maxRecords` (the reader trims).
   */
  async fetchBatches(request: FetchRequest): Promise<BatchFetchResult> {
    const result = await this.groupFetch(request, fetchPartitionBatches, (parts) => parts.map(({ records, ...p }) => ({ ...p, batches: recordsAsBatches(records) })));
    // Offsets read past, as records: whole batches are answered, and the reader trims.
    const records = result.partitions.reduce((sum, p, i) => sum + Math.max(0, p.nextOffset - request.partitions[i]!.offset), 0);
    this.metrics.fetched(request.topic, records, result.partitions.reduce((sum, p) => sum + p.batches.length, 0));
    return result;
  }

  /**
   * What {@link fetch} and {@link fetchBatches} share: checks, member fencing, long-poll, out-of-range handling.
   * A group's fetch of a topic with retry tiers (or of a tier) reads through {@link Retries.fetch}, whose
   * decoded records `fromRecords` shapes as `read` would have.
   */
  private async groupFetch<P extends Pick<FetchedPartition, 'partition' | 'error' | 'nextOffset' | 'logStartOffset' | 'highWatermark'>>(
    request: FetchRequest,
    read: (targets: FetchTarget[], limits: FetchLimits) => Promise<P[]>,
    fromRecords: (partitions: FetchedPartition[]) => P[],
  ): Promise<{ topic: string; partitions: P[]; generationId?: number; assignmentChanged?: boolean }> {
    this.checkOpen();
    const { topic, groupId, memberId } = request;
    if (!Array.isArray(request.partitions) || !request.partitions.every((p) => p !== null && typeof p === 'object')) {
      throw new OnelogError('INVALID_REQUEST', 'a fetch names its partitions: [{ partition, offset }]', { topic });
    }
    if (groupId !== undefined) checkGroupId(groupId);
    if (memberId !== undefined && groupId === undefined) {
      throw new OnelogError('INVALID_REQUEST', 'a fetch with memberId needs its groupId', { memberId });
    }
    checkMember(request);
    const refreshing = this.refresh(topic, request.partitions.map((p) => p.partition));
    if (refreshing) await refreshing;
    const claiming = memberId === undefined ? undefined : this.groups.claim(groupId!); // cluster mode: the group's coordinator serves it
    if (claiming) await claiming;
    const membership = memberId === undefined ? undefined : this.groups.checkFetch({ ...request, memberId });
    // A member's suspect records (ones a member ended holding) are handed out one at a time.
    const caps = memberId === undefined ? [] : this.groups.fetchCaps({ ...request, groupId: groupId!, memberId });
    const targets = request.partitions.map((p, i) => ({
      log: this.logs.get(topic, p.partition),
      offset: checkInteger(p.offset, 'offset', 0, Number.MAX_SAFE_INTEGER, 'INVALID_OFFSET'),
      maxRecords: caps[i],
    }));
    const limits = {
      maxRecords: checkInteger(request.maxRecords ?? FETCH_DEFAULTS.maxRecords, 'maxRecords', 1),
      maxBytes: checkInteger(request.maxBytes ?? FETCH_DEFAULTS.maxBytes, 'maxBytes', 1),
      maxWaitMs: checkInteger(request.maxWaitMs ?? FETCH_DEFAULTS.maxWaitMs, 'maxWaitMs', 0, MAX_WAIT_MS),
    };
    const partitions = groupId !== undefined && this.retries.filters(groupId, topic)
      ? fromRecords(await this.retries.fetch(groupId, topic, targets, limits))
      : await read(targets, limits);
    if (memberId !== undefined) {
      this.groups.handedOut({ ...request, groupId: groupId!, memberId }, partitions);
      if (request.ahead !== true) await this.groups.afterFetch({ ...request, groupId: groupId! }, partitions);
      return { topic, partitions, ...membership };
    }
    if (groupId !== undefined) {
      partitions.forEach((p, i) => {
        if (p.error?.code !== 'OFFSET_OUT_OF_RANGE') return;
        // The position the group fetched from is its committed offset or what it read since.
        p.error = offsetOutOfRange({
          groupId, topic, partition: p.partition, committedOffset: targets[i]!.offset,
          logStartOffset: p.logStartOffset, highWatermark: p.highWatermark,
        }).toJSON();
      });
    }
    return { topic, partitions };
  }

  /**
   * @see ProducePath.produce; in cluster mode, a partition another broker leads is refused `NOT_LEADER_OR_FOLLOWER`
   * naming it (`leaderBrokerId`, `leaderUrl`)
   */
  async produce(request: ProduceRequest): Promise<ProduceResult> {
    this.checkOpen();
    const refreshing = this.refresh(request.topic);
    if (refreshing) await refreshing;
    return this.naming(this.producing.produce(request));
  }

  /** @see ProducePath.produceBatches; refusals as {@link produce} */
  async produceBatches(request: ProduceBatchesRequest): Promise<ProduceBatchesResult> {
    this.checkOpen();
    const refreshing = this.refresh(request.topic);
    if (refreshing) await refreshing;
    return this.naming(this.producing.produceBatches(request));
  }

  /** Adds the leader's URL (`leaderUrl`, null if not live) to a `NOT_LEADER_OR_FOLLOWER` refusal: the client sends the write there. */
  private async naming<T>(writing: Promise<T>): Promise<T> {
    try {
      return await writing;
    } catch (err) {
      const leader = (err as OnelogError).context?.leaderBrokerId;
      if (this.membership === null || (err as OnelogError).code !== 'NOT_LEADER_OR_FOLLOWER' || typeof leader !== 'number') throw err;
      const url = (await this.membership.liveBrokers().catch(() => [])).find((b) => b.brokerId === leader)?.url ?? null;
      const { code, message, context } = err as OnelogError;
      throw new OnelogError(code, url === null ? message : `${message} (${url})`, { ...context, leaderUrl: url });
    }
  }

  /** @see ProducePath.initProducerId */
  async initProducerId(): Promise<ProducerIdentity> {
    this.checkOpen();
    return this.producing.initProducerId();
  }

  /**
   * A share group member's acquisition: records of the topic's partitions, each locked for it (see {@link ShareGroups.acquire}).
   * In cluster mode the group's coordinator serves it.
   * @throws OnelogError `INVALID_REQUEST` (not a share group, a bad field), `UNKNOWN_TOPIC`, `NOT_COORDINATOR`
   */
  async shareFetch(request: ShareFetchRequest): Promise<ShareFetchResult> {
    return sharedRecords(await this.shareFetchSections(request));
  }

  /**
   * {@link shareFetch} with the records as the log stores them (sections of the stored batches: nothing decoded), for
   * the binary data path.
   * @throws OnelogError as {@link shareFetch}
   */
  async shareFetchSections(request: ShareFetchRequest): Promise<SharedSections> {
    this.checkOpen();
    checkGroupId(request.groupId);
    const refreshing = this.refresh(request.topic, 'all');
    if (refreshing) await refreshing;
    this.logs.partitionCount(request.topic); // UNKNOWN_TOPIC
    const claiming = this.groups.claim(request.groupId);
    if (claiming) await claiming;
    const result = await this.shareGroups.acquire(request);
    let records = 0;
    let bytes = 0;
    let redeliveries = 0;
    for (const p of result.partitions) {
      records += p.deliveryCounts.length;
      for (const s of p.sections) bytes += s.bytes.length;
      for (const count of p.deliveryCounts) if (count > 1) redeliveries++;
    }
    this.metrics.fetched(request.topic, records, bytes);
    this.metrics.shareDelivered(request.groupId, request.topic, records - redeliveries, redeliveries);
    return result;
  }

  /**
   * A share group member's acknowledgements of records it holds (see {@link ShareGroups.acknowledge}).
   * @throws OnelogError `INVALID_REQUEST`, `UNKNOWN_TOPIC`, `NOT_COORDINATOR`; a partition's `INVALID_RECORD_STATE` is answered as a value
   */
  async shareAcknowledge(request: ShareAckRequest): Promise<ShareAckResult> {
    this.checkOpen();
    checkGroupId(request.groupId);
    this.logs.partitionCount(request.topic); // UNKNOWN_TOPIC
    const claiming = this.groups.claim(request.groupId);
    if (claiming) await claiming;
    const result = await this.shareGroups.acknowledge(request);
    const taken = new Set(result.partitions.filter((p) => p.error === undefined).map((p) => p.partition));
    const kinds = new Map<string, number>();
    for (const a of request.acks) if (taken.has(a.partition)) kinds.set(a.type, (kinds.get(a.type) ?? 0) + 1);
    for (const [kind, n] of kinds) this.metrics.shareAcknowledged(request.groupId, request.topic, kind, n);
    return result;
  }

  /** @see GroupCoordinator.subscribe */
  async subscribe(request: SubscribeRequest): Promise<SubscribeResult> {
    this.checkOpen();
    checkSubscribeRequest(request);
    if (request.pushEndpoint !== undefined && request.pushEndpoint !== null) this.outbound.check(request.pushEndpoint, 'pushEndpoint');
    const refreshing = this.refresh(request.topic, 'all');
    if (refreshing) await refreshing;
    this.logs.partitionCount(request.topic); // UNKNOWN_TOPIC
    const retry = await this.retries.preparePolicy(request.groupId, request.topic, request.retry);
    // A share group always has a delivery limit, so a dead-letter topic.
    const share = (await this.groups.groupType(request.groupId) ?? request.type) === 'share';
    const maxDeliveries = request.maxDeliveries ?? (share ? SHARE_DEFAULTS.maxDeliveries : undefined);
    const maxDeliveriesDeadLetterTopic = await this.retries.prepareMaxDeliveries(request.groupId, request.topic, maxDeliveries);
    const result = await this.groups.subscribe({ ...request, retry, ...(maxDeliveriesDeadLetterTopic === undefined ? {} : { maxDeliveriesDeadLetterTopic }) });
    if (result.subscription.type === 'share') await this.shareGroups.configure(request.groupId, request.topic);
    const sub = await this.groups.findSubscription(request.groupId, request.topic);
    if (sub?.deadLetterTopic) await this.deadLetters.checkAlert(sub); // a new alert depth may raise or resolve it
    await this.webhooks?.refresh(result.subscription); // starts, restarts or stops the subscription's webhook dispatcher
    return result;
  }

  /**
   * @see GroupCoordinator.joinGroup
   * @throws OnelogError `INVALID_REQUEST` for a bad option (naming the allowed values)
   */
  async joinGroup(request: JoinGroupRequest): Promise<MemberAssignment> {
    this.checkOpen();
    checkJoinRequest(request);
    for (const topic of request.topics) {
      const refreshing = this.refresh(topic);
      if (refreshing) await refreshing;
      this.logs.partitionCount(topic); // UNKNOWN_TOPIC
    }
    return this.groups.joinGroup(request);
  }

  /** @see GroupCoordinator.heartbeat */
  async heartbeat(request: HeartbeatRequest): Promise<MemberAssignment> {
    this.checkOpen();
    checkGroupId(request.groupId);
    if (!Array.isArray(request.owned)) throw new OnelogError('INVALID_REQUEST', 'owned must be an array of { topic, partition }');
    return this.groups.heartbeat(request);
  }

  /** @see GroupCoordinator.leaveGroup */
  async leaveGroup(request: LeaveGroupRequest): Promise<void> {
    this.checkOpen();
    return this.groups.leaveGroup({ groupId: checkGroupId(request.groupId), memberId: request.memberId, abandoned: request.abandoned === true });
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
    this.shareGroups.checkEmpty(groupId);
    const owned = (await this.catalog.listSubscriptions(groupId)).flatMap((s) =>
      [...this.groups.retryTopics.tiersOf(groupId, s.topic), ...(s.deadLetterTopic ? [s.deadLetterTopic] : [])]);
    await this.groups.deleteGroup(groupId);
    this.retries.deleteGroup(groupId);
    this.shareGroups.deleteGroup(groupId);
    for (const topic of owned) {
      if (!(await this.catalog.getTopic(topic))) continue;
      const refreshing = this.refresh(topic, 'all');
      if (refreshing) await refreshing;
      for (const log of this.logs.partitions(topic)) await log.deleteRecordsBefore(log.highWatermark, 'delete-records');
    }
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
    const refreshing = this.refresh(request.topic, [request.partition]);
    if (refreshing) await refreshing;
    this.logs.get(request.topic, request.partition); // UNKNOWN_TOPIC, UNKNOWN_PARTITION before fencing
    checkNackRecords(request);
    return this.retries.nack(request, await this.groups.checkNack(request));
  }

  /** @see DeadLetters.list */
  async listDeadLetters(request: DeadLetterListRequest): Promise<DeadLetterList> {
    return this.deadLetters.list(request, await this.deadLetterSubscription(request));
  }

  /** @see DeadLetters.redrive */
  async redriveDeadLetters(request: RedriveRequest): Promise<RedriveResult> {
    return this.deadLetters.redrive(request, await this.deadLetterSubscription(request));
  }

  /** @see DeadLetters.purge */
  async purgeDeadLetters(request: PurgeRequest): Promise<PurgeResult> {
    return this.deadLetters.purge(request, await this.deadLetterSubscription(request));
  }

  /** @throws OnelogError `UNKNOWN_GROUP`, `NO_RETRY_POLICY` (no dead-letter topic) */
  private async deadLetterSubscription(request: { groupId: string; topic: string }): Promise<SubscriptionRecord> {
    this.checkOpen();
    const { groupId, topic } = request;
    checkGroupId(groupId);
    if (!(await this.catalog.getGroup(groupId))) throw new OnelogError('UNKNOWN_GROUP', `group ${groupId} does not exist`, { groupId });
    const sub = await this.groups.findSubscription(groupId, topic);
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
    const committing = this.shareGroups.commitStarts(request.groupId);
    if (committing) await committing;
    return this.groups.saveCheckpoint(request);
  }

  /** @see GroupCoordinator.commit */
  async commitOffsets(request: CommitRequest): Promise<void> {
    this.checkOpen();
    checkCommitRequest(request);
    const refreshing = this.refresh(request.topic, request.offsets.map((o) => o.partition));
    if (refreshing) await refreshing;
    return this.groups.commit(request);
  }

  async listGroups(): Promise<GroupSummary[]> {
    this.checkOpen();
    return this.groups.listGroups();
  }

  /** @see GroupCoordinator.describeGroup */
  async describeGroup(groupId: string): Promise<GroupDescription> {
    this.checkOpen();
    checkGroupId(groupId);
    // A share group's start offsets committed, then a state the describe shows has its alert raised first (docs/monitoring.md).
    const committing = this.shareGroups.commitStarts(groupId);
    if (committing) await committing;
    await this.monitor.evaluateGroupNow(groupId);
    return this.shareGroups.describe(await this.groups.describeGroup(groupId));
  }

  /** Evaluates every group's alerts now (the broker also does every `monitoring.alertCheckIntervalMs`). */
  async evaluateAlerts(): Promise<void> {
    this.checkOpen();
    await this.monitor.evaluate();
  }

  /** @see Alerts.list */
  async listAlerts(request: AlertListRequest = {}): Promise<GroupAlert[]> {
    this.checkOpen();
    if (request.groupId !== undefined) checkGroupId(request.groupId);
    return this.monitor.listAlerts(request);
  }

  /** @see Alerts.acknowledge */
  async acknowledgeAlert(request: AcknowledgeAlertRequest): Promise<GroupAlert> {
    this.checkOpen();
    return this.monitor.acknowledgeAlert(request.id, request.requestedBy ?? 'unknown');
  }

  /** @see AlertNotifier.addSink */
  async addAlertSink(url: string): Promise<AlertSink> {
    this.checkOpen();
    return this.monitor.addAlertSink(url);
  }

  async listAlertSinks(): Promise<AlertSink[]> {
    this.checkOpen();
    return this.monitor.listAlertSinks();
  }

  /** @see AlertNotifier.removeSink */
  async removeAlertSink(id: number): Promise<void> {
    this.checkOpen();
    return this.monitor.removeAlertSink(id);
  }

  /**
   * A group's recent health samples per partition, oldest first (the console's charts).
   * @throws OnelogError `UNKNOWN_GROUP`
   */
  async groupHistory(groupId: string): Promise<GroupHistory> {
    this.checkOpen();
    if (!(await this.catalog.getGroup(checkGroupId(groupId)))) throw new OnelogError('UNKNOWN_GROUP', `group ${groupId} does not exist`, { groupId });
    return { groupId, partitions: this.monitor.groupHistory(groupId) };
  }

  /** @see GroupCoordinator.resetOffsets */
  async resetOffsets(request: ResetOffsetsRequest): Promise<ResetOffsetsResult> {
    this.checkOpen();
    checkResetRequest(request);
    const refreshing = this.refresh(request.topic, 'all');
    if (refreshing) await refreshing;
    const committing = this.shareGroups.commitStarts(request.groupId);
    if (committing) await committing;
    return this.groups.resetOffsets(request);
  }

  /**
   * Answers every waiting long-poll fetch now, and lets no new one wait: the first step of a shutdown, so
   * the HTTP server can drain at once.
   */
  endWaits(): void {
    void this.webhooks?.stop(); // aborts in-flight POSTs, leaves the groups; close() awaits it
    this.logs.endWaits();
    this.groups.close();
  }

  /** Waits for pending appends to sync, then closes the logs, the offset store and the catalog. */
  async close(): Promise<void> {
    if (this.closed) return;
    if (this.webhooks) {
      // Webhook dispatchers leave their groups while the broker still answers (endWaits ends their long-polls).
      this.endWaits();
      await this.webhooks.stop();
      if (this.closed) return;
    }
    this.closed = true;
    this.background.stop();
    // A clean stop leaves share groups' committed offsets current (a crash leaves them up to a session tick behind).
    await this.shareGroups.commitStarts()?.catch((err: unknown) => this.logger.warn({ err: (err as Error).message }, 'share group start offsets not committed at close'));
    await this.monitor.stop();
    this.groups.close();
    await this.membership?.close();
    await this.logs.close();
    await this.offsets.close();
    await this.catalog.close();
    await this.outbound.close();
    this.unlock();
  }
}

/** Whether `logDir` holds a directory of some partition of `topics` (vacuously so when there is no topic). */
function holdsAnyPartition(logDir: string, topics: readonly { name: string; partitions: number }[]): boolean {
  if (topics.length === 0) return true;
  if (!fs.existsSync(logDir)) return false;
  const present = new Set(fs.readdirSync(logDir));
  return topics.some((t) => Array.from({ length: t.partitions }, (_, p) => `${t.name}-${p}`).some((name) => present.has(name)));
}

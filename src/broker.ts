/**
 * The embedded broker: opens a data directory and offers every onelog operation in-process
 * ({@link OnelogApi}). It composes the three stores, split by access pattern:
 *
 * - log store: `<dataDir>/log/<topic>-<partition>/` segment files ({@link LogManager});
 * - offset store: `<dataDir>/offsets/` (LMDB, {@link LmdbOffsetStore});
 * - catalog: `<dataDir>/catalog.sqlite` (SQLite through Kysely, {@link Catalog}).
 *
 * One broker per data directory: `<dataDir>/broker.lock` refuses a second live one (`DATA_DIR_LOCKED`).
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
import { openSqliteCatalog } from './catalog/sqlite.js';
import { lockDataDir } from './data-dir-lock.js';
import { GroupCoordinator } from './coordinator/group-coordinator.js';
import { offsetOutOfRange } from './coordinator/out-of-range.js';
import { prepareClientBatch } from './delivery/data-path.js';
import { DeadLetters } from './delivery/dead-letters.js';
import { checkNackRecords, recordsAsBatches, Retries } from './delivery/retries.js';
import { fetchPartitionBatches, fetchPartitions } from './delivery/fetch.js';
import type { FetchLimits, FetchTarget } from './delivery/fetch.js';
import { WebhookDispatcher } from './delivery/webhook.js';
import type { WebhookOptions } from './delivery/webhook.js';
import { LmdbOffsetStore } from './offsets/lmdb-offset-store.js';
import type { OffsetStore } from './offsets/offset-store.js';
import type {
  BatchFetchResult, BinaryDataApi, FetchedPartition, ProduceBatchesRequest, ProduceBatchesResult,
  AlterTopicRequest, CheckpointDescription, CheckpointRequest, CommitRequest, CompactionResult, CreateTopicRequest,
  DeleteRecordsRequest, DeleteRecordsResult, FetchRequest, FetchResult, GroupDescription, GroupSummary, HeartbeatRequest,
  JoinGroupRequest, LeaveGroupRequest, MemberAssignment, OnelogApi, ProduceRecord, ProduceRequest, ProduceResult,
  ProducerIdentity, ResetOffsetsRequest, ResetOffsetsResult, RetentionResult, SubscribeRequest, SubscribeResult,
  TopicDescription, TopicSummary, NackBatchRequest, NackRequest, NackResult, DeadLetterList, DeadLetterListRequest, RedriveRequest, RedriveResult,
  PurgeRequest, PurgeResult, AcknowledgeAlertRequest, AlertListRequest, AlertSink, DescribeTopicOptions, GroupAlert, GroupHistory,
} from './protocol/api.js';
import type { SubscriptionRecord } from './catalog/catalog.js';
import type { CompressionCodec } from './protocol/compression.js';
import { OnelogError } from './protocol/errors.js';
import { Partitioner } from './protocol/partitioner.js';
import { planProduce } from './protocol/produce-plan.js';
import { encodeBatch, readBatchHeader } from './protocol/record-batch.js';
import { pickTopicConfig, resolveTopicConfig } from './protocol/topic-config.js';
import type { CompressionType } from './protocol/topic-config.js';
import { checkJoinRequest, checkMember, checkResetRequest, checkSubscribeRequest } from './coordinator/request-checks.js';
import { checkGroupId, checkInteger, checkTopicName, MAX_PARTITIONS } from './protocol/validate.js';
import { FileCache } from './storage/file-cache.js';
import type { FileCacheStats } from './storage/file-cache.js';
import { LogManager } from './storage/log-manager.js';
import { defaultMaxOpenFiles } from './storage/open-files-limit.js';
import { silentLogger } from './logger.js';
import { BrokerMetrics } from './monitoring/metrics.js';
import type { MetricsOptions } from './monitoring/metrics.js';
import { Monitor } from './monitoring/monitor.js';
import type { MonitorOptions } from './monitoring/monitor.js';
import type { Logger } from './logger.js';

/** Options of the embedded broker. */
export interface BrokerOptions {
  /** Directory holding the log, the offset store and the catalog; created if missing. */
  dataDir: string;
  /** @default the system clock */
  clock?: Clock;
  /** @default no logging */
  logger?: Logger;
  /** Largest record accepted (key + value + headers), bytes. @default 1048576 (1 MiB, as Kafka's max.message.bytes) */
  maxRecordBytes?: number;
  /** Produce splits a partition's records into batches of about this size, bytes. @default 1048576 */
  maxBatchBytes?: number;
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
   * How often the log store closes files unused since the check before, ms, so that at rest its descriptors go
   * back to connections; 0 = never. @default 30000 (a file closes after 30 to 60 s unused)
   */
  fileIdleCheckIntervalMs?: number;
  /** Alert evaluation (its interval), notification delivery and the health history. @default see MonitorOptions */
  monitoring?: MonitorOptions;
  /** Bounds of the per-partition metric series. @default see MetricsOptions */
  metrics?: MetricsOptions;
}

const FETCH_DEFAULTS = { maxRecords: 500, maxBytes: 1024 * 1024, maxWaitMs: 0 };
const MAX_WAIT_MS = 30_000;

export class Broker implements OnelogApi, BinaryDataApi {
  private readonly partitioner = new Partitioner();
  /** The highest producer id issued: a higher one in a produce was never issued (`UNKNOWN_PRODUCER_ID`). */
  private lastProducerId = 0;
  private closed = false;
  /** Topics being created now: a second creation of the same name is refused before it touches any file. */
  private readonly creating = new Set<string>();
  private readonly timers: NodeJS.Timeout[] = [];
  /** Prometheus metrics (`GET /metrics`, docs/monitoring.md); set once open. */
  metrics!: BrokerMetrics;
  /** POSTs the records of webhook subscriptions (docs/delivery.md); set once open. */
  private webhooks: WebhookDispatcher | null = null;
  /** Nacked records through retry tiers (docs/retries.md); set once open. */
  private retries!: Retries;
  private deadLetters!: DeadLetters;

  private constructor(
    private readonly catalog: Catalog,
    private readonly offsets: OffsetStore,
    private readonly logs: LogManager,
    private readonly groups: GroupCoordinator,
    private readonly monitor: Monitor,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly unlock: () => void,
    private readonly maxRecordBytes: number,
    private readonly maxBatchBytes: number,
  ) {}

  /**
   * Opens the broker on `options.dataDir`: migrates the catalog, opens the offset store, and opens every
   * topic's partitions, recovering torn log tails.
   */
  static async open(options: BrokerOptions): Promise<Broker> {
    const clock = options.clock ?? systemClock;
    const logger = options.logger ?? silentLogger;
    fs.mkdirSync(options.dataDir, { recursive: true });
    const unlock = lockDataDir(options.dataDir);
    try {
      return await Broker.openLocked(options, clock, logger, unlock);
    } catch (err) {
      unlock();
      throw err;
    }
  }

  private static async openLocked(options: BrokerOptions, clock: Clock, logger: Logger, unlock: () => void): Promise<Broker> {
    const files = new FileCache({ maxOpenFiles: options.maxOpenFiles ?? defaultMaxOpenFiles() });
    const catalog = await openSqliteCatalog(path.join(options.dataDir, 'catalog.sqlite'));
    const topics = await catalog.listTopics();
    const logDir = path.join(options.dataDir, 'log');
    if (!holdsAnyPartition(logDir, topics)) {
      await catalog.close();
      // Not a half-created topic to repair: every topic's records are gone from where they should be.
      throw new OnelogError('STORAGE_ERROR', `the catalog lists ${topics.length} topic(s) but the log directory ${logDir} is missing ` +
        'or holds none of their partitions: is a volume not mounted, or was the data directory copied without it? Put it back; ' +
        'to start over, use an empty --data-dir', { dataDir: options.dataDir, topics: topics.length });
    }
    const offsets = LmdbOffsetStore.open(path.join(options.dataDir, 'offsets'));
    const logs = new LogManager(logDir, { clock, logger, indexIntervalBytes: 4096, files });
    const started = Date.now();
    const report = logs.start(topics.map((t) => ({ name: t.name, partitions: t.partitions, config: pickTopicConfig(t) })));
    logger.info({ ...report, maxOpenFiles: files.maxOpenFiles, ms: Date.now() - started }, 'opened the log store');
    const monitor = await Monitor.open(catalog, offsets, logs, clock, logger, options.monitoring);
    const groups: GroupCoordinator = new GroupCoordinator(catalog, offsets, logs, clock, logger, monitor, {
      reset: (groupId, topic) => {
        broker.retries.forget(groupId, topic);
        void monitor.evaluate({ groupId });
      },
      committed: (groupId, topic, offsets) => {
        broker.retries.committed(groupId, topic, offsets);
        // A commit moves the group forward: it can only clear conditions, so only a group with one open is evaluated.
        if (monitor.alerts.hasOpen(groupId)) void monitor.evaluate({ groupId });
      },
      deadLetterDepth: (sub): Promise<number> => broker.deadLetters.depth(sub),
    });
    await groups.start();
    const lastProducerId = await catalog.lastProducerId();
    const broker: Broker = new Broker(
      catalog, offsets, logs, groups, monitor, clock, logger, unlock,
      options.maxRecordBytes ?? 1024 * 1024, options.maxBatchBytes ?? 1024 * 1024,
    );
    broker.lastProducerId = lastProducerId;
    broker.deadLetters = new DeadLetters(logs, catalog, clock, logger, monitor.alerts, () => broker.retries);
    broker.metrics = new BrokerMetrics({ catalog, logs, monitor, deadLetterDepth: (sub) => broker.deadLetters.depth(sub) }, options.metrics);
    broker.retries = new Retries({
      logs, offsets, catalog, clock, retryTopics: groups.retryTopics, findSubscription: (groupId, topic) => groups.findSubscription(groupId, topic),
      createTopic: (request) => broker.createTopic(request),
      deadLettered: async (sub) => void (await broker.deadLetters.checkAlert(sub)),
    });
    broker.webhooks = new WebhookDispatcher(broker, logger, options.webhooks);
    await broker.webhooks.start(await catalog.listWebhookSubscriptions());
    // Retention visits every partition (opening idle ones just for it); compaction only those loaded: a partition
    // not opened since start-up had no appends since, and is compacted when next used or on demand.
    broker.every(options.retentionCheckIntervalMs ?? 300_000, 'retention', async (topic) => {
      const moved = await broker.logs.visit(topic, (log) => log.enforceRetention(),
        (partition, err) => logger.warn({ topic, partition, err: err.message }, 'retention failed'));
      if (moved.some((m) => m !== null)) await monitor.evaluate({ topic });
    });
    broker.every(options.compactionIntervalMs ?? 15_000, 'compaction', (topic) =>
      Promise.all(broker.logs.loaded(topic).map((log) => log.compact())));
    broker.repeat(options.sessionCheckIntervalMs ?? 500, 'session expiry', () => groups.expireMembers());
    broker.repeat(options.fileIdleCheckIntervalMs ?? 30_000, 'closing idle files', async () => files.closeIdle());
    monitor.start();
    return broker;
  }

  /**
   * Runs `task` on every topic every `ms` (0 = never); failures are logged, never thrown, and a run starts
   * only after the previous one ended.
   */
  private every(ms: number, what: string, task: (topic: string) => Promise<unknown>): void {
    this.repeat(ms, what, async () => {
      for (const t of await this.catalog.listTopics().catch(() => [])) {
        await task(t.name).catch((err: unknown) => this.logger.warn({ topic: t.name, err: (err as Error).message }, `${what} failed`));
      }
    });
  }

  /** Runs `task` every `ms` (0 = never); a failure is logged, and a run starts only after the previous one ended. */
  private repeat(ms: number, what: string, task: () => Promise<unknown>): void {
    if (ms <= 0) return;
    let running = false;
    const timer = setInterval(async () => {
      if (running || this.closed) return;
      running = true;
      await task().catch((err: unknown) => this.logger.warn({ err: (err as Error).message }, `${what} failed`));
      running = false;
    }, ms).unref();
    this.timers.push(timer);
  }

  /**
   * Compacts every partition of a topic now, sealing each active segment first so everything appended so
   * far is eligible (background compaction leaves active segments alone).
   * @param request `wait: false` starts the pass and answers at once (`completed: false`)
   * @throws OnelogError `UNKNOWN_TOPIC`, `INVALID_CONFIG` if the topic's cleanup policy lacks `compact`
   */
  async compactTopic(request: { topic: string; wait?: boolean }): Promise<CompactionResult> {
    this.checkOpen();
    const { topic } = request;
    const { cleanupPolicy } = this.logs.config(topic);
    if (!cleanupPolicy.includes('compact')) {
      throw new OnelogError('INVALID_CONFIG', `topic ${topic} has cleanup.policy=${cleanupPolicy}; ` +
        `compaction needs compact or compact,delete (onelog topics alter ${topic} --config cleanup.policy=compact)`, { topic });
    }
    const logs = this.logs.partitions(topic);
    const passes = logs.map((log) => log.compact(true));
    if (request.wait === false) {
      void Promise.all(passes).catch((err: unknown) => this.logger.warn({ topic, err: (err as Error).message }, 'compaction failed'));
      return { topic, completed: false, partitions: [] };
    }
    const stats = await Promise.all(passes);
    return { topic, completed: true, partitions: stats.map((s, i) => ({ partition: logs[i]!.partition, ...s! })) };
  }

  /**
   * Applies the topic's retention now (also run every `retentionCheckIntervalMs`): on each partition, the
   * log start offset moves past every expired record and fully expired segments are deleted.
   * @throws OnelogError `UNKNOWN_TOPIC`
   */
  async enforceRetention(topic: string): Promise<RetentionResult> {
    this.checkOpen();
    const partitions = this.logs.partitions(topic).map((log) => {
      const unchanged = { previousLogStartOffset: log.logStartOffset, logStartOffset: log.logStartOffset, reason: null };
      return { partition: log.partition, ...(log.enforceRetention() ?? unchanged) };
    });
    // Groups that lost records are alerted before this answers, not when they next fetch.
    if (partitions.some((p) => p.reason !== null)) await this.monitor.evaluate({ topic });
    return { topic, partitions };
  }

  /** The log store's file-handle cache: descriptors open, budget, hits, opens, evictions (diagnostics, benchmarks). */
  fileCacheStats(): FileCacheStats {
    return this.logs.files.stats();
  }

  private checkOpen(): void {
    if (this.closed) throw new OnelogError('BROKER_CLOSED', 'the broker is closed');
  }

  /**
   * Creates a topic and its partitions, all or nothing: every partition's directory, then the catalog row; a
   * failure of either removes what was made, so the topic does not exist and the same request can be retried.
   * @throws OnelogError `INVALID_TOPIC`, `INVALID_PARTITIONS`, `INVALID_CONFIG`, `TOPIC_ALREADY_EXISTS`,
   *   `RESOURCE_EXHAUSTED` (disk), `STORAGE_ERROR`
   */
  async createTopic(request: CreateTopicRequest): Promise<TopicDescription> {
    this.checkOpen();
    const topic = checkTopicName(request.topic);
    const partitions = checkInteger(request.partitions, 'partitions', 1, MAX_PARTITIONS, 'INVALID_PARTITIONS');
    const config = resolveTopicConfig(request.config ?? {});
    const existing = await this.catalog.getTopic(topic);
    if (existing || this.creating.has(topic)) { // checked and marked with no await between
      throw new OnelogError('TOPIC_ALREADY_EXISTS', `topic ${topic} already exists`, { topic, partitions: existing?.partitions });
    }
    this.creating.add(topic);
    try {
      this.logs.createTopicFiles(topic, partitions);
      try {
        await this.catalog.createTopic({ name: topic, partitions, ...config, createdAt: this.clock.now() });
      } catch (err) {
        this.logs.deleteTopicFiles(topic, partitions);
        throw err;
      }
      this.logs.addTopic(topic, partitions, config, true);
    } finally {
      this.creating.delete(topic);
    }
    return this.describeTopic(topic);
  }

  /**
   * Changes settings of a topic; the others keep their values. Takes effect at once on every partition.
   * @throws OnelogError `UNKNOWN_TOPIC`, `INVALID_CONFIG`
   */
  async alterTopic(request: AlterTopicRequest): Promise<TopicDescription> {
    this.checkOpen();
    const current = await this.catalog.getTopic(request.topic);
    if (!current) throw new OnelogError('UNKNOWN_TOPIC', `topic ${request.topic} does not exist`, { topic: request.topic });
    const config = resolveTopicConfig(request.config ?? {}, pickTopicConfig(current));
    await this.catalog.updateTopicConfig(request.topic, config);
    this.logs.setConfig(request.topic, config);
    return this.describeTopic(request.topic);
  }

  async listTopics(): Promise<TopicSummary[]> {
    this.checkOpen();
    return (await this.catalog.listTopics()).map((t) => ({ topic: t.name, partitions: t.partitions }));
  }

  /**
   * A topic's settings and partitions; with `groups`, every subscribed group's position and health per partition.
   * @throws OnelogError `UNKNOWN_TOPIC`
   */
  async describeTopic(topic: string, options: DescribeTopicOptions = {}): Promise<TopicDescription> {
    this.checkOpen();
    const t = await this.catalog.getTopic(topic);
    if (!t) throw new OnelogError('UNKNOWN_TOPIC', `topic ${topic} does not exist`, { topic });
    return {
      topic,
      // A partition never appended to holds no bytes (and is not opened for it).
      partitions: this.logs.offsets(topic).map((p) => ({ ...p, sizeBytes: p.highWatermark === 0 ? 0 : this.logs.get(topic, p.partition).sizeBytes })),
      config: pickTopicConfig(t),
      createdAt: t.createdAt,
      ...(options.groups ? { groups: await this.groups.describeTopicGroups(topic) } : {}),
    };
  }

  /**
   * Moves a partition's log start offset forward: records below `beforeOffset` are never served again.
   * @throws OnelogError `OFFSET_OUT_OF_RANGE` if `beforeOffset` is above the high watermark
   */
  async deleteRecords(request: DeleteRecordsRequest): Promise<DeleteRecordsResult> {
    this.checkOpen();
    const log = this.logs.get(request.topic, request.partition);
    const beforeOffset = checkInteger(request.beforeOffset, 'beforeOffset', 0, Number.MAX_SAFE_INTEGER, 'INVALID_OFFSET');
    const previousLogStartOffset = log.logStartOffset;
    const logStartOffset = log.deleteRecordsBefore(beforeOffset, 'delete-records');
    if (logStartOffset > previousLogStartOffset) await this.monitor.evaluate({ topic: request.topic });
    return { topic: request.topic, partition: log.partition, previousLogStartOffset, logStartOffset };
  }

  /**
   * Appends records; each goes to its `partition`, else to murmur2(key) % partitions, else (null key) to the
   * next partition in turn. Every record is checked before any is written, so a refused request stores
   * nothing. Batches are compressed with the topic's `compressionType` (`producer` and `none`: uncompressed).
   * Resolves once every record is durable. A full disk refuses the request before anything is written; a
   * partition that fails once others stored their records answers an error whose `stored` names them (see
   * {@link LogManager.appendAll}): an idempotent producer's retry is stored once, a plain one's again.
   * With `idempotence`, a retried request is stored once and answers the original offsets.
   * @throws OnelogError `UNKNOWN_TOPIC`, `UNKNOWN_PARTITION`, `RECORD_TOO_LARGE`, `INVALID_RECORD`,
   *   `INVALID_REQUEST`, `OUT_OF_ORDER_SEQUENCE`, `INVALID_PRODUCER_EPOCH`, `UNKNOWN_PRODUCER_ID`
   */
  async produce(request: ProduceRequest): Promise<ProduceResult> {
    this.checkOpen();
    const { topic, records } = request;
    const partitionCount = this.logs.partitionCount(topic);
    const { cleanupPolicy, compressionType } = this.logs.config(topic);
    const batches = planProduce(request, {
      partitions: partitionCount,
      compacted: cleanupPolicy.includes('compact'),
      maxRecordBytes: this.maxRecordBytes,
      maxBatchBytes: this.maxBatchBytes,
      choosePartition: (r) => this.choosePartition(topic, r, partitionCount),
    });
    if (request.idempotence && request.idempotence.producerId > this.lastProducerId) {
      throw new OnelogError('UNKNOWN_PRODUCER_ID', `producer id ${request.idempotence.producerId} was never issued by this broker; ` +
        'get one from initProducerId (POST /producers)', { topic, producerId: request.idempotence.producerId });
    }
    const offsets = new Array<{ partition: number; offset: number }>(records.length);
    const now = this.clock.now();
    const codec = batchCodec(compressionType);
    const encoded = batches.map(({ partition, indexes, producer }) => ({
      partition, indexes, producer, log: this.logs.get(topic, partition),
      batch: encodeBatch(indexes.map((i) => records[i]!), 0, now, producer, { compression: codec }),
    }));
    // An idempotent request is refused whole: each partition's first batch is checked before any is written
    // (the partition's later batches follow on from it). Nothing awaits in between, so no other append interleaves.
    const checked = new Set<number>();
    for (const { partition, producer, batch, log } of encoded) {
      if (producer && !checked.has(partition)) {
        log.checkIdempotentBatch(batch);
        checked.add(partition);
      }
    }
    // Batches of one partition are appended in order (their sequences follow each other).
    const appended = await this.logs.appendAll(encoded);
    this.metrics.produced(topic, request.records.length, encoded.reduce((sum, e) => sum + e.batch.length, 0));
    encoded.forEach(({ partition, indexes }, b) => indexes.forEach((i, k) => (offsets[i] = { partition, offset: appended[b]!.baseOffset + k })));
    return { topic, offsets };
  }

  /** Issues a new idempotent producer identity: a never reused id (from the catalog) at epoch 0. */
  async initProducerId(): Promise<ProducerIdentity> {
    this.checkOpen();
    const producerId = await this.catalog.newProducerId(this.clock.now());
    this.lastProducerId = Math.max(this.lastProducerId, producerId);
    return { producerId, producerEpoch: 0 };
  }

  private choosePartition(topic: string, r: ProduceRecord, partitions: number): number {
    if (r.partition !== undefined) return this.logs.get(topic, r.partition).partition;
    return this.partitioner.partitionOf(topic, r.key, partitions);
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
    if (memberId !== undefined && groupId === undefined) {
      throw new OnelogError('INVALID_REQUEST', 'a fetch with memberId needs its groupId', { memberId });
    }
    checkMember(request);
    const membership = memberId === undefined ? undefined : this.groups.checkFetch({ ...request, memberId });
    const targets = request.partitions.map((p) => ({
      log: this.logs.get(topic, p.partition),
      offset: checkInteger(p.offset, 'offset', 0, Number.MAX_SAFE_INTEGER, 'INVALID_OFFSET'),
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
      await this.groups.afterFetch({ ...request, groupId: groupId! }, partitions);
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
   * Appends client-encoded RecordBatch v2 batches without decoding their records (the binary data path); see
   * {@link prepareClientBatch} for what is checked. The request is refused whole: every batch is checked, and
   * each partition's first idempotent batch checked against its producer state, before any is appended (no
   * await in between). Resolves as {@link produce} does.
   * @throws OnelogError `UNKNOWN_TOPIC`, `UNKNOWN_PARTITION`, `CORRUPT_MESSAGE`, `RECORD_TOO_LARGE`,
   *   `INVALID_RECORD`, `INVALID_REQUEST`, `OUT_OF_ORDER_SEQUENCE`, `INVALID_PRODUCER_EPOCH`, `UNKNOWN_PRODUCER_ID`
   */
  async produceBatches(request: ProduceBatchesRequest): Promise<ProduceBatchesResult> {
    this.checkOpen();
    if (!Array.isArray(request.batches) || request.batches.length === 0) {
      throw new OnelogError('INVALID_REQUEST', 'a batch produce needs at least one batch', { topic: request.topic });
    }
    const limits = { maxBatchBytes: Math.max(this.maxBatchBytes, this.maxRecordBytes), lastProducerId: this.lastProducerId };
    const prepared = request.batches.map(({ partition, batch }) => {
      const log = this.logs.get(request.topic, partition);
      if (!Buffer.isBuffer(batch)) throw new OnelogError('INVALID_REQUEST', 'each batch must be the bytes of one RecordBatch v2');
      return { log, batch: prepareClientBatch(batch, log, limits) };
    });
    const checked = new Set<number>();
    for (const { log, batch } of prepared) {
      if (readBatchHeader(batch).producerId >= 0 && !checked.has(log.partition)) {
        log.checkIdempotentBatch(batch);
        checked.add(log.partition);
      }
    }
    const appended = await this.logs.appendAll(prepared);
    this.metrics.produced(request.topic,
      appended.reduce((sum, a) => sum + (a.duplicate ? 0 : a.lastOffset - a.baseOffset + 1), 0),
      appended.reduce((sum, a, i) => sum + (a.duplicate ? 0 : prepared[i]!.batch.length), 0));
    return {
      batches: appended.map(({ baseOffset, lastOffset, duplicate }, i) => ({
        partition: prepared[i]!.log.partition, baseOffset, lastOffset, ...(duplicate ? { duplicate } : {}),
      })),
    };
  }

  /** @see GroupCoordinator.subscribe */
  async subscribe(request: SubscribeRequest): Promise<SubscribeResult> {
    this.checkOpen();
    checkSubscribeRequest(request);
    this.logs.partitionCount(request.topic); // UNKNOWN_TOPIC
    const retry = await this.retries.preparePolicy(request.groupId, request.topic, request.retry);
    const result = await this.groups.subscribe({ ...request, retry });
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
    for (const topic of request.topics) this.logs.partitionCount(topic); // UNKNOWN_TOPIC
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
    return this.groups.leaveGroup({ groupId: checkGroupId(request.groupId), memberId: request.memberId });
  }

  /**
   * @see GroupCoordinator.deleteGroup; the group's retry tier topics and dead-letter topics are emptied too
   * (their log start moves to the high watermark).
   */
  async deleteGroup(groupId: string): Promise<void> {
    this.checkOpen();
    checkGroupId(groupId);
    // Its retry tiers and dead letters go with it (the topics stay, emptied): a group created again under the
    // same id starts clean.
    const owned = (await this.catalog.listSubscriptions(groupId)).flatMap((s) =>
      [...this.groups.retryTopics.tiersOf(groupId, s.topic), ...(s.deadLetterTopic ? [s.deadLetterTopic] : [])]);
    await this.groups.deleteGroup(groupId);
    this.retries.deleteGroup(groupId);
    for (const topic of owned) {
      if (!(await this.catalog.getTopic(topic))) continue;
      for (const log of this.logs.partitions(topic)) log.deleteRecordsBefore(log.highWatermark, 'delete-records');
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
    return this.groups.saveCheckpoint(request);
  }

  /** @see GroupCoordinator.commit */
  async commitOffsets(request: CommitRequest): Promise<void> {
    this.checkOpen();
    checkGroupId(request.groupId);
    checkMember(request);
    return this.groups.commit(request);
  }

  async listGroups(): Promise<GroupSummary[]> {
    this.checkOpen();
    return this.groups.listGroups();
  }

  /** @see GroupCoordinator.describeGroup */
  async describeGroup(groupId: string): Promise<GroupDescription> {
    this.checkOpen();
    await this.monitor.settled(); // its alerts as evaluations asked for so far left them
    return this.groups.describeGroup(checkGroupId(groupId));
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
    for (const timer of this.timers) clearInterval(timer);
    await this.monitor.stop();
    this.groups.close();
    await this.logs.close();
    await this.offsets.close();
    await this.catalog.close();
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

/**
 * The codec produce writes a topic's batches with. `producer` keeps the producer's codec in Kafka; the JSON
 * produce path carries none, so it writes them uncompressed, as `none` does.
 */
function batchCodec(compressionType: CompressionType): CompressionCodec {
  return compressionType === 'producer' ? 'none' : compressionType;
}

/**
 * The composition root of the embedded broker: opens the data directory and builds every part in order, each from
 * parts built before it, and hands them out as one frozen {@link BrokerParts}. A failure at any step closes what was
 * opened before it, in reverse, and unlocks the data directory.
 *
 * Where two parts need each other, the one built first offers a registration that the root wires once both exist,
 * here and nowhere else: the group coordinator's `onReset` (share groups, built after it, start again where a reset
 * moved a group), `Subscriptions.onTiersChanged`, the write fence's and cluster membership's failure listeners.
 */
import fs from 'node:fs';
import path from 'node:path';
import { systemClock } from '../common/clock.js';
import type { Clock } from '../common/clock.js';
import { silentLogger } from '../common/logger.js';
import type { Logger } from '../common/logger.js';
import { WriteFence } from '../common/write-fence.js';
import type { Catalog } from '../catalog/catalog.js';
import type { ClusterMembership } from '../cluster/membership.js';
import type { ClusterPlacement } from '../cluster/cluster-placement.js';
import { GroupCoordinator } from '../coordinator/group-coordinator.js';
import { findLostOffsets, lostOffsetsRefusal, pauseLostOffsets } from '../coordinator/lost-offsets.js';
import { ShareGroups } from '../coordinator/share-groups.js';
import { Subscriptions } from '../coordinator/subscriptions.js';
import { DeadLetters } from '../delivery/dead-letters.js';
import { Retries } from '../delivery/retries.js';
import { ChangeFeed } from '../monitoring/change-feed.js';
import { BrokerMetrics } from '../monitoring/metrics.js';
import { ClusterMetrics } from '../monitoring/cluster-metrics.js';
import { redactUrl } from '../protocol/urls.js';
import { Monitor } from '../monitoring/monitor.js';
import type { OffsetStore } from '../offsets/offset-store.js';
import { OnelogError } from '../protocol/errors.js';
import { pickTopicConfig } from '../protocol/topic-config.js';
import { Acls } from '../security/acls.js';
import { Audit } from '../security/audit.js';
import { OutboundPolicy } from '../security/outbound.js';
import { Users } from '../security/users.js';
import { FileCache } from '../log/segments/file-cache.js';
import { makeDir, narrowDataDir } from '../common/file-modes.js';
import { DEFAULT_DEDUPE_BUFFER_BYTES, LogCleaner } from '../log/compaction.js';
import { LogManager } from '../log/segments/log-manager.js';
import type { Appended, Logs } from '../log/logs.js';
import type { ObjectLogJob } from '../log/objects/cluster-logs.js';
import { defaultMaxOpenFiles } from '../log/segments/open-files-limit.js';
import { BackgroundTasks } from './background-tasks.js';
import { DependencyChecks } from './health.js';
import type { DependencyProbe } from './health.js';
import { dataDirId, lockDataDir } from './data-dir-lock.js';
import type { BrokerOptions } from './options.js';
import { ProducePath } from './produce-path.js';
import { checkStoreEngines, describeOffsetStore, openCatalog, openObjectLogs, openOffsetStore } from './store-engines.js';
import type { ObjectLogs } from './store-engines.js';
import { finishTopicDeletions, TopicAdmin } from './topic-admin.js';

/** Every part of an open broker, built by {@link openBroker}; none is replaced afterwards. */
export interface BrokerParts {
  readonly options: BrokerOptions;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Releases `<dataDir>/broker.lock`: the last step of a close. */
  readonly unlock: () => void;
  /** Where webhooks (push endpoints, alert sinks) may go. */
  readonly outbound: OutboundPolicy;
  /** The log store's file-handle cache (the segment engine's; idle on the object engine). */
  readonly files: FileCache;
  readonly catalog: Catalog;
  readonly logs: Logs;
  readonly offsets: OffsetStore;
  /** This broker in its cluster (registry, group leases); null on the embedded default. */
  readonly membership: ClusterMembership | null;
  /** Which broker leads each partition and runs each job (job leases); null on the embedded default. */
  readonly placement: ClusterPlacement | null;
  readonly monitor: Monitor;
  /** What changed, as it happens: records, offsets, alerts, evaluations, topics, groups (`GET /events`). */
  readonly changes: ChangeFeed;
  readonly groups: GroupCoordinator;
  /** Dead letters of every subscription: depth, list, redrive, purge (docs/retries.md). */
  readonly deadLetters: DeadLetters;
  /** Nacked records through retry tiers (docs/retries.md). */
  readonly retries: Retries;
  /** Share groups' partitions and members (docs/consumer-groups.md). */
  readonly shareGroups: ShareGroups;
  /** Who may do what on which topic, group or the cluster (docs/security.md). */
  readonly acls: Acls;
  /** The users requests are authenticated against (docs/security.md). */
  readonly users: Users;
  /** Who did which offset, data or user operation (docs/security.md). */
  readonly audit: Audit;
  /** Creates, alters, describes topics; moves their log start offsets on demand. */
  readonly topics: TopicAdmin;
  /** Prometheus metrics (`GET /metrics`, docs/monitoring.md). */
  readonly metrics: BrokerMetrics;
  /** The dependencies' health (`GET /health`): probed every few seconds, changes logged. */
  readonly health: DependencyChecks;
  /** Appends produced records and batches; issues producer ids. */
  readonly producing: ProducePath;
  /** Retention, compaction, session and lock expiry, idle files, the object log's upkeep: started by {@link openBroker}. */
  readonly background: BackgroundTasks;
}

/** What a failed open closes, in reverse order of opening. */
type Opened = Array<() => Promise<void> | void>;

/**
 * Opens the broker's parts on `options.dataDir`: locks the data directory, migrates the catalog, opens the log (the
 * data directory's segments, or object storage in cluster mode) and the offset store, recovers every topic's
 * partitions, then builds the consumer manager, security and the background tasks, and starts them.
 * @throws OnelogError `DATA_DIR_LOCKED`; `STORAGE_ERROR` for a missing log directory, or for an offset store that
 *   holds none of the offsets of groups the catalog says committed (unless `allowMissingOffsets`); `INVALID_CONFIG`
 */
export async function openBroker(options: BrokerOptions): Promise<BrokerParts> {
  checkStoreEngines(options);
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger;
  const outbound = new OutboundPolicy({ allowPrivate: options.webhookAllowPrivate, denyPrivate: options.webhookDenyPrivate });
  const opened: Opened = [() => outbound.close()];
  try {
    makeDir(options.dataDir);
    narrowDataDir(options.dataDir, logger);
    const unlock = lockDataDir(options.dataDir);
    opened.push(unlock);
    return await openLocked(options, clock, logger, unlock, outbound, opened);
  } catch (err) {
    for (const close of opened.reverse()) {
      try {
        await close();
      } catch {
        // The open's own failure is the one to report.
      }
    }
    throw err;
  }
}

async function openLocked(
  options: BrokerOptions, clock: Clock, logger: Logger, unlock: () => void, outbound: OutboundPolicy, opened: Opened,
): Promise<BrokerParts> {
  // The stores.
  const files = new FileCache({ maxOpenFiles: options.maxOpenFiles ?? defaultMaxOpenFiles() });
  const cleaner = new LogCleaner({ dedupeBufferBytes: options.cleanerDedupeBufferBytes ?? DEFAULT_DEDUPE_BUFFER_BYTES });
  const fence = new WriteFence(clock, logger);
  const catalog = await openCatalog(options, options.dataDir, fence, clock, logger);
  opened.push(() => catalog.close());
  const topicList = await catalog.topics.list();
  const local = options.log === undefined ? await openLocalLogs(options, catalog, topicList, files, cleaner, clock, logger) : null;
  // Cluster mode's metrics exist before its log opens: its object store and sequencer report to them.
  const cluster = local === null ? new ClusterMetrics() : null;
  const { logs, membership, placement, jobs, probes } = local === null
    ? await openObjectLogs(options, catalog, clock, logger, { intervalMs: options.compactionIntervalMs, cleaner }, {
      objectStore: cluster!.objectStoreRequest,
      committed: (seconds) => {
        cluster!.committed(seconds);
        if (seconds * 1000 >= SLOW_COMMIT_MS) {
          logger.warn({ ms: Math.round(seconds * 1000) }, 'a commit (PostgreSQL) took over a second: produces wait for it; is a lock held on ' +
            'the partitions table, or is PostgreSQL overloaded? (GET /health, pg_locks)');
        }
      },
    })
    : { logs: local, membership: null, placement: null, jobs: [], probes: null };
  opened.push(() => logs.close());
  if (membership !== null) opened.push(() => membership.close());
  if (placement !== null) opened.push(() => placement.close());
  // The data directory's LMDB checks its disk's room as the segment files do (cluster mode keeps the offsets elsewhere).
  const offsets = await openOffsetStore(options, options.dataDir, fence, () => local?.ensureDiskRoom(0), logger);
  opened.push(() => offsets.close());
  fence.onFailure((failure) => logs.stopWrites(failure));
  membership?.onReplaced((failure) => logs.stopWrites(failure));
  await finishTopicDeletions(catalog, offsets, logs, logger);
  const started = Date.now();
  const report = await logs.start(topicList.map((t) => ({ name: t.name, partitions: t.partitions, config: pickTopicConfig(t) })));
  logger.info({ ...report, maxOpenFiles: files.maxOpenFiles, ms: Date.now() - started }, 'opened the log store');
  const offsetStore = describeOffsetStore(options, options.dataDir);
  const lost = await findLostOffsets(catalog, offsets, new Map(topicList.map((t) => [t.name, t.partitions])));
  if (lost.length > 0 && options.allowMissingOffsets !== true) throw lostOffsetsRefusal(lost, offsetStore, options.dataDir);

  // Watching consumers, and telling the console what changed.
  const changes = new ChangeFeed(logger);
  const monitor = await Monitor.open(catalog, offsets, logs, clock, logger, {
    ...options.monitoring, notifications: { ...options.monitoring?.notifications, outbound },
    scheduleGate: placement?.jobGate('job:alerts') ?? options.monitoring?.scheduleGate, // cluster mode: one broker's timer evaluates
    onScheduledPass: (pass) => {
      options.monitoring?.onScheduledPass?.(pass);
      changes.publish({ type: 'evaluated' }); // run or skipped (cluster mode): either way the alerts were brought up to date
    },
  });
  monitor.alerts.onChange((change, alert) => changes.publish({ type: 'alert', groupId: alert.groupId, topic: alert.topic, alertId: alert.id, change }));
  opened.push(() => monitor.stop());
  if (lost.length > 0) await pauseLostOffsets(lost, { catalog, logs, alerts: monitor.alerts, clock, logger }, offsetStore);
  // A corrupt batch found in a partition's files raises a storage-corruption alert for the groups reading it.
  logs.watchCorruption?.((topic) => void monitor.evaluate({ topic }));
  // In cluster mode records another broker appended are changes here too (this broker's own are told by `appended`).
  (logs as Logs).watchAppends?.((topic) => changes.publish({ type: 'records', topic }));

  // The consumer manager: subscriptions, dead letters, retry tiers, then the coordinator asking them, then share groups.
  const subscriptions = new Subscriptions(catalog, clock);
  const deadLetters = new DeadLetters(logs, catalog, clock, logger, monitor.alerts);
  const metrics = new BrokerMetrics({ catalog, logs, monitor, deadLetterDepth: (sub) => deadLetters.depth(sub) }, options.metrics);
  const health = new DependencyChecks(dependencyProbes(options, catalog, offsets, probes), logger, options.health);
  opened.push(() => health.close());
  if (cluster !== null) {
    metrics.watchCluster(cluster);
    cluster.watch({
      liveBrokers: async () => (await membership!.liveBrokers()).length,
      heldLeases: async () => {
        const held = { partition: 0, group: 0, job: 0 };
        for (const lease of await placement!.heldLeases()) if (lease.brokerId === membership!.brokerId) held[lease.kind]++;
        return held;
      },
      dependencies: () => health.up(),
    });
  }
  // Every append this broker makes, a client's or a record it moved itself: counted, its groups woken, the console told.
  const appended: Appended = (topic, records, bytes) => {
    metrics.produced(topic, records, bytes);
    monitor.recordsArrived(topic);
    changes.publish({ type: 'records', topic });
  };
  const retries = new Retries({
    logs, offsets, catalog, clock, retryTopics: subscriptions.retryTopics, findSubscription: (groupId, topic) => subscriptions.find(groupId, topic),
    deadLettered: async (sub) => void (await deadLetters.checkAlert(sub)), appended,
  });
  const groups = new GroupCoordinator(catalog, offsets, logs, clock, logger, monitor, subscriptions, {
    committed: (groupId, topic, committed) => {
      retries.committed(groupId, topic, committed);
      changes.publish({ type: 'offsets', groupId, topic });
      // A commit moves the group forward: it can only clear conditions, so only a group with one open is evaluated.
      if (monitor.alerts.hasOpen(groupId)) void monitor.evaluate({ groupId });
    },
    deadLetterDepth: (sub) => deadLetters.depth(sub),
    deadLetterIfSpent: (groupId, topic, partition, offset, crashes) => retries.deadLetterIfSpent(groupId, topic, partition, offset, crashes),
  }, membership?.groups);
  opened.push(() => groups.close());
  await groups.start();
  const shareGroups = new ShareGroups({
    logs, offsets, clock, logger,
    subscription: async (groupId, topic) => {
      const sub = await subscriptions.find(groupId, topic);
      if (sub?.type === 'share') return sub;
      throw new OnelogError('INVALID_REQUEST', `group ${groupId} has no share subscription to ${topic}: create one with ` +
        `onelog groups create ${groupId} --topic ${topic} --type share${sub ? ` (it is a ${sub.type} group)` : ''}`, { groupId, topic });
    },
    deadLetter: (sub, partition, offset, deliveries, reason) => retries.deadLetterShared(sub, partition, offset, deliveries, reason),
    commit: (groupId, topic, partition, offset) => groups.commitShareStart(groupId, topic, partition, offset),
  });
  metrics.gaugeShareGroups(() => shareGroups.gauges());
  groups.onReset(async (groupId, topic) => {
    retries.forget(groupId, topic);
    changes.publish({ type: 'offsets', groupId, topic });
    if ((await subscriptions.find(groupId, topic))?.type === 'share') await shareGroups.reset(groupId, topic);
    void monitor.evaluate({ groupId });
  });

  // Security, the faces' parts.
  const acls = await Acls.open(catalog, logger);
  const users = await Users.open(catalog, clock, logger, acls, options.insecure ?? false);
  const audit = new Audit(catalog, clock, logger);
  const topics = new TopicAdmin(catalog, logs, offsets, groups, monitor, clock, logger);
  const limits = {
    maxRecordBytes: options.maxRecordBytes ?? 1024 * 1024, maxBatchBytes: options.maxBatchBytes ?? 1024 * 1024,
    maxRecordsPerRequest: options.maxRecordsPerRequest ?? 100_000,
  };
  const producing = new ProducePath(logs, catalog, clock, limits, appended, await catalog.producerIds.last());

  // Background work, from here on.
  const background = startBackground(options, logger, { catalog, logs, files, placement, groups, shareGroups, monitor }, jobs);
  monitor.start();
  return Object.freeze({
    options, clock, logger, unlock, outbound, files, catalog, logs, offsets, membership, placement, monitor, changes, groups, deadLetters, retries, shareGroups,
    acls, users, audit, topics, metrics, health, producing, background,
  });
}

/** A commit slower than this is logged at warn, ms. */
const SLOW_COMMIT_MS = 1000;

/**
 * What `GET /health` probes: in cluster mode PostgreSQL as a commit needs it (a read of the partitions table under a
 * lock timeout), the offset store's server, the bucket; a PostgreSQL catalog without the object log by a read of the
 * topics; on the embedded default the offset store and catalog are files
 * of this process, with nothing to probe (a failed write stops the broker's writes: docs/guarantees.md).
 */
function dependencyProbes(options: BrokerOptions, catalogStore: Catalog, offsets: OffsetStore, cluster: ObjectLogs['probes'] | null): DependencyProbe[] {
  const catalog: DependencyProbe = cluster !== null
    ? { name: 'catalog', engine: redactUrl(options.catalog!), probe: `SELECT 1 FROM ${cluster.partitionsTable} (lock_timeout)`, check: cluster.postgres }
    : options.catalog !== undefined
      ? { name: 'catalog', engine: redactUrl(options.catalog), probe: 'a read of the topics', check: async () => void (await catalogStore.topics.list()) }
      : { name: 'catalog', engine: 'sqlite', probe: 'none', check: null };
  const probeOffsets = offsets.probe?.bind(offsets);
  return [
    catalog,
    {
      name: 'offsets', engine: options.offsets === undefined ? 'lmdb' : options.offsets === 'postgres' ? 'postgres (the catalog\'s)' : redactUrl(options.offsets),
      probe: probeOffsets === undefined ? 'none' : options.offsets?.startsWith('redis') ? 'PING' : 'SELECT 1', check: probeOffsets === undefined ? null : () => probeOffsets(),
    },
    cluster !== null
      ? { name: 'log', engine: options.log!.replace(/\?.*$/, ''), probe: 'ListObjectsV2 MaxKeys=1', check: () => cluster.objectStore() }
      : { name: 'log', engine: 'segment files', probe: 'none', check: null },
  ];
}

/**
 * Starts the broker's timers. Retention visits every partition (opening idle ones just for it); compaction only those
 * loaded: a partition not opened since start-up had no appends since, and is compacted when next used or on demand.
 * In cluster mode retention and the object log's upkeep (`jobs`) run under their job leases: one broker at a time.
 */
function startBackground(
  options: BrokerOptions, logger: Logger,
  parts: Pick<BrokerParts, 'catalog' | 'logs' | 'files' | 'placement' | 'groups' | 'shareGroups' | 'monitor'>, jobs: readonly ObjectLogJob[],
): BackgroundTasks {
  const { catalog, logs, files, placement, groups, shareGroups, monitor } = parts;
  const background = new BackgroundTasks(logger, async () => (await catalog.topics.list()).map((t) => t.name));
  background.everyTopic(options.retentionCheckIntervalMs ?? 300_000, 'retention', async (topic) => {
    const moved = await Promise.all(await logs.visit(topic, (log) => Promise.resolve(log.enforceRetention()).catch((err: unknown) => {
      logger.warn({ topic, partition: log.partition, err: (err as Error).message }, 'retention failed');
      return null;
    }), (partition, err) => logger.warn({ topic, partition, err: err.message }, 'retention failed')));
    if (moved.some((m) => m !== null)) await monitor.evaluate({ topic });
  }, placement?.jobGate('job:retention'));
  background.everyTopic(options.compactionIntervalMs ?? 15_000, 'compaction', (topic) => Promise.all(logs.loaded(topic).map((log) => log.compact())));
  background.repeat(options.sessionCheckIntervalMs ?? 500, 'session expiry', () => groups.expireMembers());
  background.repeat(options.sessionCheckIntervalMs ?? 500, 'share member and lock expiry', () => shareGroups.expire());
  background.repeat(options.fileIdleCheckIntervalMs ?? 30_000, 'closing idle files', async () => files.closeIdle());
  for (const job of jobs) background.repeat(job.intervalMs, job.name, job.run, placement?.jobGate(job.lease));
  return background;
}

/**
 * The log on the data directory's segment files: the catalog must describe this data directory's log (one broker
 * per catalog while the log is local), and the log directory must hold the catalog's topics.
 * @throws OnelogError `INVALID_CONFIG` for a catalog of another data directory; `STORAGE_ERROR` for a missing log directory
 */
async function openLocalLogs(
  options: BrokerOptions, catalog: Catalog, topics: readonly { name: string; partitions: number }[], files: FileCache, cleaner: LogCleaner,
  clock: Clock, logger: Logger,
): Promise<LogManager> {
  const ownId = dataDirId(options.dataDir);
  const owner = await catalog.logOwner.claim(ownId);
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

/** Whether `logDir` holds a directory of some partition of `topics` (vacuously so when there is no topic). */
function holdsAnyPartition(logDir: string, topics: readonly { name: string; partitions: number }[]): boolean {
  if (topics.length === 0) return true;
  if (!fs.existsSync(logDir)) return false;
  const present = new Set(fs.readdirSync(logDir));
  return topics.some((t) => Array.from({ length: t.partitions }, (_, p) => `${t.name}-${p}`).some((name) => present.has(name)));
}

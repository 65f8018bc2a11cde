/**
 * Which engine holds the catalog and the offsets, as `onelog serve --catalog URL --offsets URL|postgres` names
 * them: the data directory's SQLite and LMDB by default (the embedded default), or PostgreSQL and Redis for
 * cluster mode (docs/cluster.md). Opens the two stores the broker composes; the remote engines' modules (pg,
 * ioredis) load only when named, so the embedded default starts without them.
 */
import path from 'node:path';
import type { Catalog } from '../catalog/catalog.js';
import { openSqliteCatalog } from '../catalog/sqlite.js';
import { FencedOffsetStore } from '../offsets/fenced-offset-store.js';
import { LmdbOffsetStore } from '../offsets/lmdb-offset-store.js';
import type { OffsetStore, OffsetStoreDescription } from '../offsets/offset-store.js';
import { OnelogError } from '../protocol/errors.js';
import { redactUrl } from '../protocol/urls.js';
import type { Logger } from '../common/logger.js';
import type { WriteFence } from '../common/write-fence.js';
import type { Clock } from '../common/clock.js';
import type { Logs } from '../log/logs.js';
import type { LogCleaner } from '../log/compaction.js';
import { parseS3Url } from '../log/objects/s3-location.js';
import type { S3Location } from '../log/objects/s3-location.js';
import type { ObjectStore, ObjectStoreObserver } from '../log/objects/object-store.js';
import type { ClusterMembership } from '../cluster/membership.js';
import type { ClusterPlacement } from '../cluster/cluster-placement.js';
import type { ObjectLogJob } from '../log/objects/cluster-logs.js';

/** Where the catalog and the offsets live (the broker's `catalog` and `offsets` options). */
export interface StoreEngines {
  /**
   * `postgres://[user[:password]@]host[:port]/database`: the catalog in that PostgreSQL database (shared by
   * every broker of a cluster). @default `<dataDir>/catalog.sqlite`
   */
  catalog?: string;
  /**
   * `redis://[user:password@]host:port[/db][?keyPrefix=P]` (or `rediss://`): the offsets in Redis, under keys
   * starting `P` (default `onelog:`; one prefix per cluster when several share a Redis); `postgres`: in the catalog's
   * PostgreSQL, as a key-value table; `postgres://...`: in that PostgreSQL. @default LMDB in `<dataDir>/offsets/`
   */
  offsets?: string;
  /**
   * `s3://BUCKET[/PREFIX]?endpoint=URL[&region=R]`: the log as objects in that S3-compatible storage, indexed in the
   * catalog's PostgreSQL (cluster mode; needs `catalog`, `offsets` and `brokerId`). Credentials from the standard AWS
   * environment variables. @default segment files in `<dataDir>/log/`
   */
  log?: string;
  /** This broker's id in the cluster, 0 to 2147483647, unique among its brokers (`serve --broker-id`); needs `log`. */
  brokerId?: number;
  /**
   * How long produced batches wait to share one object, ms, 0 to 10000 (`serve --flush-window-ms`): the cost in
   * PUTs per second against acknowledgement latency (docs/cluster.md). @default 50
   */
  flushWindowMs?: number;
  /**
   * How long a partition's or a group's lease lasts past its last renewal, ms, at least 100 (`serve --lease-ms`; with
   * `log`): how long a lost broker's partitions and groups wait for another broker, against how often leases are renewed.
   * @default 10000
   */
  leaseMs?: number;
}

const POSTGRES_URL = /^postgres(ql)?:\/\//;
const REDIS_URL = /^rediss?:\/\//;


/**
 * Checks the engine names before anything is opened.
 * @throws OnelogError `INVALID_CONFIG` naming the option and what it accepts
 */
export function checkStoreEngines(engines: StoreEngines): void {
  if (engines.catalog !== undefined && !POSTGRES_URL.test(engines.catalog)) {
    throw new OnelogError('INVALID_CONFIG', `--catalog takes a PostgreSQL URL (postgres://HOST:PORT/DB), got ${JSON.stringify(redactUrl(engines.catalog))}; ` +
      'leave it out for the data directory\'s SQLite', { option: 'catalog' });
  }
  checkLogEngine(engines);
  const offsets = engines.offsets;
  if (offsets === undefined) return;
  if (offsets === 'postgres' && engines.catalog === undefined) {
    throw new OnelogError('INVALID_CONFIG', '--offsets postgres keeps the offsets in the catalog\'s PostgreSQL: give --catalog postgres://HOST:PORT/DB too, ' +
      'or --offsets postgres://HOST:PORT/DB', { option: 'offsets' });
  }
  if (offsets !== 'postgres' && !POSTGRES_URL.test(offsets) && !REDIS_URL.test(offsets)) {
    throw new OnelogError('INVALID_CONFIG', `--offsets takes redis://HOST:PORT/DB, postgres (the catalog's PostgreSQL) or postgres://HOST:PORT/DB, ` +
      `got ${JSON.stringify(redactUrl(offsets))}; leave it out for the data directory's LMDB`, { option: 'offsets' });
  }
}

/** @throws OnelogError `INVALID_CONFIG` for a cluster log without what it needs */
function checkLogEngine(engines: StoreEngines): void {
  if (engines.log === undefined) {
    for (const [name, value] of [['--broker-id', engines.brokerId], ['--flush-window-ms', engines.flushWindowMs], ['--lease-ms', engines.leaseMs]] as const) {
      if (value !== undefined) {
        throw new OnelogError('INVALID_CONFIG', `${name} is for a log in object storage: give --log s3://BUCKET?endpoint=URL too, or leave ${name} out`,
          { option: name.slice(2) });
      }
    }
    return;
  }
  if (engines.catalog === undefined || engines.offsets === undefined) {
    throw new OnelogError('INVALID_CONFIG', '--log s3://... puts the log in object storage, shared by every broker of a cluster: so must the ' +
      'catalog and the offsets be (give --catalog postgres://HOST:PORT/DB and --offsets redis://HOST:PORT/DB or postgres; docs/cluster.md)', { option: 'log' });
  }
  if (engines.brokerId === undefined || !Number.isInteger(engines.brokerId) || engines.brokerId < 0 || engines.brokerId > 0x7fffffff) {
    throw new OnelogError('INVALID_CONFIG', `--log s3://... needs --broker-id, an integer from 0 to 2147483647 unique among the cluster's brokers, ` +
      `got ${engines.brokerId === undefined ? 'none' : JSON.stringify(engines.brokerId)}`, { option: 'broker-id' });
  }
  parseS3Url(engines.log);
}

/**
 * What cluster mode opens (docs/cluster.md): the log in object storage, this broker's membership of the cluster, and
 * the placement of partitions and jobs.
 */
export interface ObjectLogs {
  logs: Logs;
  membership: ClusterMembership;
  /** Partition leaders and job leases; closed before {@link logs}, whose pool it shares. */
  placement: ClusterPlacement;
  /** The log's upkeep (merging, sweeping, compacting objects), which the broker runs under the jobs' leases. */
  jobs: ObjectLogJob[];
  /** The health probes (`GET /health`): PostgreSQL as commits need it (`PostgresSequencer.probe`), the bucket (`S3ObjectStore.probe`). */
  probes: { postgres: (timeoutMs: number) => Promise<void>; objectStore: () => Promise<void>; partitionsTable: string };
}

/** Who is told of the object log's requests (the broker's cluster metrics). */
export interface ObjectLogObservers {
  /** Each object storage request (`S3ObjectStore`'s `observe`). */
  objectStore?: ObjectStoreObserver;
  /** Each commit transaction that committed, seconds (`PostgresSequencer`'s `onCommit`). */
  committed?: (seconds: number) => void;
}

/** How the log in object storage is compacted (the broker's settings of compaction). */
export interface ObjectLogCompaction {
  /** How often the `job:compact` job runs, ms; 0 = only on demand. @default 15000 (the broker's `compactionIntervalMs`) */
  intervalMs?: number;
  /** The key map's owner, shared with the broker's other compactions. @default the process's default cleaner (64 MiB) */
  cleaner?: LogCleaner;
}

/**
 * Opens the log in object storage (cluster mode, docs/cluster.md): the sequencer's tables in the catalog's PostgreSQL,
 * the objects under `engines.log`; and the broker's membership (registry, group leases) and placement (partition
 * leaders, job leases) in the same database. The modules (the AWS SDK among them) load only here.
 * @throws OnelogError `INVALID_CONFIG`; `STORAGE_ERROR` if PostgreSQL cannot be reached
 */
export async function openObjectLogs(
  engines: StoreEngines, catalog: Catalog, clock: Clock, logger: Logger, compaction: ObjectLogCompaction = {}, observers: ObjectLogObservers = {},
): Promise<ObjectLogs> {
  const [
    { openPool }, { PostgresSequencer }, { S3ObjectStore }, { ObjectLogStore }, { ClusterLogs }, { NamedLeases }, { BrokerRegistry }, { GroupLeases },
    { ClusterMembership }, { ClusterPlacement }, { LeaseBalancer },
  ] = await Promise.all([
    import('../common/postgres.js'), import('../log/objects/postgres-sequencer.js'), import('../log/objects/object-store.js'),
    import('../log/objects/object-log.js'), import('../log/objects/cluster-logs.js'), import('../cluster/leases.js'), import('../cluster/brokers.js'),
    import('../cluster/group-leases.js'), import('../cluster/membership.js'), import('../cluster/cluster-placement.js'),
    import('../cluster/lease-balance.js'),
  ]);
  const url = engines.catalog!;
  const brokerId = engines.brokerId!;
  // A broker paused inside a transaction (the sequencer's lock the partition rows they touch) holds those rows no
  // longer than its leases, so the other brokers can take its partitions over once they expire.
  const location = parseS3Url(engines.log!);
  await claimObjectLog(catalog, location);
  const objects = new S3ObjectStore(location, 1000, observers.objectStore);
  await checkBucket(objects, engines.log!).catch((err: unknown) => {
    objects.close();
    throw err;
  });
  const pool = openPool(url, 8, { idleInTransactionMs: engines.leaseMs ?? 10_000 });
  try {
    const sequencer = await PostgresSequencer.open({ pool, brokerId, leaseMs: engines.leaseMs, listenUrl: url, onCommit: observers.committed });
    const store = await ObjectLogStore.open({
      sequencer, objects, flushWindowMs: engines.flushWindowMs,
      // A broker paused or cut off past its leases learns it at its next flush: said at warn, as Kafka logs a fenced leader.
      onLeaseLost: (lost) => logger.warn(lost, lost.newEpoch === null
        ? 'the partition\'s lease was taken by another broker while this one was not renewing it (paused or cut off past the lease); its produces go there'
        : 'the partition\'s lease expired while this one was not renewing it (paused or cut off past the lease), and was taken anew at a new epoch'),
    });
    logger.info({ log: engines.log, brokerId, flushWindowMs: engines.flushWindowMs ?? 50, leaseMs: engines.leaseMs ?? 10_000 }, 'log in object storage');
    const leases = await NamedLeases.open({ pool, brokerId });
    const registry = await BrokerRegistry.open({ pool, brokerId });
    const groups = new GroupLeases({ leases, registry, leaseMs: engines.leaseMs, logger });
    const logs = await ClusterLogs.open({
      store, sequencer, objects, catalog, pool, clock, logger, compactionIntervalMs: compaction.intervalMs, cleaner: compaction.cleaner,
    });
    const placement = new ClusterPlacement({ leases, leaders: (topics) => sequencer.leaders(topics), partitionLeases: (topic) => sequencer.partitionLeases(topic), logger });
    // Capacity follows the brokers: each pass (every third of a lease, as renewals) hands partitions over to even out.
    const balancer = new LeaseBalancer({
      brokerId, logger, intervalMs: Math.max(1, Math.floor(sequencer.leaseMs / 3)),
      brokers: () => registry.live(),
      leases: () => sequencer.partitionLeases(),
      handOver: (moves) => store.handOver(moves),
      setDraining: async (draining) => {
        store.setDraining(draining);
        await Promise.all([groups.setDraining(draining), placement.setDraining(draining)]);
      },
    });
    return {
      logs, membership: new ClusterMembership(registry, groups, logger, balancer), placement, jobs: logs.backgroundJobs(),
      probes: { postgres: (timeoutMs) => sequencer.probe(timeoutMs), objectStore: () => objects.probe(), partitionsTable: sequencer.partitionsTable },
    };
  } catch (err) {
    objects.close();
    await pool.end().catch(() => {});
    throw err;
  }
}

/**
 * Claims the catalog for the log at `location` (the bucket and prefix, whatever the endpoint), as a data directory
 * claims it for its segment files: every broker of a cluster must write and read the same objects.
 * @throws OnelogError `INVALID_CONFIG` when the catalog describes another log
 */
async function claimObjectLog(catalog: Catalog, location: S3Location): Promise<void> {
  const id = `s3://${location.bucket}/${location.prefix}`;
  const owner = await catalog.logOwner.claim(id);
  if (owner === id) return;
  throw new OnelogError('INVALID_CONFIG', `the catalog describes the log ${owner.startsWith('s3://') ? `at ${owner}` : `of a data directory (${owner})`}, ` +
    `not the one at ${id}: every broker of a cluster is started with the same --log bucket and prefix (docs/cluster.md)`,
  { option: 'log', log: id, catalogLog: owner });
}

/**
 * Lists the bucket once, so a bucket that does not exist or refuses the credentials stops the broker at start, not
 * at its first produce.
 * @throws OnelogError `INVALID_CONFIG` naming `--log`
 */
async function checkBucket(objects: ObjectStore, log: string): Promise<void> {
  try {
    for await (const first of objects.list('objects/')) {
      void first;
      break;
    }
  } catch (err) {
    throw new OnelogError('INVALID_CONFIG', `--log ${log}: the bucket cannot be listed: ${(err as Error).message} (check the bucket, the ` +
      'endpoint and the AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY the broker runs with)', { option: 'log' });
  }
}

/**
 * Opens the catalog: PostgreSQL when `engines.catalog` names one (hearing the other brokers' changes to users and
 * ACLs, its LISTEN connection's backoff on `clock`), else the data directory's SQLite, whose writes run through the
 * broker's write fence.
 */
export async function openCatalog(engines: StoreEngines, dataDir: string, fence: WriteFence, clock: Clock, logger: Logger): Promise<Catalog> {
  if (engines.catalog === undefined) return openSqliteCatalog(path.join(dataDir, 'catalog.sqlite'), fence);
  const { openPostgresCatalog } = await import('../catalog/postgres.js');
  return openPostgresCatalog({ url: engines.catalog, clock, logger });
}


/** Names the offset store of `engines` (see {@link OffsetStoreDescription}). */
export function describeOffsetStore(engines: StoreEngines, dataDir: string): OffsetStoreDescription {
  const offsets = engines.offsets;
  if (offsets === undefined) {
    return { name: `LMDB in ${path.join(dataDir, 'offsets')}`, lostHow: 'is a volume not mounted, or was the data directory restored or copied without offsets/data.mdb?' };
  }
  if (REDIS_URL.test(offsets)) {
    return { name: `Redis ${redactUrl(offsets)}`, lostHow: 'was Redis flushed or restored, or is this another Redis, database or keyPrefix?' };
  }
  return {
    name: `PostgreSQL ${redactUrl(offsets === 'postgres' ? engines.catalog! : offsets)}`,
    lostHow: 'was its offsets table emptied or restored, or is this another database or schema?',
  };
}

/**
 * Opens the offset store. LMDB's writes run through the write fence and first check the disk's room
 * (`checkRoom`); a remote engine's failures are its server's, answered `STORAGE_ERROR` (retriable) and fencing nothing.
 * @throws OnelogError `STORAGE_ERROR` if the server cannot be reached
 */
export async function openOffsetStore(
  engines: StoreEngines, dataDir: string, fence: WriteFence, checkRoom: () => void, logger: Logger,
): Promise<OffsetStore> {
  const offsets = engines.offsets;
  if (offsets === undefined) return new FencedOffsetStore(LmdbOffsetStore.open(path.join(dataDir, 'offsets')), fence, checkRoom);
  if (REDIS_URL.test(offsets)) {
    const { RedisOffsetStore } = await import('../offsets/redis-offset-store.js');
    const url = new URL(offsets);
    const keyPrefix = url.searchParams.get('keyPrefix') ?? undefined;
    url.searchParams.delete('keyPrefix');
    const store = await RedisOffsetStore.open({ url: url.toString(), keyPrefix });
    logger.info({ offsets: redactUrl(offsets), durability: store.durability }, 'offsets in Redis');
    if (!store.durability.startsWith('appendonly yes, appendfsync always')) {
      logger.warn({ durability: store.durability }, 'Redis does not sync every write: an acknowledged commit may be lost if Redis crashes ' +
        '(set appendonly yes and appendfsync always for the guarantee of the embedded default)');
    }
    return store;
  }
  const url = offsets === 'postgres' ? engines.catalog! : offsets;
  logger.info({ offsets: redactUrl(url) }, 'offsets in PostgreSQL');
  const { PostgresKvOffsetStore } = await import('../offsets/postgres-kv-offset-store.js');
  return PostgresKvOffsetStore.open({ url });
}

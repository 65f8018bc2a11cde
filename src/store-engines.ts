/**
 * Which engine holds the catalog and the offsets, as `onelog serve --catalog URL --offsets URL|postgres` names
 * them: the data directory's SQLite and LMDB by default (the embedded default), or PostgreSQL and Redis for
 * cluster mode (docs/cluster.md). Opens the two stores the broker composes; the remote engines' modules (pg,
 * ioredis) load only when named, so the embedded default starts without them.
 */
import path from 'node:path';
import type { Catalog } from './catalog/catalog.js';
import { openSqliteCatalog } from './catalog/sqlite.js';
import { FencedOffsetStore } from './offsets/fenced-offset-store.js';
import { LmdbOffsetStore } from './offsets/lmdb-offset-store.js';
import type { OffsetStore } from './offsets/offset-store.js';
import { OnelogError } from './protocol/errors.js';
import { redactUrl } from './protocol/urls.js';
import type { Logger } from './logger.js';
import type { WriteFence } from './write-fence.js';

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

/**
 * Opens the catalog: PostgreSQL when `engines.catalog` names one, else the data directory's SQLite, whose
 * writes run through the broker's write fence.
 */
export async function openCatalog(engines: StoreEngines, dataDir: string, fence: WriteFence): Promise<Catalog> {
  if (engines.catalog === undefined) return openSqliteCatalog(path.join(dataDir, 'catalog.sqlite'), fence);
  const { openPostgresCatalog } = await import('./catalog/postgres.js');
  return openPostgresCatalog({ url: engines.catalog });
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
    const { RedisOffsetStore } = await import('./offsets/redis-offset-store.js');
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
  const { PostgresKvOffsetStore } = await import('./offsets/postgres-kv-offset-store.js');
  return PostgresKvOffsetStore.open({ url });
}

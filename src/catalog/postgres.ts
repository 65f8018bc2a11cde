/**
 * The catalog on PostgreSQL (`pg`), for cluster mode: every broker of a cluster shares one catalog. The same
 * Kysely queries and migrations as SQLite's ({@link Catalog}); brokers starting together migrate once (Kysely's
 * migrator holds an advisory lock on PostgreSQL). A change resolves once its transaction committed (synced with
 * the server's default `synchronous_commit = on`). No write fence: a failed statement is the server's or the
 * network's, reported to its caller, and the next one may succeed. A change to users or ACLs NOTIFYs the catalog's
 * channel in its transaction, and every broker LISTENs to it ({@link CatalogChanges}).
 */
import { createHash } from 'node:crypto';
import { PostgresDialect, sql } from 'kysely';
import type { CompiledQuery, QueryResult } from 'kysely';
import { systemClock } from '../common/clock.js';
import type { Clock } from '../common/clock.js';
import { silentLogger } from '../common/logger.js';
import type { Logger } from '../common/logger.js';
import { listen, openPool, postgresFailure } from '../common/postgres.js';
import type { PostgresListener } from '../common/postgres.js';
import { OnelogError } from '../protocol/errors.js';
import { Catalog } from './catalog.js';
import type { CatalogChanges } from './changes.js';
import { wrappedDialect } from './fenced-dialect.js';

/** The payload of a change to users or ACLs on the catalog's channel. */
const SECURITY_CHANGED = 'security';

/**
 * Whether a failed statement failed for the server or the network (not for the request: a constraint, a bad
 * value), by SQLSTATE class (08 connection, 53 resources, 57 operator intervention, 58 system) or the client's
 * socket errors and timeouts.
 */
function isServerFailure(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^(08|53|57|58)/.test(code)) return true;
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return true; // ECONNREFUSED, ECONNRESET, ETIMEDOUT, ...
  return /Connection terminated|timeout exceeded|Query read timeout|connection timeout/i.test((err as Error | null)?.message ?? '');
}

/** Options of {@link openPostgresCatalog}. */
export interface PostgresCatalogOptions {
  /** `postgres://user[:password]@host:port/database[?options=...]`, as `pg` reads it. */
  url: string;
  /** Most connections the catalog's pool opens. @default 8 */
  maxConnections?: number;
  /** The waits between attempts to LISTEN again after the connection was lost are taken on it. @default the system clock */
  clock?: Clock;
  /** Where a lost and regained LISTEN connection is logged. @default silent */
  logger?: Logger;
}

/**
 * The changes feed of the catalog in `schema`: on the channel `onelog_catalog_` and a hash of the schema (channels
 * are shared by the whole database, and each cluster has its own schema, as the sequencer's), heard on a connection
 * of its own that comes back when lost; `changed` is called then too, as a change may have been announced while
 * it was down.
 */
function catalogChanges(options: PostgresCatalogOptions, schema: string): CatalogChanges {
  const channel = `onelog_catalog_${createHash('sha1').update(schema).digest('hex').slice(0, 12)}`;
  let listener: PostgresListener | undefined;
  return {
    announce: async (tx) => {
      await sql`SELECT pg_notify(${channel}, ${SECURITY_CHANGED})`.execute(tx);
    },
    listen: async (changed) => {
      listener = await listen({
        url: options.url, channel, clock: options.clock ?? systemClock, logger: options.logger ?? silentLogger,
        onNotification: (payload) => {
          if (payload === SECURITY_CHANGED) changed();
        },
        onReconnect: changed,
      });
    },
    close: async () => {
      await listener?.close();
    },
  };
}

/**
 * The refusal of a connection whose `search_path` names no schema that exists (PostgreSQL's `current_schema()` is
 * then null): the catalog would have nowhere to create its tables.
 */
function noSchema(searchPath: string): OnelogError {
  const names = searchPath.split(',').map((n) => n.trim()).filter((n) => n !== '' && n !== '"$user"');
  const first = names[0] ?? 'onelog';
  return new OnelogError('INVALID_CONFIG', `--catalog: the schema ${names.length === 1 ? `${first} named by search_path does not exist` :
    `named by search_path (${searchPath || 'empty'}) does not exist`}: create it first (psql: CREATE SCHEMA ${first};), or name an existing ` +
    'one in the URL (?options=-csearch_path%3DSCHEMA; docs/cluster.md)', { option: 'catalog', searchPath });
}

/**
 * Connects to the database and applies pending migrations; the catalog owns its pool (closed by
 * {@link Catalog.close}). Later, a statement that fails for the server or the network answers `STORAGE_ERROR`
 * (retriable); one the server refuses for the request (a constraint) passes as it is, for the catalog's checks.
 * @throws OnelogError `INVALID_CONFIG` when no schema named by the connection's `search_path` exists (saying to create
 *   it); `STORAGE_ERROR` naming --catalog if the server cannot be reached, refuses the connection
 *   (no such database or role), a migration fails or the catalog's channel cannot be LISTENed to
 */
export async function openPostgresCatalog(options: PostgresCatalogOptions): Promise<Catalog> {
  const pool = openPool(options.url, options.maxConnections ?? 8);
  try {
    // Kysely looks for its migration tables in every schema unless told which: another schema's would be taken
    // for the catalog's (two catalogs, or another Kysely application, in one database).
    const { rows: [row] } = await pool.query<{ schema: string | null; search_path: string }>(
      'SELECT current_schema() AS schema, current_setting(\'search_path\') AS search_path');
    if (!row?.schema) throw noSchema(row?.search_path ?? '');
    // A failure of the server or the network answers STORAGE_ERROR (retriable) naming the catalog, not INTERNAL_ERROR.
    const dialect = wrappedDialect(new PostgresDialect({ pool }), (connection) => ({
      async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
        try {
          return await connection.executeQuery<R>(query);
        } catch (err) {
          throw isServerFailure(err) ? postgresFailure(err, 'catalog') : err;
        }
      },
      streamQuery: (query, chunkSize) => connection.streamQuery(query, chunkSize),
    }));
    return await Catalog.open(dialect, { migrationTableSchema: row.schema, changes: catalogChanges(options, row.schema) });
  } catch (err) {
    await pool.end().catch(() => {});
    throw postgresFailure(err, 'opening the catalog (--catalog)');
  }
}

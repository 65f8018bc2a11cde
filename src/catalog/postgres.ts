/**
 * The catalog on PostgreSQL (`pg`), for cluster mode: every broker of a cluster shares one catalog. The same
 * Kysely queries and migrations as SQLite's ({@link Catalog}); brokers starting together migrate once (Kysely's
 * migrator holds an advisory lock on PostgreSQL). A change resolves once its transaction committed (synced with
 * the server's default `synchronous_commit = on`). No write fence: a failed statement is the server's or the
 * network's, reported to its caller, and the next one may succeed.
 */
import { PostgresDialect } from 'kysely';
import type { CompiledQuery, QueryResult } from 'kysely';
import { openPool, postgresFailure } from '../postgres.js';
import { Catalog } from './catalog.js';
import { wrappedDialect } from './fenced-dialect.js';

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
}

/**
 * Connects to the database and applies pending migrations; the catalog owns its pool (closed by
 * {@link Catalog.close}). Later, a statement that fails for the server or the network answers `STORAGE_ERROR`
 * (retriable); one the server refuses for the request (a constraint) passes as it is, for the catalog's checks.
 * @throws OnelogError `STORAGE_ERROR` naming --catalog if the server cannot be reached, refuses the connection
 *   (no such database or role) or a migration fails
 */
export async function openPostgresCatalog(options: PostgresCatalogOptions): Promise<Catalog> {
  const pool = openPool(options.url, options.maxConnections ?? 8);
  try {
    // Kysely looks for its migration tables in every schema unless told which: another schema's would be taken
    // for the catalog's (two catalogs, or another Kysely application, in one database).
    const { rows: [row] } = await pool.query<{ schema: string | null }>('SELECT current_schema() AS schema');
    if (!row?.schema) throw new Error('the connection has no current schema: set search_path (e.g. ?options=-c search_path=onelog)');
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
    return await Catalog.open(dialect, row.schema);
  } catch (err) {
    await pool.end().catch(() => {});
    throw postgresFailure(err, 'opening the catalog (--catalog)');
  }
}

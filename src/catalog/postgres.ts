/**
 * The catalog on PostgreSQL (`pg`), for cluster mode: every broker of a cluster shares one catalog. The same
 * Kysely queries and migrations as SQLite's ({@link Catalog}); brokers starting together migrate once (Kysely's
 * migrator holds an advisory lock on PostgreSQL). A change resolves once its transaction committed (synced with
 * the server's default `synchronous_commit = on`). No write fence: a failed statement is the server's or the
 * network's, reported to its caller, and the next one may succeed.
 */
import pg from 'pg';
import { PostgresDialect } from 'kysely';
import { Catalog } from './catalog.js';

/** Options of {@link openPostgresCatalog}. */
export interface PostgresCatalogOptions {
  /** `postgres://user[:password]@host:port/database[?options=...]`, as `pg` reads it. */
  url: string;
  /** Most connections the catalog's pool opens. @default 8 */
  maxConnections?: number;
}

/**
 * Connects to the database and applies pending migrations; the catalog owns its pool (closed by
 * {@link Catalog.close}).
 * @throws Error if the server cannot be reached or a migration fails
 */
export async function openPostgresCatalog(options: PostgresCatalogOptions): Promise<Catalog> {
  const pool = new pg.Pool({ connectionString: options.url, max: options.maxConnections ?? 8 });
  pool.on('error', () => {}); // an idle client's lost connection: the pool drops it; the next query reports its own error
  try {
    // Kysely looks for its migration tables in every schema unless told which: another schema's would be taken
    // for the catalog's (two catalogs, or another Kysely application, in one database).
    const { rows: [row] } = await pool.query<{ schema: string | null }>('SELECT current_schema() AS schema');
    if (!row?.schema) throw new Error('the connection has no current schema: set search_path (e.g. ?options=-c search_path=onelog)');
    return await Catalog.open(new PostgresDialect({ pool }), row.schema);
  } catch (err) {
    await pool.end().catch(() => {});
    throw err;
  }
}

/**
 * The embedded catalog engine: SQLite through better-sqlite3 (12.x), in WAL mode with foreign keys on and
 * `synchronous = FULL`, so a catalog change that returned survives a crash.
 */
import Database from 'better-sqlite3';
import { SqliteDialect } from 'kysely';
import type { WriteFence } from '../write-fence.js';
import { Catalog } from './catalog.js';
import { fencedDialect, isSqliteStorageFailure } from './fenced-dialect.js';

/**
 * Opens the catalog in the SQLite file at `file` (created if missing; `:memory:` for a throwaway one).
 * @param fence the broker's stop on writes: SQLite's I/O errors stop them (see fenced-dialect.ts)
 */
export function openSqliteCatalog(file: string, fence?: WriteFence): Promise<Catalog> {
  const database = new Database(file);
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = FULL');
  database.pragma('foreign_keys = ON');
  const dialect = new SqliteDialect({ database });
  return Catalog.open(fence ? fencedDialect(dialect, fence, isSqliteStorageFailure) : dialect);
}

/**
 * The embedded catalog engine: SQLite through better-sqlite3 (12.x), in WAL mode with foreign keys on and
 * `synchronous = FULL`, so a catalog change that returned survives a crash.
 */
import Database from 'better-sqlite3';
import { SqliteDialect } from 'kysely';
import { Catalog } from './catalog.js';

/**
 * Opens the catalog in the SQLite file at `file` (created if missing; `:memory:` for a throwaway one).
 */
export function openSqliteCatalog(file: string): Promise<Catalog> {
  const database = new Database(file);
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = FULL');
  database.pragma('foreign_keys = ON');
  return Catalog.open(new SqliteDialect({ database }));
}

/**
 * The embedded catalog engine: SQLite through better-sqlite3 (12.x), in WAL mode with foreign keys on and
 * `synchronous = FULL`, so a catalog change that returned survives a crash. Its file is created 0600 before SQLite
 * opens it, and SQLite gives its `-wal` and `-shm` files the mode of the database file (common/file-modes.ts).
 */
import fs from 'node:fs';
import Database from 'better-sqlite3';
import { SqliteDialect, SqliteDriver } from 'kysely';
import type { DatabaseConnection, Driver } from 'kysely';
import { FILE_MODE } from '../common/file-modes.js';
import type { WriteFence } from '../common/write-fence.js';
import { Catalog } from './catalog.js';
import { fencedDialect, isSqliteStorageFailure } from './fenced-dialect.js';

/**
 * Kysely's SQLite driver, rolling back only a transaction still open. On a full disk, an I/O error or out of
 * memory SQLite may roll the whole transaction back itself ("Response To Errors Within A Transaction",
 * https://sqlite.org/lang_transaction.html); Kysely's ROLLBACK then fails with "cannot rollback - no transaction is
 * active", and that error replaced the statement's own (a full disk answered INTERNAL_ERROR, not RESOURCE_EXHAUSTED).
 */
class SqliteCatalogDriver extends SqliteDriver {
  constructor(private readonly database: Database.Database) {
    super({ database });
  }

  override async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    if (this.database.inTransaction) await super.rollbackTransaction(connection);
  }
}

/** SQLite's dialect with {@link SqliteCatalogDriver}. */
class SqliteCatalogDialect extends SqliteDialect {
  constructor(private readonly database: Database.Database) {
    super({ database });
  }

  override createDriver(): Driver {
    return new SqliteCatalogDriver(this.database);
  }
}

/**
 * Opens the catalog in the SQLite file at `file` (created if missing; `:memory:` for a throwaway one).
 * @param fence the broker's stop on writes: SQLite's I/O errors stop them (see fenced-dialect.ts)
 */
export function openSqliteCatalog(file: string, fence?: WriteFence): Promise<Catalog> {
  if (file !== ':memory:') fs.closeSync(fs.openSync(file, 'a', FILE_MODE));
  const database = new Database(file);
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = FULL');
  database.pragma('foreign_keys = ON');
  const dialect = new SqliteCatalogDialect(database);
  return Catalog.open(fence ? fencedDialect(dialect, fence, isSqliteStorageFailure) : dialect);
}

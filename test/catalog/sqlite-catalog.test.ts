/**
 * The catalog contract on SQLite (the embedded default), and what is SQLite's own: WAL mode, a catalog in memory.
 */
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { openSqliteCatalog } from '../../src/catalog/sqlite.js';
import { tmpDir } from '../helpers/tmp.js';
import { catalogContract, topic } from './catalog.contract.js';

catalogContract('SQLite', async () => {
  const file = path.join(tmpDir(), 'catalog.sqlite');
  let raw: Database.Database | undefined;
  return {
    shared: false,
    open: () => openSqliteCatalog(file),
    async sql(statement, params = []) {
      if (!raw) {
        raw = new Database(file);
        raw.pragma('foreign_keys = ON');
      }
      const prepared = raw.prepare(statement);
      return prepared.reader ? prepared.all(...params) as Array<Record<string, unknown>> : (prepared.run(...params), []);
    },
    async dispose() {
      raw?.close();
    },
  };
});

describe('SQLite catalog', () => {
  it('runs in WAL mode', async () => {
    const file = path.join(tmpDir(), 'catalog.db');
    const c = await openSqliteCatalog(file);
    const db = new Database(file);
    try {
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    } finally {
      db.close();
      await c.close();
    }
  });

  it('works in memory too', async () => {
    const c = await openSqliteCatalog(':memory:');
    await c.topics.create(topic('t'));
    expect(await c.topics.list()).toEqual([topic('t')]);
    await c.close();
  });
});

/**
 * The store engines' names and what the broker says of them: credentials redacted in logs and errors, and a
 * PostgreSQL catalog that cannot be reached, or whose connection breaks, answered STORAGE_ERROR naming the
 * catalog, never ending the process (a connection reset while a query is in flight, through a loopback proxy).
 */
import { describe, expect, it } from 'vitest';
import { openPostgresCatalog } from '../../src/catalog/postgres.js';
import { redactUrl } from '../../src/protocol/urls.js';
import { DEFAULT_TOPIC_CONFIG } from '../../src/protocol/topic-config.js';
import { pgProxy } from '../helpers/pg-proxy.js';
import { pgSchema } from '../helpers/services.js';

describe('store engines', () => {
  it('redacts user-info (to its last @) and password parameters', () => {
    expect(redactUrl('redis://default:p@ss@127.0.0.1:6379/0')).toBe('redis://***@127.0.0.1:6379/0');
    expect(redactUrl('postgres://u:secret@db:5432/x')).toBe('postgres://***@db:5432/x');
    expect(redactUrl('postgres://db:5432/x?user=postgres&password=secretpw&sslmode=require')).toBe('postgres://db:5432/x?user=postgres&password=***&sslmode=require');
    expect(redactUrl('redis://127.0.0.1:6379/0?keyPrefix=a@b')).toBe('redis://127.0.0.1:6379/0?keyPrefix=a@b');
  });

  it('a catalog that cannot be opened is STORAGE_ERROR naming --catalog', async () => {
    await expect(openPostgresCatalog({ url: 'postgres://postgres@127.0.0.1:5432/onelog_no_such_database' })).rejects.toMatchObject({
      code: 'STORAGE_ERROR', message: expect.stringMatching(/--catalog.*onelog_no_such_database/) as unknown,
    });
  });

  it('a connection reset while a catalog query is in flight fails that query with STORAGE_ERROR; the process goes on', async () => {
    const schema = await pgSchema('reset');
    const proxy = await pgProxy();
    try {
      const catalog = await openPostgresCatalog({ url: proxy.via(schema.url) });
      await catalog.topics.create({ name: 't', partitions: 1, createdAt: 1, ...DEFAULT_TOPIC_CONFIG });
      // A long statement in flight when every connection is reset.
      const inFlight = (catalog as unknown as { db: { executeQuery(q: unknown): Promise<unknown> } }).db;
      const { sql } = await import('kysely');
      const sleeping = sql`select pg_sleep(5)`.execute(inFlight as never);
      setTimeout(() => proxy.resetAll(), 200);
      await expect(sleeping).rejects.toMatchObject({ code: 'STORAGE_ERROR', context: { store: 'postgres' } });
      // New connections work again.
      expect((await catalog.topics.list()).map((t) => t.name)).toEqual(['t']);
      await catalog.close();
    } finally {
      proxy.close();
      await schema.drop();
    }
  });
});

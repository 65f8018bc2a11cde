/**
 * The catalog contract on the machine's PostgreSQL, each fixture in a schema of its own; and what is
 * PostgreSQL's own: brokers opening one catalog at once migrate it once, names order by code point even
 * in a database whose collation would not, and each hears the changes to users and ACLs made through another.
 */
import { describe, expect, it, vi } from 'vitest';
import { openPostgresCatalog } from '../../src/catalog/postgres.js';
import { ManualClock } from '../../src/common/clock.js';
import { LISTEN_RECONNECT } from '../../src/common/postgres.js';
import type { AclBinding } from '../../src/protocol/security.js';
import { newToken } from '../../src/security/tokens.js';
import { pgProxy } from '../helpers/pg-proxy.js';
import { pgSchema } from '../helpers/services.js';
import { catalogContract, topic } from './catalog.contract.js';

catalogContract('PostgreSQL', async () => {
  const schema = await pgSchema('catalog');
  const pool = schema.pool(2);
  return {
    shared: true,
    open: () => openPostgresCatalog({ url: schema.url }),
    async sql(statement, params = []) {
      let n = 0;
      return (await pool.query(statement.replace(/\?/g, () => `$${++n}`), params)).rows as Array<Record<string, unknown>>;
    },
    dispose: () => schema.drop(),
  };
});

describe('PostgreSQL catalog', () => {
  it('three brokers opening a new catalog at once migrate it once and share it', async () => {
    const schema = await pgSchema('catalog');
    try {
      const catalogs = await Promise.all([1, 2, 3].map(() => openPostgresCatalog({ url: schema.url })));
      await catalogs[0]!.topics.create(topic('t'));
      for (const c of catalogs) expect(await c.topics.list()).toEqual([topic('t')]);
      const { rows } = await schema.pool(1).query('select count(*)::int as n from kysely_migration');
      const { migrations } = await import('../../src/catalog/migrations.js');
      expect(rows[0].n).toBe(Object.keys(migrations).length);
      for (const c of catalogs) await c.close();
    } finally {
      await schema.drop();
    }
  });

  it('two catalogs in two schemas of one database keep their own migration tables', async () => {
    const [one, two] = [await pgSchema('catalog'), await pgSchema('catalog')];
    try {
      const first = await openPostgresCatalog({ url: one.url });
      // Kysely looks for its migration tables in every schema unless told which: the first schema's were taken
      // for the second's, whose lock table then did not exist.
      const second = await openPostgresCatalog({ url: two.url });
      await second.topics.create(topic('only-in-two'));
      expect(await first.topics.list()).toEqual([]);
      const { rows } = await one.pool(1).query(`select table_schema from information_schema.tables where table_name = 'kysely_migration_lock'
        and table_schema in ($1, $2) order by 1`, [one.name, two.name]);
      expect(rows.map((r: { table_schema: string }) => r.table_schema)).toEqual([one.name, two.name].sort());
      await first.close();
      await second.close();
    } finally {
      await one.drop();
      await two.drop();
    }
  });

  it('the listed names take the "C" collation, whatever the database\'s own', async () => {
    const schema = await pgSchema('catalog');
    try {
      const c = await openPostgresCatalog({ url: schema.url });
      const { rows } = await schema.pool(1).query(`select table_name, column_name, collation_name from information_schema.columns
        where table_schema = $1 and table_name = 'topics' and column_name = 'name'`, [schema.name]);
      expect(rows).toEqual([{ table_name: 'topics', column_name: 'name', collation_name: 'C' }]);
      await c.close();
    } finally {
      await schema.drop();
    }
  });

  it('hears every change to users and ACLs made through another catalog of its schema, and is told again once its lost LISTEN connection is back', async () => {
    const schema = await pgSchema('catalog');
    // The listening catalog's connections go through a proxy, which can cut them all and refuse new ones.
    const proxy = await pgProxy();
    const clock = new ManualClock();
    const writer = await openPostgresCatalog({ url: schema.url });
    const hearer = await openPostgresCatalog({ url: proxy.via(schema.url), clock });
    let heard = 0;
    const waiting: Array<() => void> = [];
    hearer.onSecurityChange(() => {
      heard++;
      waiting.shift()?.();
    });
    /** Runs `change` and answers how many times the hearer was told, once it was told of `change`'s announcement. */
    const told = async (change: () => Promise<unknown>) => {
      const before = heard;
      const next = new Promise<void>((resolve) => waiting.push(resolve));
      await change();
      await next;
      return heard - before;
    };
    const user = (name: string) => ({ name, admin: false, ...newToken().stored, createdAt: 1 });
    const acl: AclBinding = { principal: 'alice', resourceType: 'topic', resourceName: 't', patternType: 'literal', operation: 'read', permission: 'allow' };
    try {
      expect(await told(() => writer.users.create(user('alice')))).toBe(1);
      expect(await told(() => writer.acls.add(acl))).toBe(1);
      expect(await told(() => writer.acls.remove(acl))).toBe(1);
      expect(await told(() => writer.users.replaceToken('alice', newToken().stored, 2))).toBe(1);
      expect(await told(() => writer.users.delete('alice'))).toBe(1);

      // The LISTEN connection lost, and refused at once again: the next attempt waits on the clock's backoff; once
      // back, the hearer is told (a change may have been missed meanwhile), then hears changes again.
      proxy.refusing = true;
      proxy.resetAll();
      await vi.waitFor(() => expect(clock.sleeping).toBe(1), { timeout: 5000, interval: 10 });
      await writer.users.create(user('carol')); // announced while nobody listens
      proxy.refusing = false;
      expect(await told(async () => clock.advance(LISTEN_RECONNECT.initialMs))).toBe(1);
      expect(await told(() => writer.users.delete('carol'))).toBe(1);
    } finally {
      await hearer.close();
      await writer.close();
      proxy.close();
      await schema.drop();
    }
  });
});

import { DEFAULT_HEALTH_SETTINGS } from '../../src/protocol/monitoring-api.js';
import { DEFAULT_TOPIC_CONFIG } from '../../src/protocol/topic-config.js';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import type { Catalog, SubscriptionRecord, TopicRecord } from '../../src/catalog/catalog.js';
import { openSqliteCatalog } from '../../src/catalog/sqlite.js';
import { migrations } from '../../src/catalog/migrations.js';
import { OnelogError } from '../../src/protocol/errors.js';
import type { DeliveryMode, StartPolicy } from '../../src/protocol/types.js';
import { tmpDir } from '../helpers/tmp.js';
import { asyncCodeOf } from '../helpers/errors.js';

const T = 1_700_000_000_000;

const open = new Set<Catalog>();
const raws = new Set<Database.Database>();
afterEach(async () => {
  for (const c of open) await c.close();
  open.clear();
  for (const r of raws) r.close();
  raws.clear();
});

async function catalog(file: string): Promise<Catalog> {
  const c = await openSqliteCatalog(file);
  open.add(c);
  return c;
}

async function shut(c: Catalog): Promise<void> {
  open.delete(c);
  await c.close();
}

/** A second, raw connection on the same file, to look under the query layer. */
function raw(file: string): Database.Database {
  const db = new Database(file);
  db.pragma('foreign_keys = ON');
  raws.add(db);
  return db;
}

function topic(name: string, overrides: Partial<TopicRecord> = {}): TopicRecord {
  return {
    name,
    partitions: 3,
    ...DEFAULT_TOPIC_CONFIG,
    createdAt: T,
    ...overrides,
  };
}

function sub(groupId: string, topicName: string, deliveryMode: DeliveryMode = 'pull', startPolicy: StartPolicy = 'latest', createdAt = T): SubscriptionRecord {
  return {
    groupId, topic: topicName, deliveryMode, startPolicy, onOutOfRange: 'pause', pushEndpoint: null, maxInFlight: 1, createdAt,
    retry: null, deadLetterTopic: null, retryTiers: 0, deadLetterAlertDepth: 1, webhookMaxAttempts: 5, ...DEFAULT_HEALTH_SETTINGS,
  };
}

describe('Catalog on SQLite', () => {
  it('opening the same file twice applies the migrations once and keeps the data', async () => {
    const file = path.join(tmpDir(), 'catalog.db');
    let c = await catalog(file);
    await c.createTopic(topic('edits'));
    await c.upsertSubscription(sub('g', 'edits'));
    await shut(c);
    c = await catalog(file);
    expect(await c.getTopic('edits')).toEqual(topic('edits'));
    expect(await c.listSubscriptions('g')).toEqual([sub('g', 'edits')]);
    await shut(c);
    c = await catalog(file);
    const applied = raw(file).prepare('select name from kysely_migration order by name').all();
    expect(applied).toEqual(Object.keys(migrations).sort().map((name) => ({ name })));
    expect(await c.listTopics()).toEqual([topic('edits')]);
  });

  it('runs in WAL mode with foreign keys on', async () => {
    const file = path.join(tmpDir(), 'catalog.db');
    await catalog(file);
    const db = new Database(file);
    raws.add(db);
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
  });

  it('works in memory too', async () => {
    const c = await catalog(':memory:');
    await c.createTopic(topic('t'));
    expect(await c.listTopics()).toEqual([topic('t')]);
  });

  describe('topics', () => {
    it('creates, gets and lists topics by name, with every field kept', async () => {
      const c = await catalog(path.join(tmpDir(), 'catalog.db'));
      expect(await c.listTopics()).toEqual([]);
      expect(await c.getTopic('nope')).toBeUndefined();
      const b = topic('b', { partitions: 1, cleanupPolicy: 'compact,delete', retentionMs: -1, retentionBytes: 9_007_199_254_740_991, segmentBytes: 4096, createdAt: T + 5 });
      const a = topic('a', { cleanupPolicy: 'compact' });
      const a1 = topic('a.1');
      expect(await c.createTopic(b)).toEqual(b);
      await c.createTopic(a1);
      await c.createTopic(a);
      expect(await c.getTopic('b')).toEqual(b);
      expect(await c.listTopics()).toEqual([a, a1, b]);
    });

    it('refuses a second topic of the same name with TOPIC_ALREADY_EXISTS, keeping the first', async () => {
      const c = await catalog(path.join(tmpDir(), 'catalog.db'));
      await c.createTopic(topic('t', { partitions: 4 }));
      let err: unknown;
      try {
        await c.createTopic(topic('t', { partitions: 1 }));
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(OnelogError);
      expect(err).toMatchObject({ code: 'TOPIC_ALREADY_EXISTS', context: { topic: 't', partitions: 4 } });
      expect(await c.getTopic('t')).toEqual(topic('t', { partitions: 4 }));
    });

    it('two concurrent creates of the same topic: one wins, the other gets TOPIC_ALREADY_EXISTS', async () => {
      const c = await catalog(path.join(tmpDir(), 'catalog.db'));
      const results = await Promise.all([
        asyncCodeOf(c.createTopic(topic('t', { partitions: 2 }))),
        asyncCodeOf(c.createTopic(topic('t', { partitions: 5 }))),
      ]);
      expect(results.sort()).toEqual(['TOPIC_ALREADY_EXISTS', 'no error']);
      expect(await c.listTopics()).toHaveLength(1);
    });

    it('the schema refuses fewer than one partition', async () => {
      const file = path.join(tmpDir(), 'catalog.db');
      const c = await catalog(file);
      await expect(c.createTopic(topic('t', { partitions: 0 }))).rejects.toThrow(/CHECK constraint failed/);
      expect(await c.listTopics()).toEqual([]);
    });
  });

  describe('groups and subscriptions', () => {
    it('upsertSubscription creates the group and the subscription, then updates mode and start policy only', async () => {
      const c = await catalog(path.join(tmpDir(), 'catalog.db'));
      await c.createTopic(topic('t'));
      expect(await c.getGroup('g')).toBeUndefined();
      expect(await c.getSubscription('g', 't')).toBeUndefined();
      expect(await c.upsertSubscription(sub('g', 't', 'pull', 'earliest', T))).toEqual(sub('g', 't', 'pull', 'earliest', T));
      expect(await c.getGroup('g')).toEqual({ groupId: 'g', createdAt: T });
      // The second call changes mode and start policy; creation times stay those of the first.
      expect(await c.upsertSubscription(sub('g', 't', 'push', 'latest', T + 99))).toEqual(sub('g', 't', 'push', 'latest', T));
      expect(await c.getSubscription('g', 't')).toEqual(sub('g', 't', 'push', 'latest', T));
      expect(await c.listGroups()).toEqual([{ groupId: 'g', createdAt: T }]);
      expect(await c.listSubscriptions('g')).toEqual([sub('g', 't', 'push', 'latest', T)]);
    });

    it('lists a group\'s subscriptions by topic, and groups by id', async () => {
      const c = await catalog(path.join(tmpDir(), 'catalog.db'));
      for (const name of ['c', 'a', 'b']) await c.createTopic(topic(name));
      await c.upsertSubscription(sub('g2', 'a', 'push', 'earliest', T + 3));
      await c.upsertSubscription(sub('g', 'c', 'pull', 'latest', T + 1));
      await c.upsertSubscription(sub('g', 'a', 'push', 'earliest', T + 2));
      await c.upsertSubscription(sub('a-group', 'b', 'pull', 'latest', T + 4));
      expect(await c.listSubscriptions('g')).toEqual([sub('g', 'a', 'push', 'earliest', T + 2), sub('g', 'c', 'pull', 'latest', T + 1)]);
      expect(await c.listSubscriptions('g2')).toEqual([sub('g2', 'a', 'push', 'earliest', T + 3)]);
      expect(await c.listSubscriptions('nobody')).toEqual([]);
      expect(await c.listGroups()).toEqual([
        { groupId: 'a-group', createdAt: T + 4 },
        { groupId: 'g', createdAt: T + 1 },
        { groupId: 'g2', createdAt: T + 3 },
      ]);
    });

    it('a subscription to an unknown topic is refused and leaves no group behind (one transaction)', async () => {
      const c = await catalog(path.join(tmpDir(), 'catalog.db'));
      await expect(c.upsertSubscription(sub('g', 'missing'))).rejects.toMatchObject({ code: 'UNKNOWN_TOPIC' });
      expect(await c.getGroup('g')).toBeUndefined();
      expect(await c.listGroups()).toEqual([]);
    });

    it('refuses a bad delivery mode or start policy, through the API and in plain SQL', async () => {
      const file = path.join(tmpDir(), 'catalog.db');
      const c = await catalog(file);
      await c.createTopic(topic('t'));
      await expect(c.upsertSubscription(sub('g', 't', 'carrier-pigeon' as DeliveryMode))).rejects.toThrow(/CHECK constraint failed/);
      await expect(c.upsertSubscription(sub('g', 't', 'pull', 'middle' as StartPolicy))).rejects.toThrow(/CHECK constraint failed/);
      expect(await c.listGroups()).toEqual([]);
      const db = raw(file);
      db.prepare('insert into groups (group_id, created_at) values (?, ?)').run('g', T);
      const insert = db.prepare(
        'insert into subscriptions (group_id, topic, delivery_mode, start_policy, created_at) values (?, ?, ?, ?, ?)',
      );
      expect(() => insert.run('g', 't', 'PULL', 'latest', T)).toThrow(/CHECK constraint failed/);
      expect(() => insert.run('g', 't', 'pull', 'oldest', T)).toThrow(/CHECK constraint failed/);
      expect(() => insert.run('g', 't', null, 'latest', T)).toThrow(/NOT NULL constraint failed/);
      insert.run('g', 't', 'push', 'earliest', T);
      expect(() => db.prepare("update subscriptions set delivery_mode = 'email'").run()).toThrow(/CHECK constraint failed/);
      expect(await c.listSubscriptions('g')).toEqual([sub('g', 't', 'push', 'earliest', T)]);
    });

    it('deleting a topic or a group deletes its subscriptions (foreign keys cascade)', async () => {
      const file = path.join(tmpDir(), 'catalog.db');
      const c = await catalog(file);
      await c.createTopic(topic('t'));
      await c.createTopic(topic('u'));
      await c.upsertSubscription(sub('g', 't'));
      await c.upsertSubscription(sub('g', 'u'));
      await c.upsertSubscription(sub('h', 't'));
      const db = raw(file);
      db.prepare("delete from topics where name = 't'").run();
      expect(await c.listSubscriptions('g')).toEqual([sub('g', 'u')]);
      expect(await c.listSubscriptions('h')).toEqual([]);
      db.prepare("delete from groups where group_id = 'g'").run();
      expect(await c.listSubscriptions('g')).toEqual([]);
      expect(await c.listGroups()).toEqual([{ groupId: 'h', createdAt: T }]);
    });
  });
});

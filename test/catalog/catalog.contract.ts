/**
 * The contract every catalog engine must pass (SQLite, PostgreSQL): the same tests, through the Catalog's
 * queries and, to look under them, plain SQL on the engine's own connection. Call {@link catalogContract}
 * from an engine's test file with a factory for that engine.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Catalog } from '../../src/catalog/catalog.js';
import type { SubscriptionRecord } from '../../src/catalog/subscriptions.js';
import type { TopicRecord } from '../../src/catalog/topics.js';
import { OnelogError } from '../../src/protocol/errors.js';
import { DEFAULT_HEALTH_SETTINGS } from '../../src/protocol/monitoring-api.js';
import { DEFAULT_TOPIC_CONFIG } from '../../src/protocol/topic-config.js';
import type { DeliveryMode, StartPolicy } from '../../src/protocol/types.js';
import { asyncCodeOf } from '../helpers/errors.js';

/** A fresh, empty place for a catalog, and a way to open catalogs over it (again and again). */
export interface CatalogFixture {
  /** Opens a catalog over this fixture's place (migrating it); called again after close to check what survived. */
  open(): Promise<Catalog>;
  /** Runs one plain SQL statement (`?` placeholders) on a connection of the engine's own; answers its rows. */
  sql(statement: string, params?: unknown[]): Promise<Array<Record<string, unknown>>>;
  /** Removes the place and closes what `sql` opened. */
  dispose(): Promise<void>;
  /** Whether several brokers share the place (a cluster's catalog), so tests open several catalogs on it at once. */
  shared: boolean;
}

const T = 1_700_000_000_000;
/** What each engine says when a CHECK or NOT NULL constraint refuses a row. */
const CHECK_FAILED = /CHECK constraint failed|violates check constraint/i;
const NOT_NULL_FAILED = /NOT NULL constraint failed|violates not-null constraint/i;

export function topic(name: string, overrides: Partial<TopicRecord> = {}): TopicRecord {
  return { name, partitions: 3, ...DEFAULT_TOPIC_CONFIG, createdAt: T, ...overrides };
}

export function sub(groupId: string, topicName: string, deliveryMode: DeliveryMode = 'pull', startPolicy: StartPolicy = 'latest', createdAt = T): SubscriptionRecord {
  return {
    groupId, topic: topicName, deliveryMode, startPolicy, onOutOfRange: 'pause', pushEndpoint: null, maxInFlight: 1, createdAt,
    retry: null, deadLetterTopic: null, maxDeliveries: null, type: 'consumer', share: null, retryTiers: 0, deadLetterAlertDepth: 1, webhookMaxAttempts: 5, ...DEFAULT_HEALTH_SETTINGS,
  };
}

/**
 * Registers the catalog contract tests under `describe(name)`.
 * @param factory makes a new, empty fixture for each test
 */
export function catalogContract(name: string, factory: () => Promise<CatalogFixture>): void {
  describe(`catalog contract: ${name}`, () => {
    const open = new Set<Catalog>();
    const fixtures: CatalogFixture[] = [];

    afterEach(async () => {
      for (const c of open) await c.close();
      open.clear();
      for (const f of fixtures.splice(0)) await f.dispose();
    });

    /** Topics t and u, subscribed to by group g (both) and group h (t). */
    async function threeSubscriptions(c: Catalog): Promise<void> {
        await c.topics.create(topic('t'));
        await c.topics.create(topic('u'));
        await c.subscriptions.upsert(sub('g', 't'));
        await c.subscriptions.upsert(sub('g', 'u'));
        await c.subscriptions.upsert(sub('h', 't'));
    }

    async function fresh(): Promise<{ c: Catalog; fixture: CatalogFixture }> {
      const fixture = await factory();
      fixtures.push(fixture);
      const c = await fixture.open();
      open.add(c);
      return { c, fixture };
    }

    async function reopen(fixture: CatalogFixture, c: Catalog): Promise<Catalog> {
      open.delete(c);
      await c.close();
      const again = await fixture.open();
      open.add(again);
      return again;
    }

    it('opening the same place again applies the migrations once and keeps the data', async () => {
      const { c, fixture } = await fresh();
      await c.topics.create(topic('edits'));
      await c.subscriptions.upsert(sub('g', 'edits'));
      let again = await reopen(fixture, c);
      expect(await again.topics.get('edits')).toEqual(topic('edits'));
      expect(await again.subscriptions.list('g')).toEqual([sub('g', 'edits')]);
      again = await reopen(fixture, again);
      const applied = await fixture.sql('select name from kysely_migration');
      expect(applied.map((r) => r.name).sort()).toEqual(Object.keys((await import('../../src/catalog/migrations.js')).migrations).sort());
      expect(await again.topics.list()).toEqual([topic('edits')]);
    });

    describe('topics', () => {
      it('creates, gets and lists topics by name (by code point: upper case first), with every field kept', async () => {
        const { c } = await fresh();
        expect(await c.topics.list()).toEqual([]);
        expect(await c.topics.get('nope')).toBeUndefined();
        const b = topic('b', { partitions: 1, cleanupPolicy: 'compact,delete', retentionMs: -1, retentionBytes: 9_007_199_254_740_991, segmentBytes: 4096, createdAt: T + 5 });
        const a = topic('a', { cleanupPolicy: 'compact', flushPolicy: 'always', compressionType: 'zstd' });
        const a1 = topic('a.1');
        const upper = topic('B');
        expect(await c.topics.create(b)).toEqual(b);
        await c.topics.create(a1);
        await c.topics.create(a);
        await c.topics.create(upper);
        expect(await c.topics.get('b')).toEqual(b);
        expect(await c.topics.list()).toEqual([upper, a, a1, b]);
      });

      it('refuses a second topic of the same name with TOPIC_ALREADY_EXISTS, keeping the first', async () => {
        const { c } = await fresh();
        await c.topics.create(topic('t', { partitions: 4 }));
        const err = await c.topics.create(topic('t', { partitions: 1 })).then(() => undefined, (e: unknown) => e);
        expect(err).toBeInstanceOf(OnelogError);
        expect(err).toMatchObject({ code: 'TOPIC_ALREADY_EXISTS', context: { topic: 't', partitions: 4 } });
        expect(await c.topics.get('t')).toEqual(topic('t', { partitions: 4 }));
      });

      it('two concurrent creates of the same topic: one wins, the other gets TOPIC_ALREADY_EXISTS', async () => {
        const { c } = await fresh();
        const results = await Promise.all([
          asyncCodeOf(c.topics.create(topic('t', { partitions: 2 }))),
          asyncCodeOf(c.topics.create(topic('t', { partitions: 5 }))),
        ]);
        expect(results.sort()).toEqual(['TOPIC_ALREADY_EXISTS', 'no error']);
        expect(await c.topics.list()).toHaveLength(1);
      });

      it('the schema refuses fewer than one partition', async () => {
        const { c } = await fresh();
        await expect(c.topics.create(topic('t', { partitions: 0 }))).rejects.toThrow(CHECK_FAILED);
        expect(await c.topics.list()).toEqual([]);
      });

      it('updates a topic\'s settings; an unknown topic is UNKNOWN_TOPIC', async () => {
        const { c } = await fresh();
        await c.topics.create(topic('t'));
        const changed = { ...DEFAULT_TOPIC_CONFIG, retentionMs: 1000, cleanupPolicy: 'compact' as const, flushMessages: 7 };
        await c.topics.updateConfig('t', changed);
        expect(await c.topics.get('t')).toEqual({ name: 't', partitions: 3, createdAt: T, ...changed });
        expect(await asyncCodeOf(c.topics.updateConfig('u', changed))).toBe('UNKNOWN_TOPIC');
      });

      it('deleting a topic drops its subscriptions, pauses and checkpoint entries in one step and leaves it pending', async () => {
        const { c } = await fresh();
        await c.topics.create(topic('t'));
        await c.topics.create(topic('u'));
        await c.subscriptions.upsert(sub('g', 't'));
        await c.subscriptions.upsert(sub('g', 'u'));
        await c.pauses.add('g', { topic: 't', partition: 1 }, { code: 'OFFSET_OUT_OF_RANGE', message: 'm' }, T);
        await c.checkpoints.save('g', 'cp', [{ topic: 't', partition: 0, offset: 3 }, { topic: 'u', partition: 0, offset: 4 }], T);
        await c.topics.delete('t', 3, T + 1);
        expect(await c.topics.get('t')).toBeUndefined();
        expect(await c.subscriptions.list('g')).toEqual([sub('g', 'u')]);
        expect(await c.pauses.list('g')).toEqual(new Map());
        expect(await c.checkpoints.list('g')).toEqual([{ name: 'cp', createdAt: T, offsets: [{ topic: 'u', partition: 0, offset: 4 }] }]);
        expect(await c.topics.listDeletions()).toEqual([{ name: 't', partitions: 3 }]);
        await c.topics.finishDeletion('t');
        expect(await c.topics.listDeletions()).toEqual([]);
        // A topic of the name can be created again at once.
        await c.topics.create(topic('t', { partitions: 1 }));
        expect(await c.topics.get('t')).toMatchObject({ partitions: 1 });
      });
    });

    describe('groups and subscriptions', () => {
      it('subscriptions.upsert creates the group and the subscription, then updates its settings only', async () => {
        const { c } = await fresh();
        await c.topics.create(topic('t'));
        expect(await c.groups.get('g')).toBeUndefined();
        expect(await c.subscriptions.get('g', 't')).toBeUndefined();
        expect(await c.subscriptions.upsert(sub('g', 't', 'pull', 'earliest', T))).toEqual(sub('g', 't', 'pull', 'earliest', T));
        expect(await c.groups.get('g')).toEqual({ groupId: 'g', createdAt: T });
        // The second call changes mode and start policy; creation times stay those of the first.
        expect(await c.subscriptions.upsert(sub('g', 't', 'push', 'latest', T + 99))).toEqual(sub('g', 't', 'push', 'latest', T));
        expect(await c.subscriptions.get('g', 't')).toEqual(sub('g', 't', 'push', 'latest', T));
        expect(await c.groups.list()).toEqual([{ groupId: 'g', createdAt: T }]);
        expect(await c.subscriptions.list('g')).toEqual([sub('g', 't', 'push', 'latest', T)]);
      });

      it('keeps retry policies, webhook endpoints and health settings, and lists webhook and retry subscriptions', async () => {
        const { c } = await fresh();
        await c.topics.create(topic('t'));
        await c.topics.create(topic('t.dlq'));
        const retrying: SubscriptionRecord = {
          ...sub('g', 't'), retry: { delaysMs: [1000, 30_000], maxAttempts: 3, deadLetterTopic: 't.dlq' }, deadLetterTopic: 't.dlq', retryTiers: 2,
          deadLetterAlertDepth: 10, headroomWarnRatio: 0.1, stallMs: 60_000, onOutOfRange: 'earliest',
        };
        const hook: SubscriptionRecord = { ...sub('h', 't', 'push'), pushEndpoint: 'http://127.0.0.1:9/hook', maxInFlight: 4, webhookMaxAttempts: 2 };
        await c.subscriptions.upsert(retrying);
        await c.subscriptions.upsert(hook);
        await c.subscriptions.upsert(sub('w', 't', 'push')); // pushed over WebSocket: no endpoint
        const bounded: SubscriptionRecord = { ...sub('m', 't'), maxDeliveries: 3, deadLetterTopic: 't.m.dlq' }; // dead letters, no tiers
        await c.subscriptions.upsert(bounded);
        expect(await c.subscriptions.get('g', 't')).toEqual(retrying);
        expect(await c.subscriptions.listWithWebhook()).toEqual([hook]);
        expect(await c.subscriptions.listWithRetries()).toEqual([retrying, bounded]);
        expect((await c.subscriptions.listByTopic('t')).map((s) => s.groupId)).toEqual(['g', 'h', 'm', 'w']);
      });

      it('lists a group\'s subscriptions by topic, and groups by id', async () => {
        const { c } = await fresh();
        for (const name of ['c', 'a', 'b']) await c.topics.create(topic(name));
        await c.subscriptions.upsert(sub('g2', 'a', 'push', 'earliest', T + 3));
        await c.subscriptions.upsert(sub('g', 'c', 'pull', 'latest', T + 1));
        await c.subscriptions.upsert(sub('g', 'a', 'push', 'earliest', T + 2));
        await c.subscriptions.upsert(sub('a-group', 'b', 'pull', 'latest', T + 4));
        await c.subscriptions.upsert(sub('G', 'b', 'pull', 'latest', T + 5));
        expect(await c.subscriptions.list('g')).toEqual([sub('g', 'a', 'push', 'earliest', T + 2), sub('g', 'c', 'pull', 'latest', T + 1)]);
        expect(await c.subscriptions.list('g2')).toEqual([sub('g2', 'a', 'push', 'earliest', T + 3)]);
        expect(await c.subscriptions.list('nobody')).toEqual([]);
        expect(await c.groups.list()).toEqual([
          { groupId: 'G', createdAt: T + 5 },
          { groupId: 'a-group', createdAt: T + 4 },
          { groupId: 'g', createdAt: T + 1 },
          { groupId: 'g2', createdAt: T + 3 },
        ]);
      });

      it('a subscription to an unknown topic is refused and leaves no group behind (one transaction)', async () => {
        const { c } = await fresh();
        await expect(c.subscriptions.upsert(sub('g', 'missing'))).rejects.toMatchObject({ code: 'UNKNOWN_TOPIC' });
        expect(await c.groups.get('g')).toBeUndefined();
        expect(await c.groups.list()).toEqual([]);
      });

      it('refuses a bad delivery mode or start policy, through the API and in plain SQL', async () => {
        const { c, fixture } = await fresh();
        await c.topics.create(topic('t'));
        await expect(c.subscriptions.upsert(sub('g', 't', 'carrier-pigeon' as DeliveryMode))).rejects.toThrow(CHECK_FAILED);
        await expect(c.subscriptions.upsert(sub('g', 't', 'pull', 'middle' as StartPolicy))).rejects.toThrow(CHECK_FAILED);
        expect(await c.groups.list()).toEqual([]);
        await fixture.sql('insert into groups (group_id, created_at) values (?, ?)', ['g', T]);
        const insert = 'insert into subscriptions (group_id, topic, delivery_mode, start_policy, created_at) values (?, ?, ?, ?, ?)';
        await expect(fixture.sql(insert, ['g', 't', 'PULL', 'latest', T])).rejects.toThrow(CHECK_FAILED);
        await expect(fixture.sql(insert, ['g', 't', 'pull', 'oldest', T])).rejects.toThrow(CHECK_FAILED);
        await expect(fixture.sql(insert, ['g', 't', null, 'latest', T])).rejects.toThrow(NOT_NULL_FAILED);
        await fixture.sql(insert, ['g', 't', 'push', 'earliest', T]);
        await expect(fixture.sql("update subscriptions set delivery_mode = 'email'")).rejects.toThrow(CHECK_FAILED);
        expect(await c.subscriptions.list('g')).toEqual([sub('g', 't', 'push', 'earliest', T)]);
      });

      it('deleting a topic or a group deletes its subscriptions (foreign keys cascade)', async () => {
        const { c, fixture } = await fresh();
        await threeSubscriptions(c);
        await fixture.sql("delete from topics where name = 't'");
        expect(await c.subscriptions.list('g')).toEqual([sub('g', 'u')]);
        expect(await c.subscriptions.list('h')).toEqual([]);
        await fixture.sql("delete from groups where group_id = 'g'");
        expect(await c.subscriptions.list('g')).toEqual([]);
        expect(await c.groups.list()).toEqual([{ groupId: 'h', createdAt: T }]);
      });

      it('subscriptions.markCommitted records a subscription\'s first commit once, kept through updates, gone with the group or the topic', async () => {
        const { c, fixture } = await fresh();
        await threeSubscriptions(c);
        expect(await c.subscriptions.listCommitted()).toEqual([]);
        await c.subscriptions.markCommitted('h', 't', T + 1);
        await c.subscriptions.markCommitted('g', 't', T + 2);
        await c.subscriptions.markCommitted('g', 't', T + 3);
        await c.subscriptions.markCommitted('g', 'nope', T + 4); // no such subscription: nothing
        await c.subscriptions.upsert(sub('g', 't', 'push', 'earliest'));
        expect(await c.subscriptions.listCommitted()).toEqual([{ groupId: 'g', topic: 't' }, { groupId: 'h', topic: 't' }]);
        const rows = await fixture.sql("select first_commit_at from subscriptions where group_id = 'g' and topic = 't'");
        expect(Number(rows[0]!.first_commit_at)).toBe(T + 2);
        await c.groups.delete('h');
        await c.topics.delete('t', 3, T);
        await c.subscriptions.markCommitted('g', 'u', T + 5);
        expect(await c.subscriptions.listCommitted()).toEqual([{ groupId: 'g', topic: 'u' }]);
      });

      it('groups.delete removes its subscriptions, pauses, alerts, resets, checkpoints and dead-letter history', async () => {
        const { c } = await fresh();
        await c.topics.create(topic('t'));
        await c.subscriptions.upsert(sub('g', 't'));
        await c.subscriptions.upsert(sub('h', 't'));
        for (const groupId of ['g', 'h']) {
          await c.pauses.add(groupId, { topic: 't', partition: 0 }, { code: 'OFFSET_OUT_OF_RANGE', message: 'm' }, T);
          await c.alerts.add({ groupId, kind: 'data-lost', topic: 't', partition: 0, message: 'm', context: {}, createdAt: T, resolvedAt: null });
          await c.offsetResets.record(groupId, [{ topic: 't', partition: 0, oldOffset: 1, newOffset: 0, spec: 'to-earliest', requestedBy: 'a', executedAt: T }]);
          await c.checkpoints.save(groupId, 'cp', [{ topic: 't', partition: 0, offset: 1 }], T);
          await c.deadLetterActions.record(groupId, 't', { action: 'purge', firstOffset: 0, endOffset: 1, records: 1, requestedBy: 'a', executedAt: T });
        }
        await c.groups.delete('g');
        expect(await c.groups.get('g')).toBeUndefined();
        expect(await c.subscriptions.list('g')).toEqual([]);
        expect(await c.pauses.list('g')).toEqual(new Map());
        expect(await c.alerts.list({ groupId: 'g', limit: 10 })).toEqual([]);
        expect(await c.offsetResets.list('g', 10)).toEqual([]);
        expect(await c.checkpoints.list('g')).toEqual([]);
        expect(await c.deadLetterActions.history('g', 10)).toEqual([]);
        // The other group keeps all of its own.
        expect((await c.pauses.list('h')).size).toBe(1);
        expect(await c.alerts.list({ groupId: 'h', limit: 10 })).toHaveLength(1);
        expect(await c.offsetResets.list('h', 10)).toHaveLength(1);
        expect(await c.checkpoints.list('h')).toHaveLength(1);
        expect(await c.deadLetterActions.list('h', 't')).toHaveLength(1);
      });
    });

    describe('group operations', () => {
      it('pauses: one per partition, replaced by a later one, lifted by a resume', async () => {
        const { c } = await fresh();
        await c.topics.create(topic('t'));
        await c.subscriptions.upsert(sub('g', 't'));
        const first = { code: 'OFFSET_OUT_OF_RANGE', message: 'first', committedOffset: 3, logStartOffset: 9 };
        await c.pauses.add('g', { topic: 't', partition: 2 }, first, T);
        await c.pauses.add('g', { topic: 't', partition: 0 }, { code: 'OFFSET_OUT_OF_RANGE', message: 'zero' }, T);
        await c.pauses.add('g', { topic: 't', partition: 2 }, { ...first, message: 'second' }, T + 1);
        expect(await c.pauses.list('g')).toEqual(new Map([
          ['t/0', { code: 'OFFSET_OUT_OF_RANGE', message: 'zero' }], ['t/2', { ...first, message: 'second' }],
        ]));
        await c.pauses.remove('g', { topic: 't', partition: 2 });
        expect([...(await c.pauses.list('g')).keys()]).toEqual(['t/0']);
      });

      it('alerts: ids, most recent first, filtered by group and activity; resolved and acknowledged once', async () => {
        const { c } = await fresh();
        await c.topics.create(topic('t'));
        await c.subscriptions.upsert(sub('g', 't'));
        await c.subscriptions.upsert(sub('h', 't'));
        const raised = { kind: 'retention-headroom' as const, topic: 't', partition: 1, message: 'low', context: { headroomMs: 5, nested: { a: [1, 'ü'] } }, createdAt: T, resolvedAt: null };
        const a = await c.alerts.add({ groupId: 'g', ...raised });
        const b = await c.alerts.add({ groupId: 'h', ...raised, createdAt: T + 1 });
        const oneOff = await c.alerts.add({ groupId: 'g', ...raised, kind: 'offset-jump', createdAt: T + 2, resolvedAt: T + 2 });
        expect(a).toEqual({ id: a.id, groupId: 'g', ...raised, acknowledgedAt: null, acknowledgedBy: null });
        expect(b.id).toBeGreaterThan(a.id);
        expect(oneOff.id).toBeGreaterThan(b.id);
        expect((await c.alerts.list({ limit: 10 })).map((x) => x.id)).toEqual([oneOff.id, b.id, a.id]);
        expect((await c.alerts.list({ limit: 2 })).map((x) => x.id)).toEqual([oneOff.id, b.id]);
        expect((await c.alerts.list({ groupId: 'g', limit: 10 })).map((x) => x.id)).toEqual([oneOff.id, a.id]);
        expect((await c.alerts.list({ active: true, limit: 10 })).map((x) => x.id)).toEqual([b.id, a.id]);
        expect(await c.alerts.resolve(a.id, T + 5)).toMatchObject({ id: a.id, resolvedAt: T + 5 });
        expect(await c.alerts.resolve(a.id, T + 6)).toBeUndefined(); // resolved already
        expect(await c.alerts.resolve(9999, T)).toBeUndefined();
        expect(await c.alerts.acknowledge(b.id, 'alice', T + 7)).toMatchObject({ acknowledgedAt: T + 7, acknowledgedBy: 'alice' });
        expect(await c.alerts.acknowledge(b.id, 'bob', T + 8)).toMatchObject({ acknowledgedAt: T + 7, acknowledgedBy: 'alice' });
        expect(await c.alerts.acknowledge(9999, 'bob', T)).toBeUndefined();
        expect((await c.alerts.list({ active: true, limit: 10 })).map((x) => x.id)).toEqual([b.id]);
      });

      it('alerts.raise raises one unresolved alert per subject, also when brokers sharing the catalog raise it at once', async () => {
        const { c, fixture } = await fresh();
        const other = fixture.shared ? await fixture.open() : c;
        open.add(other);
        await c.topics.create(topic('t'));
        await c.subscriptions.upsert(sub('g', 't'));
        const raised = { groupId: 'g', kind: 'consumer-stalled' as const, topic: 't', partition: 0, message: 'stalled', context: { stallMs: 1000 }, createdAt: T };
        const outcomes = await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 === 0 ? c : other).alerts.raise({ ...raised, createdAt: T + i })));
        const first = outcomes.filter((o) => o.raised);
        expect(first).toHaveLength(1);
        expect(outcomes.map((o) => o.alert)).toEqual(outcomes.map(() => first[0]!.alert)); // the others answer the one raised
        expect(await c.alerts.list({ active: true, limit: 10 })).toEqual([first[0]!.alert]);
        // Another partition or kind is another subject; a second unresolved one through alerts.add is refused.
        expect((await c.alerts.raise({ ...raised, partition: 1 })).raised).toBe(true);
        expect((await c.alerts.raise({ ...raised, kind: 'data-lost' })).raised).toBe(true);
        await expect(c.alerts.add({ ...raised, resolvedAt: null })).rejects.toThrow();
        // Once resolved, the next episode is a new alert.
        await c.alerts.resolve(first[0]!.alert.id, T + 10);
        const again = await other.alerts.raise({ ...raised, createdAt: T + 20 });
        expect(again).toMatchObject({ raised: true, alert: { createdAt: T + 20, resolvedAt: null } });
        expect(again.alert.id).toBeGreaterThan(first[0]!.alert.id);
      });

      it('resets and dead-letter actions are history, most recent first; checkpoints replace by name', async () => {
        const { c } = await fresh();
        await c.topics.create(topic('t'));
        await c.subscriptions.upsert(sub('g', 't'));
        const reset = (partition: number, executedAt: number) => ({ topic: 't', partition, oldOffset: null, newOffset: 2 ** 40, spec: 'to-offset 1099511627776', requestedBy: 'alice@host', executedAt });
        await c.offsetResets.record('g', [reset(0, T), reset(1, T)]);
        await c.offsetResets.record('g', []);
        await c.offsetResets.record('g', [{ ...reset(2, T + 1), oldOffset: 5 }]);
        expect(await c.offsetResets.list('g', 10)).toEqual([{ ...reset(2, T + 1), oldOffset: 5 }, reset(1, T), reset(0, T)]);
        expect(await c.offsetResets.list('g', 1)).toHaveLength(1);
        const redrive = { action: 'redrive' as const, firstOffset: 0, endOffset: 10, records: 10, requestedBy: 'a', executedAt: T };
        const purge = { action: 'purge' as const, firstOffset: 10, endOffset: 12, records: 2, requestedBy: 'b', executedAt: T + 1 };
        await c.deadLetterActions.record('g', 't', redrive);
        await c.deadLetterActions.record('g', 't', purge);
        expect(await c.deadLetterActions.list('g', 't')).toEqual([redrive, purge]);
        expect(await c.deadLetterActions.history('g', 10)).toEqual([{ topic: 't', ...purge }, { topic: 't', ...redrive }]);
        expect(await c.deadLetterActions.list('g', 'other')).toEqual([]);
        await c.checkpoints.save('g', 'b', [{ topic: 't', partition: 1, offset: 4 }, { topic: 't', partition: 0, offset: 3 }], T);
        await c.checkpoints.save('g', 'a', [], T);
        await c.checkpoints.save('g', 'b', [{ topic: 't', partition: 2, offset: 9 }], T + 1);
        expect(await c.checkpoints.list('g')).toEqual([{ name: 'b', createdAt: T + 1, offsets: [{ topic: 't', partition: 2, offset: 9 }] }]);
      });
    });

    describe('security', () => {
      const token = (id: string) => ({ tokenId: id, tokenSalt: `salt-${id}`, tokenHash: `hash-${id}`, tokenScram: `scram-${id}` });

      it('users: the first is an admin; names are unique; tokens replace; deletion takes its ACLs', async () => {
        const { c } = await fresh();
        const ops = await c.users.create({ name: 'ops', admin: false, ...token('1'), createdAt: T });
        expect(ops).toMatchObject({ name: 'ops', admin: true, rotatedAt: null });
        expect(await c.users.create({ name: 'loader', admin: false, ...token('2'), createdAt: T })).toMatchObject({ admin: false });
        expect(await asyncCodeOf(c.users.create({ name: 'ops', admin: false, ...token('3'), createdAt: T }))).toBe('ALREADY_EXISTS');
        expect((await c.users.list()).map((u) => [u.name, u.admin])).toEqual([['loader', false], ['ops', true]]);
        expect(await c.users.replaceToken('loader', token('4'), T + 1)).toEqual({ name: 'loader', admin: false, ...token('4'), createdAt: T, rotatedAt: T + 1 });
        expect(await c.users.replaceToken('nobody', token('5'), T + 1)).toBeUndefined();
        const acl = { principal: 'loader', resourceType: 'topic' as const, resourceName: 'edits', patternType: 'literal' as const, operation: 'write' as const, permission: 'allow' as const };
        await c.acls.add(acl);
        expect(await c.users.delete('loader')).toBe(true);
        expect(await c.users.delete('loader')).toBe(false);
        expect(await c.acls.list()).toEqual([]);
      });

      it('first users created at once (on a shared catalog, by two brokers): exactly one is the admin', async () => {
        const { c, fixture } = await fresh();
        const other = fixture.shared ? await fixture.open() : c;
        open.add(other);
        const names = Array.from({ length: 8 }, (_, i) => `u${i}`);
        const made = await Promise.all(names.map((name, i) => (i % 2 === 0 ? c : other).users.create({ name, admin: false, ...token(name), createdAt: T })));
        expect(made.filter((u) => u.admin)).toHaveLength(1);
        expect((await c.users.list()).filter((u) => u.admin)).toHaveLength(1);
      });

      it('ACLs: added once, listed in order, removed', async () => {
        const { c } = await fresh();
        const acl = (principal: string, resourceName: string, operation: 'read' | 'write', permission: 'allow' | 'deny' = 'allow') => ({
          principal, resourceType: 'topic' as const, resourceName, patternType: 'prefix' as const, operation, permission,
        });
        await c.acls.add(acl('b', 'x', 'read'));
        await c.acls.add(acl('a', 'y', 'write', 'deny'));
        await c.acls.add(acl('a', 'y', 'read'));
        await c.acls.add(acl('A', 'z', 'read'));
        expect(await asyncCodeOf(c.acls.add(acl('b', 'x', 'read')))).toBe('ALREADY_EXISTS');
        expect(await c.acls.list()).toEqual([acl('A', 'z', 'read'), acl('a', 'y', 'read'), acl('a', 'y', 'write', 'deny'), acl('b', 'x', 'read')]);
        expect(await c.acls.remove(acl('a', 'y', 'read'))).toBe(true);
        expect(await c.acls.remove(acl('a', 'y', 'read'))).toBe(false);
        expect(await c.acls.list()).toHaveLength(3);
      });

      it('the audit keeps entries newest first with their details', async () => {
        const { c } = await fresh();
        for (let i = 0; i < 3; i++) {
          await c.audit.add({ at: T + i, principal: 'ops', action: 'offsets.reset', target: 'group:g', outcome: i === 1 ? 'refused' : 'done', details: { i, spec: 'to-earliest' } });
        }
        const entries = await c.audit.list(2);
        expect(entries.map((e) => e.details)).toEqual([{ i: 2, spec: 'to-earliest' }, { i: 1, spec: 'to-earliest' }]);
        expect(entries.map((e) => e.outcome)).toEqual(['done', 'refused']);
        expect(entries[0]).toMatchObject({ at: T + 2, principal: 'ops', action: 'offsets.reset', target: 'group:g' });
        expect(entries[0]!.id).toBeGreaterThan(entries[1]!.id);
      });
    });

    describe('history', () => {
      const M = 60_000;
      const at = (minute: number, lag: number) => ({
        at: T + minute * M + 5000, lag, timeLagMs: lag * 10, headroomMs: null, headroomBytes: 2 ** 40 + lag, committedOffset: 2 ** 50 + lag,
      });

      it('health: a series added once whoever adds it, a minute\'s sample replaced, read from a minute, pruned, deleted; kept on reopen', async () => {
        const { c, fixture } = await fresh();
        const other = fixture.shared ? await fixture.open() : c;
        open.add(other);
        const keys = [{ groupId: 'g', topic: 't', partition: 0 }, { groupId: 'g', topic: 't', partition: 1 }, { groupId: 'h', topic: 'u', partition: 0 }];
        await Promise.all([c.healthHistory.addSeries(keys), other.healthHistory.addSeries(keys.slice(1))]);
        const series = await c.healthHistory.series();
        expect(series.map(({ groupId, topic, partition }) => ({ groupId, topic, partition })).sort((a, b) => (a.groupId + a.partition).localeCompare(b.groupId + b.partition)))
          .toEqual(keys);
        const id = (partition: number, groupId = 'g') => series.find((s) => s.groupId === groupId && s.partition === partition)!.id;
        await c.healthHistory.write([{ seriesId: id(0), minute: T, ...at(0, 1) }, { seriesId: id(0), minute: T + M, ...at(1, 2) }]);
        await other.healthHistory.write([{ seriesId: id(0), minute: T + M, ...at(1, 3) }, { seriesId: id(1), minute: T + 2 * M, ...at(2, 4) }]);
        await c.healthHistory.write([{ seriesId: id(0, 'h'), minute: T, ...at(0, 5) }]);
        expect(await c.healthHistory.ofGroup('g', T)).toEqual(expect.arrayContaining([
          { topic: 't', partition: 0, samples: [at(0, 1), at(1, 3)] }, { topic: 't', partition: 1, samples: [at(2, 4)] },
        ]));
        expect(await c.healthHistory.ofGroup('g', T + M + 30_000)).toEqual(expect.arrayContaining([
          { topic: 't', partition: 0, samples: [at(1, 3)] }, { topic: 't', partition: 1, samples: [at(2, 4)] },
        ]));
        // Every other minute since the epoch: T's minute is odd.
        expect(await c.healthHistory.ofGroup('g', T, 2)).toEqual([{ topic: 't', partition: 0, samples: [at(1, 3)] }]);
        expect(await c.healthHistory.seriesOf('g')).toBe(2);
        const again = await reopen(fixture, c);
        await again.healthHistory.prune(T + M); // minute 0 goes, and h's series with its only sample
        expect((await again.healthHistory.series()).map((s) => s.groupId)).toEqual(['g', 'g']);
        expect((await again.healthHistory.ofGroup('g', T)).find((p) => p.partition === 0)!.samples).toEqual([at(1, 3)]);
        await again.healthHistory.deleteTopic('t');
        expect(await again.healthHistory.ofGroup('g', T)).toEqual([]);
        await again.healthHistory.addSeries([keys[2]!]);
        await again.healthHistory.deleteGroup('h');
        expect(await again.healthHistory.series()).toEqual([]);
        expect(await fixture.sql('select count(*) as n from health_samples')).toEqual([{ n: fixture.shared ? '0' : 0 }]);
      });

      it('topic traffic: each minute\'s counts summed over the brokers adding them, read by range, pruned, deleted', async () => {
        const { c, fixture } = await fresh();
        const other = fixture.shared ? await fixture.open() : c;
        open.add(other);
        const traffic = (topic: string, minute: number, n: number) => ({
          topic, minute: T + minute * M, producedRecords: n, producedBytes: 2 ** 40 * n, fetchedRecords: 2 * n, fetchedBytes: 3 * n,
        });
        await Promise.all([
          c.topicTraffic.add([traffic('t', 0, 1), traffic('t', 1, 2), traffic('u', 1, 7)]),
          other.topicTraffic.add([traffic('t', 1, 3)]),
          other.topicTraffic.add([traffic('t', 1, 4), traffic('t', 2, 5)]),
        ]);
        expect(await c.topicTraffic.of('t', T, T + 2 * M)).toEqual([traffic('t', 0, 1), traffic('t', 1, 9)]);
        expect(await c.topicTraffic.of('t', T + M, T + 3 * M)).toEqual([traffic('t', 1, 9), traffic('t', 2, 5)]);
        // Every topic's counts summed over a range of minutes, stamped with its first (the overview's recent rates).
        const totals = await c.topicTraffic.totals(T + M, T + 3 * M);
        expect(totals.sort((a, b) => a.topic.localeCompare(b.topic))).toEqual([traffic('t', 1, 14), traffic('u', 1, 7)]);
        await c.topicTraffic.prune(T + 2 * M);
        expect(await c.topicTraffic.of('t', T, T + 3 * M)).toEqual([traffic('t', 2, 5)]);
        expect(await c.topicTraffic.of('u', T, T + 3 * M)).toEqual([]);
        await c.topicTraffic.deleteTopic('t');
        expect(await c.topicTraffic.of('t', T, T + 3 * M)).toEqual([]);
      });
    });

    it('alert sinks: one per URL, listed by id, removed', async () => {
      const { c } = await fresh();
      const a = await c.alertSinks.add('http://127.0.0.1:9/a', T);
      const b = await c.alertSinks.add('http://127.0.0.1:9/b', T + 1);
      expect(await c.alertSinks.add('http://127.0.0.1:9/a', T + 2)).toEqual(a);
      expect((await c.alertSinks.add('http://127.0.0.1:9/d', T)).id).toBe(b.id + 1); // adding a URL again used no id
      const both = await Promise.all([c.alertSinks.add('http://127.0.0.1:9/c', T), c.alertSinks.add('http://127.0.0.1:9/c', T)]);
      expect(both[0]).toEqual(both[1]);
      await c.alertSinks.remove(both[0].id);
      expect((await c.alertSinks.list()).map((x) => x.url)).toEqual(['http://127.0.0.1:9/a', 'http://127.0.0.1:9/b', 'http://127.0.0.1:9/d']);
      expect(await c.alertSinks.remove(a.id)).toBe(true);
      expect(await c.alertSinks.remove(a.id)).toBe(false);
      expect((await c.alertSinks.list()).map((x) => x.url)).toEqual(['http://127.0.0.1:9/b', 'http://127.0.0.1:9/d']);
    });

    it('the log owner: the first data directory to claim the catalog keeps it, also when two claim at once', async () => {
      const { c, fixture } = await fresh();
      const other = fixture.shared ? await fixture.open() : c;
      open.add(other);
      const claims = await Promise.all([c.logOwner.claim('dir-a'), other.logOwner.claim('dir-b')]);
      expect(claims[0]).toBe(claims[1]);
      expect(await c.logOwner.claim('dir-c')).toBe(claims[0]);
    });

    it('producer ids are issued once each, also by concurrent calls, and survive a reopen', async () => {
      const { c, fixture } = await fresh();
      expect(await c.producerIds.last()).toBe(0);
      const ids = await Promise.all(Array.from({ length: 20 }, () => c.producerIds.issue(T)));
      expect(new Set(ids).size).toBe(20);
      expect(Math.min(...ids)).toBeGreaterThan(0);
      const again = await reopen(fixture, c);
      expect(await again.producerIds.last()).toBe(Math.max(...ids));
      expect(await again.producerIds.issue(T)).toBeGreaterThan(Math.max(...ids));
    });
  });
}

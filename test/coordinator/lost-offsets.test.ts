/**
 * A lost offset store (issue 31, point 8): the catalog marks a subscription at its first commit (once, not per commit);
 * a broker whose offset store holds no committed offset of a marked subscription (LMDB's data.mdb deleted, Redis
 * flushed, PostgreSQL's offsets table emptied) refuses to start with STORAGE_ERROR naming the store; with
 * `allowMissingOffsets` it starts with those partitions paused for the group (OFFSET_OUT_OF_RANGE, reason
 * offsets-lost) and an offset-out-of-range alert on each, until an executed reset; a store that lost nothing, a
 * fresh data directory, groups that never committed, and deleted groups and topics start as before.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import type { BrokerOptions } from '../../src/broker/options.js';
import { SubscriptionRepository } from '../../src/catalog/subscriptions.js';
import { ManualClock } from '../../src/common/clock.js';
import { asyncErrorOf } from '../helpers/errors.js';
import { pgSchema, REDIS_URL, redisPrefix } from '../helpers/services.js';
import { tmpDir } from '../helpers/tmp.js';

const open: Broker[] = [];
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const b of open.splice(0)) await b.close();
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function broker(dataDir: string, options: Partial<BrokerOptions> = {}): Promise<Broker> {
  const b = await Broker.open({
    dataDir, clock: new ManualClock(1_700_000_000_000), compactionIntervalMs: 0, retentionCheckIntervalMs: 0, sessionCheckIntervalMs: 0,
    monitoring: { alertCheckIntervalMs: 0 }, ...options,
  });
  open.push(b);
  return b;
}

async function closed(b: Broker): Promise<void> {
  open.splice(open.indexOf(b), 1);
  await b.close();
}

const rec = (value: string) => ({ key: null, value: Buffer.from(value) });

/**
 * A data directory whose broker is closed after: topic `orders` (2 partitions, 5 records each), group `billing`
 * (start policy latest, subscribed before the records came) that committed 2 of partition 0 and nothing more of
 * partition 1, and topic `idle` nobody reads.
 */
async function withCommittedGroup(options: Partial<BrokerOptions> = {}): Promise<{ dataDir: string; options: Partial<BrokerOptions> }> {
  const dataDir = tmpDir();
  const b = await broker(dataDir, options);
  await b.createTopic({ topic: 'orders', partitions: 2 });
  await b.createTopic({ topic: 'idle', partitions: 1 });
  await b.subscribe({ groupId: 'billing', topic: 'orders', startPolicy: 'latest' });
  for (const partition of [0, 1]) await b.produce({ topic: 'orders', records: [0, 1, 2, 3, 4].map((i) => ({ ...rec(`${partition}-${i}`), partition })) });
  await b.commitOffsets({ groupId: 'billing', topic: 'orders', offsets: [{ partition: 0, offset: 2 }] });
  await closed(b);
  return { dataDir, options };
}

/** Deletes the LMDB offset store's data file, as a lost volume or a restore without it leaves it. */
function deleteOffsetsFile(dataDir: string): void {
  fs.rmSync(path.join(dataDir, 'offsets', 'data.mdb'));
}

describe('a lost offset store', () => {
  it('marks a subscription at its first commit and never again: one catalog write however many commits', async () => {
    const b = await broker(tmpDir());
    await b.createTopic({ topic: 'orders', partitions: 2 });
    await b.produce({ topic: 'orders', records: [{ ...rec('x'), partition: 0 }, { ...rec('y'), partition: 1 }] });
    const marks = vi.spyOn(SubscriptionRepository.prototype, 'markCommitted');
    const member = await b.joinGroup({ groupId: 'billing', topics: ['orders'], startPolicy: 'earliest' }); // commits the start positions
    expect(marks).toHaveBeenCalledTimes(1);
    for (let i = 0; i < 20; i++) {
      await b.commitOffsets({ groupId: 'billing', topic: 'orders', memberId: member.memberId, generationId: member.generationId, offsets: [{ partition: i % 2, offset: 1 }] });
    }
    await b.resetOffsets({ groupId: 'billing', topic: 'orders', spec: { to: 'earliest' }, execute: false });
    expect(marks).toHaveBeenCalledTimes(1);
  });

  it('LMDB: data.mdb deleted, the start is refused with STORAGE_ERROR naming the store, the group and the flag; the lock is released', async () => {
    const { dataDir } = await withCommittedGroup();
    deleteOffsetsFile(dataDir);
    const err = await asyncErrorOf(broker(dataDir));
    expect(err).toMatchObject({
      code: 'STORAGE_ERROR',
      context: { offsetStore: `LMDB in ${path.join(dataDir, 'offsets')}`, groups: 1, subscriptions: 1, groupIds: ['billing'] },
    });
    expect(err.message).toContain('the catalog says 1 group(s) committed offsets (billing) but the offset store');
    expect(err.message).toContain('offsets/data.mdb');
    expect(err.message).toContain('--allow-missing-offsets');
    expect(fs.existsSync(path.join(dataDir, 'broker.lock'))).toBe(false);
    expect(await asyncErrorOf(broker(dataDir))).toMatchObject({ code: 'STORAGE_ERROR' }); // refused again: nothing was changed
  });

  it('allowMissingOffsets: every partition of the group paused with an alert, nothing started at latest, until a reset', async () => {
    const { dataDir } = await withCommittedGroup();
    deleteOffsetsFile(dataDir);
    const b = await broker(dataDir, { allowMissingOffsets: true });
    const described = await b.describeGroup('billing');
    for (const p of described.subscriptions[0]!.partitions) {
      expect(p.committedOffset).toBeNull();
      expect(p.paused).toMatchObject({ code: 'OFFSET_OUT_OF_RANGE', reason: 'offsets-lost', committedOffset: null, groupId: 'billing', partition: p.partition });
      expect(p.paused!.message).toContain(`onelog offsets reset billing --topic orders --partition ${p.partition}`);
    }
    const alerts = await b.listAlerts({ groupId: 'billing', active: true });
    expect(alerts.map((a) => [a.kind, a.partition]).sort()).toEqual([['offset-out-of-range', 0], ['offset-out-of-range', 1]]);
    // A member is handed the partitions paused: no start position is taken, so nothing unread is skipped.
    const member = await b.joinGroup({ groupId: 'billing', topics: ['orders'] });
    expect(member.assignment.map((a) => [a.partition, a.error?.code, a.offset])).toEqual([[0, 'OFFSET_OUT_OF_RANGE', undefined], [1, 'OFFSET_OUT_OF_RANGE', undefined]]);
    expect(await b.committedOffsets('billing')).toEqual([]);
    await b.leaveGroup({ groupId: 'billing', memberId: member.memberId });
    // The next start goes on without the flag: the operator was told, the partitions stay paused.
    await closed(b);
    const again = await broker(dataDir);
    expect((await again.describeGroup('billing')).subscriptions[0]!.partitions.map((p) => p.paused?.code)).toEqual(['OFFSET_OUT_OF_RANGE', 'OFFSET_OUT_OF_RANGE']);
    // A reset decides; the member then reads every record from there, and the alerts resolve.
    await again.resetOffsets({ groupId: 'billing', topic: 'orders', spec: { to: 'earliest' }, execute: true, requestedBy: 'ops' });
    const resumed = await again.joinGroup({ groupId: 'billing', topics: ['orders'] });
    expect(resumed.assignment.map((a) => [a.partition, a.offset])).toEqual([[0, 0], [1, 0]]);
    const { partitions } = await again.fetch({ topic: 'orders', partitions: [{ partition: 0, offset: 0 }, { partition: 1, offset: 0 }], maxRecords: 100 });
    expect(partitions.map((p) => p.records.length)).toEqual([5, 5]);
    await again.evaluateAlerts();
    expect(await again.listAlerts({ groupId: 'billing', active: true })).toEqual([]);
  });

  it('a store that lost nothing, a fresh data directory, and one whose groups never committed start normally', async () => {
    const { dataDir } = await withCommittedGroup();
    const b = await broker(dataDir);
    expect(await b.committedOffsets('billing')).toMatchObject([{ partition: 0, offset: 2 }, { partition: 1, offset: 0 }]);
    await closed(b);
    const fresh = tmpDir();
    await closed(await broker(fresh));
    deleteOffsetsFile(fresh);
    await closed(await broker(fresh));
    // A Kafka member whose client decides its start (no start committed) and never commits: nothing was lost.
    const uncommitted = tmpDir();
    const k = await broker(uncommitted);
    await k.createTopic({ topic: 't', partitions: 1 });
    await k.joinGroup({ groupId: 'kafka', topics: ['t'], commitStartPositions: false });
    await closed(k);
    deleteOffsetsFile(uncommitted);
    const started = await broker(uncommitted);
    expect((await started.describeGroup('kafka')).subscriptions[0]!.partitions[0]!.paused).toBeNull();
  });

  it('a deleted group or topic took its mark with it: no refusal once their offsets are gone', async () => {
    const { dataDir } = await withCommittedGroup();
    const b = await broker(dataDir);
    await b.subscribe({ groupId: 'audit', topic: 'idle' });
    await b.deleteGroup('billing');
    await b.deleteTopic('idle');
    await closed(b);
    deleteOffsetsFile(dataDir);
    const started = await broker(dataDir);
    expect(await started.listGroups()).toMatchObject([{ groupId: 'audit' }]);
  });

  it('Redis: a flushed key prefix is refused, naming the Redis; allowMissingOffsets pauses the group', async () => {
    const redis = redisPrefix();
    cleanups.push(() => redis.drop());
    const url = `${REDIS_URL}?keyPrefix=${encodeURIComponent(redis.prefix)}`;
    const { dataDir } = await withCommittedGroup({ offsets: url });
    const client = new Redis(REDIS_URL);
    cleanups.push(() => client.quit());
    expect(await client.hlen(`${redis.prefix}offsets:billing`)).toBe(2);
    await redis.drop(); // as FLUSHDB does to this broker's keys
    const err = await asyncErrorOf(broker(dataDir, { offsets: url }));
    expect(err).toMatchObject({ code: 'STORAGE_ERROR', context: { offsetStore: `Redis ${url}`, groupIds: ['billing'] } });
    expect(err.message).toContain('was Redis flushed');
    const b = await broker(dataDir, { offsets: url, allowMissingOffsets: true });
    expect((await b.describeGroup('billing')).subscriptions[0]!.partitions.map((p) => p.paused?.reason)).toEqual(['offsets-lost', 'offsets-lost']);
  });

  it('PostgreSQL: an emptied offsets table is refused, naming the database', async () => {
    const pg = await pgSchema('lost');
    cleanups.push(() => pg.drop());
    const { dataDir } = await withCommittedGroup({ offsets: pg.url });
    const pool = pg.pool(1);
    expect((await pool.query<{ n: number }>('select count(*)::int as n from onelog_committed_offsets')).rows[0]!.n).toBe(2);
    await pool.query('delete from onelog_committed_offsets');
    const err = await asyncErrorOf(broker(dataDir, { offsets: pg.url }));
    expect(err).toMatchObject({ code: 'STORAGE_ERROR', context: { groupIds: ['billing'] } });
    expect(err.context.offsetStore).toMatch(/^PostgreSQL postgres:\/\/\*\*\*@127\.0\.0\.1:5432\/test/);
  });
});

/**
 * Named leases and the broker registry against the machine's PostgreSQL, each test in a schema of its own:
 * expiry is the database's clock passing it (set back by SQL, no sleeping), and a property test races brokers
 * for one lease.
 */
import fc from 'fast-check';
import type { Pool } from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BrokerRegistry } from '../../src/cluster/brokers.js';
import { NamedLeases } from '../../src/cluster/leases.js';
import { GroupLeases } from '../../src/cluster/group-leases.js';
import { ClusterMembership } from '../../src/cluster/membership.js';
import { LeaseBalancer } from '../../src/cluster/lease-balance.js';
import { silentLogger } from '../../src/common/logger.js';
import { pgSchema } from '../helpers/services.js';
import type { PgSchema } from '../helpers/services.js';

const schemas: PgSchema[] = [];
afterEach(async () => {
  for (const s of schemas.splice(0)) await s.drop();
});

async function schema(): Promise<{ schema: PgSchema; pool: Pool }> {
  const s = await pgSchema('leases');
  schemas.push(s);
  return { schema: s, pool: s.pool(6) };
}

describe('named leases', () => {
  it('taken at epoch 1, renewed at the same epoch, refused while held, taken over at a new epoch after expiry or release', async () => {
    const { pool } = await schema();
    const [a, b] = await Promise.all([NamedLeases.open({ pool, brokerId: 1 }), NamedLeases.open({ pool, brokerId: 2 })]);
    const first = (await a.acquire('group:g', 60_000))!;
    expect(first).toMatchObject({ name: 'group:g', brokerId: 1, epoch: 1 });
    expect((await a.acquire('group:g', 60_000))!.epoch).toBe(1);
    expect(await b.acquire('group:g', 60_000)).toBeNull();
    expect(await b.holder('group:g')).toMatchObject({ brokerId: 1, epoch: 1 });
    await pool.query(`UPDATE onelog_leases SET expires_at = clock_timestamp() - interval '1 second'`);
    expect(await b.holder('group:g')).toBeNull();
    expect(await b.acquire('group:g', 60_000)).toMatchObject({ brokerId: 2, epoch: 2 });
    await a.release('group:g', 1); // a's epoch is gone: nothing happens
    expect(await a.holder('group:g')).toMatchObject({ brokerId: 2 });
    await b.release('group:g', 2);
    expect(await a.acquire('group:g', 60_000)).toMatchObject({ brokerId: 1, epoch: 3 });
    expect(await a.acquire('job:retention', 60_000)).toMatchObject({ epoch: 1 }); // another name, another lease
    await expect(a.acquire('x', 0)).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
  });

  it('property: brokers racing for one lease: one holder at a time, each epoch held by one broker, epochs only rise', async () => {
    const { pool } = await schema();
    const leases = await Promise.all([1, 2, 3].map((brokerId) => NamedLeases.open({ pool, brokerId })));
    const seen = new Map<number, number>(); // epoch -> broker
    let highest = 0;
    await fc.assert(fc.asyncProperty(fc.array(fc.record({ broker: fc.nat(2), expire: fc.boolean() }), { minLength: 2, maxLength: 12 }), async (steps) => {
      const results = await Promise.all(steps.map(async (s) => {
        if (s.expire) await pool.query(`UPDATE onelog_leases SET expires_at = clock_timestamp() - interval '1 second' WHERE name = 'job:x'`);
        return leases[s.broker]!.acquire('job:x', 60_000);
      }));
      for (const r of results) {
        if (r === null) continue;
        expect(seen.get(r.epoch) ?? r.brokerId).toBe(r.brokerId);
        seen.set(r.epoch, r.brokerId);
      }
      const holder = (await leases[0]!.holder('job:x'))!;
      expect(holder.epoch).toBeGreaterThanOrEqual(highest);
      highest = holder.epoch;
    }), { numRuns: 20 });
  });
});

describe('broker registry', () => {
  it('lists the live brokers with their addresses; a stale heartbeat is not live; a clean stop leaves at once', async () => {
    const { pool } = await schema();
    const one = await BrokerRegistry.open({ pool, brokerId: 1 });
    const two = await BrokerRegistry.open({ pool, brokerId: 2 });
    await two.register({ url: 'http://127.0.0.1:7002' });
    await one.register({ url: 'http://127.0.0.1:7001', kafkaAddress: '127.0.0.1:9001' });
    expect((await one.live()).map((b) => [b.brokerId, b.url, b.kafkaAddress])).toEqual([[1, 'http://127.0.0.1:7001', '127.0.0.1:9001'], [2, 'http://127.0.0.1:7002', null]]);
    await pool.query(`UPDATE onelog_brokers SET heartbeat_at = clock_timestamp() - interval '11 seconds' WHERE broker_id = 2`);
    expect((await one.live()).map((b) => b.brokerId)).toEqual([1]);
    await two.heartbeat();
    expect((await one.live()).map((b) => b.brokerId)).toEqual([1, 2]);
    await one.deregister();
    expect((await two.live()).map((b) => b.brokerId)).toEqual([2]);
  });

  it('a second process with a live broker\'s id is refused; once the first is not live it takes the id, and the first is told', async () => {
    const { pool } = await schema();
    const first = await BrokerRegistry.open({ pool, brokerId: 7 });
    const second = await BrokerRegistry.open({ pool, brokerId: 7 });
    await first.register({ url: 'http://127.0.0.1:7007' });
    await expect(second.register({ url: 'http://127.0.0.1:8007' })).rejects.toMatchObject({
      code: 'ALREADY_EXISTS', context: { brokerId: 7, url: 'http://127.0.0.1:7007' },
    });
    await first.register({ url: 'http://127.0.0.1:7007' }); // registering again itself is fine
    await pool.query(`UPDATE onelog_brokers SET heartbeat_at = clock_timestamp() - interval '1 minute'`);
    await second.register({ url: 'http://127.0.0.1:8007' });
    await expect(first.heartbeat()).rejects.toMatchObject({ code: 'ALREADY_EXISTS' });
    expect((await second.live()).map((b) => b.url)).toEqual(['http://127.0.0.1:8007']);
  });

  it('a process restarted at the same URL (the first one killed, its heartbeat still fresh) takes its id over at once', async () => {
    const { pool } = await schema();
    const killed = await BrokerRegistry.open({ pool, brokerId: 8 });
    await killed.register({ url: 'http://127.0.0.1:7008' });
    const restarted = await BrokerRegistry.open({ pool, brokerId: 8 });
    await restarted.register({ url: 'http://127.0.0.1:7008' });
    await expect(killed.heartbeat()).rejects.toMatchObject({ code: 'ALREADY_EXISTS' });
    await restarted.heartbeat();
  });
});

describe('draining', () => {
  it('marks a live broker draining (listed so), refuses a broker not live, and a process registering as it again clears the mark', async () => {
    const { pool } = await schema();
    const one = await BrokerRegistry.open({ pool, brokerId: 1 });
    const two = await BrokerRegistry.open({ pool, brokerId: 2 });
    await one.register({ url: 'http://127.0.0.1:7001' });
    await two.register({ url: 'http://127.0.0.1:7002' });
    expect(await one.drain(2)).toBe(true);
    expect(await one.drain(9)).toBe(false);
    expect((await one.live()).map((b) => [b.brokerId, b.draining])).toEqual([[1, false], [2, true]]);
    await (await BrokerRegistry.open({ pool, brokerId: 2 })).register({ url: 'http://127.0.0.1:7002' });
    expect((await one.live()).map((b) => [b.brokerId, b.draining])).toEqual([[1, false], [2, false]]);
  });

  it('a draining broker gives its group leases up and takes none: it names the holder, or a live broker not draining', async () => {
    const { pool } = await schema();
    const registries = await Promise.all([1, 2].map((brokerId) => BrokerRegistry.open({ pool, brokerId })));
    for (const [i, r] of registries.entries()) await r.register({ url: `http://127.0.0.1:700${i + 1}` });
    const [g1, g2] = await Promise.all([1, 2].map(async (brokerId) =>
      new GroupLeases({ leases: await NamedLeases.open({ pool, brokerId }), registry: registries[brokerId - 1]!, logger: silentLogger })));
    const lost: string[] = [];
    g1!.onLost((groupId) => lost.push(groupId));
    try {
      await g1!.claim('held');
      await g2!.claim('theirs');
      await registries[0]!.drain(1);
      await g1!.setDraining(true);
      expect(lost).toEqual(['held']);
      expect(await g2!.holder('held')).toBeNull();
      await expect(g1!.claim('held')).rejects.toMatchObject({ code: 'NOT_COORDINATOR', context: { coordinatorBrokerId: 2, coordinatorUrl: 'http://127.0.0.1:7002' } });
      await expect(g1!.claim('theirs')).rejects.toMatchObject({ code: 'NOT_COORDINATOR', context: { coordinatorBrokerId: 2 } });
      expect(await g2!.claim('held')).toBeGreaterThanOrEqual(2); // the broker named takes it
    } finally {
      await g1!.close();
      await g2!.close();
    }
  });
});

describe('cluster membership', () => {
  it('a broker whose id another process took over is told once, to stop its writes', async () => {
    const { pool } = await schema();
    const registry = await BrokerRegistry.open({ pool, brokerId: 3 });
    const groups = new GroupLeases({ leases: await NamedLeases.open({ pool, brokerId: 3 }), registry, logger: silentLogger });
    const balancer = new LeaseBalancer({
      brokerId: 3, brokers: () => registry.live(), leases: async () => [], handOver: async () => {}, setDraining: async () => {}, intervalMs: 1000, logger: silentLogger,
    });
    const membership = new ClusterMembership(registry, groups, silentLogger, balancer, 20);
    const replaced: string[] = [];
    membership.onReplaced((err) => replaced.push(err.code));
    try {
      await membership.advertise({ url: 'http://127.0.0.1:7003' });
      // Paused past the registry's timeout, then another process started with its id.
      await pool.query(`UPDATE onelog_brokers SET heartbeat_at = clock_timestamp() - interval '1 minute'`);
      await (await BrokerRegistry.open({ pool, brokerId: 3 })).register({ url: 'http://127.0.0.1:8003' });
      await vi.waitFor(() => expect(replaced).toEqual(['ALREADY_EXISTS']), { timeout: 5000 });
      // Three more failed heartbeats: told once only.
      const heartbeat = vi.spyOn(registry, 'heartbeat');
      await vi.waitFor(() => expect(heartbeat.mock.calls.length).toBeGreaterThanOrEqual(3), { timeout: 5000 });
      await Promise.allSettled(heartbeat.mock.results.map((r) => r.value as Promise<void>));
      expect(replaced).toEqual(['ALREADY_EXISTS']);
    } finally {
      await membership.close();
    }
  });
});

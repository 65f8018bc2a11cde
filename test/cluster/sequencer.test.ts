/**
 * The sequencer against the machine's PostgreSQL, each test in a schema of its own: the sequencer's contract
 * (test/log/sequencer.contract.ts), and what is PostgreSQL's own: LISTEN wake-ups on a channel per cluster, a broker
 * paused inside a transaction, its configuration checks.
 */
import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PostgresSequencer } from '../../src/log/objects/postgres-sequencer.js';
import { openPool } from '../../src/common/postgres.js';
import type { ObjectChunk } from '../../src/log/objects/sequencer.js';
import { pgSchema } from '../helpers/services.js';
import type { PgSchema } from '../helpers/services.js';
import { sequencerContract } from '../log/sequencer.contract.js';

const schemas: PgSchema[] = [];
afterEach(async () => {
  for (const s of schemas.splice(0)) await s.drop();
});

async function brokers(n: number, leaseMs = 60_000): Promise<{ schema: PgSchema; seqs: PostgresSequencer[] }> {
  const schema = await pgSchema('seq');
  schemas.push(schema);
  const seqs = [];
  for (let id = 1; id <= n; id++) seqs.push(await PostgresSequencer.open({ pool: schema.pool(3), brokerId: id, leaseMs }));
  return { schema, seqs };
}

const chunk = (partition: number, epoch: number, offsets: number, position = 0): ObjectChunk => ({
  topic: 't', partition, epoch, offsets, position, length: 100 * offsets, maxTimestamp: 1_000 + offsets,
});

sequencerContract('PostgreSQL', async () => {
  const schema = await pgSchema('seq');
  const admin = schema.pool(2);
  return {
    async brokers(n, leaseMs = 60_000) {
      const seqs = [];
      for (let id = 1; id <= n; id++) seqs.push(await PostgresSequencer.open({ pool: schema.pool(3), brokerId: id, leaseMs }));
      return seqs;
    },
    async expire(topic, partition) {
      await admin.query(`UPDATE onelog_partitions SET lease_expires_at = clock_timestamp() - interval '1 second' WHERE topic = $1 AND partition = $2`,
        [topic, partition]);
    },
    async objectKeys() {
      return (await admin.query<{ object_key: string }>('SELECT object_key FROM onelog_objects ORDER BY object_key')).rows.map((r) => r.object_key);
    },
    dispose: () => schema.drop(),
  };
});

describe('sequencer on PostgreSQL', () => {
  it('a commit notifies the new high watermarks on the log channel', async () => {
    const { schema, seqs: [a] } = await brokers(1);
    await a!.addPartitions('t', 2);
    const leases = await a!.acquire([{ topic: 't', partition: 0 }, { topic: 't', partition: 1 }]);
    const listener = new pg.Client({ connectionString: schema.url });
    await listener.connect();
    try {
      const heard = new Promise<string>((resolve) => listener.on('notification', (n) => resolve(`${n.channel} ${n.payload}`)));
      await listener.query(`LISTEN ${a!.channel}`);
      await a!.commit('obj', 10, [chunk(0, leases[0]!.epoch, 4), chunk(1, leases[1]!.epoch, 2)]);
      expect(await heard).toBe(`${a!.channel} 0:4:t\n1:2:t`);
      expect(a!.channel).toMatch(/^onelog_log_[0-9a-f]{12}$/);
    } finally {
      await listener.end();
    }
  });

  it('two clusters in two schemas of one database notify on channels of their own (a commit in one moves no position in the other)', async () => {
    const { seqs: [x] } = await brokers(1);
    const { schema: other, seqs: [y] } = await brokers(1);
    expect(x!.channel).not.toBe(y!.channel);
    await x!.addPartitions('t', 1);
    const [lease] = await x!.acquire([{ topic: 't', partition: 0 }]);
    const listener = new pg.Client({ connectionString: other.url });
    await listener.connect();
    try {
      const heard: string[] = [];
      listener.on('notification', (n) => heard.push(n.payload ?? ''));
      await listener.query(`LISTEN ${y!.channel}`);
      await x!.commit('obj', 10, [chunk(0, lease!.epoch, 4)]);
      // A notification of y's own, sent after x's: LISTEN delivers in commit order, so x's would have come first.
      await y!.addPartitions('u', 1);
      const [own] = await y!.acquire([{ topic: 'u', partition: 0 }]);
      await y!.commit('obj', 10, [{ ...chunk(0, own!.epoch, 1), topic: 'u' }]);
      await vi.waitFor(() => expect(heard).toHaveLength(1), { timeout: 5000 });
      expect(heard).toEqual(['0:1:u']);
    } finally {
      await listener.end();
    }
  });

  it('a broker paused inside a commit\'s transaction holds its partition no longer than its lease: the database ends the session, another broker takes over', async () => {
    // Found by test/cluster/cluster-chaos.test.ts: a broker SIGSTOPped between two statements of a transaction kept the
    // partitions' rows locked, and every other broker's acquire waited on them for the whole pause (30 s, the statement
    // timeout), stalling its whole write path, though the paused broker's leases had long expired.
    const schema = await pgSchema('seq');
    schemas.push(schema);
    const leaseMs = 1000;
    const pausedPool = openPool(schema.url, 2, { idleInTransactionMs: leaseMs });
    const a = await PostgresSequencer.open({ pool: pausedPool, brokerId: 1, leaseMs });
    const b = await PostgresSequencer.open({ pool: schema.pool(2), brokerId: 2, leaseMs });
    await a.addPartitions('t', 1);
    const [lease] = await a.acquire([{ topic: 't', partition: 0 }]);
    // a stops right after its commit's UPDATE locked the partition's row (a GC pause, SIGSTOP): its next statement waits.
    let resume = () => {};
    const resumed = new Promise<void>((resolve) => (resume = resolve));
    let paused = false;
    const connect = pausedPool.connect.bind(pausedPool);
    pausedPool.connect = (async () => {
      const client = await connect();
      const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
      (client as unknown as { query: typeof query }).query = async (...args: unknown[]) => {
        if (paused) await resumed;
        const result = await query(...args);
        if (typeof args[0] === 'string' && args[0].includes('SET high_watermark')) paused = true;
        return result;
      };
      return client;
    }) as typeof pausedPool.connect;
    const committing = a.commit('obj-paused', 100, [chunk(0, lease!.epoch, 1)]).then(() => null, (err: unknown) => err);
    try {
      const pausedAt = Date.now();
      for (let taken: unknown[] = []; taken.length === 0;) {
        if (!paused) {
          await new Promise((resolve) => setTimeout(resolve, 10));
          continue;
        }
        const within = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('b\'s acquire still waits on a\'s lock after 5 s')), 5000));
        taken = await Promise.race([b.acquire([{ topic: 't', partition: 0 }]), within]);
      }
      expect(Date.now() - pausedAt).toBeLessThan(5000);
      expect((await b.state('t', 0))!.leaderBrokerId).toBe(2);
    } finally {
      resume();
    }
    // When a resumes, its transaction is gone: the commit fails and stores nothing.
    expect(await committing).toMatchObject({ code: 'STORAGE_ERROR' });
    expect(await b.lookup('t', 0, 0)).toEqual([]);
    expect((await b.state('t', 0))!.highWatermark).toBe(0);
    await pausedPool.end();
  });

  it('refuses a bad broker id, lease or table prefix', async () => {
    const schema = await pgSchema('seq');
    schemas.push(schema);
    const pool = schema.pool(1);
    await expect(PostgresSequencer.open({ pool, brokerId: -1 })).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
    await expect(PostgresSequencer.open({ pool, brokerId: 1, leaseMs: 5 })).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
    await expect(PostgresSequencer.open({ pool, brokerId: 1, tablePrefix: 'A-b' })).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
  });
});

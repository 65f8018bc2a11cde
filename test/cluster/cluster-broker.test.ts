/**
 * The broker in cluster mode: its log as objects in S3-compatible storage (s3rver on loopback) indexed in the machine's
 * PostgreSQL, its catalog there too, its offsets in the machine's Redis. The broker contract runs on it as on the
 * embedded default; then two brokers of one cluster share topics, records and long-polls.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import fs from 'node:fs';
import pg from 'pg';
import { Broker } from '../../src/broker/broker.js';
import type { BrokerOptions } from '../../src/broker/options.js';
import { ManualClock } from '../../src/common/clock.js';
import { brokerContract } from '../api/broker.contract.js';
import { startS3 } from '../helpers/s3.js';
import type { S3Server } from '../helpers/s3.js';
import { testCluster } from '../helpers/cluster.js';
import type { TestCluster } from '../helpers/cluster.js';
import { tmpDir } from '../helpers/tmp.js';
import { asyncCodeOf } from '../helpers/errors.js';

let s3: S3Server;
beforeAll(async () => {
  s3 = await startS3();
});
afterAll(async () => {
  await s3?.close();
});

const cluster = (): Promise<TestCluster> => testCluster(s3);

brokerContract('cluster mode (objects in S3-compatible storage, PostgreSQL, Redis)', async () => {
  const c = await cluster();
  return { open: (clock) => Broker.open({ ...c.options(1), clock }), dispose: c.dispose };
});

const rec = (value: string, partition = 0) => ({ key: null, value: Buffer.from(value), partition });

describe('two brokers of one cluster', () => {
  it('serve one another\'s topics and records: created on one, produced on it, read, long-polled and committed on the other', async () => {
    const c = await cluster();
    const a = await Broker.open({ ...c.options(1), clock: new ManualClock(1_700_000_000_000) });
    const b = await Broker.open({ ...c.options(2), clock: new ManualClock(1_700_000_000_000) });
    try {
      await a.createTopic({ topic: 'edits', partitions: 2 });
      // b never heard of the topic: it reads it from the catalog on first use.
      expect((await b.describeTopic('edits')).partitions.map((p) => p.highWatermark)).toEqual([0, 0]);
      const waiting = b.fetch({ topic: 'edits', partitions: [{ partition: 1, offset: 0 }], maxWaitMs: 10_000 });
      await a.produce({ topic: 'edits', records: [rec('x', 1), rec('y', 1)] });
      expect((await waiting).partitions[0]!.records.map((r) => r.value!.toString())).toEqual(['x', 'y']);
      // Right after a's acknowledgement, b serves the records (no waiting for a notification).
      await a.produce({ topic: 'edits', records: [rec('z', 1)] });
      const read = await b.fetch({ topic: 'edits', partitions: [{ partition: 1, offset: 2 }] });
      expect(read.partitions[0]).toMatchObject({ highWatermark: 3, nextOffset: 3 });
      await b.commitOffsets({ groupId: 'g', topic: 'edits', offsets: [{ partition: 1, offset: 3 }] });
      expect((await a.committedOffsets('g')).map((o) => [o.partition, o.offset])).toEqual([[1, 3]]);
      // a leads partition 1 (its lease): b refuses to sequence it, retriably, naming the leader.
      const refused = await b.produce({ topic: 'edits', records: [rec('w', 1)] }).catch((err: unknown) => err);
      expect(refused).toMatchObject({ code: 'NOT_LEADER_OR_FOLLOWER', context: { leaderBrokerId: 1 } });
      // Deleted on b, the topic is gone from a too.
      await b.deleteTopic('edits');
      expect(await asyncCodeOf(a.describeTopic('edits'))).toBe('UNKNOWN_TOPIC');
    } finally {
      await a.close();
      await b.close();
      await c.dispose();
    }
  });

  it('runs scheduled retention on the holder of job:retention only; the other broker takes the job over when it closes', async () => {
    const c = await cluster();
    const day = 86_400_000;
    const t0 = 1_700_000_000_000;
    const db = new pg.Client({ connectionString: c.pgUrl });
    await db.connect();
    const lease = async () => (await db.query<{ holder: number | null; expires: string }>(
      `SELECT holder_broker_id AS holder, expires_at::text AS expires FROM onelog_leases WHERE name = 'job:retention'`)).rows[0];
    const a = await Broker.open({ ...c.options(1), clock: new ManualClock(t0), retentionCheckIntervalMs: 50 });
    let b: Broker | undefined;
    try {
      await vi.waitFor(async () => expect((await lease())?.holder).toBe(1), { timeout: 5000 });
      await a.createTopic({ topic: 't', partitions: 1, config: { retentionMs: day } });
      await a.produce({ topic: 't', records: [{ key: null, value: Buffer.from('fresh'), partition: 0, timestamp: t0 }] });
      // By b's clock the record expired nine days ago; by a's it is fresh. Only a's passes run while it holds the job.
      b = await Broker.open({ ...c.options(2), clock: new ManualClock(t0 + 10 * day), retentionCheckIntervalMs: 50 });
      for (let renewals = 0; renewals < 3; renewals++) {
        const seen = (await lease())!.expires;
        await vi.waitFor(async () => expect((await lease())!.expires).not.toBe(seen), { timeout: 5000, interval: 10 });
      }
      expect((await lease())?.holder).toBe(1);
      expect((await b.describeTopic('t')).partitions[0]!.logStartOffset).toBe(0);
      await a.close(); // gives its job leases up: b's next pass takes the job, and its clock expires the record
      await vi.waitFor(async () => expect((await b!.describeTopic('t')).partitions[0]!.logStartOffset).toBe(1), { timeout: 5000 });
      expect((await lease())?.holder).toBe(2);
    } finally {
      await db.end();
      await a.close();
      await b?.close();
      await c.dispose();
    }
  });

  it('hands a partition over when its leader closes: the other broker sequences it after the first one\'s records', async () => {
    const c = await cluster();
    const a = await Broker.open(c.options(1));
    const b = await Broker.open(c.options(2));
    try {
      await a.createTopic({ topic: 't', partitions: 1 });
      await a.produce({ topic: 't', records: [rec('a0'), rec('a1')] });
      await a.close(); // gives its leases up
      expect((await b.produce({ topic: 't', records: [rec('b2')] })).offsets).toEqual([{ partition: 0, offset: 2 }]);
      const r = await b.fetch({ topic: 't', partitions: [{ partition: 0, offset: 0 }] });
      expect(r.partitions[0]!.records.map((x) => `${x.offset}:${x.value!.toString()}`)).toEqual(['0:a0', '1:a1', '2:b2']);
    } finally {
      await a.close();
      await b.close();
      await c.dispose();
    }
  });
});

describe('serve --log', () => {
  it('refuses a broker whose --log names another bucket or prefix than the cluster\'s, or a bucket that cannot be listed', async () => {
    const c = await cluster();
    const a = await Broker.open(c.options(1));
    try {
      const other = c.options(2);
      const refused = (log: string) => Broker.open({ ...other, log }).then(async (b) => {
        await b.close();
        return null;
      }, (err: unknown) => err);
      expect(await refused(other.log!.replace(/\/([^/?]+)\?/, '/$1-other?'))).toMatchObject({ code: 'INVALID_CONFIG', context: { option: 'log', catalogLog: expect.stringMatching(/^s3:\/\//) } });
      expect(await refused(other.log!.replace(`s3://${s3.bucket}/`, 's3://no-such-bucket/'))).toMatchObject({ code: 'INVALID_CONFIG', context: { option: 'log' } });
      // A data directory's broker on that catalog is told where the log is.
      expect(await Broker.open({ dataDir: tmpDir(), catalog: c.pgUrl, offsets: other.offsets }).catch((err: unknown) => err)).toMatchObject({
        code: 'INVALID_CONFIG', message: expect.stringMatching(/log in object storage at s3:\/\//),
      });
    } finally {
      await a.close();
      await c.dispose();
    }
  });

  it('refuses a log in object storage without the shared catalog and offsets, or without a broker id, and a broker id without it', async () => {
    const dataDir = tmpDir();
    const log = 's3://onelog?endpoint=http://127.0.0.1:1';
    const refused = (options: Partial<BrokerOptions>) => Broker.open({ dataDir, ...options }).then(() => null, (err: unknown) => err);
    expect(await refused({ log })).toMatchObject({ code: 'INVALID_CONFIG', context: { option: 'log' } });
    expect(await refused({ log, catalog: 'postgres://127.0.0.1:1/x', offsets: 'postgres' })).toMatchObject({ code: 'INVALID_CONFIG', context: { option: 'broker-id' } });
    expect(await refused({ brokerId: 1 })).toMatchObject({ code: 'INVALID_CONFIG', context: { option: 'broker-id' } });
    expect(await refused({ log: 'http://bucket', catalog: 'postgres://127.0.0.1:1/x', offsets: 'postgres', brokerId: 1 })).toMatchObject({ code: 'INVALID_CONFIG', context: { option: 'log' } });
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
});

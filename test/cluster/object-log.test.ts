/**
 * The log store contract on object storage (s3rver on loopback) indexed in the machine's PostgreSQL; and what
 * is the object log's own: one object per flush window for many partitions, a second broker reading what the
 * first wrote, a lease lost while an object was written refusing its chunk, a partition another broker leads.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ObjectLogStore } from '../../src/log/objects/object-log.js';
import { S3ObjectStore } from '../../src/log/objects/object-store.js';
import { parseS3Url } from '../../src/log/objects/s3-location.js';
import { PostgresSequencer } from '../../src/log/objects/postgres-sequencer.js';
import { replaceByMerged } from '../../src/log/objects/sequencer.js';
import { sweepObjects } from '../../src/log/objects/sweep.js';
import { mergePartition } from '../../src/log/objects/merger.js';
import { encodeBatch } from '../../src/protocol/record-batch.js';
import { pgSchema, uniqueName } from '../helpers/services.js';
import type { PgSchema } from '../helpers/services.js';
import { startS3 } from '../helpers/s3.js';
import type { S3Server } from '../helpers/s3.js';
import { logsContract } from '../log/logs.contract.js';
import { objectLogsFixture } from '../helpers/object-logs.js';

let s3: S3Server;
beforeAll(async () => {
  s3 = await startS3();
});
afterAll(async () => {
  await s3?.close();
});

/** A broker's object log on `schema` and under `prefix` of the bucket. */
async function broker(
  schema: PgSchema, prefix: string, brokerId: number, flushWindowMs = 5, leaseMs = 30_000,
): Promise<{ store: ObjectLogStore; objects: S3ObjectStore; sequencer: PostgresSequencer }> {
  const objects = new S3ObjectStore(parseS3Url(`s3://${s3.bucket}/${prefix}?endpoint=${s3.endpoint}`));
  const sequencer = await PostgresSequencer.open({ pool: schema.pool(3), brokerId, leaseMs, listenUrl: schema.url });
  const store = await ObjectLogStore.open({ sequencer, objects, flushWindowMs });
  const close = store.close.bind(store);
  store.close = async () => {
    await close();
    objects.close();
  };
  return { store, objects, sequencer };
}

logsContract('objects in S3-compatible storage, indexed in PostgreSQL', async () => {
  const schema = await pgSchema('objlog');
  const prefix = uniqueName('log');
  // The pools are the schema's: its drop ends them.
  return objectLogsFixture(async () => {
    const pool = schema.pool(3);
    return {
      sequencer: await PostgresSequencer.open({ pool, brokerId: 1, listenUrl: schema.url }),
      objects: new S3ObjectStore(parseS3Url(`s3://${s3.bucket}/${prefix}?endpoint=${s3.endpoint}`)),
    };
  }, () => schema.drop());
});

const batch = (value: string) => encodeBatch([{ key: null, value: Buffer.from(value) }], 0, 1);

describe('object log', () => {
  it('batches of many partitions appended in one window make one object and one commit', async () => {
    const schema = await pgSchema('objlog');
    const { store, objects, sequencer } = await broker(schema, uniqueName('log'), 1, 200);
    try {
      await sequencer.addPartitions('t', 8);
      const requests = Array.from({ length: 8 }, (_, partition) => ({ topic: 't', partition, batch: batch(`p${partition}`) }));
      // Eight appends within the window, as eight producers' requests.
      const outcomes = (await Promise.all(requests.map((r) => store.append([r])))).flat();
      expect(outcomes).toEqual(requests.map(() => ({ baseOffset: 0, lastOffset: 0 })));
      expect(store.stats).toMatchObject({ objectsPut: 1, commits: 1 });
      const keys = [];
      for await (const o of objects.list('objects/')) keys.push(o.key);
      expect(keys).toHaveLength(1);
      expect(keys[0]).toMatch(/^objects\/1\/[0-9a-z]+-[0-9a-f-]{36}$/);
    } finally {
      await store.close();
      await schema.drop();
    }
  });

  it('a short lease is renewed a third of it before its end, not taken again at every flush', async () => {
    const schema = await pgSchema('objlog');
    const { store, sequencer } = await broker(schema, uniqueName('log'), 1, 5, 1500);
    try {
      await sequencer.addPartitions('t', 1);
      let acquires = 0;
      const acquire = sequencer.acquire.bind(sequencer);
      sequencer.acquire = (partitions) => {
        if (partitions.length > 0) acquires++;
        return acquire(partitions);
      };
      const started = performance.now();
      let flushes = 0;
      while (performance.now() - started < 400) {
        await store.append([{ topic: 't', partition: 0, batch: batch('x') }]);
        flushes++;
      }
      // The first flush takes the lease for 1.5 s; the flushes of the next 400 ms find it held past the 500 ms margin.
      expect(flushes).toBeGreaterThan(3);
      expect(acquires).toBe(1);
    } finally {
      await store.close();
      await schema.drop();
    }
  });

  it('a second broker reads what the first wrote, and is refused the partitions the first leads', async () => {
    const schema = await pgSchema('objlog');
    const prefix = uniqueName('log');
    const a = await broker(schema, prefix, 1);
    const b = await broker(schema, prefix, 2);
    try {
      await a.sequencer.addPartitions('t', 2);
      expect(await a.store.append([{ topic: 't', partition: 0, batch: batch('from a') }])).toEqual([{ baseOffset: 0, lastOffset: 0 }]);
      const read = await b.store.read('t', 0, 0, 1000);
      expect(read.highWatermark).toBe(1);
      expect(read.batches.includes(Buffer.from('from a'))).toBe(true);
      // b waits on a partition a writes: LISTEN wakes it.
      const waiting = b.store.waitForData('t', 0, 1, 20_000);
      await a.store.append([{ topic: 't', partition: 0, batch: batch('again') }]);
      await waiting;
      const [refused, own] = await b.store.append([{ topic: 't', partition: 0, batch: batch('b on 0') }, { topic: 't', partition: 1, batch: batch('b on 1') }]);
      expect(refused).toMatchObject({ error: { code: 'NOT_LEADER_OR_FOLLOWER' } });
      expect(own).toEqual({ baseOffset: 0, lastOffset: 0 });
      expect((await a.store.positions('t', 0)).highWatermark).toBe(2);
    } finally {
      await a.store.close();
      await b.store.close();
      await schema.drop();
    }
  });

  it('a broker whose lease moved while its object was written has the chunk refused; nothing of it is served', async () => {
    const schema = await pgSchema('objlog');
    const prefix = uniqueName('log');
    const a = await broker(schema, prefix, 1, 300);
    const b = await broker(schema, prefix, 2);
    try {
      await a.sequencer.addPartitions('t', 1);
      await a.store.append([{ topic: 't', partition: 0, batch: batch('first') }]);
      // a's next append waits in its window; meanwhile a's lease ends (as a pause past it would) and b takes it.
      const late = a.store.append([{ topic: 't', partition: 0, batch: batch('late') }]);
      await schema.pool(1).query(`UPDATE onelog_partitions SET lease_expires_at = clock_timestamp() - interval '1 second'`);
      expect(await b.store.append([{ topic: 't', partition: 0, batch: batch('b took over') }])).toEqual([{ baseOffset: 1, lastOffset: 1 }]);
      expect(await late).toMatchObject([{ error: { code: 'NOT_LEADER_OR_FOLLOWER', context: { leaderBrokerId: 2 } } }]);
      const read = await a.store.read('t', 0, 0, 1_000_000);
      expect(read.highWatermark).toBe(2);
      expect(read.batches.includes(Buffer.from('late'))).toBe(false);
      expect(read.batches.includes(Buffer.from('b took over'))).toBe(true);
    } finally {
      await a.store.close();
      await b.store.close();
      await schema.drop();
    }
  });
});

describe('idempotent producers across brokers', () => {
  it('after a broker\'s loss, the broker that takes the partition over answers a retry of its batch with the stored offsets', async () => {
    const schema = await pgSchema('objlog');
    const prefix = uniqueName('log');
    const a = await broker(schema, prefix, 1);
    const b = await broker(schema, prefix, 2);
    try {
      await a.sequencer.addPartitions('t', 1);
      const first = encodeBatch([{ key: null, value: Buffer.from('once') }], 0, 1, { producerId: 5, producerEpoch: 0, baseSequence: 0 });
      expect(await a.store.append([{ topic: 't', partition: 0, batch: first }])).toEqual([{ baseOffset: 0, lastOffset: 0 }]);
      // a is lost (its lease runs out); the producer, unsure, sends the batch again to b.
      await schema.pool(1).query(`UPDATE onelog_partitions SET lease_expires_at = clock_timestamp() - interval '1 second'`);
      expect(await b.store.append([{ topic: 't', partition: 0, batch: first }])).toEqual([{ baseOffset: 0, lastOffset: 0, duplicate: true }]);
      const next = encodeBatch([{ key: null, value: Buffer.from('next') }], 0, 1, { producerId: 5, producerEpoch: 0, baseSequence: 1 });
      expect(await b.store.append([{ topic: 't', partition: 0, batch: next }])).toEqual([{ baseOffset: 1, lastOffset: 1 }]);
      expect((await b.store.positions('t', 0)).highWatermark).toBe(2);
    } finally {
      await a.store.close();
      await b.store.close();
      await schema.drop();
    }
  });
});

describe('merging', () => {
  it('merges a partition\'s small chunks into one object, reads give the same records, and the sweep deletes what no row refers to', async () => {
    const schema = await pgSchema('objlog');
    const prefix = uniqueName('log');
    const { store, objects } = await broker(schema, prefix, 1, 0);
    const sequencer = await PostgresSequencer.open({ pool: schema.pool(2), brokerId: 1, maxObjectAgeMs: 1000 });
    try {
      await sequencer.addPartitions('t', 2);
      // Ten flushes: partition 0's batch in each, partition 1's in every other one (those objects stay in use).
      for (let i = 0; i < 10; i++) {
        await store.append([{ topic: 't', partition: 0, batch: batch(`zero-${i}`) }, ...(i % 2 === 0 ? [{ topic: 't', partition: 1, batch: batch(`one-${i}`) }] : [])]);
      }
      const before = await store.read('t', 0, 0, 1_000_000);
      const original = await sequencer.lookup('t', 0, 0, 100);
      expect(original).toHaveLength(10);
      const merged = await mergePartition(sequencer, objects, 't', 0, { minChunks: 4 });
      expect(merged).toMatchObject({ rowsMerged: 10, objectKey: expect.stringMatching(/^segments\/t\/0\/0-/) as unknown });
      const rows = await sequencer.lookup('t', 0, 0, 100);
      expect(rows.map((r) => [r.baseOffset, r.endOffset, r.objectKey])).toEqual([[0, 10, merged.objectKey]]);
      expect(await mergePartition(sequencer, objects, 't', 0, { minChunks: 4 })).toEqual({ rowsMerged: 0 });
      // Read by a broker with an empty cache: the same batches, from the merged object.
      const { store: other } = await broker(schema, prefix, 2);
      try {
        const after = await other.read('t', 0, 0, 1_000_000);
        expect(after.batches.equals(before.batches)).toBe(true);
        expect((await other.read('t', 0, 7, 1)).nextOffset).toBe(8);
      } finally {
        await other.close();
      }
      // The five objects that held only partition 0 are retired; the sweep deletes them a grace later, not the others.
      const later = Date.now() + 2 * 1000 + 60_000 + 1;
      const swept = await sweepObjects(objects, sequencer, undefined, later);
      expect(swept.deleted).toEqual([]);
      expect(swept.retired).toHaveLength(5);
      expect((await store.read('t', 1, 0, 1_000_000)).highWatermark).toBe(5);
      const left = [];
      for await (const o of objects.list('')) left.push(o.key);
      expect(left.filter((k) => k.startsWith('objects/'))).toHaveLength(5);
      expect(left.filter((k) => k.startsWith('segments/'))).toEqual([merged.objectKey]);
      // Rows another change replaced are not replaced again: nothing changes.
      expect(await replaceByMerged(sequencer, 't', 0, original, { objectKey: 'x', length: 1, sizeBytes: 1 })).toBe(false);
      expect((await sequencer.lookup('t', 0, 0, 100)).map((r) => r.objectKey)).toEqual([merged.objectKey]);
    } finally {
      await store.close();
      await schema.drop();
    }
  });
});

describe('orphan sweep', () => {
  it('deletes objects no commit took once past the grace, keeps committed ones and young ones; a late commit is refused', async () => {
    const schema = await pgSchema('objlog');
    const { store, objects } = await broker(schema, uniqueName('log'), 1);
    const sequencer = await PostgresSequencer.open({ pool: schema.pool(2), brokerId: 1, maxObjectAgeMs: 1000 });
    try {
      await sequencer.addPartitions('t', 1);
      await store.append([{ topic: 't', partition: 0, batch: batch('kept') }]);
      await objects.put('objects/1/orphan', Buffer.from('a PUT whose commit never came'));
      const keys = async () => {
        const out = [];
        for await (const o of objects.list('objects/')) out.push(o.key);
        return out;
      };
      expect(await keys()).toHaveLength(2);
      // Now: both are younger than the grace.
      expect(await sweepObjects(objects, sequencer)).toEqual({ listed: 2, deleted: [], retired: [] });
      // Past the grace: the orphan goes, the committed object stays and is still read.
      const later = Date.now() + 2 * 1000 + 60_000 + 1;
      expect(await sweepObjects(objects, sequencer, undefined, later)).toEqual({ listed: 2, deleted: ['objects/1/orphan'], retired: [] });
      expect((await keys()).filter((k) => k !== 'objects/1/orphan')).toHaveLength(1);
      expect((await store.read('t', 0, 0, 1000)).batches.includes(Buffer.from('kept'))).toBe(true);
      await expect(sweepObjects(objects, sequencer, 1999)).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
      // A commit of an object whose PUT began longer ago than maxObjectAgeMs is refused whole.
      // (Its lease is held: the lease check alone would let it through.)
      const [lease] = await sequencer.acquire([{ topic: 't', partition: 0 }]);
      const chunk = { topic: 't', partition: 0, epoch: lease!.epoch, offsets: 1, position: 0, length: 10, maxTimestamp: 1 };
      expect(await sequencer.commit('objects/1/late', 10, [chunk], Date.now() - 1001)).toMatchObject([{ error: { code: 'REQUEST_TIMED_OUT' } }]);
      expect(await sequencer.commit('objects/1/in-time', 10, [chunk], Date.now() - 900)).toEqual([{ baseOffset: 1, highWatermark: 2 }]);
    } finally {
      await store.close();
      await schema.drop();
    }
  });
});

/**
 * Group coordination in cluster mode: a group's requests are served by the broker holding its lease; the others
 * answer NOT_COORDINATOR naming it, and clients follow. A coordinator paused past its lease is replaced, and the
 * commits of its members are refused by the offset store's generation fence; it then steps down.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { Broker } from '../../src/broker/broker.js';
import { HttpApi } from '../../src/client/http-api.js';
import { Onelog } from '../../src/client/index.js';
import { servedBrokers, testCluster } from '../helpers/cluster.js';
import { asyncCodeOf } from '../helpers/errors.js';
import { startS3 } from '../helpers/s3.js';
import type { S3Server } from '../helpers/s3.js';

let s3: S3Server;
beforeAll(async () => {
  s3 = await startS3();
});
afterAll(async () => {
  await s3?.close();
});

const rec = (value: string, partition: number) => ({ key: null, value: Buffer.from(value), partition });
const refusal = (p: Promise<unknown>) => p.then(() => null, (err: unknown) => err);

/** Polls `check` every 50 ms until it holds; fails after `deadlineMs`. */
async function eventually(check: () => Promise<boolean>, deadlineMs: number): Promise<void> {
  const until = Date.now() + deadlineMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`not so after ${deadlineMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('group coordination on the group lease\'s holder', () => {
  it('serves a group on one broker: the other refuses its requests with NOT_COORDINATOR naming it, and nothing of them is done', async () => {
    const c = await testCluster(s3);
    const a = await Broker.open(c.options(1));
    const b = await Broker.open(c.options(2));
    try {
      await a.createTopic({ topic: 't', partitions: 2 });
      await a.produce({ topic: 't', records: [rec('x', 0), rec('y', 1)] });
      const m = await a.joinGroup({ groupId: 'g', topics: ['t'] });
      expect(m.assignment.map((p) => p.partition)).toEqual([0, 1]);
      // Not advertised yet: the refusal names the broker, with no URL.
      expect(await refusal(b.joinGroup({ groupId: 'g', topics: ['t'] }))).toMatchObject({
        code: 'NOT_COORDINATOR', context: { groupId: 'g', coordinatorBrokerId: 1, coordinatorUrl: null },
      });
      await a.advertise({ url: 'http://127.0.0.1:7171' });
      expect(await b.liveBrokers()).toEqual([expect.objectContaining({ brokerId: 1, url: 'http://127.0.0.1:7171' })]);
      // The join committed where each partition starts (latest: 1); a replay to 0 is refused on b and done on a.
      const commit = { groupId: 'g', topic: 't', memberId: m.memberId, generationId: m.generationId, offsets: [{ partition: 0, offset: 0 }] };
      const committed = async () => (await a.committedOffsets('g')).map((o) => [o.partition, o.offset]);
      expect(await committed()).toEqual([[0, 1], [1, 1]]);
      for (const attempt of [
        () => b.commitOffsets(commit), () => b.heartbeat({ groupId: 'g', memberId: m.memberId, generationId: m.generationId, owned: [] }),
        () => b.describeGroup('g'),
        () => b.fetch({ topic: 't', groupId: 'g', memberId: m.memberId, generationId: m.generationId, partitions: [{ partition: 0, offset: 0 }] }),
        () => b.resetOffsets({ groupId: 'g', topic: 't', spec: { to: 'earliest' }, execute: true }), () => b.deleteGroup('g'),
      ]) {
        expect(await refusal(attempt())).toMatchObject({ code: 'NOT_COORDINATOR', context: { coordinatorBrokerId: 1, coordinatorUrl: 'http://127.0.0.1:7171' } });
      }
      expect(await committed()).toEqual([[0, 1], [1, 1]]);
      expect((await a.describeGroup('g')).members).toHaveLength(1); // b's delete did nothing
      await a.commitOffsets(commit);
      // Any broker reads committed offsets (the offset store is shared).
      expect((await b.committedOffsets('g')).map((o) => [o.partition, o.offset])).toEqual([[0, 0], [1, 1]]);
    } finally {
      await a.close();
      await b.close();
      await c.dispose();
    }
  });

  it('hands a group over when its coordinator closes: the next broker goes on above its generations', async () => {
    const c = await testCluster(s3);
    const a = await Broker.open(c.options(1));
    const b = await Broker.open(c.options(2));
    try {
      await a.createTopic({ topic: 't', partitions: 1 });
      const first = await a.joinGroup({ groupId: 'g', topics: ['t'] });
      await a.close(); // gives the group's lease up
      const second = await b.joinGroup({ groupId: 'g', topics: ['t'] });
      expect(second.generationId).toBeGreaterThan(first.generationId);
      expect(second.assignment.map((p) => p.partition)).toEqual([0]);
    } finally {
      await a.close();
      await b.close();
      await c.dispose();
    }
  });

  it('a coordinator paused past its lease: another takes the group over, the first one\'s member commits are refused, then it steps down', async () => {
    const c = await testCluster(s3);
    const a = await Broker.open(c.options(1, { leaseMs: 3000 }));
    const b = await Broker.open(c.options(2, { leaseMs: 3000 }));
    const db = new pg.Client({ connectionString: c.pgUrl });
    await db.connect();
    try {
      await a.createTopic({ topic: 't', partitions: 1 });
      await a.produce({ topic: 't', records: [rec('r0', 0), rec('r1', 0), rec('r2', 0)] });
      const old = await a.joinGroup({ groupId: 'g', topics: ['t'] });
      await a.commitOffsets({ groupId: 'g', topic: 't', memberId: old.memberId, generationId: old.generationId, offsets: [{ partition: 0, offset: 1 }] });
      // What a pause (GC, SIGSTOP) past the lease leaves behind: the lease expired by the database's clock while a
      // still believes it holds it.
      await db.query(`UPDATE onelog_leases SET expires_at = clock_timestamp() WHERE name = 'group:g'`);
      const taken = await b.joinGroup({ groupId: 'g', topics: ['t'] });
      expect(taken.generationId).toBeGreaterThan(old.generationId);
      expect(taken.assignment).toEqual([{ topic: 't', partition: 0, offset: 1 }]);
      // a's member commits late: a still thinks it coordinates, but the offset store's fence refuses its generation.
      const late = await refusal(a.commitOffsets({ groupId: 'g', topic: 't', memberId: old.memberId, generationId: old.generationId, offsets: [{ partition: 0, offset: 3 }] }));
      expect(late).toMatchObject({ code: 'ILLEGAL_GENERATION' });
      expect((await b.committedOffsets('g')).map((o) => o.offset)).toEqual([1]);
      // a finds its lease lost at its next renewal (a third of the lease) and sends the group's requests to b.
      await eventually(async () => (await asyncCodeOf(a.joinGroup({ groupId: 'g', topics: ['t'] }))) === 'NOT_COORDINATOR', 5000);
      await b.commitOffsets({ groupId: 'g', topic: 't', memberId: taken.memberId, generationId: taken.generationId, offsets: [{ partition: 0, offset: 3 }] });
      expect((await a.committedOffsets('g')).map((o) => o.offset)).toEqual([3]);
    } finally {
      await db.end();
      await a.close();
      await b.close();
      await c.dispose();
    }
  });

  it('clients follow NOT_COORDINATOR: a consumer or share group member given only the other broker\'s URL consumes through the coordinator (HTTP and binary)', async () => {
    const served = await servedBrokers(await testCluster(s3), 2);
    const [a] = served.brokers as [Broker];
    const { urls } = served;
    try {
      await a.createTopic({ topic: 't', partitions: 2 });
      await a.produce({ topic: 't', records: Array.from({ length: 40 }, (_, i) => rec(`v${i}`, i % 2)) });
      for (const [groupId, binary] of [['http-group', false], ['binary-group', true]] as const) {
        await a.subscribe({ groupId, topic: 't', startPolicy: 'earliest' }); // a coordinates the group
        const onelog = new Onelog({ url: urls[1]!, binary });
        const consumer = onelog.consumer({ groupId, startPolicy: 'earliest', maxWaitMs: 20, sessionTimeoutMs: 5000 });
        const seen: string[] = [];
        consumer.subscribe({ topic: 't' });
        await consumer.run({
          eachMessage: ({ message }) => {
            seen.push(message.value!.toString());
            if (seen.length === 40) void consumer.stop();
          },
        });
        onelog.close();
        expect(seen.sort()).toEqual(Array.from({ length: 40 }, (_, i) => `v${i}`).sort());
        expect((await a.committedOffsets(groupId)).map((o) => [o.partition, o.offset])).toEqual([[0, 20], [1, 20]]);
        // b never coordinated it: the CLI's client, pointed at b, is sent to a for the group's description.
        const description = await new HttpApi(urls[1]!).describeGroup(groupId);
        expect(description.subscriptions[0]!.partitions.map((p) => p.committedOffset)).toEqual([20, 20]);
      }
      // A share group's members too, over HTTP and over the binary data path: b sends their acquisitions to a.
      for (const [groupId, binary] of [['http-share', false], ['binary-share', true]] as const) {
        await a.subscribe({ groupId, topic: 't', type: 'share', startPolicy: 'earliest' });
        const onelog = new Onelog({ url: urls[1]!, binary });
        const members = [0, 1].map((i) => onelog.shareConsumer({ groupId, clientId: `m${i}`, maxRecords: 7, maxWaitMs: 20 }));
        const seen: string[] = [];
        await Promise.all(members.map((m) => {
          m.subscribe({ topic: 't' });
          return m.run({
            eachMessage: async ({ message }) => {
              seen.push(message.value!.toString());
              if (seen.length === 40) await Promise.all(members.map((x) => x.stop()));
            },
          });
        }));
        onelog.close();
        expect(seen.sort()).toEqual(Array.from({ length: 40 }, (_, i) => `v${i}`).sort());
        expect((await a.committedOffsets(groupId)).map((o) => [o.partition, o.offset])).toEqual([[0, 20], [1, 20]]);
      }
    } finally {
      await served.close();
    }
  });

  it('counts the deliveries of a record whose consumer dies with it in the cluster\'s offset store: a new coordinator goes on counting', async () => {
    const c = await testCluster(s3);
    let a: Broker | undefined = await Broker.open(c.options(1));
    const b = await Broker.open(c.options(2));
    try {
      await a.createTopic({ topic: 't', partitions: 1 });
      await a.produce({ topic: 't', records: [0, 1, 2].map((i) => rec(`r${i}`, 0)) });
      await a.subscribe({ groupId: 'g', topic: 't', startPolicy: 'earliest', retry: { delaysMs: [1000], maxAttempts: 3 } });
      /** A member of `broker` takes what it is handed of partition 0 and dies (its session of 1 s times out). */
      const holdAndDie = async (broker: Broker): Promise<number[]> => {
        let m = await broker.joinGroup({ groupId: 'g', topics: ['t'], sessionTimeoutMs: 1000 });
        // Granted once the dead member before it expired; the answer that grants it says where it starts.
        let from = m.assignment.find((p) => p.topic === 't')?.offset;
        await eventually(async () => {
          if (from !== undefined) return true;
          m = await broker.heartbeat({ groupId: 'g', memberId: m.memberId, generationId: m.generationId, owned: m.assignment });
          from = m.assignment.find((p) => p.topic === 't')?.offset;
          return from !== undefined;
        }, 10_000);
        const fetched = await broker.fetch({ topic: 't', groupId: 'g', memberId: m.memberId, generationId: m.generationId, partitions: [{ partition: 0, offset: from! }] });
        await eventually(async () => (await broker.describeGroup('g')).members.length === 0, 10_000);
        return fetched.partitions[0]!.records.map((r) => r.offset);
      };
      expect(await holdAndDie(a)).toEqual([0, 1, 2]);
      expect(await holdAndDie(a)).toEqual([0]);
      await a.close(); // b takes the group over, with what the offset store holds
      a = undefined;
      expect(await holdAndDie(b)).toEqual([0]); // the third delivery: spent
      expect(await b.listDeadLetters({ groupId: 'g', topic: 't' })).toMatchObject({ depth: 1, records: [{ original: { offset: 0 }, attempts: 3 }] });
      expect((await b.committedOffsets('g')).find((o) => o.topic === 't')).toMatchObject({ partition: 0, offset: 1 });
    } finally {
      await a?.close();
      await b.close();
      await c.dispose();
    }
  });

  it('serves a share group on its coordinator, its in-flight state in the cluster\'s offset store: a new coordinator goes on with every count', async () => {
    const c = await testCluster(s3);
    let a: Broker | undefined = await Broker.open(c.options(1));
    const b = await Broker.open(c.options(2));
    try {
      await a.createTopic({ topic: 't', partitions: 1 });
      await a.produce({ topic: 't', records: [0, 1, 2, 3].map((i) => rec(`r${i}`, 0)) });
      await a.subscribe({ groupId: 's', topic: 't', type: 'share', startPolicy: 'earliest', lockMs: 60_000, maxDeliveries: 2 });
      const got = await a.shareFetch({ groupId: 's', topic: 't', memberId: 'm1', maxRecords: 3 });
      expect(got.records.map((r) => [r.offset, r.deliveryCount])).toEqual([[0, 1], [1, 1], [2, 1]]);
      await a.shareAcknowledge({ groupId: 's', topic: 't', memberId: 'm1', acks: [{ partition: 0, offset: 1, type: 'accept' }] });
      expect(await refusal(b.shareFetch({ groupId: 's', topic: 't', memberId: 'm2' }))).toMatchObject({ code: 'NOT_COORDINATOR' });
      await a.close(); // b takes the group over: what m1 held is available again, its count kept
      a = undefined;
      const again = await b.shareFetch({ groupId: 's', topic: 't', memberId: 'm2' });
      expect(again.records.map((r) => [r.offset, r.deliveryCount])).toEqual([[0, 2], [2, 2], [3, 1]]);
      await b.shareAcknowledge({ groupId: 's', topic: 't', memberId: 'm2', acks: [0, 2, 3].map((offset) => ({ partition: 0, offset, type: 'accept' as const })) });
      expect((await b.shareFetch({ groupId: 's', topic: 't', memberId: 'm2' })).records).toEqual([]);
      expect((await b.committedOffsets('s')).find((o) => o.topic === 't')).toMatchObject({ offset: 4 });
    } finally {
      await a?.close();
      await b.close();
      await c.dispose();
    }
  });
});

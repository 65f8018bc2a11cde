/**
 * Issue 38, point 5: a group's reads spread over the brokers, on three real `onelog serve` processes of one cluster
 * (PostgreSQL, Redis, s3rver, loopback). A six-partition topic is led 2/2/2; a group of three members, each given
 * another broker's URL (two on the binary data path, one on HTTP/JSON), consumes it: each member's fetches go to its
 * coordinator only until it names the partition's leader (`readFrom`), then to the leaders. Each broker's
 * `onelog_fetch_requests_total` shows member fetches served without the group (`served="any"`) at more than one
 * broker; every acknowledged record is consumed, the commits land at the high watermarks, and after a member leaves
 * the others take its partitions and consume what is produced next. Before it, the broker side on two in-process
 * brokers: what the coordinator names, what another broker serves without the group, and what stays at the coordinator.
 */
import { describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { Consumer, HttpApi, Onelog } from '../../src/client/index.js';
import type { ClusterDescription } from '../../src/protocol/cluster.js';
import { waitFor } from '../helpers/children.js';
import { startServer } from '../helpers/processes.js';
import type { ServerProcess } from '../helpers/processes.js';
import { s3ForFile } from '../helpers/s3-suite.js';
import { serveCluster, testCluster } from '../helpers/cluster.js';
import { tmpDir } from '../helpers/tmp.js';

/** Partition and group leases, ms (`serve --lease-ms`): a balance pass runs every third of it. */
const LEASE_MS = 3000;
const PARTITIONS = 6;
/** Records produced to each partition, per round. */
const PER_PARTITION = 40;

const s3 = s3ForFile();

/** A broker's member fetches, as its /metrics counts them: served by the coordinator, and by the broker asked. */
async function memberFetches(url: string): Promise<{ coordinator: number; any: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const count = (served: string) => Number(new RegExp(`^onelog_fetch_requests_total\\{member="true",served="${served}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
  return { coordinator: count('coordinator'), any: count('any') };
}

const rec = (value: string, partition: number) => ({ key: null, value: Buffer.from(value), partition });
const refusal = (p: Promise<unknown>) => p.then(() => null, (err: unknown) => err);

describe('a member\'s reads at the partition\'s leader: the broker side', () => {
  it('the coordinator names the leader; another broker serves the member\'s readAnywhere fetch without the group; the rest stays at the coordinator', async () => {
    const c = await testCluster(s3(), 'spread_reads_side');
    const a = await Broker.open(c.options(1));
    const b = await Broker.open(c.options(2));
    try {
      await a.advertise({ url: 'http://127.0.0.1:7181' });
      await b.advertise({ url: 'http://127.0.0.1:7182' });
      await a.createTopic({ topic: 't', partitions: 2 });
      // a leads partition 0, b partition 1 (each takes the lease of the partition it is first to produce to).
      await a.produce({ topic: 't', records: [rec('a0', 0), rec('a1', 0)] });
      await b.produce({ topic: 't', records: [rec('b0', 1), rec('b1', 1), rec('b2', 1)] });
      await a.subscribe({ groupId: 'g', topic: 't', startPolicy: 'earliest', onOutOfRange: 'pause' });
      const m = await a.joinGroup({ groupId: 'g', topics: ['t'] });
      const member = { topic: 't', groupId: 'g', memberId: m.memberId, generationId: m.generationId };
      const first = await a.fetch({ ...member, partitions: [{ partition: 0, offset: 0 }, { partition: 1, offset: 0 }] });
      expect(first.partitions.map((p) => [p.partition, p.records.length, p.readFrom])).toEqual([
        [0, 2, undefined], // led by the coordinator: read there
        [1, 3, { brokerId: 2, url: 'http://127.0.0.1:7182' }],
      ]);
      // At b, as Kafka's fetch: no membership checked (a member id b never heard of is served), nothing of the group answered.
      const atLeader = await b.fetch({ ...member, memberId: 'someone-else', readAnywhere: true, partitions: [{ partition: 1, offset: 1 }] });
      expect(atLeader.partitions.map((p) => [p.partition, p.records.map((r) => r.value!.toString())])).toEqual([[1, ['b1', 'b2']]]);
      expect(atLeader.generationId).toBeUndefined();
      // Without readAnywhere a member's fetch is still the coordinator's.
      expect(await refusal(b.fetch({ ...member, partitions: [{ partition: 1, offset: 0 }] }))).toMatchObject({ code: 'NOT_COORDINATOR', context: { coordinatorBrokerId: 1 } });
      // The coordinator serves a readAnywhere fetch as any member's: fenced.
      expect(await refusal(a.fetch({ ...member, memberId: 'someone-else', readAnywhere: true, partitions: [{ partition: 1, offset: 0 }] })))
        .toMatchObject({ code: 'UNKNOWN_MEMBER_ID' });

      // Out of range at b: answered as the hard error naming the group, nothing applied; the coordinator applies the policy.
      await a.commitOffsets({ ...member, offsets: [{ partition: 1, offset: 0 }] });
      await b.deleteRecords({ topic: 't', partition: 1, beforeOffset: 2 });
      const fallen = await b.fetch({ ...member, readAnywhere: true, partitions: [{ partition: 1, offset: 0 }] });
      expect(fallen.partitions[0]!.error).toMatchObject({ code: 'OFFSET_OUT_OF_RANGE', groupId: 'g', committedOffset: 0, logStartOffset: 2, recordsLost: 2 });
      const paused = () => a.describeGroup('g').then((d) => d.subscriptions[0]!.partitions.find((p) => p.partition === 1)!.paused);
      expect(await paused()).toBeNull();
      const decided = await a.fetch({ ...member, partitions: [{ partition: 1, offset: 0 }] });
      expect(decided.partitions[0]!.error?.code).toBe('OFFSET_OUT_OF_RANGE');
      expect(decided.partitions[0]!.readFrom).toBeUndefined();
      expect(await paused()).toMatchObject({ code: 'OFFSET_OUT_OF_RANGE' });
      expect((await a.committedOffsets('g')).find((o) => o.partition === 1)!.offset).toBe(0); // never a silent jump

      // A subscription counting deliveries keeps its members' reads at the coordinator: none named, b refuses.
      await a.subscribe({ groupId: 'h', topic: 't', startPolicy: 'earliest', maxDeliveries: 3 });
      const h = await a.joinGroup({ groupId: 'h', topics: ['t'] });
      const counted = { topic: 't', groupId: 'h', memberId: h.memberId, generationId: h.generationId };
      const fromCoordinator = await a.fetch({ ...counted, partitions: [{ partition: 0, offset: 0 }, { partition: 1, offset: 2 }] });
      expect(fromCoordinator.partitions.map((p) => p.readFrom)).toEqual([undefined, undefined]);
      expect(await refusal(b.fetch({ ...counted, readAnywhere: true, partitions: [{ partition: 1, offset: 2 }] })))
        .toMatchObject({ code: 'NOT_COORDINATOR', context: { coordinatorBrokerId: 1 } });
    } finally {
      await a.close();
      await b.close();
      await c.dispose();
    }
  });
});

describe('a group\'s reads spread over the brokers', () => {
  it('members fetch from the partitions\' leaders; every record is consumed, commits land, a member leaving still rebalances', async () => {
    const { schema, redis, serveArgs } = await serveCluster(s3(), 'spread_reads');
    const servers: ServerProcess[] = [];
    const consumers: Consumer[] = [];
    const apis: HttpApi[] = [];
    const start = async (id: number) => {
      const server = await startServer(tmpDir(), {
        args: [...serveArgs(id), '--lease-ms', String(LEASE_MS)],
      });
      servers.push(server);
      return server.url;
    };
    const led = (cluster: ClusterDescription) => cluster.brokers.map((b) => [b.brokerId, b.partitionsLed]);
    try {
      const urls = [await start(1), await start(2), await start(3)];
      const admin = new HttpApi(urls.join(','));
      apis.push(admin);
      await admin.createTopic({ topic: 't', partitions: PARTITIONS });
      const acked = new Map<string, string>(); // `partition/offset` -> value
      const produce = async (round: number) => {
        for (let partition = 0; partition < PARTITIONS; partition++) {
          const records = Array.from({ length: PER_PARTITION }, (_, i) => ({ key: null, value: Buffer.from(`r${round}-p${partition}-${i}`), partition }));
          const { offsets } = await admin.produce({ topic: 't', records });
          offsets.forEach((o, i) => acked.set(`${o.partition}/${o.offset}`, records[i]!.value.toString()));
        }
      };
      // Broker 1 takes every partition at the first produce; the balance spreads them 2/2/2.
      await produce(0);
      await waitFor('leadership spread 2/2/2', async () => led(await admin.describeCluster()).join() === [[1, 2], [2, 2], [3, 2]].join(), 30_000, 100);

      const consumed = new Map<string, string>();
      const byMember = new Map<number, number>();
      const member = (i: number) => {
        const onelog = new Onelog({ url: urls[i]!, binary: i !== 2 });
        apis.push(onelog.api as HttpApi);
        const c = onelog.consumer({ groupId: 'g', startPolicy: 'earliest', sessionTimeoutMs: 6000, maxWaitMs: 200, maxRecords: 50 });
        c.subscribe({ topic: 't' });
        consumers.push(c);
        void c.run({
          eachMessage: ({ partition, message }) => {
            consumed.set(`${partition}/${message.offset}`, message.value!.toString());
            byMember.set(i, (byMember.get(i) ?? 0) + 1);
          },
        });
        return c;
      };
      const before = await Promise.all(urls.map(memberFetches));
      const members = [member(0), member(1), member(2)];
      await waitFor('three members sharing the six partitions', () => members.every((m) => m.assignment.length === 2), 30_000, 50);
      await produce(1);
      const allConsumed = () => [...acked].every(([k, v]) => consumed.get(k) === v);
      await waitFor('every acknowledged record consumed', allConsumed, 60_000, 50);
      await produce(2);
      await waitFor('every acknowledged record of the next round consumed', allConsumed, 60_000, 50);

      const after = await Promise.all(urls.map(memberFetches));
      const spread = after.map((a, i) => a.any - before[i]!.any);
      const atCoordinator = after.map((a, i) => a.coordinator - before[i]!.coordinator);
      const total = spread.reduce((a, b) => a + b, 0) + atCoordinator.reduce((a, b) => a + b, 0);
      console.log(`[spread-reads] member fetches per broker (1, 2, 3): served without the group ${spread.join(' / ')}, ` +
        `at the coordinator ${atCoordinator.join(' / ')}; ${Math.round((100 * spread.reduce((a, b) => a + b, 0)) / total)}% spread; ` +
        `records per member ${[0, 1, 2].map((i) => byMember.get(i) ?? 0).join(' / ')}`);
      expect(spread.filter((n) => n > 0).length).toBeGreaterThan(1);
      // Only the coordinator serves member fetches as the group's: one broker.
      expect(atCoordinator.filter((n) => n > 0)).toHaveLength(1);

      // The commits land: each partition's committed offset reaches its high watermark.
      const committedAtEnd = async () => {
        const partitions = (await admin.describeGroup('g')).subscriptions.find((s) => s.topic === 't')?.partitions ?? [];
        return partitions.length === PARTITIONS && partitions.every((p) => p.committedOffset === p.highWatermark);
      };
      await waitFor('commits at the high watermarks', committedAtEnd, 30_000, 100);

      // A member leaves: the other two take its partitions, and consume what is produced next.
      await members[2]!.stop();
      await waitFor('two members sharing the six partitions', () =>
        members[0]!.assignment.length + members[1]!.assignment.length === PARTITIONS && members[0]!.assignment.length === 3, 30_000, 50);
      const beforeLeave = await Promise.all(urls.map(memberFetches));
      await produce(3);
      await waitFor('every acknowledged record consumed after the rebalance', allConsumed, 60_000, 50);
      await waitFor('commits at the high watermarks after the rebalance', committedAtEnd, 30_000, 100);
      const afterLeave = await Promise.all(urls.map(memberFetches));
      expect(afterLeave.reduce((n, a, i) => n + a.any - beforeLeave[i]!.any, 0)).toBeGreaterThan(0);
      expect(consumed.size).toBe(acked.size);
    } finally {
      await Promise.all(consumers.map((c) => c.stop()));
      for (const api of apis) api.close();
      for (const server of servers) await server.stop();
      await schema.drop();
      await redis.drop();
    }
  });
});

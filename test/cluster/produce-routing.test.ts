/**
 * Produce routing in cluster mode: a broker that does not lead a partition refuses its records with
 * NOT_LEADER_OR_FOLLOWER naming the leader's URL, and clients (HTTP and binary) send the write there; producer ids
 * issued by one broker are known to the others.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { BinaryApi } from '../../src/client/binary-api.js';
import { HttpApi } from '../../src/client/http-api.js';
import { servedBrokers, testCluster } from '../helpers/cluster.js';
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

describe('produce routing', () => {
  it('sends a produce to the partition\'s leader: refused by the other broker naming its URL, then stored once there', async () => {
    const served = await servedBrokers(await testCluster(s3), 2);
    const [a, b] = served.brokers as [Broker, Broker];
    const { urls } = served;
    try {
      await a.createTopic({ topic: 't', partitions: 2 });
      await a.produce({ topic: 't', records: [rec('a0', 0)] }); // a leads partition 0
      await b.produce({ topic: 't', records: [rec('b0', 1)] }); // b leads partition 1
      expect(await b.produce({ topic: 't', records: [rec('x', 0)] }).catch((err: unknown) => err)).toMatchObject({
        code: 'NOT_LEADER_OR_FOLLOWER', context: { leaderBrokerId: 1, leaderUrl: urls[0] },
      });
      // Clients pointed at b alone write partition 0 through a, and partition 1 (b's) stays on b.
      for (const api of [new HttpApi(urls[1]!), new BinaryApi(urls[1]!)]) {
        const at = (await a.describeTopic('t')).partitions.map((p) => p.highWatermark);
        expect((await api.produce({ topic: 't', records: [rec('p0', 0), rec('p0', 0)] })).offsets).toEqual([{ partition: 0, offset: at[0] }, { partition: 0, offset: at[0]! + 1 }]);
        expect((await api.produce({ topic: 't', records: [rec('p1', 1)] })).offsets).toEqual([{ partition: 1, offset: at[1] }]);
        api.close();
      }
      const read = await b.fetch({ topic: 't', partitions: [{ partition: 0, offset: 0 }, { partition: 1, offset: 0 }] });
      expect(read.partitions.map((p) => p.records.map((r) => r.value!.toString()))).toEqual([['a0', 'p0', 'p0', 'p0', 'p0'], ['b0', 'p1', 'p1']]);
    } finally {
      await served.close();
    }
  });

  it('completes a produce spanning partitions led by two brokers: each record stored once, at its leader', async () => {
    const served = await servedBrokers(await testCluster(s3), 2);
    const [a, b] = served.brokers as [Broker, Broker];
    try {
      await a.createTopic({ topic: 't', partitions: 2 });
      await a.produce({ topic: 't', records: [rec('a0', 0)] }); // a leads partition 0
      await b.produce({ topic: 't', records: [rec('b0', 1)] }); // b leads partition 1
      // On its own, a stores partition 0's records and refuses partition 1's, saying where each record went.
      const partial = await a.produce({ topic: 't', records: [rec('r0', 0), rec('r1', 1)] }).catch((err: unknown) => err);
      expect(partial).toMatchObject({
        code: 'NOT_LEADER_OR_FOLLOWER', context: { leaderUrl: served.urls[1], records: [{ partition: 0, offset: 1 }, { partition: 1 }] },
      });
      const sent: string[][] = [['r0'], ['b0']]; // what each partition holds after a0, in order
      for (const api of [new HttpApi(served.urls[0]!), new BinaryApi(served.urls[0]!)]) {
        const values = ['x0', 'x1', 'x2', 'x3'].map((v) => `${v}-${api.constructor.name}`);
        const result = await api.produce({ topic: 't', records: values.map((v, i) => rec(v, i % 2)) });
        expect(result.offsets.map((o) => o.partition)).toEqual([0, 1, 0, 1]);
        const read = await a.fetch({ topic: 't', partitions: [{ partition: 0, offset: 0 }, { partition: 1, offset: 0 }] });
        // Each record once, at the offset the client was told.
        result.offsets.forEach(({ partition, offset }, i) => {
          expect(read.partitions[partition]!.records.find((r) => r.offset === offset)?.value?.toString()).toBe(values[i]);
        });
        sent[0]!.push(values[0]!, values[2]!);
        sent[1]!.push(values[1]!, values[3]!);
        api.close();
      }
      const read = await b.fetch({ topic: 't', partitions: [{ partition: 0, offset: 0 }, { partition: 1, offset: 0 }] });
      expect(read.partitions.map((p) => p.records.map((r) => r.value!.toString()))).toEqual([['a0', ...sent[0]!], sent[1]]);
    } finally {
      await served.close();
    }
  });

  it('a leader that cannot be reached: the client waits out its lease, with backoff, then the other broker takes the partition', async () => {
    const served = await servedBrokers(await testCluster(s3), 2, { leaseMs: 1500 });
    const [a, b] = served.brokers as [Broker, Broker];
    try {
      await a.createTopic({ topic: 't', partitions: 1 });
      await a.produce({ topic: 't', records: [rec('a0', 0)] }); // a leads partition 0 for 1.5 s
      await served.servers[0]!.close(); // a's address refuses connections; its lease runs on until it expires
      const api = new HttpApi(served.urls[1]!);
      expect((await api.produce({ topic: 't', records: [rec('b1', 0)] })).offsets).toEqual([{ partition: 0, offset: 1 }]);
      const read = await b.fetch({ topic: 't', partitions: [{ partition: 0, offset: 0 }] });
      expect(read.partitions[0]!.records.map((r) => r.value!.toString())).toEqual(['a0', 'b1']);
    } finally {
      await served.close();
    }
  });

  it('knows producer ids another broker issued after it started', async () => {
    const c = await testCluster(s3);
    const a = await Broker.open(c.options(1));
    const b = await Broker.open(c.options(2));
    try {
      await a.createTopic({ topic: 't', partitions: 1 });
      const producer = await a.initProducerId(); // issued after b started
      const send = () => b.produce({ topic: 't', records: [rec('once', 0)], idempotence: { ...producer, baseSequences: { 0: 0 } } });
      expect((await send()).offsets).toEqual([{ partition: 0, offset: 0 }]);
      expect((await send()).offsets).toEqual([{ partition: 0, offset: 0 }]); // a retry: stored once
      expect((await b.describeTopic('t')).partitions[0]!.highWatermark).toBe(1);
    } finally {
      await a.close();
      await b.close();
      await c.dispose();
    }
  });
});

/**
 * `GET /cluster` and `GET /overview` in cluster mode (docs/cluster.md "Seeing the cluster"): two brokers on PostgreSQL,
 * Redis and s3rver, each leading a partition, one coordinating a group; either broker describes both, with their
 * leases, and marks itself; the overview counts every broker's records; an event stream of one broker hears records
 * another broker appended.
 */
import { describe, expect, it, vi } from 'vitest';
import type { Broker } from '../../src/broker/broker.js';
import { HttpApi } from '../../src/client/http-api.js';
import { servedBrokers, testCluster } from '../helpers/cluster.js';
import { changesOf, openEvents } from '../helpers/event-stream.js';
import { s3ForFile } from '../helpers/s3-suite.js';

const s3 = s3ForFile();

describe('cluster describe', () => {
  it('lists both brokers with what each leads and coordinates, and the leases they hold', async () => {
    const served = await servedBrokers(await testCluster(s3()), 2);
    const [a, b] = served.brokers as [Broker, Broker];
    try {
      await a.createTopic({ topic: 't', partitions: 2 });
      const records = (partition: number, ...values: string[]) => ({ topic: 't', records: values.map((v) => ({ key: null, value: Buffer.from(v), partition })) });
      await a.produce(records(0, 'a0', 'a1')); // a leads partition 0
      await b.produce(records(1, 'b0')); // b leads partition 1
      await b.subscribe({ groupId: 'g', topic: 't', startPolicy: 'earliest' }); // b coordinates g
      for (const [i, url] of served.urls.entries()) {
        const cluster = await new HttpApi(url).describeCluster();
        expect(cluster.mode).toBe('cluster');
        expect(cluster.brokers.map(({ heartbeatAgeMs: _age, ...rest }) => rest)).toEqual([
          { brokerId: 1, url: served.urls[0], kafkaAddress: null, partitionsLed: 1, groupsCoordinated: 0, self: i === 0, draining: false },
          { brokerId: 2, url: served.urls[1], kafkaAddress: null, partitionsLed: 1, groupsCoordinated: 1, self: i === 1, draining: false },
        ]);
        for (const broker of cluster.brokers) expect(broker.heartbeatAgeMs).toBeGreaterThanOrEqual(0);
        for (const broker of cluster.brokers) expect(broker.heartbeatAgeMs).toBeLessThan(10_000);
        const kinds = cluster.leases.map((l) => l.kind);
        expect(kinds).toEqual([...kinds].sort((x, y) => ['job', 'group', 'partition'].indexOf(x) - ['job', 'group', 'partition'].indexOf(y)));
        expect(cluster.leases.filter((l) => l.kind !== 'job').map(({ kind, name, holderBrokerId }) => [kind, name, holderBrokerId])).toEqual([
          ['group', 'g', 2], ['partition', 't/0', 1], ['partition', 't/1', 2],
        ]);
        for (const lease of cluster.leases) expect(lease.epoch).toBeGreaterThanOrEqual(1);
        expect(cluster.leasesOmitted).toBe(0);
      }
      const overview = await new HttpApi(served.urls[0]!).overview();
      expect(overview.topics).toEqual([expect.objectContaining({ topic: 't', partitions: 2, records: 3 })]);
      expect(overview.topics[0]!.sizeBytes).toBeGreaterThan(0);
      expect(overview.groups.map((g) => [g.groupId, g.assessed])).toEqual([['g', true]]);

      // Records only broker 2 appends are told on broker 1's stream (the sequencer announces every commit).
      await a.createTopic({ topic: 'u', partitions: 1 });
      const events = await openEvents(served.urls[0]!);
      await b.produce({ topic: 'u', records: [{ key: null, value: Buffer.from('b'), partition: 0 }] });
      await vi.waitFor(() => expect(changesOf(events)).toContainEqual({ type: 'records', topic: 'u' }), { timeout: 5000, interval: 20 });
      events.close();
    } finally {
      await served.close();
    }
  });
});

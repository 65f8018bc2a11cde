/**
 * Issue 38, point 5: capacity follows the brokers, on three real `onelog serve` processes of one cluster (PostgreSQL,
 * Redis, s3rver, loopback). Broker 1 leads all six partitions of a topic; brokers 2 and 3 join and leadership spreads
 * to 2/2/2 while a producer keeps writing every partition; `onelog cluster drain 2` moves broker 2's partitions and
 * its group to the others and produces go on; every acknowledged record is then read back, at brokers that do not
 * lead the partition too (the drained one leads nothing), at the offset it was acknowledged at.
 */
import { describe, expect, it } from 'vitest';
import { HttpApi } from '../../src/client/http-api.js';
import type { ClusterDescription } from '../../src/protocol/cluster.js';
import { waitFor } from '../helpers/children.js';
import { runCli, startServer } from '../helpers/processes.js';
import type { ServerProcess } from '../helpers/processes.js';
import { s3ForFile } from '../helpers/s3-suite.js';
import { serveCluster } from '../helpers/cluster.js';
import { tmpDir } from '../helpers/tmp.js';

/** Partition and group leases, ms (`serve --lease-ms`): a balance pass runs every third of it. */
const LEASE_MS = 3000;
const PARTITIONS = 6;

const s3 = s3ForFile();

describe('capacity follows the brokers', () => {
  it('spreads leadership to joining brokers, drains one, and loses no acknowledged record', async () => {
    const { schema, redis, serveArgs } = await serveCluster(s3(), 'capacity');
    const servers: ServerProcess[] = [];
    const start = async (id: number) => {
      const server = await startServer(tmpDir(), {
        args: [...serveArgs(id), '--lease-ms', String(LEASE_MS)],
      });
      servers.push(server);
      return server.url;
    };
    const led = (cluster: ClusterDescription) => cluster.brokers.map((b) => [b.brokerId, b.partitionsLed]);
    let stop = false;
    let producing: Promise<void> = Promise.resolve();
    try {
      const url1 = await start(1);
      const admin = new HttpApi(url1);
      await admin.createTopic({ topic: 't', partitions: PARTITIONS });
      const acked: Array<{ partition: number; offset: number; value: string }> = [];
      const failures: unknown[] = [];
      // One record to each partition in turn, through broker 1 at first: the client follows each leader named.
      const producer = new HttpApi(url1, { requestTimeoutMs: 20_000 });
      producing = (async () => {
        for (let round = 0; !stop; round++) {
          for (let partition = 0; partition < PARTITIONS; partition++) {
            const value = `r${round}-p${partition}`;
            try {
              const { offsets } = await producer.produce({ topic: 't', records: [{ key: null, value: Buffer.from(value), partition }] });
              acked.push({ partition, offset: offsets[0]!.offset, value });
            } catch (err) {
              failures.push(err);
            }
          }
        }
      })();
      await waitFor('broker 1 leading every partition', async () => led(await admin.describeCluster()).join() === [[1, PARTITIONS]].join());

      const url2 = await start(2);
      const url3 = await start(3);
      const joined = performance.now();
      const ackedAtJoin = acked.length;
      const spread = await waitFor('leadership spread 2/2/2', async () => {
        const cluster = await admin.describeCluster();
        return led(cluster).join() === [[1, 2], [2, 2], [3, 2]].join() && cluster;
      }, 30_000, 100);
      const spreadMs = Math.round(performance.now() - joined);
      console.log(`[capacity] leadership spread to 2/2/2 in ${spreadMs} ms after the third broker listened`);
      expect(spread.brokers.every((b) => !b.draining)).toBe(true);
      await waitFor('produces going on after the spread', () => acked.length >= ackedAtJoin + 5 * PARTITIONS, 20_000);

      // Broker 2 coordinates a group too: the drain gives it up, and the next request is sent to another broker.
      const at2 = new HttpApi(url2);
      await at2.subscribe({ groupId: 'g', topic: 't', startPolicy: 'earliest' });
      const drained = await runCli(url1, ['cluster', 'drain', '2', '--json', '--timeout-ms', '30000']);
      expect(drained.stderr).toBe('');
      expect(drained.code).toBe(0);
      const report = JSON.parse(drained.stdout) as { brokerId: number; elapsedMs: number; moved: Array<{ kind: string; name: string; fromBrokerId: number; toBrokerId: number | null }> };
      console.log(`[capacity] broker 2 drained in ${report.elapsedMs} ms: ${JSON.stringify(report.moved)}`);
      expect(report.brokerId).toBe(2);
      const partitionsMoved = report.moved.filter((m) => m.kind === 'partition');
      expect(partitionsMoved).toHaveLength(2);
      for (const m of partitionsMoved) expect([1, 3]).toContain(m.toBrokerId);
      expect(report.moved).toContainEqual({ kind: 'group', name: 'g', fromBrokerId: 2, toBrokerId: null });
      const after = await admin.describeCluster();
      expect(after.brokers.map((b) => [b.brokerId, b.partitionsLed, b.groupsCoordinated, b.draining])).toEqual([[1, 3, 0, false], [2, 0, 0, true], [3, 3, 0, false]]);
      // A group request at the drained broker is sent on to a live one, which takes the group.
      await at2.subscribe({ groupId: 'g', topic: 't', startPolicy: 'earliest' });
      const holder = (await admin.describeCluster()).leases.find((l) => l.kind === 'group' && l.name === 'g')?.holderBrokerId;
      expect([1, 3]).toContain(holder);
      const ackedAtDrain = acked.length;
      await waitFor('produces going on after the drain', () => acked.length >= ackedAtDrain + 5 * PARTITIONS, 20_000);
      expect((await admin.describeCluster()).brokers.find((b) => b.brokerId === 2)!.partitionsLed).toBe(0); // it took none back

      stop = true;
      await producing;
      expect(failures).toEqual([]);
      // Every acknowledged record is read at its offset, on each broker: the drained one leads nothing and serves them all.
      for (const url of [url1, url2, url3]) {
        const reader = new HttpApi(url);
        for (let partition = 0; partition < PARTITIONS; partition++) {
          const want = acked.filter((a) => a.partition === partition).sort((a, b) => a.offset - b.offset);
          const got = new Map<number, string>();
          for (let offset = 0; offset < want.at(-1)!.offset + 1;) {
            const [p] = (await reader.fetch({ topic: 't', partitions: [{ partition, offset }], maxRecords: 500 })).partitions;
            for (const r of p!.records) got.set(r.offset, r.value!.toString());
            if (p!.nextOffset === offset) break;
            offset = p!.nextOffset;
          }
          expect(want.map((a) => got.get(a.offset))).toEqual(want.map((a) => a.value));
        }
        reader.close();
      }
      admin.close();
      at2.close();
      producer.close();
    } finally {
      stop = true;
      await producing;
      for (const server of servers) await server.stop();
      await schema.drop();
      await redis.drop();
    }
  });
});

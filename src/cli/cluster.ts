/**
 * `onelog cluster describe`: the brokers of the cluster (id, URLs, heartbeat age, partitions led, groups coordinated,
 * draining, which one answered) and the leases held now (docs/cluster.md); on the embedded default, the one broker.
 * `onelog cluster drain BROKER`: marks a broker draining, waits until it holds no lease, and prints where each went.
 */
import type { Command } from 'commander';
import { setTimeout as sleep } from 'node:timers/promises';
import type { HttpApi } from '../client/http-api.js';
import type { ClusterDescription, ClusterLease } from '../protocol/cluster.js';
import { OnelogError } from '../protocol/errors.js';
import { action, apiFor, parseInteger, printTable } from './common.js';

/** How often `cluster drain` reads the cluster while it waits, ms. */
const DRAIN_POLL_MS = 200;

/** A lease a drained broker held, and who holds it now (null: nobody yet; the next request or pass takes it). */
interface DrainedLease {
  kind: ClusterLease['kind'];
  name: string;
  fromBrokerId: number;
  toBrokerId: number | null;
}

export function registerCluster(program: Command): void {
  const cluster = program.command('cluster').description('the brokers of the cluster and what each leads');
  cluster
    .command('describe')
    .description('the live brokers (id, URL, Kafka address, heartbeat age, partitions led, groups coordinated, draining; * marks the one that answered) and the leases held now: jobs, groups, partitions (holder, epoch, expiry)')
    .option('--json', 'print JSON')
    .action(action(async (o: { json?: boolean }, cmd: Command) => {
      const cluster = await apiFor(cmd).describeCluster();
      if (o.json) {
        console.log(JSON.stringify(cluster));
        return;
      }
      console.log(cluster.mode === 'embedded' ? 'embedded: one broker, leading every partition and coordinating every group'
        : `cluster of ${cluster.brokers.length} brokers`);
      printTable(['BROKER', 'URL', 'KAFKA', 'HEARTBEAT AGE MS', 'PARTITIONS LED', 'GROUPS COORDINATED', 'DRAINING'], cluster.brokers.map((b) => [
        `${b.brokerId ?? '-'}${b.self ? ' *' : ''}`, b.url, b.kafkaAddress, b.heartbeatAgeMs, b.partitionsLed, b.groupsCoordinated, b.draining ? 'yes' : 'no',
      ]));
      if (cluster.mode === 'embedded') return;
      console.log('');
      printTable(['LEASE', 'OF', 'HOLDER', 'EPOCH', 'EXPIRES'], cluster.leases.map((l) => [l.kind, l.name, l.holderBrokerId, l.epoch, new Date(l.expiresAt).toISOString()]));
      if (cluster.leasesOmitted > 0) console.log(`(${cluster.leasesOmitted} more leases not listed; --json has the first ${cluster.leases.length})`);
    }));

  cluster
    .command('drain')
    .argument('<broker>', 'the broker id (--broker-id of its onelog serve)', parseInteger('BROKER', 0, 0x7fffffff))
    .description('hand every lease of a broker over to the others before it is stopped: marks it draining (it takes no lease until it restarts), ' +
      'waits until it holds none and prints where each went')
    .option('--timeout-ms <ms>', 'give up (exit 1) if it still holds a lease after MS ms (default 60000)', parseInteger('--timeout-ms', 1), 60_000)
    .option('--json', 'print JSON: { brokerId, elapsedMs, moved: [{ kind, name, fromBrokerId, toBrokerId }] }')
    .action(action(async (brokerId: number, o: { timeoutMs: number; json?: boolean }, cmd: Command) => {
      const api = apiFor(cmd);
      const started = performance.now();
      const { leases } = await api.drainBroker(brokerId);
      const now = await untilEmpty(api, brokerId, started + o.timeoutMs);
      const elapsedMs = Math.round(performance.now() - started);
      const holders = new Map(now.leases.map((l) => [`${l.kind}:${l.name}`, l.holderBrokerId]));
      const moved: DrainedLease[] = leases.map((l) => ({ kind: l.kind, name: l.name, fromBrokerId: brokerId, toBrokerId: holders.get(`${l.kind}:${l.name}`) ?? null }));
      if (o.json) {
        console.log(JSON.stringify({ brokerId, elapsedMs, moved }));
        return;
      }
      console.log(`broker ${brokerId} drained in ${elapsedMs} ms: it holds no lease; ${moved.length} moved`);
      if (moved.length > 0) printTable(['LEASE', 'OF', 'FROM', 'TO'], moved.map((m) => [m.kind, m.name, m.fromBrokerId, m.toBrokerId]));
    }));
}

/**
 * Reads the cluster until `brokerId` holds no lease (none listed, and no partition or group counted on its row).
 * @param deadline performance.now() after which it gives up
 * @returns the description that showed it empty
 * @throws OnelogError `REQUEST_TIMED_OUT` naming what it still holds at the deadline
 */
async function untilEmpty(api: HttpApi, brokerId: number, deadline: number): Promise<ClusterDescription> {
  for (;;) {
    const cluster = await api.describeCluster();
    const row = cluster.brokers.find((b) => b.brokerId === brokerId);
    const held = cluster.leases.filter((l) => l.holderBrokerId === brokerId);
    if (held.length === 0 && (row === undefined || (row.partitionsLed === 0 && row.groupsCoordinated === 0))) return cluster;
    if (performance.now() >= deadline) {
      throw new OnelogError('REQUEST_TIMED_OUT', `broker ${brokerId} still holds ${held.length} leases (${row?.partitionsLed ?? 0} partitions, ` +
        `${row?.groupsCoordinated ?? 0} groups) after the timeout; it stays draining: run the command again to wait on`,
      { brokerId, leases: held.slice(0, 20).map((l) => `${l.kind}:${l.name}`) });
    }
    await sleep(DRAIN_POLL_MS);
  }
}

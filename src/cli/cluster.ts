/**
 * `onelog cluster describe`: the brokers of the cluster (id, URLs, heartbeat age, partitions led, groups coordinated,
 * which one answered) and the leases held now (docs/cluster.md); on the embedded default, the one broker.
 */
import type { Command } from 'commander';
import { action, apiFor, printTable } from './common.js';

export function registerCluster(program: Command): void {
  program.command('cluster').description('the brokers of the cluster and what each leads')
    .command('describe')
    .description('the live brokers (id, URL, Kafka address, heartbeat age, partitions led, groups coordinated; * marks the one that answered) and the leases held now: jobs, groups, partitions (holder, epoch, expiry)')
    .option('--json', 'print JSON')
    .action(action(async (o: { json?: boolean }, cmd: Command) => {
      const cluster = await apiFor(cmd).describeCluster();
      if (o.json) {
        console.log(JSON.stringify(cluster));
        return;
      }
      console.log(cluster.mode === 'embedded' ? 'embedded: one broker, leading every partition and coordinating every group'
        : `cluster of ${cluster.brokers.length} brokers`);
      printTable(['BROKER', 'URL', 'KAFKA', 'HEARTBEAT AGE MS', 'PARTITIONS LED', 'GROUPS COORDINATED'], cluster.brokers.map((b) => [
        `${b.brokerId ?? '-'}${b.self ? ' *' : ''}`, b.url, b.kafkaAddress, b.heartbeatAgeMs, b.partitionsLed, b.groupsCoordinated,
      ]));
      if (cluster.mode === 'embedded') return;
      console.log('');
      printTable(['LEASE', 'OF', 'HOLDER', 'EPOCH', 'EXPIRES'], cluster.leases.map((l) => [l.kind, l.name, l.holderBrokerId, l.epoch, new Date(l.expiresAt).toISOString()]));
      if (cluster.leasesOmitted > 0) console.log(`(${cluster.leasesOmitted} more leases not listed; --json has the first ${cluster.leases.length})`);
    }));
}

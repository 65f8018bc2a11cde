/**
 * The cluster as `onelog cluster describe` and `GET /cluster` show it (docs/cluster.md): the live brokers with what
 * each leads and coordinates, and the leases held now. The embedded default is one broker leading every partition
 * and coordinating every group, with no lease.
 */
import type { Placement } from '../cluster/placement.js';
import type { ClusterBroker, ClusterDescription } from '../protocol/cluster.js';
import { MAX_CLUSTER_LEASES } from '../protocol/cluster.js';
import type { ClusterRouting } from './cluster-routing.js';

/** What the description is read from. */
export interface ClusterViewSources {
  routing: ClusterRouting;
  /** Null on the embedded default. */
  placement: Placement | null;
  /** The embedded default's counts: every topic's partitions and every group. */
  counts: () => Promise<{ partitions: number; groups: number }>;
}

/** Describes the cluster now. @throws OnelogError `STORAGE_ERROR` when the registry or the leases cannot be read */
export async function describeCluster({ routing, placement, counts }: ClusterViewSources): Promise<ClusterDescription> {
  const live = await routing.liveBrokers();
  if (live === null || placement === null) {
    const { partitions, groups } = await counts();
    const broker: ClusterBroker = {
      brokerId: null, url: routing.advertised?.url ?? null, kafkaAddress: routing.advertised?.kafkaAddress ?? null, heartbeatAgeMs: 0,
      partitionsLed: partitions, groupsCoordinated: groups, self: true,
    };
    return { mode: 'embedded', brokers: [broker], leases: [], leasesOmitted: 0 };
  }
  const leases = await placement.heldLeases();
  const rows = new Map<number, ClusterBroker>(live.map((b) => [b.brokerId, {
    brokerId: b.brokerId, url: b.url, kafkaAddress: b.kafkaAddress, heartbeatAgeMs: b.heartbeatAgeMs, partitionsLed: 0, groupsCoordinated: 0,
    self: b.brokerId === routing.brokerId,
  }]));
  const rowOf = (brokerId: number): ClusterBroker => {
    let row = rows.get(brokerId);
    if (row === undefined) {
      row = { brokerId, url: null, kafkaAddress: null, heartbeatAgeMs: null, partitionsLed: 0, groupsCoordinated: 0, self: brokerId === routing.brokerId };
      rows.set(brokerId, row);
    }
    return row;
  };
  for (const lease of leases) {
    if (lease.kind === 'partition') rowOf(lease.brokerId).partitionsLed++;
    else if (lease.kind === 'group') rowOf(lease.brokerId).groupsCoordinated++;
  }
  return {
    mode: 'cluster',
    brokers: [...rows.values()].sort((a, b) => a.brokerId! - b.brokerId!),
    leases: leases.slice(0, MAX_CLUSTER_LEASES).map((l) => ({ kind: l.kind, name: l.name, holderBrokerId: l.brokerId, epoch: l.epoch, expiresAt: l.expiresAt })),
    leasesOmitted: Math.max(0, leases.length - MAX_CLUSTER_LEASES),
  };
}

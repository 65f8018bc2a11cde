/**
 * The cluster as `onelog cluster describe` and `GET /cluster` show it (docs/cluster.md): the live brokers with what
 * each leads and coordinates, and the leases held now; and the leaders and coordinator `topics describe` and `groups
 * describe` name. The embedded default is one broker leading every partition and coordinating every group, with no lease.
 */
import type { HeldLease, Placement } from '../cluster/placement.js';
import type { ClusterBroker, ClusterDescription, ClusterDrainStart, ClusterLease } from '../protocol/cluster.js';
import type { GroupCoordinatorBroker } from '../protocol/groups.js';
import type { PartitionLeader } from '../protocol/topics.js';
import { MAX_CLUSTER_LEASES } from '../protocol/cluster.js';
import { OnelogError } from '../protocol/errors.js';
import { checkInteger } from '../protocol/validate.js';
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
      partitionsLed: partitions, groupsCoordinated: groups, self: true, draining: false,
    };
    return { mode: 'embedded', brokers: [broker], leases: [], leasesOmitted: 0 };
  }
  const leases = await placement.heldLeases();
  const rows = new Map<number, ClusterBroker>(live.map((b) => [b.brokerId, {
    brokerId: b.brokerId, url: b.url, kafkaAddress: b.kafkaAddress, heartbeatAgeMs: b.heartbeatAgeMs, partitionsLed: 0, groupsCoordinated: 0,
    self: b.brokerId === routing.brokerId, draining: b.draining,
  }]));
  const rowOf = (brokerId: number): ClusterBroker => {
    let row = rows.get(brokerId);
    if (row === undefined) {
      row = {
        brokerId, url: null, kafkaAddress: null, heartbeatAgeMs: null, partitionsLed: 0, groupsCoordinated: 0, self: brokerId === routing.brokerId, draining: false,
      };
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
    leases: leases.slice(0, MAX_CLUSTER_LEASES).map(asClusterLease),
    leasesOmitted: Math.max(0, leases.length - MAX_CLUSTER_LEASES),
  };
}

/**
 * Marks a live broker draining and lists the leases it holds (`onelog cluster drain BROKER`, `POST /cluster/brokers/:brokerId/drain`).
 * @throws OnelogError `INVALID_REQUEST` (the embedded default; a broker id not an integer from 0 to 2^31 - 1),
 *   `NOT_FOUND` (no live broker of that id), `STORAGE_ERROR`
 */
export async function drainBroker({ routing, placement }: Pick<ClusterViewSources, 'routing' | 'placement'>, brokerId: unknown): Promise<ClusterDrainStart> {
  const id = checkInteger(brokerId, 'brokerId', 0, 0x7fffffff);
  const marked = placement === null ? null : await routing.drain(id);
  if (marked === null) throw new OnelogError('INVALID_REQUEST', 'the embedded default has one broker and nothing to drain (cluster mode: docs/cluster.md)', { brokerId: id });
  if (!marked) throw new OnelogError('NOT_FOUND', `no live broker has id ${id} (onelog cluster describe lists them)`, { brokerId: id });
  return { brokerId: id, leases: (await placement!.heldLeases()).filter((l) => l.brokerId === id).map(asClusterLease) };
}

function asClusterLease(l: HeldLease): ClusterLease {
  return { kind: l.kind, name: l.name, holderBrokerId: l.brokerId, epoch: l.epoch, expiresAt: l.expiresAt };
}

/** The URL each live broker advertised, by broker id; null on the embedded default. */
async function liveUrls(routing: ClusterRouting): Promise<Map<number, string> | null> {
  const live = await routing.liveBrokers();
  return live === null ? null : new Map(live.map((b) => [b.brokerId, b.url]));
}

/**
 * The leader of each of `partitions` of `topic`: in cluster mode the holder of its partition lease, with its epoch and
 * the URL it advertised (null while it is not live), null for a partition nobody holds; on the embedded default this
 * broker (no id, no epoch) at the URL it was advertised at.
 * @throws OnelogError `STORAGE_ERROR` when the leases or the registry cannot be read
 */
export async function describeLeaders(
  routing: ClusterRouting, placement: Placement | null, topic: string, partitions: readonly number[],
): Promise<Map<number, PartitionLeader | null>> {
  const urls = await liveUrls(routing);
  if (urls === null || placement === null) {
    const self: PartitionLeader = { brokerId: null, url: routing.advertised?.url ?? null, epoch: null };
    return new Map(partitions.map((p) => [p, self]));
  }
  const leases = new Map((await placement.topicLeases(topic)).map((l) => [Number(l.name.slice(l.name.lastIndexOf('/') + 1)), l]));
  return new Map(partitions.map((p) => {
    const lease = leases.get(p);
    return [p, lease === undefined ? null : { brokerId: lease.brokerId, url: urls.get(lease.brokerId) ?? null, epoch: lease.epoch }];
  }));
}

/**
 * The broker coordinating `groupId`: in cluster mode the holder of its group lease and the URL it advertised (null
 * while it is not live), null while nobody holds it; on the embedded default this broker.
 * @throws OnelogError `STORAGE_ERROR` when the lease or the registry cannot be read
 */
export async function describeCoordinator(routing: ClusterRouting, groupId: string): Promise<GroupCoordinatorBroker | null> {
  const urls = await liveUrls(routing);
  if (urls === null) return { brokerId: null, url: routing.advertised?.url ?? null };
  const holder = await routing.groupCoordinator(groupId);
  return holder === null ? null : { brokerId: holder, url: urls.get(holder) ?? null };
}

/**
 * Where Kafka clients are sent (docs/kafka.md): the brokers Metadata lists, each partition's leader and each
 * group's coordinator. On the embedded default the listener's broker is all of them (node 0). In cluster mode
 * (docs/cluster.md) the nodes are the cluster's live brokers with a Kafka listener, by broker id; a partition's
 * leader is its sequencer (the holder of its partition lease) and a group's coordinator the holder of its group
 * lease. What nobody holds, or what a broker without a live Kafka listener holds, is placed on this broker: any
 * broker takes a free lease at its first produce or group request, and one that finds the lease held answers a
 * retriable error (NOT_LEADER_OR_FOLLOWER, NOT_COORDINATOR) after which Kafka clients ask again.
 */
import { NODE_ID } from './apis/api.js';
import type { KafkaCluster } from './apis/api.js';

/** A broker as Kafka clients reach it. */
export interface KafkaNode {
  nodeId: number;
  host: string;
  port: number;
}

/** The brokers Kafka clients are told of, by node id, and this broker's node id. */
export interface KafkaNodes {
  self: number;
  /** In node id order; this broker always among them, at the listener's advertised address. */
  nodes: ReadonlyMap<number, KafkaNode>;
}

/**
 * The brokers to list: on the embedded default this one (node 0); in cluster mode every live broker with a Kafka
 * listener (a `kafkaAddress` that does not parse as `host:port` is left out, as one without a listener), and this
 * broker at `advertised` whether or not it advertised itself yet (it is named for what nobody holds, so it must
 * be listed).
 * @throws OnelogError `STORAGE_ERROR` if the cluster's registry cannot be read
 */
export async function kafkaNodes(cluster: KafkaCluster, advertised: { host: string; port: number }): Promise<KafkaNodes> {
  const self = cluster.brokerId ?? NODE_ID;
  const nodes = new Map<number, KafkaNode>();
  for (const b of (cluster.brokerId === null ? null : await cluster.liveBrokers()) ?? []) {
    const address = b.brokerId === self || b.kafkaAddress === null ? null : parseKafkaAddress(b.kafkaAddress);
    if (address !== null) nodes.set(b.brokerId, { nodeId: b.brokerId, ...address });
  }
  nodes.set(self, { nodeId: self, host: advertised.host, port: advertised.port });
  return { self, nodes: new Map([...nodes].sort(([a], [b]) => a - b)) };
}

/**
 * The leader to name for a partition: its lease holder if it is among `nodes`, else this broker (nobody holds the
 * lease, or its holder has no live Kafka listener: a produce here takes a free lease, or is answered
 * NOT_LEADER_OR_FOLLOWER and the client refreshes its metadata).
 */
export function leaderFor(placement: KafkaNodes, holder: number | undefined): number {
  return holder !== undefined && placement.nodes.has(holder) ? holder : placement.self;
}

/** `host:port` (an IPv6 host in brackets) as a host and port; null if it is not one. */
export function parseKafkaAddress(address: string): { host: string; port: number } | null {
  const colon = address.lastIndexOf(':');
  if (colon <= 0) return null;
  const port = Number(address.slice(colon + 1));
  if (!/^\d+$/.test(address.slice(colon + 1)) || port < 1 || port > 65_535) return null;
  const host = address.slice(0, colon);
  return { host: host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host, port };
}

/**
 * The cluster as `onelog cluster describe` and `GET /cluster` show it (docs/cluster.md): which brokers are live, what
 * each leads and coordinates, and the leases behind that. On the embedded default there is one broker and no lease.
 * Pure types.
 */

/**
 * The HTTP answer header in which a cluster broker names the cluster's lease length, ms (`serve --lease-ms`): how long
 * a lost or paused broker's partitions and groups wait before another broker takes them. The clients bound how long
 * they wait for one broker's answer by it (`HttpApiOptions.requestTimeoutMs`, docs/cluster.md). Absent on the
 * embedded default.
 */
export const LEASE_MS_HEADER = 'x-onelog-lease-ms';

/** A cluster's lease length when `serve --lease-ms` is not given, ms. */
export const DEFAULT_LEASE_MS = 10_000;

/** Where the cluster's state lives: one process on a data directory, or brokers sharing PostgreSQL and object storage. */
export type ClusterMode = 'embedded' | 'cluster';

/** One live broker. */
export interface ClusterBroker {
  /** Its `--broker-id`; null on the embedded default (it has none). */
  brokerId: number | null;
  /** The URL of its HTTP API clients are sent to (`--advertised-url`, else where it listens); null until it advertised one. */
  url: string | null;
  /** `host:port` of its Kafka listener, or null without one. */
  kafkaAddress: string | null;
  /**
   * ms since its last heartbeat, by the database's clock; 0 on the embedded default (it is the one answering); null for
   * a broker that holds leases but is not live in the registry (not advertised yet, or its heartbeat timed out).
   */
  heartbeatAgeMs: number | null;
  /** Partitions whose lease it holds (it sequences their produces); every partition on the embedded default. */
  partitionsLed: number;
  /** Groups whose lease it holds (it coordinates them); every group on the embedded default. */
  groupsCoordinated: number;
  /** Whether this broker answered the request. */
  self: boolean;
  /**
   * Marked draining (`onelog cluster drain BROKER`): it hands every lease it holds over and takes none; false on the
   * embedded default and for a broker not live.
   */
  draining: boolean;
}

/** What a lease is for: a partition's produces, a group's coordination, or a job one broker at a time runs. */
export type ClusterLeaseKind = 'partition' | 'group' | 'job';

/** A lease held now (its expiry not passed by the database's clock). */
export interface ClusterLease {
  kind: ClusterLeaseKind;
  /** What it is for: `TOPIC/PARTITION`, the group id, or the job's lease name (`job:alerts`). */
  name: string;
  /** The broker holding it. */
  holderBrokerId: number;
  /** Raised at every change of holder: the fencing token of what the holder writes. */
  epoch: number;
  /** When it expires unless renewed, ms since the epoch (the database's clock). */
  expiresAt: number;
}

/** The answer of `describeCluster`. */
export interface ClusterDescription {
  mode: ClusterMode;
  /** The live brokers, and any other holding a lease, by id (one on the embedded default). */
  brokers: ClusterBroker[];
  /** Leases held now: jobs, then groups, then partitions, each by name; at most {@link MAX_CLUSTER_LEASES} (none on the embedded default). */
  leases: ClusterLease[];
  /** Leases held now beyond those listed (0 when all are). */
  leasesOmitted: number;
}

/** Most leases a {@link ClusterDescription} lists; the broker rows count them all. */
export const MAX_CLUSTER_LEASES = 1000;

/** The answer of `drainBroker`: the broker marked draining, and the leases it held when it was marked. */
export interface ClusterDrainStart {
  brokerId: number;
  /** Its partition, group and job leases held at the call (each moves within a lease balance pass, a third of `--lease-ms`). */
  leases: ClusterLease[];
}

/**
 * Which broker of a cluster does what, besides coordinating groups (group-placement.ts): who sequences each
 * partition, and which broker runs each job that one broker at a time must run (`job:<what>` leases, docs/cluster.md).
 * The embedded default has none: its broker leads every partition and runs every job. In cluster mode it is
 * {@link ClusterPlacement} (cluster-placement.ts), and the broker's composition root hands it to what schedules jobs
 * and to what describes the cluster.
 */

/**
 * Asks whether this broker may run a job's scheduled pass now ({@link Placement.jobGate}). Each call that answers
 * true takes or renews the job's lease for three intervals (`3 * intervalMs`, rounded up to a whole ms), so a holder
 * that runs every interval keeps it, and one that stops (closed, crashed, paused) loses it to another broker after
 * at most three intervals (at once when it closes: it gives its job leases up).
 * @param intervalMs the job's interval, ms (> 0)
 * @returns true when this broker holds the lease now; false when another broker does (or this one is closing)
 * @throws OnelogError `STORAGE_ERROR` if the lease cannot be read or written
 */
export type JobGate = (intervalMs: number) => Promise<boolean>;

/** A lease held now: `partition:TOPIC/PARTITION`, `group:<groupId>` or `job:<what>`, its holder, epoch and expiry. */
export interface HeldLease {
  kind: 'partition' | 'group' | 'job';
  /** `TOPIC/PARTITION`, the group id, or the job lease's whole name (`job:alerts`). */
  name: string;
  brokerId: number;
  epoch: number;
  /** ms since the epoch, the database's clock */
  expiresAt: number;
}

export interface Placement {
  /**
   * Who sequences each partition of `topics` now (the holder of its partition lease, not expired), by topic then
   * partition, as broker ids; partitions nobody holds are left out (any broker takes their lease at its next produce).
   * @throws OnelogError `STORAGE_ERROR`
   */
  partitionLeaders(topics: readonly string[]): Promise<Map<string, Map<number, number>>>;
  /**
   * Every lease held now (not expired): the partitions' (their sequencers) and the named ones (`group:<groupId>`,
   * `job:<what>`), for `onelog cluster describe`.
   * @throws OnelogError `STORAGE_ERROR`
   */
  heldLeases(): Promise<HeldLease[]>;
  /**
   * The partition leases of `topic` held now (not expired), by partition: each partition's sequencer and the epoch it
   * writes under, for `onelog topics describe`. Partitions nobody holds are left out.
   * @throws OnelogError `STORAGE_ERROR`
   */
  topicLeases(topic: string): Promise<HeldLease[]>;
  /**
   * The gate of a job one broker of the cluster at a time runs on schedule (retention: `job:retention`, alert
   * evaluation: `job:alerts`, the object log's upkeep: `job:merge`, `job:sweep`, `job:compact`), under the job's
   * lease in PostgreSQL.
   * @param name the lease's name, `job:<what>` (docs/cluster.md)
   */
  jobGate(name: string): JobGate;
}

/**
 * Which broker coordinates a group. The embedded default coordinates every group itself and has none; in cluster
 * mode (docs/cluster.md) a group is coordinated by the broker holding its lease in PostgreSQL
 * (`src/cluster/group-leases.ts`), as Kafka's group coordinator is the leader of the group's `__consumer_offsets`
 * partition.
 */
export interface GroupPlacement {
  /**
   * Resolves once this broker coordinates `groupId`: it held the group's lease, or took it now (free or expired).
   * @returns the lease's epoch: a new one means the group was taken over since, and what this broker kept in memory
   *   of the group is stale
   * @throws OnelogError `NOT_COORDINATOR` naming the broker that coordinates it (`coordinatorBrokerId`,
   *   `coordinatorUrl`); `STORAGE_ERROR` when the lease cannot be read
   */
  claim(groupId: string): Promise<number>;
  /**
   * Calls `listener` with each group this broker stops coordinating without being asked: its lease was lost (this
   * broker was paused past it) or given up (the group idle). The coordinator forgets the group's membership.
   */
  onLost(listener: (groupId: string) => void): void;
}

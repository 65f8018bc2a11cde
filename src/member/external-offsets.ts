/**
 * Offsets kept outside onelog, in the user's own database, for an exactly-once effect: the consumer runs each
 * handler inside a transaction of that database and stores the partition's next offset in the same
 * transaction, so a record's effect and its offset commit happen together or not at all. On assignment the
 * consumer seeks from there instead of onelog's committed offset. See docs/consumer-groups.md.
 */

/** One partition's position to store with a transaction. */
export interface ExternalPosition {
  topic: string;
  partition: number;
  /** The NEXT offset to read (last processed + 1). */
  offset: number;
}

/**
 * A store of positions in the user's database. `Tx` is what handlers receive to write with (for PostgreSQL,
 * a `pg` client inside `BEGIN`).
 */
export interface ExternalOffsetStore<Tx = unknown> {
  /**
   * Takes ownership of a partition for `memberId` when it is assigned, fencing every earlier owner: their
   * later transactions fail with `NOT_ASSIGNED` and roll back.
   * @returns the stored next offset to read, or null when the group never stored one (then the consumer
   *   starts from onelog's position for the partition)
   */
  claim(groupId: string, memberId: string, topic: string, partition: number): Promise<number | null>;
  /**
   * Runs `work` inside one transaction, then stores `position` in the same transaction and commits.
   * @throws OnelogError `NOT_ASSIGNED` (rolled back) when another member claimed the partition since this
   *   member did; whatever `work` throws (rolled back)
   */
  transaction<T>(groupId: string, memberId: string, position: ExternalPosition, work: (tx: Tx) => Promise<T>): Promise<T>;
}

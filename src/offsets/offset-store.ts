/**
 * The offset store: the key-value store of committed offsets, `(groupId, topic, partition) -> committed
 * offset`. The committed offset is the NEXT offset the group will read (Kafka's convention). Engines:
 * LMDB (embedded default); Redis later. Every engine passes the same contract test suite.
 */

/** A committed offset and what came with it. */
export interface CommittedOffset {
  /** The next offset to read. */
  offset: number;
  /** Free text the committer attached (Kafka's offset metadata). @default '' */
  metadata: string;
  /** When the commit happened, ms since the epoch (from the broker's clock). */
  commitTimestamp: number;
}

/** One entry of a commit. */
export interface OffsetCommit {
  topic: string;
  partition: number;
  offset: number;
  metadata?: string;
}

/** A stored offset with its key. */
export interface GroupOffset extends CommittedOffset {
  topic: string;
  partition: number;
}

/**
 * The operations of one store take effect in the order they are called, also when the caller does not await
 * each before calling the next (a commit called after deleteGroup survives it; of two commits of one key, the
 * later call wins).
 */
export interface OffsetStore {
  /** The committed offset of one partition for a group, or undefined when the group never committed it. */
  get(groupId: string, topic: string, partition: number): Promise<CommittedOffset | undefined>;
  /**
   * Stores several offsets atomically (one write transaction) and durably: when the promise resolves the
   * commit survives a crash.
   * @param now commit timestamp, ms since the epoch
   */
  commit(groupId: string, offsets: readonly OffsetCommit[], now: number): Promise<void>;
  /** Every committed offset of a group, ordered by topic then partition. */
  list(groupId: string): Promise<GroupOffset[]>;
  /** Removes every committed offset of a group. */
  deleteGroup(groupId: string): Promise<void>;
  /**
   * Removes every group's committed offsets of a topic (the topic was deleted: a topic created again under
   * its name starts with no committed offsets, as Kafka drops a deleted topic's offsets).
   * @returns how many partitions' offsets were removed
   */
  deleteTopic(topic: string): Promise<number>;
  close(): Promise<void>;
}

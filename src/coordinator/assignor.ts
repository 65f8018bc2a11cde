/**
 * Partition assignors: given the group's members (with the topics each subscribes to), the partitions of
 * those topics, and who owns what now, decide who should own what. All run on the coordinator (server-side
 * assignment, as Kafka's KIP-848 protocol). Pure functions: no I/O, no clock.
 */

/** A topic partition. */
export interface TopicPartition {
  topic: string;
  partition: number;
}

/** A member as an assignor sees it. */
export interface AssignorMember {
  memberId: string;
  /** Topics this member subscribes to. */
  topics: readonly string[];
  /** Partitions it owns now (empty for a new member). */
  owned: readonly TopicPartition[];
}

/** Decides the target assignment of a group. */
export interface Assignor {
  readonly name: AssignorName;
  /**
   * @param members every live member
   * @param partitionCounts partition count of every topic any member subscribes to
   * @returns for every member (by memberId) the partitions it should own: each partition of a subscribed
   *   topic goes to exactly one member subscribed to its topic; no member gets a partition of a topic it does
   *   not subscribe to
   */
  assign(members: readonly AssignorMember[], partitionCounts: ReadonlyMap<string, number>): Map<string, TopicPartition[]>;
}

export type AssignorName = 'range' | 'round-robin' | 'sticky';
export const ASSIGNOR_NAMES: readonly AssignorName[] = ['range', 'round-robin', 'sticky'];

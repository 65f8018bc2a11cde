/**
 * Partition assignors: given the group's members (with the topics each subscribes to), the partitions of
 * those topics, and who owns what now, decide who should own what. All run on the coordinator (server-side
 * assignment, as Kafka's KIP-848 protocol). Pure functions: no I/O, no clock.
 *
 * The assignors themselves live in `./assignors/` (`assignorFor(name)`); this module holds the interface
 * and what they share.
 */
import type { AssignorName } from '../protocol/groups.js';
import type { TopicPartition } from '../protocol/partitions.js';
import { OnelogError } from '../protocol/errors.js';

export type { AssignorName } from '../protocol/groups.js';
export type { TopicPartition } from '../protocol/partitions.js';

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
   *   not subscribe to. Every input memberId is a key (a member given nothing maps to `[]`), keys iterate in
   *   memberId order, each list is sorted by (topic, partition); no members give an empty map. The result
   *   depends only on the input's content, not on the order of members, topics or owned partitions.
   * @throws OnelogError `INVALID_REQUEST` if two members share a memberId
   * @throws OnelogError `INVALID_PARTITIONS` if a subscribed topic's partition count is not a non-negative
   *   safe integer (a subscribed topic missing from `partitionCounts` has no partitions)
   */
  assign(members: readonly AssignorMember[], partitionCounts: ReadonlyMap<string, number>): Map<string, TopicPartition[]>;
}

/** Every {@link AssignorName}, e.g. to validate configuration or list the choices in an error. */
export const ASSIGNOR_NAMES: readonly AssignorName[] = ['range', 'round-robin', 'sticky'];

/**
 * Orders strings by UTF-16 code units, as Java's `String.compareTo` (Kafka sorts member ids and topics so).
 * Never locale-dependent, so every coordinator orders the same way.
 */
export function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Orders topic partitions by topic ({@link compareIds}), then by partition number. */
export function compareTopicPartitions(a: TopicPartition, b: TopicPartition): number {
  return compareIds(a.topic, b.topic) || a.partition - b.partition;
}

/** A member of a {@link CanonicalGroup}. */
export interface CanonicalMember {
  memberId: string;
  /** Topics it subscribes to (duplicates dropped). */
  topics: ReadonlySet<string>;
  /** Partitions it claims to own, sorted by {@link compareTopicPartitions}, duplicates dropped; not validated. */
  owned: readonly TopicPartition[];
}

/** A topic of a {@link CanonicalGroup}. */
export interface CanonicalTopic {
  topic: string;
  /** Its partitions are `0 .. partitionCount - 1`; 0 when `partitionCounts` does not know the topic. */
  partitionCount: number;
  /** Indexes into {@link CanonicalGroup.members} of the members subscribed to it, ascending (so by memberId). */
  subscribers: readonly number[];
}

/**
 * An assignor's input checked and put in one order, so that an assignment depends only on what the group is,
 * never on the order members, topics or owned partitions were listed in.
 */
export interface CanonicalGroup {
  /** Sorted by memberId ({@link compareIds}). */
  members: readonly CanonicalMember[];
  /** Every topic at least one member subscribes to, sorted by name; topics nobody subscribes to are left out. */
  topics: readonly CanonicalTopic[];
}

/**
 * Checks an assignor's input and puts it in canonical order. A subscribed topic missing from
 * `partitionCounts` counts as having no partitions (not created yet, or deleted), as Kafka skips a topic
 * without metadata.
 * @throws OnelogError `INVALID_REQUEST` if two members share a memberId
 * @throws OnelogError `INVALID_PARTITIONS` if a subscribed topic's partition count is not a non-negative
 *   safe integer
 */
export function canonicalGroup(
  members: readonly AssignorMember[],
  partitionCounts: ReadonlyMap<string, number>,
): CanonicalGroup {
  const sorted = [...members].sort((a, b) => compareIds(a.memberId, b.memberId));
  const canonical: CanonicalMember[] = [];
  for (const [i, m] of sorted.entries()) {
    if (i > 0 && sorted[i - 1]!.memberId === m.memberId) {
      throw new OnelogError('INVALID_REQUEST', `member ${m.memberId} is listed twice`, { memberId: m.memberId });
    }
    const owned = [...m.owned].sort(compareTopicPartitions).filter(
      (tp, j, all) => j === 0 || compareTopicPartitions(all[j - 1]!, tp) !== 0,
    );
    canonical.push({ memberId: m.memberId, topics: new Set(m.topics), owned });
  }
  const subscribers = new Map<string, number[]>();
  for (const [i, m] of canonical.entries()) {
    for (const topic of m.topics) {
      const list = subscribers.get(topic);
      if (list) list.push(i);
      else subscribers.set(topic, [i]);
    }
  }
  const topics: CanonicalTopic[] = [...subscribers.keys()].sort(compareIds).map((topic) => {
    const partitionCount = partitionCounts.get(topic) ?? 0;
    if (!Number.isSafeInteger(partitionCount) || partitionCount < 0) {
      throw new OnelogError('INVALID_PARTITIONS', `topic ${topic} has partition count ${partitionCount}`, {
        topic,
        partitionCount,
      });
    }
    return { topic, partitionCount, subscribers: subscribers.get(topic)! };
  });
  return { members: canonical, topics };
}

/**
 * A result with an empty list for every member, keyed (and iterated) in memberId order: the map every
 * assignor fills in.
 */
export function emptyAssignment(group: CanonicalGroup): Map<string, TopicPartition[]> {
  return new Map(group.members.map((m) => [m.memberId, []]));
}

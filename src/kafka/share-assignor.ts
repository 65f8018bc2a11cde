/**
 * How a share group's partitions are spread over its Kafka members (as Kafka's share group assignor, KIP-932's
 * SimpleAssignor): per topic, over the members that subscribe to it (in member id order), each partition goes to one
 * member, round-robin, while members are no more than partitions; with more members than partitions, each member gets
 * one partition, round-robin, so every member fetches and every partition is fetched (the broker locks each record for
 * one member, so a partition shared by several is safe).
 */

/** A topic as the assignor sees it. */
export interface AssignableTopic {
  topicId: string;
  partitions: readonly number[];
}

/** A member's share of each topic, in topic name order. */
export type ShareAssignment = ReadonlyArray<{ topicId: string; topic: string; partitions: readonly number[] }>;

/**
 * The assignment of each member (by id): only topics that exist (in `topics`) are assigned.
 * @param members each member with the topics it subscribes to
 */
export function assignShares(members: ReadonlyArray<{ memberId: string; topics: readonly string[] }>, topics: ReadonlyMap<string, AssignableTopic>): Map<string, ShareAssignment> {
  const out = new Map<string, Array<{ topicId: string; topic: string; partitions: number[] }>>(members.map((m) => [m.memberId, []]));
  const names = [...new Set(members.flatMap((m) => m.topics))].filter((t) => topics.has(t)).sort();
  for (const topic of names) {
    const { topicId, partitions } = topics.get(topic)!;
    const subscribers = members.filter((m) => m.topics.includes(topic)).map((m) => m.memberId).sort();
    const share = new Map<string, number[]>(subscribers.map((id) => [id, []]));
    if (subscribers.length <= partitions.length) {
      partitions.forEach((p, i) => share.get(subscribers[i % subscribers.length]!)!.push(p));
    } else {
      subscribers.forEach((id, i) => share.get(id)!.push(partitions[i % partitions.length]!));
    }
    for (const [id, ps] of share) if (ps.length > 0) out.get(id)!.push({ topicId, topic, partitions: ps });
  }
  return out;
}

/**
 * The round-robin assignor, as Kafka's RoundRobinAssignor: all partitions dealt out in turn.
 */
import { canonicalGroup, emptyAssignment, type Assignor } from '../assignor.js';

/**
 * As Kafka's RoundRobinAssignor. Every partition of every subscribed topic, sorted by (topic, partition), is
 * dealt in turn to the members sorted by memberId; a member not subscribed to the partition's topic is
 * skipped, and the next partition goes to the member after the one that took this one. When all members
 * subscribe to the same topics their counts differ by at most 1; with different subscriptions the result
 * may be unbalanced (Kafka's documented example: C0 on t0, C1 on t0 and t1, C2 on t0, t1 and t2, with 1, 2
 * and 3 partitions: C0 gets t0p0, C1 gets t1p0, C2 gets t1p1, t2p0, t2p1, t2p2). Ignores what members own now.
 */
export const roundRobinAssignor: Assignor = {
  name: 'round-robin',
  assign(members, partitionCounts) {
    const group = canonicalGroup(members, partitionCounts);
    const result = emptyAssignment(group);
    const lists = group.members.map((m) => result.get(m.memberId)!);
    let next = 0;
    for (const { topic, partitionCount } of group.topics) {
      for (let partition = 0; partition < partitionCount; partition++) {
        // Each subscribed topic has a subscriber, so this stops within one lap.
        while (!group.members[next]!.topics.has(topic)) next = (next + 1) % lists.length;
        lists[next]!.push({ topic, partition });
        next = (next + 1) % lists.length;
      }
    }
    return result;
  },
};

/**
 * The range assignor, as Kafka's RangeAssignor: topic by topic, contiguous ranges of partitions.
 */
import { canonicalGroup, emptyAssignment, type Assignor } from '../assignor.js';

/**
 * As Kafka's RangeAssignor. For each topic on its own: the members subscribed to it, sorted by memberId,
 * take contiguous ranges of its partitions in that order; with `n` partitions and `m` members each gets
 * `floor(n / m)` and the first `n % m` get one more. So on every topic the subscribers' counts differ by at
 * most 1, but across topics the first members may get more in total (2 members, 2 topics of 3 partitions:
 * C0 gets t0p0, t0p1, t1p0, t1p1 and C1 gets t0p2, t1p2). Ignores what members own now.
 */
export const rangeAssignor: Assignor = {
  name: 'range',
  assign(members, partitionCounts) {
    const group = canonicalGroup(members, partitionCounts);
    const result = emptyAssignment(group);
    for (const { topic, partitionCount, subscribers } of group.topics) {
      const each = Math.floor(partitionCount / subscribers.length);
      const extra = partitionCount % subscribers.length;
      for (const [i, memberIndex] of subscribers.entries()) {
        const start = i * each + Math.min(i, extra);
        const length = each + (i < extra ? 1 : 0);
        const list = result.get(group.members[memberIndex]!.memberId)!;
        for (let partition = start; partition < start + length; partition++) list.push({ topic, partition });
      }
    }
    return result;
  },
};

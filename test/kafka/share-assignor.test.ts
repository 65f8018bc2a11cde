/**
 * The share assignor (src/kafka/share-assignor.ts), as a property over any members and topics: every partition of a
 * topic goes to at least one of its subscribers and to no one else; while subscribers are no more than partitions each
 * partition has exactly one, and shares differ by at most one; with more subscribers, each gets exactly one.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { assignShares } from '../../src/kafka/share-assignor.js';

const TOPICS = ['edits', 'pages', 'users'];

describe('assignShares', () => {
  it('spreads every partition over the topic\'s subscribers', () => {
    fc.assert(fc.property(
      fc.uniqueArray(fc.record({ memberId: fc.string({ minLength: 1, maxLength: 4 }), topics: fc.subarray(TOPICS) }), { selector: (m) => m.memberId, maxLength: 12 }),
      fc.tuple(fc.integer({ min: 1, max: 9 }), fc.integer({ min: 1, max: 9 })),
      (members, [edits, pages]) => {
        // `users` does not exist: nobody is assigned it.
        const topics = new Map([['edits', { topicId: 'e'.repeat(32), partitions: [...Array(edits).keys()] }], ['pages', { topicId: 'p'.repeat(32), partitions: [...Array(pages).keys()] }]]);
        const out = assignShares(members, topics);
        expect([...out.keys()].sort()).toEqual(members.map((m) => m.memberId).sort());
        for (const [topic, { partitions }] of topics) {
          const subscribers = members.filter((m) => m.topics.includes(topic));
          const shares = subscribers.map((m) => out.get(m.memberId)!.find((a) => a.topic === topic)?.partitions ?? []);
          for (const m of members.filter((x) => !x.topics.includes(topic))) expect(out.get(m.memberId)!.some((a) => a.topic === topic)).toBe(false);
          if (subscribers.length === 0) continue;
          expect([...new Set(shares.flat())].sort((a, b) => a - b)).toEqual(partitions);
          if (subscribers.length <= partitions.length) {
            expect(shares.flat()).toHaveLength(partitions.length);
            const sizes = shares.map((s) => s.length);
            expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
          } else {
            expect(shares.every((s) => s.length === 1)).toBe(true);
          }
        }
        for (const assignment of out.values()) expect(assignment.some((a) => a.topic === 'users')).toBe(false);
      },
    ), { numRuns: 300 });
  });
});

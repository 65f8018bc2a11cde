/**
 * The partition assignors: Kafka's documented examples, then properties over random groups (1-8 members,
 * 1-4 topics of 1-20 partitions, random subscriptions and random, partly invalid, claims), and for sticky a
 * brute-force search on small groups for the most balanced, then stickiest, assignment.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ASSIGNOR_NAMES, compareTopicPartitions,
  type Assignor, type AssignorMember, type AssignorName, type TopicPartition,
} from '../../src/coordinator/assignor.js';
import { assignorFor, rangeAssignor, roundRobinAssignor, stickyAssignor } from '../../src/coordinator/assignors/index.js';
import { codeOf } from '../helpers/errors.js';

type Assignment = Map<string, TopicPartition[]>;

/** `'t0p1'` -> `{ topic: 't0', partition: 1 }`. */
function tp(name: string): TopicPartition {
  const m = /^(.+)p(\d+)$/.exec(name);
  if (!m) throw new Error(`bad partition name ${name}`);
  return { topic: m[1]!, partition: Number(m[2]) };
}

function member(memberId: string, topics: string[], owned: string[] = []): AssignorMember {
  return { memberId, topics, owned: owned.map(tp) };
}

/** An assignment as `{ memberId: ['t0p0', ...] }`, for readable expectations. */
function show(assignment: Assignment): Record<string, string[]> {
  return Object.fromEntries([...assignment].map(([id, list]) => [id, list.map((p) => `${p.topic}p${p.partition}`)]));
}

function counts(entries: Record<string, number>): Map<string, number> {
  return new Map(Object.entries(entries));
}

const key = (p: TopicPartition) => `${p.topic}\0${p.partition}`;

/** Partition -> owner. */
function owners(assignment: Assignment): Map<string, string> {
  const out = new Map<string, string>();
  for (const [id, list] of assignment) for (const p of list) out.set(key(p), id);
  return out;
}

/** Partitions owned in `before` whose owner in `after` is another member (or none). */
function moves(before: Assignment, after: Assignment): number {
  const now = owners(after);
  let moved = 0;
  for (const [k, id] of owners(before)) if (now.get(k) !== id) moved++;
  return moved;
}

/** `members` with what each owns set to `assignment` (nothing for members it does not know). */
function owning(members: readonly AssignorMember[], assignment: Assignment): AssignorMember[] {
  return members.map((m) => ({ ...m, owned: assignment.get(m.memberId) ?? [] }));
}

function sizes(assignment: Assignment): number[] {
  return [...assignment.values()].map((l) => l.length);
}

function spread(values: number[]): number {
  return values.length === 0 ? 0 : Math.max(...values) - Math.min(...values);
}

/** Whether `memberId` holds a claim on `p` that the sticky assignor must honour if it can. */
function validClaim(m: AssignorMember, p: TopicPartition, partitionCounts: ReadonlyMap<string, number>): boolean {
  const count = partitionCounts.get(p.topic) ?? 0;
  return m.topics.includes(p.topic) && Number.isInteger(p.partition) && p.partition >= 0 && p.partition < count;
}

/** Partitions that went to a member validly claiming them. */
function kept(members: readonly AssignorMember[], partitionCounts: ReadonlyMap<string, number>, assignment: Assignment): number {
  let n = 0;
  for (const m of members) {
    const mine = new Set(assignment.get(m.memberId)!.map(key));
    for (const p of new Map(m.owned.map((o) => [key(o), o])).values()) {
      if (mine.has(key(p)) && validClaim(m, p, partitionCounts)) n++;
    }
  }
  return n;
}

function sumOfSquares(assignment: Assignment): number {
  return sizes(assignment).reduce((s, c) => s + c * c, 0);
}

/**
 * Checks the guarantees every assignor gives: every input memberId is a key, in memberId order; each
 * partition of a subscribed topic goes to exactly one member subscribed to its topic; nothing else is
 * handed out; each list is sorted by (topic, partition).
 */
function expectValid(
  members: readonly AssignorMember[],
  partitionCounts: ReadonlyMap<string, number>,
  assignment: Assignment,
): void {
  const ids = members.map((m) => m.memberId).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  expect([...assignment.keys()]).toEqual(ids);
  const expected = new Set<string>();
  for (const m of members) {
    for (const topic of m.topics) {
      for (let p = 0; p < (partitionCounts.get(topic) ?? 0); p++) expected.add(key({ topic, partition: p }));
    }
  }
  const seen = new Set<string>();
  for (const m of members) {
    const list = assignment.get(m.memberId)!;
    expect([...list].sort(compareTopicPartitions)).toEqual(list);
    for (const p of list) {
      expect(m.topics, `${m.memberId} got ${p.topic}p${p.partition}`).toContain(p.topic);
      expect(seen.has(key(p)), `${p.topic}p${p.partition} handed out twice`).toBe(false);
      seen.add(key(p));
    }
  }
  expect([...seen].sort()).toEqual([...expected].sort());
}

/**
 * Whether a partition could travel from a member to one with at least 2 fewer through a chain of members,
 * each subscribed to the topic of the partition it receives: if so, the assignment is not as balanced as
 * the subscriptions allow (the sum of squared counts could drop). Returns such a pair, or undefined.
 */
function unbalancedPair(members: readonly AssignorMember[], assignment: Assignment): [string, string] | undefined {
  const canGive = new Map<string, string[]>();
  for (const giver of members) {
    const topics = new Set(assignment.get(giver.memberId)!.map((p) => p.topic));
    canGive.set(giver.memberId, members.filter((m) => m !== giver && m.topics.some((t) => topics.has(t))).map((m) => m.memberId));
  }
  for (const from of members) {
    const have = assignment.get(from.memberId)!.length;
    const reached = new Set([from.memberId]);
    const queue = [from.memberId];
    while (queue.length > 0) {
      for (const next of canGive.get(queue.shift()!)!) {
        if (reached.has(next)) continue;
        if (assignment.get(next)!.length <= have - 2) return [from.memberId, next];
        reached.add(next);
        queue.push(next);
      }
    }
  }
  return undefined;
}

/**
 * Brute force over every assignment of a small group: the least sum of squared counts, and the most valid
 * claims kept among assignments with that sum.
 */
function bestByBruteForce(
  members: readonly AssignorMember[],
  partitionCounts: ReadonlyMap<string, number>,
): { squares: number; kept: number } {
  const partitions: { eligible: number[]; claimedBy: Set<number> }[] = [];
  for (const [topic, count] of partitionCounts) {
    for (let partition = 0; partition < count; partition++) {
      const eligible = members.flatMap((m, i) => (m.topics.includes(topic) ? [i] : []));
      if (eligible.length === 0) continue;
      const claims = (i: number) => members[i]!.owned.some((o) => o.topic === topic && o.partition === partition);
      const claimedBy = new Set(eligible.filter(claims));
      partitions.push({ eligible, claimedBy });
    }
  }
  const load = members.map(() => 0);
  let best = { squares: Infinity, kept: -1 };
  const walk = (at: number, keptSoFar: number) => {
    if (at === partitions.length) {
      const squares = load.reduce((s, c) => s + c * c, 0);
      if (squares < best.squares || (squares === best.squares && keptSoFar > best.kept)) best = { squares, kept: keptSoFar };
      return;
    }
    const { eligible, claimedBy } = partitions[at]!;
    for (const i of eligible) {
      load[i]!++;
      walk(at + 1, keptSoFar + (claimedBy.has(i) ? 1 : 0));
      load[i]!--;
    }
  };
  walk(0, 0);
  return best;
}

// ---- random groups ----

interface Group {
  members: AssignorMember[];
  partitionCounts: Map<string, number>;
}

interface GroupShape {
  members: { min: number; max: number };
  topics: { min: number; max: number };
  partitions: { min: number; max: number };
  /** Every member subscribes to every topic. */
  homogeneous: boolean;
  /** Members claim random partitions (some of unsubscribed topics, some that do not exist, some twice). */
  claims: boolean;
}

const DEFAULT_SHAPE: GroupShape = {
  members: { min: 1, max: 8 },
  topics: { min: 1, max: 4 },
  partitions: { min: 1, max: 20 },
  homogeneous: false,
  claims: true,
};

/** Member ids are short random strings (including ones that sort oddly), distinct. */
const memberIdArb = fc.string({ minLength: 1, maxLength: 3, unit: fc.constantFrom('a', 'B', 'c', '0', '-', 'é') });

function groupArb(overrides: Partial<GroupShape> = {}): fc.Arbitrary<Group> {
  const shape = { ...DEFAULT_SHAPE, ...overrides };
  return fc
    .record({
      ids: fc.uniqueArray(memberIdArb, { minLength: shape.members.min, maxLength: shape.members.max }),
      partitionCounts: fc.array(fc.integer(shape.partitions), { minLength: shape.topics.min, maxLength: shape.topics.max }),
    })
    .chain(({ ids, partitionCounts }) => {
      const topics = partitionCounts.map((_, t) => `t${t}`);
      const claimArb = fc.record({
        topic: fc.constantFrom(...topics, 'gone'),
        partition: fc.integer({ min: -1, max: shape.partitions.max + 1 }),
      });
      const memberArb = (memberId: string) =>
        fc.record({
          memberId: fc.constant(memberId),
          topics: shape.homogeneous ? fc.constant(topics) : fc.subarray(topics),
          owned: shape.claims ? fc.array(claimArb, { maxLength: 12 }) : fc.constant([]),
        });
      return fc.record({
        members: fc.tuple(...ids.map(memberArb)),
        partitionCounts: fc.constant(new Map(partitionCounts.map((c, t) => [`t${t}`, c]))),
      });
    });
}

const ASSIGNORS: [AssignorName, Assignor][] = ASSIGNOR_NAMES.map((name) => [name, assignorFor(name)]);

function totalPartitions(group: Group): number {
  const subscribed = new Set(group.members.flatMap((m) => m.topics));
  return [...subscribed].reduce((s, t) => s + (group.partitionCounts.get(t) ?? 0), 0);
}

/**
 * The fewest partitions that must change owner for a balanced assignment when every member subscribes to
 * everything: with `P` partitions over `n` members, each keeps at most `floor(P / n)` of what it owns, and
 * `P % n` of those owning more keep one more.
 */
function minimalUniformMoves(previous: Assignment, memberIds: string[], total: number): number {
  const n = memberIds.length;
  const base = Math.floor(total / n);
  const owned = memberIds.map((id) => previous.get(id)?.length ?? 0);
  const keepable = owned.reduce((s, o) => s + Math.min(o, base), 0) + Math.min(total % n, owned.filter((o) => o > base).length);
  return total - keepable;
}

/** A small seeded generator of numbers in [0, 1), for shuffles a property can replay. */
function lcg(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

// ---- the tests ----

describe('assignorFor', () => {
  it('gives each named assignor, under its name', () => {
    expect(assignorFor('range')).toBe(rangeAssignor);
    expect(assignorFor('round-robin')).toBe(roundRobinAssignor);
    expect(assignorFor('sticky')).toBe(stickyAssignor);
    for (const name of ASSIGNOR_NAMES) expect(assignorFor(name).name).toBe(name);
  });
});

describe.each(ASSIGNORS)('%s assignor: edge cases', (_name, assignor) => {
  it('gives an empty map for no members', () => {
    expect(assignor.assign([], counts({ t0: 3 }))).toEqual(new Map());
  });

  it('gives an empty list to a member with no subscription or nothing left, and skips unknown and empty topics', () => {
    const members = [member('a', []), member('b', ['t0', 'missing', 'empty']), member('c', ['t0'])];
    const result = assignor.assign(members, counts({ t0: 1, empty: 0, other: 5 }));
    expect([...result.keys()]).toEqual(['a', 'b', 'c']);
    expect(result.get('a')).toEqual([]);
    expect(result.get('b')!.length + result.get('c')!.length).toBe(1);
    expectValid(members, counts({ t0: 1, empty: 0, other: 5 }), result);
  });

  it('refuses two members with the same memberId', () => {
    expect(codeOf(() => assignor.assign([member('a', ['t0']), member('a', ['t0'])], counts({ t0: 1 })))).toBe('INVALID_REQUEST');
  });

  it('refuses a subscribed topic with a negative or fractional partition count', () => {
    expect(codeOf(() => assignor.assign([member('a', ['t0'])], counts({ t0: -1 })))).toBe('INVALID_PARTITIONS');
    expect(codeOf(() => assignor.assign([member('a', ['t0'])], counts({ t0: 1.5 })))).toBe('INVALID_PARTITIONS');
    expect(codeOf(() => assignor.assign([member('a', ['t0'])], counts({ t0: 1, t1: -1 })))).toBe('no error');
  });
});

describe('range assignor', () => {
  it("gives Kafka's documented example: 2 members, 2 topics of 3 partitions", () => {
    const result = rangeAssignor.assign([member('C1', ['t0', 't1']), member('C0', ['t0', 't1'])], counts({ t0: 3, t1: 3 }));
    expect(show(result)).toEqual({ C0: ['t0p0', 't0p1', 't1p0', 't1p1'], C1: ['t0p2', 't1p2'] });
  });

  it('gives the first partitionCount % members members one more, in contiguous ranges', () => {
    const members = ['C0', 'C1', 'C2'].map((id) => member(id, ['t']));
    expect(show(rangeAssignor.assign(members, counts({ t: 7 })))).toEqual({
      C0: ['tp0', 'tp1', 'tp2'], C1: ['tp3', 'tp4'], C2: ['tp5', 'tp6'],
    });
  });

  it('splits each topic among its own subscribers only', () => {
    const result = rangeAssignor.assign([member('C0', ['t0']), member('C1', ['t0', 't1'])], counts({ t0: 3, t1: 2 }));
    expect(show(result)).toEqual({ C0: ['t0p0', 't0p1'], C1: ['t0p2', 't1p0', 't1p1'] });
  });

  it('property: per topic, subscribers in memberId order hold contiguous ranges, earlier ones at most 1 more', () => {
    fc.assert(
      fc.property(groupArb(), ({ members, partitionCounts }) => {
        const result = rangeAssignor.assign(members, partitionCounts);
        for (const [topic, count] of partitionCounts) {
          const subscribers = [...result.keys()].filter((id) => members.find((m) => m.memberId === id)!.topics.includes(topic));
          if (subscribers.length === 0) continue;
          const ranges = subscribers.map((id) => result.get(id)!.filter((p) => p.topic === topic).map((p) => p.partition));
          expect(ranges.flat()).toEqual([...Array(count).keys()]);
          const lengths = ranges.map((r) => r.length);
          expect([...lengths].sort((a, b) => b - a)).toEqual(lengths);
          expect(spread(lengths)).toBeLessThanOrEqual(1);
        }
      }),
    );
  });
});

describe('round-robin assignor', () => {
  it("gives Kafka's documented example: 2 members, 2 topics of 3 partitions", () => {
    const result = roundRobinAssignor.assign([member('C0', ['t0', 't1']), member('C1', ['t0', 't1'])], counts({ t0: 3, t1: 3 }));
    expect(show(result)).toEqual({ C0: ['t0p0', 't0p2', 't1p1'], C1: ['t0p1', 't1p0', 't1p2'] });
  });

  it("gives Kafka's documented example with different subscriptions", () => {
    const members = [member('C0', ['t0']), member('C1', ['t0', 't1']), member('C2', ['t0', 't1', 't2'])];
    expect(show(roundRobinAssignor.assign(members, counts({ t0: 1, t1: 2, t2: 3 })))).toEqual({
      C0: ['t0p0'], C1: ['t1p0'], C2: ['t1p1', 't2p0', 't2p1', 't2p2'],
    });
  });

  it('property: each partition, in (topic, partition) order, goes to the next member after the last one subscribed to its topic', () => {
    fc.assert(
      fc.property(groupArb(), ({ members, partitionCounts }) => {
        const result = roundRobinAssignor.assign(members, partitionCounts);
        const ids = [...result.keys()];
        const byId = new Map(members.map((m) => [m.memberId, m]));
        const dealt = [...result.values()].flat().sort(compareTopicPartitions);
        const owner = owners(result);
        let last = -1;
        for (const p of dealt) {
          let expected = (last + 1) % ids.length;
          while (!byId.get(ids[expected]!)!.topics.includes(p.topic)) expected = (expected + 1) % ids.length;
          expect(owner.get(key(p))).toBe(ids[expected]);
          last = expected;
        }
      }),
    );
  });
});

describe('sticky assignor', () => {
  it("gives Kafka's documented example: a fresh group as round-robin, then keeps everything when C1 leaves", () => {
    const topics = ['t0', 't1', 't2', 't3'];
    const partitionCounts = counts({ t0: 2, t1: 2, t2: 2, t3: 2 });
    const first = stickyAssignor.assign(['C0', 'C1', 'C2'].map((id) => member(id, topics)), partitionCounts);
    expect(show(first)).toEqual({ C0: ['t0p0', 't1p1', 't3p0'], C1: ['t0p1', 't2p0', 't3p1'], C2: ['t1p0', 't2p1'] });

    const survivors = [member('C0', topics, ['t0p0', 't1p1', 't3p0']), member('C2', topics, ['t1p0', 't2p1'])];
    const second = stickyAssignor.assign(survivors, partitionCounts);
    expect(show(second).C0).toEqual(expect.arrayContaining(['t0p0', 't1p1', 't3p0']));
    expect(show(second).C2).toEqual(expect.arrayContaining(['t1p0', 't2p1']));
    expect(sizes(second)).toEqual([4, 4]);
    expect(moves(first, second)).toBe(3); // only C1's
  });

  it("gives Kafka's documented example with different subscriptions, and keeps everything when C0 leaves", () => {
    const partitionCounts = counts({ t0: 1, t1: 2, t2: 3 });
    const members = [member('C0', ['t0']), member('C1', ['t0', 't1']), member('C2', ['t0', 't1', 't2'])];
    const first = stickyAssignor.assign(members, partitionCounts);
    expect(show(first)).toEqual({ C0: ['t0p0'], C1: ['t1p0', 't1p1'], C2: ['t2p0', 't2p1', 't2p2'] });
    const second = stickyAssignor.assign(owning(members.slice(1), first), partitionCounts);
    expect(show(second)).toEqual({ C1: ['t0p0', 't1p0', 't1p1'], C2: ['t2p0', 't2p1', 't2p2'] });
  });

  it('gives up partitions of topics no longer subscribed and partitions that no longer exist', () => {
    const members = [member('a', ['t0'], ['t0p0', 't0p5', 't1p0', 'gonep0']), member('b', ['t0', 't1'], ['t0p1'])];
    const result = stickyAssignor.assign(members, counts({ t0: 2, t1: 1 }));
    expect(show(result)).toEqual({ a: ['t0p0'], b: ['t0p1', 't1p0'] });
  });

  it('keeps a partition claimed by two members with the one that keeps more that way', () => {
    // Each gets 1: a keeps tp0, so tp1 stays with b; any other choice keeps fewer.
    const members = [member('a', ['t'], ['tp0', 'tp1']), member('b', ['t'], ['tp1'])];
    expect(show(stickyAssignor.assign(members, counts({ t: 2 })))).toEqual({ a: ['tp0'], b: ['tp1'] });
    expect(show(stickyAssignor.assign([...members].reverse(), counts({ t: 2 })))).toEqual({ a: ['tp0'], b: ['tp1'] });
  });

  it('keeps a partition claimed by several members with exactly one, the same one whatever the input order', () => {
    const members = [member('a', ['t'], ['tp0', 'tp1']), member('b', ['t'], ['tp1', 'tp2']), member('c', ['t'], ['tp1'])];
    const result = stickyAssignor.assign(members, counts({ t: 3 }));
    expectValid(members, counts({ t: 3 }), result);
    expect(sizes(result)).toEqual([1, 1, 1]);
    expect(kept(members, counts({ t: 3 }), result)).toBe(3);
    expect(show(stickyAssignor.assign([members[2]!, members[0]!, members[1]!], counts({ t: 3 })))).toEqual(show(result));
  });

  it('moves partitions along a chain of members when no single move balances the group', () => {
    // a (t0 only) holds all of t0, b (t0, t1) holds t1p0, c subscribes only to t1: a cannot give to c
    // directly, so a gives a t0 partition to b and b gives t1p0 to c.
    const partitionCounts = counts({ t0: 3, t1: 1 });
    const members = [member('a', ['t0'], ['t0p0', 't0p1', 't0p2']), member('b', ['t0', 't1'], ['t1p0']), member('c', ['t1'])];
    const result = stickyAssignor.assign(members, partitionCounts);
    expect(sizes(result)).toEqual([2, 1, 1]);
    expect(show(result).c).toEqual(['t1p0']);
    expect(result.get('b')![0]!.topic).toBe('t0');
    expect(kept(members, partitionCounts, result)).toBe(2);
    expect(unbalancedPair(members, result)).toBeUndefined();
  });

  it('assigns a large group with mixed subscriptions validly and balanced', () => {
    const topics = [...Array(20).keys()].map((t) => `t${t}`);
    const partitionCounts = new Map(topics.map((t) => [t, 100]));
    const members = [...Array(200).keys()].map((i) => member(`m${i}`, topics.filter((_, t) => (i + t) % 3 !== 0)));
    const first = stickyAssignor.assign(members, partitionCounts);
    expectValid(members, partitionCounts, first);
    expect(unbalancedPair(members, first)).toBeUndefined();
    const shrunk = owning(members.slice(1), first);
    const second = stickyAssignor.assign(shrunk, partitionCounts);
    expectValid(shrunk, partitionCounts, second);
    expect(spread(sizes(second))).toBeLessThanOrEqual(1);
    expect(moves(first, second)).toBe(first.get('m0')!.length);
  });

  it('property: on a fresh group where all subscribe to the same topics, the same as round-robin', () => {
    fc.assert(
      fc.property(groupArb({ homogeneous: true, claims: false }), ({ members, partitionCounts }) => {
        const sticky = stickyAssignor.assign(members, partitionCounts);
        expect(show(sticky)).toEqual(show(roundRobinAssignor.assign(members, partitionCounts)));
      }),
    );
  });

  it('property: as balanced as the subscriptions allow (no chain of moves evens it further)', () => {
    fc.assert(
      fc.property(groupArb(), ({ members, partitionCounts }) => {
        expect(unbalancedPair(members, stickyAssignor.assign(members, partitionCounts))).toBeUndefined();
      }),
    );
  });

  it('property: fed its own output, with no change to the group, gives it back unchanged', () => {
    fc.assert(
      fc.property(groupArb(), ({ members, partitionCounts }) => {
        const first = stickyAssignor.assign(members, partitionCounts);
        expect(show(stickyAssignor.assign(owning(members, first), partitionCounts))).toEqual(show(first));
      }),
    );
  });

  it('property: same subscriptions, one member removed: exactly the fewest partitions needed move', () => {
    fc.assert(
      fc.property(groupArb({ homogeneous: true, members: { min: 2, max: 8 } }), fc.nat(), (group, pick) => {
        const { members, partitionCounts } = group;
        const before = stickyAssignor.assign(members, partitionCounts);
        const gone = members[pick % members.length]!.memberId;
        const survivors = owning(members.filter((m) => m.memberId !== gone), before);
        const after = stickyAssignor.assign(survivors, partitionCounts);
        expectValid(survivors, partitionCounts, after);
        expect(spread(sizes(after))).toBeLessThanOrEqual(1);
        const total = totalPartitions(group);
        const minimal = minimalUniformMoves(before, survivors.map((m) => m.memberId), total);
        expect(moves(before, after)).toBe(minimal);
        // From a balanced start the survivors can keep all they have: only the removed member's partitions move.
        expect(moves(before, after)).toBe(before.get(gone)!.length);
      }),
    );
  });

  it('property: same subscriptions, one member added: exactly the fewest partitions needed move', () => {
    fc.assert(
      fc.property(groupArb({ homogeneous: true, members: { min: 1, max: 7 } }), memberIdArb, (group, newId) => {
        const { members, partitionCounts } = group;
        fc.pre(!members.some((m) => m.memberId === newId));
        const before = stickyAssignor.assign(members, partitionCounts);
        const grown = [...owning(members, before), { memberId: newId, topics: members[0]!.topics, owned: [] }];
        const after = stickyAssignor.assign(grown, partitionCounts);
        expectValid(grown, partitionCounts, after);
        expect(spread(sizes(after))).toBeLessThanOrEqual(1);
        const total = totalPartitions(group);
        expect(moves(before, after)).toBe(minimalUniformMoves(before, grown.map((m) => m.memberId), total));
        // From a balanced start, the newcomer takes its share and no one else trades.
        expect(moves(before, after)).toBe(after.get(newId)!.length);
        expect(after.get(newId)!.length).toBe(Math.floor(total / grown.length));
      }),
    );
  });

  it('property: on small groups, as balanced and as sticky as the best assignment found by brute force', () => {
    const small = groupArb({ members: { min: 1, max: 4 }, topics: { min: 1, max: 3 }, partitions: { min: 1, max: 3 } });
    fc.assert(
      fc.property(small, ({ members, partitionCounts }) => {
        const result = stickyAssignor.assign(members, partitionCounts);
        expectValid(members, partitionCounts, result);
        const best = bestByBruteForce(members, partitionCounts);
        expect({ squares: sumOfSquares(result), kept: kept(members, partitionCounts, result) }).toEqual(best);
      }),
      { numRuns: 300 },
    );
  });

  it('property: on small groups with different subscriptions, a member leaving or joining moves the fewest partitions', () => {
    const small = groupArb({
      members: { min: 2, max: 4 }, topics: { min: 1, max: 3 }, partitions: { min: 1, max: 3 }, claims: false,
    });
    const topicsArb = fc.subarray(['t0', 't1', 't2']);
    fc.assert(
      fc.property(small, fc.nat(), fc.boolean(), topicsArb, ({ members, partitionCounts }, pick, leave, newTopics) => {
        const before = stickyAssignor.assign(members, partitionCounts);
        const next = leave
          ? owning(members.filter((_, i) => i !== pick % members.length), before)
          : [...owning(members, before), { memberId: 'new', topics: newTopics.filter((t) => partitionCounts.has(t)), owned: [] }];
        fc.pre(new Set(next.map((m) => m.memberId)).size === next.length);
        const after = stickyAssignor.assign(next, partitionCounts);
        expectValid(next, partitionCounts, after);
        const best = bestByBruteForce(next, partitionCounts);
        expect(sumOfSquares(after)).toBe(best.squares);
        expect(kept(next, partitionCounts, after)).toBe(best.kept);
      }),
      { numRuns: 300 },
    );
  });
});

describe.each(ASSIGNORS)('%s assignor: properties', (_name, assignor) => {
  it('property: every subscribed partition goes to exactly one subscribed member; every member is a key', () => {
    fc.assert(
      fc.property(groupArb(), ({ members, partitionCounts }) => {
        expectValid(members, partitionCounts, assignor.assign(members, partitionCounts));
      }),
    );
  });

  it('property: the result does not depend on the order of members, topics or owned partitions', () => {
    fc.assert(
      fc.property(groupArb(), fc.integer(), ({ members, partitionCounts }, seed) => {
        const random = lcg(seed);
        const shuffle = <T>(list: readonly T[]): T[] =>
          list.map((x) => [random(), x] as const).sort((a, b) => a[0] - b[0]).map(([, x]) => x);
        const shuffled = shuffle(members).map((m) => ({ ...m, topics: shuffle(m.topics), owned: shuffle(m.owned) }));
        const reordered = new Map(shuffle([...partitionCounts]));
        expect(show(assignor.assign(shuffled, reordered))).toEqual(show(assignor.assign(members, partitionCounts)));
      }),
    );
  });

  it('property: with the same subscriptions, per topic (range) or in total (others) counts differ by at most 1', () => {
    fc.assert(
      fc.property(groupArb({ homogeneous: true }), ({ members, partitionCounts }) => {
        const result = assignor.assign(members, partitionCounts);
        if (assignor.name === 'range') {
          for (const topic of partitionCounts.keys()) {
            expect(spread([...result.values()].map((l) => l.filter((p) => p.topic === topic).length))).toBeLessThanOrEqual(1);
          }
        } else {
          expect(spread(sizes(result))).toBeLessThanOrEqual(1);
        }
      }),
    );
  });
});

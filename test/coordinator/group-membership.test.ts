/**
 * The in-memory group state machine, driven directly: joins, heartbeats (release + grant, as the coordinator
 * answers), leaves and expiries at a given time. No I/O, so the property below can run many long sequences.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AssignorName } from '../../src/protocol/groups.js';
import type { TopicPartition } from '../../src/protocol/partitions.js';
import { assignorFor } from '../../src/coordinator/assignors/index.js';
import { GroupMembership, partitionKey } from '../../src/coordinator/group-membership.js';
import type { Member, PartitionKey } from '../../src/coordinator/group-membership.js';
import { codeOf } from '../helpers/errors.js';

const PARTITIONS: Record<string, number> = { a: 3, b: 4, six: 6 };
const SESSION_TIMEOUT_MS = 10_000;

function newGroup(): GroupMembership {
  return new GroupMembership('g', (topic) => PARTITIONS[topic] ?? 0);
}

function join(group: GroupMembership, topics: string[], now: number, assignor: AssignorName = 'sticky', clientId = 'c', rebalanceTimeoutMs = SESSION_TIMEOUT_MS): Member {
  return group.join({ clientId, topics, sessionTimeoutMs: SESSION_TIMEOUT_MS, rebalanceTimeoutMs, commitMode: 'after-processing', assignor: assignorFor(assignor), commitsStart: true }, now);
}

/** What the coordinator does to answer a member: grant what is free in its target; the answer is `assigned`. */
function answer(group: GroupMembership, member: Member, now: number): PartitionKey[] {
  group.grant(member, group.grantable(member), now);
  return [...member.assigned].sort();
}

/** A heartbeat reporting `owned`, then its answer. */
function heartbeat(group: GroupMembership, member: Member, owned: Iterable<PartitionKey>, now: number): PartitionKey[] {
  group.release(member, [...owned].map(parse), now);
  return answer(group, member, now);
}

function parse(key: PartitionKey): TopicPartition {
  const [topic, partition] = key.split('/');
  return { topic: topic!, partition: Number(partition) };
}

const keys = (topic: string, ...partitions: number[]) => partitions.map((p) => partitionKey({ topic, partition: p }));

describe('GroupMembership', () => {
  it('goes Empty -> Reconciling -> Stable on a first join, and the first member takes every partition', () => {
    const group = newGroup();
    expect(group.state).toBe('Empty');
    expect(group.generationId).toBe(0);
    const a = join(group, ['six'], 0);
    expect(group.state).toBe('Reconciling'); // target set, nothing owned yet
    expect(group.generationId).toBe(1);
    expect(answer(group, a, 0)).toEqual(keys('six', 0, 1, 2, 3, 4, 5));
    expect(group.state).toBe('Stable');
    expect(a.generationId).toBe(1);
  });

  it('moves a partition to a new member only after its owner reported releasing it', () => {
    const group = newGroup();
    const a = join(group, ['six'], 0);
    answer(group, a, 0);
    const b = join(group, ['six'], 0);
    expect(group.generationId).toBe(2);
    expect(group.state).toBe('Reconciling');
    expect(answer(group, b, 0)).toEqual([]); // a still holds everything
    const kept = heartbeat(group, a, a.owned, 0);
    expect(kept).toHaveLength(3);
    expect(a.owned.size).toBe(6); // told, but not yet released
    const moving = [...b.target].sort();
    expect(moving).toHaveLength(3);
    expect(moving.some((k) => kept.includes(k))).toBe(false);
    expect(group.grantable(b)).toEqual([]);
    for (const k of moving) expect(group.holder(k)).toBe(a);
    heartbeat(group, a, kept, 0);
    for (const k of moving) expect(group.holder(k)).toBeUndefined();
    expect(group.state).toBe('Reconciling');
    expect(answer(group, b, 0)).toEqual(moving);
    expect(group.state).toBe('Stable');
    expect(b.generationId).toBe(2);
    expect(a.generationId).toBe(2);
    expect(a.previousGenerationId).toBe(1);
  });

  it('accepts the previous generation only where asked (fetches), and refuses unknown members', () => {
    const group = newGroup();
    const a = join(group, ['six'], 0);
    answer(group, a, 0);
    join(group, ['six'], 0);
    heartbeat(group, a, a.owned, 0); // a moves from generation 1 to 2
    expect(group.member(a.memberId, 2)).toBe(a);
    expect(codeOf(() => group.member(a.memberId, 1))).toBe('ILLEGAL_GENERATION');
    expect(group.member(a.memberId, 1, true)).toBe(a);
    expect(codeOf(() => group.member(a.memberId, 0, true))).toBe('ILLEGAL_GENERATION');
    expect(codeOf(() => group.member('nobody', 2))).toBe('UNKNOWN_MEMBER_ID');
  });

  it('expires a member past its session timeout, and one that holds a revoked partition past its release deadline', () => {
    const group = newGroup();
    const a = join(group, ['six'], 0);
    answer(group, a, 0);
    expect(group.expired(SESSION_TIMEOUT_MS)).toEqual([]); // exactly at the timeout: still alive
    expect(group.expired(SESSION_TIMEOUT_MS + 1)).toEqual([a]);
    const b = join(group, ['six'], 1_000);
    answer(group, b, 1_000);
    heartbeat(group, a, a.owned, 2_000); // told to revoke at 2 s: deadline 12 s
    heartbeat(group, a, a.owned, 8_000); // keeps heartbeating but never lets go
    heartbeat(group, b, b.owned, 8_000);
    expect(group.expired(12_000)).toEqual([]);
    expect(group.expired(12_001)).toEqual([a]);
  });

  it('gives a member that keeps heartbeating its rebalance timeout, not its session timeout, to release a revoked partition (Kafka\'s max.poll.interval.ms; librdkafka\'s 0091, 0093)', () => {
    const group = newGroup();
    const a = join(group, ['six'], 0, 'sticky', 'c', 30_000);
    answer(group, a, 0);
    const b = join(group, ['six'], 1_000);
    answer(group, b, 1_000);
    for (const at of [2_000, 10_000, 20_000, 30_000]) {
      heartbeat(group, a, a.owned, at); // told to revoke at 2 s: deadline 32 s
      heartbeat(group, b, b.owned, at);
    }
    expect(group.expired(32_000)).toEqual([]);
    expect(group.expired(32_001)).toEqual([a]);
  });

  it('bumps the generation on every join, leave and removal, and is Empty with no member', () => {
    const group = newGroup();
    const a = join(group, ['six'], 0);
    const b = join(group, ['six'], 0);
    expect(group.generationId).toBe(2);
    expect(group.remove(b.memberId)).toBe(true);
    expect(group.generationId).toBe(3);
    expect(group.remove(b.memberId)).toBe(false);
    expect(group.generationId).toBe(3);
    expect(group.remove(a.memberId)).toBe(true);
    expect(group.generationId).toBe(4);
    expect(group.state).toBe('Empty');
  });

  it('refuses another assignor while members are live, and a kill while members are live; Dead is final', () => {
    const group = newGroup();
    const a = join(group, ['six'], 0, 'sticky');
    expect(codeOf(() => join(group, ['six'], 0, 'range'))).toBe('INCONSISTENT_GROUP_PROTOCOL');
    expect(codeOf(() => group.kill())).toBe('NON_EMPTY_GROUP');
    group.remove(a.memberId);
    expect(join(group, ['six'], 0, 'range')).toBeDefined(); // empty again: any assignor
    group.remove([...group.members.keys()][0]!);
    group.kill();
    expect(group.state).toBe('Dead');
    expect(codeOf(() => join(group, ['six'], 0))).toBe('UNKNOWN_GROUP');
  });

  it('keeps withheld partitions out of every target and is not Stable until none is withheld', () => {
    const group = newGroup();
    const a = join(group, ['six'], 0);
    answer(group, a, 0);
    group.withheld.add('six/0');
    group.rebalance();
    const told = heartbeat(group, a, a.owned, 0);
    expect(told).toEqual(keys('six', 1, 2, 3, 4, 5));
    heartbeat(group, a, told, 0);
    expect(group.holder('six/0')).toBeUndefined();
    expect(group.state).toBe('Reconciling');
    group.withheld.delete('six/0');
    group.rebalance();
    expect(heartbeat(group, a, a.owned, 0)).toEqual(keys('six', 0, 1, 2, 3, 4, 5));
    expect(group.state).toBe('Stable');
  });
});

/** Commands of the property: a member index picks among the live members (modulo their number). */
type Command =
  | { kind: 'join'; topics: string[] }
  | { kind: 'leave'; who: number }
  | { kind: 'heartbeat'; who: number; release: boolean }
  | { kind: 'tick'; ms: number };

const commandArb: fc.Arbitrary<Command> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('join' as const), topics: fc.subarray(['a', 'b'], { minLength: 1 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('leave' as const), who: fc.nat(4) }) },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('heartbeat' as const), who: fc.nat(4), release: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 0, max: SESSION_TIMEOUT_MS + 2_000 }) }) },
);

/** A client's view: what it holds (may consume or has not let go of) and what its last answer said. */
interface Client {
  member: Member;
  held: Set<PartitionKey>;
  told: Set<PartitionKey>;
}

/** No partition held by two live members, on the coordinator's side and on the clients' side, which agree. */
function checkExclusive(group: GroupMembership, clients: Client[]): void {
  const seen = new Map<PartitionKey, string>();
  for (const c of clients) {
    expect(group.members.get(c.member.memberId)).toBe(c.member);
    expect([...c.member.owned].sort()).toEqual([...c.held].sort());
    for (const key of c.held) {
      expect(seen.get(key), `${key} held twice`).toBeUndefined();
      seen.set(key, c.member.memberId);
      expect(c.member.topics).toContain(key.split('/')[0]);
    }
    for (const key of c.member.assigned) expect(c.member.owned.has(key)).toBe(true);
  }
  expect(group.members.size).toBe(clients.length);
}

describe('GroupMembership property', () => {
  for (const assignor of ['sticky', 'range', 'round-robin'] as const) {
    it(`${assignor}: no partition is ever held twice; two honest heartbeat rounds settle every partition once, Stable`, () => {
      fc.assert(
        fc.property(fc.array(commandArb, { maxLength: 40 }), (commands) => {
          const group = newGroup();
          let now = 1_000_000;
          let clients: Client[] = [];
          let generation = 0;
          const removeClient = (memberId: string) => (clients = clients.filter((c) => c.member.memberId !== memberId));
          const hb = (c: Client, release: boolean) => {
            const reported = release ? [...c.held].filter((k) => c.told.has(k)) : [...c.held];
            const told = heartbeat(group, c.member, reported, now);
            c.told = new Set(told);
            c.held = new Set([...reported, ...told]);
          };
          for (const cmd of commands) {
            switch (cmd.kind) {
              case 'join': {
                if (clients.length >= 5) continue;
                const member = join(group, cmd.topics, now, assignor, `c${clients.length}`);
                generation++;
                const told = answer(group, member, now);
                clients.push({ member, held: new Set(told), told: new Set(told) });
                break;
              }
              case 'leave': {
                if (clients.length === 0) continue;
                const c = clients[cmd.who % clients.length]!;
                expect(group.remove(c.member.memberId)).toBe(true);
                generation++;
                removeClient(c.member.memberId);
                break;
              }
              case 'heartbeat': {
                if (clients.length === 0) continue;
                hb(clients[cmd.who % clients.length]!, cmd.release);
                break;
              }
              case 'tick': {
                now += cmd.ms;
                // As the coordinator's expire(): every expired member is removed.
                for (const m of group.expired(now)) {
                  group.remove(m.memberId);
                  generation++;
                  removeClient(m.memberId);
                }
                break;
              }
            }
            expect(group.generationId).toBe(generation);
            checkExclusive(group, clients);
          }
          // Honest clients, as the real one: a heartbeat reports what the last answer said, and an answer
          // that revokes something is followed at once by a heartbeat that lets it go. (Without that
          // immediate release, a member told of a revocation in round 1 releases it in round 2, after its
          // new owner may already have heartbeated: a third round would be needed.)
          for (let round = 0; round < 2; round++) {
            for (const c of clients) {
              hb(c, true);
              if (c.held.size > c.told.size) hb(c, true);
            }
          }
          checkExclusive(group, clients);
          if (clients.length === 0) {
            expect(group.state).toBe('Empty');
            return;
          }
          expect(group.state).toBe('Stable');
          const subscribed = new Set(clients.flatMap((c) => c.member.topics));
          const all = [...subscribed].flatMap((t) => Array.from({ length: PARTITIONS[t]! }, (_, p) => `${t}/${p}`)).sort();
          expect(clients.flatMap((c) => [...c.held]).sort()).toEqual(all);
          for (const c of clients) {
            expect([...c.told].sort()).toEqual([...c.held].sort());
            expect([...c.member.target].sort()).toEqual([...c.held].sort());
          }
        }),
        { numRuns: 300 },
      );
    });
  }
});

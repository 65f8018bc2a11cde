/**
 * The lease balance's plan and its runner (src/cluster/lease-balance.ts), pure: the fair share, the moves that bring
 * every broker to it (a joiner takes its share, a draining broker empties), hysteresis (a cluster at or under its
 * shares moves nothing, and a plan carried out plans nothing more), and the runner's passes under a fake clock.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../../src/common/logger.js';
import { fairShare, LeaseBalancer, planBalance } from '../../src/cluster/lease-balance.js';
import type { BalanceBroker, HeldPartition, LeaseMove } from '../../src/cluster/lease-balance.js';

const held = (brokerId: number, ...partitions: number[]): HeldPartition[] => partitions.map((partition) => ({ topic: 't', partition, brokerId, epoch: 3 }));
const brokers = (...ids: number[]): BalanceBroker[] => ids.map((brokerId) => ({ brokerId, draining: false }));
const after = (leases: readonly HeldPartition[], moves: readonly LeaseMove[]): HeldPartition[] => leases.map((l) => {
  const move = moves.find((m) => m.topic === l.topic && m.partition === l.partition);
  return move === undefined ? l : { ...l, brokerId: move.toBrokerId, epoch: l.epoch + 1 };
});
const counts = (leases: readonly HeldPartition[], ids: readonly number[]) => ids.map((id) => leases.filter((l) => l.brokerId === id).length);

describe('fair share', () => {
  it('is ceil(leases / brokers), 0 without brokers', () => {
    expect([fairShare(6, 3), fairShare(7, 3), fairShare(1, 3), fairShare(0, 3), fairShare(6, 0)]).toEqual([2, 3, 1, 0, 0]);
  });
});

describe('the balance plan', () => {
  it('a broker holding all six partitions gives two each to the two that joined, its last ones, to the one leading fewest', () => {
    const moves = planBalance(held(1, 0, 1, 2, 3, 4, 5), brokers(1, 2, 3));
    expect(moves.map((m) => [m.partition, m.fromBrokerId, m.epoch, m.toBrokerId])).toEqual([[2, 1, 3, 2], [3, 1, 3, 3], [4, 1, 3, 2], [5, 1, 3, 3]]);
    expect(counts(after(held(1, 0, 1, 2, 3, 4, 5), moves), [1, 2, 3])).toEqual([2, 2, 2]);
  });

  it('a draining broker gives every partition to the others; a broker not live keeps its leases (they expire)', () => {
    const leases = [...held(1, 0, 1), ...held(2, 2, 3), ...held(3, 4, 5)];
    const moves = planBalance(leases, [{ brokerId: 1, draining: false }, { brokerId: 2, draining: false }, { brokerId: 3, draining: true }]);
    expect(moves.map((m) => [m.partition, m.fromBrokerId, m.toBrokerId])).toEqual([[4, 3, 1], [5, 3, 2]]);
    expect(planBalance([...held(1, 0), ...held(9, 1, 2, 3)], brokers(1, 2))).toEqual([]);
  });

  it('moves nothing while every broker is at or under its share (hysteresis), nor when every broker drains', () => {
    expect(planBalance([...held(1, 0, 1, 2, 3), ...held(2, 4, 5, 6, 7), ...held(3, 8, 9)], brokers(1, 2, 3))).toEqual([]); // 4/4/2, share 4
    expect(planBalance(held(1, 0, 1), [{ brokerId: 1, draining: true }])).toEqual([]);
  });

  it('property: after its moves every broker not draining is at or under its share, the draining hold nothing, and a second plan moves nothing', () => {
    const cluster = fc.record({
      ids: fc.uniqueArray(fc.integer({ min: 0, max: 20 }), { minLength: 1, maxLength: 6 }),
      draining: fc.array(fc.boolean(), { minLength: 6, maxLength: 6 }),
      holders: fc.array(fc.nat(30), { maxLength: 60 }),
    });
    fc.assert(fc.property(cluster, ({ ids, draining, holders }) => {
      const live = ids.map((brokerId, i) => ({ brokerId, draining: draining[i]! }));
      // Holders are the live brokers' ids, or a broker not live (index past the list).
      const leases: HeldPartition[] = holders.map((h, partition) => ({ topic: `t${partition % 3}`, partition, brokerId: ids[h % (ids.length + 1)] ?? 99, epoch: 1 }));
      const moves = planBalance(leases, live);
      for (const m of moves) expect(m.toBrokerId).not.toBe(m.fromBrokerId);
      const moved = after(leases, moves);
      const active = live.filter((b) => !b.draining);
      if (active.length > 0) {
        const share = fairShare(leases.length, active.length);
        for (const b of active) expect(moved.filter((l) => l.brokerId === b.brokerId).length).toBeLessThanOrEqual(share);
        for (const b of live.filter((x) => x.draining)) expect(moved.some((l) => l.brokerId === b.brokerId)).toBe(false);
      } else {
        expect(moves).toEqual([]);
      }
      expect(planBalance(moved, live)).toEqual([]);
    }), { numRuns: 500 });
  });
});

describe('the balancer', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('runs a pass every interval: follows its draining mark, and hands over only the moves from itself', async () => {
    vi.useFakeTimers();
    let live: BalanceBroker[] = brokers(2); // broker 1 not registered yet: it moves nothing
    let leases = [...held(1, 0, 1, 2, 3), ...held(2, 4)];
    const handed: LeaseMove[][] = [];
    const marks: boolean[] = [];
    const balancer = new LeaseBalancer({
      brokerId: 1, intervalMs: 1000, logger: silentLogger, brokers: async () => live, leases: async () => leases,
      handOver: async (moves) => {
        handed.push([...moves]);
        leases = after(leases, moves);
      },
      setDraining: async (draining) => {
        marks.push(draining);
      },
    });
    balancer.start();
    try {
      await vi.advanceTimersByTimeAsync(1000);
      expect(handed).toEqual([]);
      live = brokers(1, 2);
      await vi.advanceTimersByTimeAsync(1000); // share 3 of 5: partition 3 goes to broker 2
      expect(handed.map((ms) => ms.map((m) => [m.partition, m.toBrokerId]))).toEqual([[[3, 2]]]);
      await vi.advanceTimersByTimeAsync(3000); // balanced: nothing more
      expect(handed).toHaveLength(1);
      live = [{ brokerId: 1, draining: true }, { brokerId: 2, draining: false }];
      await vi.advanceTimersByTimeAsync(1000);
      expect(marks).toEqual([true]);
      expect(handed[1]!.map((m) => [m.partition, m.toBrokerId])).toEqual([[0, 2], [1, 2], [2, 2]]);
      expect(counts(leases, [1, 2])).toEqual([0, 5]);
      await vi.advanceTimersByTimeAsync(2000);
      expect(marks).toEqual([true]); // told once
    } finally {
      await balancer.close();
    }
    await vi.advanceTimersByTimeAsync(5000);
    expect(handed).toHaveLength(2); // no pass after close
  });

  it('refuses an interval that is not a positive integer', () => {
    const options = { brokerId: 1, logger: silentLogger, brokers: async () => [], leases: async () => [], handOver: async () => {}, setDraining: async () => {} };
    expect(() => new LeaseBalancer({ ...options, intervalMs: 0 })).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG' }));
  });
});

/**
 * The share-partition state machine (coordinator/share-partition.ts) against a model: random sequences of extend,
 * acquire, accept / release / reject / renew (some by the wrong member), time passing (lock expiry), members ending,
 * dead-lettering, log start moves and restarts from the snapshot. After every step the two agree on every record's
 * state and delivery count and on the start offset, and the invariants hold: counts never go down nor pass the limit,
 * in key order at most one record of a key is held, the earliest unfinished one; at the end, every record taken from
 * the log is accepted or dead-lettered, none lost.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { restoreSnapshot, SharePartition } from '../../src/coordinator/share-partition.js';
import type { ShareAcknowledgement, ShareKey, SharePartitionSettings, ShareRecordStatus } from '../../src/coordinator/share-partition.js';

/** The model: one plain object per offset, linear scans, no index. */
class Model {
  readonly records = new Map<number, { key: string | null; status: ShareRecordStatus; deliveries: number; member: string | null; lockUntil: number; notBefore: number }>();
  end = 0;
  logStart = 0;
  constructor(readonly s: SharePartitionSettings) {}

  get start(): number {
    const open = [...this.records].filter(([, r]) => r.status === 'available' || r.status === 'acquired' || r.status === 'dead').map(([o]) => o);
    return open.length === 0 ? this.end : Math.min(...open);
  }

  unfinished(): number {
    return [...this.records.values()].filter((r) => r.status === 'available' || r.status === 'acquired' || r.status === 'dead').length;
  }

  extend(read: Array<{ offset: number; key: string | null }>, nextOffset: number): void {
    for (const r of read) {
      if (r.offset < this.end) continue;
      // The window holds maxInFlight records not yet dropped: unfinished ones and done ones after the first unfinished.
      if (this.windowSize() >= this.s.maxInFlight) {
        this.end = r.offset;
        return;
      }
      this.records.set(r.offset, { key: r.key, status: 'available', deliveries: 0, member: null, lockUntil: 0, notBefore: 0 });
      this.end = r.offset + 1;
    }
    this.end = Math.max(this.end, nextOffset);
  }

  windowSize(): number {
    const start = this.start;
    return [...this.records.keys()].filter((o) => o >= start).length;
  }

  release(offset: number, notBefore: number): void {
    const r = this.records.get(offset)!;
    if (r.deliveries >= this.s.maxDeliveries) Object.assign(r, { status: 'dead', member: null, lockUntil: 0, notBefore: 0 });
    else Object.assign(r, { status: 'available', member: null, lockUntil: 0, notBefore });
  }

  expire(now: number): void {
    for (const [o, r] of [...this.records].sort((a, b) => a[0] - b[0])) if (r.status === 'acquired' && r.lockUntil <= now) this.release(o, 0);
  }

  acquire(member: string, now: number, max: number): number[] {
    this.expire(now);
    const out: number[] = [];
    const seen = new Set<string>();
    for (const [o, r] of [...this.records].sort((a, b) => a[0] - b[0])) {
      if (out.length >= max) break;
      if (!(r.status === 'available' || r.status === 'acquired' || r.status === 'dead')) continue;
      if (this.s.ordering === 'key' && r.key !== null) {
        if (seen.has(r.key)) continue;
        seen.add(r.key);
      }
      if (r.status !== 'available' || r.notBefore > now) continue;
      Object.assign(r, { status: 'acquired', deliveries: r.deliveries + 1, member, lockUntil: now + this.s.lockMs, notBefore: 0 });
      out.push(o);
    }
    return out;
  }

  acknowledge(member: string, acks: ShareAcknowledgement[], now: number): boolean {
    this.expire(now);
    if (!acks.every((a) => this.records.get(a.offset)?.status === 'acquired' && this.records.get(a.offset)!.member === member)) return false;
    for (const a of acks) {
      const r = this.records.get(a.offset)!;
      if (a.type === 'accept') Object.assign(r, { status: 'accepted', member: null, lockUntil: 0 });
      else if (a.type === 'reject') Object.assign(r, { status: 'dead', member: null, lockUntil: 0 });
      else if (a.type === 'renew') r.lockUntil = now + this.s.lockMs;
      else this.release(a.offset, now + (a.delayMs ?? 0));
    }
    return true;
  }

  memberGone(member: string): void {
    for (const [o, r] of [...this.records].sort((a, b) => a[0] - b[0])) if (r.status === 'acquired' && r.member === member) this.release(o, 0);
  }

  deadLettered(): number[] {
    const dead = [...this.records].filter(([, r]) => r.status === 'dead').map(([o]) => o).sort((a, b) => a - b);
    for (const o of dead) this.records.get(o)!.status = 'archived';
    return dead;
  }

  /**
   * A crash: what was held is released, its count kept; what was never delivered after the last record that was is
   * forgotten (no entry holds it), to be taken from the log again.
   */
  restart(): void {
    for (const [o, r] of [...this.records].sort((a, b) => a[0] - b[0])) if (r.status === 'acquired') this.release(o, 0);
    const start = this.start;
    const last = Math.max(-1, ...[...this.records].filter(([o, r]) => o >= start && r.deliveries > 0).map(([o]) => o));
    for (const [o, r] of this.records) if (o > last && r.status === 'available' && r.deliveries === 0) this.records.delete(o);
    this.end = Math.max(start, last + 1);
  }

  logStartMoved(to: number): void {
    for (const [o, r] of this.records) if (o < to && (r.status === 'available' || r.status === 'acquired' || r.status === 'dead')) Object.assign(r, { status: 'archived', member: null });
    this.end = Math.max(this.end, to);
  }
}

type Step =
  | { kind: 'extend'; count: number; gap: number; keys: number[] }
  | { kind: 'acquire'; member: number; max: number }
  | { kind: 'ack'; member: number; type: 'accept' | 'release' | 'reject' | 'renew'; pick: number; delayMs: number; foreign: boolean }
  | { kind: 'tick'; ms: number }
  | { kind: 'gone'; member: number }
  | { kind: 'deadLetter' }
  | { kind: 'restart' }
  | { kind: 'logStart'; ahead: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('extend' as const), count: fc.integer({ min: 1, max: 12 }), gap: fc.integer({ min: 0, max: 2 }), keys: fc.array(fc.integer({ min: -1, max: 3 }), { minLength: 12, maxLength: 12 }) }),
  fc.record({ kind: fc.constant('acquire' as const), member: fc.integer({ min: 0, max: 2 }), max: fc.integer({ min: 1, max: 6 }) }),
  fc.record({
    kind: fc.constant('ack' as const), member: fc.integer({ min: 0, max: 2 }), type: fc.constantFrom('accept' as const, 'release' as const, 'reject' as const, 'renew' as const),
    pick: fc.integer({ min: 0, max: 100 }), delayMs: fc.integer({ min: 0, max: 3000 }), foreign: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 1, max: 20_000 }) }),
  fc.record({ kind: fc.constant('gone' as const), member: fc.integer({ min: 0, max: 2 }) }),
  fc.constant({ kind: 'deadLetter' as const }),
  fc.constant({ kind: 'restart' as const }),
  fc.record({ kind: fc.constant('logStart' as const), ahead: fc.integer({ min: 0, max: 3 }) }),
);

const settings = fc.record({
  lockMs: fc.constantFrom(1000, 5000), maxDeliveries: fc.integer({ min: 1, max: 4 }), maxInFlight: fc.integer({ min: 3, max: 20 }),
  ordering: fc.constantFrom('none' as const, 'key' as const),
});

describe('share-partition state machine', () => {
  it('agrees with the model step by step; counts never go down; key order holds; every record ends accepted or dead-lettered', () => {
    fc.assert(fc.property(settings, fc.array(step, { maxLength: 80 }), (s, steps) => {
      let sp = new SharePartition({ startOffset: 0, endOffset: 0, records: [] }, s);
      const model = new Model(s);
      let now = 1_000_000;
      let logEnd = 0; // the log: every offset below it exists unless compaction left a gap
      const keyOf = new Map<number, string | null>();
      const maxDeliveries = new Map<number, number>();
      const fate = new Map<number, 'accepted' | 'archived'>();
      // The offset store: what every step's changes wrote.
      const stored = { start: 0, entries: new Map<number, string>() };
      const persist = (orphans: number[] = []) => {
        const changes = sp.takeChanges(orphans);
        stored.start = changes.startOffset;
        for (const o of changes.remove) stored.entries.delete(o);
        for (const [o, text] of changes.set) stored.entries.set(o, text);
        // Runs are kept only while they hold records at or after the start offset, and never overlap.
        const runs = [...stored.entries].map(([first, text]) => [first, (JSON.parse(text) as number[])[0]!] as const).sort((a, b) => a[0] - b[0]);
        runs.forEach(([first, last], i) => {
          expect(last).toBeGreaterThanOrEqual(Math.max(first, stored.start));
          if (i > 0) expect(first).toBeGreaterThan(runs[i - 1]![1]);
        });
      };

      const check = () => {
        const got = new Map(sp.inFlight().map((r) => [r.offset, r]));
        for (const [o, r] of model.records) {
          const open = r.status === 'available' || r.status === 'acquired' || r.status === 'dead';
          if (!open) continue;
          expect(got.get(o), `offset ${o}`).toMatchObject({ status: r.status, deliveries: r.deliveries, memberId: r.member });
          expect(r.deliveries).toBeLessThanOrEqual(s.maxDeliveries);
          expect(r.deliveries).toBeGreaterThanOrEqual(maxDeliveries.get(o) ?? 0);
          maxDeliveries.set(o, r.deliveries);
        }
        expect(got.size).toBe(model.unfinished());
        expect(sp.startOffset).toBe(model.start);
        expect(sp.endOffset).toBe(model.end);
        if (s.ordering === 'key') {
          const firstOpen = new Map<ShareKey, number>();
          for (const r of sp.inFlight()) if (r.key !== null && !firstOpen.has(r.key)) firstOpen.set(r.key, r.offset);
          for (const r of sp.inFlight()) if (r.status === 'acquired' && r.key !== null) expect(firstOpen.get(r.key)).toBe(r.offset);
        }
      };
      const record = (status: ShareRecordStatus, offsets: number[]) => {
        for (const o of offsets) {
          expect(fate.has(o), `offset ${o} resolved twice`).toBe(false);
          fate.set(o, status === 'accepted' ? 'accepted' : 'archived');
        }
      };
      const snapshotFate = () => new Map([...model.records].map(([o, r]) => [o, r.status]));
      const settle = (before: Map<number, ShareRecordStatus>) => {
        for (const [o, r] of model.records) {
          if (before.get(o) === r.status) continue;
          if (r.status === 'accepted' || r.status === 'archived') record(r.status, [o]);
        }
      };

      for (const st of steps) {
        const before = snapshotFate();
        if (st.kind === 'extend') {
          const read: Array<{ offset: number; key: string | null }> = [];
          let offset = sp.endOffset;
          for (let i = 0; i < st.count; i++) {
            offset += i === 0 ? 0 : 1;
            if (st.gap > 0 && i % 5 === 4) {
              keyOf.delete(offset); // compaction removed it from the log, also for a restart's read
              offset += 1;
            }
            const key = st.keys[i]! < 0 ? null : `k${st.keys[i]}`;
            keyOf.set(offset, key);
            read.push({ offset, key });
          }
          logEnd = Math.max(logEnd, offset + 1);
          const nextOffset = offset + 1 + (st.gap > 1 ? 1 : 0);
          sp.extend(read, nextOffset);
          model.extend(read, nextOffset);
        } else if (st.kind === 'acquire') {
          const got = sp.acquire(`m${st.member}`, now, st.max).map((r) => r.offset);
          expect(got).toEqual(model.acquire(`m${st.member}`, now, st.max));
        } else if (st.kind === 'ack') {
          const member = `m${st.member}`;
          const held = sp.inFlight().filter((r) => r.status === 'acquired' && r.memberId === member).map((r) => r.offset);
          const others = sp.inFlight().filter((r) => r.memberId !== member).map((r) => r.offset);
          const offsets = st.foreign && others.length > 0 ? [others[st.pick % others.length]!] : held.filter((_, i) => (st.pick >> (i % 7)) & 1);
          if (offsets.length === 0) continue;
          const acks = offsets.map((offset): ShareAcknowledgement => (st.type === 'release' ? { offset, type: 'release', delayMs: st.delayMs } : { offset, type: st.type }));
          const ok = model.acknowledge(member, acks, now);
          if (ok) sp.acknowledge(member, acks, now);
          else expect(() => sp.acknowledge(member, acks, now)).toThrow(expect.objectContaining({ code: 'INVALID_RECORD_STATE' }));
        } else if (st.kind === 'tick') {
          now += st.ms;
          sp.expire(now);
          model.expire(now);
        } else if (st.kind === 'gone') {
          sp.memberGone(`m${st.member}`);
          model.memberGone(`m${st.member}`);
        } else if (st.kind === 'deadLetter') {
          const dead = sp.deadLetters().map((r) => r.offset);
          sp.deadLettered(dead);
          expect(dead).toEqual(model.deadLettered());
        } else if (st.kind === 'restart') {
          const entries = [...stored.entries].sort((a, b) => a[0] - b[0]);
          const log = [...keyOf].filter(([o]) => o >= stored.start).sort((a, b) => a[0] - b[0]).map(([offset, key]) => ({ offset, key }));
          const { snapshot, orphans } = restoreSnapshot(stored.start, entries, log);
          sp = new SharePartition(snapshot, s);
          persist(orphans);
          model.restart();
        } else {
          const to = Math.min(logEnd, sp.startOffset + st.ahead);
          sp.logStartMoved(to);
          model.logStartMoved(to);
        }
        persist();
        settle(before);
        check();
      }

      // Drain: with time past every lock and delay, one member accepts all it gets; dead records go to the dead letters.
      for (let round = 0; round < 1000 && model.unfinished() > 0; round++) {
        const before = snapshotFate();
        now += 3_600_000;
        const got = sp.acquire('drain', now, 1000).map((r) => r.offset);
        expect(got).toEqual(model.acquire('drain', now, 1000));
        const acks = got.map((offset): ShareAcknowledgement => ({ offset, type: 'accept' }));
        sp.acknowledge('drain', acks, now);
        model.acknowledge('drain', acks, now);
        const dead = sp.deadLetters().map((r) => r.offset);
        sp.deadLettered(dead);
        model.deadLettered();
        persist();
        settle(before);
        check();
      }
      expect(stored.entries.size).toBe(0); // all done: nothing left in the store but the start offset
      expect(stored.start).toBe(sp.startOffset);
      expect(model.unfinished()).toBe(0);
      expect(sp.startOffset).toBe(sp.endOffset);
      // None lost: every record taken into the window ended accepted or dead-lettered, once.
      for (const o of model.records.keys()) expect(fate.has(o), `offset ${o}`).toBe(true);
      expect(fate.size).toBe(model.records.size);
    }), { numRuns: Number(process.env.ONELOG_FUZZ_RUNS ?? 300) });
  });

  it('counts a delivery at each acquisition and dead-letters a record released at the limit; a restart keeps the counts', () => {
    const s: SharePartitionSettings = { lockMs: 1000, maxDeliveries: 2, maxInFlight: 10, ordering: 'none' };
    let sp = new SharePartition({ startOffset: 5, endOffset: 5, records: [] }, s);
    sp.extend([{ offset: 5, key: null }, { offset: 6, key: null }], 7);
    expect(sp.acquire('a', 0, 10).map((r) => [r.offset, r.deliveries])).toEqual([[5, 1], [6, 1]]);
    sp.acknowledge('a', [{ offset: 6, type: 'accept' }], 0);
    expect(() => sp.acknowledge('b', [{ offset: 5, type: 'accept' }], 0)).toThrow(/not held by member b/);
    expect(() => sp.acknowledge('a', [{ offset: 5, type: 'accept' }, { offset: 5, type: 'release' }], 0)).toThrow(/offset 5 is acknowledged twice/);
    expect(sp.inFlight()).toMatchObject([{ offset: 5, status: 'acquired', memberId: 'a' }]); // nothing of it applied
    const { set } = sp.takeChanges();
    expect(set).toEqual([[5, '[5,"q",1,0,null]'], [6, '[6,"x",1,0,null]']]); // runs: [first, [last, status, deliveries, notBefore, reason]]
    // a crash: 5 was held; it is available again, its delivery counted
    sp = new SharePartition(restoreSnapshot(5, set, [{ offset: 5, key: null }, { offset: 6, key: null }]).snapshot, s);
    expect(sp.startOffset).toBe(5);
    expect(sp.acquire('b', 0, 10).map((r) => [r.offset, r.deliveries])).toEqual([[5, 2]]);
    sp.expire(1000); // the lock ends at the second delivery: the limit
    expect(sp.deadLetters()).toMatchObject([{ offset: 5, deliveries: 2, reason: 'delivered 2 times (maxDeliveries 2), the last its acquisition lock expired' }]);
    expect(sp.startOffset).toBe(5); // not done until it is in the dead letters
    sp.deadLettered([5]);
    expect([sp.startOffset, sp.endOffset]).toEqual([7, 7]);
  });

  it('stores a batch acquired or accepted together as one run, and rewrites only the runs a change touches', () => {
    const s: SharePartitionSettings = { lockMs: 1000, maxDeliveries: 5, maxInFlight: 1000, ordering: 'none' };
    const sp = new SharePartition({ startOffset: 0, endOffset: 0, records: [] }, s);
    sp.extend(Array.from({ length: 300 }, (_, offset) => ({ offset, key: null })), 300);
    sp.acquire('a', 0, 100);
    expect(sp.takeChanges()).toEqual({ startOffset: 0, set: [[0, '[99,"q",1,0,null]']], remove: [] });
    sp.acquire('b', 0, 100);
    expect(sp.takeChanges()).toEqual({ startOffset: 0, set: [[100, '[199,"q",1,0,null]']], remove: [] });
    // b accepts 150-159 in the middle of its run: that run is written again as three
    sp.acknowledge('b', Array.from({ length: 10 }, (_, i) => ({ offset: 150 + i, type: 'accept' as const })), 0);
    expect(sp.takeChanges()).toEqual({
      startOffset: 0, set: [[100, '[149,"q",1,0,null]'], [150, '[159,"x",1,0,null]'], [160, '[199,"q",1,0,null]']], remove: [],
    });
    // a accepts all it holds: the start offset passes its run, which goes; b's runs stay
    sp.acknowledge('a', Array.from({ length: 100 }, (_, offset) => ({ offset, type: 'accept' as const })), 0);
    expect(sp.takeChanges()).toEqual({ startOffset: 100, set: [], remove: [0] });
    expect(sp.takeChanges()).toEqual({ startOffset: 100, set: [], remove: [] }); // taken
  });

  it('in key order, hands out a key\'s records one at a time while other keys run in parallel; a released record blocks only its key', () => {
    const s: SharePartitionSettings = { lockMs: 1000, maxDeliveries: 5, maxInFlight: 100, ordering: 'key' };
    const sp = new SharePartition({ startOffset: 0, endOffset: 0, records: [] }, s);
    sp.extend(['a', 'b', 'a', null, 'b', 'c', null].map((key, offset) => ({ offset, key })), 7);
    expect(sp.acquire('m1', 0, 2).map((r) => r.offset)).toEqual([0, 1]);
    expect(sp.acquire('m2', 0, 10).map((r) => r.offset)).toEqual([3, 5, 6]); // 2 waits for a@0, 4 for b@1; no key: unordered
    sp.acknowledge('m1', [{ offset: 0, type: 'release', delayMs: 500 }, { offset: 1, type: 'accept' }], 0);
    expect(sp.acquire('m2', 100, 10).map((r) => r.offset)).toEqual([4]); // a@0 waits out its delay and still holds a@2 back
    expect(sp.acquire('m1', 500, 10).map((r) => r.offset)).toEqual([0]);
    sp.acknowledge('m1', [{ offset: 0, type: 'accept' }], 500);
    expect(sp.acquire('m1', 500, 10).map((r) => r.offset)).toEqual([2]);
  });

  it('refuses settings out of bounds, naming them', () => {
    expect(() => new SharePartition({ startOffset: 0, endOffset: 0, records: [] }, { lockMs: 10, maxDeliveries: 5, maxInFlight: 10, ordering: 'none' }))
      .toThrow(/lockMs must be an integer from 1000 to 3600000, got 10/);
    expect(() => new SharePartition({ startOffset: 0, endOffset: 0, records: [] }, { lockMs: 1000, maxDeliveries: 5, maxInFlight: 10, ordering: 'fifo' as 'none' }))
      .toThrow(/ordering must be none or key/);
  });
});

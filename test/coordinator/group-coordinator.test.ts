/**
 * The group coordinator through the embedded broker's API (real data directory, SQLite catalog, LMDB
 * offsets), with a manual clock: session timeouts are crossed by advancing it, and expiry is noticed by the
 * next group request (the background expiry timer is off: `sessionCheckIntervalMs: 0`).
 */
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { ManualClock } from '../../src/common/clock.js';
import type { FetchResult } from '../../src/protocol/fetch.js';
import type { AssignedPartition, AssignorName, GroupDescription, JoinGroupRequest, MemberAssignment } from '../../src/protocol/groups.js';
import type { ResetOffsetsResult } from '../../src/protocol/offsets.js';
import type { TopicPartition } from '../../src/protocol/partitions.js';
import type { OnelogError } from '../../src/protocol/errors.js';
import type { Logs } from '../../src/log/logs.js';
import { asyncCodeOf, asyncErrorOf } from '../helpers/errors.js';
import { tmpDir } from '../helpers/tmp.js';

const T0 = Date.UTC(2024, 0, 1);
const SESSION_TIMEOUT_MS = 10_000;

let clock: ManualClock;
let broker: Broker;

async function openBroker(): Promise<void> {
  clock = new ManualClock(T0);
  broker = await Broker.open({
    dataDir: tmpDir(), clock, sessionCheckIntervalMs: 0, retentionCheckIntervalMs: 0, compactionIntervalMs: 0,
  });
}

/** Creates a topic with `perPartition` records in each partition (values `p<partition>-<i>`). */
async function topic(name: string, partitions: number, perPartition = 0): Promise<void> {
  await broker.createTopic({ topic: name, partitions });
  if (perPartition === 0) return;
  const records = [];
  for (let p = 0; p < partitions; p++) {
    for (let i = 0; i < perPartition; i++) records.push({ key: null, value: Buffer.from(`p${p}-${i}`), partition: p });
  }
  await broker.produce({ topic: name, records });
}

function join(groupId: string, topics: string[], extra: Partial<JoinGroupRequest> = {}): Promise<MemberAssignment> {
  return broker.joinGroup({ groupId, topics, sessionTimeoutMs: SESSION_TIMEOUT_MS, startPolicy: 'earliest', ...extra });
}

/** A heartbeat at the member's generation reporting `owned` (default: what its last answer assigned). */
function heartbeat(m: MemberAssignment, owned: TopicPartition[] = tps(m)): Promise<MemberAssignment> {
  return broker.heartbeat({ groupId: m.groupId, memberId: m.memberId, generationId: m.generationId, owned });
}

const tps = (m: MemberAssignment): TopicPartition[] => m.assignment.map((p) => ({ topic: p.topic, partition: p.partition }));
const partitionsOf = (m: MemberAssignment): number[] => m.assignment.map((p) => p.partition).sort((a, b) => a - b);
const on = (t: string, ...partitions: number[]): TopicPartition[] => partitions.map((partition) => ({ topic: t, partition }));
const entry = (m: MemberAssignment, partition: number): AssignedPartition | undefined => m.assignment.find((p) => p.partition === partition);

/** Committed offset per partition of `t` (null: never committed). */
async function committed(groupId: string, t: string): Promise<Array<number | null>> {
  const d = await broker.describeGroup(groupId);
  return d.subscriptions.find((s) => s.topic === t)!.partitions.map((p) => p.committedOffset);
}

function commit(m: MemberAssignment | null, t: string, offsets: Record<number, number>, generationId = m?.generationId) {
  return broker.commitOffsets({
    groupId: m?.groupId ?? 'g', topic: t,
    ...(m ? { memberId: m.memberId, generationId } : {}),
    offsets: Object.entries(offsets).map(([p, offset]) => ({ partition: Number(p), offset })),
  });
}

function fetch(m: MemberAssignment, t: string, partitions: Record<number, number>, generationId = m.generationId): Promise<FetchResult> {
  return broker.fetch({
    topic: t, groupId: m.groupId, memberId: m.memberId, generationId,
    partitions: Object.entries(partitions).map(([p, offset]) => ({ partition: Number(p), offset })),
  });
}

/** Whether `p` has settled by the time every group request queued before now has run. */
function tracked<T>(p: Promise<T>): { settled: () => boolean; promise: Promise<T> } {
  let done = false;
  p.then(() => (done = true), () => (done = true));
  return { settled: () => done, promise: p };
}

describe('group coordinator', () => {
  beforeEach(openBroker);
  afterEach(() => broker.close());

  describe('join, heartbeat, leave', () => {
    it('two members end with 3+3 after the owners\' heartbeats; states and generations follow every change', async () => {
      await topic('six', 6, 2);
      expect(await asyncCodeOf(broker.describeGroup('g'))).toBe('UNKNOWN_GROUP');
      await broker.subscribe({ groupId: 'g', topic: 'six', startPolicy: 'earliest' });
      expect(await broker.describeGroup('g')).toMatchObject({ state: 'Empty', generationId: 0, members: [] });

      // A first member goes Empty -> Reconciling -> Stable within its join: nobody else holds anything.
      const a = await join('g', ['six'], { clientId: 'alpha', commitMode: 'before-processing' });
      expect(a).toMatchObject({ generationId: 1, state: 'Stable', heartbeatIntervalMs: 3000 });
      expect(a.memberId).toMatch(/^alpha-/);
      expect(a.assignment).toEqual([0, 1, 2, 3, 4, 5].map((p) => ({ topic: 'six', partition: p, offset: 0 })));

      const b = await join('g', ['six'], { clientId: 'beta' });
      expect(b).toMatchObject({ generationId: 2, state: 'Reconciling', assignment: [] }); // a still holds everything
      let d = await broker.describeGroup('g');
      expect(d).toMatchObject({ state: 'Reconciling', generationId: 2, assignor: 'sticky' });
      expect(d.members.map((m) => m.clientId).sort()).toEqual(['alpha', 'beta']);

      const a1 = await heartbeat(a);
      expect(a1.generationId).toBe(2);
      expect(a1.assignment).toHaveLength(3);
      for (const p of a1.assignment) expect(p.offset).toBeUndefined(); // kept, not new: no start offset
      const kept = partitionsOf(a1);
      const moving = [0, 1, 2, 3, 4, 5].filter((p) => !kept.includes(p));
      // Until a lets go, the moving partitions are still a's (describe shows what each member holds).
      d = await broker.describeGroup('g');
      expect(d.members.find((m) => m.memberId === a.memberId)!.assignment).toHaveLength(6);
      expect(d.subscriptions[0]!.partitions.every((p) => p.memberId === a.memberId)).toBe(true);
      expect((await heartbeat(b)).assignment).toEqual([]);

      const a2 = await heartbeat(a1); // reports only the kept partitions: the moving ones are free
      expect(partitionsOf(a2)).toEqual(kept);
      expect(a2.state).toBe('Reconciling');
      const b1 = await heartbeat(b);
      expect(b1.assignment).toEqual(moving.map((p) => ({ topic: 'six', partition: p, offset: 0 })));
      expect(b1.state).toBe('Stable');

      d = await broker.describeGroup('g');
      expect(d.state).toBe('Stable');
      expect(d.generationId).toBe(2);
      const members = new Map(d.members.map((m) => [m.clientId, m]));
      expect(members.get('alpha')).toMatchObject({
        memberId: a.memberId, commitMode: 'before-processing', generationId: 2, sessionTimeoutMs: SESSION_TIMEOUT_MS,
        lastHeartbeatAt: T0, assignment: on('six', ...kept),
      });
      expect(members.get('beta')).toMatchObject({
        memberId: b.memberId, commitMode: 'after-processing', generationId: 2, assignment: on('six', ...moving),
      });
      for (const p of d.subscriptions[0]!.partitions) {
        expect(p.memberId).toBe(kept.includes(p.partition) ? a.memberId : b.memberId);
      }

      await broker.leaveGroup({ groupId: 'g', memberId: b.memberId });
      d = await broker.describeGroup('g');
      expect(d).toMatchObject({ state: 'Reconciling', generationId: 3 });
      for (const p of moving) expect(d.subscriptions[0]!.partitions[p]!.memberId).toBeNull(); // free at once
      const a3 = await heartbeat(a2);
      expect(a3).toMatchObject({ generationId: 3, state: 'Stable' });
      expect(partitionsOf(a3)).toEqual([0, 1, 2, 3, 4, 5]);
      for (const p of moving) expect(entry(a3, p)!.offset).toBe(0);

      await broker.leaveGroup({ groupId: 'g', memberId: a.memberId });
      await broker.leaveGroup({ groupId: 'g', memberId: a.memberId }); // leaving twice is fine
      d = await broker.describeGroup('g');
      expect(d).toMatchObject({ state: 'Empty', generationId: 4, members: [] });
      expect(d.subscriptions[0]!.partitions.every((p) => p.memberId === null)).toBe(true);
      expect(await asyncCodeOf(heartbeat(a3))).toBe('UNKNOWN_MEMBER_ID');
    });

    it('refuses a member asking for another assignor than the live members use', async () => {
      await topic('six', 6);
      await join('g', ['six'], { assignor: 'range' });
      expect(await asyncCodeOf(join('g', ['six'], { assignor: 'sticky' }))).toBe('INCONSISTENT_GROUP_PROTOCOL');
      expect((await broker.describeGroup('g')).members).toHaveLength(1);
    });
  });

  describe('incremental rebalance', () => {
    it('a member keeps fetching and committing the partitions that stay; the moving ones reach the new member only after release', async () => {
      await topic('six', 6, 5);
      const a = await join('g', ['six']);
      await commit(a, 'six', { 0: 1, 1: 1, 2: 1, 3: 1, 4: 1, 5: 1 });
      const b = await join('g', ['six']);
      const all = { 0: 1, 1: 1, 2: 1, 3: 1, 4: 1, 5: 1 };

      // Not told yet: a's generation-1 requests still work on everything.
      expect((await fetch(a, 'six', all)).generationId).toBe(2); // tells a to heartbeat
      await commit(a, 'six', { 0: 2, 1: 2, 2: 2, 3: 2, 4: 2, 5: 2 });

      const a1 = await heartbeat(a);
      const kept = partitionsOf(a1);
      const moving = [0, 1, 2, 3, 4, 5].filter((p) => !kept.includes(p));
      expect(kept).toHaveLength(3);
      // A fetch sent before the answer arrived carries the previous generation: still accepted.
      const crossed = await fetch(a1, 'six', all, a.generationId);
      expect(crossed.partitions.map((p) => [p.records.length, p.error])).toEqual(Array(6).fill([4, undefined]));
      expect(await asyncCodeOf(fetch(a1, 'six', all, a.generationId - 1))).toBe('ILLEGAL_GENERATION');
      // Revoked but not released: a may still commit what it processed of the moving partitions.
      await commit(a1, 'six', { [kept[0]!]: 3, [moving[0]!]: 4 });
      // The new member cannot touch them yet.
      expect(await asyncCodeOf(fetch(b, 'six', { [moving[0]!]: 0 }))).toBe('NOT_ASSIGNED');
      expect(await asyncCodeOf(commit(b, 'six', { [moving[0]!]: 5 }))).toBe('NOT_ASSIGNED');
      const b0 = await heartbeat(b);
      expect(b0.assignment).toEqual([]);

      const a2 = await heartbeat(a1, tps(a1)); // lets the moving partitions go
      expect(partitionsOf(a2)).toEqual(kept);
      expect(await asyncCodeOf(commit(a2, 'six', { [moving[0]!]: 5 }))).toBe('NOT_ASSIGNED');
      expect(await asyncCodeOf(fetch(a2, 'six', { [moving[0]!]: 4 }))).toBe('NOT_ASSIGNED');
      // Staying partitions flow on, across the whole rebalance.
      const stay = await fetch(a2, 'six', { [kept[0]!]: 3 });
      expect(stay.partitions[0]!.records.map((r) => r.offset)).toEqual([3, 4]);
      await commit(a2, 'six', { [kept[0]!]: 5 });

      const b1 = await heartbeat(b0);
      expect(b1.assignment).toEqual(moving.map((p) => ({ topic: 'six', partition: p, offset: p === moving[0] ? 4 : 2 })));
      expect((await fetch(b1, 'six', { [moving[0]!]: 4 })).partitions[0]!.records.map((r) => r.offset)).toEqual([4]);
      const c = await committed('g', 'six');
      expect(c[kept[0]!]).toBe(5);
      expect(c[moving[0]!]).toBe(4);
    });

    for (const assignor of ['sticky', 'range', 'round-robin'] as const) {
      it(`property (${assignor}): no partition is held by two members at any step; two honest rounds settle Stable`, async () => {
        await topic('a', 3);
        await topic('b', 4);
        let run = 0;
        await fc.assert(
          fc.asyncProperty(fc.array(commandArb, { maxLength: 14 }), async (commands) => {
            await brokerProperty(`${assignor}-${run++}`, assignor, commands);
          }),
          { numRuns: 60 },
        );
      });
    }
  });

  describe('session timeout', () => {
    it('removes a member that stops heartbeating; its partitions go to the others in the same answer', async () => {
      await topic('six', 6, 3);
      const a = await join('g', ['six']);
      const b = await join('g', ['six']);
      let a1 = await heartbeat(a);
      a1 = await heartbeat(a1);
      const b1 = await heartbeat(b);
      expect(b1.state).toBe('Stable');
      await commit(b1, 'six', Object.fromEntries(partitionsOf(b1).map((p) => [p, 2])));

      clock.advance(6_000);
      a1 = await heartbeat(a1);
      clock.advance(SESSION_TIMEOUT_MS - 6_000); // b silent for exactly its timeout: still a member
      a1 = await heartbeat(a1);
      expect((await broker.describeGroup('g')).members).toHaveLength(2);
      clock.advance(1);
      const a2 = await heartbeat(a1); // notices b's expiry
      expect(a2.generationId).toBe(3);
      expect(a2.state).toBe('Stable');
      expect(partitionsOf(a2)).toEqual([0, 1, 2, 3, 4, 5]);
      for (const p of partitionsOf(b1)) expect(entry(a2, p)!.offset).toBe(2); // b's committed offsets
      const d = await broker.describeGroup('g');
      expect(d.members.map((m) => m.memberId)).toEqual([a.memberId]);
      expect(d.generationId).toBe(3);

      const before = await committed('g', 'six');
      expect(await asyncCodeOf(heartbeat(b1))).toBe('UNKNOWN_MEMBER_ID');
      expect(await asyncCodeOf(commit(b1, 'six', { [partitionsOf(b1)[0]!]: 3 }))).toBe('UNKNOWN_MEMBER_ID');
      expect(await committed('g', 'six')).toEqual(before);
    });

    it('removes a member that keeps heartbeating but never releases a revoked partition within its session timeout', async () => {
      await topic('six', 6);
      const a = await join('g', ['six']);
      clock.advance(1_000);
      const b = await join('g', ['six']);
      let a1 = await heartbeat(a, tps(a)); // told to revoke three at T0 + 1 s
      let b1 = b;
      for (let i = 0; i < 2; i++) {
        clock.advance(4_500);
        a1 = await heartbeat(a1, tps(a)); // still reports all six
        b1 = await heartbeat(b1);
        expect(b1.assignment).toEqual([]);
      }
      clock.advance(1_001); // 10.001 s after the revocation
      b1 = await heartbeat(b1);
      expect(partitionsOf(b1)).toEqual([0, 1, 2, 3, 4, 5]);
      expect(await asyncCodeOf(heartbeat(a1, tps(a)))).toBe('UNKNOWN_MEMBER_ID');
    });

    it('bumps the generation once per expired member', async () => {
      await topic('six', 6);
      await join('g', ['six']);
      await join('g', ['six']);
      const c = await join('g', ['six'], { sessionTimeoutMs: 60_000 });
      expect((await broker.describeGroup('g')).generationId).toBe(3);
      clock.advance(SESSION_TIMEOUT_MS + 1);
      const c1 = await heartbeat(c);
      expect(c1.generationId).toBe(5);
      expect((await broker.describeGroup('g')).members.map((m) => m.memberId)).toEqual([c.memberId]);
    });
  });

  describe('fencing', () => {
    it('refuses commits from unknown members, stale generations, other members\' partitions, and anonymous commits while members live; commits nothing then', async () => {
      await topic('six', 6, 5);
      const a = await join('g', ['six']);
      const b = await join('g', ['six']);
      const a1 = await heartbeat(a);
      const a2 = await heartbeat(a1);
      const b1 = await heartbeat(b);
      const mine = partitionsOf(a2);
      const theirs = partitionsOf(b1);
      await commit(a2, 'six', { [mine[0]!]: 1 });
      const before = await committed('g', 'six');

      expect(await asyncCodeOf(commit({ ...a2, memberId: 'nobody' }, 'six', { [mine[0]!]: 2 }))).toBe('UNKNOWN_MEMBER_ID');
      const stale = await asyncErrorOf(commit(a2, 'six', { [mine[0]!]: 2 }, a.generationId));
      expect(stale.code).toBe('ILLEGAL_GENERATION');
      expect(stale.context).toMatchObject({ groupId: 'g', memberId: a.memberId, generationId: 1, currentGenerationId: 2 });
      const notMine = await asyncErrorOf(commit(a2, 'six', { [mine[0]!]: 2, [theirs[0]!]: 2 }));
      expect(notMine.code).toBe('NOT_ASSIGNED');
      expect(notMine.context).toMatchObject({ groupId: 'g', memberId: a.memberId, topic: 'six', partition: theirs[0] });
      expect(await asyncCodeOf(commit(null, 'six', { [mine[0]!]: 2 }))).toBe('UNKNOWN_MEMBER_ID');
      expect(await asyncCodeOf(commit({ ...a2, groupId: 'other' }, 'six', { 0: 2 }))).toBe('UNKNOWN_MEMBER_ID');
      expect(await committed('g', 'six')).toEqual(before);

      // Fetches are fenced the same way.
      expect(await asyncCodeOf(fetch(a2, 'six', { [theirs[0]!]: 0 }))).toBe('NOT_ASSIGNED');
      expect(await asyncCodeOf(fetch({ ...a2, memberId: 'nobody' }, 'six', { [mine[0]!]: 0 }))).toBe('UNKNOWN_MEMBER_ID');
      expect(await asyncCodeOf(fetch(a2, 'six', { [mine[0]!]: 0 }, 7))).toBe('ILLEGAL_GENERATION');
      expect(await asyncCodeOf(broker.fetch({ topic: 'six', memberId: a.memberId, partitions: [{ partition: 0, offset: 0 }] })))
        .toBe('INVALID_REQUEST');
      const previous = await fetch(a2, 'six', { [mine[0]!]: 1 }, a.generationId); // crossed a heartbeat answer
      expect(previous.partitions[0]!.records).toHaveLength(4);

      await broker.leaveGroup({ groupId: 'g', memberId: a.memberId });
      await broker.leaveGroup({ groupId: 'g', memberId: b.memberId });
      expect(await asyncCodeOf(commit(a2, 'six', { [mine[0]!]: 2 }))).toBe('UNKNOWN_MEMBER_ID');
      await commit(null, 'six', { [theirs[0]!]: 3 }); // an empty group takes a standalone consumer's commit
      expect((await committed('g', 'six'))[theirs[0]!]).toBe(3);
    });

    it('takes a commit above the high watermark (as Kafka); refuses a negative one (INVALID_OFFSET), committing nothing', async () => {
      await topic('t', 2, 5);
      const a = await join('g', ['t']);
      await commit(a, 't', { 0: 5, 1: 2 }); // the high watermark itself is fine
      await commit(a, 't', { 0: 5, 1: 6 }); // above it too
      await commit(a, 't', { 0: 5, 1: 2 });
      expect(await asyncCodeOf(commit(a, 't', { 0: 4, 1: -1 }))).toBe('INVALID_OFFSET');
      expect(await asyncCodeOf(commit(a, 't', { 0: 1.5 }))).toBe('INVALID_OFFSET');
      expect(await asyncCodeOf(commit(a, 't', { 2: 1 }))).toBe('UNKNOWN_PARTITION');
      expect(await committed('g', 't')).toEqual([5, 2]);
    });
  });

  describe('positions', () => {
    it('starts a new group at earliest (the log start) or latest (the high watermark), committed at once', async () => {
      await topic('t', 2, 5);
      await broker.deleteRecords({ topic: 't', partition: 0, beforeOffset: 2 });
      const e = await join('early', ['t'], { startPolicy: 'earliest' });
      expect(e.assignment).toEqual([{ topic: 't', partition: 0, offset: 2 }, { topic: 't', partition: 1, offset: 0 }]);
      expect(await committed('early', 't')).toEqual([2, 0]);
      const l = await join('late', ['t'], { startPolicy: 'latest' });
      expect(l.assignment).toEqual([{ topic: 't', partition: 0, offset: 5 }, { topic: 't', partition: 1, offset: 5 }]);
      expect(await committed('late', 't')).toEqual([5, 5]);
      expect((await broker.describeGroup('late')).subscriptions[0]).toMatchObject({ startPolicy: 'latest', onOutOfRange: 'pause' });
    });

    it('pauses a partition the group never read when records are deleted before it reads them (its start was fixed when assigned)', async () => {
      await topic('t', 2, 6);
      const a = await join('g', ['t'], { startPolicy: 'earliest' });
      await broker.leaveGroup({ groupId: 'g', memberId: a.memberId }); // read nothing, committed nothing by hand
      await broker.deleteRecords({ topic: 't', partition: 0, beforeOffset: 4 });
      const b = await join('g', ['t']);
      expect(entry(b, 0)!.error).toMatchObject({ code: 'OFFSET_OUT_OF_RANGE', committedOffset: 0, logStartOffset: 4, recordsLost: 4 });
      expect(entry(b, 1)).toEqual({ topic: 't', partition: 1, offset: 0 });
      expect((await broker.describeGroup('g')).alerts[0]).toMatchObject({ kind: 'offset-out-of-range', context: { recordsLost: 4 } });
    });

    it('pauses a partition whose committed offset fell below the log start; only an executed reset resumes it', async () => {
      await topic('t', 3, 6);
      await commit(null, 't', { 0: 1, 1: 1, 2: 1 });
      await broker.deleteRecords({ topic: 't', partition: 0, beforeOffset: 4 });

      const a = await join('g', ['t']);
      expect(entry(a, 0)!.offset).toBeUndefined();
      expect(entry(a, 0)!.error).toMatchObject({
        code: 'OFFSET_OUT_OF_RANGE', paused: true, groupId: 'g', topic: 't', partition: 0,
        committedOffset: 1, logStartOffset: 4, recordsLost: 3,
      });
      expect(entry(a, 1)).toEqual({ topic: 't', partition: 1, offset: 1 });
      expect(entry(a, 2)).toEqual({ topic: 't', partition: 2, offset: 1 });
      let d = await broker.describeGroup('g');
      const p0 = d.subscriptions[0]!.partitions[0]!;
      expect(p0).toMatchObject({ committedOffset: 1, logStartOffset: 4, memberId: a.memberId });
      expect(p0.paused).toMatchObject({ code: 'OFFSET_OUT_OF_RANGE', recordsLost: 3 });
      expect(p0.paused!.message).toContain('below the log start offset 4');
      expect(d.subscriptions[0]!.partitions[1]!.paused).toBeNull();
      // The delete raised data-lost at once; the pause raised offset-out-of-range.
      expect(d.alerts.map((x) => [x.kind, x.resolvedAt])).toEqual([['offset-out-of-range', null], ['data-lost', null]]);
      expect(d.alerts[0]).toMatchObject({
        kind: 'offset-out-of-range', topic: 't', partition: 0, createdAt: T0,
        context: { committedOffset: 1, logStartOffset: 4 },
      });
      // The other partitions flow.
      const f = await fetch(a, 't', { 1: 1, 2: 1 });
      expect(f.partitions.map((p) => p.records.length)).toEqual([5, 5]);

      // Neither a heartbeat, a rejoin nor a dry run lifts the pause.
      const a1 = await heartbeat(a);
      expect(partitionsOf(a1)).toEqual([0, 1, 2]);
      await broker.leaveGroup({ groupId: 'g', memberId: a.memberId });
      const b = await join('g', ['t']);
      expect(entry(b, 0)!.error).toMatchObject({ code: 'OFFSET_OUT_OF_RANGE', paused: true });
      const dry = await broker.resetOffsets({ groupId: 'g', topic: 't', partition: 0, spec: { to: 'earliest' } });
      expect(dry).toEqual({ groupId: 'g', topic: 't', executed: false, partitions: [{ partition: 0, currentOffset: 1, newOffset: 4 }] });
      expect((await broker.describeGroup('g')).subscriptions[0]!.partitions[0]!.paused).not.toBeNull();

      // An executed reset, with b live: p0 is revoked, b lets go, the reset applies, b gets p0 at the new offset.
      const reset = tracked(broker.resetOffsets({
        groupId: 'g', topic: 't', partition: 0, spec: { to: 'earliest' }, execute: true, requestedBy: 'ops',
      }));
      const b1 = await heartbeat(b);
      expect(partitionsOf(b1)).toEqual([1, 2]);
      expect(reset.settled()).toBe(false);
      const b2 = await heartbeat(b1);
      expect(reset.settled()).toBe(true);
      expect((await reset.promise).partitions).toEqual([{ partition: 0, currentOffset: 1, newOffset: 4 }]);
      expect(entry(b2, 0)).toEqual({ topic: 't', partition: 0, offset: 4 });
      expect(b2.state).toBe('Stable');
      d = await broker.describeGroup('g');
      expect(d.subscriptions[0]!.partitions[0]).toMatchObject({ paused: null, committedOffset: 4, memberId: b.memberId, state: 'lagging' });
      expect(d.alerts.map((x) => [x.kind, x.resolvedAt])).toEqual([['offset-out-of-range', T0], ['data-lost', T0]]);
      expect(d.resets[0]).toMatchObject({ topic: 't', partition: 0, oldOffset: 1, newOffset: 4, spec: 'to-earliest', requestedBy: 'ops' });
      expect((await fetch(b2, 't', { 0: 4 })).partitions[0]!.records.map((r) => r.offset)).toEqual([4, 5]);
    });

    it('jumps instead of pausing with onOutOfRange: earliest, recording the records skipped', async () => {
      await topic('t', 2, 6);
      await commit(null, 't', { 0: 1, 1: 1 });
      await broker.deleteRecords({ topic: 't', partition: 0, beforeOffset: 4 });
      const a = await join('g', ['t'], { onOutOfRange: 'earliest' });
      expect(a.assignment).toEqual([{ topic: 't', partition: 0, offset: 4 }, { topic: 't', partition: 1, offset: 1 }]);
      const d = await broker.describeGroup('g');
      expect(d.subscriptions[0]).toMatchObject({ onOutOfRange: 'earliest' });
      expect(d.subscriptions[0]!.partitions.map((p) => [p.committedOffset, p.paused])).toEqual([[4, null], [1, null]]);
      // The delete raised data-lost; the jump, born resolved, resolved it.
      expect(d.alerts.map((x) => [x.kind, x.resolvedAt])).toEqual([['offset-jump', T0], ['data-lost', T0]]);
      expect(d.alerts[0]).toMatchObject({
        kind: 'offset-jump', topic: 't', partition: 0,
        context: { committedOffset: 1, logStartOffset: 4, newOffset: 4, recordsSkipped: 3, policy: 'earliest' },
      });
    });

    it('pauses a partition on the fetch of a member whose position fell below the log start mid-consumption', async () => {
      await topic('t', 2, 6);
      const a = await join('g', ['t']);
      expect((await fetch(a, 't', { 0: 0, 1: 0 }, a.generationId)).partitions[0]!.records).toHaveLength(6);
      await commit(a, 't', { 0: 2, 1: 2 });
      await broker.deleteRecords({ topic: 't', partition: 0, beforeOffset: 5 });
      const f = await fetch(a, 't', { 0: 2, 1: 2 });
      expect(f.partitions[0]).toMatchObject({
        records: [], nextOffset: 2,
        error: { code: 'OFFSET_OUT_OF_RANGE', paused: true, committedOffset: 2, logStartOffset: 5, recordsLost: 3 },
      });
      expect(f.partitions[1]!.error).toBeUndefined();
      expect(f.partitions[1]!.records.map((r) => r.offset)).toEqual([2, 3, 4, 5]);
      const d = await broker.describeGroup('g');
      expect(d.subscriptions[0]!.partitions[0]!.paused).toMatchObject({ code: 'OFFSET_OUT_OF_RANGE' });
      expect(d.alerts.map((x) => x.kind)).toEqual(['offset-out-of-range', 'data-lost']);
      expect((await committed('g', 't'))[0]).toBe(2); // nothing moved
    });

    it('jumps on a member\'s fetch with onOutOfRange: latest (nextOffset moves, no error)', async () => {
      await topic('t', 1, 6);
      const a = await join('g', ['t'], { onOutOfRange: 'latest' });
      await broker.deleteRecords({ topic: 't', partition: 0, beforeOffset: 3 });
      const f = await fetch(a, 't', { 0: 1 });
      expect(f.partitions[0]).toMatchObject({ records: [], nextOffset: 6 });
      expect(f.partitions[0]!.error).toBeUndefined();
      expect((await committed('g', 't'))[0]).toBe(6);
      expect((await broker.describeGroup('g')).alerts[0]).toMatchObject({ kind: 'offset-jump', context: { recordsSkipped: 5 } });
    });

    it('answers a fetch sent ahead that is out of range with the error, and neither jumps nor pauses', async () => {
      await topic('t', 1, 6);
      const a = await join('g', ['t'], { onOutOfRange: 'latest' });
      await commit(a, 't', { 0: 1 });
      await broker.deleteRecords({ topic: 't', partition: 0, beforeOffset: 3 });
      const f = await broker.fetch({
        topic: 't', groupId: 'g', memberId: a.memberId, generationId: a.generationId, partitions: [{ partition: 0, offset: 1 }], ahead: true,
      });
      expect(f.partitions[0]).toMatchObject({ records: [], nextOffset: 1, error: { code: 'OFFSET_OUT_OF_RANGE' } });
      expect((await committed('g', 't'))[0]).toBe(1);
      const d = await broker.describeGroup('g');
      expect(d.subscriptions[0]!.partitions[0]!.paused).toBeNull();
      expect(d.alerts.filter((x) => x.kind === 'offset-jump')).toEqual([]);
      // The member's own fetch then applies the policy.
      expect((await fetch(a, 't', { 0: 1 })).partitions[0]).toMatchObject({ records: [], nextOffset: 6 });
      expect((await committed('g', 't'))[0]).toBe(6);
    });
  });

  describe('offset resets', () => {
    it('waits for the owner to let go of the partitions, applies the reset, then gives them back at the new offsets', async () => {
      await topic('t', 3, 10);
      const a = await join('g', ['t']);
      await commit(a, 't', { 0: 8, 1: 9, 2: 10 });
      const reset = tracked(broker.resetOffsets({
        groupId: 'g', topic: 't', spec: { to: 'offset', offset: 2 }, execute: true, requestedBy: 'alice@host',
      }));
      const a1 = await heartbeat(a); // still reports everything: told that all three are revoked
      expect(a1.assignment).toEqual([]);
      expect(a1.generationId).toBe(2);
      expect(reset.settled()).toBe(false);
      expect(await committed('g', 't')).toEqual([8, 9, 10]); // not applied while a holds them
      await commit(a1, 't', { 0: 9 }); // a commits what it processed before letting go
      expect((await broker.describeGroup('g')).resets).toEqual([]);

      const a2 = await heartbeat(a1, []); // lets go
      expect(reset.settled()).toBe(true);
      const result: ResetOffsetsResult = await reset.promise;
      expect(result).toEqual({
        groupId: 'g', topic: 't', executed: true,
        partitions: [0, 1, 2].map((p) => ({ partition: p, currentOffset: [9, 9, 10][p], newOffset: 2 })),
      });
      expect(a2.assignment).toEqual([0, 1, 2].map((p) => ({ topic: 't', partition: p, offset: 2 })));
      expect(a2.state).toBe('Stable');
      expect(await committed('g', 't')).toEqual([2, 2, 2]);
      const d: GroupDescription = await broker.describeGroup('g');
      expect(d.resets.map((r) => [r.partition, r.oldOffset, r.newOffset, r.spec, r.requestedBy, r.executedAt]).sort()).toEqual([
        [0, 9, 2, 'to-offset 2', 'alice@host', T0],
        [1, 9, 2, 'to-offset 2', 'alice@host', T0],
        [2, 10, 2, 'to-offset 2', 'alice@host', T0],
      ]);
    });

    it('resets one partition of a live member, leaving the others in its hands', async () => {
      await topic('t', 3, 4);
      const a = await join('g', ['t']);
      await commit(a, 't', { 0: 4, 1: 4, 2: 4 });
      const reset = broker.resetOffsets({ groupId: 'g', topic: 't', partition: 1, spec: { to: 'shift', shiftBy: -3 }, execute: true });
      const a1 = await heartbeat(a);
      expect(partitionsOf(a1)).toEqual([0, 2]);
      await commit(a1, 't', { 0: 3 }); // the rest stays usable meanwhile
      const a2 = await heartbeat(a1);
      expect((await reset).partitions).toEqual([{ partition: 1, currentOffset: 4, newOffset: 1 }]);
      expect(a2.assignment).toEqual([{ topic: 't', partition: 0 }, { topic: 't', partition: 1, offset: 1 }, { topic: 't', partition: 2 }]);
      expect(await committed('g', 't')).toEqual([3, 1, 4]);
    });

    it('applies a reset of partitions no member holds at once, in order with the group\'s other requests', async () => {
      await topic('t', 2, 4);
      await topic('u', 1, 4);
      await commit(null, 't', { 0: 4, 1: 4 });
      const a = await join('g', ['u']); // the live member reads only u: nobody holds t
      const reset = tracked(broker.resetOffsets({ groupId: 'g', topic: 't', spec: { to: 'earliest' }, execute: true }));
      const a1 = await heartbeat(a); // queued behind the reset
      expect(reset.settled()).toBe(true);
      expect(await committed('g', 't')).toEqual([0, 0]);
      expect(a1.state).toBe('Stable');
      expect((await broker.describeGroup('g')).state).toBe('Stable');
    });

    it('applies a reset waiting on a member as soon as that member\'s expiry is noticed, by any group request', async () => {
      await topic('t', 2, 4);
      const a = await join('g', ['t']);
      await commit(a, 't', { 0: 4, 1: 4 });
      const reset = tracked(broker.resetOffsets({ groupId: 'g', topic: 't', spec: { to: 'earliest' }, execute: true }));
      await heartbeat(a); // told to let go; then a dies
      clock.advance(SESSION_TIMEOUT_MS + 1);
      const b = await join('g', ['t']); // notices a's expiry: nothing holds the partitions any more
      expect(reset.settled()).toBe(true);
      expect((await reset.promise).partitions.map((p) => p.newOffset)).toEqual([0, 0]);
      expect(b.assignment).toEqual([{ topic: 't', partition: 0, offset: 0 }, { topic: 't', partition: 1, offset: 0 }]);
    });

    it('does not leave a reset hanging when the last holder\'s expiry is noticed by a commit or a delete', async () => {
      await topic('t', 1, 4);
      const a = await join('g', ['t']);
      await commit(a, 't', { 0: 4 });
      const first = tracked(broker.resetOffsets({ groupId: 'g', topic: 't', spec: { to: 'offset', offset: 1 }, execute: true }));
      clock.advance(SESSION_TIMEOUT_MS + 1);
      await commit(null, 't', { 0: 3 }); // a's expiry noticed here: the group is empty, the reset is due
      expect(first.settled()).toBe(true);
      expect((await first.promise).executed).toBe(true);
      expect(await committed('g', 't')).toEqual([3]); // the commit came after the reset

      const b = await join('g', ['t']);
      const second = tracked(broker.resetOffsets({ groupId: 'g', topic: 't', spec: { to: 'earliest' }, execute: true }));
      clock.advance(SESSION_TIMEOUT_MS + 1);
      await broker.deleteGroup('g');
      expect(second.settled()).toBe(true);
      expect(b.memberId).not.toBe('');
    });

    it('applies a waiting reset when the holder itself heartbeats too late and is refused', async () => {
      await topic('t', 1, 4);
      const a = await join('g', ['t']);
      const reset = tracked(broker.resetOffsets({ groupId: 'g', topic: 't', spec: { to: 'earliest' }, execute: true }));
      clock.advance(SESSION_TIMEOUT_MS + 1);
      expect(await asyncCodeOf(heartbeat(a))).toBe('UNKNOWN_MEMBER_ID'); // its expiry is noticed on its own request
      expect(reset.settled()).toBe(true);
      expect((await reset.promise).executed).toBe(true);
      expect((await broker.describeGroup('g')).state).toBe('Empty');
    });

    it('restores a saved checkpoint; a missing name is UNKNOWN_CHECKPOINT', async () => {
      await topic('t', 2, 10);
      await topic('u', 1, 10);
      await commit(null, 't', { 0: 3, 1: 4 });
      await commit(null, 'u', { 0: 5 });
      clock.advance(1_000);
      const saved = await broker.saveCheckpoint({ groupId: 'g', name: 'before-deploy' });
      expect(saved).toMatchObject({ groupId: 'g', name: 'before-deploy', createdAt: T0 + 1_000 });
      expect(saved.offsets).toEqual([{ topic: 't', partition: 0, offset: 3 }, { topic: 't', partition: 1, offset: 4 }, { topic: 'u', partition: 0, offset: 5 }]);
      await commit(null, 't', { 0: 9, 1: 10 });
      await commit(null, 'u', { 0: 8 });

      expect(await asyncCodeOf(broker.resetOffsets({ groupId: 'g', topic: 't', spec: { to: 'checkpoint', name: 'nope' } }))).toBe('UNKNOWN_CHECKPOINT');
      expect(await asyncCodeOf(broker.resetOffsets({ groupId: 'g', topic: 't', spec: { to: 'checkpoint', name: 'nope' }, execute: true })))
        .toBe('UNKNOWN_CHECKPOINT');
      expect(await committed('g', 't')).toEqual([9, 10]);

      const a = await join('g', ['t', 'u']); // with a live member: applied at its safe point
      const reset = broker.resetOffsets({ groupId: 'g', topic: 't', spec: { to: 'checkpoint', name: 'before-deploy' }, execute: true });
      const a1 = await heartbeat(a);
      expect(a1.assignment).toEqual([{ topic: 'u', partition: 0 }]);
      const a2 = await heartbeat(a1);
      expect((await reset).partitions).toEqual([{ partition: 0, currentOffset: 9, newOffset: 3 }, { partition: 1, currentOffset: 10, newOffset: 4 }]);
      expect(a2.assignment).toEqual([{ topic: 't', partition: 0, offset: 3 }, { topic: 't', partition: 1, offset: 4 }, { topic: 'u', partition: 0 }]);
      expect(await committed('g', 't')).toEqual([3, 4]);
      expect(await committed('g', 'u')).toEqual([8]); // another topic's reset leaves u alone
      const d = await broker.describeGroup('g');
      expect(d.checkpoints).toEqual([{ name: 'before-deploy', createdAt: T0 + 1_000, topics: ['t', 'u'] }]);
      expect(d.resets[0]).toMatchObject({ spec: 'to-checkpoint before-deploy', requestedBy: 'unknown' });
    });
  });

  describe('order of a group\'s requests', () => {
    /** Holds the next topic refresh (what a cluster broker waits for before a request) until `release` is called. */
    function holdNextRefresh(): { release: () => void } {
      const logs = (broker as unknown as { parts: { logs: Logs } }).parts.logs;
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      vi.spyOn(logs, 'refresh').mockImplementationOnce(() => held);
      return { release };
    }

    it('a commit whose topic refresh is slow keeps its place: the leave sent after it comes after it', async () => {
      await topic('t', 1, 10);
      const m = await heartbeat(await join('g', ['t']));
      const { release } = holdNextRefresh();
      const committing = broker.commitOffsets({ groupId: 'g', topic: 't', memberId: m.memberId, generationId: m.generationId, offsets: [{ partition: 0, offset: 7 }] });
      const leaving = broker.leaveGroup({ groupId: 'g', memberId: m.memberId });
      let left = false;
      void leaving.then(() => (left = true));
      await Promise.resolve();
      expect(left).toBe(false); // waits for the commit's turn, though the commit waits for its refresh
      release();
      await expect(committing).resolves.toBeUndefined(); // still the member's partition: the leave came after
      await leaving;
      expect(await committed('g', 't')).toEqual([7]);
    });

    it('a subscribe whose topic refresh is slow keeps its place: the one sent after it wins', async () => {
      await topic('t', 1, 10);
      const { release } = holdNextRefresh();
      const first = broker.subscribe({ groupId: 'g', topic: 't', onOutOfRange: 'pause' });
      const second = broker.subscribe({ groupId: 'g', topic: 't', onOutOfRange: 'earliest' });
      release();
      await Promise.all([first, second]);
      expect((await broker.describeGroup('g')).subscriptions[0]).toMatchObject({ topic: 't', onOutOfRange: 'earliest' });
    });
  });

  describe('deleteGroup', () => {
    it('refuses a group with live members; after they leave, removes offsets, subscriptions and history', async () => {
      await topic('t', 2, 5);
      await topic('u', 1, 5);
      const a = await join('g', ['t'], { onOutOfRange: 'earliest' });
      await commit(a, 't', { 0: 3, 1: 4 });
      await broker.saveCheckpoint({ groupId: 'g', name: 'cp' });
      await broker.resetOffsets({ groupId: 'g', topic: 't', partition: 0, spec: { to: 'offset', offset: 1 } }); // dry run
      expect(await asyncCodeOf(broker.deleteGroup('g'))).toBe('NON_EMPTY_GROUP');
      expect((await broker.describeGroup('g')).members).toHaveLength(1);
      await commit(a, 't', { 0: 4 }); // still a working group

      await broker.leaveGroup({ groupId: 'g', memberId: a.memberId });
      await broker.resetOffsets({ groupId: 'g', topic: 't', partition: 1, spec: { to: 'offset', offset: 2 }, execute: true });
      expect((await broker.describeGroup('g')).resets).toHaveLength(1);
      await broker.deleteGroup('g');
      expect(await asyncCodeOf(broker.describeGroup('g'))).toBe('UNKNOWN_GROUP');
      expect((await broker.listGroups()).map((x) => x.groupId)).not.toContain('g');
      expect(await asyncCodeOf(broker.deleteGroup('g'))).toBe('UNKNOWN_GROUP');
      expect(await asyncCodeOf(broker.deleteGroup('missing'))).toBe('UNKNOWN_GROUP');

      // The same name again is a new group: starts from the log start, default policies, no history; its
      // generations go on above the deleted group's (whose members stay fenced).
      const b = await join('g', ['u']);
      expect(b.generationId).toBe(a.generationId + 1);
      expect(b.assignment).toEqual([{ topic: 'u', partition: 0, offset: 0 }]);
      const c = await join('g', ['t']);
      expect(c.assignment).toEqual([{ topic: 't', partition: 0, offset: 0 }, { topic: 't', partition: 1, offset: 0 }]);
      const d = await broker.describeGroup('g');
      expect(d.subscriptions.map((s) => [s.topic, s.onOutOfRange])).toEqual([['t', 'pause'], ['u', 'pause']]);
      expect(d).toMatchObject({ alerts: [], resets: [], checkpoints: [] });
    });

    it('deletes a group whose members all expired', async () => {
      await topic('t', 1);
      await join('g', ['t']);
      expect(await asyncCodeOf(broker.deleteGroup('g'))).toBe('NON_EMPTY_GROUP');
      clock.advance(SESSION_TIMEOUT_MS + 1);
      await broker.deleteGroup('g');
      expect(await asyncCodeOf(broker.describeGroup('g'))).toBe('UNKNOWN_GROUP');
    });
  });

  describe('reads spread (cluster mode only)', () => {
    it('the embedded default names no other broker to read from, and serves a readAnywhere fetch as any member\'s: fenced', async () => {
      await topic('t', 2, 3);
      const m = await join('g', ['t']);
      const answer = await fetch(m, 't', { 0: 0, 1: 0 });
      expect(answer.partitions.map((p) => [p.records.length, p.readFrom])).toEqual([[3, undefined], [3, undefined]]);
      const anywhere = (memberId: string) => broker.fetch({
        topic: 't', groupId: 'g', memberId, generationId: m.generationId, readAnywhere: true, partitions: [{ partition: 0, offset: 1 }],
      });
      expect((await anywhere(m.memberId)).partitions[0]!.records.map((r) => r.value!.toString())).toEqual(['p0-1', 'p0-2']);
      expect(await asyncCodeOf(anywhere('someone-else'))).toBe('UNKNOWN_MEMBER_ID');
    });
  });
});

/* ---------- the property through the broker ---------- */

type Command =
  | { kind: 'join'; topics: string[] }
  | { kind: 'leave'; who: number }
  | { kind: 'heartbeat'; who: number; release: boolean }
  | { kind: 'tick'; ms: number }
  | { kind: 'reset'; topic: string; partition: number };

const commandArb: fc.Arbitrary<Command> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('join' as const), topics: fc.subarray(['a', 'b'], { minLength: 1 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('leave' as const), who: fc.nat(4) }) },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('heartbeat' as const), who: fc.nat(4), release: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 0, max: SESSION_TIMEOUT_MS + 2_000 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('reset' as const), topic: fc.constantFrom('a', 'b'), partition: fc.nat(2) }) },
);

/** A client as the property drives it: what it holds and what its last answer said. */
interface Client {
  answer: MemberAssignment;
  held: Set<string>;
  told: Set<string>;
  topics: string[];
}

const keyOf = (tp: TopicPartition) => `${tp.topic}/${tp.partition}`;
const tpOf = (key: string): TopicPartition => ({ topic: key.split('/')[0]!, partition: Number(key.split('/')[1]) });

async function brokerProperty(groupId: string, assignor: AssignorName, commands: Command[]): Promise<void> {
  let clients: Client[] = [];
  let generation = 0;
  /** Executed resets bump the generation too (withholding, then giving back), by how much depends on timing. */
  const resets: Array<ReturnType<typeof tracked<ResetOffsetsResult>>> = [];
  const live = async () => new Set((await broker.describeGroup(groupId).catch(() => null))?.members.map((m) => m.memberId) ?? []);
  /** Drops clients the coordinator removed (expiry is noticed by the request just sent), counting generations. */
  const sync = async () => {
    const members = await live();
    const gone = clients.filter((c) => !members.has(c.answer.memberId));
    generation += gone.length;
    clients = clients.filter((c) => members.has(c.answer.memberId));
  };
  const hb = async (c: Client, release: boolean) => {
    const reported = release ? [...c.held].filter((k) => c.told.has(k)) : [...c.held];
    try {
      c.answer = await broker.heartbeat({ groupId, memberId: c.answer.memberId, generationId: c.answer.generationId, owned: reported.map(tpOf) });
    } catch (e) {
      if ((e as OnelogError).code !== 'UNKNOWN_MEMBER_ID') throw e;
      return;
    }
    c.told = new Set(c.answer.assignment.map(keyOf));
    c.held = new Set([...reported, ...c.told]);
  };
  const check = async () => {
    const d = await broker.describeGroup(groupId).catch(() => null);
    if (!d) {
      expect(clients).toEqual([]);
      return null;
    }
    if (resets.length === 0) expect(d.generationId).toBe(generation);
    else expect(d.generationId).toBeGreaterThanOrEqual(generation);
    expect(d.members.map((m) => m.memberId).sort()).toEqual(clients.map((c) => c.answer.memberId).sort());
    const holders = new Map<string, string>();
    for (const c of clients) {
      const m = d.members.find((x) => x.memberId === c.answer.memberId)!;
      expect(m.assignment.map(keyOf).sort()).toEqual([...c.held].sort());
      for (const key of c.held) {
        expect(holders.get(key), `${key} held twice`).toBeUndefined();
        holders.set(key, c.answer.memberId);
        expect(c.topics).toContain(tpOf(key).topic);
      }
    }
    for (const s of d.subscriptions) {
      for (const p of s.partitions) expect(p.memberId).toBe(holders.get(`${s.topic}/${p.partition}`) ?? null);
    }
    return d;
  };

  for (const cmd of commands) {
    switch (cmd.kind) {
      case 'join': {
        if (clients.length >= 5) continue;
        const answer = await broker.joinGroup({ groupId, topics: cmd.topics, assignor, sessionTimeoutMs: SESSION_TIMEOUT_MS, startPolicy: 'earliest' });
        await sync(); // the join may have noticed expiries first
        generation++;
        const told = new Set(answer.assignment.map(keyOf));
        clients.push({ answer, held: told, told: new Set(told), topics: cmd.topics });
        break;
      }
      case 'leave': {
        if (clients.length === 0) continue;
        const c = clients[cmd.who % clients.length]!;
        await broker.leaveGroup({ groupId, memberId: c.answer.memberId });
        clients = clients.filter((x) => x !== c);
        generation++;
        break;
      }
      case 'heartbeat': {
        if (clients.length === 0) continue;
        await hb(clients[cmd.who % clients.length]!, cmd.release);
        await sync();
        break;
      }
      case 'tick':
        clock.advance(cmd.ms);
        break;
      case 'reset': {
        const spec = { to: 'earliest' as const };
        const reset = tracked(broker.resetOffsets({ groupId, topic: cmd.topic, partition: cmd.partition, spec, execute: true }));
        resets.push(reset);
        if (clients.length === 0) await reset.promise; // no member: applied at once
        break;
      }
    }
    await check();
  }
  // Members a tick left past their timeout are removed by the next group request, whoever sends it.
  if (clients.length > 0) {
    await hb(clients[0]!, true);
    await sync();
  }
  // Then two honest rounds at one instant (nothing expires): each member reports what it was told, and lets
  // go at once of what an answer revokes (as the client does).
  for (let round = 0; round < 2; round++) {
    for (const c of clients) {
      await hb(c, true);
      if (c.held.size > c.told.size) await hb(c, true);
    }
  }
  const d = await check();
  for (const r of resets) {
    expect(r.settled()).toBe(true);
    expect((await r.promise).executed).toBe(true);
  }
  if (clients.length === 0) {
    if (d) expect(d.state).toBe('Empty');
    return;
  }
  expect(d!.state).toBe('Stable');
  const all = [...new Set(clients.flatMap((c) => c.topics))].flatMap((t) => Array.from({ length: t === 'a' ? 3 : 4 }, (_, p) => `${t}/${p}`));
  expect(clients.flatMap((c) => [...c.held]).sort()).toEqual(all.sort());
}

describe('generations across restarts', () => {
  it('a group goes on above the generation the offset store holds, so a member of the broker before stays fenced', async () => {
    const dataDir = tmpDir();
    const options = { dataDir, clock: new ManualClock(T0), sessionCheckIntervalMs: 0, retentionCheckIntervalMs: 0, compactionIntervalMs: 0 };
    broker = await Broker.open(options);
    await topic('t', 2, 3);
    const a = await join('g', ['t']);
    const b = await join('g', ['t']);
    const lastBefore = (await heartbeat(b)).generationId;
    expect(lastBefore).toBeGreaterThanOrEqual(2);
    await commit(await heartbeat(a), 't', { 0: 1 });
    await broker.close();

    broker = await Broker.open(options);
    try {
      const c = await join('g', ['t']);
      expect(c.generationId).toBe(lastBefore + 1);
      // A member of the broker before, whatever generation it sends, is refused; the new member commits.
      expect(await asyncCodeOf(commit(a, 't', { 0: 3 }, lastBefore))).toBe('UNKNOWN_MEMBER_ID');
      await commit(c, 't', { 0: 2, 1: 2 });
      expect(await committed('g', 't')).toEqual([2, 2]);
    } finally {
      await broker.close();
    }
  });
});

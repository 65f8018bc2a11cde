/**
 * Crash-counted deliveries (docs/retries.md) through the embedded broker's API (real data directory, SQLite catalog,
 * LMDB offsets) on a manual clock: a member that ends without leaving while it holds records past its commit leaves
 * them suspect, handed out one at a time, and the record in hand is counted; at the subscription's maxAttempts it is
 * dead-lettered and the partition flows on. Session timeouts are crossed by advancing the clock; expiry is noticed by
 * the next join (the background expiry timer is off).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Broker } from '../../src/broker/broker.js';
import { ManualClock } from '../../src/common/clock.js';
import type { MemberAssignment } from '../../src/protocol/groups.js';
import { openTimerlessBroker } from '../helpers/timerless-broker.js';
import { tmpDir } from '../helpers/tmp.js';

const T0 = Date.UTC(2026, 0, 1);
const SESSION_TIMEOUT_MS = 10_000;

let clock: ManualClock;
let broker: Broker;
let dataDir: string;

const open = async () => {
  broker = await openTimerlessBroker(dataDir, clock);
};

beforeEach(async () => {
  clock = new ManualClock(T0);
  dataDir = tmpDir();
  await open();
  await broker.createTopic({ topic: 't', partitions: 1 });
  await broker.produce({ topic: 't', records: Array.from({ length: 10 }, (_, i) => ({ key: null, value: Buffer.from(`r${i}`), partition: 0 })) });
  await broker.subscribe({ groupId: 'g', topic: 't', startPolicy: 'earliest', retry: { delaysMs: [1000], maxAttempts: 3 } });
});
afterEach(() => broker.close());

/** Joins the group (noticing the expiry of members silent past their session timeout) for the topic only. */
const join = (groupId = 'g') => broker.joinGroup({ groupId, topics: ['t'], sessionTimeoutMs: SESSION_TIMEOUT_MS });

/** The member's fetch of partition 0 of `t` from where its assignment starts (or `offset`): the offsets handed out. */
async function fetch(m: MemberAssignment, offset?: number): Promise<number[]> {
  const from = offset ?? m.assignment.find((p) => p.topic === 't')!.offset!;
  const result = await broker.fetch({ topic: 't', groupId: m.groupId, memberId: m.memberId, generationId: m.generationId, partitions: [{ partition: 0, offset: from }], maxRecords: 500 });
  return result.partitions[0]!.records.map((r) => r.offset);
}

const commit = (m: MemberAssignment, offset: number) =>
  broker.commitOffsets({ groupId: 'g', topic: 't', memberId: m.memberId, generationId: m.generationId, offsets: [{ partition: 0, offset }] });

/** The member dies: its session times out. */
const dies = () => clock.advance(SESSION_TIMEOUT_MS + 1);

describe('crash-counted deliveries', () => {
  it('hands a record whose consumer dies with it at most maxAttempts times, then dead-letters it; the rest flows, one at a time past the batch held', async () => {
    const first = await join();
    expect(await fetch(first)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]); // delivery 1 of record 0, in a batch
    dies();
    const second = await join();
    expect(second.assignment.find((p) => p.topic === 't')!.offset).toBe(0);
    expect(await fetch(second)).toEqual([0]); // held records are handed out one at a time: delivery 2
    expect(await fetch(second, 1)).toEqual([]); // a fetch sent ahead gets nothing while record 0 is in hand uncommitted
    dies();
    const third = await join();
    expect(await fetch(third)).toEqual([0]); // delivery 3
    dies();
    const fourth = await join(); // the third end with record 0 alone in hand: spent, dead-lettered, committed past
    const dead = await broker.listDeadLetters({ groupId: 'g', topic: 't' });
    expect(dead.depth).toBe(1);
    expect(dead.records[0]).toMatchObject({ original: { topic: 't', partition: 0, offset: 0 }, attempts: 3 });
    expect(dead.records[0]!.reason).toContain('the consumer ended while processing it, 3 times');
    expect(fourth.assignment.find((p) => p.topic === 't')!.offset).toBe(1);
    // The records that were in the batch with it come one at a time until the group commits past them, then in batches.
    const processed: number[] = [];
    for (let offset = 1; offset < 10;) {
      const got = await fetch(fourth, offset);
      expect(got).toHaveLength(1);
      processed.push(...got);
      offset = got[0]! + 1;
      await commit(fourth, offset);
    }
    expect(processed).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    await broker.produce({ topic: 't', records: [0, 1, 2].map((i) => ({ key: null, value: Buffer.from(`late${i}`), partition: 0 })) });
    expect(await fetch(fourth, 10)).toEqual([10, 11, 12]);
  });

  it('counts a batch\'s end on every record of it: a poison record deeper in the batch is handed out maxAttempts times too', async () => {
    const first = await join();
    expect(await fetch(first)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]); // record 3 kills it: delivery 1 of 0..9
    dies();
    const second = await join();
    for (const offset of [0, 1, 2]) { // processed alone and committed
      expect(await fetch(second, offset)).toEqual([offset]);
      await commit(second, offset + 1);
    }
    expect(await fetch(second, 3)).toEqual([3]); // delivery 2
    dies();
    const third = await join();
    expect(await fetch(third)).toEqual([3]); // delivery 3
    dies();
    const fourth = await join();
    expect(fourth.assignment.find((p) => p.topic === 't')!.offset).toBe(4);
    expect((await broker.listDeadLetters({ groupId: 'g', topic: 't' })).records).toMatchObject([{ original: { offset: 3 }, attempts: 3 }]);
  });

  it('counts deliveries across broker restarts', async () => {
    await fetch(await join());
    dies();
    await fetch(await join());
    dies();
    await join(); // two ends counted: record 0 delivered twice
    await broker.close();
    await open();
    clock.advance(1);
    const again = await join();
    expect(await fetch(again)).toEqual([0]); // still one at a time
    dies();
    await join();
    expect((await broker.listDeadLetters({ groupId: 'g', topic: 't' })).depth).toBe(1);
  });

  it('counts a member\'s end and its nacks together: a record that crashed once and is nacked once is on its third delivery next', async () => {
    const first = await join();
    await fetch(first);
    dies();
    const second = await join();
    expect(await fetch(second)).toEqual([0]);
    const nacked = await broker.nack({ groupId: 'g', topic: 't', partition: 0, offset: 0, reason: 'bad', memberId: second.memberId, generationId: second.generationId });
    expect(nacked).toMatchObject({ topic: 't.g.retry-1', attempt: 3, deadLettered: false });
  });

  it('counts nothing for a member that leaves, or that committed what it was handed', async () => {
    const first = await join();
    await fetch(first);
    await commit(first, 10);
    dies();
    const second = await join();
    await broker.produce({ topic: 't', records: [{ key: null, value: Buffer.from('x'), partition: 0 }, { key: null, value: Buffer.from('y'), partition: 0 }] });
    expect(await fetch(second)).toEqual([10, 11]); // nothing suspect: the first member committed all it was handed
    await broker.leaveGroup({ groupId: 'g', memberId: second.memberId });
    const third = await join();
    expect(await fetch(third)).toEqual([10, 11]); // a clean leave: handed out as usual
  });

  it('bounds a subscription without a retry policy by maxDeliveries, dead letters in <topic>.<group>.dlq', async () => {
    await broker.subscribe({ groupId: 'h', topic: 't', startPolicy: 'earliest', maxDeliveries: 2 });
    expect((await broker.describeGroup('h')).subscriptions[0]).toMatchObject({ retry: null, maxDeliveries: 2, deadLetterTopic: 't.h.dlq' });
    await fetch(await join('h'));
    dies();
    expect(await fetch(await join('h'))).toEqual([0]);
    dies();
    const third = await join('h');
    expect(third.assignment.find((p) => p.topic === 't')!.offset).toBe(1);
    const dead = await broker.listDeadLetters({ groupId: 'h', topic: 't' });
    expect(dead).toMatchObject({ deadLetterTopic: 't.h.dlq', depth: 1, records: [{ original: { offset: 0 }, attempts: 2 }] });
    // Without tiers a nack has nowhere to retry: it dead-letters at once, counting the deliveries the member says it made
    // (a webhook dispatcher's POSTs of the record alone); a redrive still needs a tier to go through.
    const nacked = await broker.nack({ groupId: 'h', topic: 't', partition: 0, offset: 1, reason: 'x', memberId: third.memberId, generationId: third.generationId, deliveries: 2 });
    // 3: record 1 was also in the batch the first member died holding (one delivery), and the third member made two
    expect(nacked).toMatchObject({ topic: 't.h.dlq', deadLettered: true, attempt: 3 });
    expect(await broker.nack({ groupId: 'h', topic: 't', partition: 0, offset: 2, reason: 'x', memberId: third.memberId, generationId: third.generationId, deliveries: 0 })
      .catch((err: { code: string }) => err.code)).toBe('INVALID_REQUEST');
    expect(await broker.redriveDeadLetters({ groupId: 'h', topic: 't', all: true, execute: true }).catch((err: { code: string }) => err.code)).toBe('NO_RETRY_POLICY');
    // With both, maxAttempts is the bound.
    expect(await broker.subscribe({ groupId: 'h', topic: 't', retry: { delaysMs: [1000] }, maxDeliveries: 3 }).catch((err: { code: string }) => err.code))
      .toBe('INVALID_REQUEST');
  });

  it('counts nothing, and hands out as before, for a subscription with no bound', async () => {
    await broker.subscribe({ groupId: 'h', topic: 't', startPolicy: 'earliest' });
    for (let i = 0; i < 3; i++) {
      expect(await fetch(await join('h'))).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      dies();
    }
    await join('h');
    expect((await broker.describeGroup('h')).subscriptions[0]!.deadLetter).toBeNull();
  });
});

/**
 * Nacks, retry tiers and dead letters through the embedded broker's API (real data directory), with a manual
 * clock: tier delays are crossed by advancing it, and a fetch waiting for a tier record's due time wakes when
 * the clock reaches it.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { ManualClock } from '../../src/common/clock.js';
import { PartitionLog } from '../../src/log/segments/partition-log.js';
import type { FetchedPartition } from '../../src/protocol/fetch.js';
import type { MemberAssignment } from '../../src/protocol/groups.js';
import { headerText, RETRY_HEADERS } from '../../src/protocol/retry-policy.js';
import { asyncCodeOf, asyncErrorOf } from '../helpers/errors.js';
import { tmpDir } from '../helpers/tmp.js';

const T0 = Date.UTC(2024, 0, 1);
const TOPIC = 'orders';
const GROUP = 'billing';
const TIER1 = 'orders.billing.retry-1';
const TIER2 = 'orders.billing.retry-2';
const DLQ = 'orders.billing.dlq';

let clock: ManualClock;
let broker: Broker;

beforeEach(async () => {
  clock = new ManualClock(T0);
  broker = await Broker.open({ dataDir: tmpDir(), clock, sessionCheckIntervalMs: 0, retentionCheckIntervalMs: 0, compactionIntervalMs: 0 });
  await broker.createTopic({ topic: TOPIC, partitions: 2 });
  await broker.produce({
    topic: TOPIC,
    records: [0, 1, 2, 3].map((i) => ({ key: Buffer.from(`k${i}`), value: Buffer.from(`v${i}`), partition: 0, headers: [{ key: 'trace', value: Buffer.from(`t${i}`) }] })),
  });
});

afterEach(async () => {
  await broker.close();
});

async function withPolicy(maxAttempts = 3): Promise<MemberAssignment> {
  await broker.subscribe({ groupId: GROUP, topic: TOPIC, startPolicy: 'earliest', retry: { delaysMs: [1000, 2000], maxAttempts } });
  return broker.joinGroup({ groupId: GROUP, topics: [TOPIC], sessionTimeoutMs: 30_000 });
}

function fetchOf(m: MemberAssignment, topic: string, offset: number, maxWaitMs = 0): Promise<FetchedPartition> {
  return broker.fetch({
    topic, groupId: GROUP, memberId: m.memberId, generationId: m.generationId, partitions: [{ partition: 0, offset }], maxWaitMs,
  }).then((r) => r.partitions[0]!);
}

function nack(m: MemberAssignment, topic: string, offset: number, reason = 'boom') {
  return broker.nack({ groupId: GROUP, topic, partition: 0, offset, reason, memberId: m.memberId, generationId: m.generationId });
}

const text = (r: { headers: Array<{ key: string; value: Buffer | null }> }, key: string) => headerText(r.headers, key);

describe('retry policy', () => {
  it('creates the tier topics and the dead-letter topic, and describe shows them', async () => {
    const m = await withPolicy();
    expect((await broker.describeTopic(TIER1)).partitions).toHaveLength(2);
    expect((await broker.describeTopic(TIER2)).partitions).toHaveLength(2);
    expect((await broker.describeTopic(DLQ)).partitions).toHaveLength(1);
    const sub = (await broker.describeGroup(GROUP)).subscriptions[0]!;
    expect(sub.retry).toEqual({ delaysMs: [1000, 2000], maxAttempts: 3, deadLetterTopic: DLQ });
    expect(sub.retryTiers).toEqual([{ topic: TIER1, delayMs: 1000, backlog: 0 }, { topic: TIER2, delayMs: 2000, backlog: 0 }]);
    expect(sub.deadLetter).toEqual({ topic: DLQ, depth: 0 });
    // The member consumes the tiers with the topic, without naming them.
    expect(m.assignment.map((p) => `${p.topic}/${p.partition}`).sort()).toEqual(
      [`${TIER1}/0`, `${TIER1}/1`, `${TIER2}/0`, `${TIER2}/1`, `${TOPIC}/0`, `${TOPIC}/1`]);
  });

  it('refuses a bad policy and changes nothing', async () => {
    const bad = [
      { delaysMs: [0, -60_000] },
      { delaysMs: [] },
      { delaysMs: [1000], maxAttempts: 0 },
      { delaysMs: [1000], deadLetterTopic: 'no spaces' },
      { delaysMs: [1000], deadLetterTopic: TOPIC },
    ];
    for (const retry of bad) {
      const err = await asyncErrorOf(broker.subscribe({ groupId: GROUP, topic: TOPIC, retry }));
      expect(['INVALID_REQUEST', 'INVALID_TOPIC']).toContain(err.code);
    }
    expect((await broker.listTopics()).map((t) => t.topic)).toEqual([TOPIC]);
    expect(await asyncCodeOf(broker.describeGroup(GROUP))).toBe('UNKNOWN_GROUP');
  });

  it('refuses delays the topic\'s retention would outlive, and a dead-letter topic that holds other records', async () => {
    await broker.createTopic({ topic: 'short', partitions: 1, config: { retentionMs: 60_000 } });
    const err = await asyncErrorOf(broker.subscribe({ groupId: GROUP, topic: 'short', retry: { delaysMs: [1000, 60_000] } }));
    expect(err).toMatchObject({ code: 'INVALID_REQUEST', message: expect.stringContaining("short's retention.ms (60000)") });
    await broker.createTopic({ topic: 'other', partitions: 1 });
    await broker.produce({ topic: 'other', records: [{ key: null, value: Buffer.from('not a dead letter') }] });
    const taken = await asyncErrorOf(broker.subscribe({ groupId: GROUP, topic: TOPIC, retry: { delaysMs: [1000], deadLetterTopic: 'other' } }));
    expect(taken.message).toContain('other already holds 1 records');
    expect((await broker.listTopics()).map((t) => t.topic).sort()).toEqual(['orders', 'other', 'short']);
  });

  it('a deleted group leaves its tiers and dead letters empty: the same id starts clean', async () => {
    const m = await withPolicy(2);
    await nack(m, TOPIC, 0);
    clock.advance(1000);
    await nack(m, TIER1, 0);
    await nack(m, TOPIC, 1);
    await broker.leaveGroup({ groupId: GROUP, memberId: m.memberId });
    await broker.deleteGroup(GROUP);
    await broker.subscribe({ groupId: GROUP, topic: TOPIC, startPolicy: 'latest', retry: { delaysMs: [1000, 2000], maxAttempts: 2 } });
    const d = (await broker.describeGroup(GROUP)).subscriptions[0]!;
    expect(d.deadLetter).toEqual({ topic: DLQ, depth: 0 });
    expect(d.retryTiers.map((t) => t.backlog)).toEqual([0, 0]);
    expect((await broker.describeGroup(GROUP)).alerts).toEqual([]);
  });

  it('a subscription whose dead letters reach a lower alert depth raises the alert at once', async () => {
    const m = await withPolicy(1);
    await broker.subscribe({ groupId: GROUP, topic: TOPIC, deadLetterAlertDepth: 5 });
    await nack(m, TOPIC, 0);
    await nack(m, TOPIC, 1);
    expect((await broker.describeGroup(GROUP)).alerts).toEqual([]);
    await broker.subscribe({ groupId: GROUP, topic: TOPIC, deadLetterAlertDepth: 2 });
    expect((await broker.describeGroup(GROUP)).alerts).toMatchObject([{ kind: 'dead-letter-depth', resolvedAt: null }]);
  });

  it('a tier record deleted before the group read it pauses the tier partition, never a silent skip', async () => {
    await broker.subscribe({ groupId: GROUP, topic: TOPIC, startPolicy: 'earliest', retry: { delaysMs: [1000] } });
    await broker.nack({ groupId: GROUP, topic: TOPIC, partition: 0, offset: 0, reason: 'standalone' });
    await broker.deleteRecords({ topic: TIER1, partition: 0, beforeOffset: 1 }); // as retention would
    const m = await broker.joinGroup({ groupId: GROUP, topics: [TOPIC], sessionTimeoutMs: 30_000 });
    expect(m.assignment.find((p) => p.topic === TIER1 && p.partition === 0)).toMatchObject({ error: { code: 'OFFSET_OUT_OF_RANGE' } });
    expect((await broker.describeGroup(GROUP)).alerts).toMatchObject([{ kind: 'offset-out-of-range', topic: TIER1 }]);
  });

  it('a member that joined before the policy gets the tiers once it is set', async () => {
    await broker.subscribe({ groupId: GROUP, topic: TOPIC, startPolicy: 'earliest' });
    let m = await broker.joinGroup({ groupId: GROUP, topics: [TOPIC], sessionTimeoutMs: 30_000 });
    expect(m.assignment).toHaveLength(2);
    await broker.subscribe({ groupId: GROUP, topic: TOPIC, retry: { delaysMs: [1000] } });
    m = await broker.heartbeat({ groupId: GROUP, memberId: m.memberId, generationId: m.generationId, owned: m.assignment });
    expect(m.assignment.map((p) => p.topic).sort()).toEqual([TOPIC, TOPIC, TIER1, TIER1]);
  });
});

describe('nack', () => {
  it('moves a record through the tiers at their delays, then to the dead-letter topic, with its headers', async () => {
    const m = await withPolicy();
    const first = await fetchOf(m, TOPIC, 0);
    expect(first.records).toHaveLength(4);
    const moved = await nack(m, TOPIC, 1, 'row 17 missing');
    expect(moved).toEqual({ topic: TIER1, partition: 0, offset: 0, attempt: 2, deadLettered: false, duplicate: false });

    // Not before the last failure + 1 s.
    expect((await fetchOf(m, TIER1, 0)).records).toHaveLength(0);
    clock.advance(999);
    expect((await fetchOf(m, TIER1, 0)).records).toHaveLength(0);
    clock.advance(1);
    const [retry] = (await fetchOf(m, TIER1, 0)).records;
    expect(retry!.key!.toString()).toBe('k1');
    expect(retry!.value!.toString()).toBe('v1');
    expect(text(retry!, 'trace')).toBe('t1');
    expect(text(retry!, RETRY_HEADERS.originalTopic)).toBe(TOPIC);
    expect(text(retry!, RETRY_HEADERS.originalPartition)).toBe('0');
    expect(text(retry!, RETRY_HEADERS.originalOffset)).toBe('1');
    expect(text(retry!, RETRY_HEADERS.group)).toBe(GROUP);
    expect(text(retry!, RETRY_HEADERS.attempt)).toBe('2');
    expect(text(retry!, RETRY_HEADERS.reason)).toBe('row 17 missing');
    expect(text(retry!, RETRY_HEADERS.firstAt)).toBe(String(T0));
    expect(text(retry!, RETRY_HEADERS.lastAt)).toBe(String(T0));

    expect(await nack(m, TIER1, 0, 'still missing')).toMatchObject({ topic: TIER2, offset: 0, attempt: 3, deadLettered: false });
    clock.advance(1999);
    expect((await fetchOf(m, TIER2, 0)).records).toHaveLength(0);
    clock.advance(1);
    const [again] = (await fetchOf(m, TIER2, 0)).records;
    expect(text(again!, RETRY_HEADERS.attempt)).toBe('3');
    expect(text(again!, RETRY_HEADERS.firstAt)).toBe(String(T0));
    expect(text(again!, RETRY_HEADERS.lastAt)).toBe(String(T0 + 1000));

    expect(await nack(m, TIER2, 0, 'gone for good')).toMatchObject({ topic: DLQ, partition: 0, offset: 0, attempt: 3, deadLettered: true });
    const list = await broker.listDeadLetters({ groupId: GROUP, topic: TOPIC });
    expect(list).toMatchObject({ deadLetterTopic: DLQ, depth: 1 });
    expect(list.records).toEqual([{
      offset: 0, original: { topic: TOPIC, partition: 0, offset: 1, timestamp: T0 }, attempts: 3, reason: 'gone for good',
      firstFailureAt: T0, lastFailureAt: T0 + 3000, key: 'k1', valuePreview: 'v1',
    }]);
    // Nothing else went to the dead letters, and the tiers hold one record each.
    expect((await broker.describeTopic(DLQ)).partitions[0]!.highWatermark).toBe(1);
    expect((await broker.describeTopic(TIER1)).partitions.map((p) => p.highWatermark)).toEqual([1, 0]);
    expect((await broker.describeTopic(TIER2)).partitions.map((p) => p.highWatermark)).toEqual([1, 0]);
    // Each move is an append of the broker's own, counted as produced to its topic as a client's produce is.
    const scraped = await broker.metrics.scrape();
    for (const topic of [TIER1, TIER2, DLQ]) expect(scraped).toContain(`onelog_produced_records_total{topic="${topic}"} 1`);
    clock.advance(60_000);
    const produced = (await broker.topicHistory(DLQ, { hours: 1 })).points.reduce((n, p) => n + p.produceRecordsPerSec * 60, 0);
    expect(produced).toBeCloseTo(1, 9);
  });

  it('is idempotent: a repeated nack appends nothing, and the group\'s fetch skips the moved record', async () => {
    const m = await withPolicy();
    const a = await nack(m, TOPIC, 2);
    const b = await nack(m, TOPIC, 2);
    const [c, d] = await Promise.all([nack(m, TOPIC, 3), nack(m, TOPIC, 3)]);
    expect(b).toEqual({ ...a, duplicate: true });
    expect([c.duplicate, d.duplicate].sort()).toEqual([false, true]);
    expect(c.offset).toBe(d.offset);
    expect((await broker.describeTopic(TIER1)).partitions[0]!.highWatermark).toBe(2);
    // Uncommitted (a crash between the nack and the commit): the next delivery leaves the moved records out.
    const again = await fetchOf(m, TOPIC, 0);
    expect(again.records.map((r) => r.offset)).toEqual([0, 1]);
    expect(again.nextOffset).toBe(4);
  });

  it('nackBatch moves several records of a partition in order, or none when one is refused', async () => {
    const m = await withPolicy();
    const member = { memberId: m.memberId, generationId: m.generationId };
    const bad = broker.nackBatch({ groupId: GROUP, topic: TOPIC, partition: 0, ...member, records: [{ offset: 0, reason: 'a' }, { offset: 9, reason: 'b' }] });
    expect(await asyncCodeOf(bad)).toBe('OFFSET_OUT_OF_RANGE');
    expect(await asyncCodeOf(broker.nackBatch({ groupId: GROUP, topic: TOPIC, partition: 0, ...member, records: [] }))).toBe('INVALID_REQUEST');
    expect((await broker.describeTopic(TIER1)).partitions[0]!.highWatermark).toBe(0);
    const results = await broker.nackBatch({ groupId: GROUP, topic: TOPIC, partition: 0, ...member, records: [3, 0, 2].map((offset) => ({ offset, reason: `r${offset}` })) });
    expect(results.map((r) => r.offset)).toEqual([0, 1, 2]);
    clock.advance(1000);
    const tier = await fetchOf(m, TIER1, 0);
    expect(tier.records.map((r) => [text(r, RETRY_HEADERS.originalOffset), text(r, RETRY_HEADERS.reason)])).toEqual([['3', 'r3'], ['0', 'r0'], ['2', 'r2']]);
  });

  it('attempts beyond the tiers go through the last tier again, with its delay', async () => {
    await broker.subscribe({ groupId: GROUP, topic: TOPIC, startPolicy: 'earliest', retry: { delaysMs: [1000], maxAttempts: 4 } });
    const m = await broker.joinGroup({ groupId: GROUP, topics: [TOPIC], sessionTimeoutMs: 30_000 });
    expect(await nack(m, TOPIC, 0)).toMatchObject({ topic: TIER1, offset: 0, attempt: 2 });
    clock.advance(1000);
    expect(await nack(m, TIER1, 0)).toMatchObject({ topic: TIER1, offset: 1, attempt: 3 });
    clock.advance(999);
    expect((await fetchOf(m, TIER1, 1)).records).toHaveLength(0);
    clock.advance(1);
    expect(text((await fetchOf(m, TIER1, 1)).records[0]!, RETRY_HEADERS.attempt)).toBe('3');
    expect(await nack(m, TIER1, 1)).toMatchObject({ topic: TIER1, attempt: 4 });
    clock.advance(1000);
    expect(await nack(m, TIER1, 2)).toMatchObject({ topic: DLQ, attempt: 4, deadLettered: true });
  });

  it('a nack of a record committed far past, moved before, is still moved once', async () => {
    const m = await withPolicy();
    await broker.produce({ topic: TOPIC, records: Array.from({ length: 10_010 }, () => ({ key: null, value: Buffer.from('x'), partition: 0 })) });
    const first = await nack(m, TOPIC, 1);
    await broker.commitOffsets({ groupId: GROUP, topic: TOPIC, memberId: m.memberId, generationId: m.generationId, offsets: [{ partition: 0, offset: 10_014 }] });
    expect(await nack(m, TOPIC, 1)).toEqual({ ...first, duplicate: true });
    expect((await broker.describeTopic(TIER1)).partitions[0]!.highWatermark).toBe(1);
  });

  it('keeps the order of one original partition within a tier', async () => {
    const m = await withPolicy();
    for (const offset of [0, 2, 3]) await nack(m, TOPIC, offset);
    clock.advance(1000);
    const tier = await fetchOf(m, TIER1, 0);
    expect(tier.records.map((r) => text(r, RETRY_HEADERS.originalOffset))).toEqual(['0', '2', '3']);
  });

  it('a record nacked at maxAttempts goes to the dead letters and nowhere else', async () => {
    const m = await withPolicy(1);
    expect(await nack(m, TOPIC, 0)).toMatchObject({ topic: DLQ, attempt: 1, deadLettered: true });
    expect((await broker.describeTopic(TIER1)).partitions.map((p) => p.highWatermark)).toEqual([0, 0]);
    expect((await broker.describeGroup(GROUP)).subscriptions[0]!.deadLetter).toEqual({ topic: DLQ, depth: 1 });
  });

  it('a fetch waiting on a tier wakes when the clock reaches the record\'s due time', async () => {
    const m = await withPolicy();
    await nack(m, TOPIC, 0);
    const waiting = fetchOf(m, TIER1, 0, 20_000);
    await vi.waitFor(() => expect(clock.sleeping).toBeGreaterThan(0));
    clock.advance(1000);
    expect((await waiting).records).toHaveLength(1);
  });

  it('a fetch of an empty tier waits for new records once, for at most maxWaitMs', async () => {
    const m = await withPolicy();
    const waits = vi.spyOn(PartitionLog.prototype, 'waitForData');
    const started = performance.now();
    expect((await fetchOf(m, TIER1, 0, 300)).records).toEqual([]);
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    // Before: the read long-polled, then the tier's own wait waited again (600 ms for a 300 ms fetch). Only the tier's
    // waits count: another test's member may still be polling the topic.
    const tierWaits = waits.mock.calls.filter((_, i) => (waits.mock.contexts[i] as PartitionLog).topic === TIER1);
    expect(tierWaits).toHaveLength(1);
    expect(tierWaits[0]![1]).toBeLessThanOrEqual(300);
    waits.mockRestore();
  });

  it('refuses bad nacks with clear errors and moves nothing', async () => {
    const m = await withPolicy();
    const other = await broker.joinGroup({ groupId: GROUP, topics: [TOPIC], sessionTimeoutMs: 30_000 });
    expect(await asyncCodeOf(nack(m, TOPIC, 4))).toBe('OFFSET_OUT_OF_RANGE');
    expect(await asyncCodeOf(broker.nack({ groupId: GROUP, topic: TOPIC, partition: 0, offset: 0, reason: 'x', memberId: 'nobody', generationId: 1 })))
      .toBe('UNKNOWN_MEMBER_ID');
    expect(await asyncCodeOf(broker.nack({ groupId: GROUP, topic: TOPIC, partition: 0, offset: 0, reason: 'x' }))).toBe('UNKNOWN_MEMBER_ID');
    // The second member holds nothing of partition 0 of the topic until the first lets go.
    expect(await asyncCodeOf(nack(other, TOPIC, 0))).toMatch(/NOT_ASSIGNED|ILLEGAL_GENERATION/);
    await broker.subscribe({ groupId: 'plain', topic: TOPIC });
    expect(await asyncCodeOf(broker.nack({ groupId: 'plain', topic: TOPIC, partition: 0, offset: 0, reason: 'x' }))).toBe('NO_RETRY_POLICY');
    expect((await broker.describeTopic(TIER1)).partitions.map((p) => p.highWatermark)).toEqual([0, 0]);
  });
});

describe('dead letters', () => {
  it('raise one alert at the alert depth, and redrive sends them back as attempt 1, resolving it', async () => {
    const m = await withPolicy(1);
    await broker.subscribe({ groupId: GROUP, topic: TOPIC, deadLetterAlertDepth: 2 });
    await nack(m, TOPIC, 0);
    expect((await broker.describeGroup(GROUP)).alerts).toEqual([]);
    await nack(m, TOPIC, 1);
    await nack(m, TOPIC, 2);
    const alerts = (await broker.describeGroup(GROUP)).alerts;
    expect(alerts).toHaveLength(1);
    expect(alerts[0]).toMatchObject({ kind: 'dead-letter-depth', topic: TOPIC, resolvedAt: null, context: { depth: 2 } });

    const dry = await broker.redriveDeadLetters({ groupId: GROUP, topic: TOPIC, offset: 1 });
    expect(dry).toMatchObject({ executed: false, depth: 3, records: [{ offset: 1, attempts: 1 }] });
    expect((await broker.describeTopic(TIER1)).partitions[0]!.highWatermark).toBe(0);

    clock.advance(5000);
    const all = await broker.redriveDeadLetters({ groupId: GROUP, topic: TOPIC, all: true, execute: true, requestedBy: 'alice' });
    expect(all).toMatchObject({ executed: true, depth: 0 });
    expect(all.records.map((r) => r.original.offset)).toEqual([0, 1, 2]);
    // Again (a redrive interrupted and run again): nothing waits, nothing is sent twice.
    expect((await broker.redriveDeadLetters({ groupId: GROUP, topic: TOPIC, all: true, execute: true })).records).toEqual([]);
    const tier = await fetchOf(m, TIER1, 0);
    expect(tier.records.map((r) => [text(r, RETRY_HEADERS.originalOffset), text(r, RETRY_HEADERS.attempt)])).toEqual([['0', '1'], ['1', '1'], ['2', '1']]);
    const described = await broker.describeGroup(GROUP);
    expect(described.alerts[0]).toMatchObject({ kind: 'dead-letter-depth', resolvedAt: T0 + 5000 });
    expect(described.deadLetterActions).toEqual([
      { topic: TOPIC, action: 'redrive', firstOffset: 0, endOffset: 3, records: 3, requestedBy: 'alice', executedAt: T0 + 5000 },
    ]);
    expect(await asyncCodeOf(broker.redriveDeadLetters({ groupId: GROUP, topic: TOPIC, offset: 1, execute: true }))).toBe('INVALID_OFFSET');
  });

  it('redrive of a selection: each waiting dead letter named once, oldest first, all or nothing', async () => {
    const m = await withPolicy(1);
    for (const offset of [0, 1, 2, 3]) await nack(m, TOPIC, offset);
    expect((await broker.redriveDeadLetters({ groupId: GROUP, topic: TOPIC, offsets: [2, 0, 2] })).records.map((r) => r.offset)).toEqual([0, 2]);
    expect(await broker.redriveDeadLetters({ groupId: GROUP, topic: TOPIC, offsets: [2, 0], execute: true })).toMatchObject({ executed: true, depth: 2 });
    expect((await fetchOf(m, TIER1, 0)).records.map((r) => text(r, RETRY_HEADERS.originalOffset))).toEqual(['0', '2']);
    expect(await asyncCodeOf(broker.redriveDeadLetters({ groupId: GROUP, topic: TOPIC, offsets: [1, 2], execute: true }))).toBe('INVALID_OFFSET');
    expect(await asyncCodeOf(broker.redriveDeadLetters({ groupId: GROUP, topic: TOPIC, offsets: [-1] }))).toBe('INVALID_OFFSET');
    expect(await asyncCodeOf(broker.redriveDeadLetters({ groupId: GROUP, topic: TOPIC, offsets: '1' as unknown as number[] }))).toBe('INVALID_REQUEST');
    expect((await broker.listDeadLetters({ groupId: GROUP, topic: TOPIC })).records.map((r) => r.offset)).toEqual([1, 3]);
  });

  it('purge discards dead letters below an offset, dry run first', async () => {
    const m = await withPolicy(1);
    for (const offset of [0, 1, 2]) await nack(m, TOPIC, offset);
    expect(await broker.purgeDeadLetters({ groupId: GROUP, topic: TOPIC, beforeOffset: 2 })).toMatchObject({ executed: false, records: 2, depth: 3 });
    expect(await broker.purgeDeadLetters({ groupId: GROUP, topic: TOPIC, beforeOffset: 2, execute: true })).toMatchObject({ executed: true, records: 2, depth: 1 });
    expect((await broker.listDeadLetters({ groupId: GROUP, topic: TOPIC })).records.map((r) => r.offset)).toEqual([2]);
    expect(await asyncCodeOf(broker.purgeDeadLetters({ groupId: GROUP, topic: TOPIC, beforeOffset: 9, execute: true }))).toBe('INVALID_OFFSET');
  });

  it('a restarted broker knows what was moved (attempts live in the records)', async () => {
    const dataDir = tmpDir();
    await broker.close();
    broker = await Broker.open({ dataDir, clock, sessionCheckIntervalMs: 0, retentionCheckIntervalMs: 0, compactionIntervalMs: 0 });
    await broker.createTopic({ topic: TOPIC, partitions: 2 });
    await broker.produce({ topic: TOPIC, records: [{ key: null, value: Buffer.from('x'), partition: 0 }] });
    let m = await withPolicy();
    await nack(m, TOPIC, 0);
    await broker.close();
    broker = await Broker.open({ dataDir, clock, sessionCheckIntervalMs: 0, retentionCheckIntervalMs: 0, compactionIntervalMs: 0 });
    m = await broker.joinGroup({ groupId: GROUP, topics: [TOPIC], sessionTimeoutMs: 30_000 });
    expect(m.assignment.some((p) => p.topic === TIER1)).toBe(true);
    expect((await nack(m, TOPIC, 0)).duplicate).toBe(true);
    expect((await fetchOf(m, TOPIC, 0)).records).toEqual([]);
    clock.advance(1000);
    expect(await nack(m, TIER1, 0)).toMatchObject({ topic: TIER2, attempt: 3 });
  });
});

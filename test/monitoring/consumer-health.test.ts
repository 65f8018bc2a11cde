/**
 * Watching consumers through the embedded broker (real data directory, catalog and offset store) on a manual
 * clock: each partition's health as time passes and retention runs, and the alerts that follow it, raised
 * once per episode and resolved when the condition clears.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import type { BrokerOptions } from '../../src/broker/options.js';
import { ManualClock } from '../../src/common/clock.js';
import type { GroupPartition } from '../../src/protocol/groups.js';
import type { GroupAlert } from '../../src/protocol/monitoring-api.js';
import { tmpDir } from '../helpers/tmp.js';

const T0 = Date.UTC(2026, 0, 1);
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

let clock: ManualClock;
let broker: Broker;
let dataDir: string;

async function openBroker(extra: Partial<BrokerOptions> = {}): Promise<void> {
  clock = new ManualClock(T0);
  dataDir = tmpDir();
  broker = await Broker.open({
    dataDir, clock, sessionCheckIntervalMs: 0, retentionCheckIntervalMs: 0, compactionIntervalMs: 0,
    monitoring: { alertCheckIntervalMs: 0 }, ...extra,
  });
}

beforeEach(() => openBroker());
afterEach(() => broker.close());

async function produce(topic: string, count: number, partition = 0, key?: (i: number) => string | null): Promise<void> {
  await broker.produce({
    topic, records: Array.from({ length: count }, (_, i) => ({ key: key ? (key(i) === null ? null : Buffer.from(key(i)!)) : null, value: Buffer.from(`v${i}`), partition })),
  });
}

async function partitionOf(groupId: string, partition = 0): Promise<GroupPartition> {
  return (await broker.describeGroup(groupId)).subscriptions[0]!.partitions[partition]!;
}

/** The group's alerts, oldest first, as `kind:resolved?`. */
async function alerts(groupId = 'g'): Promise<string[]> {
  return (await broker.listAlerts({ groupId })).reverse().map((a: GroupAlert) => `${a.kind}${a.resolvedAt === null ? '' : ':resolved'}`);
}

describe('consumer health', () => {
  it('goes ok -> lagging -> at-risk -> data-lost as a stopped group falls behind retention; a reset ends it', async () => {
    await broker.createTopic({ topic: 't', partitions: 1, config: { retentionMs: HOUR } });
    await broker.subscribe({ groupId: 'g', topic: 't', startPolicy: 'earliest', stallMs: 10 * HOUR });
    await produce('t', 10);
    await broker.commitOffsets({ groupId: 'g', topic: 't', offsets: [{ partition: 0, offset: 10 }] });
    expect(await partitionOf('g')).toMatchObject({
      state: 'ok', lag: 0, unreadRecords: 0, lostRecords: 0, timeLagMs: 0, headroomMs: HOUR, headroomBytes: null,
    });

    // The group stops; records keep coming.
    clock.advance(MINUTE);
    await produce('t', 5);
    clock.advance(10 * MINUTE);
    await broker.evaluateAlerts();
    expect(await partitionOf('g')).toMatchObject({ state: 'lagging', lag: 5, unreadRecords: 5, timeLagMs: 10 * MINUTE, headroomMs: 50 * MINUTE });
    expect(await alerts()).toEqual([]);

    // Less than a quarter of retention left for the first unread record.
    clock.advance(36 * MINUTE);
    await broker.evaluateAlerts();
    expect(await partitionOf('g')).toMatchObject({ state: 'at-risk', headroomMs: 14 * MINUTE });
    await broker.evaluateAlerts();
    expect(await alerts()).toEqual(['retention-headroom']); // raised once, not every evaluation

    // Overdue: headroom goes negative, and the state stays at-risk until retention actually runs.
    clock.advance(15 * MINUTE);
    expect(await partitionOf('g')).toMatchObject({ state: 'at-risk', headroomMs: -MINUTE, lag: 5, lostRecords: 0 });

    const retention = await broker.enforceRetention('t');
    expect(retention.partitions[0]).toMatchObject({ logStartOffset: 15 });
    expect(await partitionOf('g')).toMatchObject({ state: 'data-lost', lostRecords: 5, lag: 0, unreadRecords: 0, committedOffset: 10, logStartOffset: 15 });
    // Alerted when retention passed the committed offset, not when the group next fetches; nothing unread is at risk now.
    expect(await alerts()).toEqual(['retention-headroom:resolved', 'data-lost']);

    await broker.resetOffsets({ groupId: 'g', topic: 't', spec: { to: 'earliest' }, execute: true, requestedBy: 'test' });
    expect(await partitionOf('g')).toMatchObject({ state: 'ok', lostRecords: 0, lag: 0 });
    expect(await alerts()).toEqual(['retention-headroom:resolved', 'data-lost:resolved']);
  });

  it('counts what is still readable as lag, the records lost beside it (2 partitions, retention.ms=3000)', async () => {
    await broker.createTopic({ topic: 't', partitions: 2, config: { retentionMs: 3000 } });
    await broker.subscribe({ groupId: 'g', topic: 't', startPolicy: 'earliest' });
    await produce('t', 100, 0);
    await produce('t', 100, 1);
    await broker.commitOffsets({ groupId: 'g', topic: 't', offsets: [{ partition: 0, offset: 40 }, { partition: 1, offset: 100 }] });
    clock.advance(4000);
    await broker.enforceRetention('t');
    expect(await alerts()).toEqual(['data-lost']);
    expect(await partitionOf('g', 0)).toMatchObject({ state: 'data-lost', lostRecords: 60, lag: 0 });
    expect(await partitionOf('g', 1)).toMatchObject({ state: 'ok', lostRecords: 0, lag: 0 });
    await produce('t', 5, 0);
    expect(await partitionOf('g', 0)).toMatchObject({ state: 'data-lost', lostRecords: 60, lag: 5, unreadRecords: 5 });
    const [alert] = await broker.listAlerts({ active: true });
    expect(alert).toMatchObject({ kind: 'data-lost', topic: 't', partition: 0, context: { lostRecords: 60, committedOffset: 40, logStartOffset: 100 } });
  });

  it('raises consumer-stalled after stallMs of unread records with no commit, and resolves it on a commit', async () => {
    await broker.createTopic({ topic: 't', partitions: 1, config: { retentionMs: -1 } });
    await broker.subscribe({ groupId: 'g', topic: 't', startPolicy: 'earliest', stallMs: MINUTE });
    await broker.commitOffsets({ groupId: 'g', topic: 't', offsets: [{ partition: 0, offset: 0 }] });
    clock.advance(HOUR); // idle for an hour: a record arriving now is not stalled at once
    await produce('t', 3);
    await broker.evaluateAlerts();
    expect(await partitionOf('g')).toMatchObject({ state: 'lagging', headroomMs: null });
    clock.advance(MINUTE - 1);
    await broker.evaluateAlerts();
    expect(await alerts()).toEqual([]);
    clock.advance(1);
    await broker.evaluateAlerts();
    expect(await partitionOf('g')).toMatchObject({ state: 'stalled', unreadRecords: 3 });
    expect(await alerts()).toEqual(['consumer-stalled']);
    // After a restart the records have still waited since their timestamps: stalled at once, the alert kept.
    await broker.close();
    broker = await Broker.open({ dataDir, clock, sessionCheckIntervalMs: 0, retentionCheckIntervalMs: 0, compactionIntervalMs: 0, monitoring: { alertCheckIntervalMs: 0 } });
    await broker.evaluateAlerts();
    expect(await alerts()).toEqual(['consumer-stalled']);
    expect(await partitionOf('g')).toMatchObject({ state: 'stalled' });
    // A commit, even one that leaves records to read, shows progress.
    await broker.commitOffsets({ groupId: 'g', topic: 't', offsets: [{ partition: 0, offset: 1 }] });
    expect(await alerts()).toEqual(['consumer-stalled:resolved']);
    expect(await partitionOf('g')).toMatchObject({ state: 'lagging', lag: 2 });
  });

  it('evaluates on the clock\'s timer', async () => {
    await broker.close();
    const passes: boolean[] = [];
    await openBroker({ monitoring: { alertCheckIntervalMs: 30_000, onScheduledPass: ({ ran }) => passes.push(ran) } });
    await broker.createTopic({ topic: 't', partitions: 1 });
    await broker.subscribe({ groupId: 'g', topic: 't', startPolicy: 'earliest', stallMs: 10 * HOUR });
    await broker.commitOffsets({ groupId: 'g', topic: 't', offsets: [{ partition: 0, offset: 0 }] });
    await produce('t', 1);
    for (let i = 1; i <= 3; i++) {
      clock.advance(30_000); // the timer's pass starts
      await vi.waitFor(() => expect(passes).toHaveLength(i));
    }
    expect(passes).toEqual([true, true, true]);
    // The history keeps a sample per minute: the last of each (30 s in the first, 90 s in the second).
    expect((await broker.groupHistory('g')).partitions[0]!.samples.map((s) => [s.at - T0, s.lag])).toEqual([[30_000, 1], [90_000, 1]]);
  });

  it('counts a stall from the first unread record\'s timestamp, not from the first look, and raises its alert in the describe that shows it', async () => {
    await broker.close();
    await openBroker({ monitoring: { alertCheckIntervalMs: 30_000 } });
    await broker.createTopic({ topic: 't', partitions: 1, config: { retentionMs: -1 } });
    await broker.subscribe({ groupId: 'g', topic: 't', startPolicy: 'earliest', stallMs: 2000 });
    await broker.commitOffsets({ groupId: 'g', topic: 't', offsets: [{ partition: 0, offset: 0 }] });
    clock.advance(HOUR); // idle: a record arriving now is not stalled at once
    await produce('t', 3); // the group has stopped: no commit follows
    clock.advance(1999);
    expect(await partitionOf('g')).toMatchObject({ state: 'lagging', unreadRecords: 3 });
    clock.advance(1); // 2 s after the records arrived, long before the timer's first pass (30 s)
    expect(await partitionOf('g')).toMatchObject({ state: 'stalled', unreadRecords: 3 });
    expect(await alerts()).toEqual(['consumer-stalled']);
  });

  it('raises consumer-stalled when the first unread record has waited stallMs, with no timer and no describe', async () => {
    await broker.createTopic({ topic: 't', partitions: 1, config: { retentionMs: -1 } });
    await broker.subscribe({ groupId: 'g', topic: 't', startPolicy: 'earliest', stallMs: MINUTE });
    await broker.commitOffsets({ groupId: 'g', topic: 't', offsets: [{ partition: 0, offset: 0 }] });
    clock.advance(10_000);
    await produce('t', 3);
    clock.advance(MINUTE - 1);
    await produce('t', 2);
    expect(await broker.listAlerts({ groupId: 'g' })).toEqual([]);
    clock.advance(1); // the arrival's evaluation finds it stalled, at the minute
    await vi.waitFor(async () => expect(await broker.listAlerts({ groupId: 'g' })).toMatchObject([{ kind: 'consumer-stalled', createdAt: T0 + 10_000 + MINUTE }]));
    // A commit clears it; the records left then stall a minute after that commit, woken by the evaluation the commit ran.
    await broker.commitOffsets({ groupId: 'g', topic: 't', offsets: [{ partition: 0, offset: 1 }] });
    expect(await alerts()).toEqual(['consumer-stalled:resolved']);
    clock.advance(MINUTE);
    await vi.waitFor(async () => expect(await alerts()).toEqual(['consumer-stalled:resolved', 'consumer-stalled']));
    expect((await broker.listAlerts({ groupId: 'g', active: true }))[0]!.createdAt).toBe(T0 + 10_000 + 2 * MINUTE);
  });

  it('raises retention-headroom when the first unread record\'s headroom falls below the ratio, with no timer', async () => {
    await broker.createTopic({ topic: 't', partitions: 1, config: { retentionMs: HOUR } });
    await broker.subscribe({ groupId: 'g', topic: 't', startPolicy: 'earliest', stallMs: 10 * HOUR });
    await broker.commitOffsets({ groupId: 'g', topic: 't', offsets: [{ partition: 0, offset: 0 }] });
    await produce('t', 1);
    expect(await partitionOf('g')).toMatchObject({ state: 'lagging', headroomMs: HOUR }); // this evaluation finds it due in 45 min
    clock.advance(45 * MINUTE);
    expect(await broker.listAlerts({ groupId: 'g' })).toEqual([]);
    clock.advance(1);
    await vi.waitFor(async () => expect(await broker.listAlerts({ groupId: 'g' })).toMatchObject([{ kind: 'retention-headroom', createdAt: T0 + 45 * MINUTE + 1 }]));
  });

  it('counts a record stamped ahead of the broker\'s clock as waiting from when the broker first saw it', async () => {
    await broker.createTopic({ topic: 't', partitions: 1, config: { retentionMs: -1 } });
    await broker.subscribe({ groupId: 'g', topic: 't', startPolicy: 'earliest', stallMs: MINUTE });
    await broker.commitOffsets({ groupId: 'g', topic: 't', offsets: [{ partition: 0, offset: 0 }] });
    clock.advance(HOUR);
    await broker.produce({ topic: 't', records: [{ key: null, value: Buffer.from('ahead'), partition: 0, timestamp: clock.now() + HOUR }] });
    expect(await partitionOf('g')).toMatchObject({ state: 'lagging' });
    clock.advance(MINUTE);
    expect(await partitionOf('g')).toMatchObject({ state: 'stalled' });
  });

  it('counts unread records where compaction left gaps, and reaches 0 when caught up, the compacted tail included', async () => {
    await broker.createTopic({ topic: 'c', partitions: 1, config: { cleanupPolicy: 'compact', deleteRetentionMs: 0, minCompactionLagMs: 0 } });
    await broker.subscribe({ groupId: 'g', topic: 'c', startPolicy: 'earliest' });
    const keys = ['a', 'b', 'a', 'b', 'c', 'd', 'e'];
    await produce('c', keys.length, 0, (i) => keys[i]!);
    await produce('c', 1, 0, () => 'e'); // offset 7 supersedes e@6
    await broker.produce({ topic: 'c', records: [{ key: Buffer.from('d'), value: null, partition: 0 }] }); // tombstone of d, the tail
    await broker.commitOffsets({ groupId: 'g', topic: 'c', offsets: [{ partition: 0, offset: 0 }] });
    await broker.compactTopic({ topic: 'c' });
    clock.advance(1);
    await broker.compactTopic({ topic: 'c' }); // past its delete horizon, the tombstone goes too
    const readable = (await broker.fetch({ topic: 'c', partitions: [{ partition: 0, offset: 0 }] })).partitions[0]!;
    expect(readable.records.map((r) => r.offset)).toEqual([2, 3, 4, 7]);
    expect(await partitionOf('g')).toMatchObject({ lag: 9, unreadRecords: 4, unreadRecordsEstimate: false, state: 'lagging' });
    await broker.commitOffsets({ groupId: 'g', topic: 'c', offsets: [{ partition: 0, offset: 5 }] });
    expect(await partitionOf('g')).toMatchObject({ lag: 4, unreadRecords: 1 });
    // Past the last record only compacted offsets are left: nothing to read.
    await broker.commitOffsets({ groupId: 'g', topic: 'c', offsets: [{ partition: 0, offset: 8 }] });
    expect(await partitionOf('g')).toMatchObject({ lag: 1, unreadRecords: 0, timeLagMs: 0, state: 'ok' });
    // A reader moves past them: what it commits then leaves no lag.
    const tail = (await broker.fetch({ topic: 'c', partitions: [{ partition: 0, offset: 8 }] })).partitions[0]!;
    expect(tail).toMatchObject({ records: [], nextOffset: 9 });
    await broker.commitOffsets({ groupId: 'g', topic: 'c', offsets: [{ partition: 0, offset: tail.nextOffset }] });
    expect(await partitionOf('g')).toMatchObject({ lag: 0, unreadRecords: 0, state: 'ok' });
  });

  it('measures headroom in bytes against size retention', async () => {
    await broker.createTopic({ topic: 's', partitions: 1, config: { retentionBytes: 100_000, segmentBytes: 20_000, retentionMs: -1 } });
    await broker.subscribe({ groupId: 'g', topic: 's', startPolicy: 'earliest', headroomWarnRatio: 0.5 });
    await broker.commitOffsets({ groupId: 'g', topic: 's', offsets: [{ partition: 0, offset: 0 }] });
    const value = Buffer.alloc(1000, 'x');
    const batch = () => broker.produce({ topic: 's', records: Array.from({ length: 10 }, () => ({ key: null, value, partition: 0 })) });
    for (let i = 0; i < 4; i++) await batch();
    const first = await partitionOf('g');
    expect(first.state).toBe('lagging');
    expect(first.headroomBytes).toBeGreaterThan(50_000);
    for (let i = 0; i < 3; i++) await batch();
    const later = await partitionOf('g');
    // Each batch of ~10 KB appended took as much headroom.
    expect(first.headroomBytes! - later.headroomBytes!).toBeGreaterThan(30_000);
    expect(later).toMatchObject({ state: 'at-risk', headroomMs: null });
  });

  it('shows every subscribed group of a topic side by side', async () => {
    await broker.createTopic({ topic: 't', partitions: 2 });
    await produce('t', 10, 0);
    for (const [g, offset] of [['a', 10], ['b', 3]] as const) {
      await broker.subscribe({ groupId: g, topic: 't', startPolicy: 'earliest' });
      await broker.commitOffsets({ groupId: g, topic: 't', offsets: [{ partition: 0, offset }] });
    }
    const d = await broker.describeTopic('t', { groups: true });
    expect(d.groups!.map((g) => [g.groupId, g.partitions.map((p) => [p.lag, p.state])])).toEqual([
      ['a', [[0, 'ok'], [0, 'ok']]],
      ['b', [[7, 'lagging'], [0, 'ok']]],
    ]);
    expect((await broker.describeTopic('t')).groups).toBeUndefined();
  });
});

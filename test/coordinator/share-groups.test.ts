/**
 * Share groups through the embedded broker's API (real data directory, SQLite catalog, LMDB offsets) on a manual clock:
 * members acquiring the same partition side by side, each record held by one under its lock; accept, release with a
 * delay, reject, renew; locks that expire and members that end; the delivery limit and the dead letters; key order;
 * and the state surviving a restart of the broker with every count kept.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Broker } from '../../src/broker/broker.js';
import { ManualClock } from '../../src/common/clock.js';
import type { ShareAckRequest } from '../../src/protocol/share-groups.js';
import type { SubscribeRequest } from '../../src/protocol/subscriptions.js';
import { openTimerlessBroker } from '../helpers/timerless-broker.js';
import { tmpDir } from '../helpers/tmp.js';
import { readEdits } from '../helpers/wikiticker.js';
import { encodeBatch } from '../../src/protocol/record-batch.js';

const T0 = Date.UTC(2026, 0, 1);
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
  await broker.produce({ topic: 't', records: Array.from({ length: 10 }, (_, i) => ({ key: Buffer.from(`k${i % 3}`), value: Buffer.from(`r${i}`), partition: 0 })) });
});
afterEach(() => broker.close());

const share = (extra: Partial<SubscribeRequest> = {}) =>
  broker.subscribe({ groupId: 'q', topic: 't', type: 'share', startPolicy: 'earliest', lockMs: 5000, maxDeliveries: 3, ...extra });
const acquire = async (memberId: string, maxRecords = 500) =>
  (await broker.shareFetch({ groupId: 'q', topic: 't', memberId, maxRecords })).records.map((r) => [r.offset, r.deliveryCount]);
const ack = (memberId: string, type: ShareAckRequest['acks'][number]['type'], offsets: number[], extra: Partial<ShareAckRequest['acks'][number]> = {}) =>
  broker.shareAcknowledge({ groupId: 'q', topic: 't', memberId, acks: offsets.map((offset) => ({ partition: 0, offset, type, ...extra })) });

describe('share groups', () => {
  it('is created with its settings and a dead-letter topic; its type never changes; members do not join', async () => {
    await share();
    const [sub] = (await broker.describeGroup('q')).subscriptions;
    expect(sub).toMatchObject({ type: 'share', share: { lockMs: 5000, ordering: 'none', maxInFlightRecords: 2000 }, maxDeliveries: 3, deadLetterTopic: 't.q.dlq' });
    const code = (p: Promise<unknown>) => p.then(() => 'ok', (err: { code: string; message: string }) => `${err.code}: ${err.message}`);
    expect(await code(broker.subscribe({ groupId: 'q', topic: 't', type: 'consumer' }))).toMatch(/INVALID_REQUEST: group q is a share group: a group's type/);
    expect(await code(broker.subscribe({ groupId: 'q', topic: 't', retry: { delaysMs: [1000] } }))).toMatch(/not through retry tiers/);
    expect(await code(broker.joinGroup({ groupId: 'q', topics: ['t'] }))).toMatch(/INVALID_REQUEST: group q is a share group: its members acquire records/);
    expect(await code(broker.subscribe({ groupId: 'c', topic: 't', lockMs: 5000 }))).toMatch(/lockMs is a setting of share groups; group c is a consumer group/);
    expect(await code(broker.shareFetch({ groupId: 'c', topic: 't', memberId: 'm' }))).toMatch(/group c has no share subscription to t/);
  });

  it('hands the same partition to several members side by side, each record to one; accept moves the start offset', async () => {
    await share();
    expect(await acquire('m1', 4)).toEqual([[0, 1], [1, 1], [2, 1], [3, 1]]);
    expect(await acquire('m2', 4)).toEqual([[4, 1], [5, 1], [6, 1], [7, 1]]);
    await ack('m2', 'accept', [4, 5]);
    expect((await broker.shareAcknowledge({ groupId: 'q', topic: 't', memberId: 'm2', acks: [{ partition: 0, offset: 0, type: 'accept' }] })).partitions)
      .toMatchObject([{ partition: 0, error: { code: 'INVALID_RECORD_STATE' } }]); // m1 holds it
    await ack('m1', 'accept', [0, 1, 2, 3]);
    // The start offset is the group's committed offset: lag, headroom, states and alerts follow it.
    const described = await broker.describeGroup('q');
    expect(described.subscriptions[0]!.partitions[0]).toMatchObject({ committedOffset: 6, lag: 4, state: 'lagging', share: { acquired: 2, available: 2 } });
    expect(described.shareMembers!.map((m) => m.memberId).sort()).toEqual(['m1', 'm2']);
    expect(await acquire('m1')).toEqual([[8, 1], [9, 1]]);
    expect(await acquire('m3')).toEqual([]); // everything is held
    // /metrics shows the same: records acquired and available, members, deliveries and outcomes by kind
    const text = await broker.metrics.scrape();
    const series = (name: string) => text.split('\n').filter((l) => l.startsWith(`${name}{`)).map((l) => l.replace(/^[^{]+/, '')).sort();
    expect(series('onelog_share_records_acquired')).toEqual(['{group="q",topic="t",partition="0"} 4']);
    expect(series('onelog_share_records_available')).toEqual(['{group="q",topic="t",partition="0"} 0']);
    expect(series('onelog_share_members')).toEqual(['{group="q"} 3']);
    expect(series('onelog_share_deliveries_total')).toEqual(['{group="q",topic="t",kind="first"} 10']);
    expect(series('onelog_share_acknowledgements_total')).toEqual(['{group="q",topic="t",kind="accept"} 6']);
  });

  it('releases a record after its delay, redelivers what an expired lock held, and dead-letters at the delivery limit or on reject', async () => {
    await share();
    expect(await acquire('m1', 3)).toEqual([[0, 1], [1, 1], [2, 1]]);
    await ack('m1', 'release', [0], { delayMs: 2000 });
    await ack('m1', 'reject', [1], { reason: 'malformed' });
    clock.advance(1999);
    expect(await acquire('m2', 1)).toEqual([[3, 1]]); // 0 waits out its delay
    clock.advance(1);
    expect(await acquire('m2', 1)).toEqual([[0, 2]]);
    await ack('m1', 'renew', [2]); // m1 holds 2 for another lockMs from now
    clock.advance(5000); // every lock taken before now ended: 2 (renewed at +1999), 3, 0
    expect((await acquire('m3', 3)).map(([o, d]) => [o, d])).toEqual([[0, 3], [2, 2], [3, 2]]);
    clock.advance(5000); // 0's third lock ends: its limit
    await acquire('m3', 0 + 1);
    const dead = await broker.listDeadLetters({ groupId: 'q', topic: 't' });
    expect(dead.depth).toBe(2);
    expect(dead.records.map((r) => [r.original.offset, r.attempts])).toEqual([[1, 1], [0, 3]]);
    expect(dead.records[0]!.reason).toBe('malformed');
    expect(dead.records[1]!.reason).toContain('delivered 3 times (maxDeliveries 3)');
  });

  it('a member that leaves is no longer listed, and what it held is available again at once, its deliveries counted', async () => {
    await share();
    expect(await acquire('m1', 3)).toEqual([[0, 1], [1, 1], [2, 1]]);
    expect(await acquire('m2', 1)).toEqual([[3, 1]]);
    const left = await broker.shareAcknowledge({ groupId: 'q', topic: 't', memberId: 'm1', acks: [{ partition: 0, offset: 1, type: 'accept' }], leave: true });
    expect(left.partitions).toEqual([{ partition: 0 }]);
    expect((await broker.describeGroup('q')).shareMembers!.map((m) => m.memberId)).toEqual(['m2']);
    expect(await acquire('m2', 3)).toEqual([[0, 2], [2, 2], [4, 1]]); // before its lock (5 s) would have ended
    await expect(broker.shareAcknowledge({ groupId: 'q', topic: 't', memberId: 'm2', acks: [] })).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
  });

  it('starts a topic created again under its name from nothing: the deleted topic\'s share state goes with it (librdkafka\'s 0184)', async () => {
    await share();
    await ack('m1', 'accept', (await acquire('m1')).map(([o]) => o!));
    await broker.deleteTopic('t');
    await broker.createTopic({ topic: 't', partitions: 1 });
    await broker.produce({ topic: 't', records: Array.from({ length: 4 }, (_, i) => ({ key: null, value: Buffer.from(`again ${i}`), partition: 0 })) });
    await share();
    expect(await acquire('m1')).toEqual([[0, 1], [1, 1], [2, 1], [3, 1]]);
  });

  it('is deleted only without live members', async () => {
    await share();
    await acquire('m1', 1);
    await expect(broker.deleteGroup('q')).rejects.toMatchObject({ code: 'NON_EMPTY_GROUP' });
    clock.advance(45_001); // its session ended
    await broker.deleteGroup('q');
    await expect(broker.describeGroup('q')).rejects.toMatchObject({ code: 'UNKNOWN_GROUP' });
  });

  it('goes on past records the log no longer has: a dead one deleted below the log start, a released one compacted away', async () => {
    await broker.createTopic({ topic: 'small', partitions: 1, config: { segmentBytes: 300 } });
    await broker.produce({ topic: 'small', records: Array.from({ length: 40 }, (_, i) => ({ key: null, value: Buffer.from(`r${i}`), partition: 0 })) });
    await broker.subscribe({ groupId: 'd', topic: 'small', type: 'share', startPolicy: 'earliest', lockMs: 5000, maxDeliveries: 3 });
    const take = async (memberId: string, maxRecords: number) =>
      (await broker.shareFetch({ groupId: 'd', topic: 'small', memberId, maxRecords })).records.map((r) => r.offset);
    expect(await take('m1', 4)).toEqual([0, 1, 2, 3]);
    const { logStartOffset } = await broker.deleteRecords({ topic: 'small', partition: 0, beforeOffset: 3 });
    expect(logStartOffset).toBeGreaterThan(0);
    // Rejected after the log deleted it: nothing is left to move to the dead letters, and the partition goes on.
    const rejected = await broker.shareAcknowledge({ groupId: 'd', topic: 'small', memberId: 'm1', acks: [{ partition: 0, offset: 0, type: 'reject' }] });
    expect(rejected.partitions).toEqual([{ partition: 0 }]);
    const next = await take('m2', 3);
    expect(next[0]).toBeGreaterThanOrEqual(logStartOffset);
    expect((await broker.listDeadLetters({ groupId: 'd', topic: 'small' })).depth).toBe(0);
    // The records m1 held below the log start are done with; what it holds above it is still its own.
    await broker.shareAcknowledge({ groupId: 'd', topic: 'small', memberId: 'm2', acks: next.map((offset) => ({ partition: 0, offset, type: 'accept' as const })) });

    // Compaction removes a record that was released: its redelivery finds nothing, and the start offset passes it.
    await broker.createTopic({ topic: 'keyed', partitions: 1, config: { cleanupPolicy: 'compact', segmentBytes: 200, minCompactionLagMs: 0 } });
    const keyed = (key: string, i: number) => ({ key: Buffer.from(key), value: Buffer.from(`v${i}`), partition: 0 });
    await broker.produce({ topic: 'keyed', records: [keyed('k0', 0), ...Array.from({ length: 20 }, (_, i) => keyed(`a${i}`, i + 1)), keyed('k0', 21)] });
    await broker.produce({ topic: 'keyed', records: Array.from({ length: 20 }, (_, i) => keyed(`b${i}`, i + 22)) });
    await broker.subscribe({ groupId: 'c', topic: 'keyed', type: 'share', startPolicy: 'earliest', lockMs: 5000, maxDeliveries: 3 });
    const first = await broker.shareFetch({ groupId: 'c', topic: 'keyed', memberId: 'm1', maxRecords: 1 });
    expect(first.records.map((r) => r.offset)).toEqual([0]);
    await broker.compactTopic({ topic: 'keyed', wait: true });
    await broker.shareAcknowledge({ groupId: 'c', topic: 'keyed', memberId: 'm1', acks: [{ partition: 0, offset: 0, type: 'release' }] });
    const rest = await broker.shareFetch({ groupId: 'c', topic: 'keyed', memberId: 'm2', maxRecords: 100 });
    expect(rest.records.map((r) => r.offset)).not.toContain(0);
    expect(rest.records.length).toBeGreaterThan(0);
    await broker.shareAcknowledge({ groupId: 'c', topic: 'keyed', memberId: 'm2', acks: rest.records.map((r) => ({ partition: 0, offset: r.offset, type: 'accept' as const })) });
    const described = await broker.describeGroup('c');
    expect(described.subscriptions[0]!.partitions[0]).toMatchObject({ committedOffset: 42, lag: 0, share: { acquired: 0, available: 0 } });
  });

  it('redelivers every record released, also where they span a segment end', async () => {
    await broker.createTopic({ topic: 'seg', partitions: 1, config: { segmentBytes: 300 } });
    // One batch each: a segment of 300 bytes holds a few, so 10 records span several segments.
    for (let i = 0; i < 40; i++) await broker.produce({ topic: 'seg', records: [{ key: null, value: Buffer.from(`r${i}`), partition: 0 }] });
    await broker.subscribe({ groupId: 's', topic: 'seg', type: 'share', startPolicy: 'earliest', lockMs: 5000 });
    const take = async (memberId: string, maxRecords: number) =>
      (await broker.shareFetch({ groupId: 's', topic: 'seg', memberId, maxRecords })).records.map((r) => [r.offset, r.deliveryCount]);
    expect(await take('m1', 10)).toEqual(Array.from({ length: 10 }, (_, i) => [i, 1]));
    await broker.shareAcknowledge({ groupId: 's', topic: 'seg', memberId: 'm1', acks: Array.from({ length: 10 }, (_, offset) => ({ partition: 0, offset, type: 'release' as const })) });
    expect(await take('m2', 10)).toEqual(Array.from({ length: 10 }, (_, i) => [i, 2]));
  });

  it('hands out what fits the byte budget; the rest stays available, its delivery not counted', async () => {
    await broker.createTopic({ topic: 'big', partitions: 1 });
    await broker.produce({ topic: 'big', records: Array.from({ length: 5 }, (_, i) => ({ key: null, value: Buffer.alloc(1000, i), partition: 0 })) });
    await broker.subscribe({ groupId: 'b', topic: 'big', type: 'share', startPolicy: 'earliest' });
    const fetch = async (maxBytes: number) =>
      (await broker.shareFetch({ groupId: 'b', topic: 'big', memberId: 'm', maxBytes })).records.map((r) => [r.offset, r.deliveryCount]);
    expect(await fetch(2500)).toEqual([[0, 1], [1, 1]]);
    expect(await fetch(10)).toEqual([[2, 1]]); // the first record goes whatever its size
    expect(await fetch(1 << 20)).toEqual([[3, 1], [4, 1]]);
  });

  it('refuses a commit and a nack on a share group (acknowledgements and resets move it), and the deletion of its dead-letter topic', async () => {
    await share();
    expect(await acquire('m1', 2)).toEqual([[0, 1], [1, 1]]);
    await expect(broker.commitOffsets({ groupId: 'q', topic: 't', offsets: [{ partition: 0, offset: 5 }] }))
      .rejects.toMatchObject({ code: 'INVALID_REQUEST', message: expect.stringContaining('share group') });
    // Nor a topic it does not read yet (the commit would have made it a subscription)
    await broker.createTopic({ topic: 'other', partitions: 1 });
    await expect(broker.commitOffsets({ groupId: 'q', topic: 'other', offsets: [{ partition: 0, offset: 0 }] })).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
    expect((await broker.describeGroup('q')).subscriptions.map((sub) => sub.topic)).toEqual(['t']);
    // Its dead-letter topic cannot be deleted while it dead-letters records to it
    await expect(broker.deleteTopic('t.q.dlq')).rejects.toMatchObject({ code: 'TOPIC_IN_USE' });
    await expect(broker.nack({ groupId: 'q', topic: 't', partition: 0, offset: 0, reason: 'x' }))
      .rejects.toMatchObject({ code: 'INVALID_REQUEST', message: expect.stringContaining('share-acks') });
    expect((await broker.describeGroup('q')).subscriptions[0]!.partitions[0]).toMatchObject({ committedOffset: 0, share: { acquired: 2 } });
  });

  it('keeps every count through a restart: what was held is available again, none is lost, each is accepted once', async () => {
    await share();
    expect(await acquire('m1', 5)).toEqual([[0, 1], [1, 1], [2, 1], [3, 1], [4, 1]]);
    await ack('m1', 'accept', [0, 2]);
    await broker.close(); // as a crash: m1's locks go with the broker
    await open();
    expect(await acquire('m2')).toEqual([[1, 2], [3, 2], [4, 2], [5, 1], [6, 1], [7, 1], [8, 1], [9, 1]]);
    await ack('m2', 'accept', [1, 3, 4, 5, 6, 7, 8, 9]);
    expect(await acquire('m2')).toEqual([]);
    const state = await broker.describeGroup('q');
    expect(state.subscriptions[0]!.type).toBe('share');
  });

  it('in key order, hands out each key\'s records one at a time, in order, while other keys run in parallel', async () => {
    await share({ ordering: 'key' });
    // keys: k0 at 0,3,6,9; k1 at 1,4,7; k2 at 2,5,8
    expect(await acquire('m1')).toEqual([[0, 1], [1, 1], [2, 1]]);
    expect(await acquire('m2')).toEqual([]);
    await ack('m1', 'accept', [1]);
    expect(await acquire('m2')).toEqual([[4, 1]]);
    await ack('m1', 'release', [0]);
    expect(await acquire('m2')).toEqual([[0, 2]]); // the released record blocks only its key, and comes first
  });

  it('moves the start offset with an offsets reset, dry run first: nothing in flight after it, a replay from earliest', async () => {
    await share();
    expect(await acquire('m1', 4)).toEqual([[0, 1], [1, 1], [2, 1], [3, 1]]);
    await ack('m1', 'accept', [0, 1]);
    const dry = await broker.resetOffsets({ groupId: 'q', topic: 't', spec: { to: 'offset', offset: 7 }, requestedBy: 'test' });
    expect(dry).toMatchObject({ executed: false, partitions: [{ partition: 0, currentOffset: 2, newOffset: 7 }] });
    expect(await acquire('m2', 1)).toEqual([[4, 1]]); // a dry run changed nothing
    await broker.resetOffsets({ groupId: 'q', topic: 't', spec: { to: 'offset', offset: 7 }, execute: true, requestedBy: 'test' });
    expect(await acquire('m2')).toEqual([[7, 1], [8, 1], [9, 1]]);
    expect((await ack('m1', 'accept', [2])).partitions).toMatchObject([{ partition: 0, error: { code: 'INVALID_RECORD_STATE' } }]);
    await broker.resetOffsets({ groupId: 'q', topic: 't', spec: { to: 'earliest' }, execute: true, requestedBy: 'test' });
    expect((await acquire('m3', 3)).map(([o]) => o)).toEqual([0, 1, 2]);
    expect((await broker.describeGroup('q')).resets.map((r) => [r.oldOffset, r.newOffset])).toEqual([[7, 0], [2, 7]]);
  });

  it('refuses an acknowledgement once the lock ended, an offset named twice, and applies an alter to partitions in use at once', async () => {
    await share();
    expect(await acquire('m1', 2)).toEqual([[0, 1], [1, 1]]);
    clock.advance(5000); // the locks end; nobody acquires meanwhile
    expect((await ack('m1', 'accept', [0])).partitions).toMatchObject([{ partition: 0, error: { code: 'INVALID_RECORD_STATE' } }]);
    expect(await acquire('m2', 2)).toEqual([[0, 2], [1, 2]]);
    expect(await broker.shareAcknowledge({ groupId: 'q', topic: 't', memberId: 'm2', acks: [{ partition: 0, offset: 0, type: 'accept' }, { partition: 0, offset: 0, type: 'reject' }] })
      .catch((err: { code: string; message: string }) => `${err.code}: ${err.message}`)).toMatch(/INVALID_REQUEST: offset 0 is acknowledged twice/);
    await share({ maxDeliveries: 2 }); // an alter: the partition in use takes it at once
    clock.advance(5000);
    await ack('m2', 'release', [1]).catch(() => undefined); // its lock ended: refused, and 0 and 1 were released at their limit
    expect(await acquire('m3')).toEqual([[2, 1], [3, 1], [4, 1], [5, 1], [6, 1], [7, 1], [8, 1], [9, 1]]);
    expect((await broker.listDeadLetters({ groupId: 'q', topic: 't' })).records.map((r) => [r.original.offset, r.attempts])).toEqual([[0, 2], [1, 2]]);
  });

  it('hands out records of compressed batches as they were produced, first deliveries and redeliveries alike, keyed in key order', async () => {
    const edits = readEdits().slice(0, 120);
    await broker.createTopic({ topic: 'z', partitions: 1 });
    for (const [i, compression] of [[0, 'lz4'], [40, 'gzip'], [80, 'none']] as const) {
      const records = edits.slice(i, i + 40).map((e) => ({ key: Buffer.from(e.key), value: Buffer.from(e.value), timestamp: e.timestamp, headers: [{ key: 'i', value: Buffer.from(String(i)) }] }));
      await broker.produceBatches({ topic: 'z', batches: [{ partition: 0, batch: encodeBatch(records, 0, records[0]!.timestamp, undefined, { compression }) }] });
    }
    await broker.subscribe({ groupId: 'z', topic: 'z', type: 'share', startPolicy: 'earliest', lockMs: 5000, ordering: 'key' });
    const fetch = async (memberId: string) => (await broker.shareFetch({ groupId: 'z', topic: 'z', memberId, maxRecords: 1000 })).records;
    const first = await fetch('m1');
    // In key order only each key's first record goes out; every one is the edit produced at its offset.
    const firstOfKey = edits.filter((e, i) => edits.findIndex((o) => o.key === e.key) === i);
    expect(first.map((r) => r.key!.toString())).toEqual(firstOfKey.map((e) => e.key));
    for (const r of first) {
      expect([r.value!.toString(), r.timestamp, r.deliveryCount]).toEqual([edits[r.offset]!.value, edits[r.offset]!.timestamp, 1]);
      expect(r.headers.map((h) => h.value!.toString())).toEqual([String(r.offset - (r.offset % 40))]);
    }
    // Released, they are read from the log again for the next delivery.
    await broker.shareAcknowledge({ groupId: 'z', topic: 'z', memberId: 'm1', acks: first.map((r) => ({ partition: 0, offset: r.offset, type: 'release' as const })) });
    const again = await fetch('m2');
    expect(again.map((r) => [r.offset, r.deliveryCount, r.value!.toString()])).toEqual(first.map((r) => [r.offset, 2, edits[r.offset]!.value]));
  });
});

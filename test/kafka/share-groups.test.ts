/**
 * Share groups on the Kafka protocol (KIP-932), driven on the wire below any client (no JavaScript client speaks
 * them; librdkafka's share consumer is driven by test/integration/librdkafka-share.test.ts and the suite tool): a
 * broker on a manual clock, with Wikipedia edits, and its Kafka listener. Members join with ShareGroupHeartbeat and
 * split the partitions, fetch with ShareFetch (records as stored batches with acquired ranges), acknowledge with
 * ACCEPT, RELEASE, REJECT and RENEW, and the group is the broker's own share group: its dead letters, its offsets
 * (DescribeShareGroupOffsets, AlterShareGroupOffsets), its configs (IncrementalAlterConfigs) and onelog's members.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { ManualClock } from '../../src/common/clock.js';
import { KafkaListener } from '../../src/kafka/listener.js';
import type { Struct } from '../../src/kafka/codec/interpreter.js';
import type { MessageDefinition } from '../../src/kafka/codec/schema.js';
import { deleteGroupsRequest, deleteGroupsResponse, describeConfigsRequest, describeConfigsResponse, incrementalAlterConfigsRequest, incrementalAlterConfigsResponse, listGroupsRequest, listGroupsResponse } from '../../src/kafka/messages/admin.js';
import { metadataRequest, metadataResponse } from '../../src/kafka/messages/metadata.js';
import {
  alterShareGroupOffsetsRequest, alterShareGroupOffsetsResponse, describeShareGroupOffsetsRequest, describeShareGroupOffsetsResponse,
  shareAcknowledgeRequest, shareAcknowledgeResponse, shareFetchRequest, shareFetchResponse, shareGroupDescribeRequest, shareGroupDescribeResponse,
  shareGroupHeartbeatRequest, shareGroupHeartbeatResponse,
} from '../../src/kafka/messages/share-groups.js';
import { silentLogger } from '../../src/common/logger.js';
import { batchSize, decodeRecords } from '../../src/protocol/record-batch.js';
import { call as callOn } from '../helpers/kafka-wire.js';
import { openTimerlessBroker } from '../helpers/timerless-broker.js';
import { tmpDir } from '../helpers/tmp.js';
import { readEdits } from '../helpers/wikiticker.js';

const T0 = Date.UTC(2026, 0, 1);
const EDITS = readEdits().slice(0, 300);
let clock: ManualClock;
let broker: Broker;
let listener: KafkaListener;
let dataDir: string;

const start = async () => {
  broker = await openTimerlessBroker(dataDir, clock);
  listener = await KafkaListener.start(broker, { port: 0, logger: silentLogger, clock, initialRebalanceDelayMs: 0 });
};
const stop = async () => {
  await listener.close();
  await broker.close();
};

beforeEach(async () => {
  clock = new ManualClock(T0);
  dataDir = tmpDir();
  await start();
  await broker.createTopic({ topic: 'edits', partitions: 3 });
  await broker.produce({ topic: 'edits', records: EDITS.map((e, i) => ({ key: Buffer.from(e.key), value: Buffer.from(e.value), partition: i % 3 })) });
});
afterEach(stop);

const call = (key: number, version: number, req: MessageDefinition, res: MessageDefinition, value: Struct) => callOn(listener.port, key, version, req, res, value);

interface Heartbeat { errorCode: number; memberEpoch: number; assignment: { topicPartitions: Array<{ topicId: string; partitions: number[] }> } | null }
const heartbeat = (memberId: string, memberEpoch: number, topics: string[] | null = ['edits'], groupId = 'q') =>
  call(76, 1, shareGroupHeartbeatRequest, shareGroupHeartbeatResponse, { groupId, memberId, memberEpoch, rackId: null, subscribedTopicNames: topics }) as Promise<unknown> as Promise<Heartbeat>;

type AckBatch = { firstOffset: number; lastOffset: number; acknowledgeTypes: number[] };
interface FetchAnswer {
  errorCode: number;
  acquisitionLockTimeoutMs: number;
  responses: Array<{ topicId: string; partitions: Array<{ partitionIndex: number; errorCode: number; acknowledgeErrorCode: number; records: Buffer | null; acquiredRecords: Array<{ firstOffset: number; lastOffset: number; deliveryCount: number }> }> }>;
}
const shareFetch = (memberId: string, epoch: number, partitions: Array<{ topicId: string; partition: number; acks?: AckBatch[] }>, o: { maxRecords?: number; maxBytes?: number; version?: number; isRenewAck?: boolean } = {}) =>
  call(78, o.version ?? 1, shareFetchRequest, shareFetchResponse, {
    groupId: 'q', memberId, shareSessionEpoch: epoch, maxWaitMs: 0, minBytes: 1, maxBytes: o.maxBytes ?? 1 << 20, maxRecords: o.maxRecords ?? 500, batchSize: 500,
    shareAcquireMode: 0, isRenewAck: o.isRenewAck ?? false,
    topics: partitions.map((p) => ({ topicId: p.topicId, partitions: [{ partitionIndex: p.partition, acknowledgementBatches: p.acks ?? [] }] })), forgottenTopicsData: [],
  }) as Promise<unknown> as Promise<FetchAnswer>;
const shareAck = (memberId: string, epoch: number, topicId: string, partition: number, acks: AckBatch[], o: { version?: number; isRenewAck?: boolean } = {}) =>
  call(79, o.version ?? 1, shareAcknowledgeRequest, shareAcknowledgeResponse, {
    groupId: 'q', memberId, shareSessionEpoch: epoch, isRenewAck: o.isRenewAck ?? false, topics: [{ topicId, partitions: [{ partitionIndex: partition, acknowledgementBatches: acks }] }],
  }) as Promise<unknown> as Promise<{ errorCode: number; acquisitionLockTimeoutMs: number; responses: Array<{ partitions: Array<{ partitionIndex: number; errorCode: number }> }> }>;
const setConfigs = (groupId: string, configs: Array<[string, string | null]>) =>
  call(44, 1, incrementalAlterConfigsRequest, incrementalAlterConfigsResponse, {
    resources: [{ resourceType: 32, resourceName: groupId, configs: configs.map(([name, value]) => ({ name, configOperation: value === null ? 1 : 0, value })) }], validateOnly: false,
  }) as Promise<unknown> as Promise<{ responses: Array<{ errorCode: number; errorMessage: string | null }> }>;

/** The records a fetch answer acquired, by partition: [offset, deliveryCount, key] in offset order, read from its batches. */
function acquired(answer: FetchAnswer): Map<number, Array<[number, number, string]>> {
  const out = new Map<number, Array<[number, number, string]>>();
  for (const p of answer.responses.flatMap((t) => t.partitions)) {
    const records = [];
    for (let pos = 0; p.records && pos < p.records.length; pos += batchSize(p.records, pos)) records.push(...decodeRecords(p.records, pos));
    const got: Array<[number, number, string]> = [];
    for (const r of p.acquiredRecords) {
      for (let o = r.firstOffset; o <= r.lastOffset; o++) got.push([o, r.deliveryCount, records.find((x) => x.offset === o)!.key!.toString()]);
    }
    if (got.length > 0) out.set(p.partitionIndex, got);
  }
  return out;
}

/** The topic id of `edits`, as Metadata v12 tells it. */
async function topicId(): Promise<string> {
  const answer = await call(3, 12, metadataRequest, metadataResponse, { topics: [{ topicId: '0'.repeat(32), name: 'edits' }], allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false }) as { topics: Array<{ topicId: string }> };
  return answer.topics[0]!.topicId;
}

describe('Kafka share groups on the wire', () => {
  it('splits the partitions between members, hands out the stored records locked, and applies ACCEPT, RELEASE and REJECT as the group\'s own', async () => {
    expect((await setConfigs('q', [['share.auto.offset.reset', 'earliest'], ['share.delivery.count.limit', '2']])).responses[0]!.errorCode).toBe(0);
    const id = await topicId();
    const a = await heartbeat('member-a', 0);
    const b = await heartbeat('member-b', 0);
    expect([a.errorCode, b.errorCode]).toEqual([0, 0]);
    // a joined alone and was given every partition; its next heartbeat gives it its share, at a new epoch.
    expect(a.assignment!.topicPartitions[0]!.partitions).toEqual([0, 1, 2]);
    const a2 = await heartbeat('member-a', a.memberEpoch, null);
    expect(a2.memberEpoch).toBeGreaterThan(a.memberEpoch);
    // The assignor's round-robin over the members in id order.
    const mine = a2.assignment!.topicPartitions[0]!.partitions;
    expect([mine, b.assignment!.topicPartitions[0]!.partitions]).toEqual([[0, 2], [1]]);

    // Each fetches its partitions: the edits as produced, each delivered once, locked for the group's lock.
    const fa = await shareFetch('member-a', 0, mine.map((partition) => ({ topicId: id, partition })));
    const fb = await shareFetch('member-b', 0, [{ topicId: id, partition: 1 }]);
    expect(fa.acquisitionLockTimeoutMs).toBe(30_000);
    const got = new Map([...acquired(fa), ...acquired(fb)]);
    for (let p = 0; p < 3; p++) {
      expect(got.get(p)!.map(([, , key]) => key)).toEqual(EDITS.filter((_, i) => i % 3 === p).map((e) => e.key));
      expect(got.get(p)!.every(([, count]) => count === 1)).toBe(true);
    }
    // a accepts everything (one type for a whole range); b releases offsets 0 and 1 and rejects 2 (a type per offset), accepting the rest.
    expect((await shareAck('member-a', 1, id, 0, [{ firstOffset: 0, lastOffset: 99, acknowledgeTypes: [1] }])).responses[0]!.partitions[0]!.errorCode).toBe(0);
    expect((await shareAck('member-a', 2, id, 2, [{ firstOffset: 0, lastOffset: 99, acknowledgeTypes: [1] }])).responses[0]!.partitions[0]!.errorCode).toBe(0);
    const fb2 = await shareFetch('member-b', 1, [{ topicId: id, partition: 1, acks: [{ firstOffset: 0, lastOffset: 99, acknowledgeTypes: [2, 2, 3, ...Array<number>(97).fill(1)] }] }]);
    expect(fb2.responses[0]!.partitions[0]!.acknowledgeErrorCode).toBe(0);
    // The released ones come back at once, second delivery.
    expect(acquired(fb2).get(1)!.map(([o, count]) => [o, count])).toEqual([[0, 2], [1, 2]]);
    // Releasing offset 0 at its last delivery allowed (the limit is 2) dead-letters it, as the rejected one was.
    await shareAck('member-b', 2, id, 1, [{ firstOffset: 0, lastOffset: 1, acknowledgeTypes: [2, 1] }]);
    const dead = await broker.listDeadLetters({ groupId: 'q', topic: 'edits' });
    expect(dead.records.map((d) => [d.original.partition, d.original.offset, d.attempts])).toEqual([[1, 2, 1], [1, 0, 2]]);
    // An acknowledgement of a record no longer held answers INVALID_RECORD_STATE for its partition.
    expect((await shareAck('member-b', 3, id, 1, [{ firstOffset: 5, lastOffset: 5, acknowledgeTypes: [1] }])).responses[0]!.partitions[0]!.errorCode).toBe(121);

    // The group's offsets: every partition done to its end.
    const offsets = await call(90, 1, describeShareGroupOffsetsRequest, describeShareGroupOffsetsResponse, { groups: [{ groupId: 'q', topics: null }] }) as {
      groups: Array<{ errorCode: number; topics: Array<{ topicName: string; topicId: string; partitions: Array<{ partitionIndex: number; startOffset: number; lag: number }> }> }>;
    };
    expect(offsets.groups[0]!.topics[0]!.topicId).toBe(id);
    expect(offsets.groups[0]!.topics[0]!.partitions.map((p) => [p.partitionIndex, p.startOffset, p.lag])).toEqual([[0, 100, 0], [1, 100, 0], [2, 100, 0]]);
  });

  it('is one group with onelog\'s own members: what a Kafka member holds is not handed to them, and ShareGroupDescribe lists both', async () => {
    await setConfigs('q', [['share.auto.offset.reset', 'earliest']]);
    const id = await topicId();
    const a = await heartbeat('kafka-member', 0);
    const fetched = acquired(await shareFetch('kafka-member', 0, a.assignment!.topicPartitions[0]!.partitions.map((partition) => ({ topicId: id, partition }))));
    expect([...fetched.values()].flat()).toHaveLength(EDITS.length);
    expect((await broker.shareFetch({ groupId: 'q', topic: 'edits', memberId: 'onelog-member' })).records).toEqual([]);
    const described = await call(77, 1, shareGroupDescribeRequest, shareGroupDescribeResponse, { groupIds: ['q', 'nope'], includeAuthorizedOperations: false }) as {
      groups: Array<{ errorCode: number; groupState: string; members: Array<{ memberId: string; assignment: { topicPartitions: Array<{ topicName: string; partitions: number[] }> } }> }>;
    };
    expect(described.groups[0]!.groupState).toBe('Stable');
    expect(described.groups[0]!.members.map((m) => m.memberId).sort()).toEqual(['kafka-member', 'onelog-member']);
    expect(described.groups[1]!.errorCode).toBe(69); // GROUP_ID_NOT_FOUND
    // Leaving the group with its share session still open keeps what it holds for its last acknowledgements (a client
    // closing does both, in either order); closing the session releases the rest: onelog's member gets it, second delivery.
    expect((await heartbeat('kafka-member', -1, null)).errorCode).toBe(0);
    expect((await broker.shareFetch({ groupId: 'q', topic: 'edits', memberId: 'onelog-member' })).records).toEqual([]);
    expect((await shareAck('kafka-member', -1, id, 0, [{ firstOffset: 0, lastOffset: 0, acknowledgeTypes: [1] }])).responses[0]!.partitions[0]!.errorCode).toBe(0);
    const after = await broker.shareFetch({ groupId: 'q', topic: 'edits', memberId: 'onelog-member', maxRecords: 10_000 });
    expect(after.records).toHaveLength(EDITS.length - 1);
    expect(after.records.every((r) => r.deliveryCount === 2)).toBe(true);
  });

  it('renews a lock (ShareAcknowledge v2, KIP-1222): the record stays with its member past its first lock', async () => {
    await setConfigs('q', [['share.auto.offset.reset', 'earliest'], ['share.record.lock.duration.ms', '10000']]);
    const id = await topicId();
    const joined = await heartbeat('a', 0);
    const partition = joined.assignment!.topicPartitions[0]!.partitions[0]!;
    const f = await shareFetch('a', 0, [{ topicId: id, partition }], { maxRecords: 1, version: 2 });
    expect(f.acquisitionLockTimeoutMs).toBe(10_000);
    expect([...acquired(f).values()].flat().map(([o]) => o)).toEqual([0]);
    // RENEW is type 4, only from v2.
    expect((await shareAck('a', 1, id, partition, [{ firstOffset: 0, lastOffset: 0, acknowledgeTypes: [4] }])).responses[0]!.partitions[0]!.errorCode).toBe(42);
    clock.advance(8000);
    const renewed = await shareAck('a', 2, id, partition, [{ firstOffset: 0, lastOffset: 0, acknowledgeTypes: [4] }], { version: 2, isRenewAck: true });
    expect(renewed.responses[0]!.partitions[0]!.errorCode).toBe(0);
    expect(renewed.acquisitionLockTimeoutMs).toBe(10_000);
    clock.advance(8000); // 16 s after the acquisition, 8 s after the renewal: still a's
    expect((await broker.shareFetch({ groupId: 'q', topic: 'edits', memberId: 'onelog', partitions: [partition], maxRecords: 1 })).records.map((r) => r.offset)).toEqual([1]);
    // 10 s after the renewal its lock ended: an ACCEPT then answers INVALID_RECORD_STATE, and the record is another's.
    clock.advance(2001);
    expect((await shareAck('a', 3, id, partition, [{ firstOffset: 0, lastOffset: 0, acknowledgeTypes: [1] }])).responses[0]!.partitions[0]!.errorCode).toBe(121);
    expect((await broker.shareFetch({ groupId: 'q', topic: 'edits', memberId: 'onelog', partitions: [partition], maxRecords: 1 })).records.map((r) => [r.offset, r.deliveryCount])).toEqual([[0, 2]]);
  });

  it('lets a new group settle (initialRebalanceDelayMs) so members started together split the partitions from their first fetch', async () => {
    await setConfigs('q', [['share.auto.offset.reset', 'earliest']]);
    const id = await topicId();
    await listener.close();
    listener = await KafkaListener.start(broker, { port: 0, logger: silentLogger, clock, initialRebalanceDelayMs: 3000 });
    const first = await call(76, 1, shareGroupHeartbeatRequest, shareGroupHeartbeatResponse, { groupId: 'q', memberId: 'a', memberEpoch: 0, rackId: null, subscribedTopicNames: ['edits'] }) as unknown as Heartbeat & { heartbeatIntervalMs: number };
    expect([first.assignment!.topicPartitions, first.heartbeatIntervalMs]).toEqual([[], 3000]);
    // Nothing is acquired for it meanwhile, whatever its session names.
    expect(acquired(await shareFetch('a', 0, [0, 1, 2].map((partition) => ({ topicId: id, partition }))))).toEqual(new Map());
    clock.advance(1000);
    const second = await call(76, 1, shareGroupHeartbeatRequest, shareGroupHeartbeatResponse, { groupId: 'q', memberId: 'b', memberEpoch: 0, rackId: null, subscribedTopicNames: ['edits'] }) as unknown as Heartbeat & { heartbeatIntervalMs: number };
    expect([second.assignment!.topicPartitions, second.heartbeatIntervalMs]).toEqual([[], 2000]);
    clock.advance(2000);
    const [a, b] = [await heartbeat('a', first.memberEpoch, null), await heartbeat('b', second.memberEpoch, null)];
    expect([a.assignment!.topicPartitions[0]!.partitions, b.assignment!.topicPartitions[0]!.partitions]).toEqual([[0, 2], [1]]);
    expect([...acquired(await shareFetch('a', 1, [])).keys()]).toEqual([0, 2]);
  });

  it('follows a topic deleted and created again: a new topic id, subscribed again, read from its start (librdkafka\'s 0184)', async () => {
    await setConfigs('q', [['share.auto.offset.reset', 'earliest']]);
    const before = await topicId();
    const m = await heartbeat('m', 0);
    expect([...acquired(await shareFetch('m', 0, [0, 1, 2].map((partition) => ({ topicId: before, partition })))).values()].flat()).toHaveLength(EDITS.length);
    await broker.deleteTopic('edits');
    clock.advance(1); // a topic's id is its name and creation time, to the ms
    await broker.createTopic({ topic: 'edits', partitions: 1 });
    await broker.produce({ topic: 'edits', records: EDITS.slice(0, 5).map((e) => ({ key: Buffer.from(e.key), value: Buffer.from(e.value), partition: 0 })) });
    const after = await heartbeat('m', m.memberEpoch, null);
    const id = after.assignment!.topicPartitions[0]!.topicId;
    expect(id).not.toBe(before);
    expect(after.assignment!.topicPartitions[0]!.partitions).toEqual([0]);
    const got = acquired(await shareFetch('m', 0, [{ topicId: id, partition: 0 }]));
    expect(got.get(0)!.map(([o, count, key]) => [o, count, key])).toEqual(EDITS.slice(0, 5).map((e, i) => [i, 1, e.key]));
  });

  it('subscribes the group again after it was deleted outside Kafka, and alters offsets of share groups only', async () => {
    await setConfigs('q', [['share.auto.offset.reset', 'earliest']]);
    const id = await topicId();
    await heartbeat('m', 0);
    await heartbeat('m', -1, null);
    await broker.deleteGroup('q'); // onelog's API, not Kafka's DeleteGroups: its configs go with it
    await setConfigs('q', [['share.auto.offset.reset', 'earliest']]);
    const again = await heartbeat('m', 0);
    expect(again.errorCode).toBe(0);
    // The listener still took the group for subscribed: the fetch finds the subscription gone, and the next heartbeat makes it again.
    const first = await shareFetch('m', 0, [0, 1, 2].map((partition) => ({ topicId: id, partition })));
    expect(first.responses[0]!.partitions.map((p) => p.errorCode)).toEqual([42, 42, 42]);
    await heartbeat('m', again.memberEpoch, null);
    expect([...acquired(await shareFetch('m', 1, [])).values()].flat()).toHaveLength(EDITS.length);
    // AlterShareGroupOffsets on a group that does not exist creates nothing (no consumer group either).
    const altered = await call(91, 0, alterShareGroupOffsetsRequest, alterShareGroupOffsetsResponse, {
      groupId: 'nobody', topics: [{ topicName: 'edits', partitions: [{ partitionIndex: 0, startOffset: 0 }] }],
    }) as { errorCode: number };
    expect(altered.errorCode).toBe(69);
    await expect(broker.describeGroup('nobody')).rejects.toMatchObject({ code: 'UNKNOWN_GROUP' });
  });

  it('keeps share sessions and member epochs as KIP-932 says', async () => {
    const id = await topicId();
    expect((await shareFetch('m', 1, [{ topicId: id, partition: 0 }])).errorCode).toBe(122); // SHARE_SESSION_NOT_FOUND
    expect((await shareFetch('m', 0, [{ topicId: id, partition: 0, acks: [{ firstOffset: 0, lastOffset: 0, acknowledgeTypes: [1] }] }])).errorCode).toBe(42);
    await setConfigs('q', [['share.auto.offset.reset', 'earliest']]);
    await heartbeat('other', 0, ['edits']); // subscribes the group
    // fetch.max.bytes=0 acquires nothing (librdkafka's 0180); the next fetch does.
    expect(acquired(await shareFetch('m', 0, [{ topicId: id, partition: 0 }], { maxBytes: 0 }))).toEqual(new Map());
    expect((await shareFetch('m', 5, [])).errorCode).toBe(123); // INVALID_SHARE_SESSION_EPOCH: 1 was due
    const next = await shareFetch('m', 1, []);
    expect(next.errorCode).toBe(0);
    expect(acquired(next).get(0)).toHaveLength(100);
    expect((await shareAck('m', -1, id, 0, [])).errorCode).toBe(0); // closes it
    expect((await shareFetch('m', 2, [])).errorCode).toBe(122);
    expect((await shareAck('m', 0, id, 0, [])).errorCode).toBe(123); // only a ShareFetch opens a session
    // An unknown topic id answers UNKNOWN_TOPIC_ID for its partitions.
    const unknown = await shareFetch('m', 0, [{ topicId: 'ab'.repeat(16), partition: 0 }]);
    expect(unknown.responses[0]!.partitions[0]!.errorCode).toBe(100);
    // Heartbeats: an unknown member, a stale epoch, no member id.
    expect((await heartbeat('x', 3)).errorCode).toBe(25);
    const joined = await heartbeat('x', 0);
    expect((await heartbeat('x', joined.memberEpoch + 7)).errorCode).toBe(110);
    expect((await heartbeat('', 0)).errorCode).toBe(42);
    // A consumer group's id is not a share group's.
    await broker.subscribe({ groupId: 'plain', topic: 'edits' });
    expect((await heartbeat('y', 0, ['edits'], 'plain')).errorCode).toBe(42);
  });

  it('alters a share group\'s offsets only without members, and lists it as a share group', async () => {
    await setConfigs('q', [['share.auto.offset.reset', 'earliest']]);
    await heartbeat('m', 0);
    const alter = () => call(91, 0, alterShareGroupOffsetsRequest, alterShareGroupOffsetsResponse, {
      groupId: 'q', topics: [{ topicName: 'edits', partitions: [{ partitionIndex: 1, startOffset: 40 }] }],
    }) as Promise<unknown> as Promise<{ errorCode: number; responses: Array<{ partitions: Array<{ errorCode: number }> }> }>;
    expect((await alter()).errorCode).toBe(68); // NON_EMPTY_GROUP
    const deleteGroup = async () => ((await call(42, 2, deleteGroupsRequest, deleteGroupsResponse, { groupsNames: ['q'] })) as { results: Array<{ errorCode: number }> }).results[0]!.errorCode;
    expect(await deleteGroup()).toBe(68);
    await heartbeat('m', -1, null);
    const altered = await alter();
    expect([altered.errorCode, altered.responses[0]!.partitions[0]!.errorCode]).toEqual([0, 0]);
    const offsets = await call(90, 0, describeShareGroupOffsetsRequest, describeShareGroupOffsetsResponse, { groups: [{ groupId: 'q', topics: [{ topicName: 'edits', partitions: [1] }] }] }) as {
      groups: Array<{ topics: Array<{ partitions: Array<{ startOffset: number }> }> }>;
    };
    expect(offsets.groups[0]!.topics[0]!.partitions[0]!.startOffset).toBe(40);
    const listed = await call(16, 5, listGroupsRequest, listGroupsResponse, { statesFilter: [], typesFilter: ['share'] }) as { groups: Array<{ groupId: string; groupType: string; protocolType: string }> };
    expect(listed.groups).toEqual([expect.objectContaining({ groupId: 'q', groupType: 'share', protocolType: 'share' })]);
    expect(await deleteGroup()).toBe(0);
    expect((await call(16, 5, listGroupsRequest, listGroupsResponse, { statesFilter: [], typesFilter: ['share'] }) as { groups: unknown[] }).groups).toEqual([]);
  });

  it('keeps a group\'s configs set before its first member, across a restart, and refuses bad ones whole', async () => {
    const bad = await setConfigs('later', [['share.auto.offset.reset', 'earliest'], ['share.record.lock.duration.ms', '5']]);
    expect(bad.responses[0]!.errorCode).toBe(40); // INVALID_CONFIG
    expect(bad.responses[0]!.errorMessage).toMatch(/share.record.lock.duration.ms="5" is not allowed: a whole number from 1000 to 3600000/);
    expect((await setConfigs('later', [['group.share.anything', '1']])).responses[0]!.errorMessage).toMatch(/is not one onelog takes/);
    await setConfigs('later', [['share.auto.offset.reset', 'earliest'], ['share.record.lock.duration.ms', '60000']]);
    await stop();
    await start();
    const described = await call(32, 4, describeConfigsRequest, describeConfigsResponse, {
      resources: [{ resourceType: 32, resourceName: 'later', configurationKeys: null }], includeSynonyms: false, includeDocumentation: false,
    }) as { results: Array<{ configs: Array<{ name: string; value: string; configSource: number }> }> };
    expect(described.results[0]!.configs.map((c) => [c.name, c.value, c.configSource])).toEqual([
      ['share.auto.offset.reset', 'earliest', 8], ['share.record.lock.duration.ms', '60000', 8], ['share.delivery.count.limit', '5', 5], ['share.isolation.level', 'read_uncommitted', 5],
    ]);
    // The first member creates the subscription with them: it reads from the earliest record, under a 60 s lock.
    const id = await topicId();
    const m = await heartbeat('m', 0, ['edits'], 'later');
    expect(m.errorCode).toBe(0);
    const sub = (await broker.describeGroup('later')).subscriptions[0]!;
    expect([sub.type, sub.startPolicy, sub.share?.lockMs]).toEqual(['share', 'earliest', 60_000]);
    expect(id).toMatch(/^[0-9a-f]{32}$/);
  });
});

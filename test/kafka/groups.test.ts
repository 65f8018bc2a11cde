/**
 * Kafka consumer groups through the listener: kafkajs (2.2.4) consumers are members of onelog's groups, assigned
 * by onelog's coordinator; they read every record once, commit where onelog sees it, and share a group, partitions
 * moving between them without being held twice.
 */
import { Admin } from '@platformatic/kafka';
import { Kafka, logLevel } from 'kafkajs';
import type { Consumer } from 'kafkajs';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { Onelog } from '../../src/client/index.js';
import { ManualClock } from '../../src/common/clock.js';
import { KafkaMembers } from '../../src/kafka/kafka-members.js';
import { KafkaListener } from '../../src/kafka/listener.js';
import { heartbeat as heartbeatApi, joinGroup, leaveGroup, readSubscription, syncGroup, writeAssignment } from '../../src/kafka/apis/groups.js';
import { offsetCommit } from '../../src/kafka/apis/offsets.js';
import { describeGroups } from '../../src/kafka/apis/admin.js';
import type { RequestContext } from '../../src/kafka/apis/api.js';
import { ByteReader, ByteWriter } from '../../src/kafka/codec/bytes.js';
import { decode, encode } from '../../src/kafka/codec/interpreter.js';
import { consumerProtocolAssignment, consumerProtocolSubscription } from '../../src/kafka/messages/groups.js';
import { silentLogger } from '../../src/common/logger.js';
import { tmpDir } from '../helpers/tmp.js';

let broker: Broker;
let listener: KafkaListener;
const consumers: Consumer[] = [];

beforeEach(async () => {
  broker = await Broker.open({ dataDir: tmpDir(), retentionCheckIntervalMs: 0, monitoring: { alertCheckIntervalMs: 0 } });
  listener = await KafkaListener.start(broker, { port: 0, logger: silentLogger });
});
afterEach(async () => {
  for (const c of consumers.splice(0)) await c.disconnect().catch(() => {});
  await listener.close();
  await broker.close();
});

function kafka(): Kafka {
  return new Kafka({ clientId: 'kj', brokers: [`127.0.0.1:${listener.port}`], logLevel: logLevel.NOTHING, retry: { retries: 5, initialRetryTime: 50 } });
}

async function produce(topic: string, partitions: number, perPartition: number): Promise<void> {
  await broker.createTopic({ topic, partitions, config: { retentionMs: -1 } });
  const records = [];
  for (let p = 0; p < partitions; p++) for (let i = 0; i < perPartition; i++) records.push({ key: null, value: Buffer.from(`${p}-${i}`), partition: p });
  await broker.produce({ topic, records });
}

describe('kafka consumer groups', () => {
  it('a kafkajs consumer in a group reads every record once and commits where onelog sees it', async () => {
    await produce('edits', 3, 10);
    const consumer = kafka().consumer({ groupId: 'kj', sessionTimeout: 10_000, heartbeatInterval: 500 });
    consumers.push(consumer);
    await consumer.connect();
    await consumer.subscribe({ topic: 'edits', fromBeginning: true });
    const seen: string[] = [];
    await consumer.run({ eachMessage: async ({ message }) => void seen.push(message.value!.toString()) });
    await vi.waitFor(() => expect(seen).toHaveLength(30), { timeout: 20_000, interval: 100 });
    await consumer.disconnect(); // commits, then leaves
    expect(new Set(seen).size).toBe(30);
    const d = await broker.describeGroup('kj');
    expect(d.subscriptions[0]!.partitions.map((p) => [p.committedOffset, p.lag])).toEqual([[10, 0], [10, 0], [10, 0]]);
    expect(d.members).toEqual([]);
  });

  it('two kafkajs members share a group: partitions move to the second once the first let them go', async () => {
    await produce('edits', 4, 5);
    const seen = new Map<string, string[]>([['a', []], ['b', []]]);
    const start = async (name: string) => {
      const consumer = kafka().consumer({ groupId: 'pair', sessionTimeout: 10_000, heartbeatInterval: 300 });
      consumers.push(consumer);
      await consumer.connect();
      await consumer.subscribe({ topic: 'edits', fromBeginning: true });
      await consumer.run({ eachMessage: async ({ message }) => void seen.get(name)!.push(message.value!.toString()) });
    };
    await start('a');
    await vi.waitFor(() => expect(seen.get('a')).toHaveLength(20), { timeout: 20_000, interval: 100 });
    await start('b');
    // The coordinator splits the partitions; onelog never hands one to both.
    await vi.waitFor(async () => {
      const d = await broker.describeGroup('pair');
      expect(d.members.map((m) => m.assignment.length).sort()).toEqual([2, 2]);
      const held = d.members.flatMap((m) => m.assignment.map((p) => p.partition));
      expect(new Set(held).size).toBe(held.length);
    }, { timeout: 20_000, interval: 200 });
    const later = [];
    for (let p = 0; p < 4; p++) for (let i = 0; i < 5; i++) later.push({ key: null, value: Buffer.from(`late ${p}-${i}`), partition: p });
    await broker.produce({ topic: 'edits', records: later });
    await vi.waitFor(() => {
      const lates = [...seen.values()].flat().filter((v) => v.startsWith('late'));
      expect(new Set(lates).size).toBe(20);
    }, { timeout: 20_000, interval: 100 });
    // Both read some of what came after the split.
    expect(seen.get('a')!.some((v) => v.startsWith('late'))).toBe(true);
    expect(seen.get('b')!.some((v) => v.startsWith('late'))).toBe(true);
  });

  it('a group mixes onelog\'s client and kafkajs: one coordinator splits the partitions, commits land in one place', async () => {
    await produce('edits', 4, 5);
    const seen = new Map<string, string[]>(); // value -> who read it
    const saw = (who: string, value: string) => seen.set(value, [...(seen.get(value) ?? []), who]);
    const onelogConsumer = new Onelog({ api: broker }).consumer({ groupId: 'mixed', clientId: 'onelog', startPolicy: 'earliest', sessionTimeoutMs: 10_000, maxWaitMs: 20 });
    onelogConsumer.subscribe({ topic: 'edits' });
    const running = onelogConsumer.run({ eachMessage: async ({ message }) => void saw('onelog', message.value!.toString()) });
    try {
      await vi.waitFor(() => expect(seen.size).toBe(20), { timeout: 20_000, interval: 50 });
      const kafkajs = kafka().consumer({ groupId: 'mixed', sessionTimeout: 10_000, heartbeatInterval: 300 });
      consumers.push(kafkajs);
      await kafkajs.connect();
      await kafkajs.subscribe({ topic: 'edits', fromBeginning: true });
      await kafkajs.run({ eachMessage: async ({ message }) => void saw('kafkajs', message.value!.toString()) });
      await vi.waitFor(async () => {
        const d = await broker.describeGroup('mixed');
        expect(d.state).toBe('Stable');
        expect(d.members.map((m) => [m.clientId, m.assignment.length]).sort()).toEqual([['kj', 2], ['onelog', 2]]);
      }, { timeout: 20_000, interval: 100 });
      const later = [];
      for (let p = 0; p < 4; p++) for (let i = 0; i < 5; i++) later.push({ key: null, value: Buffer.from(`late ${p}-${i}`), partition: p });
      await broker.produce({ topic: 'edits', records: later });
      await vi.waitFor(() => expect(seen.size).toBe(40), { timeout: 20_000, interval: 50 });
      await kafkajs.disconnect(); // commits, then leaves: its partitions go back to onelog's consumer
      await vi.waitFor(async () => expect((await broker.describeGroup('mixed')).members.map((m) => m.assignment.length)).toEqual([4]), { timeout: 20_000, interval: 100 });
    } finally {
      await onelogConsumer.stop();
      await running;
    }
    const late = [...seen].filter(([value]) => value.startsWith('late'));
    expect(late.filter(([, who]) => who.length > 1)).toEqual([]); // no record read by both
    expect(new Set(late.map(([, who]) => who[0])).size).toBe(2); // each read some of what came after the split
    const d = await broker.describeGroup('mixed');
    expect(d.subscriptions[0]!.partitions.map((p) => [p.committedOffset, p.lag])).toEqual([[10, 0], [10, 0], [10, 0], [10, 0]]);
  });

  it('records deleted before a Kafka group read them pause it; a Kafka commit past them (alterConsumerGroupOffsets) is an offset-jump alert and resumes it', async () => {
    await produce('edits', 1, 10);
    const seen: string[] = [];
    const member = async () => {
      const consumer = kafka().consumer({ groupId: 'late', sessionTimeout: 10_000, heartbeatInterval: 300 });
      consumers.push(consumer);
      await consumer.connect();
      await consumer.subscribe({ topic: 'edits', fromBeginning: true });
      await consumer.run({ eachMessage: async ({ message }) => void seen.push(message.value!.toString()) });
      return consumer;
    };
    const first = await member();
    await vi.waitFor(async () => expect(await broker.committedOffsets('late')).toMatchObject([{ offset: 10 }]), { timeout: 20_000, interval: 50 });
    await first.disconnect();
    await broker.produce({ topic: 'edits', records: Array.from({ length: 10 }, (_, i) => ({ key: null, value: Buffer.from(`0-${10 + i}`), partition: 0 })) });
    await broker.deleteRecords({ topic: 'edits', partition: 0, beforeOffset: 15 });

    // The partition pauses for the group, and SyncGroup does not hand it to the Kafka member (never a silent skip).
    const second = await member();
    await vi.waitFor(async () => expect((await broker.describeGroup('late')).subscriptions[0]!.partitions[0]).toMatchObject({ state: 'data-lost', lostRecords: 5, paused: { code: 'OFFSET_OUT_OF_RANGE' } }),
      { timeout: 20_000, interval: 50 });
    await second.disconnect();
    expect(seen).toHaveLength(10);

    // The operator moves the group past the lost records with a Kafka admin client (OffsetCommit without a member, as
    // Kafka's alterConsumerGroupOffsets; kafkajs's setOffsets joins the group instead, and is not handed the partition).
    const admin = new Admin({ clientId: 'ops', bootstrapBrokers: [`127.0.0.1:${listener.port}`] });
    try {
      await admin.alterConsumerGroupOffsets({ groupId: 'late', topics: [{ name: 'edits', partitionOffsets: [{ partition: 0, offset: 15n }] }] });
    } finally {
      await admin.close();
    }
    const alerts = await broker.listAlerts({ groupId: 'late' });
    expect(alerts.find((a) => a.kind === 'offset-jump')).toMatchObject({
      topic: 'edits', partition: 0, resolvedAt: expect.any(Number), context: { committedOffset: 10, newOffset: 15, logStartOffset: 15, recordsSkipped: 5, policy: 'commit' },
    });
    expect(alerts.filter((a) => a.resolvedAt === null)).toEqual([]); // data-lost and offset-out-of-range ended with the jump

    await member(); // the pause is lifted: it reads on from 15
    await vi.waitFor(async () => expect(await broker.committedOffsets('late')).toMatchObject([{ offset: 20 }]), { timeout: 20_000, interval: 50 });
    expect(seen.slice(10)).toEqual(['0-15', '0-16', '0-17', '0-18', '0-19']);
  });

  it('reads the subscriptions clients send, leniently, and writes assignments they read', () => {
    // v1 that omits OwnedPartitions (as @platformatic/kafka sends it): read as v0.
    const v1 = Buffer.from('0001' + '00000001' + '0005' + Buffer.from('edits').toString('hex') + 'ffffffff', 'hex');
    expect(readSubscription(v1)).toMatchObject({ topics: ['edits'], ownedPartitions: [] });
    const assignment = writeAssignment([{ topic: 'edits', partition: 0 }, { topic: 'edits', partition: 2 }, { topic: 'pages', partition: 1 }]);
    expect(assignment.toString('hex')).toBe('0000' + '00000002' + '0005' + Buffer.from('edits').toString('hex') + '00000002' + '00000000' + '00000002' +
      '0005' + Buffer.from('pages').toString('hex') + '00000001' + '00000001' + 'ffffffff');
  });

  it('forgets a Kafka member gone silent for twice its session timeout', () => {
    const clock = new ManualClock(0);
    const members = new KafkaMembers(clock);
    const member = (memberId: string) => ({
      groupId: 'g', memberId, coordinatorMemberId: memberId, fenced: false, topics: ['t'], groupInstanceId: null, kafkaGeneration: 1, generation: 1, owned: [], paused: new Set<string>(), protocolName: 'range', sessionTimeoutMs: 10_000,
    });
    members.set(member('a'));
    clock.advance(15_000);
    expect(members.get('g', 'a')).toBeDefined(); // heard from: its clock restarts
    clock.advance(20_000);
    expect(members.get('g', 'a')).toBeDefined();
    clock.advance(20_001);
    members.set(member('b')); // a join forgets the silent ones
    expect(members.size).toBe(1);
    expect(members.get('g', 'a')).toBeUndefined();
  });
});

/**
 * A driver of the group APIs' handlers for Kafka members (no client): its own KafkaMembers on a manual clock, so a
 * JoinGroup round's timing is the test's.
 */
function groupDriver(initialRebalanceDelayMs = 0) {
  const clock = new ManualClock(Date.now());
  const members = new KafkaMembers(clock, initialRebalanceDelayMs);
  const ctx = { api: broker, header: { clientId: 'rdkafka', apiVersion: 5 }, members } as unknown as RequestContext;
  const subscription = (topics: string[], owned: Array<{ topic: string; partitions: number[] }> = []) => {
    const w = new ByteWriter(64);
    w.int16(1);
    encode(consumerProtocolSubscription, 1, { topics, userData: null, ownedPartitions: owned }, w);
    return w.finish();
  };
  type Joined = { errorCode: number; memberId: string; generationId: number; protocolName: string };
  return {
    clock, members, ctx,
    join: async (groupId: string, o: { memberId?: string; topics?: string[]; protocols?: string[]; owned?: Array<{ topic: string; partitions: number[] }>; groupInstanceId?: string | null } = {}) =>
      await joinGroup.handle({
        groupId, memberId: o.memberId ?? '', groupInstanceId: o.groupInstanceId ?? null, sessionTimeoutMs: 30_000, rebalanceTimeoutMs: 30_000, protocolType: 'consumer',
        protocols: (o.protocols ?? ['range']).map((name) => ({ name, metadata: subscription(o.topics ?? ['t1'], o.owned) })),
      }, ctx) as Joined,
    sync: async (groupId: string, j: Pick<Joined, 'memberId' | 'generationId'>) => {
      const answer = await syncGroup.handle({ groupId, memberId: j.memberId, generationId: j.generationId, assignments: [] }, ctx) as { errorCode: number; assignment: Buffer };
      const r = new ByteReader(answer.assignment);
      r.int16();
      const { assignedPartitions } = decode(consumerProtocolAssignment, 0, r) as unknown as { assignedPartitions: Array<{ topic: string; partitions: number[] }> };
      return assignedPartitions.flatMap((t) => t.partitions.map((p) => `${t.topic}/${p}`)).sort();
    },
    heartbeat: async (groupId: string, j: Pick<Joined, 'memberId' | 'generationId'>) =>
      (await heartbeatApi.handle({ groupId, memberId: j.memberId, generationId: j.generationId }, ctx) as { errorCode: number }).errorCode,
  };
}

describe('Kafka group APIs, driven directly', () => {
  it('answers a JoinGroup once every member rejoined the round (librdkafka\'s 0091, 0093, 0102, 0118): one assignment over all of them', async () => {
    await produce('t1', 4, 1);
    const d = groupDriver(3000);
    // Two consumers started together: the first round waits group.initial.rebalance.delay.ms for the second.
    const a = d.join('g');
    const b = d.join('g');
    let answered = 0;
    void Promise.all([a, b]).then(() => answered++);
    await vi.waitFor(() => expect(d.members.inGroup('g')).toHaveLength(2));
    d.clock.advance(2000);
    await new Promise((resolve) => setImmediate(resolve));
    expect(answered).toBe(0);
    d.clock.advance(1000);
    const [ja, jb] = await Promise.all([a, b]);
    expect(ja.generationId).toBe(jb.generationId);
    const [pa, pb] = [await d.sync('g', ja), await d.sync('g', jb)];
    expect([pa.length, pb.length]).toEqual([2, 2]); // split in the one round: nobody took all 4 first
    expect([...pa, ...pb].sort()).toEqual(['t1/0', 't1/1', 't1/2', 't1/3']);
    // A third joins: its answer waits until the others rejoined; their heartbeats tell them to.
    const c = d.join('g');
    await vi.waitFor(() => expect(d.members.rounds.pending('g', ja.memberId)).toBe(true));
    expect([await d.heartbeat('g', ja), await d.heartbeat('g', jb)]).toEqual([27, 27]);
    const [ja2, jb2] = await Promise.all([d.join('g', { memberId: ja.memberId }), d.join('g', { memberId: jb.memberId })]);
    const jc = await c;
    expect(new Set([ja2.generationId, jb2.generationId, jc.generationId]).size).toBe(1);
    const all = [await d.sync('g', ja2), await d.sync('g', jb2), await d.sync('g', jc)];
    expect(all.map((p) => p.length).sort()).toEqual([1, 1, 2]);
    // A commit with the generation before the round is refused, as Kafka refuses it.
    const commit = await offsetCommit.handle({
      groupId: 'g', generationIdOrMemberEpoch: ja.generationId, memberId: ja.memberId, topics: [{ name: 't1', partitions: [{ partitionIndex: 0, committedOffset: 1, committedMetadata: null }] }],
    }, d.ctx) as { topics: Array<{ partitions: Array<{ errorCode: number }> }> };
    expect(commit.topics[0]!.partitions[0]!.errorCode).toBe(22); // ILLEGAL_GENERATION
  });

  it('ends a round at the rebalance timeout without the members that never rejoined: they are removed', async () => {
    await produce('t1', 2, 1);
    const d = groupDriver(0);
    const ja = await d.join('g');
    const b = d.join('g');
    await vi.waitFor(() => expect(d.members.rounds.pending('g', ja.memberId)).toBe(true));
    d.clock.advance(30_000);
    const jb = await b;
    expect(await d.sync('g', jb)).toEqual(['t1/0', 't1/1']);
    expect((await broker.describeGroup('g')).members.map((m) => m.memberId)).toEqual([jb.memberId]);
    expect(await d.heartbeat('g', ja)).toBe(25); // UNKNOWN_MEMBER_ID
  });

  it('applies a changed subscription at rejoin (librdkafka\'s 0045, 0113): a member that moves from T1 to T1 and T2 gets both', async () => {
    await produce('t1', 2, 1);
    await produce('t2', 2, 1);
    const d = groupDriver();
    for (const protocol of ['range', 'cooperative-sticky']) {
      const first = await d.join('g', { protocols: [protocol] });
      expect(await d.sync('g', first)).toEqual(['t1/0', 't1/1']);
      const again = await d.join('g', { memberId: first.memberId, topics: ['t1', 't2'], protocols: [protocol], owned: protocol === 'range' ? [] : [{ topic: 't1', partitions: [0, 1] }] });
      expect(again.errorCode).toBe(0);
      expect(await d.sync('g', again)).toEqual(['t1/0', 't1/1', 't2/0', 't2/1']);
      const described = await broker.describeGroup('g');
      expect(described.subscriptions.map((s) => s.topic).sort()).toEqual(['t1', 't2']);
      expect(described.members.map((m) => m.memberId)).toEqual([again.memberId]);
      // The same topics again: a plain rejoin, the same member.
      expect((await d.join('g', { memberId: again.memberId, topics: ['t2', 't1'], protocols: [protocol] })).memberId).toBe(again.memberId);
      await broker.leaveGroup({ groupId: 'g', memberId: again.memberId });
      d.members.delete('g', again.memberId);
    }
  });

  it('honours the assignor a Kafka-only group\'s members agree on (librdkafka\'s 0132); a group with onelog members keeps onelog\'s', async () => {
    await produce('t1', 2, 1);
    const d = groupDriver();
    const first = await d.join('k', { protocols: ['roundrobin', 'range'] });
    expect(first).toMatchObject({ errorCode: 0, protocolName: 'roundrobin' });
    expect((await broker.describeGroup('k')).assignor).toBe('round-robin');
    // A second member that prefers range joins the group's round robin, which it offers too (the first rejoins the round).
    const second = d.join('k', { protocols: ['range', 'roundrobin'] });
    await vi.waitFor(() => expect(d.members.rounds.pending('k', first.memberId)).toBe(true));
    await d.join('k', { memberId: first.memberId, protocols: ['roundrobin', 'range'] });
    expect(await second).toMatchObject({ errorCode: 0, protocolName: 'roundrobin' });
    expect((await broker.describeGroup('k')).assignor).toBe('round-robin');
    expect(await d.join('c', { protocols: ['cooperative-sticky'] })).toMatchObject({ errorCode: 0, protocolName: 'cooperative-sticky' });
    expect((await broker.describeGroup('c')).assignor).toBe('sticky');
    // A group an onelog member is in keeps its assignor: the Kafka member joins it (was INCONSISTENT_GROUP_PROTOCOL).
    await broker.joinGroup({ groupId: 'mixed', topics: ['t1'] });
    expect(await d.join('mixed', { protocols: ['range'] })).toMatchObject({ errorCode: 0 });
    const mixed = await broker.describeGroup('mixed');
    expect([mixed.assignor, mixed.members.length]).toEqual(['sticky', 2]);
  });

  it('keeps a static member (group.instance.id, KIP-345) across a restart: its assignment kept, the process it replaced fenced', async () => {
    await produce('t1', 2, 1);
    const d = groupDriver();
    const first = await d.join('s', { groupInstanceId: 'host-1' });
    const firstPartitions = await d.sync('s', first);
    expect(firstPartitions).toEqual(['t1/0', 't1/1']);
    const coordinatorId = (await broker.describeGroup('s')).members[0]!.memberId;
    const describe = async () => (await describeGroups.handle({ groups: ['s'] }, d.ctx) as { groups: Array<{ members: Array<{ memberId: string; groupInstanceId: string | null }> }> }).groups[0]!.members;
    expect(await describe()).toMatchObject([{ memberId: first.memberId, groupInstanceId: 'host-1' }]);
    // Restarted, it joins with no member id: the same member of the group (nothing moves), under a new member id.
    const again = await d.join('s', { groupInstanceId: 'host-1' });
    expect(again.errorCode).toBe(0);
    expect(again.memberId).not.toBe(first.memberId);
    expect(await d.sync('s', again)).toEqual(firstPartitions);
    expect((await broker.describeGroup('s')).members.map((m) => m.memberId)).toEqual([coordinatorId]);
    expect(await describe()).toMatchObject([{ memberId: again.memberId, groupInstanceId: 'host-1' }]);
    // The process it replaced, still running, is fenced: no heartbeat, sync, commit or leave of it is served.
    expect(await d.heartbeat('s', first)).toBe(82);
    const commit = await offsetCommit.handle({
      groupId: 's', generationIdOrMemberEpoch: first.generationId, memberId: first.memberId, topics: [{ name: 't1', partitions: [{ partitionIndex: 0, committedOffset: 1, committedMetadata: null }] }],
    }, d.ctx) as { topics: Array<{ partitions: Array<{ errorCode: number }> }> };
    expect(commit.topics[0]!.partitions[0]!.errorCode).toBe(82);
    expect(await d.join('s', { memberId: first.memberId, groupInstanceId: 'host-1' })).toMatchObject({ errorCode: 82 });
    expect(await d.heartbeat('s', again)).toBe(0);
    // A dynamic member is another member (the static one rejoins the round its arrival opens).
    const dynamic = d.join('s');
    await vi.waitFor(() => expect(d.members.rounds.pending('s', again.memberId)).toBe(true));
    await d.join('s', { memberId: again.memberId, groupInstanceId: 'host-1' });
    expect((await dynamic).memberId).not.toBe(again.memberId);
    expect((await broker.describeGroup('s')).members).toHaveLength(2);
    // An admin removes the static member by its group.instance.id alone (LeaveGroup v3+).
    const left = await leaveGroup.handle({ groupId: 's', members: [{ memberId: '', groupInstanceId: 'host-1' }] }, { ...d.ctx, header: { clientId: 'admin', apiVersion: 3 } } as RequestContext) as
      { members: Array<{ memberId: string; groupInstanceId: string | null; errorCode: number }> };
    expect(left.members).toEqual([{ memberId: again.memberId, groupInstanceId: 'host-1', errorCode: 0 }]);
    expect((await broker.describeGroup('s')).members.map((m) => m.memberId)).toEqual([(await dynamic).memberId]);
  });
});

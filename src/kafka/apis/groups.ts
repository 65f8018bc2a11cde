/**
 * JoinGroup (11), SyncGroup (14), Heartbeat (12) and LeaveGroup (13): Kafka members of onelog's groups, through
 * the adapter of kafka-members.ts. A Kafka member's first join creates an onelog member that commits no start
 * positions (OffsetFetch answers -1 and the client's auto.offset.reset decides); a rejoin reports what the member
 * still owns (nothing for an eager member, its OwnedPartitions for a cooperative one) as a heartbeat would. A rejoin
 * whose subscription names other topics (a consumer that moved from T1 to T1 and T2) leaves and joins again with
 * them, under a new member id the JoinGroup answer gives it (clients take the id the answer names).
 */
import { randomUUID } from 'node:crypto';
import type { AssignorName } from '../../protocol/groups.js';
import type { TopicPartition } from '../../protocol/partitions.js';
import { OnelogError } from '../../protocol/errors.js';
import { ByteReader, ByteWriter } from '../codec/bytes.js';
import { decode, encode } from '../codec/interpreter.js';
import type { Struct } from '../codec/interpreter.js';
import { KAFKA_ERROR, kafkaCodeOf, kafkaErrorCode } from '../errors.js';
import { KafkaMembers } from '../kafka-members.js';
import type { KafkaMember } from '../kafka-members.js';
import {
  consumerProtocolAssignment, consumerProtocolSubscription, heartbeatRequest, heartbeatResponse, joinGroupRequest, joinGroupResponse,
  leaveGroupRequest, leaveGroupResponse, syncGroupRequest, syncGroupResponse,
} from '../messages/groups.js';
import type { KafkaApi, RequestContext } from './api.js';

const UNKNOWN_MEMBER_ID = kafkaCodeOf('UNKNOWN_MEMBER_ID');
const ILLEGAL_GENERATION = kafkaCodeOf('ILLEGAL_GENERATION');
const INCONSISTENT_GROUP_PROTOCOL = kafkaCodeOf('INCONSISTENT_GROUP_PROTOCOL');

interface Subscription {
  topics: string[];
  ownedPartitions: Array<{ topic: string; partitions: number[] }>;
}

/**
 * A member's ConsumerProtocolSubscription, read leniently: its version's layout, else v0's (some clients say v1
 * and omit OwnedPartitions).
 * @throws OnelogError `INVALID_REQUEST` if not even v0's layout reads
 */
export function readSubscription(bytes: Buffer): Subscription {
  const r = new ByteReader(bytes);
  const version = Math.min(Math.max(r.int16(), 0), 3);
  const at = r.pos;
  try {
    return decode(consumerProtocolSubscription, version, r) as unknown as Subscription;
  } catch {
    r.pos = at;
    return decode(consumerProtocolSubscription, 0, r) as unknown as Subscription;
  }
}

/**
 * The Kafka error code of a coordinator error (a member the coordinator no longer knows is forgotten here too).
 * @throws what is not an OnelogError
 */
function groupError(err: unknown, members: KafkaMembers, groupId: string, memberId: string): number {
  if (!(err instanceof OnelogError)) throw err;
  if (err.code === 'UNKNOWN_MEMBER_ID') members.delete(groupId, memberId);
  return kafkaErrorCode(err, 'group');
}

/** Kafka's assignors (partition.assignment.strategy) by the name a member offers, as onelog's coordinator serves them. */
const KAFKA_ASSIGNORS: Readonly<Record<string, AssignorName>> = { range: 'range', roundrobin: 'round-robin', sticky: 'sticky', 'cooperative-sticky': 'sticky' };

/**
 * The assignor a joining Kafka member's group uses, and the protocol answered: the group's own while it has members
 * (so a group with onelog members keeps onelog's, and Kafka members that agree keep theirs), else the first the
 * member offers that onelog serves (else onelog's default, sticky).
 */
async function chooseAssignor(api: RequestContext['api'], groupId: string, protocols: ReadonlyArray<{ name: string }>): Promise<{ assignor: AssignorName; protocolName: string }> {
  const group = await api.describeGroup(groupId).catch((err: unknown) => {
    if (err instanceof OnelogError && err.code === 'UNKNOWN_GROUP') return null;
    throw err;
  });
  const live = group !== null && group.members.length > 0 ? group.assignor : null;
  if (live !== null) return { assignor: live, protocolName: protocols.find((p) => KAFKA_ASSIGNORS[p.name] === live)?.name ?? protocols[0]!.name };
  const offered = protocols.find((p) => KAFKA_ASSIGNORS[p.name] !== undefined);
  return offered ? { assignor: KAFKA_ASSIGNORS[offered.name]!, protocolName: offered.name } : { assignor: 'sticky', protocolName: protocols[0]!.name };
}

/** A JoinGroup's rebalance timeout (v1+; v0: its session timeout), ms. */
function rebalanceTimeoutMs(request: Struct): number {
  return Math.max(0, (request.rebalanceTimeoutMs as number | undefined) ?? (request.sessionTimeoutMs as number));
}

/**
 * Ends a member's JoinGroup with its group's round (join-rounds.ts): once every Kafka member of the group rejoined
 * or the rebalance timeout passed (those that did not are removed), answered at the group's generation then. While
 * it waits, the member is kept alive with the coordinator (a joining Kafka client sends no heartbeat).
 */
async function afterRound(ctx: RequestContext, m: KafkaMember, timeoutMs: number): Promise<number> {
  const { api, members } = ctx;
  const others = members.inGroup(m.groupId).filter((id) => id !== m.memberId);
  const ended = members.rounds.gather(m.groupId, m.memberId, others, timeoutMs);
  const self = { groupId: m.groupId, memberId: m.coordinatorMemberId };
  const stop = new AbortController();
  void (async () => {
    for (;;) {
      await members.clock.sleep(Math.max(1000, Math.floor(m.sessionTimeoutMs / 3)), stop.signal);
      if (stop.signal.aborted) return;
      await api.heartbeat({ ...self, generationId: m.generation, owned: m.owned }).then((a) => {
        m.generation = a.generationId;
      }, () => undefined);
    }
  })();
  const missing = await ended.finally(() => stop.abort());
  for (const id of missing) {
    await api.leaveGroup({ groupId: m.groupId, memberId: members.peek(m.groupId, id)?.coordinatorMemberId ?? id }).catch(() => undefined);
    members.delete(m.groupId, id);
  }
  const now = await api.heartbeat({ ...self, generationId: m.generation, owned: m.owned });
  m.generation = m.kafkaGeneration = now.generationId;
  return now.generationId;
}

/** Whether two subscriptions name the same topics, in any order. */
function sameTopics(a: readonly string[], b: readonly string[]): boolean {
  const set = new Set(a);
  return set.size === new Set(b).size && b.every((t) => set.has(t));
}

/** The member a SyncGroup or Heartbeat names, or the error to answer: unknown, or not at its last JoinGroup's generation. */
function memberOf(members: KafkaMembers, groupId: string, memberId: string, generationId: number): KafkaMember | number {
  const m = members.get(groupId, memberId);
  if (m === undefined) return UNKNOWN_MEMBER_ID;
  if (m.fenced) return KAFKA_ERROR.FENCED_INSTANCE_ID;
  return generationId === m.kafkaGeneration ? m : ILLEGAL_GENERATION;
}

/** A ConsumerProtocolAssignment (v0) of `partitions`. */
export function writeAssignment(partitions: readonly TopicPartition[]): Buffer {
  const byTopic = new Map<string, number[]>();
  for (const p of partitions) byTopic.set(p.topic, [...(byTopic.get(p.topic) ?? []), p.partition]);
  const w = new ByteWriter(64);
  w.int16(0);
  encode(consumerProtocolAssignment, 0, { assignedPartitions: [...byTopic].map(([topic, ps]) => ({ topic, partitions: ps })), userData: null }, w);
  return w.finish();
}

export const joinGroup: KafkaApi = {
  key: 11, name: 'JoinGroup', minVersion: 0, maxVersion: 9, request: joinGroupRequest, response: joinGroupResponse,
  async handle(request, ctx) {
    const { api, header, members } = ctx;
    const groupId = request.groupId as string;
    let memberId = request.memberId as string;
    const groupInstanceId = (request.groupInstanceId as string | null | undefined) ?? null;
    const protocols = request.protocols as Array<{ name: string; metadata: Buffer }>;
    const answer = (errorCode: number, fields: { generationId?: number; memberId?: string; protocolName?: string | null } = {}) => ({
      throttleTimeMs: 0, errorCode, generationId: -1, protocolType: 'consumer', protocolName: null, leader: '', skipAssignment: false,
      memberId, members: [], ...fields,
    });
    if (request.protocolType !== 'consumer' || protocols.length === 0) return answer(INCONSISTENT_GROUP_PROTOCOL);
    let protocolName = protocols[0]!.name;
    try {
      const subscription = readSubscription(protocols[0]!.metadata);
      // A static member (KIP-345) that joins with no member id after a restart is the coordinator's member it was
      // (its assignment kept, nothing moves), under a new member id; the process it replaces is fenced, should it
      // still run (as Kafka). One whose session ended joins anew.
      const prior = memberId === '' && groupInstanceId !== null ? members.byInstance(groupId, groupInstanceId) : undefined;
      let known = prior ? members.replace(prior, `${groupInstanceId}-${randomUUID()}`) : memberId === '' ? undefined : members.get(groupId, memberId);
      if (prior) memberId = known!.memberId;
      if (memberId !== '' && known === undefined) return answer(UNKNOWN_MEMBER_ID);
      if (known?.fenced) return answer(KAFKA_ERROR.FENCED_INSTANCE_ID);
      if (known && !sameTopics(known.topics, subscription.topics)) {
        // Its subscription changed: what it owns goes back to the group, and it joins again with its new topics.
        await api.leaveGroup({ groupId, memberId: known.coordinatorMemberId });
        members.delete(groupId, memberId);
        known = undefined;
      }
      if (known) {
        // A rejoin: an eager member gave up everything; a cooperative one keeps what it says it owns.
        const owned = protocolName === 'cooperative-sticky'
          ? subscription.ownedPartitions.flatMap((t) => t.partitions.map((partition) => ({ topic: t.topic, partition })))
          : [];
        const assigned = await api.heartbeat({ groupId, memberId: known.coordinatorMemberId, generationId: known.generation, owned: prior ? known.owned : owned }).catch((err: unknown) => {
          if (!(prior && err instanceof OnelogError && err.code === 'UNKNOWN_MEMBER_ID')) throw err;
          members.delete(groupId, memberId);
          return null;
        });
        if (assigned === null) return await joinGroup.handle({ ...request, memberId: '' }, ctx);
        if (!prior) known.owned = owned;
        known.generation = known.kafkaGeneration = assigned.generationId;
        known.protocolName = protocolName;
        // A static member's return moves nothing: no round (but the one it is asked to rejoin).
        const generationId = prior && !members.rounds.pending(groupId, memberId) ? assigned.generationId : await afterRound(ctx, known, rebalanceTimeoutMs(request));
        return answer(KAFKA_ERROR.NONE, { generationId, protocolName });
      }
      const chosen = await chooseAssignor(api, groupId, protocols);
      protocolName = chosen.protocolName;
      const joined = await api.joinGroup({
        groupId, topics: subscription.topics, sessionTimeoutMs: request.sessionTimeoutMs as number, clientId: header.clientId || 'kafka',
        // A revoked partition may take the member's rebalance timeout (max.poll.interval.ms) to come back, as Kafka.
        rebalanceTimeoutMs: Math.min(Math.max(rebalanceTimeoutMs(request), 1000), 3_600_000),
        commitStartPositions: false, assignor: chosen.assignor,
      });
      const member = members.set({
        groupId, memberId: joined.memberId, coordinatorMemberId: joined.memberId, fenced: false, topics: subscription.topics, groupInstanceId, kafkaGeneration: joined.generationId, generation: joined.generationId, owned: [], paused: new Set(), protocolName,
        sessionTimeoutMs: request.sessionTimeoutMs as number,
      });
      memberId = joined.memberId;
      const generationId = await afterRound(ctx, member, rebalanceTimeoutMs(request));
      return answer(KAFKA_ERROR.NONE, { generationId, memberId: joined.memberId, protocolName });
    } catch (err) {
      return answer(groupError(err, members, groupId, memberId));
    }
  },
};

export const syncGroup: KafkaApi = {
  key: 14, name: 'SyncGroup', minVersion: 0, maxVersion: 5, request: syncGroupRequest, response: syncGroupResponse,
  async handle(request, { api, members }) {
    const groupId = request.groupId as string;
    const memberId = request.memberId as string;
    const answer = (errorCode: number, assignment: Buffer = Buffer.alloc(0), protocolName: string | null = null) =>
      ({ throttleTimeMs: 0, errorCode, protocolType: 'consumer', protocolName, assignment });
    const m = memberOf(members, groupId, memberId, request.generationId as number);
    if (typeof m === 'number') return answer(m);
    try {
      const assigned = await api.heartbeat({ groupId, memberId: m.coordinatorMemberId, generationId: m.generation, owned: m.owned });
      return answer(KAFKA_ERROR.NONE, writeAssignment(members.own(m, assigned.assignment, assigned.generationId)), m.protocolName);
    } catch (err) {
      return answer(groupError(err, members, groupId, memberId));
    }
  },
};

export const heartbeat: KafkaApi = {
  key: 12, name: 'Heartbeat', minVersion: 0, maxVersion: 4, request: heartbeatRequest, response: heartbeatResponse,
  async handle(request, { api, members }) {
    const groupId = request.groupId as string;
    const memberId = request.memberId as string;
    const m = memberOf(members, groupId, memberId, request.generationId as number);
    if (typeof m === 'number') return { throttleTimeMs: 0, errorCode: m };
    try {
      const assigned = await api.heartbeat({ groupId, memberId: m.coordinatorMemberId, generationId: m.generation, owned: m.owned });
      m.generation = assigned.generationId;
      // The coordinator wants the member to release or take partitions, or a JoinGroup round waits for it: it rejoins.
      const rejoin = KafkaMembers.differs(m, assigned.assignment) || members.rounds.pending(groupId, memberId);
      return { throttleTimeMs: 0, errorCode: rejoin ? KAFKA_ERROR.REBALANCE_IN_PROGRESS : KAFKA_ERROR.NONE };
    } catch (err) {
      return { throttleTimeMs: 0, errorCode: groupError(err, members, groupId, memberId) };
    }
  },
};

export const leaveGroup: KafkaApi = {
  key: 13, name: 'LeaveGroup', minVersion: 0, maxVersion: 5, request: leaveGroupRequest, response: leaveGroupResponse,
  async handle(request, { api, header, members }) {
    const groupId = request.groupId as string;
    // v3+: members by id, or a static member by its group.instance.id alone (an admin removing it).
    const leaving = header.apiVersion >= 3
      ? (request.members as Array<{ memberId: string; groupInstanceId: string | null }>).map((m) => ({
        memberId: m.memberId !== '' || m.groupInstanceId === null ? m.memberId : members.byInstance(groupId, m.groupInstanceId)?.memberId ?? '',
        groupInstanceId: m.groupInstanceId,
      }))
      : [{ memberId: request.memberId as string, groupInstanceId: null }];
    const results = await Promise.all(leaving.map(async ({ memberId, groupInstanceId }) => {
      const kafka = members.peek(groupId, memberId);
      // A fenced process (another replaced it under its group.instance.id) leaves nothing: the member is the other's.
      if (kafka?.fenced) return { memberId, groupInstanceId, errorCode: KAFKA_ERROR.FENCED_INSTANCE_ID };
      // Forgotten once the broker let it leave: a refused LeaveGroup (an ACL) leaves the member as it was.
      const errorCode = await api.leaveGroup({ groupId, memberId: kafka?.coordinatorMemberId ?? memberId }).then(() => 0, (err: unknown) => kafkaErrorCode(err, 'group'));
      if (errorCode === 0 || errorCode === kafkaCodeOf('UNKNOWN_MEMBER_ID', 'group')) members.delete(groupId, memberId);
      return { memberId, groupInstanceId, errorCode };
    }));
    return { throttleTimeMs: 0, errorCode: 0, members: results };
  },
};

/**
 * Share groups on the Kafka protocol (KIP-932; docs/kafka.md): ShareGroupHeartbeat (76), ShareGroupDescribe (77),
 * ShareFetch (78), ShareAcknowledge (79), DescribeShareGroupOffsets (90) and AlterShareGroupOffsets (91), over the
 * broker's share groups (src/coordinator/share-groups.ts): a Kafka member is a member of the same share group as
 * onelog's own, its records locked, counted, renewed and dead-lettered by the group's onelog settings (lockMs,
 * maxDeliveries; set over Kafka with the group configs of group-configs.ts).
 *
 * - A member's first heartbeat (epoch 0) subscribes the group to its topics as a share group (created then, with the
 *   group's configs), and the group's partitions are spread over its members (share-assignor.ts); later heartbeats
 *   keep it alive and answer its assignment, at a new epoch when it changed; epoch -1 leaves, releasing at once what
 *   it holds.
 * - ShareFetch's share session (epoch 0 opens, -1 closes) names the partitions the member fetches; its
 *   acknowledgements are applied first (ACCEPT, RELEASE, REJECT, and RENEW from v2, KIP-1222), then records are
 *   acquired (none at epoch -1, or when the request only renews) and answered as batches of the stored records with
 *   their acquired ranges and delivery counts.
 */
import { OnelogError } from '../../protocol/errors.js';
import type { KafkaDataApi } from './api.js';
import type { ShareAckRequest, SharedSections } from '../../protocol/share-groups.js';
import { sectionBatch } from '../../protocol/record-batch.js';
import { KAFKA_ERROR, kafkaCodeOf, kafkaErrorCode } from '../errors.js';
import { shareSettings } from '../group-configs.js';
import {
  alterShareGroupOffsetsRequest, alterShareGroupOffsetsResponse, describeShareGroupOffsetsRequest, describeShareGroupOffsetsResponse,
  shareAcknowledgeRequest, shareAcknowledgeResponse, shareFetchRequest, shareFetchResponse, shareGroupDescribeRequest, shareGroupDescribeResponse,
  shareGroupHeartbeatRequest, shareGroupHeartbeatResponse,
} from '../messages/share-groups.js';
import { kafkaNodes, leaderFor } from '../placement.js';
import { addToSession, forgetInSession, SHARE_HEARTBEAT_INTERVAL_MS, SHARE_SESSION_TIMEOUT_MS } from '../share-members.js';
import type { KafkaShareMember, SharePartitionRef, ShareSession } from '../share-members.js';
import type { ShareAssignment } from '../share-assignor.js';
import type { KafkaApi, RequestContext } from './api.js';

const INVALID_REQUEST = kafkaCodeOf('INVALID_REQUEST');
const UNKNOWN_MEMBER_ID = kafkaCodeOf('UNKNOWN_MEMBER_ID');
const UNKNOWN_GROUP = kafkaCodeOf('UNKNOWN_GROUP');
/** The acknowledgement types on the wire (0 is a gap: an offset with no record, nothing to acknowledge). */
const ACK_TYPES = [null, 'accept', 'release', 'reject', 'renew'] as const;
/** Acknowledgements one broker call carries at most (OnelogApi.shareAcknowledge's bound). */
const ACKS_PER_CALL = 10_000;
const EMPTY = Buffer.alloc(0);
/** How long each topic of a several-topic ShareFetch waits at a time, ms. */
const WAIT_SLICE_MS = 100;
/** The shortest heartbeat interval told, ms. */
const MIN_HEARTBEAT_INTERVAL_MS = 100;
/** Bounds of onelog's share acquisition (ShareFetchRequest). */
const FETCH_BOUNDS = { maxRecords: 10_000, maxBytes: 64 << 20, maxWaitMs: 30_000 };

/** The Kafka code of an OnelogError answered for a group; anything else is thrown (the connection closes). */
function codeOf(err: unknown, context: 'data' | 'group' = 'group'): number {
  if (!(err instanceof OnelogError)) throw err;
  return kafkaErrorCode(err, context);
}

/** The message of an error answered with its code. */
const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** Makes the members whose session ended leave, and closes the share sessions no request used for as long. */
export async function sweep(ctx: RequestContext): Promise<void> {
  for (const m of ctx.shareMembers.expired()) {
    ctx.shareMembers.closeSession(m.groupId, m.memberId);
    await leave(ctx, m);
  }
  for (const { groupId, memberId, session } of ctx.shareMembers.staleSessions()) await advance(ctx, groupId, memberId, session, -1);
}

/**
 * A member leaves its group (heartbeat at epoch -1, or its session ended). What it holds is released (its deliveries
 * counted) at once, unless its share session is still open: a consumer that closes leaves the group and sends its
 * last acknowledgements in either order, and the session's close (epoch -1) releases what is left after them.
 */
async function leave(ctx: RequestContext, m: KafkaShareMember): Promise<void> {
  ctx.shareMembers.remove(m);
  if (ctx.shareMembers.session(m.groupId, m.memberId) !== undefined) return;
  const topic = m.topics.find((t) => ctx.shareMembers.subscribed(m.groupId, t));
  if (topic !== undefined) await release(ctx, m.groupId, m.memberId, topic);
}

/** Releases what the member holds in any topic of the group (onelog's leave: `topic` is one the group subscribes to). */
async function release(ctx: RequestContext, groupId: string, memberId: string, topic: string): Promise<void> {
  await ctx.api.shareAcknowledge({ groupId, topic, memberId, acks: [], leave: true }).catch(() => undefined);
}

/**
 * Subscribes the group to each topic that exists as a share group (created with the group's configs), the first time
 * this listener sees the pair, and records the topics' ids and partitions for the assignor.
 * @throws OnelogError when the group is not a share group (`INVALID_REQUEST`), or a refusal (`FORBIDDEN`)
 */
async function subscribeTopics(ctx: RequestContext, groupId: string, topics: readonly string[]): Promise<void> {
  const { api, topicIds, shareMembers } = ctx;
  for (const topic of new Set(topics)) {
    const d = await api.describeTopic(topic).catch((err: unknown) => {
      if (err instanceof OnelogError && (err.code === 'UNKNOWN_TOPIC' || err.code === 'INVALID_TOPIC')) return null;
      throw err;
    });
    // Not (yet) a topic: assigned once it is.
    shareMembers.learnTopic(topic, d === null ? null : { topicId: topicIds.learn(topic, d.createdAt), partitions: d.partitions.map((p) => p.partition) });
    if (d === null || shareMembers.subscribed(groupId, topic)) continue;
    const group = await api.describeGroup(groupId).catch(() => null);
    const existing = group?.subscriptions.find((s) => s.topic === topic);
    if (existing === undefined || existing.type !== 'share') {
      await api.subscribe({ groupId, topic, type: 'share', ...(existing === undefined ? shareSettings(await api.groupConfigs(groupId)) : {}) });
    }
    shareMembers.markSubscribed(groupId, topic);
  }
}

const sameAssignment = (a: ShareAssignment, b: ShareAssignment) => JSON.stringify(a) === JSON.stringify(b);
const wireAssignment = (a: ShareAssignment) => ({ topicPartitions: a.map(({ topicId, partitions }) => ({ topicId, partitions })) });

export const shareGroupHeartbeat: KafkaApi = {
  key: 76, name: 'ShareGroupHeartbeat', minVersion: 1, maxVersion: 1, request: shareGroupHeartbeatRequest, response: shareGroupHeartbeatResponse,
  async handle(request, ctx) {
    const { shareMembers, header } = ctx;
    const groupId = request.groupId as string;
    const memberId = request.memberId as string;
    const memberEpoch = request.memberEpoch as number;
    const subscribed = request.subscribedTopicNames as string[] | null;
    // While a new group settles, its members come back as it ends, for their first assignment.
    const answer = (errorCode: number, errorMessage: string | null, fields: { memberEpoch?: number; assignment?: object | null } = {}) => ({
      throttleTimeMs: 0, errorCode, errorMessage, memberId: errorCode === 0 ? memberId : null, memberEpoch: -1,
      heartbeatIntervalMs: shareMembers.settling(groupId) > 0 ? Math.max(shareMembers.settling(groupId), MIN_HEARTBEAT_INTERVAL_MS) : SHARE_HEARTBEAT_INTERVAL_MS,
      assignment: null, ...fields,
    });
    if (groupId === '') return answer(INVALID_REQUEST, 'GroupId is empty');
    if (memberId === '') return answer(INVALID_REQUEST, 'MemberId is empty: a share consumer names itself with a member id it keeps (KIP-932)');
    try {
      // The group is checked before anything, its topics after, as Kafka authorizes a heartbeat.
      await ctx.api.authorizeGroup(groupId);
      await sweep(ctx);
      const known = shareMembers.get(groupId, memberId);
      if (memberEpoch === -1) {
        if (known) await leave(ctx, known);
        return answer(KAFKA_ERROR.NONE, null, { memberEpoch: -1 });
      }
      if (memberEpoch === 0) {
        const topics = subscribed ?? known?.topics;
        if (topics === undefined) return answer(INVALID_REQUEST, 'SubscribedTopicNames must be set when joining (member epoch 0)');
        await subscribeTopics(ctx, groupId, topics);
        const m = shareMembers.join({
          groupId, memberId, topics, rackId: (request.rackId as string | null) ?? null, clientId: header.clientId ?? '', clientHost: ctx.connection.remoteAddress,
        });
        m.assignment = shareMembers.assignmentNow(groupId, memberId);
        return answer(KAFKA_ERROR.NONE, null, { memberEpoch: m.epoch, assignment: wireAssignment(m.assignment) });
      }
      if (known === undefined) return answer(UNKNOWN_MEMBER_ID, `member ${memberId} is not a member of share group ${groupId} (its session ended, or the broker restarted): join again`);
      if (memberEpoch !== known.epoch && memberEpoch !== known.previousEpoch) {
        return answer(KAFKA_ERROR.FENCED_MEMBER_EPOCH, `member epoch ${memberEpoch} is neither the member's epoch ${known.epoch} nor the one before: join again`);
      }
      shareMembers.seen(known);
      if (subscribed !== null) known.topics = subscribed;
      await subscribeTopics(ctx, groupId, known.topics);
      const assignment = shareMembers.assignmentNow(groupId, memberId);
      if (!sameAssignment(assignment, known.assignment)) shareMembers.reassign(known, assignment);
      return answer(KAFKA_ERROR.NONE, null, { memberEpoch: known.epoch, assignment: wireAssignment(known.assignment) });
    } catch (err) {
      return answer(codeOf(err), messageOf(err));
    }
  },
};

export const shareGroupDescribe: KafkaApi = {
  key: 77, name: 'ShareGroupDescribe', minVersion: 1, maxVersion: 1, request: shareGroupDescribeRequest, response: shareGroupDescribeResponse,
  async handle(request, ctx) {
    const { api, shareMembers, topicIds } = ctx;
    await sweep(ctx);
    return {
      throttleTimeMs: 0,
      groups: await Promise.all((request.groupIds as string[]).map(async (groupId) => {
        const none = { groupId, groupState: '', groupEpoch: -1, assignmentEpoch: -1, assignorName: '', members: [] };
        try {
          const d = await api.describeGroup(groupId);
          const shares = d.subscriptions.filter((s) => s.type === 'share');
          if (shares.length === 0) return { ...none, errorCode: UNKNOWN_GROUP, errorMessage: `group ${groupId} is not a share group` };
          const kafka = shareMembers.inGroup(groupId);
          // onelog's own members of the group (known by the member id they fetch with) fetch every partition of its topics.
          const own = await Promise.all((d.shareMembers ?? []).filter((o) => !kafka.some((k) => k.memberId === o.memberId)).map(async (o) => ({
            memberId: o.memberId, rackId: null, memberEpoch: 0, clientId: 'onelog', clientHost: '', subscribedTopicNames: shares.map((s) => s.topic),
            assignment: {
              topicPartitions: await Promise.all(shares.map(async (s) => ({
                topicId: await topicIds.idOf(api, s.topic), topicName: s.topic, partitions: s.partitions.map((p) => p.partition),
              }))),
            },
          })));
          const epoch = shareMembers.groupEpoch(groupId);
          return {
            errorCode: 0, errorMessage: null, groupId, groupState: kafka.length + own.length > 0 ? 'Stable' : 'Empty', groupEpoch: epoch, assignmentEpoch: epoch,
            assignorName: 'simple',
            members: [
              ...kafka.map((m) => ({
                memberId: m.memberId, rackId: m.rackId, memberEpoch: m.epoch, clientId: m.clientId, clientHost: m.clientHost, subscribedTopicNames: [...m.topics],
                assignment: { topicPartitions: m.assignment.map((a) => ({ topicId: a.topicId, topicName: a.topic, partitions: [...a.partitions] })) },
              })),
              ...own,
            ],
          };
        } catch (err) {
          // A group that does not exist is GROUP_ID_NOT_FOUND, as Kafka answers it.
          return { ...none, errorCode: codeOf(err), errorMessage: messageOf(err) };
        }
      })),
    };
  },
};

/** Acknowledgements as the wire carries them: per topic id, per partition, batches of offsets with their types. */
type WireAcks = Array<{
  topicId: string;
  partitions: Array<{ partitionIndex: number; acknowledgementBatches: Array<{ firstOffset: number; lastOffset: number; acknowledgeTypes: number[] }> }>;
}>;

/** An error answered for a partition. */
interface PartitionAnswer { code: number; message: string | null }

const refKey = (topicId: string, partition: number) => `${topicId}:${partition}`;

/**
 * Applies a member's acknowledgements through the broker and answers each partition named: 0, or its error
 * (INVALID_RECORD_STATE for a record the member does not hold; UNKNOWN_TOPIC_ID; INVALID_REQUEST for a bad batch).
 */
async function acknowledge(
  ctx: RequestContext, groupId: string, memberId: string, topics: WireAcks, renewAllowed: boolean, names: ReadonlyMap<string, string>,
): Promise<Map<string, PartitionAnswer>> {
  const { api } = ctx;
  const out = new Map<string, PartitionAnswer>();
  for (const t of topics) {
    const topic = names.get(t.topicId) ?? null;
    const acks: ShareAckRequest['acks'] = [];
    const bad = new Map<number, string>();
    for (const p of t.partitions) {
      if (p.acknowledgementBatches.length === 0) continue;
      out.set(refKey(t.topicId, p.partitionIndex), { code: 0, message: null });
      if (topic === null) continue;
      const why = expandBatches(p.partitionIndex, p.acknowledgementBatches, renewAllowed, acks);
      if (why !== null) bad.set(p.partitionIndex, why);
    }
    for (const [partition, message] of bad) out.set(refKey(t.topicId, partition), { code: INVALID_REQUEST, message });
    if (topic === null) {
      for (const p of t.partitions) if (out.has(refKey(t.topicId, p.partitionIndex))) out.set(refKey(t.topicId, p.partitionIndex), { code: KAFKA_ERROR.UNKNOWN_TOPIC_ID, message: `no topic has id ${t.topicId}` });
      continue;
    }
    const good = acks.filter((a) => !bad.has(a.partition));
    for (let i = 0; i < good.length; i += ACKS_PER_CALL) {
      try {
        const result = await api.shareAcknowledge({ groupId, topic, memberId, acks: good.slice(i, i + ACKS_PER_CALL) });
        for (const r of result.partitions) {
          if (r.error) out.set(refKey(t.topicId, r.partition), { code: kafkaCodeOf(r.error.code), message: r.error.message });
        }
      } catch (err) {
        for (const a of good.slice(i, i + ACKS_PER_CALL)) out.set(refKey(t.topicId, a.partition), { code: codeOf(err, 'data'), message: messageOf(err) });
      }
    }
  }
  return out;
}

/**
 * Appends a partition's acknowledgement batches to `acks`, one per offset (gaps left out); the reason a batch is
 * malformed (overlapping or descending, types not one per offset or one for all, an unknown type), or null.
 */
function expandBatches(
  partition: number, batches: ReadonlyArray<{ firstOffset: number; lastOffset: number; acknowledgeTypes: number[] }>, renewAllowed: boolean, acks: ShareAckRequest['acks'],
): string | null {
  let after = -1;
  const mine: ShareAckRequest['acks'] = [];
  for (const b of batches) {
    const count = b.lastOffset - b.firstOffset + 1;
    if (b.firstOffset <= after || count < 1) return `acknowledgement batches of partition ${partition} overlap or run backwards at ${b.firstOffset}-${b.lastOffset}`;
    if (b.acknowledgeTypes.length !== 1 && b.acknowledgeTypes.length !== count) {
      return `a batch of ${count} offsets has ${b.acknowledgeTypes.length} acknowledge types: one for all, or one per offset`;
    }
    if (count > ACKS_PER_CALL * 10) return `a batch of ${count} offsets is more than onelog takes at once (${ACKS_PER_CALL * 10})`;
    for (let i = 0; i < count; i++) {
      const code = b.acknowledgeTypes.length === 1 ? b.acknowledgeTypes[0]! : b.acknowledgeTypes[i]!;
      const type = ACK_TYPES[code];
      if (type === undefined || (type === 'renew' && !renewAllowed)) return `acknowledge type ${code} is not one of 0 (gap), 1 (accept), 2 (release), 3 (reject)${renewAllowed ? ', 4 (renew)' : ''}`;
      if (type !== null) mine.push({ partition, offset: b.firstOffset + i, type });
    }
    after = b.lastOffset;
  }
  acks.push(...mine);
  return null;
}

/** The partitions of a request's topics (without their acknowledgements). */
function refsOf(topics: ReadonlyArray<{ topicId: string; partitions: ReadonlyArray<{ partitionIndex: number } | number> }>): SharePartitionRef[] {
  return topics.flatMap((t) => t.partitions.map((p) => ({ topicId: t.topicId, partition: typeof p === 'number' ? p : p.partitionIndex })));
}

/** Whether the principal may read the group (before a request touches its members or sessions): null, or the error to answer. */
async function authorize(ctx: RequestContext, groupId: string): Promise<{ code: number; message: string } | null> {
  return ctx.api.authorizeGroup(groupId).then(() => null, (err: unknown) => ({ code: codeOf(err), message: messageOf(err) }));
}

/**
 * Checks a request's share session epoch against the member's session: the session, or the error to answer
 * (SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH). Epoch 0 opens a new session (only a ShareFetch may).
 */
function sessionFor(ctx: RequestContext, groupId: string, memberId: string, epoch: number, mayOpen: boolean): ShareSession | { code: number; message: string } {
  if (epoch === 0) {
    if (!mayOpen) return { code: KAFKA_ERROR.INVALID_SHARE_SESSION_EPOCH, message: 'a ShareAcknowledge cannot open a share session (epoch 0): a ShareFetch opens it' };
    return ctx.shareMembers.openSession(groupId, memberId);
  }
  const session = ctx.shareMembers.session(groupId, memberId);
  if (session === undefined) return { code: KAFKA_ERROR.SHARE_SESSION_NOT_FOUND, message: `member ${memberId} of ${groupId} has no share session here: open one (epoch 0)` };
  if (epoch !== -1 && epoch !== session.epoch) {
    return { code: KAFKA_ERROR.INVALID_SHARE_SESSION_EPOCH, message: `share session epoch ${epoch} is not the one expected, ${session.epoch}` };
  }
  session.usedAt = ctx.shareMembers.clock.now(); // in use from now: a long poll is not swept
  return session;
}

/**
 * A session served at `epoch`: at -1 closed, and what the member still holds released (KIP-932: a share session's
 * close releases its member's acquired records), else expecting the next epoch (wrapping to 1, as Kafka's).
 */
async function advance(ctx: RequestContext, groupId: string, memberId: string, session: ShareSession, epoch: number): Promise<void> {
  session.usedAt = ctx.shareMembers.clock.now();
  if (epoch !== -1) {
    session.epoch = epoch === 2_147_483_647 ? 1 : epoch + 1;
    return;
  }
  ctx.shareMembers.closeSession(groupId, memberId);
  for (const ref of session.partitions.values()) {
    const topic = await ctx.topicIds.nameOf(ctx.api, ref.topicId);
    if (topic !== null) return await release(ctx, groupId, memberId, topic);
  }
}

/** Acquired records of a partition as the wire answers them. */
interface Acquired { records: Buffer[]; ranges: Array<{ firstOffset: number; lastOffset: number; deliveryCount: number }> }

/** Adds a partition's acquired sections to `into`: each section a batch, each run of offsets with one delivery count a range. */
function addSections(into: Acquired, p: SharedSections['partitions'][number]): void {
  let i = 0;
  for (const section of p.sections) {
    const { batch, offsets } = sectionBatch(section);
    into.records.push(batch);
    for (const offset of offsets) {
      const deliveryCount = p.deliveryCounts[i++]!;
      const last = into.ranges[into.ranges.length - 1];
      if (last && last.lastOffset === offset - 1 && last.deliveryCount === deliveryCount) last.lastOffset = offset;
      else into.ranges.push({ firstOffset: offset, lastOffset: offset, deliveryCount });
    }
  }
}

/**
 * Acquires records of the session's partitions for the member: every topic at once without waiting, then, if none
 * came and the request may wait, each topic waiting up to `maxWaitMs` for its share of `maxRecords`.
 */
async function acquire(
  ctx: RequestContext, api: KafkaDataApi, groupId: string, memberId: string, session: ShareSession, names: ReadonlyMap<string, string>,
  limits: { maxRecords: number; maxBytes: number; maxWaitMs: number }, answers: Map<string, PartitionAnswer>,
): Promise<{ acquired: Map<string, Acquired>; lockMs: number }> {
  // A member the group knows fetches only what it is assigned now (it may not have heard of a newcomer yet).
  const member = ctx.shareMembers.get(groupId, memberId);
  const assigned = member === undefined ? null : new Set(ctx.shareMembers.assignmentNow(groupId, memberId).flatMap((a) => a.partitions.map((p) => refKey(a.topicId, p))));
  const byTopic = new Map<string, number[]>();
  for (const p of session.partitions.values()) {
    if (assigned === null || assigned.has(refKey(p.topicId, p.partition))) byTopic.set(p.topicId, [...(byTopic.get(p.topicId) ?? []), p.partition]);
  }
  const acquired = new Map<string, Acquired>();
  let lockMs = 0;
  let got = 0;
  const named: Array<{ topicId: string; topic: string; partitions: number[] }> = [];
  for (const [topicId, partitions] of byTopic) {
    const topic = names.get(topicId) ?? null;
    if (topic === null) {
      for (const partition of partitions) answers.set(refKey(topicId, partition), { code: KAFKA_ERROR.UNKNOWN_TOPIC_ID, message: `no topic has id ${topicId}` });
    } else {
      named.push({ topicId, topic, partitions });
    }
  }
  const fetchTopic = async (t: (typeof named)[number], maxRecords: number, maxWaitMs: number) => {
    try {
      const r = await api.shareFetchSections({
        groupId, topic: t.topic, memberId, maxRecords, maxBytes: limits.maxBytes, maxWaitMs, sessionTimeoutMs: SHARE_SESSION_TIMEOUT_MS, partitions: t.partitions,
      });
      lockMs = r.lockMs;
      ctx.shareMembers.rememberLock(groupId, r.lockMs);
      for (const p of r.partitions) {
        const key = refKey(t.topicId, p.partition);
        const into = acquired.get(key) ?? { records: [], ranges: [] };
        addSections(into, p);
        acquired.set(key, into);
        got += p.deliveryCounts.length;
      }
    } catch (err) {
      // The group's subscription went (the group or the topic was deleted): the next heartbeat subscribes it again.
      if (err instanceof OnelogError && (err.code === 'INVALID_REQUEST' || err.code === 'UNKNOWN_GROUP')) ctx.shareMembers.forgetSubscription(groupId, t.topic);
      for (const partition of t.partitions) answers.set(refKey(t.topicId, partition), { code: codeOf(err, 'data'), message: messageOf(err) });
    }
  };
  for (const t of named) {
    if (got >= limits.maxRecords) break;
    await fetchTopic(t, limits.maxRecords - got, 0);
  }
  if (got === 0 && limits.maxWaitMs > 0 && named.length === 1) await fetchTopic(named[0]!, limits.maxRecords, limits.maxWaitMs);
  // Several topics wait side by side in short slices, so what one acquires is answered within a slice, not held
  // (its lock running) until the others' waits end.
  const deadline = ctx.shareMembers.clock.now() + limits.maxWaitMs;
  for (let left = limits.maxWaitMs; got === 0 && named.length > 1 && left > 0; left = deadline - ctx.shareMembers.clock.now()) {
    const share = Math.max(1, Math.floor(limits.maxRecords / named.length));
    await Promise.all(named.map((t) => fetchTopic(t, share, Math.min(left, WAIT_SLICE_MS))));
  }
  return { acquired, lockMs };
}

/** The group's lock (AcquisitionLockTimeoutMs when nothing was acquired): as its last acquisition told, else described. */
async function lockOf(ctx: RequestContext, groupId: string): Promise<number> {
  const known = ctx.shareMembers.lockOf(groupId);
  if (known !== undefined) return known;
  const d = await ctx.api.describeGroup(groupId).catch(() => null);
  const lockMs = d?.subscriptions.find((s) => s.share)?.share?.lockMs ?? 30_000;
  ctx.shareMembers.rememberLock(groupId, lockMs);
  return lockMs;
}

/** The nodes and leaders of partitions answered (CurrentLeader, and NodeEndpoints for those led elsewhere). */
async function leadersOf(ctx: RequestContext, names: ReadonlyMap<string, string>): Promise<{ leader(topicId: string, partition: number): number; endpoints: object[] }> {
  const [placement, leaders] = await Promise.all([kafkaNodes(ctx.cluster, ctx.advertised), ctx.cluster.partitionLeaders([...names.values()])]);
  return {
    leader: (topicId, partition) => leaderFor(placement, leaders?.get(names.get(topicId) ?? '')?.get(partition)),
    endpoints: [...placement.nodes.values()].map((n) => ({ nodeId: n.nodeId, host: n.host, port: n.port, rack: null })),
  };
}

/** Topic ids to names, for those of `ids` a topic has. */
async function namesOf(ctx: RequestContext, ids: Iterable<string>): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const id of new Set(ids)) {
    const name = await ctx.topicIds.nameOf(ctx.api, id);
    if (name !== null) out.set(id, name);
  }
  return out;
}

export const shareFetch: KafkaApi = {
  key: 78, name: 'ShareFetch', minVersion: 1, maxVersion: 2, request: shareFetchRequest, response: shareFetchResponse,
  async handle(request, ctx) {
    const { api } = ctx;
    const groupId = (request.groupId as string | null) ?? '';
    const memberId = (request.memberId as string | null) ?? '';
    const epoch = request.shareSessionEpoch as number;
    const topics = request.topics as WireAcks;
    const forgotten = request.forgottenTopicsData as Array<{ topicId: string; partitions: number[] }>;
    const top = (errorCode: number, errorMessage: string) => ({ throttleTimeMs: 0, errorCode, errorMessage, acquisitionLockTimeoutMs: 0, responses: [], nodeEndpoints: [] });
    if (groupId === '' || memberId === '') return top(INVALID_REQUEST, 'GroupId and MemberId are required');
    const hasAcks = topics.some((t) => t.partitions.some((p) => p.acknowledgementBatches.length > 0));
    if (epoch === 0 && hasAcks) return top(INVALID_REQUEST, 'a ShareFetch opening a share session (epoch 0) acknowledges nothing');
    if (epoch === -1 && forgotten.length > 0) return top(INVALID_REQUEST, 'a ShareFetch closing its share session (epoch -1) forgets nothing');
    const refused = await authorize(ctx, groupId);
    if (refused !== null) return top(refused.code, refused.message);
    const session = sessionFor(ctx, groupId, memberId, epoch, true);
    if ('code' in session) return top(session.code, session.message);
    if (epoch !== -1) addToSession(session, refsOf(topics));
    // Every topic id the request and its session name, looked up once.
    const names = await namesOf(ctx, [...topics.map((t) => t.topicId), ...[...session.partitions.values()].map((p) => p.topicId)]);
    const answers = await acknowledge(ctx, groupId, memberId, topics, request.isRenewAck === true, names);
    const ackAnswers = new Map(answers);
    forgetInSession(session, refsOf(forgotten));
    // Nothing is acquired by a session's close, a request that only renews, or one that takes no bytes (fetch.max.bytes=0).
    const fetching = epoch !== -1 && request.isRenewAck !== true && (request.maxBytes as number) > 0;
    const fetchErrors = new Map<string, PartitionAnswer>();
    const { acquired, lockMs } = fetching
      ? await acquire(ctx, api, groupId, memberId, session, names, {
        maxRecords: clamp(request.maxRecords as number, 500, FETCH_BOUNDS.maxRecords),
        maxBytes: Math.min(request.maxBytes as number, FETCH_BOUNDS.maxBytes),
        maxWaitMs: clamp(request.maxWaitMs as number, 0, FETCH_BOUNDS.maxWaitMs),
      }, fetchErrors)
      : { acquired: new Map<string, Acquired>(), lockMs: 0 };
    await advance(ctx, groupId, memberId, session, epoch);
    // Every partition of the session is answered, and any the acknowledgements named.
    const keys = new Map<string, SharePartitionRef>([...session.partitions]);
    for (const t of topics) for (const p of t.partitions) keys.set(refKey(t.topicId, p.partitionIndex), { topicId: t.topicId, partition: p.partitionIndex });
    const leaders = await leadersOf(ctx, names);
    const byTopic = new Map<string, object[]>();
    for (const [key, ref] of [...keys].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const got = acquired.get(key);
      const fetchError = fetchErrors.get(key);
      const ack = ackAnswers.get(key);
      const partitions = byTopic.get(ref.topicId) ?? [];
      partitions.push({
        partitionIndex: ref.partition, errorCode: fetchError?.code ?? 0, errorMessage: fetchError?.message ?? null,
        acknowledgeErrorCode: ack?.code ?? 0, acknowledgeErrorMessage: ack?.message ?? null,
        currentLeader: { leaderId: leaders.leader(ref.topicId, ref.partition), leaderEpoch: 0 },
        // librdkafka reads no records as an empty set, never null.
        records: got ? Buffer.concat(got.records) : EMPTY, acquiredRecords: got?.ranges ?? [],
      });
      byTopic.set(ref.topicId, partitions);
    }
    return {
      throttleTimeMs: 0, errorCode: 0, errorMessage: null, acquisitionLockTimeoutMs: lockMs || await lockOf(ctx, groupId),
      responses: [...byTopic].map(([topicId, partitions]) => ({ topicId, partitions })), nodeEndpoints: leaders.endpoints,
    };
  },
};

/** `value` within [0, max], `fallback` when not positive. */
function clamp(value: number, fallback: number, max: number): number {
  return value > 0 ? Math.min(value, max) : fallback;
}

export const shareAcknowledge: KafkaApi = {
  key: 79, name: 'ShareAcknowledge', minVersion: 1, maxVersion: 2, request: shareAcknowledgeRequest, response: shareAcknowledgeResponse,
  async handle(request, ctx) {
    const groupId = (request.groupId as string | null) ?? '';
    const memberId = (request.memberId as string | null) ?? '';
    const epoch = request.shareSessionEpoch as number;
    const topics = request.topics as WireAcks;
    const top = (errorCode: number, errorMessage: string) => ({ throttleTimeMs: 0, errorCode, errorMessage, acquisitionLockTimeoutMs: 0, responses: [], nodeEndpoints: [] });
    if (groupId === '' || memberId === '') return top(INVALID_REQUEST, 'GroupId and MemberId are required');
    const refused = await authorize(ctx, groupId);
    if (refused !== null) return top(refused.code, refused.message);
    const session = sessionFor(ctx, groupId, memberId, epoch, false);
    if ('code' in session) return top(session.code, session.message);
    const names = await namesOf(ctx, topics.map((t) => t.topicId));
    const answers = await acknowledge(ctx, groupId, memberId, topics, request.isRenewAck === true, names);
    await advance(ctx, groupId, memberId, session, epoch);
    const leaders = await leadersOf(ctx, names);
    return {
      throttleTimeMs: 0, errorCode: 0, errorMessage: null, acquisitionLockTimeoutMs: await lockOf(ctx, groupId),
      responses: topics.map((t) => ({
        topicId: t.topicId,
        partitions: t.partitions.map((p) => {
          const a = answers.get(refKey(t.topicId, p.partitionIndex));
          return {
            partitionIndex: p.partitionIndex, errorCode: a?.code ?? 0, errorMessage: a?.message ?? null,
            currentLeader: { leaderId: leaders.leader(t.topicId, p.partitionIndex), leaderEpoch: 0 },
          };
        }),
      })),
      nodeEndpoints: leaders.endpoints,
    };
  },
};

export const describeShareGroupOffsets: KafkaApi = {
  key: 90, name: 'DescribeShareGroupOffsets', minVersion: 0, maxVersion: 1, request: describeShareGroupOffsetsRequest, response: describeShareGroupOffsetsResponse,
  async handle(request, ctx) {
    const { api, topicIds } = ctx;
    const groups = request.groups as Array<{ groupId: string; topics: Array<{ topicName: string; partitions: number[] }> | null }>;
    return {
      throttleTimeMs: 0,
      groups: await Promise.all(groups.map(async ({ groupId, topics }) => {
        try {
          const d = await api.describeGroup(groupId);
          const shares = new Map(d.subscriptions.filter((s) => s.type === 'share').map((s) => [s.topic, s]));
          if (shares.size === 0) return { groupId, topics: [], errorCode: UNKNOWN_GROUP, errorMessage: `group ${groupId} is not a share group` };
          const wanted = topics ?? [...shares.values()].map((s) => ({ topicName: s.topic, partitions: s.partitions.map((p) => p.partition) }));
          return {
            groupId, errorCode: 0, errorMessage: null,
            topics: await Promise.all(wanted.map(async ({ topicName, partitions }) => {
              const sub = shares.get(topicName);
              const topicId = sub === undefined ? '0'.repeat(32) : await topicIds.idOf(api, topicName);
              return {
                topicName, topicId,
                partitions: partitions.map((partitionIndex) => {
                  const p = sub?.partitions.find((x) => x.partition === partitionIndex);
                  // A partition with no state yet has no start offset (-1), as Kafka answers it.
                  return p === undefined
                    ? { partitionIndex, startOffset: -1, leaderEpoch: -1, lag: -1, errorCode: 0, errorMessage: null }
                    : { partitionIndex, startOffset: p.committedOffset ?? -1, leaderEpoch: 0, lag: p.committedOffset === null ? -1 : p.lag, errorCode: 0, errorMessage: null };
                }),
              };
            })),
          };
        } catch (err) {
          return { groupId, topics: [], errorCode: codeOf(err), errorMessage: messageOf(err) };
        }
      })),
    };
  },
};

export const alterShareGroupOffsets: KafkaApi = {
  key: 91, name: 'AlterShareGroupOffsets', minVersion: 0, maxVersion: 0, request: alterShareGroupOffsetsRequest, response: alterShareGroupOffsetsResponse,
  async handle(request, ctx) {
    const { api, topicIds, shareMembers, header } = ctx;
    const groupId = request.groupId as string;
    const topics = request.topics as Array<{ topicName: string; partitions: Array<{ partitionIndex: number; startOffset: number }> }>;
    const answer = (errorCode: number, errorMessage: string | null, responses: object[] = []) => ({ throttleTimeMs: 0, errorCode, errorMessage, responses });
    await sweep(ctx);
    // As Kafka: a share group's offsets are altered only while it has no member.
    if (shareMembers.inGroup(groupId).length > 0) return answer(kafkaCodeOf('NON_EMPTY_GROUP'), `share group ${groupId} has members: alter its offsets once they left`);
    // Only a share group's offsets: a reset would otherwise make a group that does not exist a consumer group.
    const d = await api.describeGroup(groupId).catch((err: unknown) => ({ error: err }));
    if ('error' in d) return answer(codeOf(d.error), messageOf(d.error));
    const shared = new Set(d.subscriptions.filter((s) => s.type === 'share').map((s) => s.topic));
    if (shared.size === 0) return answer(UNKNOWN_GROUP, `group ${groupId} is not a share group`);
    return answer(0, null, await Promise.all(topics.map(async ({ topicName, partitions }) => {
      const topicId = await topicIds.idOf(api, topicName).catch(() => '0'.repeat(32));
      return {
        topicName, topicId,
        partitions: await Promise.all(partitions.map(async ({ partitionIndex, startOffset }) => {
          if (!shared.has(topicName)) return { partitionIndex, errorCode: kafkaCodeOf('UNKNOWN_TOPIC'), errorMessage: `share group ${groupId} does not read ${topicName}` };
          try {
            await api.resetOffsets({
              groupId, topic: topicName, partition: partitionIndex, execute: true, requestedBy: `kafka:${header.clientId}`,
              spec: startOffset === -1 ? { to: 'latest' } : startOffset === -2 ? { to: 'earliest' } : { to: 'offset', offset: startOffset },
            });
            return { partitionIndex, errorCode: 0, errorMessage: null };
          } catch (err) {
            return { partitionIndex, errorCode: codeOf(err, 'data'), errorMessage: messageOf(err) };
          }
        })),
      };
    })));
  },
};

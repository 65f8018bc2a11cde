/**
 * What `groups list` and `groups describe` show: a group's state and members (from its membership in
 * memory) beside its subscriptions, committed offsets, lag, pauses, alerts, reset history and checkpoints
 * (from the stores). Reads only.
 */
import type { Catalog } from '../catalog/catalog.js';
import type { SubscriptionRecord } from '../catalog/subscriptions.js';
import { LagTotals } from '../monitoring/group-lag-totals.js';
import type { HealthReader } from '../monitoring/health-reader.js';
import type { GroupDescription, GroupPartition, GroupSummary } from '../protocol/groups.js';
import type { PartitionError } from '../protocol/partitions.js';
import type { SubscriptionInfo } from '../protocol/subscriptions.js';
import type { TopicDescription } from '../protocol/topics.js';
import { OnelogError } from '../protocol/errors.js';
import type { GroupOffset, OffsetStore } from '../offsets/offset-store.js';
import { tierDelayMs } from '../protocol/retry-policy.js';
import type { Logs } from '../log/logs.js';
import type { GroupMembership } from './group-membership.js';
import type { RetryTopics } from './retry-topics.js';
import { parsePartitionKey, partitionKey } from './group-membership.js';
import type { PartitionKey } from './group-membership.js';

/** How many alerts and resets a description shows, most recent first. */
const HISTORY_LIMIT = 20;

/** The stores a description reads. */
export interface DescriptionSources {
  catalog: Catalog;
  offsets: OffsetStore;
  logs: Logs;
  retryTopics: RetryTopics;
  health: HealthReader;
  /** Dead letters of a subscription neither redriven nor purged. */
  deadLetterDepth(sub: SubscriptionRecord): Promise<number>;
}

/** Every group with its state, member count and the topics it subscribes to. */
export async function listGroups(catalog: Catalog, memberships: ReadonlyMap<string, GroupMembership>): Promise<GroupSummary[]> {
  const groups = await catalog.groups.list();
  return Promise.all(groups.map(async (g) => {
    const subscriptions = await catalog.subscriptions.list(g.groupId);
    return {
      groupId: g.groupId,
      type: subscriptions.some((s) => s.type === 'share') ? 'share' as const : 'consumer' as const,
      state: memberships.get(g.groupId)?.state ?? 'Empty',
      members: memberships.get(g.groupId)?.members.size ?? 0,
      createdAt: g.createdAt,
      topics: subscriptions.map((s) => s.topic),
    };
  }));
}

/**
 * Describes one group.
 * @param membership the group's live membership, if it has one
 * @throws OnelogError `UNKNOWN_GROUP`
 */
export async function describeGroup(
  sources: DescriptionSources, groupId: string, membership: GroupMembership | undefined,
): Promise<GroupDescription> {
  const { catalog, offsets, logs, retryTopics, deadLetterDepth } = sources;
  const group = await catalog.groups.get(groupId);
  if (!group) throw new OnelogError('UNKNOWN_GROUP', `group ${groupId} does not exist`, { groupId });
  const committed = new Map((await offsets.list(groupId)).map((o) => [partitionKey(o), o]));
  const paused = await catalog.pauses.list(groupId);
  const committedOf = (topic: string, partition: number) => committed.get(partitionKey({ topic, partition }))?.offset;
  const subscriptions = await Promise.all((await catalog.subscriptions.list(groupId)).map(async (s) => ({
    ...subscriptionInfo(s),
    // A tier's backlog: its records the group has not committed past (all of them before its first commit).
    retryTiers: await Promise.all(retryTopics.tiersOf(groupId, s.topic).map(async (topic, i) => ({
      topic, delayMs: tierDelayMs(s.retry, i + 1),
      backlog: (await logs.offsets(topic)).reduce((sum, p) => sum + Math.max(0, p.highWatermark - Math.max(p.logStartOffset, committedOf(topic, p.partition) ?? 0)), 0),
    }))),
    deadLetter: s.deadLetterTopic === null ? null : { topic: s.deadLetterTopic, depth: await deadLetterDepth(s) },
    partitions: await groupPartitions(sources, s, committed, paused, membership),
  })));
  const members = [...(membership?.members.values() ?? [])].map((m) => ({
    memberId: m.memberId, clientId: m.clientId, commitMode: m.commitMode, generationId: m.generationId,
    sessionTimeoutMs: m.sessionTimeoutMs, lastHeartbeatAt: m.lastHeartbeatAt,
    assignment: [...m.owned].sort().map(parsePartitionKey),
  }));
  const checkpoints = (await catalog.checkpoints.list(groupId)).map((c) => ({
    name: c.name, createdAt: c.createdAt, topics: [...new Set(c.offsets.map((o) => o.topic))],
  }));
  const totals = new LagTotals();
  for (const s of [...subscriptions].sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : 0))) {
    for (const p of s.partitions) totals.add(s.topic, p.partition, p);
  }
  return {
    groupId, createdAt: group.createdAt, state: membership?.state ?? 'Empty', generationId: membership?.generationId ?? 0,
    assignor: membership?.assignorName ?? null, members, subscriptions, ...totals.value,
    alerts: await catalog.alerts.list({ groupId, limit: HISTORY_LIMIT }),
    resets: await catalog.offsetResets.list(groupId, HISTORY_LIMIT),
    deadLetterActions: await catalog.deadLetterActions.history(groupId, HISTORY_LIMIT),
    checkpoints,
  };
}

/** Every group subscribed to `topic`, with its position and health in each partition (`topics describe T --groups`). */
export async function describeTopicGroups(
  sources: DescriptionSources, topic: string, memberships: ReadonlyMap<string, GroupMembership>,
): Promise<NonNullable<TopicDescription['groups']>> {
  return Promise.all((await sources.catalog.subscriptions.listByTopic(topic)).map(async (sub) => {
    const committed = new Map((await sources.offsets.list(sub.groupId)).map((o) => [partitionKey(o), o]));
    const paused = await sources.catalog.pauses.list(sub.groupId);
    return { groupId: sub.groupId, partitions: await groupPartitions(sources, sub, committed, paused, memberships.get(sub.groupId)) };
  }));
}

/**
 * A subscription's partitions: the group's position and health in each.
 * @param committed the group's committed offsets, and `paused` its paused partitions with their errors, by partition key
 */
export async function groupPartitions(
  { logs, health }: Pick<DescriptionSources, 'logs' | 'health'>, sub: SubscriptionRecord, committed: ReadonlyMap<PartitionKey, GroupOffset>,
  paused: ReadonlyMap<string, PartitionError>, membership: GroupMembership | undefined,
): Promise<GroupPartition[]> {
  const reader = health.subscription(sub);
  return Promise.all((await logs.offsets(sub.topic)).map(async (log) => {
    const key = partitionKey({ topic: sub.topic, partition: log.partition });
    const c = committed.get(key);
    const pause = paused.get(key) ?? null;
    return {
      partition: log.partition,
      committedOffset: c?.offset ?? null,
      logStartOffset: log.logStartOffset,
      highWatermark: log.highWatermark,
      ...(await reader.assess(log, c, pause !== null)).health,
      commitTimestamp: c?.commitTimestamp ?? null,
      memberId: membership?.holder(key)?.memberId ?? null,
      paused: pause,
    };
  }));
}

/** A subscription as the API shows it. */
export function subscriptionInfo(s: SubscriptionRecord): SubscriptionInfo {
  return {
    groupId: s.groupId, topic: s.topic, deliveryMode: s.deliveryMode, startPolicy: s.startPolicy, onOutOfRange: s.onOutOfRange,
    pushEndpoint: s.pushEndpoint, maxInFlight: s.maxInFlight, retry: s.retry, maxDeliveries: s.maxDeliveries, deadLetterTopic: s.deadLetterTopic,
    type: s.type, share: s.share,
    deadLetterAlertDepth: s.deadLetterAlertDepth,
    webhookMaxAttempts: s.webhookMaxAttempts, headroomWarnRatio: s.headroomWarnRatio, stallMs: s.stallMs,
  };
}

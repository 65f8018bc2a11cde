/**
 * The group coordinator: consumer groups' membership (join, heartbeat, leave, session timeouts, server-side
 * assignment with incremental rebalances, see {@link GroupMembership}), fencing of fetches and commits,
 * subscriptions (catalog), committed offsets (offset store), where each partition resumes ({@link Positions}),
 * offset resets (applied at a safe point while members are live, each recorded), named checkpoints, and
 * describing groups with their lag.
 *
 * Every operation on one group runs in order (a per-group queue), so a commit, a heartbeat and a reset never
 * interleave halfway.
 */
import type { Clock } from '../common/clock.js';
import { KeyedTurns } from '../common/turns.js';
import type { Catalog } from '../catalog/catalog.js';
import type { SubscriptionRecord } from '../catalog/subscriptions.js';
import type { FetchedPartition, FetchRequest } from '../protocol/fetch.js';
import type {
  AssignedPartition, GroupDescription, GroupSummary, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, MemberAssignment,
} from '../protocol/groups.js';
import type { NackRequest } from '../protocol/nacks.js';
import type { CheckpointDescription, CheckpointRequest, CommitRequest, ResetOffsetsRequest, ResetOffsetsResult } from '../protocol/offsets.js';
import type { TopicPartition } from '../protocol/partitions.js';
import type { SubscribeResult } from '../protocol/subscriptions.js';
import type { TopicDescription } from '../protocol/topics.js';
import type { RetryPolicy } from '../protocol/retry-policy.js';
import { OnelogError } from '../protocol/errors.js';
import type { CommittedOffset, OffsetStore } from '../offsets/offset-store.js';
import type { Logs } from '../log/logs.js';
import type { Partition } from '../log/partition.js';
import type { Logger } from '../common/logger.js';
import type { GroupPlacement } from '../cluster/group-placement.js';
import type { Monitor } from '../monitoring/monitor.js';
import { assignorFor } from './assignors/index.js';
import { GroupMembership, parsePartitionKey, partitionKey } from './group-membership.js';
import type { Member, PartitionKey } from './group-membership.js';
import { describeGroup, describeTopicGroups, listGroups, subscriptionInfo } from './group-description.js';
import type { DescriptionSources } from './group-description.js';
import { describeSpec, planReset } from './offset-resets.js';
import { Positions } from './positions.js';
import { CommitMarks } from './commit-marks.js';
import { DeliveryCounts } from './delivery-counts.js';
import type { RetryTopics, TierOwner } from './retry-topics.js';
import { definedOnly, deliveryBound } from './subscriptions.js';
import type { Subscriptions } from './subscriptions.js';
import type { ResolvedSubscribeRequest } from './subscriptions.js';
import type { GroupType } from '../protocol/types.js';
import { unknownTopic } from '../protocol/validate.js';

/** Kafka's session.timeout.ms default, ms. */
const DEFAULT_SESSION_TIMEOUT_MS = 45_000;
/** Members heartbeat at least this often, ms (Kafka's heartbeat.interval.ms default). */
const MAX_HEARTBEAT_INTERVAL_MS = 3000;

/**
 * What the coordinator tells, and asks of, the parts of the broker built before it (broker/open.ts). Parts built
 * after it that must hear of resets register with {@link GroupCoordinator.onReset}.
 */
export interface CoordinatorHooks {
  /** A member (or standalone consumer) committed offsets of `topic`. */
  committed?(groupId: string, topic: string, offsets: ReadonlyArray<{ partition: number; offset: number }>): void;
  /** Describes need a subscription's dead-letter depth. */
  deadLetterDepth?(sub: SubscriptionRecord): Promise<number>;
  /** Dead-letters a record whose consumer ended each time it had it, once its deliveries are spent (see {@link DeliveryCounts}). */
  deadLetterIfSpent?(groupId: string, topic: string, partition: number, offset: number, crashes: number): Promise<boolean>;
}

/** A nack the coordinator let through: the subscription it falls under, its policy, the tier it came from, and the record's crash-counted deliveries. */
export interface CheckedNack {
  subscription: SubscriptionRecord;
  policy: RetryPolicy;
  tier: TierOwner | undefined;
  /** Deliveries of the record at an offset of the nacked partition that ended with their member ending. */
  crashes(offset: number): number;
}

/** An offset reset waiting for its partitions to be released by their owners. */
interface PendingReset {
  request: ResetOffsetsRequest;
  keys: Set<PartitionKey>;
  resolve: (result: ResetOffsetsResult) => void;
  reject: (err: unknown) => void;
}

export class GroupCoordinator {
  private readonly groups = new Map<string, GroupMembership>();
  /** Each group's requests, one at a time in the order they arrived (see {@link locked}). */
  private readonly turns = new KeyedTurns<string>();
  /** Awaited in order when an executed reset moved a group's offsets of a topic; see {@link onReset}. */
  private readonly resetListeners: Array<(groupId: string, topic: string) => Promise<void> | void> = [];
  private readonly pendingResets = new Map<string, PendingReset[]>();
  private readonly positions: Positions;
  /** Which subscriptions committed (the catalog's record that tells a lost offset store from a new one). */
  private readonly marks: CommitMarks;
  /** Cluster mode: the lease epoch at which this broker coordinates each group it holds in memory. */
  private readonly epochs = new Map<string, number>();
  /** Deliveries of records whose members ended holding them. */
  private readonly deliveryCounts: DeliveryCounts;

  constructor(
    private readonly catalog: Catalog,
    private readonly offsets: OffsetStore,
    private readonly logs: Logs,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly monitor: Monitor,
    private readonly subscriptions: Subscriptions,
    private readonly hooks: CoordinatorHooks = {},
    private readonly placement?: GroupPlacement,
  ) {
    subscriptions.onTiersChanged((sub, previous) => this.tiersChanged(sub, previous));
    this.marks = new CommitMarks(catalog, offsets, clock, this.subscriptions.retryTopics,
      (topic) => this.logs.has(topic) && this.logs.config(topic).flushPolicy === 'always');
    this.positions = new Positions(catalog, offsets, clock, monitor, this.marks);
    this.deliveryCounts = new DeliveryCounts(offsets, {
      deliveryLimit: async (groupId, topic) => {
        const tier = this.retryTopics.tierOf(groupId, topic);
        const sub = await this.subscriptions.find(groupId, tier?.topic ?? topic);
        return deliveryBound(sub)?.maxAttempts ?? null;
      },
      deadLetterIfSpent: (groupId, topic, partition, offset, crashes) => hooks.deadLetterIfSpent?.(groupId, topic, partition, offset, crashes) ?? Promise.resolve(false),
    }, logger, async (groupId, topic, partition, offset) => {
      await this.marks.commit(groupId, topic, [{ topic, partition, offset }], this.clock.now());
      this.hooks.committed?.(groupId, topic, [{ partition, offset }]);
    });
    placement?.onLost((groupId) => void this.locked(groupId, async () => this.forget(groupId, undefined), { claim: false }));
  }

  /**
   * Calls `listener` each time an executed reset moved a group's offsets of a topic, before the reset answers: what
   * was known about its records' progress is stale (a share group's in-flight state starts again there).
   */
  onReset(listener: (groupId: string, topic: string) => Promise<void> | void): void {
    this.resetListeners.push(listener);
  }

  /** Loads what must be known before the first request: the subscriptions' retry tier topics, which of them committed. */
  async start(): Promise<void> {
    await this.subscriptions.start();
    await this.marks.start();
  }

  /** The retry tier topics of every subscription. */
  get retryTopics(): RetryTopics {
    return this.subscriptions.retryTopics;
  }

  /**
   * Resolves once this broker coordinates the group (cluster mode: it holds the group's lease; see
   * {@link GroupPlacement}); a group taken over since is forgotten first, so it is taken over from the stores. At
   * once on the embedded default. For requests that read the group (a member's fetch, a describe): those that change
   * it claim it in their turn ({@link locked}).
   * @throws OnelogError `NOT_COORDINATOR` naming the coordinator
   */
  async claim(groupId: string): Promise<void> {
    if (this.placement === undefined) return;
    const epoch = await this.placement.claim(groupId);
    if (this.epochs.get(groupId) !== epoch) await this.locked(groupId, async () => this.forget(groupId, epoch), { claim: false });
  }

  /**
   * Forgets what this broker held in memory of a group it no longer coordinates, or coordinates at a new lease
   * `epoch` (another broker may have coordinated it meanwhile): resets waiting for a safe point are refused.
   */
  private forget(groupId: string, epoch: number | undefined): void {
    if (this.epochs.get(groupId) === epoch) return;
    if (epoch === undefined) this.epochs.delete(groupId);
    else this.epochs.set(groupId, epoch);
    this.groups.delete(groupId);
    this.marks.forgetGroup(groupId);
    for (const r of this.pendingResets.get(groupId) ?? []) {
      r.reject(new OnelogError('NOT_COORDINATOR', `this broker stopped coordinating group ${groupId} before the reset reached a safe point; ` +
        'nothing was reset: send it again', { groupId, coordinatorBrokerId: null, coordinatorUrl: null }));
    }
    this.pendingResets.delete(groupId);
  }

  /**
   * Runs `task` in the group's turn: after every task of the group given before it, and after `ready` (what the
   * request waits for first, such as its topics brought up to date with other brokers) has resolved, to whose value it
   * is called. The place is taken at this call, so a request keeps its place in its group's order however long its
   * `ready` takes ({@link KeyedTurns}). With `claim` (the default), the task runs once this broker coordinates the
   * group ({@link claim}).
   */
  private locked<T, R = void>(groupId: string, task: (ready: R) => Promise<T>, options: { claim?: boolean; ready?: PromiseLike<R> } = {}): Promise<T> {
    const placement = options.claim === false ? undefined : this.placement;
    let value: R;
    const ready = options.ready?.then((v) => void (value = v));
    return this.turns.run(groupId, async () => {
      if (placement !== undefined) this.forget(groupId, await placement.claim(groupId));
      return task(value);
    }, ready);
  }

  /**
   * The group's membership. This coordinator takes over a group not in memory (at its first use since start):
   * it goes on from the highest generation the offset store holds and fences below the next one, so commits of
   * members of a coordinator before it (this broker before a restart; later, another broker) are refused.
   */
  private async membership(groupId: string): Promise<GroupMembership> {
    let group = this.groups.get(groupId);
    if (!group) {
      const generationId = await this.offsets.generation(groupId);
      await this.offsets.advanceGeneration(groupId, generationId + 1, { fence: true });
      // A deleted topic has no partitions: its members keep it in their subscription, as Kafka's do.
      group = new GroupMembership(groupId, (topic) => (this.logs.has(topic) ? this.logs.partitionCount(topic) : 0), generationId);
      this.groups.set(groupId, group);
    }
    return group;
  }

  /** A subscription gained tier topics: its live members consume them from now on. */
  private tiersChanged(sub: SubscriptionRecord, previousTiers: readonly string[]): void {
    const group = this.groups.get(sub.groupId);
    if (!group || group.members.size === 0) return;
    for (const member of group.members.values()) {
      member.topics = this.subscriptions.retryTopics.expand(sub.groupId, member.topics.filter((t) => !previousTiers.includes(t)));
    }
    group.rebalance();
  }

  /**
   * Creates or updates a group's subscription (delivery mode, policies, push endpoint) and returns where each
   * partition resumes, for a standalone consumer that tracks its own positions (no membership). A partition
   * whose committed offset fell below the log start is paused for the group, as for a member, and answers
   * its error instead of an offset (or jumps, if the subscription's `onOutOfRange` says so).
   * @param resolving the request with its retry policy resolved (its tier topics created): the request's place in the
   *   group's order is taken at this call, before it is resolved
   * @throws OnelogError `UNKNOWN_TOPIC`; what `resolving` rejects with
   */
  async subscribe(groupId: string, resolving: PromiseLike<ResolvedSubscribeRequest>): Promise<SubscribeResult> {
    return this.locked(groupId, async (request) => {
      const { topic } = request;
      const logs = this.logs.partitions(topic);
      const subscription = await this.subscriptions.get(groupId, topic, definedOnly(request));
      const paused = await this.catalog.pauses.list(groupId);
      const resolved = await this.positions.resolveAll(groupId, subscription, logs, paused);
      // The group owns its tiers from their first record: a tier record deleted (retention) before the group
      // reads it pauses the tier partition, never a silent skip.
      for (const tier of this.retryTopics.tiersOf(groupId, topic)) {
        await this.positions.resolveAll(groupId, await this.subscriptions.of(groupId, tier), this.logs.partitions(tier), paused);
      }
      const positions: SubscribeResult['positions'] = logs.map((log, i) => {
        const position = resolved[i]!;
        return position.error ? { partition: log.partition, error: position.error } : { partition: log.partition, offset: position.offset };
      });
      return { subscription: subscriptionInfo(subscription), positions };
    }, { ready: resolving });
  }

  /**
   * Adds a member to a group and answers its first assignment (partitions nobody else holds; the rest
   * follows in heartbeats as their owners release them).
   * @param ready what the request waits for before it runs, in its place in the group's order (taken at this call):
   *   its topics brought up to date with other brokers in cluster mode. If it rejects, nothing is done.
   * @throws OnelogError `UNKNOWN_TOPIC`, `INCONSISTENT_GROUP_PROTOCOL`
   */
  async joinGroup(request: JoinGroupRequest, ready?: PromiseLike<void>): Promise<MemberAssignment> {
    const { groupId } = request;
    return this.locked(groupId, async () => {
      for (const topic of request.topics) this.logs.partitionCount(topic); // UNKNOWN_TOPIC before anything changes
      for (const topic of request.topics) {
        const sub = await this.subscriptions.get(groupId, topic, definedOnly(request));
        if (sub.type === 'share') {
          throw new OnelogError('INVALID_REQUEST', `group ${groupId} is a share group: its members acquire records (POST /groups/${groupId}/share-fetch; ` +
            'onelog consume and the client\'s shareConsumer do), they do not join', { groupId, topic });
        }
      }
      const group = await this.membership(groupId);
      if (await this.expire(group)) await this.applyResets(group);
      const member = group.join({
        clientId: request.clientId ?? 'consumer',
        topics: this.retryTopics.expand(groupId, request.topics),
        sessionTimeoutMs: request.sessionTimeoutMs ?? DEFAULT_SESSION_TIMEOUT_MS,
        rebalanceTimeoutMs: request.rebalanceTimeoutMs ?? request.sessionTimeoutMs ?? DEFAULT_SESSION_TIMEOUT_MS,
        commitMode: request.commitMode ?? 'after-processing',
        assignor: assignorFor(request.assignor ?? 'sticky'),
        commitsStart: request.commitStartPositions ?? true,
      }, this.clock.now());
      this.logger.info({ groupId, memberId: member.memberId, generationId: group.generationId }, 'member joined');
      return this.answer(group, member);
    }, { ready });
  }

  /**
   * Records a member's heartbeat and what it still holds, applies resets whose partitions are now free, and
   * answers the member's assignment.
   * @throws OnelogError `UNKNOWN_MEMBER_ID`, `ILLEGAL_GENERATION`: the client rejoins
   */
  async heartbeat(request: HeartbeatRequest): Promise<MemberAssignment> {
    return this.locked(request.groupId, async () => {
      const group = this.liveGroup(request.groupId, request.memberId);
      // Applied before the member check: the expired member may be the one heartbeating.
      if (await this.expire(group)) await this.applyResets(group);
      const member = group.member(request.memberId, request.generationId);
      group.release(member, request.owned, this.clock.now());
      await this.applyResets(group);
      return this.answer(group, member);
    });
  }

  /**
   * Removes a member now; its partitions move at once. Unknown members are ignored (leaving twice is fine). An
   * `abandoned` member has the deliveries it held uncommitted counted first, as one whose session timed out.
   */
  async leaveGroup(request: LeaveGroupRequest): Promise<void> {
    await this.locked(request.groupId, async () => {
      const group = this.groups.get(request.groupId);
      const member = group?.members.get(request.memberId);
      if (member && request.abandoned === true) await this.deliveryCounts.memberEnded(request.groupId, member);
      if (group?.remove(request.memberId)) {
        this.logger.info({ groupId: request.groupId, memberId: request.memberId }, 'member left');
        await this.applyResets(group);
      }
    });
  }

  /** Removes members past their session timeout (or release deadline) in every group; run on a timer. */
  async expireMembers(): Promise<void> {
    await Promise.all([...this.groups.keys()].map((groupId) =>
      this.locked(groupId, async () => {
        const group = this.groups.get(groupId);
        if (group && await this.expire(group)) await this.applyResets(group);
      }, { claim: false })));
  }

  /** Removes the members past their session timeout or release deadline, counting the deliveries they held. */
  private async expire(group: GroupMembership): Promise<boolean> {
    const expired = group.expired(this.clock.now());
    for (const m of expired) {
      await this.deliveryCounts.memberEnded(group.groupId, m);
      group.remove(m.memberId);
      this.logger.warn({ groupId: group.groupId, memberId: m.memberId, sessionTimeoutMs: m.sessionTimeoutMs }, 'member expired');
    }
    return expired.length > 0;
  }

  private liveGroup(groupId: string, memberId: string): GroupMembership {
    const group = this.groups.get(groupId);
    if (!group) {
      throw new OnelogError('UNKNOWN_MEMBER_ID', `group ${groupId} has no live members (or the broker restarted); join again`, {
        groupId, memberId,
      });
    }
    return group;
  }

  /** Grants the member what is free in its target, resolving where each new partition starts. */
  private async answer(group: GroupMembership, member: Member): Promise<MemberAssignment> {
    const granted = group.grantable(member);
    const paused = granted.length > 0 ? await this.catalog.pauses.list(group.groupId) : new Map();
    const entries = new Map<PartitionKey, AssignedPartition>();
    const byTopic = new Map<string, TopicPartition[]>();
    for (const tp of granted) byTopic.set(tp.topic, [...(byTopic.get(tp.topic) ?? []), tp]);
    for (const [topic, tps] of byTopic) {
      const subscription = await this.subscriptions.of(group.groupId, topic);
      const positions = await this.positions.resolveAll(
        group.groupId, subscription, tps.map((tp) => this.logs.get(topic, tp.partition)), paused, member.commitsStart,
      );
      tps.forEach((tp, i) => {
        const position = positions[i]!;
        entries.set(partitionKey(tp), { ...tp, ...(position.error ? { error: position.error } : { offset: position.offset }) });
      });
    }
    if (group.storedGeneration < group.generationId) {
      // Recorded before any member hears of it, so a coordinator after this one numbers above it.
      group.storedGeneration = await this.offsets.advanceGeneration(group.groupId, group.generationId);
    }
    await this.deliveryCounts.load(group.groupId, granted);
    group.grant(member, granted, this.clock.now());
    return {
      groupId: group.groupId,
      memberId: member.memberId,
      generationId: member.generationId,
      assignment: [...member.assigned].sort().map((key) => entries.get(key) ?? parsePartitionKey(key)),
      heartbeatIntervalMs: Math.min(Math.floor(member.sessionTimeoutMs / 3), MAX_HEARTBEAT_INTERVAL_MS),
      state: group.state,
    };
  }

  /**
   * Commits offsets (each the NEXT offset to read) in one durable write. With a member id, the member and its
   * generation must be current and every partition its own (fencing). A commit that moves the group from before
   * the log start to or past it (records deleted before it read them, skipped by the client) is recorded as an
   * `offset-jump` alert and lifts the partition's pause ({@link Positions.jumpsOf}). An offset above the high watermark
   * is taken (as Kafka takes any: a client may commit where it will start before the records exist); the group's lag
   * is 0 until the log reaches it, and a member that subscribes meanwhile meets its out-of-range policy, as after a
   * power loss that took records it had committed past.
   * @throws OnelogError `INVALID_OFFSET` for a negative offset,
   *   `UNKNOWN_TOPIC` / `UNKNOWN_PARTITION`, `UNKNOWN_MEMBER_ID`, `ILLEGAL_GENERATION`, `NOT_ASSIGNED`;
   *   `INVALID_REQUEST` for a share group (its offset is its share-partitions' start offset: acknowledgements and
   *   offset resets move it); nothing is committed if any entry is refused
   * @param ready what the request waits for before it runs, in its place in the group's order (taken at this call):
   *   its topics brought up to date with other brokers in cluster mode. If it rejects, nothing is done.
   */
  async commit(request: CommitRequest, ready?: PromiseLike<void>): Promise<void> {
    return this.commitOffsets(request, false, ready);
  }

  /**
   * Commits a share-partition's start offset as its group's offset (coordinator/share-groups.ts), as a commit without a
   * member is. @throws as {@link commit}
   */
  async commitShareStart(groupId: string, topic: string, partition: number, offset: number): Promise<void> {
    return this.commitOffsets({ groupId, topic, offsets: [{ partition, offset }] }, true);
  }

  private async commitOffsets(request: CommitRequest, shareStart: boolean, ready?: PromiseLike<void>): Promise<void> {
    const { groupId, topic } = request;
    for (const o of request.offsets) {
      if (!Number.isSafeInteger(o.offset) || o.offset < 0) {
        throw new OnelogError('INVALID_OFFSET', `offset must be an integer >= 0, got ${JSON.stringify(o.offset)}`, {
          groupId, topic, partition: o.partition, offset: o.offset,
        });
      }
    }
    await this.locked(groupId, async () => {
      const logs = request.offsets.map((o) => this.logs.get(topic, o.partition)); // UNKNOWN_TOPIC, UNKNOWN_PARTITION before fencing
      await this.fence(request, request.offsets.map((o) => o.partition), 'commit');
      if (!shareStart && ((await this.subscriptions.find(groupId, topic))?.type ?? (await this.subscriptions.typeOf(groupId))) === 'share') {
        throw new OnelogError('INVALID_REQUEST', `group ${groupId} is a share group: its offset of ${topic} is where its records are all ` +
          `accepted or dead-lettered, moved by acknowledgements (share-acks) and by onelog offsets reset ${groupId} --topic ${topic}, not by a commit`, { groupId, topic });
      }
      await this.subscriptions.of(groupId, topic);
      const jumps = await this.positions.jumpsOf(groupId, logs, request.offsets);
      // Checked and queued with no await between: a deletion that forgot the topic before this check refuses the
      // commit; one after it removes the committed offsets after this commit is written (the store keeps call order).
      if (!this.logs.has(topic)) throw unknownTopic(topic, { groupId });
      const generationFence = request.memberId === undefined ? undefined : { generationId: request.generationId ?? -1 };
      await this.marks.commit(groupId, topic, request.offsets.map((o) => ({ topic, ...o })), this.clock.now(), generationFence);
      const member = request.memberId === undefined ? undefined : this.groups.get(groupId)?.members.get(request.memberId);
      for (const o of request.offsets) {
        if (member) this.groups.get(groupId)!.committed(member, partitionKey({ topic, partition: o.partition }), o.offset);
        await this.deliveryCounts.committed(groupId, topic, o.partition, o.offset);
      }
      if (jumps.length > 0) await this.positions.recordJumps(groupId, topic, jumps, request.memberId);
      this.hooks.committed?.(groupId, topic, request.offsets);
    }, { ready });
  }

  /**
   * Fences a commit or nack: with a member id, the member and its generation must be current (for a nack, or
   * the one before: nacks are idempotent and sent beside heartbeats, as fetches are) and every partition its
   * own; without one, the group must have no live member.
   */
  private async fence(
    request: { groupId: string; topic: string; memberId?: string; generationId?: number }, partitions: number[], what: 'commit' | 'nack',
  ): Promise<void> {
    const { groupId, topic } = request;
    const group = this.groups.get(groupId);
    if (group && await this.expire(group)) await this.applyResets(group);
    if (request.memberId !== undefined) {
      const member = this.liveGroup(groupId, request.memberId).member(request.memberId, request.generationId ?? -1, what === 'nack');
      for (const partition of partitions) this.checkAssigned(groupId, member, { topic, partition }, member.owned);
    } else if (group && group.members.size > 0) {
      throw new OnelogError(
        'UNKNOWN_MEMBER_ID',
        `group ${groupId} has ${group.members.size} live members: only a member may ${what} (send memberId and generationId)`,
        { groupId },
      );
    }
  }

  /**
   * Checks that a nack may be acted on (fenced as a commit) and answers the subscription it falls under, with
   * the record's tier when it was delivered from one.
   * @throws OnelogError `UNKNOWN_MEMBER_ID`, `ILLEGAL_GENERATION`, `NOT_ASSIGNED`; `NO_RETRY_POLICY` when the
   *   group has neither a retry policy nor a delivery limit (`maxDeliveries`) for the topic; `UNKNOWN_TOPIC`,
   *   `UNKNOWN_PARTITION`
   * @param ready what the request waits for before it runs, in its place in the group's order (taken at this call):
   *   its topics brought up to date with other brokers in cluster mode. If it rejects, nothing is done.
   */
  async checkNack(request: Omit<NackRequest, 'offset' | 'reason'>, ready?: PromiseLike<void>): Promise<CheckedNack> {
    const { groupId, topic } = request;
    return this.locked(groupId, async () => {
      this.logs.get(topic, request.partition); // UNKNOWN_TOPIC, UNKNOWN_PARTITION before fencing
      await this.fence(request, [request.partition], 'nack');
      const tier = this.retryTopics.tierOf(groupId, topic);
      const subscription = await this.subscriptions.find(groupId, tier?.topic ?? topic);
      if (subscription?.type === 'share') {
        throw new OnelogError('INVALID_REQUEST', `group ${groupId} is a share group: a member rejects a record it holds with share-acks ` +
          '(type reject: to the dead letters at once) or releases it (type release: delivered again), not with a nack', { groupId, topic });
      }
      const policy = deliveryBound(subscription);
      if (!subscription || !policy) {
        throw new OnelogError('NO_RETRY_POLICY', `group ${groupId} has no retry policy for ${tier?.topic ?? topic}: a nack has nowhere to ` +
          `send the record. Add one: onelog groups alter ${groupId} --topic ${tier?.topic ?? topic} --retry 1s,30s,5m --max-attempts 4 ` +
          '(or --max-deliveries N: a nack then dead-letters the record at once)', { groupId, topic });
      }
      const { partition } = request;
      return { subscription, policy, tier, crashes: (offset) => this.deliveryCounts.crashes(groupId, topic, partition, offset) };
    }, { ready });
  }

  /** The group's type as its subscriptions say; undefined for a group with none yet. */
  async groupType(groupId: string): Promise<GroupType | undefined> {
    return this.subscriptions.typeOf(groupId);
  }

  /** The group's subscription to `topic` as stored, or undefined (no catalog write). */
  async findSubscription(groupId: string, topic: string): Promise<SubscriptionRecord | undefined> {
    return this.subscriptions.find(groupId, topic);
  }

  private checkAssigned(groupId: string, member: Member, tp: TopicPartition, set: ReadonlySet<PartitionKey>): void {
    if (set.has(partitionKey(tp))) return;
    throw new OnelogError(
      'NOT_ASSIGNED',
      `${tp.topic}/${tp.partition} is not assigned to member ${member.memberId} of group ${groupId}; ` +
        'it moved to another member or never was this one\'s',
      { groupId, memberId: member.memberId, ...tp },
    );
  }

  /**
   * Fences a member's fetch: the member must be live, its generation current (or the one before: a fetch may
   * cross the heartbeat answer that moved it on), and every partition held by it (a partition being revoked
   * is still held until the member releases it). A read of the group as it is now, taken in no turn (a fetch waits
   * behind none of its group's writes): its caller has {@link claim}ed the group.
   * @returns the group's generation, and whether a heartbeat now would change the member's assignment
   * @throws OnelogError `UNKNOWN_MEMBER_ID`, `ILLEGAL_GENERATION`, `NOT_ASSIGNED`
   */
  checkFetch(request: FetchRequest & { memberId: string }): { generationId: number; assignmentChanged: boolean } {
    const group = this.liveGroup(request.groupId ?? '', request.memberId);
    const member = group.member(request.memberId, request.generationId ?? -1, true);
    for (const p of request.partitions) {
      this.checkAssigned(group.groupId, member, { topic: request.topic, partition: p.partition }, member.owned);
    }
    return { generationId: group.generationId, assignmentChanged: group.assignmentChanged(member) };
  }

  /**
   * Whether this broker coordinates the group now, as far as it knows without asking the placement: always on the
   * embedded default; in cluster mode when it holds the group at a lease epoch (it claimed it, and has not heard of
   * its loss since).
   */
  coordinates(groupId: string): boolean {
    return this.placement === undefined || this.epochs.has(groupId);
  }

  /**
   * Whether a member's reads of `topic` may be served by any broker, not only by this coordinator (docs/cluster.md,
   * "The read path"): the subscription counts no deliveries (no retry policy, no `maxDeliveries`: a member's end then
   * marks nothing suspect, so what it was handed need not be known here, see {@link DeliveryCounts}), and the topic
   * neither is a retry tier nor has any (such a read skips the records the group moved, and waits for due times).
   * @throws OnelogError `STORAGE_ERROR` when the subscription cannot be read
   */
  async readsSpread(groupId: string, topic: string): Promise<boolean> {
    if (this.retryTopics.tierOf(groupId, topic) !== undefined || this.retryTopics.tiersOf(groupId, topic).length > 0) return false;
    return deliveryBound(await this.subscriptions.find(groupId, topic)) === null;
  }

  /**
   * The most records a member's fetch may be handed from each of its partitions: where the partition is in its
   * suspect range (records a member ended holding, see {@link DeliveryCounts}), 1, or 0 while the member holds one it
   * has not committed (a fetch sent ahead), so that it never holds two; elsewhere no cap.
   */
  fetchCaps(request: FetchRequest & { groupId: string; memberId: string }): Array<0 | 1 | undefined> {
    const member = this.groups.get(request.groupId)?.members.get(request.memberId);
    return request.partitions.map((p) => {
      const cap = this.deliveryCounts.maxRecords(request.groupId, request.topic, p.partition, p.offset);
      const held = member?.handedOut.get(partitionKey({ topic: request.topic, partition: p.partition }));
      return cap === 1 && held !== undefined && held.end > held.first ? 0 : cap;
    });
  }

  /**
   * Records what a member's fetch handed it, per partition from the offset asked to `nextOffset`: what it holds
   * if it ends without leaving. A member gone meanwhile is ignored.
   */
  handedOut(request: FetchRequest & { groupId: string; memberId: string }, partitions: ReadonlyArray<{ partition: number; nextOffset: number }>): void {
    const group = this.groups.get(request.groupId);
    const member = group?.members.get(request.memberId);
    if (!member) return;
    partitions.forEach((p, i) => group!.handOut(member, partitionKey({ topic: request.topic, partition: p.partition }), request.partitions[i]!.offset, p.nextOffset));
  }

  /** Refuses every reset still waiting for a safe point: the broker is shutting down. */
  close(): void {
    for (const list of this.pendingResets.values()) {
      for (const r of list) r.reject(new OnelogError('BROKER_CLOSED', 'the broker shut down before the reset reached a safe point; nothing was reset'));
    }
    this.pendingResets.clear();
  }

  /**
   * Applies the subscription's out-of-range policy to partitions of a member's fetch that fell off the log:
   * the partition pauses for the group (its error says so) or the position jumps (`nextOffset` moves there).
   */
  async afterFetch(request: FetchRequest & { groupId: string }, partitions: Array<Pick<FetchedPartition, 'partition' | 'error' | 'nextOffset'>>): Promise<void> {
    const fallen = partitions.filter((p) => p.error?.code === 'OFFSET_OUT_OF_RANGE');
    if (fallen.length === 0) return;
    const { groupId, topic } = request;
    await this.locked(groupId, async () => {
      const subscription = await this.subscriptions.of(groupId, topic);
      for (const p of fallen) {
        const from = request.partitions.find((r) => r.partition === p.partition)!.offset;
        const position = await this.positions.outOfRange(groupId, subscription, this.logs.get(topic, p.partition), from);
        if (position.error) {
          p.error = position.error;
        } else {
          delete p.error;
          p.nextOffset = position.offset;
        }
      }
    });
  }

  /** Every group with its state, member count and the topics it subscribes to. */
  async listGroups(): Promise<GroupSummary[]> {
    return listGroups(this.catalog, this.groups);
  }

  /**
   * The group's state, members and, per subscribed partition: committed offset, log start offset, high
   * watermark, lag, owner and pause; its recent alerts, executed resets and checkpoints.
   * @throws OnelogError `UNKNOWN_GROUP`
   */
  async describeGroup(groupId: string): Promise<GroupDescription> {
    await this.claim(groupId); // its members are known to its coordinator only
    return describeGroup(this.descriptionSources(), groupId, this.groups.get(groupId));
  }

  /** Every group subscribed to `topic`, with its position and health in each partition. */
  async describeTopicGroups(topic: string): Promise<NonNullable<TopicDescription['groups']>> {
    return describeTopicGroups(this.descriptionSources(), topic, this.groups);
  }

  private descriptionSources(): DescriptionSources {
    return {
      catalog: this.catalog, offsets: this.offsets, logs: this.logs, retryTopics: this.retryTopics, health: this.monitor.health,
      deadLetterDepth: this.hooks.deadLetterDepth ?? (async () => 0),
    };
  }

  /**
   * Forgets a deleted topic (the catalog dropped its subscriptions and pauses): the groups whose members
   * consume it rebalance without its partitions.
   */
  async topicDeleted(topic: string): Promise<void> {
    this.subscriptions.forgetTopic(topic);
    this.marks.forgetTopic(topic);
    await Promise.all([...this.groups].map(([groupId, group]) =>
      [...group.members.values()].some((m) => m.topics.includes(topic)) && this.locked(groupId, async () => {
        if (this.groups.get(groupId) === group && group.members.size > 0) group.rebalance();
      }, { claim: false })));
  }

  /**
   * Deletes a group with no live members: committed offsets, subscriptions, pauses, alerts, resets, checkpoints.
   * @throws OnelogError `UNKNOWN_GROUP`, `NON_EMPTY_GROUP`
   */
  async deleteGroup(groupId: string): Promise<void> {
    await this.locked(groupId, async () => {
      const group = this.groups.get(groupId);
      if (group) {
        if (await this.expire(group)) await this.applyResets(group);
        group.kill();
      }
      if (!(await this.catalog.groups.get(groupId))) throw new OnelogError('UNKNOWN_GROUP', `group ${groupId} does not exist`, { groupId });
      await this.offsets.deleteGroup(groupId);
      await this.catalog.groups.delete(groupId);
      this.groups.delete(groupId);
      this.subscriptions.deleteGroup(groupId);
      this.marks.forgetGroup(groupId);
      this.monitor.deleteGroup(groupId);
      this.deliveryCounts.deleteGroup(groupId);
      this.logger.info({ groupId }, 'group deleted');
    });
  }

  /**
   * Saves the group's committed offsets (every subscribed topic) under `name`, replacing one of that name.
   * @throws OnelogError `UNKNOWN_GROUP`, `INVALID_REQUEST` for an empty or over-long name
   */
  async saveCheckpoint(request: CheckpointRequest): Promise<CheckpointDescription> {
    const { groupId, name } = request;
    if (typeof name !== 'string' || name.length === 0 || name.length > 200) {
      throw new OnelogError('INVALID_REQUEST', `a checkpoint name is 1 to 200 characters, got ${JSON.stringify(name)}`, { groupId });
    }
    return this.locked(groupId, async () => {
      if (!(await this.catalog.groups.get(groupId))) throw new OnelogError('UNKNOWN_GROUP', `group ${groupId} does not exist`, { groupId });
      const offsets = (await this.offsets.list(groupId)).map((o) => ({ topic: o.topic, partition: o.partition, offset: o.offset }));
      const createdAt = this.clock.now();
      await this.catalog.checkpoints.save(groupId, name, offsets, createdAt);
      return { groupId, name, createdAt, offsets };
    });
  }

  /**
   * Plans an offset reset and, with `execute`, applies it (Kafka's `kafka-consumer-groups --reset-offsets`).
   * Targets outside `[logStartOffset, highWatermark]` are clamped and marked. With live members, the
   * partitions are first revoked; the reset is applied once no member holds them (each owner commits and
   * lets go at its next heartbeat, or is removed past its session timeout), then they are assigned again
   * and members resume from the new offsets. Each executed reset is recorded; it lifts the partitions' pauses.
   * @throws OnelogError `UNKNOWN_TOPIC`, `UNKNOWN_PARTITION`, `INVALID_REQUEST`, `UNKNOWN_CHECKPOINT`
   * @param ready what the request waits for before it runs, in its place in the group's order (taken at this call):
   *   its topics brought up to date with other brokers in cluster mode. If it rejects, nothing is done.
   */
  async resetOffsets(request: ResetOffsetsRequest, ready?: PromiseLike<void>): Promise<ResetOffsetsResult> {
    const { groupId } = request;
    const waiting = await this.locked(groupId, async () => {
      const plan = await this.plan(request);
      const group = this.groups.get(groupId);
      if (request.execute !== true) return { result: { groupId, topic: request.topic, executed: false, partitions: plan } };
      if (!group || group.members.size === 0) return { result: await this.executeReset(request) };
      const keys = new Set(plan.map((p) => partitionKey({ topic: request.topic, partition: p.partition })));
      const wait = new Promise<ResetOffsetsResult>((resolve, reject) => {
        const list = this.pendingResets.get(groupId) ?? [];
        list.push({ request, keys, resolve, reject });
        this.pendingResets.set(groupId, list);
      });
      for (const key of keys) group.withheld.add(key);
      group.rebalance();
      // Inside the group's queue: partitions nobody holds are reset before the group's next request runs.
      await this.applyResets(group);
      return { wait };
    }, { ready });
    return waiting.result ?? waiting.wait!;
  }

  private resetLogs(request: ResetOffsetsRequest): Partition[] {
    return request.partition === undefined ? this.logs.partitions(request.topic) : [this.logs.get(request.topic, request.partition)];
  }

  private async plan(request: ResetOffsetsRequest): Promise<ResetOffsetsResult['partitions']> {
    const committed = new Map([...(await this.committedByPartition(request.groupId, request.topic))].map(([p, c]) => [p, c.offset]));
    let checkpoint: Map<string, number> | undefined;
    if (request.spec.to === 'checkpoint') {
      const name = request.spec.name;
      const saved = (await this.catalog.checkpoints.list(request.groupId)).find((c) => c.name === name);
      if (!saved) {
        throw new OnelogError('UNKNOWN_CHECKPOINT', `group ${request.groupId} has no checkpoint named ${name}`, {
          groupId: request.groupId, name,
        });
      }
      checkpoint = new Map(saved.offsets.map((o) => [partitionKey(o), o.offset]));
    }
    return planReset(request.spec, this.resetLogs(request), committed, checkpoint);
  }

  /** Plans again (positions may have moved while waiting), commits, records the reset and lifts pauses. */
  private async executeReset(request: ResetOffsetsRequest): Promise<ResetOffsetsResult> {
    const { groupId, topic } = request;
    const partitions = await this.plan(request);
    await this.subscriptions.get(groupId, topic);
    const now = this.clock.now();
    await this.marks.commit(groupId, topic, partitions.map((p) => ({ topic, partition: p.partition, offset: p.newOffset })), now);
    const spec = describeSpec(request.spec);
    await this.catalog.offsetResets.record(groupId, partitions.map((p) => ({
      topic, partition: p.partition, oldOffset: p.currentOffset, newOffset: p.newOffset, spec,
      requestedBy: request.requestedBy ?? 'unknown', executedAt: now,
    })));
    for (const p of partitions) await this.catalog.pauses.remove(groupId, { topic, partition: p.partition });
    await this.deliveryCounts.reset(groupId, topic, partitions.map((p) => p.partition));
    for (const listener of this.resetListeners) await listener(groupId, topic);
    this.logger.info({ groupId, topic, spec, requestedBy: request.requestedBy, partitions: partitions.length }, 'offsets reset');
    return { groupId, topic, executed: true, partitions };
  }

  /** Executes every pending reset of the group whose partitions no member holds, then reassigns them. */
  private async applyResets(group: GroupMembership): Promise<void> {
    const pending = this.pendingResets.get(group.groupId) ?? [];
    const ready = pending.filter((r) => [...r.keys].every((key) => group.holder(key) === undefined));
    if (ready.length === 0) return;
    this.pendingResets.set(group.groupId, pending.filter((r) => !ready.includes(r)));
    for (const r of ready) {
      try {
        r.resolve(await this.executeReset(r.request));
      } catch (err) {
        r.reject(err);
      }
      for (const key of r.keys) group.withheld.delete(key);
    }
    if (group.members.size > 0) group.rebalance();
  }

  private async committedByPartition(groupId: string, topic: string): Promise<Map<number, CommittedOffset>> {
    const all = await this.offsets.list(groupId);
    return new Map(all.filter((o) => o.topic === topic).map((o) => [o.partition, o]));
  }
}

/**
 * Groups' subscriptions as the coordinator uses them: read through a cache (commits and grants skip the
 * catalog), created with the group on first use, updated when a request names a different setting; the
 * subscription a retry tier's partitions are consumed under; and the retry tier topics of each subscription
 * ({@link RetryTopics}), told to the coordinator when they change so live members consume them.
 */
import type { Catalog } from '../catalog/catalog.js';
import type { SubscriptionRecord } from '../catalog/subscriptions.js';
import type { Clock } from '../common/clock.js';
import { SUBSCRIPTION_SETTINGS } from '../protocol/subscriptions.js';
import type { SubscribeRequest, SubscriptionSetting } from '../protocol/subscriptions.js';
import { DEFAULT_HEALTH_SETTINGS } from '../protocol/monitoring-api.js';
import type { RetryPolicy } from '../protocol/retry-policy.js';
import { OnelogError } from '../protocol/errors.js';
import type { GroupType, OutOfRangePolicy, StartPolicy } from '../protocol/types.js';
import { RetryTopics } from './retry-topics.js';

/**
 * A subscribe request whose retry policy has its defaults filled in, and the dead-letter topic of its `maxDeliveries`
 * (by the broker, which creates their topics).
 */
export type ResolvedSubscribeRequest = Omit<SubscribeRequest, 'retry'> & { retry?: RetryPolicy | null; maxDeliveriesDeadLetterTopic?: string };

/** The subscription settings a request may set (a retry policy with its defaults resolved). */
export type SubscriptionPolicies = Omit<Partial<Pick<SubscribeRequest, SubscriptionSetting>>, 'retry'> & {
  retry?: RetryPolicy | null;
  maxDeliveriesDeadLetterTopic?: string;
};

/** A share group's settings when a request names none (Kafka's share group defaults). */
export const SHARE_DEFAULTS = { lockMs: 30_000, ordering: 'none' as const, maxInFlightRecords: 2000, maxDeliveries: 5 };

const DEFAULTS = {
  startPolicy: 'latest' as StartPolicy,
  onOutOfRange: 'pause' as OutOfRangePolicy,
};

export class Subscriptions {
  /** `groupId \0 topic` -> subscription. */
  private readonly cache = new Map<string, SubscriptionRecord>();
  /**
   * The records {@link get} returned (with every default of this process filled in): another get that wants nothing
   * of a cached one of them returns it as it is, without comparing it field by field (each commit and fetch asks).
   */
  private readonly current = new WeakSet<SubscriptionRecord>();
  /** The retry tier topics of every subscription (members consume them with their topic). */
  readonly retryTopics = new RetryTopics();

  /** Called when a subscription gained tier topics (its live members must consume them); see {@link onTiersChanged}. */
  private readonly tiersChangedListeners: Array<(sub: SubscriptionRecord, previousTiers: readonly string[]) => void> = [];

  constructor(
    private readonly catalog: Catalog,
    private readonly clock: Clock,
  ) {}

  /** Calls `listener` each time a subscription gains retry tier topics, with the tiers it had before. */
  onTiersChanged(listener: (sub: SubscriptionRecord, previousTiers: readonly string[]) => void): void {
    this.tiersChangedListeners.push(listener);
  }

  /** Loads what must be known before the first request: the subscriptions with retry tier topics. */
  async start(): Promise<void> {
    for (const sub of await this.catalog.subscriptions.listWithRetries()) {
      this.retryTopics.set(sub);
      this.cache.set(`${sub.groupId}\0${sub.topic}`, sub);
    }
  }

  /**
   * The subscription of a group to a topic, created (with the group) if missing, and updated when `wanted`
   * names a different setting.
   */
  async get(groupId: string, topic: string, wanted: SubscriptionPolicies = {}): Promise<SubscriptionRecord> {
    const key = `${groupId}\0${topic}`;
    const cached = this.cache.get(key);
    if (cached !== undefined && this.current.has(cached) && Object.keys(wanted).length === 0) return cached;
    const existing = cached ?? (await this.catalog.subscriptions.get(groupId, topic));
    const type = existing?.type ?? (await this.typeOf(groupId)) ?? wanted.type ?? 'consumer';
    checkType(groupId, type, wanted);
    const next = {
      startPolicy: wanted.startPolicy ?? existing?.startPolicy ?? DEFAULTS.startPolicy,
      deliveryMode: wanted.deliveryMode ?? existing?.deliveryMode ?? 'pull',
      onOutOfRange: wanted.onOutOfRange ?? existing?.onOutOfRange ?? DEFAULTS.onOutOfRange,
      pushEndpoint: wanted.pushEndpoint !== undefined ? wanted.pushEndpoint : existing?.pushEndpoint ?? null,
      maxInFlight: wanted.maxInFlight ?? existing?.maxInFlight ?? 1,
      retry: wanted.retry !== undefined ? wanted.retry : existing?.retry ?? null,
      // A retry policy set ends maxDeliveries: its maxAttempts is the bound.
      maxDeliveries: wanted.retry ? null : wanted.maxDeliveries !== undefined ? wanted.maxDeliveries
        : existing?.maxDeliveries ?? (type === 'share' ? SHARE_DEFAULTS.maxDeliveries : null),
      type,
      share: type === 'consumer' ? null : {
        lockMs: wanted.lockMs ?? existing?.share?.lockMs ?? SHARE_DEFAULTS.lockMs,
        ordering: wanted.ordering ?? existing?.share?.ordering ?? SHARE_DEFAULTS.ordering,
        maxInFlightRecords: wanted.maxInFlightRecords ?? existing?.share?.maxInFlightRecords ?? SHARE_DEFAULTS.maxInFlightRecords,
      },
      deadLetterTopic: wanted.retry?.deadLetterTopic ?? wanted.maxDeliveriesDeadLetterTopic ?? existing?.deadLetterTopic ?? null,
      // Tier topics stay in use once created: records may wait in them after a policy shrank or was removed.
      retryTiers: Math.max(existing?.retryTiers ?? 0, wanted.retry?.delaysMs.length ?? 0),
      deadLetterAlertDepth: wanted.deadLetterAlertDepth ?? existing?.deadLetterAlertDepth ?? 1,
      webhookMaxAttempts: wanted.webhookMaxAttempts ?? existing?.webhookMaxAttempts ?? 5,
      headroomWarnRatio: wanted.headroomWarnRatio ?? existing?.headroomWarnRatio ?? DEFAULT_HEALTH_SETTINGS.headroomWarnRatio,
      stallMs: wanted.stallMs ?? existing?.stallMs ?? DEFAULT_HEALTH_SETTINGS.stallMs,
    };
    const same = existing && (Object.keys(next) as Array<keyof typeof next>).every((k) => JSON.stringify(existing[k]) === JSON.stringify(next[k]));
    const record = same ? existing : await this.catalog.subscriptions.upsert({ groupId, topic, ...next, createdAt: this.clock.now() });
    this.cache.set(key, record);
    this.current.add(record);
    if (record.retryTiers !== (existing?.retryTiers ?? 0)) {
      const previous = this.retryTopics.tiersOf(groupId, topic);
      this.retryTopics.set(record);
      for (const listener of this.tiersChangedListeners) listener(record, previous);
    }
    return record;
  }

  /**
   * The subscription a partition of `topic` is consumed under: the group's subscription to it, or, for a retry
   * tier, its subscription's settings read from the tier's earliest record (every retry is delivered).
   */
  async of(groupId: string, topic: string): Promise<SubscriptionRecord> {
    const tier = this.retryTopics.tierOf(groupId, topic);
    if (!tier) return this.get(groupId, topic);
    const parent = await this.get(groupId, tier.topic);
    return { ...parent, topic, startPolicy: 'earliest', onOutOfRange: 'pause' };
  }

  /** The group's type, as its subscriptions say (none yet: undefined). */
  async typeOf(groupId: string): Promise<GroupType | undefined> {
    return (await this.catalog.subscriptions.list(groupId))[0]?.type;
  }

  /** The group's subscription to `topic` as stored, or undefined (no catalog write). */
  async find(groupId: string, topic: string): Promise<SubscriptionRecord | undefined> {
    const key = `${groupId}\0${topic}`;
    const cached = this.cache.get(key);
    if (cached !== undefined) return cached;
    const stored = await this.catalog.subscriptions.get(groupId, topic);
    // Kept as get() keeps what it reads (a share group's members never join, so nothing else would cache theirs).
    if (stored !== undefined && !this.cache.has(key)) this.cache.set(key, stored);
    return stored;
  }

  /** Forgets the subscriptions to a deleted topic. */
  forgetTopic(topic: string): void {
    for (const [key, sub] of this.cache) if (sub.topic === topic) this.cache.delete(key);
  }

  /** Forgets a deleted group's subscriptions. */
  deleteGroup(groupId: string): void {
    for (const key of this.cache.keys()) if (key.startsWith(`${groupId}\0`)) this.cache.delete(key);
    this.retryTopics.deleteGroup(groupId);
  }
}

/**
 * What bounds the deliveries of a subscription's records (docs/retries.md): its retry policy, or without one its
 * `maxDeliveries` (no tiers: a record goes from the topic to the dead letters); null when nothing does.
 */
export function deliveryBound(sub: SubscriptionRecord | undefined): RetryPolicy | null {
  if (sub?.retry) return sub.retry;
  if (sub?.maxDeliveries != null && sub.deadLetterTopic !== null) return { delaysMs: [], maxAttempts: sub.maxDeliveries, deadLetterTopic: sub.deadLetterTopic };
  return null;
}

/**
 * Checks what a request asks of a subscription of a group of `type` (a group's type is set by its first subscription
 * and never changes).
 * @throws OnelogError `INVALID_REQUEST` naming what does not fit
 */
function checkType(groupId: string, type: GroupType, wanted: SubscriptionPolicies): void {
  if (wanted.type !== undefined && wanted.type !== type) {
    throw new OnelogError('INVALID_REQUEST', `group ${groupId} is a ${type} group: a group's type is set when it is created and never changes ` +
      '(create a group under another id)', { groupId, type, wanted: wanted.type });
  }
  if (type === 'consumer') {
    const named = (['lockMs', 'ordering', 'maxInFlightRecords'] as const).filter((k) => wanted[k] !== undefined);
    if (named.length > 0) {
      throw new OnelogError('INVALID_REQUEST', `${named.join(', ')} ${named.length === 1 ? 'is a setting' : 'are settings'} of share groups; ` +
        `group ${groupId} is a consumer group`, { groupId, fields: named });
    }
    return;
  }
  if (wanted.maxDeliveries === null) {
    throw new OnelogError('INVALID_REQUEST', `group ${groupId} is a share group: its records always have a delivery limit (maxDeliveries 1 to 100)`, { groupId });
  }
  if (wanted.retry) {
    throw new OnelogError('INVALID_REQUEST', `group ${groupId} is a share group: a record goes back with a release (a delay if you like), ` +
      'not through retry tiers, and to the dead letters after maxDeliveries', { groupId });
  }
  if (wanted.deliveryMode === 'push') {
    throw new OnelogError('INVALID_REQUEST', `group ${groupId} is a share group: its members acquire records (pull); push is for consumer groups`, { groupId });
  }
}

/** The request's subscription settings that are set ({@link SUBSCRIPTION_SETTINGS}: what the permission table checks). */
export function definedOnly(r: SubscriptionPolicies): SubscriptionPolicies {
  return Object.fromEntries([...SUBSCRIPTION_SETTINGS, 'maxDeliveriesDeadLetterTopic' as const].flatMap((k) => (r[k] === undefined ? [] : [[k, r[k]]])));
}

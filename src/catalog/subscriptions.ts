/**
 * The catalog's subscriptions: each group's binding to a topic (delivery mode, start and out-of-range policies, retry
 * policy, health thresholds), and the mark of its first commit.
 */
import type { Kysely, Selectable } from 'kysely';
import type { ShareSettings, SubscriptionInfo } from '../protocol/subscriptions.js';
import { OnelogError } from '../protocol/errors.js';
import type { CatalogSchema, SubscriptionsTable } from './schema.js';

/**
 * A group's binding to a topic as the catalog keeps it: the API's shape, with its health thresholds, its share
 * settings, the retry tier topics made for it and its creation time. More than the API's shape says of its fields:
 * `pushEndpoint` is the webhook URL the broker POSTs batches to (null: pushed over WebSocket, or pull); `maxInFlight`
 * the most push requests in flight per partition; `maxDeliveries`, without a retry policy, the deliveries of a record
 * before it is dead-lettered, those that ended with their consumer dying counted (docs/retries.md), null: unbounded
 * (with a policy its `maxAttempts` is the limit, and this is null), and a share group's delivery count limit;
 * `deadLetterAlertDepth` the dead letters waiting that raise a `dead-letter-depth` alert; `webhookMaxAttempts` the
 * webhook POSTs of a batch before its records are nacked (with a retry policy).
 */
export interface SubscriptionRecord extends SubscriptionInfo {
  /** Retry tier topics created for it (1..retryTiers); may exceed the policy's tiers after it shrank, or be > 0 without one. */
  retryTiers: number;
  /** ms since the epoch */
  createdAt: number;
}

const toSubscription = (r: Selectable<SubscriptionsTable>): SubscriptionRecord => ({
  groupId: r.group_id,
  topic: r.topic,
  deliveryMode: r.delivery_mode,
  startPolicy: r.start_policy,
  onOutOfRange: r.on_out_of_range,
  pushEndpoint: r.push_endpoint,
  maxInFlight: Number(r.max_in_flight),
  retry: r.retry_delays_ms === null ? null : {
    delaysMs: JSON.parse(r.retry_delays_ms) as number[], maxAttempts: Number(r.max_attempts), deadLetterTopic: r.dead_letter_topic!,
  },
  deadLetterTopic: r.dead_letter_topic,
  // Without a policy, max_attempts holds maxDeliveries.
  maxDeliveries: r.retry_delays_ms === null && r.max_attempts !== null ? Number(r.max_attempts) : null,
  type: r.share_settings === null ? 'consumer' : 'share',
  share: r.share_settings === null ? null : JSON.parse(r.share_settings) as ShareSettings,
  retryTiers: Number(r.retry_tiers),
  deadLetterAlertDepth: Number(r.dead_letter_alert_depth),
  webhookMaxAttempts: Number(r.webhook_max_attempts),
  headroomWarnRatio: Number(r.headroom_warn_ratio),
  stallMs: Number(r.stall_ms),
  createdAt: Number(r.created_at),
});

/** The columns a subscription's settings are stored in. */
function subscriptionColumns(sub: SubscriptionRecord) {
  return {
    delivery_mode: sub.deliveryMode, start_policy: sub.startPolicy, on_out_of_range: sub.onOutOfRange,
    push_endpoint: sub.pushEndpoint, max_in_flight: sub.maxInFlight,
    retry_delays_ms: sub.retry ? JSON.stringify(sub.retry.delaysMs) : null,
    max_attempts: sub.retry?.maxAttempts ?? sub.maxDeliveries,
    dead_letter_topic: sub.retry?.deadLetterTopic ?? sub.deadLetterTopic,
    retry_tiers: sub.retryTiers,
    dead_letter_alert_depth: sub.deadLetterAlertDepth,
    webhook_max_attempts: sub.webhookMaxAttempts,
    headroom_warn_ratio: sub.headroomWarnRatio,
    stall_ms: sub.stallMs,
    share_settings: sub.share === null ? null : JSON.stringify(sub.share),
  };
}

export class SubscriptionRepository {
  constructor(private readonly db: Kysely<CatalogSchema>) {}

  /**
   * Creates the subscription of `groupId` to `topic` (and the group, if new), or updates its delivery mode
   * and start policy. One transaction.
   * @throws OnelogError `UNKNOWN_TOPIC` if the topic is not in the catalog (deleted meanwhile)
   */
  async upsert(sub: SubscriptionRecord): Promise<SubscriptionRecord> {
    await this.db.transaction().execute(async (tx) => {
      await tx
        .insertInto('groups')
        .values({ group_id: sub.groupId, created_at: sub.createdAt })
        .onConflict((oc) => oc.column('group_id').doNothing())
        .execute();
      await tx
        .insertInto('subscriptions')
        .values({ group_id: sub.groupId, topic: sub.topic, ...subscriptionColumns(sub), created_at: sub.createdAt })
        .onConflict((oc) => oc.columns(['group_id', 'topic']).doUpdateSet(subscriptionColumns(sub)))
        .execute();
    }).catch((err: unknown) => {
      // The topic's row is the only foreign key the group's own insert cannot satisfy (SQLite's code; PostgreSQL's).
      const code = (err as { code?: unknown }).code;
      if (code !== 'SQLITE_CONSTRAINT_FOREIGNKEY' && code !== '23503') throw err;
      throw new OnelogError('UNKNOWN_TOPIC', `topic ${sub.topic} does not exist`, { topic: sub.topic, groupId: sub.groupId });
    });
    return (await this.get(sub.groupId, sub.topic))!;
  }

  /** Every push subscription with a webhook endpoint (the broker delivers those itself). */
  async listWithWebhook(): Promise<SubscriptionRecord[]> {
    const rows = await this.db.selectFrom('subscriptions').selectAll()
      .where('delivery_mode', '=', 'push').where('push_endpoint', 'is not', null).orderBy('group_id').orderBy('topic').execute();
    return rows.map(toSubscription);
  }

  /** Every group's subscription to `topic`, by group id. */
  async listByTopic(topic: string): Promise<SubscriptionRecord[]> {
    const rows = await this.db.selectFrom('subscriptions').selectAll().where('topic', '=', topic).orderBy('group_id').execute();
    return rows.map(toSubscription);
  }

  /** Every subscription with retry tier topics (with a retry policy, or tiers left to drain) or a dead-letter topic. */
  async listWithRetries(): Promise<SubscriptionRecord[]> {
    const rows = await this.db.selectFrom('subscriptions').selectAll()
      .where((eb) => eb.or([eb('retry_tiers', '>', 0), eb('retry_delays_ms', 'is not', null), eb('dead_letter_topic', 'is not', null)]))
      .orderBy('group_id').orderBy('topic').execute();
    return rows.map(toSubscription);
  }

  /** The subscription of `groupId` to `topic`, or undefined. */
  async get(groupId: string, topic: string): Promise<SubscriptionRecord | undefined> {
    const row = await this.db
      .selectFrom('subscriptions')
      .selectAll()
      .where('group_id', '=', groupId)
      .where('topic', '=', topic)
      .executeTakeFirst();
    return row && toSubscription(row);
  }

  /** Every subscription of a group, by topic. */
  async list(groupId: string): Promise<SubscriptionRecord[]> {
    const rows = await this.db
      .selectFrom('subscriptions')
      .selectAll()
      .where('group_id', '=', groupId)
      .orderBy('topic')
      .execute();
    return rows.map(toSubscription);
  }

  /**
   * Records that `groupId` committed an offset of `topic`, at `at` (ms since the epoch), unless it was recorded
   * before: the first commit's time stays. Nothing for a subscription that does not exist.
   */
  async markCommitted(groupId: string, topic: string, at: number): Promise<void> {
    await this.db.updateTable('subscriptions').set({ first_commit_at: at })
      .where('group_id', '=', groupId).where('topic', '=', topic).where('first_commit_at', 'is', null).execute();
  }

  /** Every subscription whose group committed an offset of its topic ({@link markCommitted}), by group then topic. */
  async listCommitted(): Promise<Array<{ groupId: string; topic: string }>> {
    const rows = await this.db.selectFrom('subscriptions').select(['group_id', 'topic']).where('first_commit_at', 'is not', null)
      .orderBy('group_id').orderBy('topic').execute();
    return rows.map((r) => ({ groupId: r.group_id, topic: r.topic }));
  }
}

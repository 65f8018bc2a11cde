/**
 * The catalog: the relational store of topics (partition count, retention and cleanup settings), consumer
 * groups and subscriptions (group, topic, delivery mode, start policy). Low volume, relational queries,
 * integrity by foreign keys. Written against Kysely, so the same code runs on SQLite (embedded default,
 * see {@link openSqliteCatalog}) and PostgreSQL.
 */
import { Kysely, Migrator, PostgresAdapter, sql } from 'kysely';
import type { Dialect, MigrationProvider, Selectable, Transaction } from 'kysely';
import { OnelogError } from '../protocol/errors.js';
import type { TopicConfig } from '../protocol/topic-config.js';
import type { AclBinding, AuditEntry, OffsetResetRecord, PartitionError, TopicPartition } from '../protocol/api.js';
import type { AlertSink, GroupAlert, HealthSettings } from '../protocol/monitoring-api.js';
import type { RetryPolicy } from '../protocol/retry-policy.js';
import type { DeliveryMode, GroupType, OutOfRangePolicy, ShareOrdering, StartPolicy } from '../protocol/types.js';
import { migrations } from './migrations.js';
import type { AclsTable, UsersTable, CatalogSchema, GroupAlertsTable, SubscriptionsTable, TopicsTable } from './schema.js';

/** A topic as the catalog keeps it: its partition count and settings. */
export interface TopicRecord extends TopicConfig {
  name: string;
  partitions: number;
  /** ms since the epoch */
  createdAt: number;
}

/** The settings columns of a topics row. */
type SettingsColumns = Omit<TopicsTable, 'name' | 'partitions' | 'created_at'>;

function toColumns(c: TopicConfig): SettingsColumns {
  return {
    cleanup_policy: c.cleanupPolicy,
    retention_ms: c.retentionMs,
    retention_bytes: c.retentionBytes,
    segment_bytes: c.segmentBytes,
    segment_ms: c.segmentMs,
    delete_retention_ms: c.deleteRetentionMs,
    min_compaction_lag_ms: c.minCompactionLagMs,
    flush_policy: c.flushPolicy,
    flush_ms: c.flushMs,
    flush_messages: c.flushMessages,
    compression_type: c.compressionType,
  };
}

/** A group's binding to a topic, with its health thresholds. */
export interface SubscriptionRecord extends HealthSettings {
  groupId: string;
  topic: string;
  deliveryMode: DeliveryMode;
  startPolicy: StartPolicy;
  onOutOfRange: OutOfRangePolicy;
  /** Push: the webhook URL the broker POSTs batches to; null: pushed over WebSocket (or pull). */
  pushEndpoint: string | null;
  /** Push: most requests in flight per partition. */
  maxInFlight: number;
  /** null: no retry policy. */
  retry: RetryPolicy | null;
  /** The dead-letter topic, kept when the policy is removed (its dead letters can still be listed and redriven). */
  deadLetterTopic: string | null;
  /**
   * Without a retry policy: deliveries of a record before it is dead-lettered, those that ended with their consumer
   * dying counted (docs/retries.md); null: unbounded. With a policy its `maxAttempts` is the limit, and this is null.
   * A share group's delivery count limit.
   */
  maxDeliveries: number | null;
  /** The group's type; a share group's subscription has its {@link share} settings. */
  type: GroupType;
  /** A share group's settings; null for a consumer group. */
  share: ShareSettings | null;
  /** Retry tier topics created for it (1..retryTiers); may exceed the policy's tiers after it shrank, or be > 0 without one. */
  retryTiers: number;
  /** Dead letters waiting that raise a `dead-letter-depth` alert. */
  deadLetterAlertDepth: number;
  /** Webhook POSTs of a batch before its records are nacked (with a retry policy). */
  webhookMaxAttempts: number;
  /** ms since the epoch */
  createdAt: number;
}

/** A share group's settings of one subscription (docs/consumer-groups.md); its delivery count limit is `maxDeliveries`. */
export interface ShareSettings {
  /** How long a member holds an acquired record before it is released, ms (Kafka's group.share.record.lock.duration.ms). */
  lockMs: number;
  /** `key`: each key's records one at a time, in order; `none`: in parallel. */
  ordering: ShareOrdering;
  /** Most records of a partition in flight (acquired or waiting to be), records (Kafka's group.share.partition.max.record.locks). */
  maxInFlightRecords: number;
}

/** A redrive or purge of dead letters: offsets `[firstOffset, endOffset)` of the dead-letter topic. */
export interface DeadLetterAction {
  action: 'redrive' | 'purge';
  firstOffset: number;
  endOffset: number;
  records: number;
  requestedBy: string;
  /** ms since the epoch */
  executedAt: number;
}

/** A consumer group as the catalog keeps it. */
export interface GroupRecord {
  groupId: string;
  /** ms since the epoch */
  createdAt: number;
}

// Integer columns come back as bigint-typed numbers on PostgreSQL: Number() them all.
const toTopic = (r: Selectable<TopicsTable>): TopicRecord => ({
  name: r.name,
  partitions: Number(r.partitions),
  createdAt: Number(r.created_at),
  cleanupPolicy: r.cleanup_policy,
  retentionMs: Number(r.retention_ms),
  retentionBytes: Number(r.retention_bytes),
  segmentBytes: Number(r.segment_bytes),
  segmentMs: Number(r.segment_ms),
  deleteRetentionMs: Number(r.delete_retention_ms),
  minCompactionLagMs: Number(r.min_compaction_lag_ms),
  flushPolicy: r.flush_policy,
  flushMs: Number(r.flush_ms),
  flushMessages: Number(r.flush_messages),
  compressionType: r.compression_type,
});

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

const toAlert = (r: Selectable<GroupAlertsTable>): GroupAlert => ({
  id: Number(r.id), groupId: r.group_id, kind: r.kind, topic: r.topic, partition: Number(r.partition), message: r.message,
  context: JSON.parse(r.context) as Record<string, unknown>, createdAt: Number(r.created_at),
  resolvedAt: r.resolved_at === null ? null : Number(r.resolved_at),
  acknowledgedAt: r.acknowledged_at === null ? null : Number(r.acknowledged_at), acknowledgedBy: r.acknowledged_by,
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

const provider: MigrationProvider = { getMigrations: async () => migrations };

/**
 * How the brokers sharing one catalog (PostgreSQL, cluster mode) learn of the changes to users and ACLs made through
 * any of them: each change announces itself inside its own transaction (so it is heard once committed, never
 * before, never if rolled back), and each broker hears every announcement, and is told to read everything again
 * when it may have missed some. The embedded SQLite catalog has none: one broker per data directory.
 */
export interface CatalogChanges {
  /** Announces, in `tx`, that users or ACLs changed. */
  announce(tx: Transaction<CatalogSchema>): Promise<void>;
  /** Starts hearing: `changed` is called for each announcement, and whenever some may have been missed. */
  listen(changed: () => void): Promise<void>;
  /** Stops hearing. */
  close(): Promise<void>;
}

/** Options of {@link Catalog.open}. */
export interface CatalogOpenOptions {
  /**
   * The schema of Kysely's migration tables (PostgreSQL: the catalog's own schema, or another schema's tables of
   * the same names would be taken for them).
   */
  migrationTableSchema?: string;
  /** The changes feed of a catalog shared by several brokers; closed by {@link Catalog.close}. @default none */
  changes?: CatalogChanges;
}

export class Catalog {
  private readonly securityListeners: Array<() => void> = [];

  private constructor(private readonly db: Kysely<CatalogSchema>, private readonly changes: CatalogChanges | undefined) {}

  /**
   * Opens the catalog over a Kysely dialect, applies pending migrations and starts hearing `options.changes`.
   * @throws Error if a migration fails (the catalog is left at the last applied migration), or what the changes
   *   feed's `listen` throws
   */
  static async open(dialect: Dialect, options: CatalogOpenOptions = {}): Promise<Catalog> {
    const db = new Kysely<CatalogSchema>({ dialect });
    const { migrationTableSchema, changes } = options;
    const { error } = await new Migrator({ db, provider, ...(migrationTableSchema === undefined ? {} : { migrationTableSchema }) }).migrateToLatest();
    if (error) {
      await db.destroy();
      throw error instanceof Error ? error : new Error(String(error));
    }
    const catalog = new Catalog(db, changes);
    try {
      await changes?.listen(() => {
        for (const listener of catalog.securityListeners) listener();
      });
    } catch (err) {
      await db.destroy();
      throw err;
    }
    return catalog;
  }

  /**
   * Calls `listener` whenever users or ACLs may have been changed by another broker sharing this catalog (each
   * change made through any broker, this one's included, and after hearing was interrupted). Never called on the
   * embedded catalog, which no other broker changes.
   */
  onSecurityChange(listener: () => void): void {
    this.securityListeners.push(listener);
  }

  /** Runs `change` to users or ACLs in one transaction that also announces it to the other brokers. */
  private changeSecurity<T>(change: (tx: Transaction<CatalogSchema>) => Promise<T>): Promise<T> {
    return this.db.transaction().execute(async (tx) => {
      const result = await change(tx);
      await this.changes?.announce(tx);
      return result;
    });
  }

  /**
   * Adds a topic.
   * @throws OnelogError `TOPIC_ALREADY_EXISTS`
   */
  async createTopic(topic: TopicRecord): Promise<TopicRecord> {
    // One statement decides, so two concurrent creates cannot both pass a check and then collide.
    const inserted = await this.db
      .insertInto('topics')
      .values({ name: topic.name, partitions: topic.partitions, created_at: topic.createdAt, ...toColumns(topic) })
      .onConflict((oc) => oc.column('name').doNothing())
      .executeTakeFirst();
    if (inserted.numInsertedOrUpdatedRows === 0n) {
      const existing = await this.getTopic(topic.name);
      throw new OnelogError('TOPIC_ALREADY_EXISTS', `topic ${topic.name} already exists`, {
        topic: topic.name, partitions: existing?.partitions,
      });
    }
    return topic;
  }

  /**
   * Replaces a topic's settings.
   * @throws OnelogError `UNKNOWN_TOPIC`
   */
  async updateTopicConfig(name: string, config: TopicConfig): Promise<void> {
    const result = await this.db.updateTable('topics').set(toColumns(config)).where('name', '=', name).executeTakeFirst();
    if (result.numUpdatedRows === 0n) throw new OnelogError('UNKNOWN_TOPIC', `topic ${name} does not exist`, { topic: name });
  }

  /** The topic named `name`, or undefined. */
  async getTopic(name: string): Promise<TopicRecord | undefined> {
    const row = await this.db.selectFrom('topics').selectAll().where('name', '=', name).executeTakeFirst();
    return row && toTopic(row);
  }

  /** Every topic, by name. */
  async listTopics(): Promise<TopicRecord[]> {
    return (await this.db.selectFrom('topics').selectAll().orderBy('name').execute()).map(toTopic);
  }

  /**
   * Deletes a topic and, in the same transaction, every group's subscription to it (by cascade), the pauses of
   * its partitions and its partitions' offsets in checkpoints, and records the deletion as pending until
   * {@link finishTopicDeletion}: its files and committed offsets are removed after. Alerts and reset history stay.
   * @param at when, ms since the epoch
   */
  async deleteTopic(name: string, partitions: number, at: number): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await tx.insertInto('topic_deletions').values({ name, partitions, requested_at: at }).execute();
      await tx.deleteFrom('paused_partitions').where('topic', '=', name).execute();
      await tx.deleteFrom('offset_checkpoints').where('topic', '=', name).execute();
      await tx.deleteFrom('topics').where('name', '=', name).execute();
    });
  }

  /** Topic deletions whose files and committed offsets are still to be removed. */
  async listTopicDeletions(): Promise<Array<{ name: string; partitions: number }>> {
    return this.db.selectFrom('topic_deletions').select(['name', 'partitions']).orderBy('name').execute();
  }

  /** Marks a topic deletion done: its files and committed offsets are gone. */
  async finishTopicDeletion(name: string): Promise<void> {
    await this.db.deleteFrom('topic_deletions').where('name', '=', name).execute();
  }

  /**
   * Adds a user; the first one is an admin whatever `admin` says (one transaction decides).
   * @throws OnelogError `ALREADY_EXISTS` if the name is taken
   */
  async createUser(user: Omit<UserRecord, 'admin' | 'rotatedAt'> & { admin: boolean }): Promise<UserRecord> {
    return this.changeSecurity(async (tx) => {
      // SQLite runs one transaction at a time; PostgreSQL's concurrent ones would each see no user yet: the lock
      // (self-conflicting, reads go on) makes them take turns, on every broker of a cluster.
      if (tx.getExecutor().adapter instanceof PostgresAdapter) await sql`lock table users in share row exclusive mode`.execute(tx);
      const first = (await tx.selectFrom('users').select('name').limit(1).execute()).length === 0;
      const inserted = await tx.insertInto('users').values({
        name: user.name, admin: user.admin || first ? 1 : 0, token_id: user.tokenId, token_salt: user.tokenSalt, token_hash: user.tokenHash,
        token_scram: user.tokenScram, created_at: user.createdAt, rotated_at: null,
      }).onConflict((oc) => oc.column('name').doNothing()).executeTakeFirst();
      if (inserted.numInsertedOrUpdatedRows === 0n) throw new OnelogError('ALREADY_EXISTS', `user ${user.name} already exists`, { user: user.name });
      return { ...user, admin: user.admin || first, rotatedAt: null };
    });
  }

  /** Every user, by name. */
  async listUsers(): Promise<UserRecord[]> {
    return (await this.db.selectFrom('users').selectAll().orderBy('name').execute()).map(toUser);
  }

  /** Deletes a user and the ACLs naming it. @returns whether the user existed */
  async deleteUser(name: string): Promise<boolean> {
    return this.changeSecurity(async (tx) => {
      await tx.deleteFrom('acls').where('principal', '=', name).execute();
      return (await tx.deleteFrom('users').where('name', '=', name).executeTakeFirst()).numDeletedRows > 0n;
    });
  }

  /** Adds an ACL. @throws OnelogError `ALREADY_EXISTS` if the same ACL exists */
  async addAcl(acl: AclBinding): Promise<void> {
    const inserted = await this.changeSecurity((tx) => tx.insertInto('acls').values(aclRow(acl)).onConflict((oc) => oc.doNothing()).executeTakeFirst());
    if (inserted.numInsertedOrUpdatedRows === 0n) throw new OnelogError('ALREADY_EXISTS', 'this ACL already exists; onelog acls list shows them', { ...acl });
  }

  /** Every ACL, by principal, resource and operation. */
  async listAcls(): Promise<AclBinding[]> {
    const rows = await this.db.selectFrom('acls').selectAll()
      .orderBy('principal').orderBy('resource_type').orderBy('resource_name').orderBy('operation').orderBy('permission').execute();
    return rows.map((r) => ({
      principal: r.principal, resourceType: r.resource_type as AclBinding['resourceType'], resourceName: r.resource_name,
      patternType: r.pattern_type as AclBinding['patternType'], operation: r.operation as AclBinding['operation'], permission: r.permission as AclBinding['permission'],
    }));
  }

  /** Removes one ACL. @returns whether it existed */
  async removeAcl(acl: AclBinding): Promise<boolean> {
    const row = aclRow(acl);
    const deleted = await this.changeSecurity((tx) => tx.deleteFrom('acls').where('principal', '=', row.principal).where('resource_type', '=', row.resource_type)
      .where('resource_name', '=', row.resource_name).where('pattern_type', '=', row.pattern_type).where('operation', '=', row.operation)
      .where('permission', '=', row.permission).executeTakeFirst());
    return deleted.numDeletedRows > 0n;
  }

  /** Replaces a user's token. @returns the user, or undefined if there is none of that name */
  async replaceUserToken(name: string, token: Pick<UserRecord, 'tokenId' | 'tokenSalt' | 'tokenHash' | 'tokenScram'>, at: number): Promise<UserRecord | undefined> {
    const row = await this.changeSecurity(async (tx) => {
      await tx.updateTable('users').set({ token_id: token.tokenId, token_salt: token.tokenSalt, token_hash: token.tokenHash, token_scram: token.tokenScram, rotated_at: at })
        .where('name', '=', name).execute();
      return tx.selectFrom('users').selectAll().where('name', '=', name).executeTakeFirst();
    });
    return row && toUser(row);
  }

  /** Records an operation and who did it. */
  async addAudit(entry: Omit<AuditEntry, 'id'>): Promise<void> {
    await this.db.insertInto('audit_log').values({ ...entry, details: JSON.stringify(entry.details) }).execute();
  }

  /** The most recent audit entries, newest first. */
  async listAudit(limit: number): Promise<AuditEntry[]> {
    const rows = await this.db.selectFrom('audit_log').selectAll().orderBy('id', 'desc').limit(limit).execute();
    return rows.map((r) => ({
      id: Number(r.id), at: Number(r.at), principal: r.principal, action: r.action, target: r.target, outcome: r.outcome === 'refused' ? 'refused' : 'done',
      details: JSON.parse(r.details) as Record<string, unknown>,
    }));
  }

  /** The group `groupId`, or undefined. */
  async getGroup(groupId: string): Promise<GroupRecord | undefined> {
    const row = await this.db.selectFrom('groups').selectAll().where('group_id', '=', groupId).executeTakeFirst();
    return row && { groupId: row.group_id, createdAt: Number(row.created_at) };
  }

  /** The group's Kafka configs by name (migration 0018), none for a group that has none or does not exist. */
  async groupConfigs(groupId: string): Promise<Record<string, string>> {
    const row = await this.db.selectFrom('groups').select('configs').where('group_id', '=', groupId).executeTakeFirst();
    return row?.configs ? JSON.parse(row.configs) as Record<string, string> : {};
  }

  /** Replaces the group's Kafka configs, creating the group (with no subscription) if it does not exist. */
  async setGroupConfigs(groupId: string, configs: Readonly<Record<string, string>>, now: number): Promise<void> {
    const json = Object.keys(configs).length === 0 ? null : JSON.stringify(configs);
    await this.db.insertInto('groups').values({ group_id: groupId, created_at: now, configs: json })
      .onConflict((oc) => oc.column('group_id').doUpdateSet({ configs: json })).execute();
  }

  /** Every group, by id. */
  async listGroups(): Promise<GroupRecord[]> {
    const rows = await this.db.selectFrom('groups').selectAll().orderBy('group_id').execute();
    return rows.map((r) => ({ groupId: r.group_id, createdAt: Number(r.created_at) }));
  }

  /**
   * Creates the subscription of `groupId` to `topic` (and the group, if new), or updates its delivery mode
   * and start policy. One transaction.
   * @throws OnelogError `UNKNOWN_TOPIC` if the topic is not in the catalog (deleted meanwhile)
   */
  async upsertSubscription(sub: SubscriptionRecord): Promise<SubscriptionRecord> {
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
    return (await this.getSubscription(sub.groupId, sub.topic))!;
  }

  /** Every push subscription with a webhook endpoint (the broker delivers those itself). */
  async listWebhookSubscriptions(): Promise<SubscriptionRecord[]> {
    const rows = await this.db.selectFrom('subscriptions').selectAll()
      .where('delivery_mode', '=', 'push').where('push_endpoint', 'is not', null).orderBy('group_id').orderBy('topic').execute();
    return rows.map(toSubscription);
  }

  /** Every group's subscription to `topic`, by group id. */
  async listTopicSubscriptions(topic: string): Promise<SubscriptionRecord[]> {
    const rows = await this.db.selectFrom('subscriptions').selectAll().where('topic', '=', topic).orderBy('group_id').execute();
    return rows.map(toSubscription);
  }

  /** Every subscription with retry tier topics (with a retry policy, or tiers left to drain) or a dead-letter topic. */
  async listRetrySubscriptions(): Promise<SubscriptionRecord[]> {
    const rows = await this.db.selectFrom('subscriptions').selectAll()
      .where((eb) => eb.or([eb('retry_tiers', '>', 0), eb('retry_delays_ms', 'is not', null), eb('dead_letter_topic', 'is not', null)]))
      .orderBy('group_id').orderBy('topic').execute();
    return rows.map(toSubscription);
  }

  /** The subscription of `groupId` to `topic`, or undefined. */
  async getSubscription(groupId: string, topic: string): Promise<SubscriptionRecord | undefined> {
    const row = await this.db
      .selectFrom('subscriptions')
      .selectAll()
      .where('group_id', '=', groupId)
      .where('topic', '=', topic)
      .executeTakeFirst();
    return row && toSubscription(row);
  }

  /** Every subscription of a group, by topic. */
  async listSubscriptions(groupId: string): Promise<SubscriptionRecord[]> {
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
  async listCommittedSubscriptions(): Promise<Array<{ groupId: string; topic: string }>> {
    const rows = await this.db.selectFrom('subscriptions').select(['group_id', 'topic']).where('first_commit_at', 'is not', null)
      .orderBy('group_id').orderBy('topic').execute();
    return rows.map((r) => ({ groupId: r.group_id, topic: r.topic }));
  }

  /** Deletes a group and, by cascade, its subscriptions, pauses, alerts, reset history and checkpoints. */
  async deleteGroup(groupId: string): Promise<void> {
    await this.db.deleteFrom('groups').where('group_id', '=', groupId).execute();
  }

  /** Marks a partition paused for a group, with the error that paused it (replacing an earlier one). */
  async pausePartition(groupId: string, tp: TopicPartition, error: PartitionError, pausedAt: number): Promise<void> {
    await this.db
      .insertInto('paused_partitions')
      .values({ group_id: groupId, topic: tp.topic, partition: tp.partition, error: JSON.stringify(error), paused_at: pausedAt })
      .onConflict((oc) => oc.columns(['group_id', 'topic', 'partition']).doUpdateSet({ error: JSON.stringify(error), paused_at: pausedAt }))
      .execute();
  }

  /** Lifts a partition's pause (an executed reset does). */
  async resumePartition(groupId: string, tp: TopicPartition): Promise<void> {
    await this.db.deleteFrom('paused_partitions')
      .where('group_id', '=', groupId).where('topic', '=', tp.topic).where('partition', '=', tp.partition).execute();
  }

  /** The group's paused partitions, keyed `topic/partition`, with the error that paused each. */
  async listPauses(groupId: string): Promise<Map<string, PartitionError>> {
    const rows = await this.db.selectFrom('paused_partitions').selectAll().where('group_id', '=', groupId).execute();
    return new Map(rows.map((r) => [`${r.topic}/${Number(r.partition)}`, JSON.parse(r.error) as PartitionError]));
  }

  /**
   * Records an alert (born resolved for a one-off; {@link raiseAlert} raises one) and answers it with its id.
   * @throws for an unresolved alert about a subject that has one already (the index `group_alerts_one_open`)
   */
  async addAlert(alert: Omit<GroupAlert, 'id' | 'acknowledgedAt' | 'acknowledgedBy'>): Promise<GroupAlert> {
    const row = await this.db.insertInto('group_alerts').values({
      group_id: alert.groupId, kind: alert.kind, topic: alert.topic, partition: alert.partition, message: alert.message,
      context: JSON.stringify(alert.context), created_at: alert.createdAt, resolved_at: alert.resolvedAt,
      acknowledged_at: null, acknowledged_by: null,
    }).returningAll().executeTakeFirstOrThrow();
    return toAlert(row);
  }

  /**
   * Raises an alert unless one about the same subject (group, kind, topic, partition) is unresolved, in one
   * conditional insert (the unique index `group_alerts_one_open` allows one unresolved alert per subject): of
   * brokers sharing the catalog that raise it at once, exactly one gets `raised: true`.
   * @returns the new alert with `raised: true`, or the unresolved one already there with `raised: false`
   */
  async raiseAlert(alert: Omit<GroupAlert, 'id' | 'acknowledgedAt' | 'acknowledgedBy' | 'resolvedAt'>): Promise<{ alert: GroupAlert; raised: boolean }> {
    // A miss then finds nothing only if the open one was resolved between the two statements: try again.
    for (let attempt = 1; ; attempt++) {
      const row = await this.db.insertInto('group_alerts').values({
        group_id: alert.groupId, kind: alert.kind, topic: alert.topic, partition: alert.partition, message: alert.message,
        context: JSON.stringify(alert.context), created_at: alert.createdAt, resolved_at: null, acknowledged_at: null, acknowledged_by: null,
      }).onConflict((oc) => oc.columns(['group_id', 'kind', 'topic', 'partition']).where(sql<boolean>`resolved_at is null`).doNothing())
        .returningAll().executeTakeFirst();
      if (row) return { alert: toAlert(row), raised: true };
      const open = await this.db.selectFrom('group_alerts').selectAll().where('group_id', '=', alert.groupId).where('kind', '=', alert.kind)
        .where('topic', '=', alert.topic).where('partition', '=', alert.partition).where('resolved_at', 'is', null).executeTakeFirst();
      if (open) return { alert: toAlert(open), raised: false };
      if (attempt === 3) {
        throw new OnelogError('STORAGE_ERROR', `the ${alert.kind} alert of group ${alert.groupId} on ${alert.topic}/${alert.partition} was raised and ` +
          `resolved by others ${attempt} times while this broker raised it`, { groupId: alert.groupId, topic: alert.topic, partition: alert.partition });
      }
    }
  }

  /** Marks an alert resolved at `resolvedAt` (ms since the epoch); undefined if it is gone or was resolved. */
  async resolveAlert(id: number, resolvedAt: number): Promise<GroupAlert | undefined> {
    const row = await this.db.updateTable('group_alerts').set({ resolved_at: resolvedAt }).where('id', '=', id).where('resolved_at', 'is', null)
      .returningAll().executeTakeFirst();
    return row && toAlert(row);
  }

  /** Records who acknowledged an alert, and when (a first acknowledgement stays); the alert, or undefined if there is none. */
  async acknowledgeAlert(id: number, by: string, at: number): Promise<GroupAlert | undefined> {
    await this.db.updateTable('group_alerts').set({ acknowledged_at: at, acknowledged_by: by }).where('id', '=', id)
      .where('acknowledged_at', 'is', null).execute();
    const row = await this.db.selectFrom('group_alerts').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toAlert(row);
  }

  /** Alerts, most recent first: only unresolved ones with `active`, only a group's with `groupId`. */
  async listAlerts(filter: { groupId?: string; active?: boolean; limit: number }): Promise<GroupAlert[]> {
    let query = this.db.selectFrom('group_alerts').selectAll();
    if (filter.groupId !== undefined) query = query.where('group_id', '=', filter.groupId);
    if (filter.active) query = query.where('resolved_at', 'is', null);
    return (await query.orderBy('id', 'desc').limit(filter.limit).execute()).map(toAlert);
  }

  /** Adds an alert sink (the existing one for a URL already added, also when two add it at once). */
  async addAlertSink(url: string, createdAt: number): Promise<AlertSink> {
    const existing = () => this.db.selectFrom('alert_sinks').selectAll().where('url', '=', url).executeTakeFirst();
    // Looked up first, so adding a URL again uses no id; the insert's conflict rule covers two adds at once.
    let row = await existing();
    if (row === undefined) {
      await this.db.insertInto('alert_sinks').values({ url, created_at: createdAt }).onConflict((oc) => oc.column('url').doNothing()).execute();
      row = (await existing())!;
    }
    return { id: Number(row.id), url: row.url, createdAt: Number(row.created_at) };
  }

  async listAlertSinks(): Promise<AlertSink[]> {
    const rows = await this.db.selectFrom('alert_sinks').selectAll().orderBy('id').execute();
    return rows.map((r) => ({ id: Number(r.id), url: r.url, createdAt: Number(r.created_at) }));
  }

  /** Removes an alert sink; false if there was none with that id. */
  async removeAlertSink(id: number): Promise<boolean> {
    const result = await this.db.deleteFrom('alert_sinks').where('id', '=', id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /** Records a redrive or purge of a subscription's dead letters. */
  async recordDeadLetterAction(groupId: string, topic: string, a: DeadLetterAction): Promise<void> {
    await this.db.insertInto('dead_letter_actions').values({
      group_id: groupId, topic, action: a.action, first_offset: a.firstOffset, end_offset: a.endOffset, records: a.records,
      requested_by: a.requestedBy, executed_at: a.executedAt,
    }).execute();
  }

  /** The group's dead-letter redrives and purges over every topic, most recent first. */
  async listDeadLetterHistory(groupId: string, limit: number): Promise<Array<DeadLetterAction & { topic: string }>> {
    const rows = await this.db.selectFrom('dead_letter_actions').selectAll().where('group_id', '=', groupId).orderBy('id', 'desc').limit(limit).execute();
    return rows.map((r) => ({
      topic: r.topic, action: r.action, firstOffset: Number(r.first_offset), endOffset: Number(r.end_offset), records: Number(r.records),
      requestedBy: r.requested_by, executedAt: Number(r.executed_at),
    }));
  }

  /** A subscription's dead-letter redrives and purges, oldest first. */
  async listDeadLetterActions(groupId: string, topic: string): Promise<DeadLetterAction[]> {
    const rows = await this.db.selectFrom('dead_letter_actions').selectAll().where('group_id', '=', groupId).where('topic', '=', topic)
      .orderBy('id').execute();
    return rows.map((r) => ({
      action: r.action, firstOffset: Number(r.first_offset), endOffset: Number(r.end_offset), records: Number(r.records),
      requestedBy: r.requested_by, executedAt: Number(r.executed_at),
    }));
  }

  /** Records executed offset resets. */
  async recordResets(groupId: string, resets: readonly OffsetResetRecord[]): Promise<void> {
    if (resets.length === 0) return;
    await this.db.insertInto('offset_resets').values(resets.map((r) => ({
      group_id: groupId, topic: r.topic, partition: r.partition, old_offset: r.oldOffset, new_offset: r.newOffset,
      spec: r.spec, requested_by: r.requestedBy, executed_at: r.executedAt,
    }))).execute();
  }

  /** The group's executed resets, most recent first. */
  async listResets(groupId: string, limit: number): Promise<OffsetResetRecord[]> {
    const rows = await this.db.selectFrom('offset_resets').selectAll().where('group_id', '=', groupId)
      .orderBy('id', 'desc').limit(limit).execute();
    return rows.map((r) => ({
      topic: r.topic, partition: Number(r.partition), oldOffset: r.old_offset === null ? null : Number(r.old_offset),
      newOffset: Number(r.new_offset), spec: r.spec, requestedBy: r.requested_by, executedAt: Number(r.executed_at),
    }));
  }

  /** Saves (or replaces) a named checkpoint of a group's offsets, in one transaction. */
  async saveCheckpoint(groupId: string, name: string, offsets: ReadonlyArray<TopicPartition & { offset: number }>, createdAt: number): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await tx.deleteFrom('offset_checkpoints').where('group_id', '=', groupId).where('name', '=', name).execute();
      if (offsets.length === 0) return;
      await tx.insertInto('offset_checkpoints').values(offsets.map((o) => ({
        group_id: groupId, name, topic: o.topic, partition: o.partition, offset: o.offset, created_at: createdAt,
      }))).execute();
    });
  }

  /** Every checkpoint of a group with its offsets, by name. */
  async listCheckpoints(groupId: string): Promise<Array<{ name: string; createdAt: number; offsets: Array<TopicPartition & { offset: number }> }>> {
    const rows = await this.db.selectFrom('offset_checkpoints').selectAll().where('group_id', '=', groupId)
      .orderBy('name').orderBy('topic').orderBy('partition').execute();
    const byName = new Map<string, { name: string; createdAt: number; offsets: Array<TopicPartition & { offset: number }> }>();
    for (const r of rows) {
      const entry = byName.get(r.name) ?? { name: r.name, createdAt: Number(r.created_at), offsets: [] };
      entry.offsets.push({ topic: r.topic, partition: Number(r.partition), offset: Number(r.offset) });
      byName.set(r.name, entry);
    }
    return [...byName.values()];
  }

  /**
   * Claims the catalog for the log `dataDirId` (a data directory's id, or `s3://BUCKET/PREFIX` for a log in object
   * storage) if no log has it yet (one statement: of two claims at once, one wins).
   * @returns the id of the log that has it now
   */
  async claimLogOwner(dataDirId: string): Promise<string> {
    await this.db.insertInto('log_owner').values({ singleton: 1, data_dir_id: dataDirId }).onConflict((oc) => oc.column('singleton').doNothing()).execute();
    return (await this.db.selectFrom('log_owner').select('data_dir_id').executeTakeFirstOrThrow()).data_dir_id;
  }

  /** The highest producer id issued so far, 0 if none. */
  async lastProducerId(): Promise<number> {
    const row = await this.db.selectFrom('producer_ids').select((eb) => eb.fn.max('producer_id').as('last')).executeTakeFirst();
    return Number(row?.last ?? 0);
  }

  /** Issues a new producer id (never reused). */
  async newProducerId(createdAt: number): Promise<number> {
    const row = await this.db.insertInto('producer_ids').values({ created_at: createdAt }).returning('producer_id').executeTakeFirstOrThrow();
    return Number(row.producer_id);
  }

  async close(): Promise<void> {
    await this.changes?.close();
    await this.db.destroy();
  }
}

/** A user as the catalog keeps it: its token only as an id, a salt and a hash. Times are ms since the epoch. */
export interface UserRecord {
  name: string;
  admin: boolean;
  tokenId: string;
  tokenSalt: string;
  tokenHash: string;
  /** The token's SCRAM-SHA-256 credential (security/scram.ts); null for a user made before SCRAM was served. */
  tokenScram: string | null;
  createdAt: number;
  rotatedAt: number | null;
}

function aclRow(acl: AclBinding): AclsTable {
  return {
    principal: acl.principal, resource_type: acl.resourceType, resource_name: acl.resourceName, pattern_type: acl.patternType,
    operation: acl.operation, permission: acl.permission,
  };
}

function toUser(row: Selectable<UsersTable>): UserRecord {
  return {
    name: row.name, admin: row.admin === 1, tokenId: row.token_id, tokenSalt: row.token_salt, tokenHash: row.token_hash, tokenScram: row.token_scram,
    createdAt: Number(row.created_at), rotatedAt: row.rotated_at === null ? null : Number(row.rotated_at),
  };
}

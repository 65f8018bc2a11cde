/**
 * The catalog: the relational store of topics (partition count, retention and cleanup settings), consumer
 * groups and subscriptions (group, topic, delivery mode, start policy). Low volume, relational queries,
 * integrity by foreign keys. Written against Kysely, so the same code runs on SQLite (embedded default,
 * see {@link openSqliteCatalog}) and PostgreSQL.
 */
import { Kysely, Migrator } from 'kysely';
import type { Dialect, MigrationProvider, Selectable } from 'kysely';
import { OnelogError } from '../protocol/errors.js';
import type { TopicConfig } from '../protocol/topic-config.js';
import type { DeliveryMode, StartPolicy } from '../protocol/types.js';
import { migrations } from './migrations.js';
import type { CatalogSchema, SubscriptionsTable, TopicsTable } from './schema.js';

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

/** A group's binding to a topic. */
export interface SubscriptionRecord {
  groupId: string;
  topic: string;
  deliveryMode: DeliveryMode;
  startPolicy: StartPolicy;
  /** ms since the epoch */
  createdAt: number;
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
  createdAt: Number(r.created_at),
});

const provider: MigrationProvider = { getMigrations: async () => migrations };

export class Catalog {
  private constructor(private readonly db: Kysely<CatalogSchema>) {}

  /**
   * Opens the catalog over a Kysely dialect and applies pending migrations.
   * @throws Error if a migration fails (the catalog is left at the last applied migration)
   */
  static async open(dialect: Dialect): Promise<Catalog> {
    const db = new Kysely<CatalogSchema>({ dialect });
    const { error } = await new Migrator({ db, provider }).migrateToLatest();
    if (error) {
      await db.destroy();
      throw error instanceof Error ? error : new Error(String(error));
    }
    return new Catalog(db);
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

  /** The group `groupId`, or undefined. */
  async getGroup(groupId: string): Promise<GroupRecord | undefined> {
    const row = await this.db.selectFrom('groups').selectAll().where('group_id', '=', groupId).executeTakeFirst();
    return row && { groupId: row.group_id, createdAt: Number(row.created_at) };
  }

  /** Every group, by id. */
  async listGroups(): Promise<GroupRecord[]> {
    const rows = await this.db.selectFrom('groups').selectAll().orderBy('group_id').execute();
    return rows.map((r) => ({ groupId: r.group_id, createdAt: Number(r.created_at) }));
  }

  /**
   * Creates the subscription of `groupId` to `topic` (and the group, if new), or updates its delivery mode
   * and start policy. One transaction.
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
        .values({
          group_id: sub.groupId,
          topic: sub.topic,
          delivery_mode: sub.deliveryMode,
          start_policy: sub.startPolicy,
          created_at: sub.createdAt,
        })
        .onConflict((oc) =>
          oc.columns(['group_id', 'topic']).doUpdateSet({ delivery_mode: sub.deliveryMode, start_policy: sub.startPolicy }),
        )
        .execute();
    });
    return (await this.getSubscription(sub.groupId, sub.topic))!;
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

  async close(): Promise<void> {
    await this.db.destroy();
  }
}

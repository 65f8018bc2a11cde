/** The catalog's topics (partition count, retention and cleanup settings) and their pending deletions. */
import type { Kysely, Selectable } from 'kysely';
import { OnelogError } from '../protocol/errors.js';
import type { TopicConfig } from '../protocol/topic-config.js';
import type { CatalogSchema, TopicsTable } from './schema.js';

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

export class TopicRepository {
  constructor(private readonly db: Kysely<CatalogSchema>) {}

  /**
   * Adds a topic.
   * @throws OnelogError `TOPIC_ALREADY_EXISTS`
   */
  async create(topic: TopicRecord): Promise<TopicRecord> {
    // One statement decides, so two concurrent creates cannot both pass a check and then collide.
    const inserted = await this.db
      .insertInto('topics')
      .values({ name: topic.name, partitions: topic.partitions, created_at: topic.createdAt, ...toColumns(topic) })
      .onConflict((oc) => oc.column('name').doNothing())
      .executeTakeFirst();
    if (inserted.numInsertedOrUpdatedRows === 0n) {
      const existing = await this.get(topic.name);
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
  async updateConfig(name: string, config: TopicConfig): Promise<void> {
    const result = await this.db.updateTable('topics').set(toColumns(config)).where('name', '=', name).executeTakeFirst();
    if (result.numUpdatedRows === 0n) throw new OnelogError('UNKNOWN_TOPIC', `topic ${name} does not exist`, { topic: name });
  }

  /** The topic named `name`, or undefined. */
  async get(name: string): Promise<TopicRecord | undefined> {
    const row = await this.db.selectFrom('topics').selectAll().where('name', '=', name).executeTakeFirst();
    return row && toTopic(row);
  }

  /** Every topic, by name. */
  async list(): Promise<TopicRecord[]> {
    return (await this.db.selectFrom('topics').selectAll().orderBy('name').execute()).map(toTopic);
  }

  /**
   * Deletes a topic and, in the same transaction, every group's subscription to it (by cascade), the pauses of
   * its partitions and its partitions' offsets in checkpoints, and records the deletion as pending until
   * {@link finishDeletion}: its files and committed offsets are removed after. Alerts and reset history stay.
   * @param at when, ms since the epoch
   */
  async delete(name: string, partitions: number, at: number): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await tx.insertInto('topic_deletions').values({ name, partitions, requested_at: at }).execute();
      await tx.deleteFrom('paused_partitions').where('topic', '=', name).execute();
      await tx.deleteFrom('offset_checkpoints').where('topic', '=', name).execute();
      await tx.deleteFrom('topics').where('name', '=', name).execute();
    });
  }

  /** Topic deletions whose files and committed offsets are still to be removed. */
  async listDeletions(): Promise<Array<{ name: string; partitions: number }>> {
    return this.db.selectFrom('topic_deletions').select(['name', 'partitions']).orderBy('name').execute();
  }

  /** Marks a topic deletion done: its files and committed offsets are gone. */
  async finishDeletion(name: string): Promise<void> {
    await this.db.deleteFrom('topic_deletions').where('name', '=', name).execute();
  }
}

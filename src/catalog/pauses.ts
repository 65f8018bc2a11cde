/** The catalog's paused partitions: those a group stopped reading until an explicit reset, with the error that paused each. */
import type { Kysely } from 'kysely';
import type { PartitionError, TopicPartition } from '../protocol/partitions.js';
import type { CatalogSchema } from './schema.js';

export class PauseRepository {
  constructor(private readonly db: Kysely<CatalogSchema>) {}

  /** Marks a partition paused for a group, with the error that paused it (replacing an earlier one). */
  async add(groupId: string, tp: TopicPartition, error: PartitionError, pausedAt: number): Promise<void> {
    await this.db
      .insertInto('paused_partitions')
      .values({ group_id: groupId, topic: tp.topic, partition: tp.partition, error: JSON.stringify(error), paused_at: pausedAt })
      .onConflict((oc) => oc.columns(['group_id', 'topic', 'partition']).doUpdateSet({ error: JSON.stringify(error), paused_at: pausedAt }))
      .execute();
  }

  /** Lifts a partition's pause (an executed reset does). */
  async remove(groupId: string, tp: TopicPartition): Promise<void> {
    await this.db.deleteFrom('paused_partitions')
      .where('group_id', '=', groupId).where('topic', '=', tp.topic).where('partition', '=', tp.partition).execute();
  }

  /** The group's paused partitions, keyed `topic/partition`, with the error that paused each. */
  async list(groupId: string): Promise<Map<string, PartitionError>> {
    const rows = await this.db.selectFrom('paused_partitions').selectAll().where('group_id', '=', groupId).execute();
    return new Map(rows.map((r) => [`${r.topic}/${Number(r.partition)}`, JSON.parse(r.error) as PartitionError]));
  }
}

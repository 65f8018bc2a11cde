/** The catalog's checkpoints: named copies of a group's offsets, to reset to later. */
import type { Kysely } from 'kysely';
import type { CheckpointDescription } from '../protocol/offsets.js';
import type { TopicPartition } from '../protocol/partitions.js';
import type { CatalogSchema } from './schema.js';

/** A checkpoint of the group it was listed for. */
type Checkpoint = Omit<CheckpointDescription, 'groupId'>;

export class CheckpointRepository {
  constructor(private readonly db: Kysely<CatalogSchema>) {}

  /** Saves (or replaces) a named checkpoint of a group's offsets, in one transaction. */
  async save(groupId: string, name: string, offsets: ReadonlyArray<TopicPartition & { offset: number }>, createdAt: number): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await tx.deleteFrom('offset_checkpoints').where('group_id', '=', groupId).where('name', '=', name).execute();
      if (offsets.length === 0) return;
      await tx.insertInto('offset_checkpoints').values(offsets.map((o) => ({
        group_id: groupId, name, topic: o.topic, partition: o.partition, offset: o.offset, created_at: createdAt,
      }))).execute();
    });
  }

  /** Every checkpoint of a group with its offsets, by name. */
  async list(groupId: string): Promise<Checkpoint[]> {
    const rows = await this.db.selectFrom('offset_checkpoints').selectAll().where('group_id', '=', groupId)
      .orderBy('name').orderBy('topic').orderBy('partition').execute();
    const byName = new Map<string, Checkpoint>();
    for (const r of rows) {
      const entry = byName.get(r.name) ?? { name: r.name, createdAt: Number(r.created_at), offsets: [] };
      entry.offsets.push({ topic: r.topic, partition: Number(r.partition), offset: Number(r.offset) });
      byName.set(r.name, entry);
    }
    return [...byName.values()];
  }
}

/** The catalog's history of executed offset resets. */
import type { Kysely } from 'kysely';
import type { OffsetResetRecord } from '../protocol/offsets.js';
import type { CatalogSchema } from './schema.js';

export class OffsetResetRepository {
  constructor(private readonly db: Kysely<CatalogSchema>) {}

  /** Records executed offset resets. */
  async record(groupId: string, resets: readonly OffsetResetRecord[]): Promise<void> {
    if (resets.length === 0) return;
    await this.db.insertInto('offset_resets').values(resets.map((r) => ({
      group_id: groupId, topic: r.topic, partition: r.partition, old_offset: r.oldOffset, new_offset: r.newOffset,
      spec: r.spec, requested_by: r.requestedBy, executed_at: r.executedAt,
    }))).execute();
  }

  /** The group's executed resets, most recent first. */
  async list(groupId: string, limit: number): Promise<OffsetResetRecord[]> {
    const rows = await this.db.selectFrom('offset_resets').selectAll().where('group_id', '=', groupId)
      .orderBy('id', 'desc').limit(limit).execute();
    return rows.map((r) => ({
      topic: r.topic, partition: Number(r.partition), oldOffset: r.old_offset === null ? null : Number(r.old_offset),
      newOffset: Number(r.new_offset), spec: r.spec, requestedBy: r.requested_by, executedAt: Number(r.executed_at),
    }));
  }
}

/** The catalog's record of dead-letter redrives and purges (docs/retries.md). */
import type { DeadLetterAction as ProtocolDeadLetterAction } from '../protocol/dead-letters.js';
import type { Kysely, Selectable } from 'kysely';
import type { CatalogSchema, DeadLetterActionsTable } from './schema.js';

/** An executed redrive or purge as the catalog keeps it, under its subscription (the API's shape, its topic apart). */
export type DeadLetterAction = Omit<ProtocolDeadLetterAction, 'topic'>;

const toAction = (r: Selectable<DeadLetterActionsTable>): DeadLetterAction => ({
  action: r.action, firstOffset: Number(r.first_offset), endOffset: Number(r.end_offset), records: Number(r.records),
  requestedBy: r.requested_by, executedAt: Number(r.executed_at),
});

export class DeadLetterActionRepository {
  constructor(private readonly db: Kysely<CatalogSchema>) {}

  /** Records a redrive or purge of a subscription's dead letters. */
  async record(groupId: string, topic: string, a: DeadLetterAction): Promise<void> {
    await this.db.insertInto('dead_letter_actions').values({
      group_id: groupId, topic, action: a.action, first_offset: a.firstOffset, end_offset: a.endOffset, records: a.records,
      requested_by: a.requestedBy, executed_at: a.executedAt,
    }).execute();
  }

  /** The group's dead-letter redrives and purges over every topic, most recent first. */
  async history(groupId: string, limit: number): Promise<Array<DeadLetterAction & { topic: string }>> {
    const rows = await this.db.selectFrom('dead_letter_actions').selectAll().where('group_id', '=', groupId).orderBy('id', 'desc').limit(limit).execute();
    return rows.map((r) => ({ topic: r.topic, ...toAction(r) }));
  }

  /** A subscription's dead-letter redrives and purges, oldest first. */
  async list(groupId: string, topic: string): Promise<DeadLetterAction[]> {
    const rows = await this.db.selectFrom('dead_letter_actions').selectAll().where('group_id', '=', groupId).where('topic', '=', topic)
      .orderBy('id').execute();
    return rows.map(toAction);
  }
}

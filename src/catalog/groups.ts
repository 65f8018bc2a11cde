/** The catalog's consumer groups and their Kafka configs. */
import type { Kysely, Selectable } from 'kysely';
import type { CatalogSchema, GroupsTable } from './schema.js';

/** A consumer group as the catalog keeps it. */
export interface GroupRecord {
  groupId: string;
  /** ms since the epoch */
  createdAt: number;
}

const toGroup = (r: Selectable<GroupsTable>): GroupRecord => ({ groupId: r.group_id, createdAt: Number(r.created_at) });

export class GroupRepository {
  constructor(private readonly db: Kysely<CatalogSchema>) {}

  /** The group `groupId`, or undefined. */
  async get(groupId: string): Promise<GroupRecord | undefined> {
    const row = await this.db.selectFrom('groups').selectAll().where('group_id', '=', groupId).executeTakeFirst();
    return row && toGroup(row);
  }

  /** The group's Kafka configs by name (migration 0018), none for a group that has none or does not exist. */
  async configs(groupId: string): Promise<Record<string, string>> {
    const row = await this.db.selectFrom('groups').select('configs').where('group_id', '=', groupId).executeTakeFirst();
    return row?.configs ? JSON.parse(row.configs) as Record<string, string> : {};
  }

  /** Replaces the group's Kafka configs, creating the group (with no subscription) if it does not exist. */
  async setConfigs(groupId: string, configs: Readonly<Record<string, string>>, now: number): Promise<void> {
    const json = Object.keys(configs).length === 0 ? null : JSON.stringify(configs);
    await this.db.insertInto('groups').values({ group_id: groupId, created_at: now, configs: json })
      .onConflict((oc) => oc.column('group_id').doUpdateSet({ configs: json })).execute();
  }

  /** Every group, by id. */
  async list(): Promise<GroupRecord[]> {
    return (await this.db.selectFrom('groups').selectAll().orderBy('group_id').execute()).map(toGroup);
  }

  /** Deletes a group and, by cascade, its subscriptions, pauses, alerts, reset history and checkpoints. */
  async delete(groupId: string): Promise<void> {
    await this.db.deleteFrom('groups').where('group_id', '=', groupId).execute();
  }
}

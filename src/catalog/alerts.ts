/**
 * The catalog's alerts (docs/monitoring.md): raised, resolved and acknowledged, kept as history; and the webhook sinks
 * they are POSTed to.
 */
import { sql } from 'kysely';
import type { Kysely, Selectable } from 'kysely';
import { OnelogError } from '../protocol/errors.js';
import type { AlertSink, GroupAlert } from '../protocol/monitoring-api.js';
import type { AlertSinksTable, CatalogSchema, GroupAlertsTable } from './schema.js';

const toAlert = (r: Selectable<GroupAlertsTable>): GroupAlert => ({
  id: Number(r.id), groupId: r.group_id, kind: r.kind, topic: r.topic, partition: Number(r.partition), message: r.message,
  context: JSON.parse(r.context) as Record<string, unknown>, createdAt: Number(r.created_at),
  resolvedAt: r.resolved_at === null ? null : Number(r.resolved_at),
  acknowledgedAt: r.acknowledged_at === null ? null : Number(r.acknowledged_at), acknowledgedBy: r.acknowledged_by,
});

const toSink = (r: Selectable<AlertSinksTable>): AlertSink => ({ id: Number(r.id), url: r.url, createdAt: Number(r.created_at) });

export class AlertRepository {
  constructor(private readonly db: Kysely<CatalogSchema>) {}

  /**
   * Records an alert (born resolved for a one-off; {@link raise} raises one) and answers it with its id.
   * @throws for an unresolved alert about a subject that has one already (the index `group_alerts_one_open`)
   */
  async add(alert: Omit<GroupAlert, 'id' | 'acknowledgedAt' | 'acknowledgedBy'>): Promise<GroupAlert> {
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
  async raise(alert: Omit<GroupAlert, 'id' | 'acknowledgedAt' | 'acknowledgedBy' | 'resolvedAt'>): Promise<{ alert: GroupAlert; raised: boolean }> {
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
  async resolve(id: number, resolvedAt: number): Promise<GroupAlert | undefined> {
    const row = await this.db.updateTable('group_alerts').set({ resolved_at: resolvedAt }).where('id', '=', id).where('resolved_at', 'is', null)
      .returningAll().executeTakeFirst();
    return row && toAlert(row);
  }

  /** Records who acknowledged an alert, and when (a first acknowledgement stays); the alert, or undefined if there is none. */
  async acknowledge(id: number, by: string, at: number): Promise<GroupAlert | undefined> {
    await this.db.updateTable('group_alerts').set({ acknowledged_at: at, acknowledged_by: by }).where('id', '=', id)
      .where('acknowledged_at', 'is', null).execute();
    const row = await this.db.selectFrom('group_alerts').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toAlert(row);
  }

  /** Alerts, most recent first: only unresolved ones with `active`, only a group's with `groupId`. */
  async list(filter: { groupId?: string; active?: boolean; limit: number }): Promise<GroupAlert[]> {
    let query = this.db.selectFrom('group_alerts').selectAll();
    if (filter.groupId !== undefined) query = query.where('group_id', '=', filter.groupId);
    if (filter.active) query = query.where('resolved_at', 'is', null);
    return (await query.orderBy('id', 'desc').limit(filter.limit).execute()).map(toAlert);
  }
}

export class AlertSinkRepository {
  constructor(private readonly db: Kysely<CatalogSchema>) {}

  /** Adds an alert sink (the existing one for a URL already added, also when two add it at once). */
  async add(url: string, createdAt: number): Promise<AlertSink> {
    const existing = () => this.db.selectFrom('alert_sinks').selectAll().where('url', '=', url).executeTakeFirst();
    // Looked up first, so adding a URL again uses no id; the insert's conflict rule covers two adds at once.
    let row = await existing();
    if (row === undefined) {
      await this.db.insertInto('alert_sinks').values({ url, created_at: createdAt }).onConflict((oc) => oc.column('url').doNothing()).execute();
      row = (await existing())!;
    }
    return toSink(row);
  }

  /** Every alert sink, by id. */
  async list(): Promise<AlertSink[]> {
    return (await this.db.selectFrom('alert_sinks').selectAll().orderBy('id').execute()).map(toSink);
  }

  /** Removes an alert sink; false if there was none with that id. */
  async remove(id: number): Promise<boolean> {
    const result = await this.db.deleteFrom('alert_sinks').where('id', '=', id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }
}

/**
 * Alerts with history (docs/monitoring.md): a row in the catalog per episode, raised once when a condition
 * starts (never again while it holds), resolved when it clears, acknowledged by a person. An alert is named
 * by its group, kind, topic and partition, and the catalog holds at most one unresolved alert per subject; the
 * open ones are also kept in memory, so the evaluator compares against them without reading the catalog. Each raise and resolve is logged and handed to the
 * {@link AlertNotifier}. Catalog writes go one at a time, in order.
 */
import type { Catalog } from '../catalog/catalog.js';
import type { Clock } from '../common/clock.js';
import { OnelogError } from '../protocol/errors.js';
import type { AlertListRequest, GroupAlert, GroupAlertKind } from '../protocol/monitoring-api.js';
import { checkInteger } from '../protocol/validate.js';
import type { Logger } from '../common/logger.js';
import type { AlertNotifier } from './alert-notifier.js';

/** What an alert is about. */
export interface AlertSubject {
  groupId: string;
  kind: GroupAlertKind;
  topic: string;
  partition: number;
}

/** An alert as the code that raises it describes it. */
export interface AlertInput extends AlertSubject {
  message: string;
  context: Record<string, unknown>;
}

/** What happened to an alert, as {@link Alerts.onChange} tells it. */
export type AlertChange = 'raised' | 'resolved' | 'acknowledged';

/** The key of an alert's subject. */
function alertKey(s: AlertSubject): string {
  return `${s.groupId}\0${s.kind}\0${s.topic}\0${s.partition}`;
}

export class Alerts {
  /** Unresolved alerts by {@link alertKey}. */
  private readonly open = new Map<string, GroupAlert>();
  /**
   * The same per group, by {@link alertKey} (a commit evaluates only groups with one; an evaluation of a group
   * compares against its own); a group with none has no entry.
   */
  private readonly openPerGroup = new Map<string, Map<string, GroupAlert>>();
  private writes: Promise<unknown> = Promise.resolve();
  private readonly changeListeners: Array<(change: AlertChange, alert: GroupAlert) => void> = [];

  constructor(
    private readonly catalog: Catalog,
    private readonly clock: Clock,
    private readonly logger: Logger,
    readonly notifier: AlertNotifier,
  ) {}

  /**
   * Calls `listener` with each alert this broker raises, records, resolves (its group deleted too) or has
   * acknowledged, once the catalog holds it. It must not throw.
   */
  onChange(listener: (change: AlertChange, alert: GroupAlert) => void): void {
    this.changeListeners.push(listener);
  }

  private changed(change: AlertChange, alert: GroupAlert): void {
    for (const listener of this.changeListeners) listener(change, alert);
  }

  /** Loads the unresolved alerts and the notification sinks. */
  async start(): Promise<void> {
    for (const alert of await this.catalog.alerts.list({ active: true, limit: Number.MAX_SAFE_INTEGER })) this.opened(alert);
    await this.notifier.start();
  }

  /** The unresolved alerts. */
  active(): IterableIterator<GroupAlert> {
    return this.open.values();
  }

  /** The group's unresolved alerts. */
  activeOf(groupId: string): IterableIterator<GroupAlert> {
    return (this.openPerGroup.get(groupId) ?? new Map<string, GroupAlert>()).values();
  }

  /** The groups with an unresolved alert. */
  groupsWithOpen(): IterableIterator<string> {
    return this.openPerGroup.keys();
  }

  /** Whether the group has an unresolved alert. */
  hasOpen(groupId: string): boolean {
    return this.openPerGroup.has(groupId);
  }

  /** Whether an alert about `subject` is unresolved. */
  isOpen(subject: AlertSubject): boolean {
    return this.open.has(alertKey(subject));
  }

  /** The unresolved alert about `subject`, if there is one. */
  openAbout(subject: AlertSubject): GroupAlert | undefined {
    return this.open.get(alertKey(subject));
  }

  /**
   * Raises an alert unless one about the same subject is unresolved: known here, or in the catalog (in cluster mode
   * another broker may have raised it; the catalog's conditional insert raises it once whichever brokers raise it
   * at once, and only the one that raised it notifies). Answers the new alert, or null.
   */
  raise(input: AlertInput): Promise<GroupAlert | null> {
    return this.write(async () => {
      if (this.open.has(alertKey(input))) return null;
      const { alert, raised } = await this.catalog.alerts.raise({ ...input, createdAt: this.clock.now() });
      this.opened(alert);
      if (!raised) return null; // another broker's, notified by it
      this.logger.warn({ alertId: alert.id, groupId: alert.groupId, kind: alert.kind, topic: alert.topic, partition: alert.partition }, alert.message);
      this.notifier.notify({ event: 'raised', alert });
      this.changed('raised', alert);
      return alert;
    });
  }

  /** Records a one-off alert (an event, not a condition): born resolved, notified as raised. */
  record(input: AlertInput): Promise<GroupAlert> {
    return this.write(async () => {
      const now = this.clock.now();
      const alert = await this.catalog.alerts.add({ ...input, createdAt: now, resolvedAt: now });
      this.logger.warn({ alertId: alert.id, groupId: alert.groupId, kind: alert.kind, topic: alert.topic, partition: alert.partition }, alert.message);
      this.notifier.notify({ event: 'raised', alert });
      this.changed('raised', alert);
      return alert;
    });
  }

  /**
   * Brings the unresolved alerts known here in line with the catalog's, which other brokers of a cluster write too:
   * those raised elsewhere are taken in, those resolved (or whose group was deleted) elsewhere forgotten. Nothing is
   * notified: the broker that raised or resolved an alert notified it.
   */
  reload(): Promise<void> {
    return this.write(async () => {
      const active = await this.catalog.alerts.list({ active: true, limit: Number.MAX_SAFE_INTEGER });
      const ids = new Set(active.map((a) => a.id));
      for (const [key, alert] of [...this.open]) if (!ids.has(alert.id)) this.closed(key, alert.groupId);
      for (const alert of active) this.opened(alert);
    });
  }

  /** Resolves the unresolved alert about `subject`, if there is one. */
  resolve(subject: AlertSubject): Promise<void> {
    if (!this.open.has(alertKey(subject))) return Promise.resolve();
    return this.write(async () => {
      const key = alertKey(subject);
      const open = this.open.get(key);
      if (!open) return;
      this.closed(key, open.groupId);
      const alert = await this.catalog.alerts.resolve(open.id, this.clock.now());
      if (!alert) return; // its group was deleted meanwhile
      this.logger.info({ alertId: alert.id, groupId: alert.groupId, kind: alert.kind, topic: alert.topic, partition: alert.partition }, `resolved: ${alert.message}`);
      this.notifier.notify({ event: 'resolved', alert });
      this.changed('resolved', alert);
    });
  }

  /**
   * Records who acknowledged an alert (the first acknowledgement stays: a second answers the alert unchanged).
   * @throws OnelogError `NOT_FOUND` if there is no alert with that id, `INVALID_REQUEST` for a bad id or an empty
   *   or over-long `by` (1 to 200 characters)
   */
  acknowledge(id: number, by: string): Promise<GroupAlert> {
    checkInteger(id, 'id', 1);
    if (typeof by !== 'string' || by.trim() === '' || by.length > 200) {
      throw new OnelogError('INVALID_REQUEST', `who acknowledges must be 1 to 200 characters, got ${JSON.stringify(by)}`, { id });
    }
    return this.write(async () => {
      const alert = await this.catalog.alerts.acknowledge(id, by, this.clock.now());
      if (!alert) throw new OnelogError('NOT_FOUND', `there is no alert ${id}; onelog alerts list shows them`, { id });
      if (this.open.has(alertKey(alert))) this.opened(alert);
      this.logger.info({ alertId: id, by }, 'alert acknowledged');
      this.changed('acknowledged', alert);
      return alert;
    });
  }

  /**
   * Alerts, most recent first.
   * @throws OnelogError `INVALID_REQUEST` for a limit outside 1 to 10,000
   */
  list(request: AlertListRequest = {}): Promise<GroupAlert[]> {
    const limit = checkInteger(request.limit ?? 100, 'limit', 1, 10_000);
    return this.catalog.alerts.list({ limit, ...(request.active ? { active: true } : {}), ...(request.groupId !== undefined ? { groupId: request.groupId } : {}) });
  }

  /**
   * Forgets a deleted group's unresolved alerts (the catalog deleted their rows): each is notified as resolved,
   * so a receiver is not left with an alert that never ends.
   */
  deleteGroup(groupId: string): void {
    const now = this.clock.now();
    for (const [key, alert] of this.openPerGroup.get(groupId) ?? []) {
      this.open.delete(key);
      this.logger.info({ alertId: alert.id, groupId, kind: alert.kind }, `resolved (group deleted): ${alert.message}`);
      const resolved = { ...alert, resolvedAt: now };
      this.notifier.notify({ event: 'resolved', alert: resolved });
      this.changed('resolved', resolved);
    }
    this.openPerGroup.delete(groupId);
  }

  /** Resolves every unresolved alert about a topic (it was deleted), notified as any resolution. */
  async deleteTopic(topic: string): Promise<void> {
    await Promise.all([...this.open.values()].filter((a) => a.topic === topic).map((a) => this.resolve(a)));
  }

  /** Records `alert` as unresolved (or its new version, acknowledged). */
  private opened(alert: GroupAlert): void {
    const key = alertKey(alert);
    this.open.set(key, alert);
    let ofGroup = this.openPerGroup.get(alert.groupId);
    if (ofGroup === undefined) this.openPerGroup.set(alert.groupId, (ofGroup = new Map()));
    ofGroup.set(key, alert);
  }

  /** Forgets the unresolved alert under `key`. */
  private closed(key: string, groupId: string): void {
    this.open.delete(key);
    const ofGroup = this.openPerGroup.get(groupId);
    ofGroup?.delete(key);
    if (ofGroup?.size === 0) this.openPerGroup.delete(groupId);
  }

  /** Resolves once every write queued so far is done. */
  settled(): Promise<void> {
    return this.writes.then(() => undefined, () => undefined);
  }

  private write<T>(task: () => Promise<T>): Promise<T> {
    const next = this.writes.then(task, task);
    this.writes = next.catch(() => undefined);
    return next;
  }
}

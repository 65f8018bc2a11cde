/**
 * Evaluates the conditions behind alerts for every group's partitions (docs/monitoring.md) and raises or
 * resolves them through {@link Alerts}: `retention-headroom` (at risk), `data-lost`, `consumer-stalled`, and
 * the resolution of `offset-out-of-range` once a reset lifts the pause (the pause raises it). Runs on a timer
 * of the injected clock, and whenever the broker asks (after a commit, a retention run, a delete or a reset);
 * requests arriving while a run is under way are merged into the next run. Each full run also feeds the
 * health history the console charts.
 */
import type { Catalog } from '../catalog/catalog.js';
import type { Clock } from '../clock.js';
import type { OffsetStore } from '../offsets/offset-store.js';
import type { GroupAlertKind, PartitionHealth } from '../protocol/monitoring-api.js';
import type { LogManager } from '../storage/log-manager.js';
import type { Logger } from '../storage/logger.js';
import type { AlertSubject, Alerts } from './alerts.js';
import { alertKey } from './alerts.js';
import type { HealthReader } from './health-reader.js';

/** What a run evaluates: every group (empty), a group's partitions, or every group's partitions of a topic. */
export interface EvaluationScope {
  groupId?: string;
  topic?: string;
}

/** The kinds the evaluator owns (raises and resolves). */
const EVALUATED: readonly GroupAlertKind[] = ['retention-headroom', 'data-lost', 'consumer-stalled', 'offset-out-of-range'];

/** Where a full run reports each partition's health (the console's history). */
export type HealthSampler = (groupId: string, topic: string, partition: number, health: PartitionHealth, at: number) => void;

export interface AlertEvaluatorSources {
  catalog: Catalog;
  offsets: OffsetStore;
  logs: LogManager;
  health: HealthReader;
  alerts: Alerts;
  clock: Clock;
  logger: Logger;
  sample?: HealthSampler;
}

interface Queued {
  scopes: EvaluationScope[];
  done: Promise<void>;
  resolve: () => void;
}

export class AlertEvaluator {
  private running = false;
  /** Ends when the run under way does. */
  private current: Promise<void> = Promise.resolve();
  private queued: Queued | null = null;
  private readonly stopping = new AbortController();

  constructor(private readonly s: AlertEvaluatorSources) {}

  /** Evaluates `scope` (every group by default); resolves once a run covering it ended. Never rejects: failures are logged. */
  evaluate(scope: EvaluationScope = {}): Promise<void> {
    if (this.queued === null) {
      let resolve!: () => void;
      const done = new Promise<void>((r) => (resolve = r));
      this.queued = { scopes: [], done, resolve };
    }
    this.queued.scopes.push(scope);
    const { done } = this.queued;
    if (!this.running) void this.drain();
    return done;
  }

  /** Resolves once no evaluation is queued or running. */
  async idle(): Promise<void> {
    while (this.queued !== null || this.running) await (this.queued?.done ?? this.current);
  }

  /** Evaluates every group every `intervalMs` on the clock (0 = never on a schedule), until {@link stop}. */
  async run(intervalMs: number): Promise<void> {
    if (intervalMs <= 0) return;
    while (!this.stopping.signal.aborted) {
      await this.s.clock.sleep(intervalMs, this.stopping.signal);
      if (!this.stopping.signal.aborted) await this.evaluate();
    }
  }

  stop(): void {
    this.stopping.abort();
  }

  private async drain(): Promise<void> {
    this.running = true;
    while (this.queued !== null) {
      const batch = this.queued;
      this.queued = null;
      this.current = this.runOnce(batch.scopes).catch((err: unknown) => {
        this.s.logger.warn({ err: (err as Error).message }, 'alert evaluation failed');
      });
      await this.current;
      batch.resolve();
    }
    this.running = false;
  }

  private async runOnce(scopes: readonly EvaluationScope[]): Promise<void> {
    const { catalog, offsets, logs, health, alerts, clock } = this.s;
    const full = scopes.some((s) => s.groupId === undefined && s.topic === undefined);
    const groups = new Set(scopes.flatMap((s) => (s.groupId !== undefined ? [s.groupId] : [])));
    const topics = new Set(scopes.flatMap((s) => (s.topic !== undefined && s.groupId === undefined ? [s.topic] : [])));
    const seen = new Set<string>();
    const now = clock.now();
    for (const { groupId } of await catalog.listGroups()) {
      const subs = (await catalog.listSubscriptions(groupId)).filter((sub) => full || groups.has(groupId) || topics.has(sub.topic));
      if (subs.length === 0) continue;
      const committed = new Map((await offsets.list(groupId)).map((o) => [`${o.topic}/${o.partition}`, o]));
      const paused = await catalog.listPauses(groupId);
      for (const sub of subs) {
        if (!(await catalog.getTopic(sub.topic))) continue;
        for (const log of logs.offsets(sub.topic)) {
          const c = committed.get(`${sub.topic}/${log.partition}`);
          const pause = paused.get(`${sub.topic}/${log.partition}`);
          const a = health.assess(groupId, sub.topic, sub, log, c, pause !== undefined);
          const subject = (kind: GroupAlertKind): AlertSubject => ({ groupId, kind, topic: sub.topic, partition: log.partition });
          for (const kind of EVALUATED) seen.add(alertKey(subject(kind)));
          const where = `${sub.topic}/${log.partition}`;
          const h = a.health;
          await this.hold(subject('data-lost'), h.lostRecords > 0, () => ({
            message: `group ${groupId} lost ${h.lostRecords} records of ${where}: its committed offset ${c?.offset} is below the log start ` +
              `${log.logStartOffset} (retention or a delete removed them before it read them); ` +
              `resume it from the log start with: onelog offsets reset ${groupId} --topic ${sub.topic} --partition ${log.partition} --to-earliest --execute`,
            context: { committedOffset: c?.offset, logStartOffset: log.logStartOffset, lostRecords: h.lostRecords },
          }));
          await this.hold(subject('retention-headroom'), a.atRisk, () => ({
            message: `group ${groupId} is about to lose records of ${where}: ${headroomText(h)} before retention deletes its first unread record ` +
              `(warn below ${sub.headroomWarnRatio} of retention)`,
            context: { headroomMs: h.headroomMs, headroomBytes: h.headroomBytes, timeLagMs: h.timeLagMs, lag: h.lag, headroomWarnRatio: sub.headroomWarnRatio },
          }));
          await this.hold(subject('consumer-stalled'), a.stalled, () => ({
            message: `group ${groupId} has not committed ${where} for over ${sub.stallMs} ms while ${h.unreadRecords} records wait`,
            context: { lag: h.lag, unreadRecords: h.unreadRecords, commitTimestamp: c?.commitTimestamp ?? null, stallMs: sub.stallMs },
          }));
          if (pause === undefined) await alerts.resolve(subject('offset-out-of-range'));
          this.s.sample?.(groupId, sub.topic, log.partition, h, now);
        }
      }
    }
    // Alerts about partitions no longer evaluated (a subscription gone) resolve too, on a full run.
    if (full) {
      for (const alert of [...alerts.active()]) {
        if (EVALUATED.includes(alert.kind) && !seen.has(alertKey(alert))) await alerts.resolve(alert);
      }
    }
  }

  /** Raises the alert about `subject` while `holds`, resolves it once not. */
  private async hold(subject: AlertSubject, holds: boolean, describe: () => { message: string; context: Record<string, unknown> }): Promise<void> {
    if (holds === this.s.alerts.isOpen(subject)) return;
    if (holds) await this.s.alerts.raise({ ...subject, ...describe() });
    else await this.s.alerts.resolve(subject);
  }
}

/** `12 s` / `2048 bytes` / both, of the headroom left. */
function headroomText(h: PartitionHealth): string {
  const parts = [
    ...(h.headroomMs !== null ? [`${Math.round(h.headroomMs / 1000)} s`] : []),
    ...(h.headroomBytes !== null ? [`${h.headroomBytes} bytes`] : []),
  ];
  return parts.join(' or ');
}

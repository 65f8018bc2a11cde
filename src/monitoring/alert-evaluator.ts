/**
 * Evaluates the conditions behind alerts for every group's partitions (docs/monitoring.md) and raises or
 * resolves them through {@link Alerts}: `retention-headroom` (at risk), `data-lost`, `consumer-stalled`, and
 * the resolution of `offset-out-of-range` once a reset lifts the pause (the pause raises it). Runs on a timer
 * of the injected clock, and whenever the broker asks (after a commit, a retention run, a delete or a reset);
 * requests arriving while a run is under way are merged into the next run. Each full run also feeds the
 * health history the console charts.
 */
import type { Clock } from '../clock.js';
import type { GroupAlertKind, PartitionHealth } from '../protocol/monitoring-api.js';
import type { Logger } from '../logger.js';
import type { AlertSubject, Alerts } from './alerts.js';
import type { GroupPartitionHealth, HealthReader } from './health-reader.js';

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
  /** The run under way, and the one asked for since (it starts when that ends). */
  private running: Queued | null = null;
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

  /**
   * Resolves once the evaluations asked for so far ended (not those asked for later: a stream of commits does not
   * hold it up).
   */
  idle(): Promise<void> {
    return (this.queued ?? this.running)?.done ?? Promise.resolve();
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
    while (this.queued !== null) {
      const batch = this.queued;
      this.running = batch;
      this.queued = null;
      await this.runOnce(batch.scopes).catch((err: unknown) => {
        this.s.logger.warn({ err: (err as Error).message }, 'alert evaluation failed');
      });
      batch.resolve();
    }
    this.running = null;
  }

  private async runOnce(scopes: readonly EvaluationScope[]): Promise<void> {
    const { health, alerts, clock } = this.s;
    const full = scopes.some((s) => s.groupId === undefined && s.topic === undefined);
    const groups = new Set(scopes.flatMap((s) => (s.groupId !== undefined ? [s.groupId] : [])));
    const topics = new Set(scopes.flatMap((s) => (s.topic !== undefined && s.groupId === undefined ? [s.topic] : [])));
    /** `group \0 topic \0 partition` of every partition evaluated (full runs). */
    const seen = new Set<string>();
    const now = clock.now();
    for await (const partitions of health.walk((s) => full || groups.has(s.groupId) || topics.has(s.topic))) {
      for (const p of partitions) {
        const a = p.assessment;
        if (full) seen.add(`${p.groupId}\0${p.sub.topic}\0${p.offsets.partition}`);
        this.s.sample?.(p.groupId, p.sub.topic, p.offsets.partition, a.health, now);
        // Most partitions hold no condition in a group with no open alert: nothing to compare.
        if (a.health.lostRecords === 0 && !a.atRisk && !a.stalled && !alerts.hasOpen(p.groupId)) continue;
        const subject = (kind: GroupAlertKind): AlertSubject => ({ groupId: p.groupId, kind, topic: p.sub.topic, partition: p.offsets.partition });
        const conditions: Array<[GroupAlertKind, boolean, () => AlertText]> = [
          ['data-lost', a.health.lostRecords > 0, () => dataLost(p)],
          ['retention-headroom', a.atRisk, () => atRisk(p)],
          ['consumer-stalled', a.stalled, () => stalled(p)],
        ];
        for (const [kind, holds, describe] of conditions) {
          const s = subject(kind);
          if (holds === alerts.isOpen(s)) continue;
          if (holds) await alerts.raise({ ...s, ...describe() });
          else await alerts.resolve(s);
        }
        if (!p.paused) await alerts.resolve(subject('offset-out-of-range')); // the pause raised it
      }
    }
    // Alerts about partitions no longer evaluated (a subscription gone) resolve too, on a full run.
    if (full) {
      for (const alert of [...alerts.active()]) {
        if (EVALUATED.includes(alert.kind) && !seen.has(`${alert.groupId}\0${alert.topic}\0${alert.partition}`)) await alerts.resolve(alert);
      }
    }
  }

}

/** What an alert says: its message, and the facts behind it as context. */
type AlertText = { message: string; context: Record<string, unknown> };

function dataLost({ groupId, sub, offsets, committed, assessment: { health: h } }: GroupPartitionHealth): AlertText {
  return {
    message: `group ${groupId} lost ${h.lostRecords} records of ${sub.topic}/${offsets.partition}: its committed offset ${committed?.offset} ` +
      `is below the log start ${offsets.logStartOffset} (retention or a delete removed them before it read them); resume it from the log ` +
      `start with: onelog offsets reset ${groupId} --topic ${sub.topic} --partition ${offsets.partition} --to-earliest --execute`,
    context: { committedOffset: committed?.offset, logStartOffset: offsets.logStartOffset, lostRecords: h.lostRecords },
  };
}

function atRisk({ groupId, sub, offsets, assessment: { health: h } }: GroupPartitionHealth): AlertText {
  const left = [
    ...(h.headroomMs !== null ? [h.headroomMs < 0 ? `overdue by ${Math.ceil(-h.headroomMs / 1000)} s` : `${Math.floor(h.headroomMs / 1000)} s left`] : []),
    ...(h.headroomBytes !== null ? [h.headroomBytes < 0 ? `over by ${-h.headroomBytes} bytes` : `${h.headroomBytes} bytes left`] : []),
  ].join(', ');
  return {
    message: `group ${groupId} is about to lose records of ${sub.topic}/${offsets.partition} (${left}): retention deletes its first unread ` +
      `record then (warn below ${sub.headroomWarnRatio} of retention)`,
    context: { headroomMs: h.headroomMs, headroomBytes: h.headroomBytes, timeLagMs: h.timeLagMs, lag: h.lag, headroomWarnRatio: sub.headroomWarnRatio },
  };
}

function stalled({ groupId, sub, offsets, committed, assessment: { health: h } }: GroupPartitionHealth): AlertText {
  return {
    message: `group ${groupId} has not committed ${sub.topic}/${offsets.partition} for over ${sub.stallMs} ms while ${h.unreadRecords} records wait`,
    context: { lag: h.lag, unreadRecords: h.unreadRecords, commitTimestamp: committed?.commitTimestamp ?? null, stallMs: sub.stallMs },
  };
}

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
import type { Logger } from '../storage/logger.js';
import type { AlertSubject, Alerts } from './alerts.js';
import { alertKey } from './alerts.js';
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
    const { health, alerts, clock } = this.s;
    const full = scopes.some((s) => s.groupId === undefined && s.topic === undefined);
    const groups = new Set(scopes.flatMap((s) => (s.groupId !== undefined ? [s.groupId] : [])));
    const topics = new Set(scopes.flatMap((s) => (s.topic !== undefined && s.groupId === undefined ? [s.topic] : [])));
    const seen = new Set<string>();
    const now = clock.now();
    for await (const p of health.walk((s) => full || groups.has(s.groupId) || topics.has(s.topic))) {
      const subject = (kind: GroupAlertKind): AlertSubject => ({ groupId: p.groupId, kind, topic: p.sub.topic, partition: p.offsets.partition });
      for (const kind of EVALUATED) seen.add(alertKey(subject(kind)));
      await this.hold(subject('data-lost'), p.assessment.health.lostRecords > 0, () => dataLost(p));
      await this.hold(subject('retention-headroom'), p.assessment.atRisk, () => atRisk(p));
      await this.hold(subject('consumer-stalled'), p.assessment.stalled, () => stalled(p));
      if (!p.paused) await alerts.resolve(subject('offset-out-of-range'));
      this.s.sample?.(p.groupId, p.sub.topic, p.offsets.partition, p.assessment.health, now);
    }
    // Alerts about partitions no longer evaluated (a subscription gone) resolve too, on a full run.
    if (full) {
      for (const alert of [...alerts.active()]) {
        if (EVALUATED.includes(alert.kind) && !seen.has(alertKey(alert))) await alerts.resolve(alert);
      }
    }
  }

  /** Raises the alert about `subject` while `holds`, resolves it once not. */
  private async hold(subject: AlertSubject, holds: boolean, describe: () => AlertText): Promise<void> {
    if (holds === this.s.alerts.isOpen(subject)) return;
    if (holds) await this.s.alerts.raise({ ...subject, ...describe() });
    else await this.s.alerts.resolve(subject);
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
    ...(h.headroomMs !== null ? [`${Math.round(h.headroomMs / 1000)} s`] : []),
    ...(h.headroomBytes !== null ? [`${h.headroomBytes} bytes`] : []),
  ].join(' or ');
  return {
    message: `group ${groupId} is about to lose records of ${sub.topic}/${offsets.partition}: ${left} left before retention deletes its first ` +
      `unread record (warn below ${sub.headroomWarnRatio} of retention)`,
    context: { headroomMs: h.headroomMs, headroomBytes: h.headroomBytes, timeLagMs: h.timeLagMs, lag: h.lag, headroomWarnRatio: sub.headroomWarnRatio },
  };
}

function stalled({ groupId, sub, offsets, committed, assessment: { health: h } }: GroupPartitionHealth): AlertText {
  return {
    message: `group ${groupId} has not committed ${sub.topic}/${offsets.partition} for over ${sub.stallMs} ms while ${h.unreadRecords} records wait`,
    context: { lag: h.lag, unreadRecords: h.unreadRecords, commitTimestamp: committed?.commitTimestamp ?? null, stallMs: sub.stallMs },
  };
}

/**
 * Evaluates the conditions behind alerts for every group's partitions (docs/monitoring.md) and raises or
 * resolves them through {@link Alerts}: `retention-headroom` (at risk), `data-lost`, `consumer-stalled`,
 * `storage-corruption`, and the resolution of `offset-out-of-range` once a reset lifts the pause (the pause raises it). Runs on a timer
 * of the injected clock (in cluster mode on one broker at a time: the monitor's gate), whenever the broker asks (after a commit, a retention run, a delete, a reset
 * or before a describe), and at the moment an evaluation found a condition due (`dueAt` of partition-health.ts): an
 * alert is raised when its condition starts to hold, not at the timer's next pass.
 * Work is queued and done a group at a time ({@link EvaluationQueue}: callers' work ahead of the timer's, requests
 * for a group queued and not started merged), in slices of at most `slicePartitions` partitions with a turn of the event
 * loop between slices: an evaluation of every group of a large broker (1,000 groups x 1,000 partitions) goes on
 * beside produce, fetch and commit requests instead of holding the single event loop for its whole length, and a
 * describe of one group waits for that group's evaluations only ({@link AlertEvaluator.settle}). Each run also
 * feeds the health history the console charts.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Clock } from '../common/clock.js';
import type { HealthSeriesKey } from '../catalog/health-history.js';
import type { GroupAlertKind, HealthSample } from '../protocol/monitoring-api.js';
import type { Logger } from '../common/logger.js';
import { corruptBatchMessage } from '../log/segments/segment.js';
import type { CorruptBatch } from '../log/partition.js';
import type { AlertSubject, Alerts } from './alerts.js';
import { EvaluationQueue } from './evaluation-queue.js';
import type { GroupWork } from './evaluation-queue.js';
import { DEFAULT_SLICE_PARTITIONS } from './health-reader.js';
import type { GroupPartitionHealth, HealthReader } from './health-reader.js';

/** What a run evaluates: every group (empty), a group's partitions, or every group's partitions of a topic. */
export interface EvaluationScope {
  groupId?: string;
  topic?: string;
}

/** The kinds the evaluator owns (raises and resolves). */
const EVALUATED: readonly GroupAlertKind[] = ['retention-headroom', 'data-lost', 'consumer-stalled', 'offset-out-of-range', 'storage-corruption'];

/**
 * The longest a due evaluation's wake-up sleeps, ms: one due later wakes at this bound and sleeps again (a timer
 * of Node.js fires at once past 2^31 - 1 ms).
 */
const MAX_WAKEUP_SLEEP_MS = 24 * 3_600_000;

/** After records arrive in a topic no group subscribes to, how long before an arrival there is looked at again, ms. */
const UNSUBSCRIBED_ARRIVAL_PAUSE_MS = 1000;

/** An evaluation of every group that took at least this long is logged (info), ms of wall time. */
const LOG_RUNS_FROM_MS = 1000;

/** Where a run reports each partition's health (the console's history). */
export type HealthSampler = (key: HealthSeriesKey, sample: HealthSample) => void;

/** A group partition's health at `at` as the history keeps it. */
function sampleOf(p: GroupPartitionHealth, at: number): HealthSample {
  const { lag, timeLagMs, headroomMs, headroomBytes } = p.assessment.health;
  return { at, lag, timeLagMs, headroomMs, headroomBytes, committedOffset: p.committed?.offset ?? null };
}

export interface AlertEvaluatorSources {
  health: HealthReader;
  alerts: Alerts;
  clock: Clock;
  logger: Logger;
  sample?: HealthSampler;
  /**
   * Most group partitions assessed in one turn of the event loop (each may read its log), partitions, >= 1.
   * @default {@link DEFAULT_SLICE_PARTITIONS}
   */
  slicePartitions?: number;
}

export class AlertEvaluator {
  private readonly queue = new EvaluationQueue((work) => this.evaluateGroup(work));
  /** Requests for many groups still listing them (a settle waits for the listing, to see their work queued). */
  private readonly listing = new Set<Promise<unknown>>();
  private readonly stopping = new AbortController();
  private readonly slicePartitions: number;
  /** Per group, the wake-up that evaluates it when its earliest condition is due, and when that is (ms since the epoch). */
  private readonly wakeups = new Map<string, { at: number; cancel: AbortController }>();
  /** Topics whose arrival of records has its evaluation pending ({@link recordsArrived}). */
  private readonly arrivals = new Set<string>();
  /** Partitions assessed, and the longest slice (ms of wall time), since the last evaluation of every group began. */
  private stats = { partitions: 0, longestSliceMs: 0 };

  constructor(private readonly s: AlertEvaluatorSources) {
    this.slicePartitions = s.slicePartitions ?? DEFAULT_SLICE_PARTITIONS;
  }

  /**
   * Evaluates `scope` (every group by default); resolves once every group it covers was evaluated after this call.
   * Never rejects: failures are logged.
   * @param requested false for the timer's runs, which go after what callers asked for
   */
  evaluate(scope: EvaluationScope = {}, requested = true): Promise<void> {
    if (scope.groupId !== undefined) return this.queue.add(scope.groupId, null, requested);
    return this.evaluateGroups(scope.topic ?? null, requested);
  }

  /**
   * Resolves once the evaluations of `groupId` asked for so far ended (those of other groups are not waited for;
   * one queued for the group is run now, see {@link EvaluationQueue.settle}).
   */
  async settle(groupId: string): Promise<void> {
    await Promise.allSettled(this.listing);
    await this.queue.settle(groupId);
  }

  /**
   * Resolves once the evaluations callers asked for so far ended, not the timer's (a stream of commits does not hold
   * it up: later requests are not waited for).
   */
  async settleRequested(): Promise<void> {
    await Promise.allSettled(this.listing);
    await this.queue.settleRequested();
  }

  /**
   * Evaluates every group every `intervalMs` on the clock (0 = never on a schedule), until {@link stop}: a
   * scheduled pass, the next one an interval after it ended.
   * @param pass `mayRun` is asked before each pass (a pass it answers false to is skipped; it must not reject);
   *   `ended` is told each pass's outcome once it ended: true when it evaluated, false when skipped
   */
  async run(intervalMs: number, pass: { mayRun?: () => Promise<boolean>; ended?: (ran: boolean) => void } = {}): Promise<void> {
    if (intervalMs <= 0) return;
    while (!this.stopping.signal.aborted) {
      await this.s.clock.sleep(intervalMs, this.stopping.signal);
      if (this.stopping.signal.aborted) return;
      const ran = pass.mayRun === undefined || await pass.mayRun();
      if (ran && !this.stopping.signal.aborted) await this.evaluate({}, false);
      if (!this.stopping.signal.aborted) pass.ended?.(ran);
    }
  }

  /**
   * Told that records were appended to `topic`. A group that had read everything there has no condition due; so the
   * first arrival since the topic's last such evaluation evaluates its groups once the shortest `stallMs` of its
   * subscriptions passed (the first moment one of them may be stalled), which finds each group's next due condition
   * and wakes it then. At most one pending per topic: the arrivals meanwhile cost a lookup in a set.
   */
  recordsArrived(topic: string): void {
    if (this.arrivals.has(topic) || this.stopping.signal.aborted) return;
    this.arrivals.add(topic);
    const { clock } = this.s;
    const arrivedAt = clock.now();
    void (async () => {
      try {
        const stallMs = await this.s.health.shortestStallMs(topic);
        await clock.sleep(arrivedAt + (stallMs ?? UNSUBSCRIBED_ARRIVAL_PAUSE_MS) - clock.now(), this.stopping.signal);
        this.arrivals.delete(topic); // what arrives during the evaluation is looked at again
        if (stallMs !== null && !this.stopping.signal.aborted) await this.evaluateGroups(topic, false);
      } catch (err) {
        this.s.logger.warn({ topic, err: (err as Error).message }, 'could not look at the subscriptions of a topic records arrived in');
      } finally {
        this.arrivals.delete(topic);
      }
    })();
  }

  /** Stops the timer, the wake-ups and the queue; resolves once the evaluation under way ended (at the end of its slice). */
  async stop(): Promise<void> {
    this.stopping.abort();
    for (const wakeup of this.wakeups.values()) wakeup.cancel.abort();
    this.wakeups.clear();
    await this.queue.stop();
  }

  /** Queues every group (with an open alert, or in the catalog) for `topic`'s subscriptions or all of them. */
  private async evaluateGroups(topic: string | null, requested: boolean): Promise<void> {
    const started = performance.now();
    const listed = this.s.health.groupIds();
    this.listing.add(listed);
    let groups: string[];
    try {
      groups = await listed;
    } catch (err) {
      this.s.logger.warn({ err: (err as Error).message }, 'alert evaluation failed: the groups could not be listed');
      return;
    } finally {
      this.listing.delete(listed);
    }
    // A group deleted meanwhile may still have alerts open: its run resolves them.
    const all = topic === null ? [...new Set([...groups, ...this.s.alerts.groupsWithOpen()])] : groups;
    if (topic === null) this.stats = { partitions: 0, longestSliceMs: 0 };
    await Promise.all(all.map((groupId) => this.queue.add(groupId, topic, requested)));
    const ms = performance.now() - started;
    if (topic === null && ms >= LOG_RUNS_FROM_MS) {
      this.s.logger.info({
        groups: all.length, partitionsAssessed: this.stats.partitions, ms: Math.round(ms),
        longestSliceMs: Math.round(this.stats.longestSliceMs), slicePartitions: this.slicePartitions, requested,
      }, 'evaluated the alerts of every group (partitions assessed and the longest slice count every evaluation meanwhile)');
    }
  }

  /** One group's evaluation, a slice at a time with a turn of the event loop after each. Never rejects. */
  private async evaluateGroup(work: GroupWork): Promise<void> {
    const { health, alerts, clock } = this.s;
    const { groupId } = work;
    /** `topic \0 partition` of every partition evaluated, when the group's every subscription is. */
    const seen = work.everyTopic ? new Set<string>() : null;
    const now = clock.now();
    let dueAt = Infinity;
    try {
      let sliceStarted = performance.now();
      for await (const partitions of health.group(groupId, (s) => work.everyTopic || work.topics.has(s.topic), this.slicePartitions)) {
        for (const p of partitions) {
          seen?.add(`${p.sub.topic}\0${p.offsets.partition}`);
          this.s.sample?.({ groupId, topic: p.sub.topic, partition: p.offsets.partition }, sampleOf(p, now));
          await this.evaluatePartition(p);
          dueAt = Math.min(dueAt, p.assessment.dueAt ?? Infinity);
        }
        this.stats.partitions += partitions.length;
        this.stats.longestSliceMs = Math.max(this.stats.longestSliceMs, performance.now() - sliceStarted);
        await nextTurn();
        if (this.stopping.signal.aborted) return;
        sliceStarted = performance.now();
      }
      // Alerts about partitions no longer evaluated (a subscription or a topic gone) resolve too.
      if (seen !== null) {
        for (const alert of [...alerts.activeOf(groupId)]) {
          if (EVALUATED.includes(alert.kind) && !seen.has(`${alert.topic}\0${alert.partition}`)) await alerts.resolve(alert);
        }
      }
      this.wakeUp(groupId, dueAt, work.everyTopic);
    } catch (err) {
      this.s.logger.warn({ groupId, err: (err as Error).message }, 'alert evaluation failed');
    }
  }

  /**
   * Evaluates the group at `at` (ms since the epoch; Infinity: no condition due). An evaluation of every subscription
   * of the group replaces the wake-up set before; one of some topics only brings it forward.
   */
  private wakeUp(groupId: string, at: number, everyTopic: boolean): void {
    const current = this.wakeups.get(groupId);
    if (current !== undefined && (current.at === at || (!everyTopic && current.at < at))) return;
    current?.cancel.abort();
    this.wakeups.delete(groupId);
    if (at === Infinity || this.stopping.signal.aborted) return;
    const wakeup = { at, cancel: new AbortController() };
    this.wakeups.set(groupId, wakeup);
    const { clock } = this.s;
    const { signal } = wakeup.cancel;
    void (async () => {
      while (!signal.aborted && clock.now() < at) await clock.sleep(Math.min(at - clock.now(), MAX_WAKEUP_SLEEP_MS), signal);
      if (signal.aborted) return;
      this.wakeups.delete(groupId);
      await this.queue.add(groupId, null, false);
    })();
  }

  /** Raises and resolves the alerts of one group partition as its health says. */
  private async evaluatePartition(p: GroupPartitionHealth): Promise<void> {
    const { alerts, health } = this.s;
    const a = p.assessment;
    // Most partitions hold no condition in a group with no open alert: nothing to compare.
    if (a.health.lostRecords === 0 && !a.atRisk && !a.stalled && p.corruptBatch === undefined && !alerts.hasOpen(p.groupId)) return;
    const subject = (kind: GroupAlertKind): AlertSubject => ({ groupId: p.groupId, kind, topic: p.sub.topic, partition: p.offsets.partition });
    await this.evaluateCorruption(p, subject('storage-corruption'));
    const conditions: Array<[GroupAlertKind, boolean, () => AlertText]> = [
      ['data-lost', a.health.lostRecords > 0, () => dataLost(p)],
      ['retention-headroom', a.atRisk, () => atRisk(p)],
      ['consumer-stalled', a.stalled, () => stalled(p)],
    ];
    const changes = conditions.filter(([kind, holds]) => holds !== alerts.isOpen(subject(kind)));
    if (changes.length > 0) {
      // The group's commits were read before its first slice: one made since is newer than this assessment, and
      // the evaluation after it decides (a commit evaluates a group with an open alert; the timer every group).
      const now = await health.committedNow(p.groupId, p.sub.topic, p.offsets.partition);
      if (now?.offset !== p.committed?.offset || now?.commitTimestamp !== p.committed?.commitTimestamp) return;
    }
    for (const [kind, holds, describe] of changes) {
      const s = subject(kind);
      if (holds) await alerts.raise({ ...s, ...describe() });
      else await alerts.resolve(s);
    }
    if (!p.paused) await alerts.resolve(subject('offset-out-of-range')); // the pause raised it
  }

  /**
   * A `storage-corruption` alert is raised while the partition holds a corrupt batch found at or after its log
   * start, and resolved once the log start passes the batch it names (a delete-records, or retention): not when
   * a restart forgets what was found, since the batch is still on disk until then.
   */
  private async evaluateCorruption(p: GroupPartitionHealth, subject: AlertSubject): Promise<void> {
    const { alerts } = this.s;
    const open = alerts.openAbout(subject);
    if (open !== undefined && !(Number(open.context.offset) >= p.offsets.logStartOffset)) await alerts.resolve(subject);
    if (p.corruptBatch !== undefined && !alerts.isOpen(subject)) await alerts.raise({ ...subject, ...corrupted(p, p.corruptBatch) });
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

function corrupted({ groupId, sub, offsets }: GroupPartitionHealth, batch: CorruptBatch): AlertText {
  return {
    message: `${sub.topic}/${offsets.partition}, which group ${groupId} reads, holds a corrupt batch: ${corruptBatchMessage(batch)}`,
    context: { file: batch.segment, position: batch.position, offset: batch.offset, reason: batch.reason, logStartOffset: offsets.logStartOffset },
  };
}

function stalled({ groupId, sub, offsets, committed, assessment: { health: h } }: GroupPartitionHealth): AlertText {
  return {
    message: `group ${groupId} has not committed ${sub.topic}/${offsets.partition} for over ${sub.stallMs} ms while ${h.unreadRecords} records wait`,
    context: { lag: h.lag, unreadRecords: h.unreadRecords, commitTimestamp: committed?.commitTimestamp ?? null, stallMs: sub.stallMs },
  };
}

/**
 * Watching consumers, put together for the broker (docs/monitoring.md): the health reader (lag, time lag,
 * retention headroom), alerts with their notification sinks, the evaluator that raises and resolves them on a
 * timer and on request, and the history the console charts (each group partition's health, each topic's rates),
 * stored in the catalog for 24 hours.
 *
 * In cluster mode (docs/cluster.md) the brokers share the catalog, and the timer's passes run on one broker at a
 * time: the holder of the `job:alerts` lease ({@link MonitorOptions.scheduleGate}). Evaluations asked for by a
 * commit, a reset, a retention run, a delete or `evaluateAlerts` run on whichever broker is asked; the catalog
 * raises an alert once whichever brokers raise it at once, and resolves it once (so each transition is notified
 * once), and each timer pass, run or skipped, first takes in the alerts and sinks other brokers added or ended.
 */
import type { Catalog } from '../catalog/catalog.js';
import type { Clock } from '../common/clock.js';
import type { OffsetStore } from '../offsets/offset-store.js';
import { HISTORY_HOURS } from '../protocol/monitoring-api.js';
import type { AlertListRequest, AlertSink, GroupAlert, HistoryRange, PartitionHistory, TopicRatePoint } from '../protocol/monitoring-api.js';
import { checkInteger } from '../protocol/validate.js';
import type { Logs } from '../log/logs.js';
import type { Logger } from '../common/logger.js';
import { AlertEvaluator } from './alert-evaluator.js';
import type { EvaluationScope } from './alert-evaluator.js';
import { AlertNotifier } from './alert-notifier.js';
import type { AlertNotifierOptions } from './alert-notifier.js';
import { Alerts } from './alerts.js';
import { DEFAULT_HISTORY_MAX_SERIES, HealthHistory } from './health-history.js';
import { DEFAULT_SLICE_PARTITIONS, HealthReader } from './health-reader.js';
import { TopicRates } from './topic-rates.js';

/**
 * Asked with the timer's interval (ms) whether this broker may run the timer's pass now (see
 * {@link MonitorOptions.scheduleGate}). @throws whatever it fails with: the pass is skipped, logged
 */
export type ScheduleGate = (intervalMs: number) => Promise<boolean>;

/** Options of the monitor. */
export interface MonitorOptions {
  /**
   * How often every group's partitions are evaluated for alerts and sampled for the history, ms; 0 = only on
   * commits, retention runs, deletes, resets and describes (the history then holds the samples those took). @default 30000
   */
  alertCheckIntervalMs?: number;
  /** Delivery of alert notifications. @default see AlertNotifierOptions */
  notifications?: AlertNotifierOptions;
  /**
   * Most group partitions the health history keeps, over every group, 1 to 1,000,000 (docs/monitoring.md says what
   * each costs: about 1,440 rows of the catalog). @default 1000
   */
  historyMaxSeries?: number;
  /**
   * Most group partitions an evaluation assesses (each may read its log) before it lets the event loop turn, so
   * requests are served between slices, partitions, 1 to 1,000,000. @default 100
   */
  evaluationSlicePartitions?: number;
  /**
   * Asked before each pass of the timer whether this broker may run it; a pass it answers false to (or that it
   * fails for, logged) is skipped, and the next is asked again an interval later. Given in cluster mode, where the
   * broker passes the `job:alerts` lease's gate (`Placement.jobGate`, src/cluster/placement.ts: held for three
   * intervals and renewed at each pass): one broker at a time evaluates on schedule, another takes over within three
   * intervals of its end (at its next pass when it closes). At each pass, run or skipped, the unresolved alerts and the notification sinks
   * are first reloaded from the catalog, which other brokers share. Evaluations asked for (commits, resets,
   * retention runs, deletes, {@link Monitor.evaluate}) are not gated.
   * @default none: every pass runs (the embedded default, one broker)
   */
  scheduleGate?: ScheduleGate | undefined;
  /**
   * Told of each pass of the timer once it ended: `ran` true when it evaluated every group, false when the
   * {@link scheduleGate} skipped it (for diagnostics and tests). Must not throw.
   * @default none
   */
  onScheduledPass?: ((pass: { ran: boolean }) => void) | undefined;
}

export class Monitor {
  readonly health: HealthReader;
  readonly alerts: Alerts;
  /** Each group partition's health, a sample per minute for 24 hours (the console's charts). */
  readonly history: HealthHistory;
  /** Each topic's produce and consume rates, per minute for 24 hours; the broker counts its traffic into it. */
  readonly rates: TopicRates;
  private readonly evaluator: AlertEvaluator;
  private readonly intervalMs: number;
  private readonly scheduleGate: ScheduleGate | undefined;
  private readonly onScheduledPass: MonitorOptions['onScheduledPass'];

  private constructor(catalog: Catalog, offsets: OffsetStore, logs: Logs, private readonly clock: Clock, private readonly logger: Logger, options: MonitorOptions) {
    this.intervalMs = options.alertCheckIntervalMs ?? 30_000;
    this.scheduleGate = options.scheduleGate;
    this.onScheduledPass = options.onScheduledPass;
    this.health = new HealthReader(catalog, offsets, logs, clock);
    this.alerts = new Alerts(catalog, clock, logger, new AlertNotifier(catalog, clock, logger, options.notifications));
    this.history = new HealthHistory(catalog, clock, logger,
      checkInteger(options.historyMaxSeries ?? DEFAULT_HISTORY_MAX_SERIES, 'historyMaxSeries', 1, 1_000_000));
    this.rates = new TopicRates(catalog, clock, logger);
    this.evaluator = new AlertEvaluator({
      health: this.health, alerts: this.alerts, clock, logger,
      sample: (key, sample) => this.history.record(key, sample),
      slicePartitions: checkInteger(options.evaluationSlicePartitions ?? DEFAULT_SLICE_PARTITIONS, 'evaluationSlicePartitions', 1, 1_000_000),
    });
  }

  /**
   * Loads the unresolved alerts, the notification sinks and the group partitions the history keeps.
   * @throws OnelogError `INVALID_REQUEST` for an option out of its bounds
   */
  static async open(catalog: Catalog, offsets: OffsetStore, logs: Logs, clock: Clock, logger: Logger, options: MonitorOptions = {}): Promise<Monitor> {
    const monitor = new Monitor(catalog, offsets, logs, clock, logger, options);
    await monitor.alerts.start();
    await monitor.history.load();
    return monitor;
  }

  /**
   * Starts evaluating on the timer (the first pass after one interval), each pass only if the
   * {@link MonitorOptions.scheduleGate} lets it.
   */
  start(): void {
    const gate = this.scheduleGate;
    void this.evaluator.run(this.intervalMs, {
      ...(gate === undefined ? {} : { mayRun: () => this.mayRunScheduled(gate) }),
      ended: (ran) => this.onScheduledPass?.({ ran }),
    });
  }

  /**
   * Whether the gate lets this pass run. Either way, first takes in what other brokers changed in the shared
   * catalog: the alerts they raised or resolved, the sinks they added or removed (a broker that does not hold the
   * lease still evaluates what it is asked to, against every broker's alerts, and notifies every sink). Never rejects.
   */
  private async mayRunScheduled(gate: ScheduleGate): Promise<boolean> {
    try {
      const mayRun = await gate(this.intervalMs);
      await Promise.all([this.alerts.reload(), this.alerts.notifier.reloadSinks()]);
      return mayRun;
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'skipped a scheduled alert evaluation: could not take its job lease or read the alerts');
      return false;
    }
  }

  /** Evaluates the alerts of `scope` now; resolves when done (never rejects). */
  evaluate(scope: EvaluationScope = {}): Promise<void> {
    return this.evaluator.evaluate(scope);
  }

  /** Told that records were appended to `topic` (the produce path): see {@link AlertEvaluator.recordsArrived}. */
  recordsArrived(topic: string): void {
    this.evaluator.recordsArrived(topic);
  }

  /**
   * Evaluates one group's alerts now, ahead of the queue (as a describe computes its states: a state with an alert
   * has it raised before the describe answers); resolves once done, its alert writes included. Never rejects.
   */
  async evaluateGroupNow(groupId: string): Promise<void> {
    const evaluated = this.evaluator.evaluate({ groupId });
    await this.settled(groupId);
    await evaluated;
  }

  /**
   * Resolves once the evaluations asked for so far, and the alert writes queued so far, are done: with `groupId`,
   * the evaluations of that group only, the timer's included (one queued is run now); without, those callers
   * asked for (commits, resets, retention runs, deletes, `evaluate`), not the timer's.
   */
  async settled(groupId?: string): Promise<void> {
    if (groupId !== undefined) await this.evaluator.settle(groupId);
    else await this.evaluator.settleRequested();
    await this.alerts.settled();
  }

  /** @see Alerts.list; after the evaluations asked for so far ({@link settled}, of the group if one is given) */
  async listAlerts(request: AlertListRequest = {}): Promise<GroupAlert[]> {
    await this.settled(request.groupId);
    return this.alerts.list(request);
  }

  /** @see Alerts.acknowledge */
  acknowledgeAlert(id: number, by: string): Promise<GroupAlert> {
    return this.alerts.acknowledge(id, by);
  }

  /** @see AlertNotifier.addSink */
  addAlertSink(url: string): Promise<AlertSink> {
    return this.alerts.notifier.addSink(url);
  }

  listAlertSinks(): AlertSink[] {
    return this.alerts.notifier.listSinks();
  }

  /** @see AlertNotifier.removeSink */
  removeAlertSink(id: number): Promise<void> {
    return this.alerts.notifier.removeSink(id);
  }

  /**
   * A group's health samples per partition over `range`, each with its drain estimate (see {@link HealthHistory.of}).
   * @returns the range's start (ms since the epoch), the time between samples (ms) and the partitions
   * @throws OnelogError `INVALID_REQUEST` for hours not an integer from 1 to 24
   */
  async groupHistory(groupId: string, range: HistoryRange = {}): Promise<{ fromMs: number; stepMs: number; partitions: PartitionHistory[] }> {
    const fromMs = this.rangeStart(range);
    return { fromMs, ...await this.history.of(groupId, fromMs) };
  }

  /**
   * A topic's produce and consume rates per minute over `range` (see {@link TopicRates.history}).
   * @returns the range's start (ms since the epoch) and the points
   * @throws OnelogError `INVALID_REQUEST` for hours not an integer from 1 to 24
   */
  async topicHistory(topic: string, range: HistoryRange = {}): Promise<{ fromMs: number; points: TopicRatePoint[] }> {
    const fromMs = this.rangeStart(range);
    return { fromMs, points: await this.rates.history(topic, fromMs) };
  }

  /** Forgets what it holds of a deleted group (the catalog deleted its alerts); its history is deleted in the background. */
  deleteGroup(groupId: string): void {
    this.health.deleteGroup(groupId);
    this.alerts.deleteGroup(groupId);
    void this.history.deleteGroup(groupId);
  }

  /** Forgets what it holds of a deleted topic, its history included, and resolves its alerts. */
  async deleteTopic(topic: string): Promise<void> {
    this.health.deleteTopic(topic);
    await Promise.all([this.history.deleteTopic(topic), this.rates.deleteTopic(topic)]);
    await this.alerts.deleteTopic(topic);
  }

  /**
   * Stops the timer, the evaluations (at the end of the slice under way) and the notifications; waits for catalog
   * writes under way, and writes the history waiting in memory.
   */
  async stop(): Promise<void> {
    await this.evaluator.stop();
    this.alerts.notifier.stop();
    await this.alerts.settled();
    await Promise.all([this.history.flush(), this.rates.flush()]);
  }

  /** The start of `range` on the clock, ms since the epoch. @throws OnelogError `INVALID_REQUEST` for bad hours */
  private rangeStart(range: HistoryRange): number {
    return this.clock.now() - checkInteger(range.hours ?? HISTORY_HOURS, 'hours', 1, HISTORY_HOURS) * 3_600_000;
  }
}

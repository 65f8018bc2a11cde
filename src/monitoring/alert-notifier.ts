/**
 * Tells people about alerts: each raise and resolve is POSTed as JSON ({@link AlertNotification}) to every
 * sink (`onelog alerts notify --webhook URL`), in order per sink, retried with backoff until the sink answers
 * 2xx. Never blocks the broker: events queue in memory per sink (at most `maxQueued`; beyond it the oldest is
 * dropped, and logged), and are lost on a restart (the catalog keeps every alert and its history).
 */
import { backoff } from '../common/backoff.js';
import type { BackoffPolicy } from '../common/backoff.js';
import type { Catalog } from '../catalog/catalog.js';
import type { Clock } from '../common/clock.js';
import { postBatch } from '../security/webhook-post.js';
import { OutboundPolicy } from '../security/outbound.js';
import { OnelogError } from '../protocol/errors.js';
import { checkInteger } from '../protocol/validate.js';
import type { AlertNotification, AlertSink } from '../protocol/monitoring-api.js';
import type { Logger } from '../common/logger.js';

/** How notifications are delivered. */
export interface AlertNotifierOptions {
  /** Wait after each failed POST: doubles from initialMs to maxMs. @default 1,000 to 60,000 ms */
  backoff?: BackoffPolicy;
  /** A POST without an answer this long fails, ms. @default 10000 */
  timeoutMs?: number;
  /** Notifications waiting per sink before the oldest is dropped. @default 10000 */
  maxQueued?: number;
  /** Where sinks may be (`serve --webhook-allow-private`). @default public addresses only */
  outbound?: OutboundPolicy;
}

const DEFAULTS: Required<AlertNotifierOptions> = {
  backoff: { initialMs: 1000, maxMs: 60_000 }, timeoutMs: 10_000, maxQueued: 10_000, outbound: new OutboundPolicy(),
};

interface SinkQueue {
  sink: AlertSink;
  queue: AlertNotification[];
  running: boolean;
  stop: AbortController;
}

export class AlertNotifier {
  private readonly sinks = new Map<number, SinkQueue>();
  private readonly options: Required<AlertNotifierOptions>;

  constructor(
    private readonly catalog: Catalog,
    private readonly clock: Clock,
    private readonly logger: Logger,
    options: AlertNotifierOptions = {},
  ) {
    this.options = { ...DEFAULTS, ...options };
  }

  /** Loads the sinks from the catalog. */
  async start(): Promise<void> {
    for (const sink of await this.catalog.alertSinks.list()) this.sinks.set(sink.id, newQueue(sink));
  }

  /**
   * Brings the sinks in line with the catalog's (in cluster mode another broker adds and removes them): a sink added
   * elsewhere gets the events from now on; one removed elsewhere gets no more, its queue dropped.
   */
  async reloadSinks(): Promise<void> {
    const sinks = await this.catalog.alertSinks.list();
    const ids = new Set(sinks.map((s) => s.id));
    for (const [id, q] of this.sinks) {
      if (ids.has(id)) continue;
      q.stop.abort();
      this.sinks.delete(id);
    }
    for (const sink of sinks) if (!this.sinks.has(sink.id)) this.sinks.set(sink.id, newQueue(sink));
  }

  /**
   * Adds a sink (or answers the one already added for `url`); it gets the events from now on.
   * @throws OnelogError `INVALID_REQUEST` unless `url` is an absolute http(s) URL, `FORBIDDEN` for a private address
   *   when the outbound policy refuses them
   */
  async addSink(url: string): Promise<AlertSink> {
    this.options.outbound.check(url, 'url');
    const sink = await this.catalog.alertSinks.add(url, this.clock.now());
    if (!this.sinks.has(sink.id)) this.sinks.set(sink.id, newQueue(sink));
    return redacted(sink);
  }

  /** The sinks, a password in a URL shown as `***`. */
  listSinks(): AlertSink[] {
    return [...this.sinks.values()].map((q) => redacted(q.sink));
  }

  /**
   * Removes a sink; notifications still queued for it are dropped.
   * @throws OnelogError `NOT_FOUND` if there is no sink with that id, `INVALID_REQUEST` for an id below 1
   */
  async removeSink(id: number): Promise<void> {
    checkInteger(id, 'id', 1);
    if (!(await this.catalog.alertSinks.remove(id))) {
      throw new OnelogError('NOT_FOUND', `there is no alert sink ${id}; onelog alerts notify --list shows them`, { id });
    }
    this.sinks.get(id)?.stop.abort();
    this.sinks.delete(id);
  }

  /** Queues a notification for every sink, and returns at once. */
  notify(notification: AlertNotification): void {
    for (const q of this.sinks.values()) {
      q.queue.push(notification);
      if (q.queue.length > this.options.maxQueued) {
        const dropped = q.queue.shift()!;
        this.logger.warn({ url: q.sink.url, alertId: dropped.alert.id, event: dropped.event }, 'alert sink is too far behind: dropped its oldest notification');
      }
      if (!q.running) void this.pump(q);
    }
  }

  /** Notifications not yet delivered, over every sink (for tests and diagnostics). */
  get pending(): number {
    return [...this.sinks.values()].reduce((sum, q) => sum + q.queue.length, 0);
  }

  /** Stops delivering; what is queued is dropped. */
  stop(): void {
    for (const q of this.sinks.values()) q.stop.abort();
  }

  /** Delivers a sink's queue in order, each notification until it is acknowledged. */
  private async pump(q: SinkQueue): Promise<void> {
    q.running = true;
    let failures = 0;
    while (q.queue.length > 0 && !q.stop.signal.aborted) {
      const next = q.queue[0]!;
      const ctrl = new AbortController();
      const onStop = () => ctrl.abort();
      q.stop.signal.addEventListener('abort', onStop, { once: true });
      const outcome = await postBatch(q.sink.url, JSON.stringify(next), { 'onelog-alert-id': String(next.alert.id) }, this.options.timeoutMs, ctrl, this.options.outbound);
      q.stop.signal.removeEventListener('abort', onStop);
      if (outcome.ok) {
        if (q.queue[0] === next) q.queue.shift();
        failures = 0;
        continue;
      }
      failures++;
      this.logger.warn({
        url: q.sink.url, alertId: next.alert.id, event: next.event, attempt: failures,
        ...(outcome.status !== undefined ? { status: outcome.status } : {}), ...(outcome.error ? { err: outcome.error } : {}),
      }, 'alert notification failed; retrying');
      await backoff(this.clock, failures, this.options.backoff, q.stop.signal);
    }
    q.running = false;
  }
}

/** The sink as answered to clients: a password in its URL replaced by `***` (it stays stored, for the POSTs). */
function redacted(sink: AlertSink): AlertSink {
  const url = new URL(sink.url);
  if (url.password === '') return sink;
  url.password = '***';
  return { ...sink, url: url.toString() };
}

function newQueue(sink: AlertSink): SinkQueue {
  return { sink, queue: [], running: false, stop: new AbortController() };
}

/**
 * Each topic's produce and consume rates (docs/monitoring.md, "Console: charts that last"), in records/s and bytes/s,
 * computed here alone: the broker counts what the `onelog_produced_*` and `onelog_fetched_*` metrics count (records
 * appended and their batches' bytes; records answered to fetches and their bytes) per topic and minute, adds each
 * minute's counts to the catalog's (summed over the brokers sharing it), and a minute's rate is its count / 60 s.
 * Kept 24 hours. Counts wait in memory until their minute ended, a read or a stop ({@link HistoryBuffer}).
 */
import type { Catalog } from '../catalog/catalog.js';
import type { TopicTraffic } from '../catalog/topic-traffic.js';
import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import { HISTORY_STEP_MS, RATE_WINDOW_MS } from '../protocol/monitoring-api.js';
import type { TopicRatePoint } from '../protocol/monitoring-api.js';
import { HistoryBuffer, minuteOf } from './history-buffer.js';

/** Rates from the counts of the `spanMs` starting at `traffic.minute` (default: one minute). */
export function ratesOf(traffic: TopicTraffic, spanMs = HISTORY_STEP_MS): TopicRatePoint {
  const perSec = (n: number) => n / (spanMs / 1000);
  return {
    at: traffic.minute, produceRecordsPerSec: perSec(traffic.producedRecords), produceBytesPerSec: perSec(traffic.producedBytes),
    consumeRecordsPerSec: perSec(traffic.fetchedRecords), consumeBytesPerSec: perSec(traffic.fetchedBytes),
  };
}

export class TopicRates {
  private readonly buffer: HistoryBuffer<TopicTraffic>;

  /** @param catalog where the counts are kept @param clock the minutes' clock (the broker's) */
  constructor(private readonly catalog: Catalog, private readonly clock: Clock, logger: Logger) {
    this.buffer = new HistoryBuffer<TopicTraffic>({
      what: 'topic rates', write: (batch) => catalog.topicTraffic.add(batch), prune: (beforeMs) => catalog.topicTraffic.prune(beforeMs),
    }, clock, logger);
  }

  /** Counts records appended to `topic` and their record batches' bytes. */
  produced(topic: string, records: number, bytes: number): void {
    const t = this.current(topic);
    t.producedRecords += records;
    t.producedBytes += bytes;
  }

  /** Counts records of `topic` answered to a fetch and their bytes. */
  fetched(topic: string, records: number, bytes: number): void {
    const t = this.current(topic);
    t.fetchedRecords += records;
    t.fetchedBytes += bytes;
  }

  /**
   * A topic's rates per minute from the minute holding `fromMs` to the last that ended (the current one is not
   * complete), oldest first; a minute without traffic has zeros. Writes what waits first.
   */
  async history(topic: string, fromMs: number): Promise<TopicRatePoint[]> {
    await this.buffer.flush();
    const from = minuteOf(fromMs);
    const to = minuteOf(this.clock.now());
    const counted = new Map((await this.catalog.topicTraffic.of(topic, from, to)).map((t) => [t.minute, t]));
    const points: TopicRatePoint[] = [];
    for (let minute = from; minute < to; minute += HISTORY_STEP_MS) points.push(ratesOf(counted.get(minute) ?? noTraffic(topic, minute)));
    return points;
  }

  /**
   * Each topic's rates over the last `windowMs` of complete minutes (a multiple of a minute; default
   * {@link RATE_WINDOW_MS}, 5 minutes), by topic; a topic without traffic then is absent. Writes what waits first.
   */
  async recent(windowMs = RATE_WINDOW_MS): Promise<Map<string, TopicRatePoint>> {
    await this.buffer.flush();
    const to = minuteOf(this.clock.now());
    return new Map((await this.catalog.topicTraffic.totals(to - windowMs, to)).map((t) => [t.topic, ratesOf(t, windowMs)]));
  }

  /** Writes every count waiting (at a stop). Never rejects. */
  flush(): Promise<void> {
    return this.buffer.flush();
  }

  /** Forgets a deleted topic: its counts waiting, and (after the writes queued) those stored. Never rejects. */
  deleteTopic(topic: string): Promise<void> {
    return this.buffer.forget((t) => t.topic === topic, () => this.catalog.topicTraffic.deleteTopic(topic));
  }

  /** The topic's counts of the current minute. */
  private current(topic: string): TopicTraffic {
    return this.buffer.current(topic, (minute) => noTraffic(topic, minute));
  }
}

/** A minute's counts before any traffic. */
const noTraffic = (topic: string, minute: number): TopicTraffic =>
  ({ topic, minute, producedRecords: 0, producedBytes: 0, fetchedRecords: 0, fetchedBytes: 0 });

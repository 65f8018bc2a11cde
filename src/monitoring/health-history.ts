/**
 * The health history of groups' partitions (docs/monitoring.md, "Console: charts that last"): lag, time lag,
 * retention headroom and the committed offset, one sample per minute per group partition (the last the evaluations
 * took in that minute), stored in the catalog for 24 hours so a restart keeps it and, in cluster mode, every broker
 * answers it. Bounded: at most `maxSeries` group partitions over every group (a partition beyond is not kept until
 * pruning frees room: a series without a sample for 24 hours is deleted), 1,440 samples each. Samples wait in memory
 * until their minute ended, a read or a stop ({@link HistoryBuffer}).
 */
import type { Catalog } from '../catalog/catalog.js';
import type { HealthSeriesKey, MinuteSample } from '../catalog/health-history.js';
import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import { DRAIN_WINDOW_MS, HISTORY_STEP_MS, MAX_HISTORY_SAMPLES } from '../protocol/monitoring-api.js';
import type { HealthSample, PartitionHistory } from '../protocol/monitoring-api.js';
import { drainEstimate } from './drain-estimate.js';
import { HistoryBuffer, minuteOf } from './history-buffer.js';

/** A sample of a group partition, waiting to be written. */
interface Pending {
  key: HealthSeriesKey;
  minute: number;
  sample: HealthSample;
}

const keyOf = (k: HealthSeriesKey): string => `${k.groupId}\0${k.topic}\0${k.partition}`;

/** Most group partitions kept by default (docs/monitoring.md says what they cost). */
export const DEFAULT_HISTORY_MAX_SERIES = 1000;

export class HealthHistory {
  private readonly buffer: HistoryBuffer<Pending>;
  /**
   * The group partitions whose samples are taken: those stored (as of the last write or {@link load}) and those
   * taken since, at most `maxSeries` (others are dropped at once: memory holds the samples of twice the cap at most).
   */
  private kept = new Set<string>();
  /** Samples dropped for the cap since the last write (logged then). */
  private dropped = 0;

  /** @param maxSeries most group partitions kept, over every group */
  constructor(
    private readonly catalog: Catalog, private readonly clock: Clock, private readonly logger: Logger, private readonly maxSeries = DEFAULT_HISTORY_MAX_SERIES,
  ) {
    this.buffer = new HistoryBuffer<Pending>({
      what: 'health history', write: (batch) => this.write(batch), prune: (beforeMs) => catalog.healthHistory.prune(beforeMs),
    }, clock, logger);
  }

  /** Reads which group partitions the catalog keeps (at the broker's start). */
  async load(): Promise<void> {
    this.kept = new Set((await this.catalog.healthHistory.series()).map(keyOf));
  }

  /** Takes a sample of a group partition (the last of its minute is kept), unless the cap leaves no room for it. */
  record(key: HealthSeriesKey, sample: HealthSample): void {
    const k = keyOf(key);
    if (!this.kept.has(k)) {
      if (this.kept.size >= this.maxSeries) {
        this.dropped++;
        return;
      }
      this.kept.add(k);
    }
    this.buffer.put(k, { key, minute: minuteOf(sample.at), sample });
  }

  /**
   * A group's partitions with their samples from `fromMs` on (ms since the epoch; from the start of its minute) to
   * now, in topic and partition order, each with its drain estimate (from every sample of its last
   * {@link DRAIN_WINDOW_MS}); at most about {@link MAX_HISTORY_SAMPLES} samples, one every `stepMs` (a minute, or a
   * multiple of it for a group of many partitions). Writes what waits first.
   */
  async of(groupId: string, fromMs: number): Promise<{ stepMs: number; partitions: PartitionHistory[] }> {
    await this.buffer.flush();
    const repository = this.catalog.healthHistory;
    const now = this.clock.now();
    const minutes = Math.floor((now - minuteOf(fromMs)) / HISTORY_STEP_MS) + 1;
    const every = Math.max(1, Math.ceil((await repository.seriesOf(groupId)) * minutes / MAX_HISTORY_SAMPLES));
    const partitions = await repository.ofGroup(groupId, fromMs, every);
    const recent = every === 1 ? partitions : await repository.ofGroup(groupId, now - DRAIN_WINDOW_MS);
    const recentOf = new Map(recent.map((p) => [`${p.topic}\0${p.partition}`, p.samples.filter((s) => s.at >= now - DRAIN_WINDOW_MS)]));
    return {
      stepMs: every * HISTORY_STEP_MS,
      partitions: partitions
        .sort((a, b) => (a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1))
        .map((p) => ({ ...p, drain: drainEstimate(recentOf.get(`${p.topic}\0${p.partition}`) ?? []) })),
    };
  }

  /** Writes every sample waiting (at a stop). Never rejects. */
  flush(): Promise<void> {
    return this.buffer.flush();
  }

  /** Forgets a deleted group: its samples waiting, and (after the writes queued) those stored. Never rejects. */
  deleteGroup(groupId: string): Promise<void> {
    return this.buffer.forget((p) => p.key.groupId === groupId, () => this.catalog.healthHistory.deleteGroup(groupId));
  }

  /** Forgets a deleted topic's partitions in every group, as {@link deleteGroup}. Never rejects. */
  deleteTopic(topic: string): Promise<void> {
    return this.buffer.forget((p) => p.key.topic === topic, () => this.catalog.healthHistory.deleteTopic(topic));
  }

  /**
   * Writes samples of the series the cap allows, adding series not stored yet while there is room (other brokers
   * sharing the catalog add theirs too), and takes the series stored as those kept from now on.
   */
  private async write(batch: readonly Pending[]): Promise<void> {
    const ids = await this.seriesIds(batch.map((p) => p.key));
    const rows: MinuteSample[] = [];
    for (const { key, minute, sample } of batch) {
      const seriesId = ids.get(keyOf(key));
      if (seriesId === undefined) this.dropped++;
      else rows.push({ ...sample, seriesId, minute });
    }
    await this.catalog.healthHistory.write(rows);
    this.kept = new Set(ids.keys());
    if (this.dropped > 0) {
      this.logger.warn({ maxSeries: this.maxSeries, dropped: this.dropped }, 'the health history keeps at most maxSeries group partitions: samples of others were not kept');
      this.dropped = 0;
    }
  }

  /** The series ids of `keys`, adding the series not stored yet while the cap allows (those beyond have none). */
  private async seriesIds(keys: readonly HealthSeriesKey[]): Promise<Map<string, number>> {
    const repository = this.catalog.healthHistory;
    let series = await repository.series();
    const ids = new Map(series.map((s) => [keyOf(s), s.id]));
    const missing = [...new Map(keys.filter((k) => !ids.has(keyOf(k))).map((k) => [keyOf(k), k])).values()];
    const room = this.maxSeries - series.length;
    if (missing.length > 0 && room > 0) {
      await repository.addSeries(missing.slice(0, room));
      series = await repository.series();
      for (const s of series) ids.set(keyOf(s), s.id);
    }
    return ids;
  }
}

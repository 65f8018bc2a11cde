/**
 * The catalog's health history (docs/monitoring.md, "Console: charts that last"): the group partitions it keeps
 * (series) and, for each, one sample per minute. Brokers sharing the catalog write the same rows: a series is added
 * once whoever adds it, a minute's sample is the last one written.
 */
import { sql } from 'kysely';
import type { Kysely } from 'kysely';
import type { HealthSample } from '../protocol/monitoring-api.js';
import type { CatalogSchema } from './schema.js';
import { inSlices } from './slices.js';

/** A group's partition the history keeps. */
export interface HealthSeriesKey {
  groupId: string;
  topic: string;
  partition: number;
}

/** A series with its id. */
export interface HealthSeries extends HealthSeriesKey {
  id: number;
}

/** A sample of a series for the minute starting at `minute` (ms since the epoch). */
export interface MinuteSample extends HealthSample {
  seriesId: number;
  minute: number;
}

const num = (v: number | null): number | null => (v === null ? null : Number(v));

export class HealthHistoryRepository {
  constructor(private readonly db: Kysely<CatalogSchema>) {}

  /** Every series, in no order. */
  async series(): Promise<HealthSeries[]> {
    const rows = await this.db.selectFrom('health_series').selectAll().execute();
    return rows.map((r) => ({ id: Number(r.id), groupId: r.group_id, topic: r.topic, partition: Number(r.partition) }));
  }

  /** Adds series (one already there is left as it is). */
  async addSeries(keys: readonly HealthSeriesKey[]): Promise<void> {
    await inSlices(keys, (slice) => this.db.insertInto('health_series')
      .values(slice.map((k) => ({ group_id: k.groupId, topic: k.topic, partition: k.partition })))
      .onConflict((oc) => oc.columns(['group_id', 'topic', 'partition']).doNothing())
      .execute());
  }

  /** Writes samples: a series' sample of a minute replaces the one written for that minute before. */
  async write(samples: readonly MinuteSample[]): Promise<void> {
    await inSlices(samples, (slice) => this.db.insertInto('health_samples')
      .values(slice.map((s) => ({
        series_id: s.seriesId, minute: s.minute, at: s.at, lag: s.lag, time_lag_ms: s.timeLagMs, headroom_ms: s.headroomMs,
        headroom_bytes: s.headroomBytes, committed_offset: s.committedOffset,
      })))
      .onConflict((oc) => oc.columns(['series_id', 'minute']).doUpdateSet((eb) => ({
        at: eb.ref('excluded.at'), lag: eb.ref('excluded.lag'), time_lag_ms: eb.ref('excluded.time_lag_ms'),
        headroom_ms: eb.ref('excluded.headroom_ms'), headroom_bytes: eb.ref('excluded.headroom_bytes'),
        committed_offset: eb.ref('excluded.committed_offset'),
      })))
      .execute());
  }

  /** How many series a group has. */
  async seriesOf(groupId: string): Promise<number> {
    const row = await this.db.selectFrom('health_series').select((eb) => eb.fn.countAll<number>().as('n')).where('group_id', '=', groupId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /**
   * A group's samples from the minute of `fromMs` on, per partition (in no order), each partition's oldest first: of
   * every minute, or with `everyMinutes` > 1 of the minutes that are multiples of it since the epoch.
   */
  async ofGroup(groupId: string, fromMs: number, everyMinutes = 1): Promise<Array<{ topic: string; partition: number; samples: HealthSample[] }>> {
    let query = this.db.selectFrom('health_samples').innerJoin('health_series', 'health_series.id', 'health_samples.series_id')
      .select(['health_series.topic', 'health_series.partition', 'health_samples.at', 'health_samples.lag', 'health_samples.time_lag_ms',
        'health_samples.headroom_ms', 'health_samples.headroom_bytes', 'health_samples.committed_offset'])
      .where('health_series.group_id', '=', groupId).where('health_samples.minute', '>=', fromMs - (fromMs % 60_000));
    if (everyMinutes > 1) query = query.where(sql<number>`(health_samples.minute / 60000) % ${everyMinutes}`, '=', 0);
    const rows = await query.orderBy('health_samples.series_id').orderBy('health_samples.minute').execute();
    const partitions = new Map<string, { topic: string; partition: number; samples: HealthSample[] }>();
    for (const r of rows) {
      const key = `${r.topic}\0${r.partition}`;
      let p = partitions.get(key);
      if (p === undefined) partitions.set(key, (p = { topic: r.topic, partition: Number(r.partition), samples: [] }));
      p.samples.push({
        at: Number(r.at), lag: num(r.lag), timeLagMs: num(r.time_lag_ms), headroomMs: num(r.headroom_ms), headroomBytes: num(r.headroom_bytes),
        committedOffset: num(r.committed_offset),
      });
    }
    return [...partitions.values()];
  }

  /** Deletes a group's series and their samples. */
  async deleteGroup(groupId: string): Promise<void> {
    await this.deleteSeries('group_id', groupId);
  }

  /** Deletes every group's series of a topic and their samples. */
  async deleteTopic(topic: string): Promise<void> {
    await this.deleteSeries('topic', topic);
  }

  /** Deletes the samples of minutes before `beforeMs`, then the series left without a sample. */
  async prune(beforeMs: number): Promise<void> {
    await this.db.deleteFrom('health_samples').where('minute', '<', beforeMs).execute();
    await this.db.deleteFrom('health_series')
      .where(({ not, exists, selectFrom }) => not(exists(selectFrom('health_samples').select('series_id').whereRef('health_samples.series_id', '=', 'health_series.id'))))
      .execute();
  }

  /** Deletes the series whose `column` is `value`, and their samples, in one transaction. */
  private async deleteSeries(column: 'group_id' | 'topic', value: string): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await tx.deleteFrom('health_samples')
        .where('series_id', 'in', (eb) => eb.selectFrom('health_series').select('id').where(column, '=', value))
        .execute();
      await tx.deleteFrom('health_series').where(column, '=', value).execute();
    });
  }
}

/**
 * The catalog's topic traffic (docs/monitoring.md, "Console: charts that last"): per topic and minute, the records
 * and bytes produced and fetched, summed over the brokers sharing the catalog (each adds what it served).
 */
import type { Kysely } from 'kysely';
import type { CatalogSchema } from './schema.js';
import { inSlices } from './slices.js';

/** A topic's traffic in the minute starting at `minute` (ms since the epoch). */
export interface TopicTraffic {
  topic: string;
  minute: number;
  producedRecords: number;
  producedBytes: number;
  fetchedRecords: number;
  fetchedBytes: number;
}

export class TopicTrafficRepository {
  constructor(private readonly db: Kysely<CatalogSchema>) {}

  /** Adds traffic to the minutes' counts (a minute not counted yet starts at what is added). */
  async add(traffic: readonly TopicTraffic[]): Promise<void> {
    await inSlices(traffic, (slice) => this.db.insertInto('topic_traffic')
      .values(slice.map((t) => ({
        topic: t.topic, minute: t.minute, produced_records: t.producedRecords, produced_bytes: t.producedBytes,
        fetched_records: t.fetchedRecords, fetched_bytes: t.fetchedBytes,
      })))
      .onConflict((oc) => oc.columns(['topic', 'minute']).doUpdateSet((eb) => ({
        produced_records: eb('topic_traffic.produced_records', '+', eb.ref('excluded.produced_records')),
        produced_bytes: eb('topic_traffic.produced_bytes', '+', eb.ref('excluded.produced_bytes')),
        fetched_records: eb('topic_traffic.fetched_records', '+', eb.ref('excluded.fetched_records')),
        fetched_bytes: eb('topic_traffic.fetched_bytes', '+', eb.ref('excluded.fetched_bytes')),
      })))
      .execute());
  }

  /** A topic's counted minutes from `fromMinute` to before `toMinute` (ms since the epoch), oldest first. */
  async of(topic: string, fromMinute: number, toMinute: number): Promise<TopicTraffic[]> {
    const rows = await this.db.selectFrom('topic_traffic').selectAll().where('topic', '=', topic)
      .where('minute', '>=', fromMinute).where('minute', '<', toMinute).orderBy('minute').execute();
    return rows.map((r) => ({
      topic: r.topic, minute: Number(r.minute), producedRecords: Number(r.produced_records), producedBytes: Number(r.produced_bytes),
      fetchedRecords: Number(r.fetched_records), fetchedBytes: Number(r.fetched_bytes),
    }));
  }

  /**
   * Each topic's counts summed over the minutes from `fromMinute` to before `toMinute` (ms since the epoch), one row
   * per topic with traffic then (its `minute`: `fromMinute`).
   */
  async totals(fromMinute: number, toMinute: number): Promise<TopicTraffic[]> {
    const rows = await this.db.selectFrom('topic_traffic')
      .select((eb) => [
        'topic', eb.fn.sum<number | string>('produced_records').as('produced_records'), eb.fn.sum<number | string>('produced_bytes').as('produced_bytes'),
        eb.fn.sum<number | string>('fetched_records').as('fetched_records'), eb.fn.sum<number | string>('fetched_bytes').as('fetched_bytes'),
      ])
      .where('minute', '>=', fromMinute).where('minute', '<', toMinute).groupBy('topic').execute();
    return rows.map((r) => ({
      topic: r.topic, minute: fromMinute, producedRecords: Number(r.produced_records), producedBytes: Number(r.produced_bytes),
      fetchedRecords: Number(r.fetched_records), fetchedBytes: Number(r.fetched_bytes),
    }));
  }

  /** Deletes a topic's counts. */
  async deleteTopic(topic: string): Promise<void> {
    await this.db.deleteFrom('topic_traffic').where('topic', '=', topic).execute();
  }

  /** Deletes the counts of minutes before `beforeMs`. */
  async prune(beforeMs: number): Promise<void> {
    await this.db.deleteFrom('topic_traffic').where('minute', '<', beforeMs).execute();
  }
}

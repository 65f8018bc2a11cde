/**
 * The offset store as a key-value table in PostgreSQL (`pg`), for a cluster that prefers one database to a
 * Redis beside it (`onelog serve --offsets postgres`). The table is used only by exact key and by group prefix,
 * as a key-value store is; no query joins it.
 *
 * Tables (names under a prefix, default `onelog_`):
 * - `<prefix>committed_offsets (group_id, topic, partition) -> offset, metadata (bytea: PostgreSQL's text
 *   cannot hold NUL), commit_timestamp`;
 * - `<prefix>group_generations (group_id) -> generation_id, fence_generation_id`: each group's highest
 *   generation and the fence of its commits;
 * - `<prefix>record_states (group_id, topic, partition) -> state` (the partition's record state as JSON text).
 * - `<prefix>record_entries (group_id, topic, partition, offset) -> value` (a record state's entries, OffsetStore.recordEntries).
 *
 * Writes take effect in call order: they queue, and one writer at a time runs whatever queued meanwhile in one
 * transaction (as lmdb-js joins queued writes), so a burst of commits shares one synced commit. A fenced
 * commit locks its group's generation row (`FOR SHARE`) before writing, and an advance updates that row, so the
 * two serialise across every broker: no commit below a fence lands after the fence was raised.
 * Durability is PostgreSQL's: a commit resolves after its transaction committed (synced, with the server's
 * default `synchronous_commit = on`). A failed call is `STORAGE_ERROR` (retriable), naming PostgreSQL.
 */
import type { Pool, PoolClient } from 'pg';
import { checkTablePrefix, createTables, inTransaction, openPool, query } from '../common/postgres.js';
import { OnelogError } from '../protocol/errors.js';
import { checkRecordEntries, CloseGate, staleGeneration } from './offset-store.js';
import type { CommittedOffset, RecordEntries, RecordState, GenerationFence, GroupOffset, OffsetCommit, OffsetStore } from './offset-store.js';

/** Options of {@link PostgresKvOffsetStore.open}. */
export interface PostgresKvOffsetStoreOptions {
  /** The pool to run on; the store never ends it (its owner does). Give this or `url`. */
  pool?: Pool;
  /** `postgres://...`: the store opens a pool of its own there (at most 4 connections) and ends it on close. */
  url?: string;
  /** Prefix of the two tables' names: lower-case letters, digits and `_`. @default 'onelog_' */
  tablePrefix?: string;
}

/** One queued write and how to answer its caller. */
interface Write {
  run(client: PoolClient): Promise<unknown>;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

export class PostgresKvOffsetStore implements OffsetStore {
  private readonly queue: Write[] = [];
  private writing = false;
  private readonly offsets: string;
  private readonly generations: string;
  private readonly recordStates: string;
  private readonly recordEntriesTable: string;

  private readonly gate = new CloseGate('PostgreSQL');

  private constructor(private readonly pool: Pool, prefix: string, private readonly ownsPool: boolean) {
    this.offsets = `${prefix}committed_offsets`;
    this.generations = `${prefix}group_generations`;
    this.recordStates = `${prefix}record_states`;
    this.recordEntriesTable = `${prefix}record_entries`;
  }

  /**
   * Creates the tables if missing (under an advisory lock, so brokers starting together do not collide).
   * @throws OnelogError `INVALID_CONFIG` for a bad table prefix or neither `pool` nor `url`; `STORAGE_ERROR` if
   *   PostgreSQL fails
   */
  static async open(options: PostgresKvOffsetStoreOptions): Promise<PostgresKvOffsetStore> {
    const prefix = checkTablePrefix(options.tablePrefix ?? 'onelog_');
    if ((options.pool === undefined) === (options.url === undefined)) {
      throw new OnelogError('INVALID_CONFIG', 'the PostgreSQL offset store takes a pool or a url, one of the two');
    }
    const pool = options.pool ?? openPool(options.url!, 4);
    const store = new PostgresKvOffsetStore(pool, prefix, options.pool === undefined);
    const setup = createTables(pool, `offset store ${prefix}`, [
      `CREATE TABLE IF NOT EXISTS ${store.offsets} (
        group_id text NOT NULL, topic text NOT NULL, partition bigint NOT NULL,
        "offset" bigint NOT NULL, metadata bytea NOT NULL, commit_timestamp bigint NOT NULL,
        PRIMARY KEY (group_id, topic, partition))`,
      `CREATE INDEX IF NOT EXISTS ${store.offsets}_by_topic ON ${store.offsets} (topic)`,
      `CREATE TABLE IF NOT EXISTS ${store.generations} (
        group_id text PRIMARY KEY, generation_id bigint NOT NULL, fence_generation_id bigint NOT NULL)`,
      `CREATE TABLE IF NOT EXISTS ${store.recordStates} (
        group_id text NOT NULL, topic text NOT NULL, partition bigint NOT NULL, state text NOT NULL,
        PRIMARY KEY (group_id, topic, partition))`,
      `CREATE INDEX IF NOT EXISTS ${store.recordStates}_by_topic ON ${store.recordStates} (topic)`,
      `CREATE TABLE IF NOT EXISTS ${store.recordEntriesTable} (
        group_id text NOT NULL, topic text NOT NULL, partition bigint NOT NULL, "offset" bigint NOT NULL, value text NOT NULL,
        PRIMARY KEY (group_id, topic, partition, "offset"))`,
      `CREATE INDEX IF NOT EXISTS ${store.recordEntriesTable}_by_topic ON ${store.recordEntriesTable} (topic)`,
    ]);
    await setup.catch(async (err: unknown) => {
      if (store.ownsPool) await pool.end();
      throw err;
    });
    return store;
  }

  async get(groupId: string, topic: string, partition: number): Promise<CommittedOffset | undefined> {
    const { rows } = await this.select<OffsetRow>('get',
      `SELECT "offset", metadata, commit_timestamp FROM ${this.offsets} WHERE group_id = $1 AND topic = $2 AND partition = $3`,
      [groupId, topic, partition]);
    return rows[0] && toCommitted(rows[0]);
  }

  async list(groupId: string): Promise<GroupOffset[]> {
    // COLLATE "C": by UTF-8 bytes, as the LMDB engine orders its keys, whatever the database's collation.
    const { rows } = await this.select<OffsetRow & { topic: string; partition: string }>('list',
      `SELECT topic, partition, "offset", metadata, commit_timestamp FROM ${this.offsets} WHERE group_id = $1
       ORDER BY topic COLLATE "C", partition`, [groupId]);
    return rows.map((r) => ({ topic: r.topic, partition: Number(r.partition), ...toCommitted(r) }));
  }

  async generation(groupId: string): Promise<number> {
    const { rows } = await this.select<{ generation_id: string }>('generation',
      `SELECT generation_id FROM ${this.generations} WHERE group_id = $1`, [groupId]);
    return rows[0] ? Number(rows[0].generation_id) : 0;
  }

  commit(groupId: string, offsets: readonly OffsetCommit[], now: number, fence?: GenerationFence): Promise<void> {
    if (offsets.length === 0) return Promise.resolve();
    // One row per key (the last of a commit wins): an upsert may not touch a row twice.
    const byKey = new Map<string, OffsetCommit>();
    for (const o of offsets) {
      if (!Number.isInteger(o.partition) || o.partition < 0 || o.partition > 0xffffffff) {
        return Promise.reject(new RangeError(`offset store: partition ${o.partition} of topic '${o.topic}' is not an integer in 0..2^32-1`));
      }
      byKey.set(`${o.partition}\0${o.topic}`, o);
    }
    const rows = [...byKey.values()];
    const params = [
      groupId, rows.map((o) => o.topic), rows.map((o) => o.partition), rows.map((o) => o.offset),
      rows.map((o) => Buffer.from(o.metadata ?? '', 'utf8')), now,
    ];
    return this.write(async (client) => {
      if (fence !== undefined) {
        await client.query(`INSERT INTO ${this.generations} VALUES ($1, 0, 0) ON CONFLICT DO NOTHING`, [groupId]);
        const { rows: [row] } = await client.query<{ fence_generation_id: string }>(
          `SELECT fence_generation_id FROM ${this.generations} WHERE group_id = $1 FOR SHARE`, [groupId]);
        const stored = Number(row!.fence_generation_id);
        if (stored > fence.generationId) return staleGeneration(groupId, fence, stored);
      }
      await client.query(`INSERT INTO ${this.offsets} (group_id, topic, partition, "offset", metadata, commit_timestamp)
        SELECT $1, t.topic, t.partition, t.o, t.metadata, $6 FROM unnest($2::text[], $3::bigint[], $4::bigint[], $5::bytea[]) AS t(topic, partition, o, metadata)
        ON CONFLICT (group_id, topic, partition) DO UPDATE
        SET "offset" = excluded."offset", metadata = excluded.metadata, commit_timestamp = excluded.commit_timestamp`, params);
      return undefined;
    }).then((refused) => {
      if (refused instanceof OnelogError) throw refused;
    });
  }

  async advanceGeneration(groupId: string, generationId: number, options: { fence?: boolean } = {}): Promise<number> {
    const stored = await this.write(async (client) => {
      const { rows: [row] } = await client.query<{ generation_id: string }>(
        `INSERT INTO ${this.generations} AS g VALUES ($1, $2::bigint, CASE WHEN $3::boolean THEN $2::bigint ELSE 0 END)
         ON CONFLICT (group_id) DO UPDATE SET generation_id = greatest(g.generation_id, excluded.generation_id),
           fence_generation_id = greatest(g.fence_generation_id, excluded.fence_generation_id)
         RETURNING generation_id`, [groupId, generationId, options.fence === true]);
      return Number(row!.generation_id);
    });
    return stored as number;
  }

  async recordState(groupId: string, topic: string, partition: number): Promise<RecordState | undefined> {
    const { rows } = await this.select<{ state: string }>('record state',
      `SELECT state FROM ${this.recordStates} WHERE group_id = $1 AND topic = $2 AND partition = $3`, [groupId, topic, partition]);
    return rows[0] && JSON.parse(rows[0].state) as RecordState;
  }

  async setRecordState(groupId: string, topic: string, partition: number, state: RecordState | null, entries: RecordEntries = {}): Promise<void> {
    if (!Number.isInteger(partition) || partition < 0 || partition > 0xffffffff) {
      throw new RangeError(`offset store: partition ${partition} of topic '${topic}' is not an integer in 0..2^32-1`);
    }
    const { set, remove } = checkRecordEntries(entries);
    const key = [groupId, topic, partition];
    await this.write(async (client) => {
      if (state === null) {
        await client.query(`DELETE FROM ${this.recordStates} WHERE group_id = $1 AND topic = $2 AND partition = $3`, key);
        await client.query(`DELETE FROM ${this.recordEntriesTable} WHERE group_id = $1 AND topic = $2 AND partition = $3`, key);
        return;
      }
      await client.query(`INSERT INTO ${this.recordStates} VALUES ($1, $2, $3, $4)
        ON CONFLICT (group_id, topic, partition) DO UPDATE SET state = excluded.state`, [...key, JSON.stringify(state)]);
      if (remove.length > 0) {
        await client.query(`DELETE FROM ${this.recordEntriesTable} WHERE group_id = $1 AND topic = $2 AND partition = $3 AND "offset" = ANY($4::bigint[])`,
          [...key, remove.map(String)]);
      }
      if (set.length > 0) {
        await client.query(`INSERT INTO ${this.recordEntriesTable} SELECT $1, $2, $3, o, v FROM unnest($4::bigint[], $5::text[]) AS e(o, v)
          ON CONFLICT (group_id, topic, partition, "offset") DO UPDATE SET value = excluded.value`, [...key, set.map(([o]) => String(o)), set.map(([, v]) => v)]);
      }
    });
  }

  async recordEntries(groupId: string, topic: string, partition: number): Promise<Array<[number, string]>> {
    const { rows } = await this.select<{ offset: string; value: string }>('record entries',
      `SELECT "offset", value FROM ${this.recordEntriesTable} WHERE group_id = $1 AND topic = $2 AND partition = $3 ORDER BY "offset"`, [groupId, topic, partition]);
    return rows.map((r) => [Number(r.offset), r.value]);
  }

  async deleteGroup(groupId: string): Promise<void> {
    await this.write(async (client) => {
      await client.query(`DELETE FROM ${this.offsets} WHERE group_id = $1`, [groupId]);
      await client.query(`DELETE FROM ${this.recordStates} WHERE group_id = $1`, [groupId]);
      await client.query(`DELETE FROM ${this.recordEntriesTable} WHERE group_id = $1`, [groupId]);
    });
  }

  async deleteTopic(topic: string): Promise<number> {
    const result = await this.write(async (client) => {
      await client.query(`DELETE FROM ${this.recordStates} WHERE topic = $1`, [topic]);
      await client.query(`DELETE FROM ${this.recordEntriesTable} WHERE topic = $1`, [topic]);
      return client.query(`DELETE FROM ${this.offsets} WHERE topic = $1`, [topic]);
    });
    return (result as { rowCount: number | null }).rowCount ?? 0;
  }

  /** @see OffsetStore.probe */
  async probe(): Promise<void> {
    await this.select('health probe', 'SELECT 1', []);
  }

  /** Waits for the calls in flight, then ends the pool if the store opened it (a pool given stays open). */
  async close(): Promise<void> {
    if (!(await this.gate.close())) return;
    if (this.ownsPool) await this.pool.end();
  }

  private select<R extends object>(action: string, sql: string, params: unknown[]): Promise<{ rows: R[] }> {
    return this.gate.run(() => query<R>(this.pool, `offset store: ${action}`, sql, params));
  }

  /** Queues a write; the writer runs the queue in call order, what queued meanwhile in one transaction. */
  private write(run: (client: PoolClient) => Promise<unknown>): Promise<unknown> {
    return this.gate.run(() => new Promise((resolve, reject) => {
      this.queue.push({ run, resolve, reject });
      if (!this.writing) void this.drain();
    }));
  }

  private async drain(): Promise<void> {
    this.writing = true;
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0);
      const results: unknown[] = [];
      try {
        await inTransaction(this.pool, 'offset store: commit', async (client) => {
          for (const w of batch) results.push(await w.run(client));
        });
        batch.forEach((w, i) => w.resolve(results[i]));
      } catch (err) {
        for (const w of batch) w.reject(err);
      }
    }
    this.writing = false;
  }
}

interface OffsetRow {
  offset: string;
  metadata: Buffer;
  commit_timestamp: string;
}

function toCommitted(r: OffsetRow): CommittedOffset {
  return { offset: Number(r.offset), metadata: r.metadata.toString('utf8'), commitTimestamp: Number(r.commit_timestamp) };
}

/**
 * The sequencer on PostgreSQL (the {@link Sequencer} of cluster mode; its tables and rules: sequencer.ts): a commit
 * is one transaction under the row locks of its partitions, leases are checked by the database's clock, and
 * announcements are PostgreSQL notifications (a commit's in its transaction, delivered at COMMIT).
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import type { Pool, PoolClient } from 'pg';
import { checkTablePrefix, createTables, inTransaction, query, withDefaultUser } from '../../common/postgres.js';
import { OnelogError } from '../../protocol/errors.js';
import { byTopicPartition, deleteRecordsRefusal, notLeaderError, PRODUCER_BATCHES_KEPT } from './sequencer.js';
import type {
  ChunkResult, IndexEntry, Lease, ObjectChunk, PartitionLease, PartitionState, Sequencer, SequencerListener, StoredProducerBatch,
} from './sequencer.js';

/** Options of {@link PostgresSequencer.open}. */
export interface SequencerOptions {
  /** The pool to run on; the sequencer never ends it. */
  pool: Pool;
  /** This broker's id (`serve --broker-id`), 0 to 2^31 - 1: who holds a lease. */
  brokerId: number;
  /** How long a lease lasts unless renewed, ms, by the database's clock. @default 10000 */
  leaseMs?: number;
  /**
   * An object whose PUT began longer ago than this is not committed (its chunks are refused with
   * `REQUEST_TIMED_OUT`), ms: the orphan sweep deletes uncommitted objects older than twice this, so it never
   * deletes one a late commit could still index. @default 300000 (5 minutes)
   */
  maxObjectAgeMs?: number;
  /**
   * The database's URL for the connections that LISTEN to its announcements ({@link PostgresSequencer.listenCommits},
   * {@link PostgresSequencer.listenTopics}): the pool's database. Needed only to listen.
   */
  listenUrl?: string;
  /** Prefix of the tables' names: lower-case letters, digits and `_`. @default 'onelog_' */
  tablePrefix?: string;
  /**
   * Called after each commit transaction that committed, with how long it took, seconds (from BEGIN's connection to
   * COMMIT's answer): the broker's `onelog_sequencer_commit_duration_seconds`. @default none
   */
  onCommit?: (seconds: number) => void;
}


export class PostgresSequencer implements Sequencer {
  private readonly partitions: string;
  /** The name of the partitions table (leases, high watermarks), which every commit updates. */
  get partitionsTable(): string {
    return this.partitions;
  }
  private readonly index: string;
  private readonly objects: string;
  private readonly producers: string;
  private constructor(
    private readonly pool: Pool, readonly brokerId: number, readonly leaseMs: number, readonly maxObjectAgeMs: number, prefix: string,
    /**
     * The channel each commit notifies (LISTEN wakes the long-polls of the partitions it names): `<prefix>log_` and a
     * hash of the schema the tables are in, since channels are shared by the whole database and two clusters may
     * share one in two schemas.
     */
    readonly channel: string,
    private readonly listenUrl: string | undefined,
    private readonly onCommit: ((seconds: number) => void) | undefined,
  ) {
    this.partitions = `${prefix}partitions`;
    this.index = `${prefix}log_index`;
    this.objects = `${prefix}objects`;
    this.producers = `${prefix}producer_batches`;
  }

  /**
   * Creates the tables if missing (under an advisory lock, so brokers starting together do not collide).
   * @throws OnelogError `INVALID_CONFIG` for a bad broker id, lease or table prefix; `STORAGE_ERROR` if PostgreSQL fails
   */
  static async open(options: SequencerOptions): Promise<PostgresSequencer> {
    const prefix = checkTablePrefix(options.tablePrefix ?? 'onelog_');
    if (!Number.isInteger(options.brokerId) || options.brokerId < 0 || options.brokerId > 0x7fffffff) {
      throw new OnelogError('INVALID_CONFIG', `broker id must be an integer from 0 to 2147483647, got ${options.brokerId}`, { brokerId: options.brokerId });
    }
    const leaseMs = options.leaseMs ?? 10_000;
    if (!Number.isInteger(leaseMs) || leaseMs < 100) {
      throw new OnelogError('INVALID_CONFIG', `lease must be an integer of at least 100 ms, got ${leaseMs}`, { leaseMs });
    }
    const { rows: [row] } = await query<{ schema: string }>(options.pool, 'sequencer: schema', 'SELECT current_schema() AS schema', []);
    const channel = `${prefix}log_${createHash('sha1').update(row!.schema).digest('hex').slice(0, 12)}`;
    const s = new PostgresSequencer(options.pool, options.brokerId, leaseMs, options.maxObjectAgeMs ?? 300_000, prefix, channel, options.listenUrl, options.onCommit);
    await createTables(options.pool, `sequencer ${prefix}`, [
      `CREATE TABLE IF NOT EXISTS ${s.partitions} (
        topic text COLLATE "C" NOT NULL, partition integer NOT NULL,
        log_start_offset bigint NOT NULL DEFAULT 0, high_watermark bigint NOT NULL DEFAULT 0,
        leader_broker_id integer, leader_epoch bigint NOT NULL DEFAULT 0, lease_expires_at timestamptz,
        PRIMARY KEY (topic, partition), CHECK (log_start_offset <= high_watermark))`,
      `CREATE TABLE IF NOT EXISTS ${s.index} (
        topic text COLLATE "C" NOT NULL, partition integer NOT NULL, base_offset bigint NOT NULL, end_offset bigint NOT NULL,
        object_key text NOT NULL, position bigint NOT NULL, length bigint NOT NULL, max_timestamp bigint NOT NULL,
        PRIMARY KEY (topic, partition, base_offset), CHECK (end_offset > base_offset))`,
      `CREATE INDEX IF NOT EXISTS ${s.index}_by_object ON ${s.index} (object_key)`,
      `CREATE TABLE IF NOT EXISTS ${s.objects} (
        object_key text PRIMARY KEY, broker_id integer NOT NULL, size_bytes bigint NOT NULL, committed_at timestamptz NOT NULL,
        retired_at timestamptz)`,
      `CREATE TABLE IF NOT EXISTS ${s.producers} (
        topic text COLLATE "C" NOT NULL, partition integer NOT NULL, producer_id bigint NOT NULL, producer_epoch integer NOT NULL,
        base_sequence integer NOT NULL, last_sequence integer NOT NULL, base_offset bigint NOT NULL, last_offset bigint NOT NULL,
        PRIMARY KEY (topic, partition, producer_id, base_offset))`,
    ]);
    return s;
  }

  /** Adds a topic's partitions (empty logs, no lease); those that exist stay as they are. */
  async addPartitions(topic: string, partitions: number): Promise<void> {
    await this.query('add partitions', `INSERT INTO ${this.partitions} (topic, partition) SELECT $1, p FROM generate_series(0, $2::int - 1) AS p
      ON CONFLICT DO NOTHING`, [topic, partitions]);
  }

  /**
   * Takes or renews the lease of each partition this broker may hold: one nobody holds, whose lease expired, or
   * that it holds already (renewed at the same epoch). Taking one raises its epoch.
   * @returns the leases held after the call (the partitions another live broker holds are left out)
   */
  async acquire(partitions: ReadonlyArray<{ topic: string; partition: number }>): Promise<Lease[]> {
    if (partitions.length === 0) return [];
    const wanted = [partitions.map((p) => p.topic), partitions.map((p) => p.partition)];
    let rows: Array<{ topic: string; partition: number; leader_epoch: string; expires_ms: string }> = [];
    await inTransaction(this.pool, 'sequencer: acquire leases', async (client) => {
      // Rows locked in (topic, partition) order first, as commits lock them: brokers never deadlock.
      await client.query(`SELECT 1 FROM ${this.partitions} AS p JOIN unnest($1::text[], $2::int[]) AS w(topic, partition)
        ON p.topic = w.topic AND p.partition = w.partition ORDER BY p.topic, p.partition FOR UPDATE OF p`, wanted);
      ({ rows } = await client.query<{ topic: string; partition: number; leader_epoch: string; expires_ms: string }>(`UPDATE ${this.partitions} AS p SET
         leader_epoch = CASE WHEN p.leader_broker_id = $1 AND p.lease_expires_at > clock_timestamp() THEN p.leader_epoch ELSE p.leader_epoch + 1 END,
         leader_broker_id = $1,
         lease_expires_at = clock_timestamp() + $2::int * interval '1 millisecond'
       FROM unnest($3::text[], $4::int[]) AS w(topic, partition)
       WHERE p.topic = w.topic AND p.partition = w.partition
         AND (p.leader_broker_id IS NULL OR p.leader_broker_id = $1 OR p.lease_expires_at <= clock_timestamp())
       RETURNING p.topic, p.partition, p.leader_epoch, (extract(epoch from p.lease_expires_at) * 1000)::bigint AS expires_ms`,
      [this.brokerId, this.leaseMs, ...wanted]));
    });
    return rows.map((r) => ({ topic: r.topic, partition: r.partition, epoch: Number(r.leader_epoch), expiresAt: Number(r.expires_ms) }))
      .sort(byTopicPartition);
  }

  /** Gives leases up at once (a clean shutdown), so another broker takes them without waiting for expiry. */
  async release(leases: readonly Lease[]): Promise<void> {
    if (leases.length === 0) return;
    await this.query('release leases', `UPDATE ${this.partitions} AS p SET leader_broker_id = NULL, lease_expires_at = NULL
      FROM unnest($2::text[], $3::int[], $4::bigint[]) AS w(topic, partition, epoch)
      WHERE p.topic = w.topic AND p.partition = w.partition AND p.leader_broker_id = $1 AND p.leader_epoch = w.epoch`,
    [this.brokerId, leases.map((l) => l.topic), leases.map((l) => l.partition), leases.map((l) => l.epoch)]);
  }

  /**
   * Hands leases this broker holds over to other brokers (the balance, a drain: docs/cluster.md), in one transaction
   * that locks the rows in (topic, partition) order as commits do: each partition this broker holds at the epoch given,
   * not expired by the database's clock, goes to `toBrokerId` at the next epoch for a whole lease, so the new holder
   * renews it at that epoch at its first produce, and a commit of this broker at the old epoch is refused.
   * @returns the partitions handed over, in (topic, partition) order (the others were no longer held at their epoch)
   * @throws OnelogError `STORAGE_ERROR` (nothing handed over)
   */
  async handOver(moves: ReadonlyArray<{ topic: string; partition: number; epoch: number; toBrokerId: number }>): Promise<Array<{ topic: string; partition: number }>> {
    if (moves.length === 0) return [];
    const args = [moves.map((m) => m.topic), moves.map((m) => m.partition), moves.map((m) => m.epoch), moves.map((m) => m.toBrokerId)];
    let rows: Array<{ topic: string; partition: number }> = [];
    await inTransaction(this.pool, 'sequencer: hand leases over', async (client) => {
      await client.query(`SELECT 1 FROM ${this.partitions} AS p JOIN unnest($1::text[], $2::int[]) AS w(topic, partition)
        ON p.topic = w.topic AND p.partition = w.partition ORDER BY p.topic, p.partition FOR UPDATE OF p`, args.slice(0, 2));
      ({ rows } = await client.query<{ topic: string; partition: number }>(`UPDATE ${this.partitions} AS p SET
         leader_broker_id = w.to_broker, leader_epoch = p.leader_epoch + 1, lease_expires_at = clock_timestamp() + $2::int * interval '1 millisecond'
       FROM unnest($3::text[], $4::int[], $5::bigint[], $6::int[]) AS w(topic, partition, epoch, to_broker)
       WHERE p.topic = w.topic AND p.partition = w.partition AND p.leader_broker_id = $1 AND p.leader_epoch = w.epoch
         AND p.lease_expires_at > clock_timestamp()
       RETURNING p.topic, p.partition`, [this.brokerId, this.leaseMs, ...args]));
    });
    return rows.sort(byTopicPartition);
  }

  /**
   * Commits an object PUT under `objectKey`: for each chunk, in one transaction, checks the lease (this broker,
   * the chunk's epoch, not expired by the database's clock), assigns the chunk's offsets after the partition's
   * high watermark and indexes them; then notifies {@link channel}'s listeners (`partition:highWatermark:topic`
   * a line). A chunk whose lease check fails is
   * refused (`NOT_LEADER_OR_FOLLOWER`, retriable: the client sends it again, to the partition's new leader) and
   * leaves no trace; the others commit. Chunks are applied in (topic, partition) order, so brokers never deadlock.
   * @param putStartedAt when the object's PUT began, ms since the epoch (this broker's clock): an object older than
   *   `maxObjectAgeMs` is refused whole (the orphan sweep may be deleting it)
   * @returns one result per chunk, in the order given
   * @throws OnelogError `STORAGE_ERROR` if the transaction fails (nothing of it committed)
   */
  async commit(objectKey: string, sizeBytes: number, chunks: readonly ObjectChunk[], putStartedAt = Date.now()): Promise<ChunkResult[]> {
    const ageMs = Date.now() - putStartedAt;
    if (ageMs > this.maxObjectAgeMs) {
      const error = new OnelogError('REQUEST_TIMED_OUT', `object ${objectKey} was written ${ageMs} ms ago, more than ${this.maxObjectAgeMs} ms: ` +
        'not committed (the orphan sweep may delete it); send the records again', { objectKey, ageMs, maxObjectAgeMs: this.maxObjectAgeMs });
      return chunks.map(() => ({ error }));
    }
    const order = chunks.map((_, i) => i).sort((a, b) => byTopicPartition(chunks[a]!, chunks[b]!));
    const results: ChunkResult[] = new Array<ChunkResult>(chunks.length);
    const began = performance.now();
    await inTransaction(this.pool, 'sequencer: commit', async (client) => {
      const accepted: Array<ObjectChunk & { baseOffset: number }> = [];
      for (const i of order) {
        const c = chunks[i]!;
        if (!Number.isSafeInteger(c.offsets) || c.offsets < 1) {
          throw new OnelogError('INVALID_REQUEST', `a chunk takes at least one offset, got ${c.offsets}`, { topic: c.topic, partition: c.partition });
        }
        const { rows: [row] } = await client.query<{ high_watermark: string }>(`UPDATE ${this.partitions}
          SET high_watermark = high_watermark + $5 WHERE topic = $1 AND partition = $2 AND leader_broker_id = $3 AND leader_epoch = $4
            AND lease_expires_at > clock_timestamp() RETURNING high_watermark`, [c.topic, c.partition, this.brokerId, c.epoch, c.offsets]);
        if (row === undefined) {
          results[i] = { error: await this.notLeader(client, c) };
          continue;
        }
        const highWatermark = Number(row.high_watermark);
        results[i] = { baseOffset: highWatermark - c.offsets, highWatermark };
        accepted.push({ ...c, baseOffset: highWatermark - c.offsets });
      }
      if (accepted.length === 0) return;
      await client.query(`INSERT INTO ${this.index} (topic, partition, base_offset, end_offset, object_key, position, length, max_timestamp)
        SELECT topic, partition, base, base + n, $1, position, length, max_timestamp
        FROM unnest($2::text[], $3::int[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[], $8::bigint[])
          AS c(topic, partition, base, n, position, length, max_timestamp)`,
      [objectKey, accepted.map((c) => c.topic), accepted.map((c) => c.partition), accepted.map((c) => c.baseOffset), accepted.map((c) => c.offsets),
        accepted.map((c) => c.position), accepted.map((c) => c.length), accepted.map((c) => c.maxTimestamp)]);
      await client.query(`INSERT INTO ${this.objects} (object_key, broker_id, size_bytes, committed_at) VALUES ($1, $2, $3, clock_timestamp())`,
        [objectKey, this.brokerId, sizeBytes]);
      await this.recordProducerBatches(client, accepted);
      // One notification per commit, naming each partition's new high watermark (delivered at COMMIT).
      const payload = accepted.map((c) => `${c.partition}:${c.baseOffset + c.offsets}:${c.topic}`).join('\n');
      await client.query(`SELECT pg_notify($1, $2)`, [this.channel, payload]);
    });
    this.onCommit?.((performance.now() - began) / 1000);
    return results;
  }

  /**
   * The index rows of a partition that hold offsets at or after `offset` and below its high watermark, in
   * offset order, at most `limit` of them.
   */
  async lookup(topic: string, partition: number, offset: number, limit = 16): Promise<IndexEntry[]> {
    const { rows } = await this.query<IndexRow>(
      'index lookup', `SELECT base_offset, end_offset, object_key, position, length, max_timestamp FROM ${this.index}
        WHERE topic = $1 AND partition = $2 AND end_offset > $3 ORDER BY base_offset LIMIT $4`, [topic, partition, offset, limit]);
    return rows.map(toIndexEntry);
  }

  /**
   * Moves a partition's log start offset forward to `offset` (never back). Any broker may: it orders nothing.
   * @returns the log start offset after the call
   * @throws OnelogError `OFFSET_OUT_OF_RANGE` above the high watermark, `UNKNOWN_PARTITION`
   */
  async deleteRecordsBefore(topic: string, partition: number, offset: number): Promise<number> {
    const moved = await inTransaction(this.pool, 'sequencer: delete records', async (client) => {
      const { rows: [r] } = await client.query<{ log_start_offset: string }>(`UPDATE ${this.partitions}
        SET log_start_offset = greatest(log_start_offset, $3) WHERE topic = $1 AND partition = $2 AND high_watermark >= $3
        RETURNING log_start_offset`, [topic, partition, offset]);
      if (r === undefined) return undefined;
      // Chunks wholly below the log start are never read again: their rows go, and objects no row refers to are retired.
      const { rows } = await client.query<{ object_key: string }>(`DELETE FROM ${this.index} WHERE topic = $1 AND partition = $2
        AND end_offset <= $3 RETURNING object_key`, [topic, partition, Number(r.log_start_offset)]);
      await this.retireUnreferenced(client, rows.map((row) => row.object_key));
      return Number(r.log_start_offset);
    });
    if (moved !== undefined) return moved;
    throw deleteRecordsRefusal(topic, partition, offset, await this.state(topic, partition));
  }

  /** Marks retired those of `keys` no index row refers to any more (the sweep deletes them a grace later). */
  private async retireUnreferenced(client: PoolClient, keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return;
    await client.query(`UPDATE ${this.objects} AS o SET retired_at = clock_timestamp() WHERE object_key = ANY($1::text[]) AND retired_at IS NULL
      AND NOT EXISTS (SELECT 1 FROM ${this.index} AS i WHERE i.object_key = o.object_key)`, [[...new Set(keys)]]);
  }

  /** Removes a deleted topic's partitions, index rows and producer state; its objects no other row refers to are retired. */
  async deletePartitions(topic: string): Promise<void> {
    await inTransaction(this.pool, 'sequencer: delete partitions', async (client) => {
      const { rows } = await client.query<{ object_key: string }>(`DELETE FROM ${this.index} WHERE topic = $1 RETURNING object_key`, [topic]);
      await this.retireUnreferenced(client, rows.map((r) => r.object_key));
      await client.query(`DELETE FROM ${this.producers} WHERE topic = $1`, [topic]);
      await client.query(`DELETE FROM ${this.partitions} WHERE topic = $1`, [topic]);
    });
  }

  /** The log start offset and high watermark of some partitions of a topic, as the database has them now (those not added are left out). */
  async states(topic: string, partitions: readonly number[]): Promise<Map<number, { logStartOffset: number; highWatermark: number }>> {
    const { rows } = await this.query<{ partition: number; log_start_offset: string; high_watermark: string }>('partition states',
      `SELECT partition, log_start_offset, high_watermark FROM ${this.partitions} WHERE topic = $1 AND partition = ANY($2::int[])`, [topic, partitions]);
    return new Map(rows.map((r) => [r.partition, { logStartOffset: Number(r.log_start_offset), highWatermark: Number(r.high_watermark) }]));
  }

  /** Every partition's log start offset and high watermark (a broker's start). */
  async allStates(): Promise<Array<{ topic: string; partition: number; logStartOffset: number; highWatermark: number }>> {
    const { rows } = await this.query<{ topic: string; partition: number; log_start_offset: string; high_watermark: string }>('all partition states',
      `SELECT topic, partition, log_start_offset, high_watermark FROM ${this.partitions}`, []);
    return rows.map((r) => ({ topic: r.topic, partition: r.partition, logStartOffset: Number(r.log_start_offset), highWatermark: Number(r.high_watermark) }));
  }

  /** Bytes of the chunks holding each partition's readable records (from the one holding the log start offset). */
  async sizes(topic: string): Promise<Map<number, number>> {
    const { rows } = await this.query<{ partition: number; bytes: string }>('partition sizes', `SELECT i.partition, sum(i.length) AS bytes
      FROM ${this.index} AS i JOIN ${this.partitions} AS p ON p.topic = i.topic AND p.partition = i.partition
      WHERE i.topic = $1 AND i.end_offset > p.log_start_offset GROUP BY i.partition`, [topic]);
    return new Map(rows.map((r) => [r.partition, Number(r.bytes)]));
  }

  /** Bytes of the chunks from the one holding `offset` to the end of the partition. */
  async bytesFrom(topic: string, partition: number, offset: number): Promise<number> {
    const { rows: [r] } = await this.query<{ bytes: string | null }>('bytes from', `SELECT sum(length) AS bytes FROM ${this.index}
      WHERE topic = $1 AND partition = $2 AND end_offset > $3`, [topic, partition, offset]);
    return Number(r?.bytes ?? 0);
  }

  /**
   * The first index row at or after `fromOffset` whose chunk holds a record with timestamp >= `timestamp` (ms):
   * the first record at or after a time is in it, if anywhere.
   */
  async firstChunkAtOrAfter(topic: string, partition: number, timestamp: number, fromOffset: number): Promise<IndexEntry | undefined> {
    const { rows: [r] } = await this.query<IndexRow>(
      'chunk by timestamp', `SELECT base_offset, end_offset, object_key, position, length, max_timestamp FROM ${this.index}
        WHERE topic = $1 AND partition = $2 AND end_offset > $3 AND max_timestamp >= $4 ORDER BY base_offset LIMIT 1`, [topic, partition, fromOffset, timestamp]);
    return r === undefined ? undefined : toIndexEntry(r);
  }

  /**
   * Where size retention moves a partition's log start: the base offset of the first chunk from which the chunks to
   * the end of the log fit in `retentionBytes`; the high watermark when even the last does not fit.
   */
  async sizeBoundary(topic: string, partition: number, retentionBytes: number): Promise<number> {
    const { rows: [r] } = await this.query<{ boundary: string }>('size boundary', `SELECT coalesce((
        SELECT min(base_offset) FROM (SELECT i.base_offset, sum(i.length) OVER (ORDER BY i.base_offset DESC) AS after
          FROM ${this.index} AS i WHERE i.topic = p.topic AND i.partition = p.partition AND i.end_offset > p.log_start_offset) AS s
        WHERE after <= $3), p.high_watermark) AS boundary
      FROM ${this.partitions} AS p WHERE p.topic = $1 AND p.partition = $2`, [topic, partition, retentionBytes]);
    return Number(r?.boundary ?? 0);
  }

  /** Records the idempotent batches of accepted chunks at their offsets, keeping each producer's last few. */
  private async recordProducerBatches(client: PoolClient, accepted: ReadonlyArray<ObjectChunk & { baseOffset: number }>): Promise<void> {
    const rows = accepted.flatMap((c) => (c.producerBatches ?? []).map((b) => ({ topic: c.topic, partition: c.partition, ...b, base: c.baseOffset + b.offsetInChunk })));
    if (rows.length === 0) return;
    const col = <K extends keyof (typeof rows)[number]>(k: K) => rows.map((r) => r[k]);
    await client.query(`INSERT INTO ${this.producers} (topic, partition, producer_id, producer_epoch, base_sequence, last_sequence, base_offset, last_offset)
      SELECT t, p, id, e, bs, ls, bo, bo + d FROM unnest($1::text[], $2::int[], $3::bigint[], $4::int[], $5::int[], $6::int[], $7::bigint[], $8::bigint[])
        AS r(t, p, id, e, bs, ls, bo, d)`,
    [col('topic'), col('partition'), col('producerId'), col('producerEpoch'), col('baseSequence'), col('lastSequence'), col('base'), col('lastOffsetDelta')]);
    await client.query(`DELETE FROM ${this.producers} AS pb USING (
        SELECT topic, partition, producer_id, base_offset, row_number() OVER (PARTITION BY topic, partition, producer_id ORDER BY base_offset DESC) AS n
        FROM ${this.producers} WHERE (topic, partition, producer_id) IN (SELECT * FROM unnest($1::text[], $2::int[], $3::bigint[]))) AS old
      WHERE pb.topic = old.topic AND pb.partition = old.partition AND pb.producer_id = old.producer_id AND pb.base_offset = old.base_offset
        AND old.n > ${PRODUCER_BATCHES_KEPT}`, [col('topic'), col('partition'), col('producerId')]);
  }

  /** A partition's stored idempotent batches, in offset order: its producer state, replayed. */
  async producerBatches(topic: string, partition: number): Promise<StoredProducerBatch[]> {
    const { rows } = await this.query<{ producer_id: string; producer_epoch: number; base_sequence: number; last_sequence: number; base_offset: string; last_offset: string }>(
      'producer state', `SELECT producer_id, producer_epoch, base_sequence, last_sequence, base_offset, last_offset FROM ${this.producers}
        WHERE topic = $1 AND partition = $2 ORDER BY base_offset`, [topic, partition]);
    return rows.map((r) => ({
      producerId: Number(r.producer_id), producerEpoch: r.producer_epoch, baseSequence: r.base_sequence, lastSequence: r.last_sequence,
      baseOffset: Number(r.base_offset), lastOffset: Number(r.last_offset),
    }));
  }

  /**
   * Replaces index rows of a partition by others (the merge and compaction jobs), in one transaction: only if every
   * row of `rows` is still as given (none replaced or removed meanwhile: by a merge, a compaction, retention, a
   * topic's deletion); otherwise nothing is done. The new objects are recorded as committed; the objects no row
   * refers to any more are marked retired (the sweep deletes them a grace later).
   * @param rows the rows to replace, as {@link lookup} gave them (not necessarily consecutive)
   * @param replacements the new rows: their offsets lie within those of `rows` and do not overlap (may be empty:
   *   every offset of `rows` was compacted away)
   * @param created the objects the new rows refer to, PUT before the call
   * @returns whether the rows were replaced
   * @throws OnelogError `STORAGE_ERROR` if the transaction fails (nothing of it committed)
   */
  async rewriteIndexRows(
    topic: string, partition: number, rows: readonly IndexEntry[], replacements: readonly IndexEntry[],
    created: ReadonlyArray<{ objectKey: string; sizeBytes: number }>,
  ): Promise<boolean> {
    if (rows.length === 0) return false;
    return inTransaction(this.pool, 'sequencer: replace index rows', async (client) => {
      const match = `topic = $1 AND partition = $2 AND (base_offset, end_offset, object_key, position, length)
        IN (SELECT * FROM unnest($3::bigint[], $4::bigint[], $5::text[], $6::bigint[], $7::bigint[]))`;
      const params = [topic, partition, rows.map((r) => r.baseOffset), rows.map((r) => r.endOffset), rows.map((r) => r.objectKey),
        rows.map((r) => r.position), rows.map((r) => r.length)];
      const { rowCount } = await client.query(`SELECT 1 FROM ${this.index} WHERE ${match} FOR UPDATE`, params);
      if (rowCount !== rows.length) return false; // another change won: nothing is done
      await client.query(`DELETE FROM ${this.index} WHERE ${match}`, params);
      if (replacements.length > 0) {
        await client.query(`INSERT INTO ${this.index} (topic, partition, base_offset, end_offset, object_key, position, length, max_timestamp)
          SELECT $1, $2, b, e, k, p, l, m FROM unnest($3::bigint[], $4::bigint[], $5::text[], $6::bigint[], $7::bigint[], $8::bigint[]) AS r(b, e, k, p, l, m)`,
        [topic, partition, replacements.map((r) => r.baseOffset), replacements.map((r) => r.endOffset), replacements.map((r) => r.objectKey),
          replacements.map((r) => r.position), replacements.map((r) => r.length), replacements.map((r) => r.maxTimestamp)]);
      }
      if (created.length > 0) {
        await client.query(`INSERT INTO ${this.objects} (object_key, broker_id, size_bytes, committed_at)
          SELECT k, $1, s, clock_timestamp() FROM unnest($2::text[], $3::bigint[]) AS o(k, s)`,
        [this.brokerId, created.map((o) => o.objectKey), created.map((o) => o.sizeBytes)]);
      }
      await this.retireUnreferenced(client, rows.map((r) => r.objectKey));
      return true;
    });
  }

  /** Objects retired before `beforeMs` (ms since the epoch, database time): no index row refers to them. */
  async retiredObjects(beforeMs: number): Promise<string[]> {
    const { rows } = await this.query<{ object_key: string }>('retired objects', `SELECT object_key FROM ${this.objects}
      WHERE retired_at < to_timestamp($1::double precision / 1000) ORDER BY object_key`, [beforeMs]);
    return rows.map((r) => r.object_key);
  }

  /** Forgets objects deleted from the bucket. */
  async forgetObjects(keys: readonly string[]): Promise<void> {
    await this.query('forget objects', `DELETE FROM ${this.objects} WHERE object_key = ANY($1::text[]) AND retired_at IS NOT NULL`, [keys]);
  }

  /** Which of `keys` are committed objects (the others, if in the bucket, are orphans). */
  async committedObjects(keys: readonly string[]): Promise<Set<string>> {
    const { rows } = await this.query<{ object_key: string }>('committed objects', `SELECT object_key FROM ${this.objects} WHERE object_key = ANY($1::text[])`, [keys]);
    return new Set(rows.map((r) => r.object_key));
  }

  /** A partition's log start offset, high watermark and lease; undefined for a partition not added. */
  async state(topic: string, partition: number): Promise<PartitionState | undefined> {
    const { rows: [r] } = await this.query<{ log_start_offset: string; high_watermark: string; leader_broker_id: number | null; leader_epoch: string; expires_ms: string | null }>(
      'partition state', `SELECT log_start_offset, high_watermark, leader_broker_id, leader_epoch,
        (extract(epoch from lease_expires_at) * 1000)::bigint AS expires_ms FROM ${this.partitions} WHERE topic = $1 AND partition = $2`, [topic, partition]);
    if (r === undefined) return undefined;
    return {
      logStartOffset: Number(r.log_start_offset), highWatermark: Number(r.high_watermark), leaderBrokerId: r.leader_broker_id,
      leaderEpoch: Number(r.leader_epoch), leaseExpiresAt: r.expires_ms === null ? null : Number(r.expires_ms),
    };
  }

  /**
   * Who sequences each partition of `topics` now, in one query: the holder of its lease, if that lease has not
   * expired by the database's clock. A partition nobody holds (never produced to, given up at a close, or its lease
   * run out because no produce renewed it) is left out, as are topics without partitions here: any broker takes
   * such a lease at its next produce to the partition.
   * @returns by topic, then partition: the holder's broker id
   * @throws OnelogError `STORAGE_ERROR`
   */
  async leaders(topics: readonly string[]): Promise<Map<string, Map<number, number>>> {
    const out = new Map<string, Map<number, number>>();
    if (topics.length === 0) return out;
    const { rows } = await this.query<{ topic: string; partition: number; leader_broker_id: number }>('partition leaders',
      `SELECT topic, partition, leader_broker_id FROM ${this.partitions}
        WHERE topic = ANY($1::text[]) AND leader_broker_id IS NOT NULL AND lease_expires_at > clock_timestamp()`, [topics]);
    for (const r of rows) {
      let partitions = out.get(r.topic);
      if (partitions === undefined) out.set(r.topic, (partitions = new Map()));
      partitions.set(r.partition, r.leader_broker_id);
    }
    return out;
  }

  /**
   * Checks that a commit could run now, for the broker's `/health`: reads a row of the partitions table in a
   * transaction whose lock wait is bounded by `timeoutMs` (PostgreSQL's `lock_timeout`; its `statement_timeout` 250 ms
   * more), so a lock that would stall every commit (`LOCK TABLE`, a migration's `ALTER TABLE`, `VACUUM
   * FULL`) fails it within `timeoutMs` instead of waiting with the commits.
   * @throws OnelogError `STORAGE_ERROR` naming the table, with `waitedMs`, when the lock wait or the statement timed out;
   *   `STORAGE_ERROR` of PostgreSQL's failure
   */
  async probe(timeoutMs: number): Promise<void> {
    const ms = Math.max(1, Math.round(timeoutMs));
    await inTransaction(this.pool, 'sequencer: health probe', async (client) => {
      await client.query(`SET LOCAL lock_timeout = ${ms}`);
      // A little longer than the lock wait, so that a lock is named as such.
      await client.query(`SET LOCAL statement_timeout = ${ms + 250}`);
      try {
        await client.query(`SELECT 1 FROM ${this.partitions} LIMIT 1`);
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (code === '55P03') {
          throw new OnelogError('STORAGE_ERROR', `PostgreSQL: a lock on ${this.partitions} was waited for ${ms} ms: commits (produces) are blocked ` +
            '(see pg_locks and pg_stat_activity for the session holding it)', { store: 'postgres', table: this.partitions, waitedMs: ms });
        }
        if (code === '57014') {
          throw new OnelogError('STORAGE_ERROR', `PostgreSQL: a read of ${this.partitions} took over ${ms + 250} ms (statement_timeout): the server is ` +
            'overloaded or blocked', { store: 'postgres', table: this.partitions, waitedMs: ms + 250 });
        }
        throw err;
      }
    });
  }

  /** @see Sequencer.partitionLeases @throws OnelogError `STORAGE_ERROR` */
  async partitionLeases(topic?: string): Promise<PartitionLease[]> {
    const { rows } = await this.query<{ topic: string; partition: number; leader_broker_id: number; leader_epoch: string; expires_ms: string }>(
      'partition leases', `SELECT topic, partition, leader_broker_id, leader_epoch, (extract(epoch from lease_expires_at) * 1000)::bigint AS expires_ms
        FROM ${this.partitions} WHERE leader_broker_id IS NOT NULL AND lease_expires_at > clock_timestamp()
        ${topic === undefined ? '' : 'AND topic = $1'} ORDER BY topic, partition`, topic === undefined ? [] : [topic]);
    return rows.map((r) => ({ topic: r.topic, partition: r.partition, brokerId: r.leader_broker_id, epoch: Number(r.leader_epoch), expiresAt: Number(r.expires_ms) }));
  }

  /**
   * LISTENs to {@link channel} on a connection of its own: each notification names a commit's partitions
   * (`partition:highWatermark:topic` a line).
   * @throws OnelogError `INVALID_CONFIG` without `listenUrl`; `STORAGE_ERROR` if PostgreSQL cannot be reached
   */
  listenCommits(committed: (topic: string, partition: number, highWatermark: number) => void): Promise<SequencerListener> {
    return this.listen('object log', this.channel, (payload) => {
      for (const line of payload.split('\n')) {
        const first = line.indexOf(':');
        const second = line.indexOf(':', first + 1);
        if (first < 0 || second < 0) continue;
        committed(line.slice(second + 1), Number(line.slice(0, first)), Number(line.slice(first + 1, second)));
      }
    });
  }

  /**
   * LISTENs to `<channel>_topics` on a connection of its own.
   * @throws OnelogError `INVALID_CONFIG` without `listenUrl`; `STORAGE_ERROR` if PostgreSQL cannot be reached
   */
  listenTopics(changed: (topic: string) => void): Promise<SequencerListener> {
    return this.listen('cluster logs', `${this.channel}_topics`, changed);
  }

  /** Notifies `<channel>_topics` with the topic's name. */
  async announceTopic(topic: string): Promise<void> {
    await this.query('announce topic', 'SELECT pg_notify($1, $2)', [`${this.channel}_topics`, topic]);
  }

  /** A connection LISTENing to `channel`; a lost one is not replaced (waits end on their timeouts, reads still see the database). */
  private async listen(who: string, channel: string, heard: (payload: string) => void): Promise<SequencerListener> {
    if (this.listenUrl === undefined) {
      throw new OnelogError('INVALID_CONFIG', `${who}: the sequencer was opened without a listenUrl, so nothing can listen to ${channel}`, { channel });
    }
    const listener = new pg.Client({ connectionString: withDefaultUser(this.listenUrl) });
    listener.on('error', () => {});
    try {
      await listener.connect();
      await listener.query(`LISTEN ${channel}`);
    } catch (err) {
      await listener.end().catch(() => {});
      throw new OnelogError('STORAGE_ERROR', `${who}: listening to ${channel} failed: ${(err as Error).message}`, { store: 'postgres' });
    }
    listener.on('notification', (n) => heard(n.payload ?? ''));
    return { close: () => listener.end().catch(() => {}) };
  }

  /** Why a chunk's lease check failed: who holds the partition now, for the client's retry. */
  private async notLeader(client: PoolClient, c: ObjectChunk): Promise<OnelogError> {
    const { rows: [r] } = await client.query<{ leader_broker_id: number | null; leader_epoch: string }>(
      `SELECT leader_broker_id, leader_epoch FROM ${this.partitions} WHERE topic = $1 AND partition = $2`, [c.topic, c.partition]);
    return notLeaderError(this.brokerId, c, r === undefined ? undefined : { leaderBrokerId: r.leader_broker_id, leaderEpoch: Number(r.leader_epoch) });
  }


  private query<R extends object>(action: string, text: string, params: unknown[]): Promise<{ rows: R[] }> {
    return query<R>(this.pool, `sequencer: ${action}`, text, params);
  }
}

/** An index row as PostgreSQL answers it. */
interface IndexRow {
  base_offset: string;
  end_offset: string;
  object_key: string;
  position: string;
  length: string;
  max_timestamp: string;
}

function toIndexEntry(r: IndexRow): IndexEntry {
  return {
    baseOffset: Number(r.base_offset), endOffset: Number(r.end_offset), objectKey: r.object_key,
    position: Number(r.position), length: Number(r.length), maxTimestamp: Number(r.max_timestamp),
  };
}

/**
 * The cluster's single commit point, in PostgreSQL: partition leases, offset assignment and the segment index
 * (docs/cluster.md). A broker PUTs an object holding batches of many partitions under a fresh key, then calls
 * {@link Sequencer.commit}: one transaction that, for each partition of the object, checks that the broker still
 * holds the partition's lease at the epoch it sequenced with (by the database's clock), advances the
 * partition's high watermark by the chunk's offsets, and inserts the index row saying which bytes of which
 * object hold them. A produce is acknowledged only after the PUT and this transaction. A broker paused past its
 * lease (GC, SIGSTOP) finds its epoch replaced and its commit refused for those partitions: nothing it wrote is
 * indexed, so nothing is served, and its object is swept later.
 *
 * Tables (names under a prefix, default `onelog_`):
 * - `<prefix>partitions (topic, partition)`: `log_start_offset`, `high_watermark`, and the lease: `leader_broker_id`,
 *   `leader_epoch` (the fencing token, raised at every change of holder), `lease_expires_at` (database time);
 * - `<prefix>log_index (topic, partition, base_offset)`: `end_offset` (exclusive), `object_key`, `position`, `length`
 *   (bytes), `max_timestamp` (ms): one row per partition chunk of an object;
 * - `<prefix>objects (object_key)`: `broker_id`, `size_bytes`, `committed_at`, `retired_at`: every committed object
 *   (an object in the bucket with no row is an orphan: its commit failed or never came); `retired_at` is set when
 *   no index row refers to it any more (a merge or a compaction replaced its chunks, retention dropped them), and the
 *   sweep deletes it a grace later;
 * - `<prefix>producer_batches (topic, partition, producer_id, base_offset)`: the last batches of each idempotent
 *   producer in each partition (epoch, sequences, offsets), written in the commit that stores them, so a broker
 *   that takes a partition over recognises the retries of batches another broker stored.
 *
 * Offsets of a partition are assigned only here, under the row lock of its `partitions` row, so they strictly
 * increase with no gap and no overlap whichever broker commits (the property test checks it under lease steals).
 */
import { createHash } from 'node:crypto';
import type { Pool, PoolClient } from 'pg';
import { checkTablePrefix, createTables, inTransaction, query } from '../../common/postgres.js';
import { OnelogError } from '../../protocol/errors.js';

/** Options of {@link Sequencer.open}. */
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
  /** Prefix of the tables' names: lower-case letters, digits and `_`. @default 'onelog_' */
  tablePrefix?: string;
}

/** A partition's lease as this broker holds it. */
export interface Lease {
  topic: string;
  partition: number;
  /** The fencing token: every commit carries it; a new holder raises it. */
  epoch: number;
  /** When it ends unless renewed, ms since the epoch, database time. */
  expiresAt: number;
}

/** One partition's part of an object: its batches, contiguous, at `position` for `length` bytes. */
export interface ObjectChunk {
  topic: string;
  partition: number;
  /** The lease epoch the broker sequenced the chunk under. */
  epoch: number;
  /** Offsets the chunk's batches take: the sum of each batch's lastOffsetDelta + 1. */
  offsets: number;
  /** Byte position of the chunk in the object. */
  position: number;
  /** Bytes of the chunk. */
  length: number;
  /** Largest record timestamp in the chunk, ms. */
  maxTimestamp: number;
  /** The chunk's idempotent batches, recorded with their offsets in the same transaction (see {@link producerBatches}). */
  producerBatches?: readonly ChunkProducerBatch[];
}

/** An idempotent producer's batch in a chunk: its producer fields and where it lies among the chunk's offsets. */
export interface ChunkProducerBatch {
  producerId: number;
  producerEpoch: number;
  baseSequence: number;
  lastSequence: number;
  /** Offsets of the chunk before the batch's first. */
  offsetInChunk: number;
  lastOffsetDelta: number;
}

/** An idempotent producer's batch as stored: the rows a partition's producer state is rebuilt from. */
export interface StoredProducerBatch {
  producerId: number;
  producerEpoch: number;
  baseSequence: number;
  lastSequence: number;
  baseOffset: number;
  lastOffset: number;
}

/** Batches kept per producer and partition (Kafka's NUM_BATCHES_TO_RETAIN). */
const PRODUCER_BATCHES_KEPT = 5;

/** What a commit did with one chunk: its first offset, or why it was refused (nothing of it indexed). */
export type ChunkResult = { baseOffset: number; highWatermark: number } | { error: OnelogError };

/** An index row: offsets `[baseOffset, endOffset)` of a partition at bytes `[position, position + length)` of an object. */
export interface IndexEntry {
  baseOffset: number;
  endOffset: number;
  objectKey: string;
  position: number;
  length: number;
  maxTimestamp: number;
}

/** A partition's positions and lease, as the database has them now. */
export interface PartitionState {
  logStartOffset: number;
  highWatermark: number;
  leaderBrokerId: number | null;
  leaderEpoch: number;
  leaseExpiresAt: number | null;
}

export class Sequencer {
  private readonly partitions: string;
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
  static async open(options: SequencerOptions): Promise<Sequencer> {
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
    const s = new Sequencer(options.pool, options.brokerId, leaseMs, options.maxObjectAgeMs ?? 300_000, prefix, channel);
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
    const state = await this.state(topic, partition);
    if (state === undefined) throw new OnelogError('UNKNOWN_PARTITION', `partition ${topic}/${partition} does not exist`, { topic, partition });
    throw new OnelogError('OFFSET_OUT_OF_RANGE', `cannot delete records before ${offset} in ${topic}/${partition}: the high watermark is ${state.highWatermark}`,
      { topic, partition, offset, logStartOffset: state.logStartOffset, highWatermark: state.highWatermark });
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
   * Replaces consecutive index rows of a partition by one row of a merged object (the merge job), in one
   * transaction: only if the rows are still as given (none replaced or removed meanwhile). Objects no row refers
   * to any more are marked retired.
   * @param rows consecutive rows, oldest first, as {@link lookup} gave them
   * @returns whether the rows were replaced
   */
  async replaceIndexRows(topic: string, partition: number, rows: readonly IndexEntry[], merged: { objectKey: string; length: number; sizeBytes: number }): Promise<boolean> {
    const first = rows[0]!;
    const last = rows[rows.length - 1]!;
    return this.rewriteIndexRows(topic, partition, rows, [{
      baseOffset: first.baseOffset, endOffset: last.endOffset, objectKey: merged.objectKey, position: 0, length: merged.length,
      maxTimestamp: Math.max(...rows.map((r) => r.maxTimestamp)),
    }], [{ objectKey: merged.objectKey, sizeBytes: merged.sizeBytes }]);
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

  /** Why a chunk's lease check failed: who holds the partition now, for the client's retry. */
  private async notLeader(client: PoolClient, c: ObjectChunk): Promise<OnelogError> {
    const { rows: [r] } = await client.query<{ leader_broker_id: number | null; leader_epoch: string; expired: boolean }>(
      `SELECT leader_broker_id, leader_epoch, lease_expires_at <= clock_timestamp() AS expired FROM ${this.partitions} WHERE topic = $1 AND partition = $2`,
      [c.topic, c.partition]);
    if (r === undefined) return new OnelogError('UNKNOWN_PARTITION', `partition ${c.topic}/${c.partition} does not exist`, { topic: c.topic, partition: c.partition });
    const context = { topic: c.topic, partition: c.partition, brokerId: this.brokerId, epoch: c.epoch, leaderBrokerId: r.leader_broker_id, leaderEpoch: Number(r.leader_epoch) };
    const why = r.leader_broker_id === this.brokerId && Number(r.leader_epoch) === c.epoch ? 'its lease expired'
      : `broker ${r.leader_broker_id ?? 'none'} holds it at epoch ${r.leader_epoch}`;
    return new OnelogError('NOT_LEADER_OR_FOLLOWER', `broker ${this.brokerId} may no longer write ${c.topic}/${c.partition} at epoch ${c.epoch}: ${why}; ` +
      'send it again (to the partition\'s leader)', context);
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

/** (topic, partition) order as the tables' "C" collation has it: topic by UTF-8 bytes, then partition. */
function byTopicPartition(a: { topic: string; partition: number }, b: { topic: string; partition: number }): number {
  return Buffer.compare(Buffer.from(a.topic), Buffer.from(b.topic)) || a.partition - b.partition;
}

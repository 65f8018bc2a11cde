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
 * This file is the sequencer's interface, what the object log, its jobs (merger, sweep, compactor) and the cluster's
 * partitions ask of it; its engine is PostgreSQL ({@link PostgresSequencer}, postgres-sequencer.ts), whose tables
 * follow. (The unit tests run the object engine over an in-memory sequencer with the same semantics,
 * test/helpers/memory-sequencer.ts.)
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
import { OnelogError } from '../../protocol/errors.js';

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
export const PRODUCER_BATCHES_KEPT = 5;

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


/** A partition's lease held now, as {@link Sequencer.partitionLeases} lists it. */
export interface PartitionLease {
  topic: string;
  partition: number;
  brokerId: number;
  epoch: number;
  /** ms since the epoch, the sequencer's clock */
  expiresAt: number;
}

/** A connection hearing the sequencer's announcements ({@link Sequencer.listenCommits}, {@link Sequencer.listenTopics}). */
export interface SequencerListener {
  /** Stops hearing. */
  close(): Promise<void>;
}

export interface Sequencer {
  /** This broker's id: who holds the leases it acquires. */
  readonly brokerId: number;
  /** How long a lease lasts unless renewed, ms, by the sequencer's clock. */
  readonly leaseMs: number;
  /** An object whose PUT began longer ago than this is not committed, ms (see {@link commit}). */
  readonly maxObjectAgeMs: number;
  /** Adds a topic's partitions (empty logs, no lease); those that exist stay as they are. */
  addPartitions(topic: string, partitions: number): Promise<void>;
  /**
   * Takes or renews the lease of each partition this broker may hold: one nobody holds, whose lease expired, or
   * that it holds already (renewed at the same epoch). Taking one raises its epoch.
   * @returns the leases held after the call, in (topic, partition) order (the partitions another live broker holds are left out)
   */
  acquire(partitions: ReadonlyArray<{ topic: string; partition: number }>): Promise<Lease[]>;
  /** Gives leases up at once (a clean shutdown), so another broker takes them without waiting for expiry. */
  release(leases: readonly Lease[]): Promise<void>;
  /**
   * Hands leases this broker holds over to other brokers (the lease balance and drains, src/cluster/lease-balance.ts):
   * each partition held by this broker at the epoch given (not expired) goes to `toBrokerId` at the next epoch, for a
   * whole lease, atomically; the new holder renews it at that epoch at its first produce, and this broker's commits at
   * the old epoch are refused from then on.
   * @returns the partitions handed over, in (topic, partition) order
   * @throws OnelogError `STORAGE_ERROR` (nothing handed over)
   */
  handOver(moves: ReadonlyArray<{ topic: string; partition: number; epoch: number; toBrokerId: number }>): Promise<Array<{ topic: string; partition: number }>>;
  /**
   * Commits an object PUT under `objectKey`, atomically: for each chunk, checks the lease (this broker, the chunk's
   * epoch, not expired), assigns the chunk's offsets after the partition's high watermark, indexes them and records
   * its idempotent batches; then announces each partition's new high watermark to {@link listenCommits}. A chunk
   * whose lease check fails is refused (`NOT_LEADER_OR_FOLLOWER`, retriable) and leaves no trace; the others commit.
   * @param putStartedAt when the object's PUT began, ms since the epoch (this broker's clock): an object older than
   *   `maxObjectAgeMs` is refused whole (`REQUEST_TIMED_OUT`: the orphan sweep may be deleting it)
   * @returns one result per chunk, in the order given
   * @throws OnelogError `INVALID_REQUEST` for a chunk taking no offset; `STORAGE_ERROR` (nothing of it committed)
   */
  commit(objectKey: string, sizeBytes: number, chunks: readonly ObjectChunk[], putStartedAt?: number): Promise<ChunkResult[]>;
  /**
   * The index rows of a partition that hold offsets at or after `offset` and below its high watermark, in
   * offset order, at most `limit` of them (default 16).
   */
  lookup(topic: string, partition: number, offset: number, limit?: number): Promise<IndexEntry[]>;
  /**
   * Moves a partition's log start offset forward to `offset` (never back); the rows wholly below it go and the
   * objects no row refers to any more are retired. Any broker may: it orders nothing.
   * @returns the log start offset after the call
   * @throws OnelogError `OFFSET_OUT_OF_RANGE` above the high watermark, `UNKNOWN_PARTITION`
   */
  deleteRecordsBefore(topic: string, partition: number, offset: number): Promise<number>;
  /** Removes a deleted topic's partitions, index rows and producer state; its objects no other row refers to are retired. */
  deletePartitions(topic: string): Promise<void>;
  /** The log start offset and high watermark of some partitions of a topic now (those not added are left out). */
  states(topic: string, partitions: readonly number[]): Promise<Map<number, { logStartOffset: number; highWatermark: number }>>;
  /** Every partition's log start offset and high watermark (a broker's start). */
  allStates(): Promise<Array<{ topic: string; partition: number; logStartOffset: number; highWatermark: number }>>;
  /** Bytes of the chunks holding each partition's readable records (from the one holding the log start offset). */
  sizes(topic: string): Promise<Map<number, number>>;
  /** Bytes of the chunks from the one holding `offset` to the end of the partition. */
  bytesFrom(topic: string, partition: number, offset: number): Promise<number>;
  /**
   * The first index row at or after `fromOffset` whose chunk holds a record with timestamp >= `timestamp` (ms):
   * the first record at or after a time is in it, if anywhere.
   */
  firstChunkAtOrAfter(topic: string, partition: number, timestamp: number, fromOffset: number): Promise<IndexEntry | undefined>;
  /**
   * Where size retention moves a partition's log start: the base offset of the first chunk from which the chunks to
   * the end of the log fit in `retentionBytes`; the high watermark when even the last does not fit.
   */
  sizeBoundary(topic: string, partition: number, retentionBytes: number): Promise<number>;
  /** A partition's stored idempotent batches (each producer's last {@link PRODUCER_BATCHES_KEPT}), in offset order. */
  producerBatches(topic: string, partition: number): Promise<StoredProducerBatch[]>;
  /**
   * Replaces index rows of a partition by others (the merge and compaction jobs), atomically: only if every row of
   * `rows` is still as given (none replaced or removed meanwhile); otherwise nothing is done. The new objects are
   * recorded as committed; the objects no row refers to any more are marked retired (the sweep deletes them a grace later).
   * @param rows the rows to replace, as {@link lookup} gave them (not necessarily consecutive)
   * @param replacements the new rows, within the offsets of `rows` (may be empty: every offset was compacted away)
   * @param created the objects the new rows refer to, PUT before the call
   * @returns whether the rows were replaced
   * @throws OnelogError `STORAGE_ERROR` (nothing of it committed)
   */
  rewriteIndexRows(
    topic: string, partition: number, rows: readonly IndexEntry[], replacements: readonly IndexEntry[],
    created: ReadonlyArray<{ objectKey: string; sizeBytes: number }>,
  ): Promise<boolean>;
  /** Objects retired before `beforeMs` (ms since the epoch, the sequencer's clock): no index row refers to them. */
  retiredObjects(beforeMs: number): Promise<string[]>;
  /** Forgets retired objects deleted from the bucket. */
  forgetObjects(keys: readonly string[]): Promise<void>;
  /** Which of `keys` are committed objects (the others, if in the bucket, are orphans). */
  committedObjects(keys: readonly string[]): Promise<Set<string>>;
  /** A partition's log start offset, high watermark and lease; undefined for a partition not added. */
  state(topic: string, partition: number): Promise<PartitionState | undefined>;
  /**
   * Who sequences each partition of `topics` now: the holder of its lease, if not expired (partitions nobody
   * holds are left out), by topic, then partition.
   */
  leaders(topics: readonly string[]): Promise<Map<string, Map<number, number>>>;
  /**
   * Every partition lease held now (not expired), in (topic, partition) order: what `onelog cluster describe` shows;
   * with `topic`, only that topic's (`onelog topics describe`).
   */
  partitionLeases(topic?: string): Promise<PartitionLease[]>;
  /**
   * Hears every broker's commits: `committed` is called with each partition's new high watermark.
   * @throws OnelogError `STORAGE_ERROR` if it cannot start hearing
   */
  listenCommits(committed: (topic: string, partition: number, highWatermark: number) => void): Promise<SequencerListener>;
  /**
   * Hears the topic changes every broker announces ({@link announceTopic}).
   * @throws OnelogError `STORAGE_ERROR` if it cannot start hearing
   */
  listenTopics(changed: (topic: string) => void): Promise<SequencerListener>;
  /** Tells every broker's {@link listenTopics} that a topic was created, altered or deleted. @throws OnelogError `STORAGE_ERROR` */
  announceTopic(topic: string): Promise<void>;
}

/** A merged object, as {@link replaceByMerged} indexes it: one chunk at position 0. */
export interface MergedObject {
  objectKey: string;
  /** Bytes of its chunk. */
  length: number;
  /** Bytes of the object. */
  sizeBytes: number;
}

/**
 * Replaces consecutive index rows of a partition (oldest first) by one row of a merged object (the merge job): the
 * sequencer's {@link Sequencer.rewriteIndexRows} with the one row spanning them, at the object's only chunk.
 * @returns whether the rows were replaced (false when another change replaced or removed any of them meanwhile)
 * @throws OnelogError as {@link Sequencer.rewriteIndexRows}
 */
export function replaceByMerged(sequencer: Sequencer, topic: string, partition: number, rows: readonly IndexEntry[], merged: MergedObject): Promise<boolean> {
  const row: IndexEntry = {
    baseOffset: rows[0]!.baseOffset, endOffset: rows[rows.length - 1]!.endOffset, objectKey: merged.objectKey, position: 0, length: merged.length,
    maxTimestamp: Math.max(...rows.map((r) => r.maxTimestamp)),
  };
  return sequencer.rewriteIndexRows(topic, partition, rows, [row], [{ objectKey: merged.objectKey, sizeBytes: merged.sizeBytes }]);
}

/** (topic, partition) order as the tables' "C" collation has it: topic by UTF-8 bytes, then partition. */
export function byTopicPartition(a: { topic: string; partition: number }, b: { topic: string; partition: number }): number {
  return Buffer.compare(Buffer.from(a.topic), Buffer.from(b.topic)) || a.partition - b.partition;
}

/**
 * Why a chunk's lease check failed: who holds the partition now (`holder`; undefined: no such partition), for the
 * client's retry.
 */
export function notLeaderError(brokerId: number, c: ObjectChunk, holder: { leaderBrokerId: number | null; leaderEpoch: number } | undefined): OnelogError {
  if (holder === undefined) return new OnelogError('UNKNOWN_PARTITION', `partition ${c.topic}/${c.partition} does not exist`, { topic: c.topic, partition: c.partition });
  const context = { topic: c.topic, partition: c.partition, brokerId, epoch: c.epoch, leaderBrokerId: holder.leaderBrokerId, leaderEpoch: holder.leaderEpoch };
  const why = holder.leaderBrokerId === brokerId && holder.leaderEpoch === c.epoch ? 'its lease expired'
    : `broker ${holder.leaderBrokerId ?? 'none'} holds it at epoch ${holder.leaderEpoch}`;
  return new OnelogError('NOT_LEADER_OR_FOLLOWER', `broker ${brokerId} may no longer write ${c.topic}/${c.partition} at epoch ${c.epoch}: ${why}; ` +
    'send it again (to the partition\'s leader)', context);
}

/** Why {@link Sequencer.deleteRecordsBefore} refused: no such partition (`state` undefined), or `offset` above its high watermark. */
export function deleteRecordsRefusal(topic: string, partition: number, offset: number, state: PartitionState | undefined): OnelogError {
  if (state === undefined) return new OnelogError('UNKNOWN_PARTITION', `partition ${topic}/${partition} does not exist`, { topic, partition });
  return new OnelogError('OFFSET_OUT_OF_RANGE', `cannot delete records before ${offset} in ${topic}/${partition}: the high watermark is ${state.highWatermark}`,
    { topic, partition, offset, logStartOffset: state.logStartOffset, highWatermark: state.highWatermark });
}

/**
 * The log store's interface: what the broker needs of a log engine, whichever it is. Engines: the local
 * segment files (LocalLogStore over the LogManager, log/segments/local-log-store.ts, the embedded default) and
 * objects in S3-compatible storage indexed in PostgreSQL (log/objects/object-log.ts, cluster mode). Every engine
 * passes the same contract test suite (test/log/log-store.contract.ts).
 *
 * Narrow on purpose (DESIGN.md): append, read, move the log start forward, positions, wait for data.
 */
import type { OnelogError } from '../protocol/errors.js';
import type { AppendResult, LogConfig } from './partition.js';

/** A partition's readable range. */
export interface PartitionPositions {
  /** The first offset still readable. */
  logStartOffset: number;
  /** The offset the next appended record will get. */
  highWatermark: number;
}

/** Whole batches read from a partition, and where the next read starts. */
export interface LogRead extends PartitionPositions {
  /** Batches as stored (RecordBatch v2, offsets stamped), concatenated; empty at the high watermark. */
  batches: Buffer;
  /** The offset after the last batch read (the requested one when nothing was read). */
  nextOffset: number;
}

/** One batch to append, to one partition. */
export interface AppendRequest {
  topic: string;
  partition: number;
  /** An encoded RecordBatch v2 (its base offset is assigned by the store). */
  batch: Buffer;
}

/** What an append did with one batch: where it was stored, or why it was not (nothing of it stored). */
export type AppendOutcome = AppendResult | { error: OnelogError };

export interface LogStore {
  /** Makes a topic's partitions, empty. */
  createTopic(topic: string, partitions: number, config: LogConfig): Promise<void>;
  /**
   * Appends batches; each resolves when it is durable as the engine promises (local: the flush policy; objects:
   * the object PUT and its commit in PostgreSQL). Batches of one partition keep their order.
   * @returns one outcome per batch, in the order given
   */
  append(batches: readonly AppendRequest[]): Promise<AppendOutcome[]>;
  /**
   * Whole batches from the one holding `offset`, until `maxBytes` would be passed (the first batch is
   * answered whatever its size).
   * @throws OnelogError `OFFSET_OUT_OF_RANGE` for an offset below the log start or above the high watermark;
   *   `UNKNOWN_TOPIC`, `UNKNOWN_PARTITION`
   */
  read(topic: string, partition: number, offset: number, maxBytes: number): Promise<LogRead>;
  /** @throws OnelogError `UNKNOWN_TOPIC`, `UNKNOWN_PARTITION` */
  positions(topic: string, partition: number): Promise<PartitionPositions>;
  /**
   * Moves the log start offset forward to `offset` (never back): records below it are never served again.
   * @returns the log start offset after the call
   * @throws OnelogError `OFFSET_OUT_OF_RANGE` if `offset` is above the high watermark
   */
  deleteRecordsBefore(topic: string, partition: number, offset: number): Promise<number>;
  /** Resolves once the partition's high watermark is above `offset`, or after `maxWaitMs`. */
  waitForData(topic: string, partition: number, offset: number, maxWaitMs: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * One partition's log as the consumer manager reads it (delivery, group positions, resets, retries and dead
 * letters, health), whichever engine holds it. Positions are answered at once; reads may wait: the local
 * segment files ({@link PartitionLog}) answer them at once, a log in object storage after a ranged GET. Callers
 * await every read, so the same code serves both.
 */
import type { StoredRecord } from '../protocol/types.js';
import type { LogStartReason } from './log-start.js';
import type { TopicConfig } from '../protocol/topic-config.js';

/** Limits of one read. */
export interface ReadLimits {
  /** Stop adding batches past this many bytes (the first batch is returned whatever its size). */
  maxBytes: number;
  /** Return at most this many records. */
  maxRecords: number;
}

/** A value now, or a promise of it (the engine decides). */
export type Awaitable<T> = T | Promise<T>;

export interface Partition {
  readonly topic: string;
  readonly partition: number;
  /** The first offset still readable. */
  readonly logStartOffset: number;
  /** The offset the next appended record gets; reads stop below it. */
  readonly highWatermark: number;
  /** Bytes the log holds. */
  readonly sizeBytes: number;
  /** The topic settings the log runs with. */
  readonly settings: TopicConfig;
  /**
   * Records from `offset` on, and where the next read starts (past offsets compaction emptied).
   * @throws OnelogError `OFFSET_OUT_OF_RANGE` below the log start offset or above the high watermark
   */
  fetch(offset: number, limits: ReadLimits): Awaitable<{ records: StoredRecord[]; nextOffset: number }>;
  /**
   * Whole batches as stored from the one holding `offset`, until `maxBytes` (the first always fits) or
   * `maxRecords` (whole batches: approximate) would be passed.
   * @throws OnelogError `OFFSET_OUT_OF_RANGE` as {@link fetch}
   */
  readBatches(offset: number, maxBytes: number, maxRecords?: number): Awaitable<{ batches: Buffer; nextOffset: number }>;
  /** The first offset whose record's timestamp is at or after `timestamp` (ms), or the high watermark. */
  offsetForTimestamp(timestamp: number): Awaitable<number>;
  /** What is left to read from `offset` (see unread-range.ts). */
  unread(offset: number): Awaitable<UnreadRange>;
  /**
   * Moves the log start offset forward to `offset` (never back).
   * @returns the log start offset after the call
   * @throws OnelogError `OFFSET_OUT_OF_RANGE` if `offset` is above the high watermark
   */
  deleteRecordsBefore(offset: number, reason: LogStartReason): Awaitable<number>;
  /** Resolves once the high watermark is above `offset`, or after `maxWaitMs`, or when waits are ended. */
  waitForData(offset: number, maxWaitMs: number): Promise<void>;
}

/**
 * The settings a log reads from its topic's configuration (segment size, flush policy; later retention and
 * cleanup): see {@link TopicConfig} for units and defaults.
 */
export type LogConfig = TopicConfig;

/** Where an append landed. */
export interface AppendResult {
  baseOffset: number;
  lastOffset: number;
  /**
   * True when the batch was a retry of an idempotent producer's batch already stored: nothing was written,
   * and the offsets are those of the stored copy.
   */
  duplicate?: boolean;
}

/** The records from an offset to the high watermark. */
export interface UnreadRange {
  /** Records at or after the offset, below the high watermark. */
  records: number;
  /** Whether `records` is an estimate (a compacted range longer than the walk's bound). */
  estimate: boolean;
  /** Timestamp of the first of them, ms since the epoch; null when there is none. */
  firstTimestamp: number | null;
  /** Bytes from the start of the batch holding the first of them to the end of the log; 0 when there is none. */
  bytes: number;
}

/**
 * A batch found corrupt on disk: one that fails its length, CRC-32C or offset check where no torn tail explains it
 * (it starts below the recovery point: its records were synced), or the end of a segment that lost synced bytes.
 * Kept as it is, never cut off: reads of it answer `CORRUPT_MESSAGE` naming the same facts.
 */
export interface CorruptBatch {
  /** The segment's `.log` file. */
  segment: string;
  /** The batch's byte position in the file (for lost bytes: the end of the file). */
  position: number;
  /**
   * The batch's first offset: from its header when that is plausible, else the offset after the batch before it
   * (for lost bytes: the first offset lost).
   */
  offset: number;
  /** What is wrong with it. */
  reason: string;
}

/**
 * One partition's log as the consumer manager reads it (delivery, group positions, resets, retries and dead
 * letters, health), whichever engine holds it. Positions are answered at once; reads may wait: the local
 * segment files ({@link PartitionLog}) answer them at once, a log in object storage after a ranged GET. Callers
 * await every read, so the same code serves both.
 */
import type { StoredRecord } from '../protocol/types.js';
import type { LogStartReason } from '../log/log-start.js';
import type { TopicConfig } from '../protocol/topic-config.js';
import type { UnreadRange } from './unread-range.js';

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

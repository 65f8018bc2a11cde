/**
 * Browsing a partition's records (the console's record browser, `GET /topics/:topic/records`): a page of records
 * from an offset, from a timestamp or the newest, optionally only those whose key matches, found within a bounded
 * scan; each value cut past a byte bound. Pure types and bounds: importing this loads nothing.
 */
import type { JsonRecord } from './json-records.js';
import type { PartitionState } from './partitions.js';
import type { StoredRecord } from './types.js';

/** How a key search compares: the whole key (`exact`) or its first bytes (`prefix`). */
export type KeyMatch = 'exact' | 'prefix';
export const KEY_MATCHES: readonly KeyMatch[] = ['exact', 'prefix'];

/** The bounds of a record page, each with its unit last. */
export const RECORD_PAGE_LIMITS = {
  /** Records answered when the request names no `limit`. */
  defaultLimit: 50,
  /** Most records one page answers. */
  maxLimit: 1000,
  /** Records a key search reads when the request names no `maxScanRecords`. */
  defaultScanRecords: 10_000,
  /** Most records one key search reads. */
  maxScanRecords: 100_000,
  /** Bytes of each value answered when the request names no `maxValueBytes` (4 KiB). */
  defaultValueBytes: 4096,
  /** Most value bytes one page answers: `limit` × `maxValueBytes` may not exceed it (64 MiB). */
  maxPageValueBytes: 64 * 1024 * 1024,
  /** Longest key a search may name, bytes (64 KiB). */
  maxKeyBytes: 64 * 1024,
} as const;

/**
 * A page of one partition's records. Where it starts: `offset`, `timestamp` or `newest`, at most one of them
 * (none: `newest`).
 */
export interface RecordPageRequest {
  topic: string;
  partition: number;
  /** Start at this offset, from the log start offset to the high watermark. */
  offset?: number;
  /** Start at the first record whose timestamp is at or after this one, ms since the epoch (Kafka's ListOffsets). */
  timestamp?: number;
  /**
   * The newest records: those at the last `limit` offsets before the high watermark; with `key`, the last `limit`
   * matches among the last `maxScanRecords` records.
   */
  newest?: boolean;
  /** Most records answered. @default 50; 1 to 1,000 */
  limit?: number;
  /** Answer only records whose key matches these bytes (keyless records never match); 1 to 65,536 bytes. */
  key?: Buffer;
  /** How `key` is compared. @default 'exact' */
  keyMatch?: KeyMatch;
  /**
   * Most records a key search reads before it answers what it found, records (without `key`, the page reads
   * `limit` records). @default 10,000; 1 to 100,000
   */
  maxScanRecords?: number;
  /**
   * Bytes of each value answered; a longer value is cut there (`valueTruncated`), its full size in `valueBytes`.
   * Read one record with a larger bound to see all of it. @default 4,096; 0 up to 64 MiB ÷ `limit`
   */
  maxValueBytes?: number;
}

/** A record of a page: as stored, its value perhaps cut. */
export interface PageRecord extends StoredRecord {
  /** The value's full size, bytes; null for a tombstone (no value). */
  valueBytes: number | null;
  /** Whether `value` holds only the first `maxValueBytes` of the value. */
  valueTruncated: boolean;
}

/** What a page read: offsets `[fromOffset, toOffset)`, `records` of them records (offsets compaction emptied hold none). */
export interface ScannedRange {
  fromOffset: number;
  toOffset: number;
  records: number;
}

/** A page of a partition's records, oldest first, and where the next page starts. */
export interface RecordPage extends PartitionState {
  topic: string;
  records: PageRecord[];
  /** The offsets read to answer it. */
  scanned: ScannedRange;
  /** Whether a key search read `maxScanRecords` records and stopped before the page was full or the log ended. */
  scanLimitReached: boolean;
  /** Where the next page starts (`offset` of the next request): after the last record read; the high watermark at the end. */
  nextOffset: number;
}

/** A page record as JSON (`GET /topics/:topic/records`): key, value and header values in the request's encoding. */
export type JsonPageRecord = JsonRecord & Pick<PageRecord, 'valueBytes' | 'valueTruncated'>;

/** A record page as JSON. */
export type JsonRecordPage = Omit<RecordPage, 'records'> & { records: JsonPageRecord[] };

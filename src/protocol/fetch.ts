/**
 * Fetches by offset and their answers (decoded records, or the stored batches of the binary data path), by a group's
 * member or by anyone. Pure types: importing this loads nothing.
 */
import type { PartitionError, PartitionState } from './partitions.js';
import type { StoredRecord } from './types.js';

export interface FetchRequest {
  topic: string;
  /** The group fetching, if any: named in errors (e.g. its committed offset when out of range). */
  groupId?: string;
  /**
   * The group member fetching, with its generation: then every partition must be assigned to it
   * (`UNKNOWN_MEMBER_ID`, `ILLEGAL_GENERATION`, `NOT_ASSIGNED` otherwise), and an offset below the log start
   * pauses the partition for the group (or jumps, if the subscription's `onOutOfRange` says so).
   */
  memberId?: string;
  generationId?: number;
  /** Partitions to read and the offset to read each from. */
  partitions: Array<{ partition: number; offset: number }>;
  /** Most records in the answer, over all partitions. @default 500 (Kafka's max.poll.records) */
  maxRecords?: number;
  /** Byte budget over all partitions (a partition's first batch is always returned). @default 1 MiB */
  maxBytes?: number;
  /** How long to wait for new records when none are ready, ms. @default 0; at most 30,000 */
  maxWaitMs?: number;
  /**
   * A group member's fetch sent ahead, while the batch before it is handled: an offset outside the log is answered
   * as the partition's `OFFSET_OUT_OF_RANGE` error without applying the subscription's `onOutOfRange` (no pause, no
   * jump and its commit), which the member's next fetch applies once the batch's commit went out. @default false
   */
  ahead?: boolean;
}

export interface FetchedPartition extends PartitionState {
  records: StoredRecord[];
  /**
   * Where the next fetch of this partition starts: after the last record, or further when compaction left
   * offsets empty after it. Equal to the requested offset when nothing was read.
   */
  nextOffset: number;
  error?: PartitionError;
}

export interface FetchResult {
  topic: string;
  partitions: FetchedPartition[];
  /** For a member's fetch: the group's current generation; above the member's, it should heartbeat now. */
  generationId?: number;
  /** For a member's fetch: true when a heartbeat now would change its assignment (a grant or revocation waits). */
  assignmentChanged?: boolean;
}

/** A binary fetch's answer: each partition's stored batches, undecoded. */
export interface BatchFetchResult extends Omit<FetchResult, 'partitions'> {
  partitions: Array<Omit<FetchedPartition, 'records'> & { batches: Buffer }>;
}

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
  /**
   * A member's fetch of partitions its coordinator named another broker to read from ({@link FetchedPartition.readFrom}),
   * sent there: as Kafka's fetch, which carries no group membership, that broker serves it without the member check,
   * the delivery counts or the out-of-range policy, which live at the group's coordinator (`memberId` and
   * `generationId` are then only named in its logs and metrics). An offset outside the log is answered as the
   * partition's `OFFSET_OUT_OF_RANGE` error naming the group, nothing applied: the client fetches the partition again
   * from the coordinator, which applies the subscription's `onOutOfRange`. A broker that finds the group's reads must
   * stay at its coordinator (a subscription with a retry policy or `maxDeliveries`) answers `NOT_COORDINATOR` naming
   * it; the group's coordinator itself serves such a fetch as any member's. Cluster mode only: the embedded default,
   * which names no other broker, serves it as any member's fetch. @default false
   */
  readAnywhere?: boolean;
}

/**
 * A broker a member may fetch a partition from instead of its group's coordinator (cluster mode): the partition's
 * leader, as Kafka's Metadata names it, so a group's reads spread over the brokers leading its partitions (as a Kafka
 * consumer fetches from each partition's leader, or from KIP-392's preferred read replica, which the fetch answer names).
 */
export interface ReadBroker {
  /** The broker's `--broker-id`. */
  brokerId: number;
  /** The HTTP address it advertised (`--advertised-url`). */
  url: string;
}

export interface FetchedPartition extends PartitionState {
  records: StoredRecord[];
  /**
   * Where the next fetch of this partition starts: after the last record, or further when compaction left
   * offsets empty after it. Equal to the requested offset when nothing was read.
   */
  nextOffset: number;
  error?: PartitionError;
  /**
   * A member's fetch answered by its coordinator in cluster mode: the broker the member may send its next fetches of
   * this partition to (with `readAnywhere`), until its assignment or generation changes, the answer there holds an
   * error, or 10 s pass (then it asks the coordinator again). Named only where nothing of the read needs the
   * coordinator: the subscription counts no deliveries (no retry policy, no `maxDeliveries`), the partition is in no
   * suspect range, the answer holds no error, and the partition's leader is another live broker. Absent: fetch it
   * from the coordinator.
   */
  readFrom?: ReadBroker;
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

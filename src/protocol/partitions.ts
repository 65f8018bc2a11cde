/**
 * Where a request points in the log, shared by every noun: a topic partition, a partition's bounds (log start offset
 * and high watermark), and the error one partition answers as a value while the others of the request go on.
 * Pure types: importing this loads nothing.
 */

/** A topic partition. */
export interface TopicPartition {
  topic: string;
  partition: number;
}

/** Where a partition's log begins and ends. */
export interface PartitionState {
  partition: number;
  logStartOffset: number;
  highWatermark: number;
}

/** A per-partition error, returned as a value so the other partitions of a fetch still flow. */
export interface PartitionError {
  code: string;
  message: string;
  [context: string]: unknown;
}

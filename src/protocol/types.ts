/**
 * Shapes shared by every layer: records as producers hand them in and as consumers get them back.
 *
 * Offsets and timestamps are JavaScript numbers. The format stores them as 64-bit integers; onelog keeps
 * them as `number` and bounds them to `Number.MAX_SAFE_INTEGER` (2^53 − 1), converting at the codec edge
 * (see docs/architecture.md).
 */

/** One record header. As in Kafka, keys are UTF-8 strings, may repeat, and values are bytes or null. */
export interface RecordHeader {
  key: string;
  value: Buffer | null;
}

/** A record to append. The broker assigns its offset. */
export interface RecordInput {
  /** Key bytes, or null. Keys choose the partition (murmur2) and are what compaction keeps the latest of. */
  key: Buffer | null;
  /** Value bytes, or null (a tombstone). */
  value: Buffer | null;
  /** Headers, in order. Default: none. */
  headers?: RecordHeader[];
  /** Create time, in ms since the Unix epoch. Default: the broker's clock at append. */
  timestamp?: number;
}

/** A record read back from a partition. */
export interface StoredRecord {
  offset: number;
  /** ms since the Unix epoch */
  timestamp: number;
  key: Buffer | null;
  value: Buffer | null;
  headers: RecordHeader[];
}

/** Where a consume position starts when a group has no committed offset (as Kafka's auto.offset.reset). */
export type StartPolicy = 'earliest' | 'latest';
export const START_POLICIES: readonly StartPolicy[] = ['earliest', 'latest'];

/** How a subscription gets its records: the consumer fetches (pull) or the broker sends (push). */
export type DeliveryMode = 'pull' | 'push';
export const DELIVERY_MODES: readonly DeliveryMode[] = ['pull', 'push'];

/**
 * A group's type (Kafka's group.type): `consumer`, each partition read by one member at a time, progress a committed
 * offset; `share`, members read the same partitions side by side, each record acquired by one member under a lock
 * (Kafka's share groups, KIP-932; docs/consumer-groups.md).
 */
export type GroupType = 'consumer' | 'share';
export const GROUP_TYPES: readonly GroupType[] = ['consumer', 'share'];

/** A share group's order: `none`, records in parallel regardless of key; `key`, each key's records one at a time, in order. */
export type ShareOrdering = 'none' | 'key';
export const SHARE_ORDERINGS: readonly ShareOrdering[] = ['none', 'key'];

/** What retention does with old records (Kafka's cleanup.policy). */
export type CleanupPolicy = 'delete' | 'compact' | 'compact,delete';
export const CLEANUP_POLICIES: readonly CleanupPolicy[] = ['delete', 'compact', 'compact,delete'];

/** Whether a topic of cleanup.policy `policy` loses old records to retention (`delete`, `compact,delete`). */
export function deletesOldRecords(policy: string): boolean {
  return policy.split(',').includes('delete');
}

/** Whether a topic of cleanup.policy `policy` is compacted (`compact`, `compact,delete`), keeping the latest record per key. */
export function isCompacted(policy: string): boolean {
  return policy.split(',').includes('compact');
}

/** What a group does when its committed offset falls below the log start: stop and wait for a reset (the
 * default, never a silent jump), or jump to the log start / end and record the records skipped. */
export type OutOfRangePolicy = 'pause' | 'earliest' | 'latest';
export const OUT_OF_RANGE_POLICIES: readonly OutOfRangePolicy[] = ['pause', 'earliest', 'latest'];

/**
 * When a consumer commits: after its handler resolved (at-least-once, the default: a crash redelivers what
 * was processed but not committed) or before it runs (at-most-once: a crash drops what was committed but not
 * processed).
 */
export type CommitMode = 'after-processing' | 'before-processing';
export const COMMIT_MODES: readonly CommitMode[] = ['after-processing', 'before-processing'];

/**
 * Share groups' requests (docs/consumer-groups.md, Kafka's KIP-932): a member's acquisition of records, each locked
 * for it, and its acknowledgements of them. Pure types: importing this loads nothing.
 */
import type { PartitionError } from './partitions.js';
import type { RecordSection } from './record-batch.js';
import type { StoredRecord } from './types.js';

/** A share group member's acquisition (docs/consumer-groups.md): records of the topic's partitions, each locked for it. */
export interface ShareFetchRequest {
  groupId: string;
  topic: string;
  /** The member's own id (any text it keeps, 1 to 255 characters): it acknowledges with it. */
  memberId: string;
  /** Most records, over every partition. @default 500; 1 to 10,000 */
  maxRecords?: number;
  /**
   * Byte budget of the records' keys, values and headers, over every partition: what would pass it stays available,
   * uncounted (a first record larger than the budget is still handed out, alone, as Kafka's fetch does).
   * @default 16777216 (16 MiB); 1 to 67108864
   */
  maxBytes?: number;
  /** How long to wait while none can be acquired, ms. @default 0; at most 30,000 */
  maxWaitMs?: number;
  /** The member ends when not heard from for this long, ms (its records are then released). @default the last one given, else 45000; 1,000 to 3,600,000 */
  sessionTimeoutMs?: number;
  /**
   * Acquire from these partitions only (a Kafka member's share session names the partitions it fetches), each once,
   * from 0 to the topic's partition count - 1. @default every partition of the topic
   */
  partitions?: number[];
}

/** A record acquired by a share group's member. */
export interface SharedRecord extends StoredRecord {
  partition: number;
  /** Its deliveries, this one included (Kafka's delivery count). */
  deliveryCount: number;
}

export interface ShareFetchResult {
  groupId: string;
  topic: string;
  memberId: string;
  /** How long the member holds each record before it is released, ms; renew to hold it longer. */
  lockMs: number;
  records: SharedRecord[];
}

/**
 * A share acquisition as the log stores its records (the binary data path's form of a {@link ShareFetchResult}): per
 * partition, the records acquired in offset order, as sections of stored bytes, and their delivery counts in the same order.
 */
export interface SharedSections extends Omit<ShareFetchResult, 'records'> {
  partitions: Array<{ partition: number; sections: RecordSection[]; deliveryCounts: number[] }>;
}

/** A member's outcomes of records it holds: accept (done), release (deliver again, after `delayMs`), reject (dead letters), renew (hold longer). */
export interface ShareAckRequest {
  groupId: string;
  topic: string;
  memberId: string;
  /**
   * 1 to 10,000, each offset once (none with `leave`). `reason`: a reject's, kept in its dead letter; a release's, kept
   * in the dead letter if that was its last delivery allowed.
   */
  acks: Array<{ partition: number; offset: number; type: 'accept' | 'release' | 'reject' | 'renew'; delayMs?: number; reason?: string }>;
  /**
   * The member leaves the group once these outcomes are applied (a consumer that stops, as Kafka's ShareGroupHeartbeat
   * with member epoch -1): what it still holds, in any topic, is released at once (its deliveries counted), and it is no
   * longer listed. @default false
   */
  leave?: boolean;
}

/** Per partition of the acknowledgements: applied, or refused whole with its error (`INVALID_RECORD_STATE`). */
export interface ShareAckResult {
  groupId: string;
  topic: string;
  partitions: Array<{ partition: number; error?: PartitionError }>;
}

/**
 * The default partitioner, as Kafka's: a keyed record goes to murmur2(key) modulo the partition count; keyless
 * records stick to one partition until about {@link STICKY_BYTES} of them went there, then move to the next
 * (Kafka's uniform sticky partitioner, KIP-480 and KIP-794), so a small request lands as one batch on one
 * partition instead of one-record batches on many, and the partitions still fill evenly over time. The broker
 * and the clients that pick partitions themselves (idempotent and binary produce) use the same one, so a keyed
 * record lands in the same partition whichever path sent it.
 */
import { partitionForKey } from './murmur2.js';

/** Bytes of keyless records a partition takes before the next one is chosen: Kafka's `batch.size` default. */
export const STICKY_BYTES = 16_384;

interface Sticky {
  partition: number;
  bytes: number;
}

export class Partitioner {
  private readonly sticky = new Map<string, Sticky>();

  /**
   * The partition of a record without an explicit one: murmur2 of its key, else the topic's sticky partition
   * (which moves on once {@link STICKY_BYTES} bytes of keyless records went to it).
   * @param bytes the record's size as `maxRecordBytes` counts it (`recordBytes`, which the caller has computed)
   */
  partitionOf(topic: string, key: Uint8Array | null | undefined, bytes: number, partitions: number): number {
    if (key !== null && key !== undefined) return partitionForKey(key, partitions);
    // As Kafka's, a producer starts on a random partition, so producers started together do not all fill the same one.
    let s = this.sticky.get(topic);
    if (s === undefined) {
      s = { partition: Math.floor(Math.random() * partitions), bytes: 0 };
      this.sticky.set(topic, s);
    } else if (s.bytes >= STICKY_BYTES) {
      s.partition += 1;
      s.bytes = 0;
    }
    s.partition %= partitions;
    s.bytes += bytes;
    return s.partition;
  }
}

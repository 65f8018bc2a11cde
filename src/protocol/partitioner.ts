/**
 * The default partitioner, as Kafka's: a keyed record goes to murmur2(key) modulo the partition count; a
 * keyless one to the next partition in turn, per topic. The broker and the clients that pick partitions
 * themselves (idempotent and binary produce) use the same one, so a record lands in the same partition
 * whichever path sent it.
 */
import { partitionForKey } from './murmur2.js';

export class Partitioner {
  private readonly nextSpread = new Map<string, number>();

  /** The partition of a record without an explicit one. */
  partitionOf(topic: string, key: Uint8Array | null | undefined, partitions: number): number {
    if (key !== null && key !== undefined) return partitionForKey(key, partitions);
    const next = this.nextSpread.get(topic) ?? 0;
    this.nextSpread.set(topic, (next + 1) % partitions);
    return next;
  }
}

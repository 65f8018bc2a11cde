/**
 * Kafka's default partitioner for keyed records: `toPositive(murmur2(keyBytes)) % numPartitions`, with
 * `Utils.murmur2` (seed 0x9747b28c) and `toPositive(n) = n & 0x7fffffff`, so a key lands on the same
 * partition as with a Java, librdkafka (murmur2) or kafkajs (2.x default) producer.
 */

const SEED = 0x9747b28c;
const M = 0x5bd1e995;

/**
 * MurmurHash2 exactly as Kafka's `Utils.murmur2`.
 * @returns the hash as a signed 32-bit integer, as Java returns it
 */
export function murmur2(data: Uint8Array): number {
  const length = data.length;
  let h = SEED ^ length;
  const length4 = length & ~3;
  for (let i = 0; i < length4; i += 4) {
    let k = data[i]! | (data[i + 1]! << 8) | (data[i + 2]! << 16) | (data[i + 3]! << 24);
    k = Math.imul(k, M);
    k ^= k >>> 24;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  const tail = length & 3;
  if (tail === 3) h ^= data[length4 + 2]! << 16;
  if (tail >= 2) h ^= data[length4 + 1]! << 8;
  if (tail >= 1) h = Math.imul(h ^ data[length4]!, M);
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

/**
 * The partition Kafka's default partitioner picks for a non-null key.
 * @param key key bytes
 * @param numPartitions partition count of the topic, >= 1
 */
export function partitionForKey(key: Uint8Array, numPartitions: number): number {
  return (murmur2(key) & 0x7fffffff) % numPartitions;
}

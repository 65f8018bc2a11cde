/**
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum Kafka's RecordBatch v2 stores over
 * everything from the `attributes` field to the end of the batch. Table-driven, slicing-by-8: eight
 * 256-entry tables let the loop consume 8 bytes per step.
 */

const POLY = 0x82f63b78;
const TABLES: Uint32Array[] = [];
{
  const t0 = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ POLY : c >>> 1;
    t0[n] = c >>> 0;
  }
  TABLES.push(t0);
  for (let t = 1; t < 8; t++) {
    const prev = TABLES[t - 1]!;
    const cur = new Uint32Array(256);
    for (let n = 0; n < 256; n++) cur[n] = (prev[n]! >>> 8) ^ t0[prev[n]! & 0xff]!;
    TABLES.push(cur);
  }
}
const [T0, T1, T2, T3, T4, T5, T6, T7] = TABLES as [
  Uint32Array, Uint32Array, Uint32Array, Uint32Array, Uint32Array, Uint32Array, Uint32Array, Uint32Array,
];

/**
 * Computes the CRC-32C of `buf[start, end)`.
 * @param buf bytes to checksum
 * @param start first byte (inclusive), default 0
 * @param end last byte (exclusive), default `buf.length`
 * @returns the checksum as an unsigned 32-bit integer
 */
export function crc32c(buf: Uint8Array, start = 0, end = buf.length): number {
  let crc = 0xffffffff;
  let i = start;
  const stop8 = end - ((end - start) & 7);
  while (i < stop8) {
    const a = crc ^ (buf[i]! | (buf[i + 1]! << 8) | (buf[i + 2]! << 16) | (buf[i + 3]! << 24));
    crc =
      T7[a & 0xff]! ^
      T6[(a >>> 8) & 0xff]! ^
      T5[(a >>> 16) & 0xff]! ^
      T4[a >>> 24]! ^
      T3[buf[i + 4]!]! ^
      T2[buf[i + 5]!]! ^
      T1[buf[i + 6]!]! ^
      T0[buf[i + 7]!]!;
    i += 8;
  }
  while (i < end) crc = (crc >>> 8) ^ T0[(crc ^ buf[i++]!) & 0xff]!;
  return (crc ^ 0xffffffff) >>> 0;
}

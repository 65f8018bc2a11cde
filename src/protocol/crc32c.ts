/**
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum Kafka's RecordBatch v2 stores over
 * everything from the `attributes` field to the end of the batch. Computed by `@node-rs/crc32` (native, with the
 * CPU's CRC32 instructions where it has them): every produced and fetched byte is checksummed once on each side,
 * and a table-driven JavaScript loop capped a 1 KiB-record produce at about 70 MB/s.
 */
import { crc32c as nativeCrc32c } from '@node-rs/crc32';

/**
 * Computes the CRC-32C of `buf[start, end)`.
 * @param buf bytes to checksum
 * @param start first byte (inclusive), default 0
 * @param end last byte (exclusive), default `buf.length`
 * @returns the checksum as an unsigned 32-bit integer
 */
export function crc32c(buf: Uint8Array, start = 0, end = buf.length): number {
  return nativeCrc32c(start === 0 && end === buf.length ? buf : buf.subarray(start, end)) >>> 0;
}

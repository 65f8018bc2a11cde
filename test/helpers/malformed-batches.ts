/**
 * RecordBatch v2 batches whose CRC-32C is valid but whose records a broker cannot read back (issue 31, point 2):
 * each shape the issue lists, with the registry code a produce of it is refused with.
 */
import { crc32c } from '../../src/protocol/crc32c.js';
import type { ErrorCode } from '../../src/protocol/errors.js';
import { encodeBatch } from '../../src/protocol/record-batch.js';

const T = 1_700_000_000_000;
const one = () => encodeBatch([{ key: null, value: Buffer.from('bad'), headers: [] }], 0, T);
const two = () => encodeBatch([{ key: null, value: Buffer.from('bad-1'), headers: [] }, { key: null, value: Buffer.from('bad-2'), headers: [] }], 0, T);

/** Sets the batch length to the buffer's and recomputes the CRC-32C: the batch passes every header-level check. */
export function reseal(batch: Buffer): Buffer {
  batch.writeInt32BE(batch.length - 12, 8);
  batch.writeUInt32BE(crc32c(batch, 21, batch.length), 17);
  return batch;
}

/** Each malformed shape, its name and the code a produce of it answers. */
export const MALFORMED_BATCHES: ReadonlyArray<{ name: string; code: ErrorCode; batch: () => Buffer }> = [
  {
    name: 'record count says 4, holds 1', code: 'CORRUPT_MESSAGE', batch: () => {
      const b = one();
      b.writeInt32BE(3, 23); // lastOffsetDelta
      b.writeInt32BE(4, 57); // recordCount
      return reseal(b);
    },
  },
  {
    name: 'record count says 1, holds 2', code: 'CORRUPT_MESSAGE', batch: () => {
      const b = two();
      b.writeInt32BE(0, 23);
      b.writeInt32BE(1, 57);
      return reseal(b);
    },
  },
  { name: 'records all 0xff', code: 'CORRUPT_MESSAGE', batch: () => reseal(Buffer.concat([one().subarray(0, 61), Buffer.alloc(40, 0xff)])) },
  { name: 'gzip flag on plain bytes', code: 'CORRUPT_MESSAGE', batch: () => reseal(attributes(one(), 1)) },
  { name: 'zstd flag on plain bytes', code: 'CORRUPT_MESSAGE', batch: () => reseal(attributes(one(), 4)) },
  { name: 'unknown codec 5', code: 'UNSUPPORTED_COMPRESSION', batch: () => reseal(attributes(one(), 5)) },
  { name: 'unknown codec 7', code: 'UNSUPPORTED_COMPRESSION', batch: () => reseal(attributes(one(), 7)) },
  { name: 'transactional bit', code: 'INVALID_RECORD', batch: () => reseal(attributes(one(), 0x10)) },
  { name: 'control bit', code: 'INVALID_RECORD', batch: () => reseal(attributes(one(), 0x20)) },
  { name: 'delete-horizon bit', code: 'INVALID_RECORD', batch: () => reseal(attributes(one(), 0x40)) },
  { name: 'timestamp -5', code: 'INVALID_RECORD', batch: () => encodeBatch([{ key: null, value: Buffer.from('bad'), timestamp: -5 }], 0, T) },
  { name: 'timestamp -1', code: 'INVALID_RECORD', batch: () => encodeBatch([{ key: null, value: Buffer.from('bad'), timestamp: -1 }], 0, T) },
  { name: 'timestamp 2^62', code: 'INVALID_RECORD', batch: () => encodeBatch([{ key: null, value: Buffer.from('bad'), timestamp: 2 ** 62 }], 0, T) },
  {
    name: 'offset deltas 0, 5', code: 'CORRUPT_MESSAGE', batch: () => encodeBatch(
      [{ key: null, value: Buffer.from('a') }, { key: null, value: Buffer.from('b') }], 0, T, undefined, { layout: { offsetDeltas: [0, 5], lastOffsetDelta: 1 } },
    ),
  },
];

function attributes(batch: Buffer, value: number): Buffer {
  batch.writeInt16BE(value, 21);
  return batch;
}

/**
 * The binary records frame of a push stream (`GET /groups/:group/stream`, docs/delivery.md), sent when the member's
 * subscribe frame asks for `"frames": "binary"`: a WebSocket binary message
 *
 *     jsonBytes u32 (big-endian) | json (UTF-8) `{ "type": "records", "topic", "partition" }` | one RecordBatch v2
 *
 * whose records are the frame's, at their offsets (gaps kept as offset deltas) and timestamps, uncompressed. The
 * member decodes it as it decodes a fetch's batches, with no JSON per record and no base64: each key and value a view
 * of the message. Every other frame of the stream stays JSON text. Pure: no I/O.
 */
import { OnelogError } from './errors.js';
import { decodeRecords, encodeBatch } from './record-batch.js';
import type { StoredRecord } from './types.js';

/** The frame's JSON part. */
export interface PushRecordsHeader {
  type: 'records';
  topic: string;
  partition: number;
}

/**
 * Encodes the records of one partition as a binary records frame.
 * @param records at least one, in increasing offset order
 */
export function encodePushRecords(topic: string, partition: number, records: readonly StoredRecord[]): Buffer {
  const base = records[0]!.offset;
  const last = records[records.length - 1]!.offset - base;
  const layout = last === records.length - 1 ? undefined : { offsetDeltas: records.map((r) => r.offset - base), lastOffsetDelta: last };
  const text = JSON.stringify({ type: 'records', topic, partition } satisfies PushRecordsHeader);
  const textBytes = Buffer.byteLength(text, 'utf8');
  let frame: Buffer | undefined;
  // The batch is written after the header, in the frame's own buffer (no copy).
  encodeBatch(records, base, 0, undefined, {
    layout,
    alloc: (bytes) => {
      frame = Buffer.allocUnsafe(4 + textBytes + bytes);
      return frame.subarray(4 + textBytes);
    },
  });
  frame!.writeUInt32BE(textBytes, 0);
  frame!.write(text, 4, 'utf8');
  return frame!;
}

/**
 * Decodes a binary records frame; keys, values and header values are views of `data`.
 * (The batch's CRC is not checked, as a binary fetch's batches are not: the broker checked what it read, and the
 * socket carries it whole.)
 * @throws OnelogError `CORRUPT_MESSAGE` for a frame that is not one (cut short, a header that is not a records
 *   frame's, a batch whose records do not add up)
 */
export function decodePushRecords(data: Buffer): PushRecordsHeader & { records: StoredRecord[] } {
  const textBytes = data.length >= 4 ? data.readUInt32BE(0) : -1;
  let header: PushRecordsHeader | undefined;
  try {
    if (textBytes >= 0 && 4 + textBytes <= data.length) header = JSON.parse(data.toString('utf8', 4, 4 + textBytes)) as PushRecordsHeader;
  } catch {
    header = undefined;
  }
  if (header?.type !== 'records' || typeof header.topic !== 'string' || typeof header.partition !== 'number') {
    throw new OnelogError('CORRUPT_MESSAGE', `a binary push frame of ${data.length} bytes is not a records frame`);
  }
  return { ...header, records: decodeRecords(data, 4 + textBytes) };
}

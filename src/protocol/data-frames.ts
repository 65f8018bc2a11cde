/**
 * Frames of the binary data path (WebSocket binary messages on `GET /data`): a produce carries encoded
 * RecordBatch v2 batches that the broker appends without decoding their records; a fetch answer carries the stored
 * batches as they are. Every frame is
 *
 *     kind u8 | requestId u32 | jsonBytes u32 | json (UTF-8) | payload
 *
 * with big-endian integers. Requests: `PRODUCE` (json `{ topic, batches: [{ partition, bytes }] }`, payload the
 * batches one after another; stored or refused whole), `FETCH` (json a fetch request, no payload), `COMMIT`
 * (json a commit request, no payload), and a share group member's `SHARE_FETCH` (json a share-fetch request) and
 * `SHARE_ACK` (json a share-acks request). Answers repeat the request id: `PRODUCED` (json
 * `{ batches: [{ partition, baseOffset, lastOffset }] }`), `FETCHED` (json the fetch result with each partition's
 * `batchBytes`; payload the partitions' batches one after another), `COMMITTED` (json `{}`), `SHARE_FETCHED` (json
 * `{ groupId, topic, memberId, lockMs, partitions: [{ partition, sections: [[baseOffset, baseTimestamp, records, bytes]],
 * deliveryCounts }] }`, payload the sections' bytes one after another: the records acquired as the log stores them,
 * {@link encodeSharedBatches}),
 * `SHARE_ACKED` (json the share-acks result) or `ERROR` (json `{ code, message, ...}`).
 * Pure: no I/O.
 */
import type { SharedRecord, SharedSections, ShareFetchResult } from './share-groups.js';
import { OnelogError } from './errors.js';
import { decodeSection } from './record-batch.js';

export const FRAME_KIND = {
  PRODUCE: 1, FETCH: 2, COMMIT: 3, SHARE_FETCH: 4, SHARE_ACK: 5, PRODUCED: 101, FETCHED: 102, COMMITTED: 103, SHARE_FETCHED: 104, SHARE_ACKED: 105, ERROR: 255,
} as const;
export type FrameKind = (typeof FRAME_KIND)[keyof typeof FRAME_KIND];

const HEADER_BYTES = 9;

/** A decoded frame: its kind, request id, JSON part and payload (a view into the frame). */
export interface DataFrame {
  kind: FrameKind;
  requestId: number;
  json: unknown;
  payload: Buffer;
}

/**
 * Builds a frame, in one buffer from `alloc` (given the frame's size in bytes; the broker's fetch answers come
 * from its buffer pool). @default alloc `Buffer.allocUnsafe`
 */
export function encodeFrame(
  kind: FrameKind, requestId: number, json: unknown, payload: Buffer | readonly Buffer[] = [], alloc: (bytes: number) => Buffer = Buffer.allocUnsafe,
): Buffer {
  const text = JSON.stringify(json);
  const textBytes = Buffer.byteLength(text, 'utf8');
  const parts = Buffer.isBuffer(payload) ? [payload] : payload;
  let size = HEADER_BYTES + textBytes;
  for (const part of parts) size += part.length;
  const frame = alloc(size);
  frame.writeUInt8(kind, 0);
  frame.writeUInt32BE(requestId, 1);
  frame.writeUInt32BE(textBytes, 5);
  frame.write(text, HEADER_BYTES, 'utf8');
  let pos = HEADER_BYTES + textBytes;
  for (const part of parts) pos += part.copy(frame, pos);
  return frame;
}

/**
 * Reads a frame.
 * @throws OnelogError `INVALID_REQUEST` for a frame too short for its header or JSON, or with bad JSON
 */
export function decodeFrame(frame: Buffer): DataFrame {
  if (frame.length < HEADER_BYTES) throw new OnelogError('INVALID_REQUEST', `a data frame has a ${HEADER_BYTES}-byte header; got ${frame.length} bytes`);
  const jsonBytes = frame.readUInt32BE(5);
  if (HEADER_BYTES + jsonBytes > frame.length) {
    throw new OnelogError('INVALID_REQUEST', `a data frame says ${jsonBytes} bytes of JSON but holds ${frame.length - HEADER_BYTES}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(frame.toString('utf8', HEADER_BYTES, HEADER_BYTES + jsonBytes));
  } catch (err) {
    throw new OnelogError('INVALID_REQUEST', `a data frame's JSON is malformed: ${(err as Error).message}`);
  }
  return {
    kind: frame.readUInt8(0) as FrameKind,
    requestId: frame.readUInt32BE(1),
    json,
    payload: frame.subarray(HEADER_BYTES + jsonBytes),
  };
}

/** A `SHARE_FETCHED` frame's JSON part: each section as `[baseOffset, baseTimestamp, records, bytes]`. */
export interface SharedBatchesJson extends Omit<ShareFetchResult, 'records'> {
  partitions: Array<{ partition: number; sections: Array<[number, number, number, number]>; deliveryCounts: number[] }>;
}

/**
 * A share acquisition as a `SHARE_FETCHED` frame's parts: the JSON part, and the sections' bytes (views of the stored
 * batches: nothing is encoded) to send one after another as its payload.
 */
export function encodeSharedBatches(acquired: SharedSections): { json: SharedBatchesJson; batches: Buffer[] } {
  const { partitions, ...rest } = acquired;
  const batches: Buffer[] = [];
  const json: SharedBatchesJson = {
    ...rest,
    partitions: partitions.map(({ partition, sections, deliveryCounts }) => ({
      partition, deliveryCounts, sections: sections.map((s) => {
        batches.push(s.bytes);
        return [s.baseOffset, s.baseTimestamp, s.count, s.bytes.length];
      }),
    })),
  };
  return { json, batches };
}

/**
 * A `SHARE_FETCHED` frame read back as the acquisition it answers.
 * @throws OnelogError `CORRUPT_MESSAGE` for sections that do not decode or disagree with the JSON part
 */
export function decodeSharedBatches(json: SharedBatchesJson, payload: Buffer): ShareFetchResult {
  const { partitions, ...rest } = json;
  let pos = 0;
  return sharedRecords({
    ...rest,
    partitions: partitions.map(({ partition, sections, deliveryCounts }) => ({
      partition, deliveryCounts, sections: sections.map(([baseOffset, baseTimestamp, count, bytes]) => {
        if (pos + bytes > payload.length) throw new OnelogError('CORRUPT_MESSAGE', `a share-fetch answer's sections name ${pos + bytes} bytes, its payload holds ${payload.length}`);
        const section = { baseOffset, baseTimestamp, count, bytes: payload.subarray(pos, pos + bytes) };
        pos += bytes;
        return section;
      }),
    })),
  });
}

/**
 * A share acquisition's records, decoded from its sections.
 * @throws OnelogError `CORRUPT_MESSAGE` for sections that do not decode or a partition whose delivery counts are not one per record
 */
export function sharedRecords(acquired: SharedSections): ShareFetchResult {
  const { partitions, ...rest } = acquired;
  const records: SharedRecord[] = [];
  for (const { partition, sections, deliveryCounts } of partitions) {
    const decoded = sections.flatMap(decodeSection);
    if (decoded.length !== deliveryCounts.length) {
      throw new OnelogError('CORRUPT_MESSAGE', `a share acquisition's sections of partition ${partition} hold ${decoded.length} records and name ${deliveryCounts.length} delivery counts`);
    }
    decoded.forEach((r, i) => records.push({ offset: r.offset, timestamp: r.timestamp, key: r.key, value: r.value, headers: r.headers, partition, deliveryCount: deliveryCounts[i]! }));
  }
  return { ...rest, records };
}

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
 * `{ groupId, topic, memberId, lockMs, partitions: [{ partition, batchBytes, deliveryCounts }] }`, payload one
 * uncompressed batch per partition holding exactly the records acquired, at their offsets: {@link encodeSharedBatches}),
 * `SHARE_ACKED` (json the share-acks result) or `ERROR` (json `{ code, message, ...}`).
 * Pure: no I/O.
 */
import type { SharedRecord, ShareFetchResult } from './api.js';
import { OnelogError } from './errors.js';
import { decodeRecords, encodeBatch } from './record-batch.js';

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

/** A `SHARE_FETCHED` frame's JSON part. */
export interface SharedBatchesJson extends Omit<ShareFetchResult, 'records'> {
  partitions: Array<{ partition: number; batchBytes: number; deliveryCounts: number[] }>;
}

/**
 * A share acquisition's records as a `SHARE_FETCHED` frame's parts: per partition (in order of first appearance), one
 * uncompressed RecordBatch v2 of its records in offset order (each at its own offset: the offset deltas say where, so
 * gaps between acquired records cost nothing) and their delivery counts.
 */
export function encodeSharedBatches(result: ShareFetchResult): { json: SharedBatchesJson; batches: Buffer[] } {
  const byPartition = new Map<number, SharedRecord[]>();
  for (const r of result.records) {
    let list = byPartition.get(r.partition);
    if (list === undefined) byPartition.set(r.partition, (list = []));
    list.push(r);
  }
  const { groupId, topic, memberId, lockMs } = result;
  const partitions: SharedBatchesJson['partitions'] = [];
  const batches: Buffer[] = [];
  for (const [partition, list] of byPartition) {
    list.sort((a, b) => a.offset - b.offset);
    const base = list[0]!.offset;
    const batch = encodeBatch(list, base, list[0]!.timestamp, undefined, {
      layout: { offsetDeltas: list.map((r) => r.offset - base), lastOffsetDelta: list[list.length - 1]!.offset - base },
    });
    partitions.push({ partition, batchBytes: batch.length, deliveryCounts: list.map((r) => r.deliveryCount) });
    batches.push(batch);
  }
  return { json: { groupId, topic, memberId, lockMs, partitions }, batches };
}

/**
 * A `SHARE_FETCHED` frame read back as the acquisition it answers.
 * @throws OnelogError `CORRUPT_MESSAGE` for batches that do not decode or disagree with the JSON part
 */
export function decodeSharedBatches(json: SharedBatchesJson, payload: Buffer): ShareFetchResult {
  const { partitions, ...rest } = json;
  const records: SharedRecord[] = [];
  let pos = 0;
  for (const { partition, batchBytes, deliveryCounts } of partitions) {
    const decoded = decodeRecords(payload.subarray(pos, pos + batchBytes));
    pos += batchBytes;
    if (decoded.length !== deliveryCounts.length) {
      throw new OnelogError('CORRUPT_MESSAGE', `a share-fetch answer's batch of partition ${partition} holds ${decoded.length} records and names ${deliveryCounts.length} delivery counts`);
    }
    decoded.forEach((r, i) => records.push({ ...r, partition, deliveryCount: deliveryCounts[i]! }));
  }
  return { ...rest, records };
}

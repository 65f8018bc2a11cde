/**
 * Compaction's rules, the same on every log engine (the segment files' cleaner, storage/log-cleaner.ts; the object
 * engine's compactor, cluster/compactor.ts), as Kafka's LogCleaner: a pass maps each key to its latest offset over a
 * range `[start, end)` of the log in a bounded {@link OffsetMap} ({@link mapBatchKeys}), then judges each batch by it
 * ({@link cleanBatch}). A record at offset r < end goes when its key is null, when the map holds its key at an offset
 * above r, or when it is a tombstone the map holds at r whose batch's delete horizon passed; records at or beyond
 * `end`, and those whose key the map lacks, stay. So a record goes exactly when a later record of its key lies below
 * the high watermark, or it is its key's latest, a tombstone, and its horizon passed, whatever the number of passes.
 */
import { batchCompression, decodeRecords, DELETE_HORIZON_FLAG, encodeBatch } from '../protocol/record-batch.js';
import type { BatchHeader } from '../protocol/record-batch.js';
import type { StoredRecord } from '../protocol/types.js';
import type { OffsetMap } from './offset-map.js';

/**
 * Maps the keys of one batch, in order, to their offsets in a pass's key map: those at or after `start`, below `hw`.
 * The pass's range ends before a batch that might not fit, unless it is the first of the pass (a batch with more
 * keys than the map holds is split, and {@link cleanBatch} leaves its horizon alone until it is passed whole).
 * @param batch the whole batch, its base offset stamped
 * @returns undefined when the next batch may follow; else where the pass's range ends: `hw` (the batch reaches it),
 *   the batch's base offset (it might not fit), or the first record whose key did not fit
 */
export function mapBatchKeys(map: OffsetMap, header: BatchHeader, batch: Buffer, start: number, hw: number): number | undefined {
  if (header.baseOffset >= hw) return hw;
  if (header.baseOffset + header.lastOffsetDelta < start) return undefined;
  if (map.size > 0 && map.size + header.recordCount > map.capacity) return header.baseOffset;
  for (const r of decodeRecords(batch)) {
    if (r.offset < start || r.key === null) continue;
    if (r.offset >= hw) return hw;
    if (!map.put(r.key, r.offset)) return r.offset;
  }
  return undefined;
}

/** What {@link cleanBatch} judges a batch's records by: one pass's key map over the range `[start, end)`. */
export interface BatchCleaning {
  /** Each key's latest offset in the pass's range. */
  map: OffsetMap;
  /** The pass's range ends here: records at or beyond it stay. */
  end: number;
  /** The compaction's time, ms since the epoch: tombstones whose horizon is at or before it go. */
  now: number;
  /** A kept tombstone's horizon is `now` plus this, ms (the topic's `deleteRetentionMs`). */
  deleteRetentionMs: number;
}

/**
 * What a compaction pass does to one batch (Kafka's LogCleaner rules, see the file's comment): null when it keeps
 * the batch as it is, else the batch rewritten (null when no record is left) with its kept records counted. A
 * rewritten batch keeps its base offset, last offset delta, producer fields (so an idempotent producer's sequence
 * range is unchanged), codec, and each kept record's offset; a kept tombstone without a delete horizon gets one
 * (KIP-534).
 * @param batch the whole batch, its base offset stamped (records are decoded at their offsets)
 */
export function cleanBatch(batch: Buffer, header: BatchHeader, pass: BatchCleaning): { batch: Buffer | null; records: number; tombstonesRemoved: number } | null {
  if (header.baseOffset >= pass.end) return null;
  const horizon = header.attributes & DELETE_HORIZON_FLAG ? header.baseTimestamp : undefined;
  // A batch that reaches the range's end (split by a full map) gets no horizon in this pass: the pass that
  // judges its last records must see the horizon it had before the compaction, as a single pass would.
  const whole = header.baseOffset + header.lastOffsetDelta < pass.end;
  const records = decodeRecords(batch);
  const kept: StoredRecord[] = [];
  let tombstonesRemoved = 0;
  let tombstoneKept = false;
  for (const r of records) {
    if (r.offset < pass.end) {
      if (r.key === null) continue;
      const latest = pass.map.get(r.key);
      if (latest > r.offset) continue;
      if (latest === r.offset && r.value === null && horizon !== undefined && pass.now >= horizon) {
        tombstonesRemoved++;
        continue;
      }
    }
    if (r.value === null) tombstoneKept = true;
    kept.push(r);
  }
  const horizonAdded = tombstoneKept && horizon === undefined && whole;
  if (kept.length === records.length && !horizonAdded) return null;
  if (kept.length === 0) return { batch: null, records: 0, tombstonesRemoved };
  const rewritten = encodeBatch(kept, header.baseOffset, 0, header, {
    compression: batchCompression(header), // as Kafka's cleaner: a batch keeps its codec
    layout: {
      offsetDeltas: kept.map((r) => r.offset - header.baseOffset),
      lastOffsetDelta: header.lastOffsetDelta,
      ...(horizon !== undefined && tombstoneKept ? { deleteHorizonMs: horizon } : {}),
      ...(horizonAdded ? { deleteHorizonMs: pass.now + pass.deleteRetentionMs } : {}),
    },
  });
  return { batch: rewritten, records: kept.length, tombstonesRemoved };
}

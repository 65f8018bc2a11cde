/**
 * Compaction's rules, the same on every log engine (the segment files' cleaner, log/segments/log-cleaner.ts; the object
 * engine's compactor, log/objects/compactor.ts), as Kafka's LogCleaner: a pass maps each key to its latest offset over a
 * range `[start, end)` of the log in a bounded {@link OffsetMap} ({@link mapBatchKeys}), then judges each batch by it
 * ({@link cleanBatch}). A record at offset r < end goes when its key is null, when the map holds its key at an offset
 * above r, or when it is a tombstone the map holds at r whose batch's delete horizon passed; records at or beyond
 * `end`, and those whose key the map lacks, stay. So a record goes exactly when a later record of its key lies below
 * the high watermark, or it is its key's latest, a tombstone, and its horizon passed, whatever the number of passes.
 */
import { batchCompression, decodeRecords, DELETE_HORIZON_FLAG, encodeBatch } from '../protocol/record-batch.js';
import type { BatchHeader } from '../protocol/record-batch.js';
import type { StoredRecord } from '../protocol/types.js';
import { checkOffsetMapBytes, OffsetMap } from './offset-map.js';
import { Turns } from '../common/turns.js';

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

/**
 * Default size of the dedupe buffer, bytes: 64 MiB, room for about 2.5 million keys per pass (24 bytes a key,
 * 90% full). Half Kafka's 128 MiB `log.cleaner.dedupe.buffer.size`: onelog runs embedded in an application's
 * process, and a log with more keys still compacts, in more passes. Only a compaction holds it, and only as
 * much as its log can need (a log of 1,000 records takes about 27 KB).
 */
export const DEFAULT_DEDUPE_BUFFER_BYTES = 64 * 1024 * 1024;

/** Options of a {@link LogCleaner}. */
export interface LogCleanerOptions {
  /**
   * Most bytes of the key map (Kafka's `log.cleaner.dedupe.buffer.size`, `onelog serve
   * --cleaner-dedupe-buffer-bytes`): 24 bytes a key, so 64 MiB maps about 2.5 million keys per pass. From 48
   * to 2^31 (2 GiB). @default {@link DEFAULT_DEDUPE_BUFFER_BYTES} (64 MiB)
   */
  dedupeBufferBytes?: number;
  /**
   * Share of the map's slots filled before a pass ends (Kafka's `log.cleaner.io.buffer.load.factor`), above 0
   * and below 1. @default 0.9
   */
  loadFactor?: number;
}

/**
 * Runs compactions one at a time in one bounded key map (the dedupe buffer), as Kafka's single cleaner thread:
 * share one cleaner between all the logs of a process so that compaction's memory stays bounded however many
 * partitions compact at once. The map's memory is allocated when a compaction starts (only what its log can
 * need, up to `dedupeBufferBytes`) and given back once no compaction is waiting.
 */
export class LogCleaner {
  private readonly map: OffsetMap;
  private readonly turns = new Turns();

  /** @throws OnelogError `INVALID_REQUEST` for a buffer size or load factor out of bounds */
  constructor(options: LogCleanerOptions = {}) {
    this.map = new OffsetMap(checkOffsetMapBytes(options.dedupeBufferBytes ?? DEFAULT_DEDUPE_BUFFER_BYTES), options.loadFactor);
  }

  /** Most bytes of the key map. */
  get dedupeBufferBytes(): number {
    return this.map.bufferBytes;
  }

  /** Keys one pass maps at most (the whole buffer, at the load factor). */
  get maxKeysPerPass(): number {
    return this.map.maxEntries;
  }

  /** Bytes the key map holds now: 0 when no compaction runs or waits. */
  get allocatedBytes(): number {
    return this.map.allocatedBytes;
  }

  /**
   * Runs `work` with the cleaner's key map, after the compactions asked for before, one at a time: a compaction of
   * either engine's log (segments/log-cleaner.ts, objects/compactor.ts) shares the dedupe buffer's bound with every
   * other. `work` sizes the map with {@link OffsetMap.reset}; the memory is given back once no compaction is waiting.
   * @returns what `work` returns; @throws what it throws
   */
  withKeyMap<T>(work: (map: OffsetMap) => Promise<T>): Promise<T> {
    return this.turns.run(async () => {
      try {
        return await work(this.map);
      } finally {
        if (this.turns.size === 1) this.map.release(); // no compaction waits after this one
      }
    });
  }
}

let shared: LogCleaner | null = null;

/** The cleaner of the logs opened without one: made on first use, with the default options. */
export function defaultLogCleaner(): LogCleaner {
  return (shared ??= new LogCleaner());
}

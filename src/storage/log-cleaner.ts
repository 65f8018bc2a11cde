/**
 * Log compaction (Kafka's LogCleaner, one partition at a time): keep the latest record per key in closed
 * segments, offsets preserved (gaps allowed).
 *
 * 1. Build the key map: the latest offset of every key, over the whole log up to the high watermark.
 * 2. Clean the closed segments, oldest first, while their largest timestamp is at least
 *    `minCompactionLagMs` old: a record stays if it is its key's latest. A kept tombstone (null value) gets a
 *    delete horizon (`now + deleteRetentionMs`, stored in its batch as KIP-534 does); once the horizon passed,
 *    a later pass removes it. Each batch keeps its base offset, last offset delta and compression codec.
 * 3. Swap each cleaned segment in: the new file is written beside the old as `.cleaned`, fsynced, then
 *    renamed over the `.log` (atomic), and its indexes rebuilt. A crash before the rename leaves the old
 *    segment (the `.cleaned` file is removed on open); after it, the new one. Either is a correct log.
 *
 * The work yields to the event loop between batches, so produce and fetch go on while it runs; a segment
 * that retention deleted meanwhile is skipped.
 */
import fs from 'node:fs';
import { batchCompression, decodeRecords, DELETE_HORIZON_FLAG, encodeBatch, readBatchHeader } from '../protocol/record-batch.js';
import type { CompactionStats } from '../protocol/api.js';
import type { StoredRecord } from '../protocol/types.js';
import type { FileCache } from './file-cache.js';
import type { LogSegment } from './segment.js';

export type { CompactionStats } from '../protocol/api.js';

/** What the cleaner needs of a partition log. */
export interface CleanableLog {
  /** All segments, oldest first; the last is the active one. */
  readonly segmentsForCleaning: readonly LogSegment[];
  readonly highWatermark: number;
  /**
   * Swaps a cleaned file in for `segment`. Returns false (and removes the file) if the segment is no longer
   * part of the log.
   */
  replaceSegment(segment: LogSegment, cleanedPath: string): Promise<boolean>;
}

/** Settings of a compaction pass. */
export interface CompactionSettings {
  now: number;
  minCompactionLagMs: number;
  deleteRetentionMs: number;
  /** The cleaned files are written through this cache. */
  files: FileCache;
}

const YIELD_EVERY_BATCHES = 500;
const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Runs one compaction pass over the closed segments of `log`. */
export async function compactLog(log: CleanableLog, settings: CompactionSettings): Promise<CompactionStats> {
  const stats: CompactionStats = { segments: 0, recordsBefore: 0, recordsAfter: 0, tombstonesRemoved: 0, bytesBefore: 0, bytesAfter: 0 };
  const segments = [...log.segmentsForCleaning];
  const hw = log.highWatermark;
  const latest = await buildKeyMap(segments, hw);
  const cutoff = settings.now - settings.minCompactionLagMs;
  for (const segment of segments.slice(0, -1)) {
    if (segment.maxTimestamp > cutoff) break; // too young, and so is everything after it
    const cleanedPath = `${segment.logPath}.cleaned`;
    const result = await cleanSegment(segment, cleanedPath, latest, settings);
    if (!(await log.replaceSegment(segment, cleanedPath))) continue;
    stats.segments++;
    stats.recordsBefore += result.recordsBefore;
    stats.recordsAfter += result.recordsAfter;
    stats.tombstonesRemoved += result.tombstonesRemoved;
    stats.bytesBefore += segment.size;
    stats.bytesAfter += result.bytes;
  }
  return stats;
}

/** key (bytes as latin1) -> latest offset, over every record below `hw`. */
async function buildKeyMap(segments: readonly LogSegment[], hw: number): Promise<Map<string, number>> {
  const latest = new Map<string, number>();
  let batches = 0;
  for (const segment of segments) {
    const pending: Buffer[] = [];
    segment.forEachBatch(segment.baseOffset, (header, batch) => {
      if (header.baseOffset >= hw) return false;
      pending.push(Buffer.from(batch));
      return true;
    });
    for (const batch of pending) {
      for (const r of decodeRecords(batch)) if (r.key !== null && r.offset < hw) latest.set(r.key.toString('latin1'), r.offset);
      if (++batches % YIELD_EVERY_BATCHES === 0) await yieldToEventLoop();
    }
  }
  return latest;
}

/** Writes the kept records of `segment` to `cleanedPath` (fsynced) and counts what it kept. */
async function cleanSegment(
  segment: LogSegment, cleanedPath: string, latest: Map<string, number>, settings: CompactionSettings,
): Promise<{ recordsBefore: number; recordsAfter: number; tombstonesRemoved: number; bytes: number }> {
  const { now, deleteRetentionMs, files } = settings;
  const result = { recordsBefore: 0, recordsAfter: 0, tombstonesRemoved: 0, bytes: 0 };
  const batches: Buffer[] = [];
  segment.forEachBatch(segment.baseOffset, (_h, batch) => {
    batches.push(Buffer.from(batch));
    return true;
  });
  files.transient(() => fs.closeSync(fs.openSync(cleanedPath, 'w')));
  // Written by position through the cache, so the descriptor may be lent to others while the pass yields.
  const out = files.file(cleanedPath, 'r+');
  try {
    let n = 0;
    for (const batch of batches) {
      const header = readBatchHeader(batch);
      const horizon = header.attributes & DELETE_HORIZON_FLAG ? header.baseTimestamp : undefined;
      const records = decodeRecords(batch);
      result.recordsBefore += records.length;
      const kept: StoredRecord[] = [];
      for (const r of records) {
        if (r.key === null || latest.get(r.key.toString('latin1')) !== r.offset) continue;
        if (r.value === null && horizon !== undefined && now >= horizon) {
          result.tombstonesRemoved++;
          continue;
        }
        kept.push(r);
      }
      if (kept.length > 0) {
        const hasTombstone = kept.some((r) => r.value === null);
        const rewritten = encodeBatch(kept, header.baseOffset, 0, header, {
          compression: batchCompression(header), // as Kafka's cleaner: a batch keeps its codec
          layout: {
            offsetDeltas: kept.map((r) => r.offset - header.baseOffset),
            lastOffsetDelta: header.lastOffsetDelta,
            ...(hasTombstone ? { deleteHorizonMs: horizon ?? now + deleteRetentionMs } : {}),
          },
        });
        fs.writeSync(out.fd(), rewritten, 0, rewritten.length, result.bytes);
        result.bytes += rewritten.length;
        result.recordsAfter += kept.length;
      }
      if (++n % YIELD_EVERY_BATCHES === 0) await yieldToEventLoop();
    }
    fs.fdatasyncSync(out.fd());
  } finally {
    out.close();
  }
  return result;
}

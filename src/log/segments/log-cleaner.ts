/**
 * Log compaction (Kafka's LogCleaner, one partition at a time): keep the latest record per key in closed
 * segments, offsets preserved (gaps allowed), in bounded memory.
 *
 * The segments a compaction may clean are fixed when it starts: the closed ones, oldest first, while their
 * largest timestamp is at least `minCompactionLagMs` old. It then runs passes until it has covered the log
 * up to the high watermark (as it was at the start). Each pass:
 *
 * 1. Maps keys to their latest offset over the next range of the log, [start, end): from where the pass
 *    before ended (the first pass: the first segment's base offset) until its {@link OffsetMap} is full
 *    (`end` is then the first record whose key did not fit) or the high watermark. The map is Kafka's
 *    SkimpyOffsetMap, in the cleaner's dedupe buffer (Kafka's `log.cleaner.dedupe.buffer.size`): a log with
 *    more keys than the buffer holds takes several passes, where Kafka takes several cleanings.
 * 2. Cleans the eligible segments that start below `end`, oldest first. A record at offset r < end goes when
 *    its key is null, when the map holds its key at an offset above r (a later record of the key lies in the
 *    range), or when it is a tombstone (null value) the map holds at r (its key's latest in the range) whose
 *    batch's delete horizon passed. Records at or beyond `end`, and those whose key the map lacks, stay: the
 *    range that holds a later record of their key, if any, is a later pass's. A kept tombstone without a delete
 *    horizon gets one, `now + deleteRetentionMs`, stored in its batch as KIP-534 does. Each batch keeps its base
 *    offset, last offset delta and compression codec; a batch the pass does not change is copied as it is,
 *    and a segment it does not change is not rewritten.
 * 3. Swaps each rewritten segment in: the new file is written beside the old as `.cleaned`, fsynced, then
 *    renamed over the `.log` (atomic), and its indexes rebuilt. A crash before the rename leaves the old
 *    segment (the `.cleaned` file is removed on open); after it, the new one. Either is a correct log.
 *
 * So a record goes exactly when a later record of its key lies below the high watermark (the pass whose range
 * holds the key's latest record removes it), or it is its key's latest, a tombstone, and its horizon passed:
 * the single-map result of Kafka's cleaner, whatever the number of passes. Memory: the map (at most the
 * dedupe buffer), one batch decoded at a time, a 1 MiB write buffer, and a few numbers per segment.
 *
 * The work yields to the event loop every 500 batches or 20,000 records, so produce and fetch go on while it
 * runs; a segment that retention deleted meanwhile is skipped, and a log that closed ends the compaction.
 *
 * Every batch read is checked (length, CRC-32C) first. A segment holding a corrupt batch is left as it is (a copy
 * would drop the batch, or launder it under a fresh CRC, or stop at a length it garbled), and the keys after it
 * in its segment are not mapped; the segment reports the batch (see segment.ts). Keeping more is always correct.
 */
import fs from 'node:fs';
import type { Clock } from '../../common/clock.js';
import { cleanBatch, mapBatchKeys } from '../compaction.js';
import type { BatchCleaning } from '../compaction.js';
import type { CompactionStats } from '../../protocol/topics.js';
import { OnelogError } from '../../protocol/errors.js';
import type { CachedFile, FileCache } from './file-cache.js';
import type { OffsetMap } from '../offset-map.js';
import type { LogCleaner } from '../compaction.js';
import type { LogSegment } from './segment.js';
import { writeFully } from './write-fully.js';
import { FILE_MODE } from '../../common/file-modes.js';



const YIELD_EVERY_BATCHES = 500;
const YIELD_EVERY_RECORDS = 20_000;
/** Bytes of cleaned output gathered before a write. */
const WRITE_CHUNK_BYTES = 1024 * 1024;
const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** What the cleaner needs of a partition log. */
export interface CleanableLog {
  /** All segments, oldest first; the last is the active one. */
  readonly segmentsForCleaning: readonly LogSegment[];
  readonly highWatermark: number;
  /** Whether the log closed: a compaction stops at its next yield. */
  readonly isClosed: boolean;
  /**
   * Swaps a cleaned file in for `segment`. Returns false (and removes the file) if the segment is no longer
   * part of the log.
   */
  replaceSegment(segment: LogSegment, cleanedPath: string): Promise<boolean>;
}

/** A topic's settings for one compaction. */
export interface CompactionSettings {
  /** Read once, when the compaction starts (not when it is asked for: it may wait for others). */
  clock: Clock;
  /** Segments whose largest timestamp is younger than this, ms, are not cleaned (nor any after them). */
  minCompactionLagMs: number;
  /** How long a kept tombstone stays, ms: its delete horizon is the compaction's now plus this. */
  deleteRetentionMs: number;
  /** The cleaned files are written through this cache. */
  files: FileCache;
}




/**
 * Compacts the closed segments of `log` (see the file's comment) with `cleaner`'s key map, after the compactions
 * asked for before.
 * @returns what it did; `passes` > 1 when the log's keys did not fit in the buffer at once
 * @throws what reading or writing the files throws; the log is left correct (see step 3)
 */
export function cleanLog(cleaner: LogCleaner, log: CleanableLog, settings: CompactionSettings): Promise<CompactionStats> {
  return cleaner.withKeyMap((map) => compactLog(log, settings, map));
}

/** What happened to one eligible segment over the passes so far. */
interface SegmentTally {
  recordsBefore: number;
  bytesBefore: number;
  records: number;
  bytes: number;
  rewritten: boolean;
  /** Deleted by retention meanwhile: not counted. */
  gone: boolean;
}

/** What a pass cleans with. */
interface PassContext extends BatchCleaning {
  files: FileCache;
  pace: Pace;
  /** The write buffer of the cleaned files. */
  staging: Buffer;
}

/**
 * Counts stats over the passes: each eligible segment's records and bytes before the compaction are taken the
 * first time a pass cleans it, and after it from the last; `segments` counts those rewritten at least once,
 * `tombstonesRemoved` the tombstones removed because their horizon passed (as the latest of their key in
 * their pass's range: one that a later record of its key also supersedes may be counted here too).
 */
async function compactLog(log: CleanableLog, settings: CompactionSettings, map: OffsetMap): Promise<CompactionStats> {
  const now = settings.clock.now();
  const stats: CompactionStats = { segments: 0, recordsBefore: 0, recordsAfter: 0, tombstonesRemoved: 0, bytesBefore: 0, bytesAfter: 0, passes: 0 };
  const segments = log.segmentsForCleaning;
  const hw = log.highWatermark;
  const tallies = new Map<number, SegmentTally | null>(); // by base offset: a rewritten segment is a new object
  for (const segment of segments.slice(0, -1)) {
    if (segment.maxTimestamp > now - settings.minCompactionLagMs) break; // too young, and so is everything after it
    tallies.set(segment.baseOffset, null);
  }
  if (tallies.size === 0 || log.isClosed) return stats;
  const pace = new Pace();
  const staging = Buffer.allocUnsafe(WRITE_CHUNK_BYTES);
  passes: for (let start = segments[0]!.baseOffset; start < hw; ) {
    const end = await mapKeys(log, map, start, hw, pace);
    if (end === null) break;
    if (end <= start) throw new Error(`compaction pass made no progress at offset ${start}`);
    stats.passes++;
    const context: PassContext = { map, end, now, deleteRetentionMs: settings.deleteRetentionMs, files: settings.files, pace, staging };
    for (const segment of [...log.segmentsForCleaning]) {
      if (segment.baseOffset >= end) break;
      if (!tallies.has(segment.baseOffset)) continue;
      const outcome = await cleanSegment(log, segment, context);
      if (outcome === 'closed') break passes;
      const tally = tallies.get(segment.baseOffset);
      if (outcome === 'gone') {
        if (tally) tally.gone = true;
        continue;
      }
      stats.tombstonesRemoved += outcome.tombstonesRemoved;
      if (tally) {
        tally.records = outcome.recordsAfter;
        tally.bytes = outcome.bytesAfter;
        tally.rewritten ||= outcome.rewritten;
      } else {
        tallies.set(segment.baseOffset, {
          recordsBefore: outcome.recordsBefore, bytesBefore: outcome.bytesBefore, records: outcome.recordsAfter,
          bytes: outcome.bytesAfter, rewritten: outcome.rewritten, gone: false,
        });
      }
    }
    start = end;
  }
  for (const tally of tallies.values()) {
    if (tally === null || tally.gone) continue;
    if (tally.rewritten) stats.segments++;
    stats.recordsBefore += tally.recordsBefore;
    stats.recordsAfter += tally.records;
    stats.bytesBefore += tally.bytesBefore;
    stats.bytesAfter += tally.bytes;
  }
  return stats;
}

/**
 * Fills `map` with the latest offset of each key from `start` on, below `hw`, until it is full.
 * @returns where the range ends: the first record whose key did not fit, else `hw`; null if the log closed
 */
async function mapKeys(log: CleanableLog, map: OffsetMap, start: number, hw: number, pace: Pace): Promise<number | null> {
  map.reset(hw - start); // no more keys than offsets
  const segments = [...log.segmentsForCleaning];
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!;
    if (segment.baseOffset >= hw) break;
    if (i + 1 < segments.length && segments[i + 1]!.baseOffset <= start) continue;
    if (!log.segmentsForCleaning.includes(segment)) continue; // retention deleted it meanwhile
    try {
      for (const { header, batch } of segment.batches(Math.max(start, segment.baseOffset), true)) {
        const end = mapBatchKeys(map, header, batch, start, hw);
        if (end !== undefined) return end;
        if (pace.spent(header.recordCount)) {
          await yieldToEventLoop();
          if (log.isClosed) return null;
          if (!log.segmentsForCleaning.includes(segment)) break; // retention deleted it meanwhile
        }
      }
    } catch (err) {
      // A corrupt batch (reported by the segment): the keys after it in its segment are not mapped, so the records
      // they would have superseded stay. Keeping more is always a correct compaction.
      if (!isCorruptOnDisk(err)) throw err;
    }
  }
  return hw;
}

/** Whether `err` is a segment's report of a corrupt batch on disk (`CORRUPT_MESSAGE` naming the segment file). */
function isCorruptOnDisk(err: unknown): boolean {
  return err instanceof OnelogError && err.code === 'CORRUPT_MESSAGE' && typeof err.context.segment === 'string';
}

/** What cleaning a segment in one pass did. */
interface SegmentOutcome {
  rewritten: boolean;
  recordsBefore: number;
  recordsAfter: number;
  bytesBefore: number;
  bytesAfter: number;
  tombstonesRemoved: number;
}

/**
 * Cleans `segment` by the pass's map: first reads it to the first batch the pass changes (if none, the
 * segment stays as it is), then writes the cleaned copy and swaps it in.
 * @returns 'gone' if retention deleted the segment meanwhile, 'closed' if the log closed
 */
async function cleanSegment(log: CleanableLog, segment: LogSegment, pass: PassContext): Promise<SegmentOutcome | 'gone' | 'closed'> {
  const stopped = () => (log.isClosed ? 'closed' : log.segmentsForCleaning.includes(segment) ? null : 'gone');
  const first = stopped();
  if (first !== null) return first;
  const bytesBefore = segment.size;
  let records = 0;
  let firstChange = -1;
  const unchanged = (): SegmentOutcome => ({ rewritten: false, recordsBefore: records, recordsAfter: records, bytesBefore, bytesAfter: bytesBefore, tombstonesRemoved: 0 });
  // A segment holding a corrupt batch is left as it is: a copy would drop it, or what follows a length it garbled.
  if (segment.holdsCorruption) return unchanged();
  try {
    for (const { header, batch, position } of segment.batches(segment.baseOffset, true)) {
      if (cleanBatch(batch, header, pass) !== null) {
        firstChange = position;
        break;
      }
      records += header.recordCount;
      if (pass.pace.spent(header.recordCount)) {
        await yieldToEventLoop();
        const stop = stopped();
        if (stop !== null) return stop;
      }
    }
  } catch (err) {
    if (isCorruptOnDisk(err)) return unchanged();
    throw err;
  }
  if (firstChange < 0) return unchanged();

  const cleanedPath = `${segment.logPath}.cleaned`;
  pass.files.transient(() => fs.closeSync(fs.openSync(cleanedPath, 'w', FILE_MODE)));
  // Written by position through the cache, so the descriptor may be lent to others while the pass yields.
  const out = new CleanedFile(pass.files.file(cleanedPath, 'r+'), pass.staging);
  const result: SegmentOutcome = { rewritten: true, recordsBefore: 0, recordsAfter: 0, bytesBefore, bytesAfter: 0, tombstonesRemoved: 0 };
  let stop: 'gone' | 'closed' | null = null;
  try {
    // Validated: the first walk stopped at the first change, so a corrupt batch after it is met here.
    for (const { header, batch, position } of segment.batches(segment.baseOffset, true)) {
      result.recordsBefore += header.recordCount;
      const cleaned = position < firstChange ? null : cleanBatch(batch, header, pass);
      if (cleaned === null) {
        out.write(batch);
        result.recordsAfter += header.recordCount;
      } else {
        result.tombstonesRemoved += cleaned.tombstonesRemoved;
        if (cleaned.batch !== null) out.write(cleaned.batch);
        result.recordsAfter += cleaned.records;
      }
      if (pass.pace.spent(header.recordCount)) {
        await yieldToEventLoop();
        if ((stop = stopped()) !== null) break;
      }
    }
    if (stop === null) result.bytesAfter = out.finish();
  } catch (err) {
    out.close();
    fs.rmSync(cleanedPath, { force: true });
    if (isCorruptOnDisk(err)) return unchanged();
    throw err;
  } finally {
    out.close();
  }
  if (stop !== null) {
    fs.rmSync(cleanedPath, { force: true });
    return stop;
  }
  if (!(await log.replaceSegment(segment, cleanedPath))) return log.isClosed ? 'closed' : 'gone';
  return result;
}


/** A cleaned segment file being written: batches gathered in the staging buffer, written by position. */
class CleanedFile {
  private staged = 0;
  private written = 0;

  constructor(
    private readonly file: CachedFile,
    private readonly staging: Buffer,
  ) {}

  /** Appends `bytes` (copied: a view of the segment's read buffer may change once the caller goes on). */
  write(bytes: Buffer): void {
    if (this.staged + bytes.length > this.staging.length) this.flush();
    if (bytes.length > this.staging.length) this.writeAt(bytes, bytes.length);
    else this.staged += bytes.copy(this.staging, this.staged);
  }

  /** Writes what is staged and fdatasyncs the file. @returns its size, bytes */
  finish(): number {
    this.flush();
    fs.fdatasyncSync(this.file.fd());
    return this.written;
  }

  close(): void {
    this.file.close();
  }

  private flush(): void {
    if (this.staged > 0) this.writeAt(this.staging, this.staged);
    this.staged = 0;
  }

  private writeAt(bytes: Buffer, length: number): void {
    writeFully(this.file.fd(), bytes.subarray(0, length), this.written);
    this.written += length;
  }
}

/** Counts the work since the last yield to the event loop. */
class Pace {
  private batches = 0;
  private records = 0;

  /** Counts a batch of `records` records. @returns true when it is time to yield (and starts counting again) */
  spent(records: number): boolean {
    this.records += records;
    if (++this.batches < YIELD_EVERY_BATCHES && this.records < YIELD_EVERY_RECORDS) return false;
    this.batches = 0;
    this.records = 0;
    return true;
  }
}

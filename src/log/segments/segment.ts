/**
 * One segment of a partition's log (Kafka's LogSegment): a `.log` file of whole RecordBatch v2 batches,
 * named by the segment's base offset (20 digits), with its sparse {@link OffsetIndex} (`.index`) and
 * {@link TimeIndex} (`.timeindex`) beside it. Appends go to the end with positional writes; reads are
 * `pread`s served from the page cache.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ioBuffers } from '../../common/buffer-pool.js';
import type { BufferPool } from '../../common/buffer-pool.js';
import { BATCH_HEADER_BYTES, batchSize, LOG_OVERHEAD, readBaseOffset, readBatchHeader, readLastOffset, validateBatch } from '../../protocol/record-batch.js';
import type { BatchHeader } from '../../protocol/record-batch.js';
import { OnelogError } from '../../protocol/errors.js';
import { readFileIfExists, removeFileIfExists, replaceFile } from './checkpoint.js';
import type { CachedFile, FileCache } from './file-cache.js';
import { OffsetIndex } from './offset-index.js';
import { TimeIndex } from './time-index.js';
import { writeFully } from './write-fully.js';
import { FILE_MODE } from '../../common/file-modes.js';
import type { Logger } from '../../common/logger.js';
import type { CorruptBatch } from '../partition.js';

const CHUNK_BYTES = 256 * 1024;
const EMPTY = Buffer.alloc(0);

/** File name stem of the segment starting at `baseOffset`: the offset zero-padded to 20 digits, as Kafka. */
export function segmentStem(baseOffset: number): string {
  return String(baseOffset).padStart(20, '0');
}

/**
 * Reads a file in large chunks so scans over many small batches make few system calls. With `pool`, its chunks
 * come from the pool, and {@link release} gives the last one back.
 */
class ChunkReader {
  private buf: Buffer = EMPTY;
  private start = 0;
  private length = 0;

  constructor(
    private readonly file: CachedFile,
    private readonly fileBytes: number,
    private readonly pool?: BufferPool,
  ) {}

  /**
   * Makes `[pos, pos + len)` available and returns the buffer offset of `pos`, or -1 if the file ends first.
   */
  ensure(pos: number, len: number): number {
    if (pos >= this.start && pos + len <= this.start + this.length) return pos - this.start;
    if (pos + len > this.fileBytes) return -1;
    const want = Math.min(Math.max(len, CHUNK_BYTES), this.fileBytes - pos);
    if (this.buf.length < want) {
      this.release();
      this.buf = this.pool?.take(want) ?? Buffer.allocUnsafe(want);
    }
    this.length = fs.readSync(this.file.fd(), this.buf, 0, want, pos);
    this.start = pos;
    return this.length >= len ? 0 : -1;
  }

  get buffer(): Buffer {
    return this.buf;
  }

  /** The bytes `[from, to)` of the file when the chunk in hand holds them all (a view of it), else undefined. */
  view(from: number, to: number): Buffer | undefined {
    return from >= this.start && to <= this.start + this.length ? this.buf.subarray(from - this.start, to - this.start) : undefined;
  }

  /** Gives the chunk back to the pool; the reader must not be used after. */
  release(): void {
    this.pool?.give(this.buf);
    this.buf = EMPTY;
    this.length = 0;
  }
}

/** What recovery found in a segment. */
export interface RecoveryResult {
  /** Bytes of whole, valid batches kept. */
  validBytes: number;
  /** Bytes cut off the end (a torn or corrupt tail). */
  truncatedBytes: number;
  /** Why the tail was cut, when it was. */
  reason?: string;
}


/** What is said of a corrupt batch, in its error, its log line and its alert: where it is, what is wrong, what to do. */
export function corruptBatchMessage({ segment, position, offset, reason }: CorruptBatch): string {
  return `the batch at byte ${position} of ${segment} (offsets from ${offset}) is corrupt on disk: ${reason}. Its records ` +
    'cannot be served and it is kept as it is; restore the partition from a replica or backup, or delete the records up ' +
    'to past it (onelog topics delete-records)';
}

/** Options for opening a segment. */
export interface SegmentOptions {
  /** Bytes of log between two offset index entries. @default 4096 (Kafka's index.interval.bytes) */
  indexIntervalBytes: number;
  logger: Logger;
  /** Every descriptor the segment takes goes through this cache. */
  files: FileCache;
  /**
   * Told of each corrupt batch the segment finds: once when a scan (at open, or a rebuild of its indexes) finds it,
   * and each time a read or a validating walk meets it, before that answers its error. @default none
   */
  onCorrupt?: (batch: CorruptBatch) => void;
}

/** What the log knows of a segment it opens (see {@link LogSegment.open}). */
export interface SegmentBounds {
  /**
   * For a trusted segment that is not the last: the next segment's base offset, so nothing of it needs reading at
   * all (its indexes and size load when first needed).
   */
  nextOffset?: number;
  /**
   * Offsets below it were synced (the recovery point of a clean close or a roll): a bad batch that starts below it
   * is corruption, reported and kept; only one at or after it is a torn tail, cut off. A segment that was sealed (not
   * the last) was synced whole: Infinity. @default 0: every bad batch is a torn tail (a segment of unknown history)
   */
  recoveryPoint?: number;
}

/** A segment's two indexes, in memory. */
interface Indexes {
  offset: OffsetIndex;
  time: TimeIndex;
}

/**
 * One segment's files. The `.log` descriptor is opened on demand through the {@link FileCache}; the indexes
 * of a closed segment are loaded with it on first use and dropped when the cache closes it (Kafka's lazy
 * index), unless they hold entries not yet written: those of the active segment, written by {@link seal}.
 */
export class LogSegment {
  /** Offset after the last record in this segment; `baseOffset` when it is empty. */
  nextOffset: number;
  private readonly file: CachedFile;
  /** Size of the `.log` file in bytes; -1 until first asked (a trusted closed segment is not even stat'ed). */
  private sizeBytes: number;
  /** Largest record timestamp (ms), -1 when empty; undefined until first asked (then read from the time index). */
  private maxTs: number | undefined;
  /** Base offset of the last batch appended, for the closing time index entry; -1 once sealed. */
  private lastBatchOffset: number;
  private bytesSinceIndexEntry = 0;
  /** The loaded indexes, or null until needed. */
  private indexes: Indexes | null = null;
  /** Whether the loaded indexes hold entries their files lack (written by {@link seal}). */
  private indexesDirty = false;
  /** The corrupt batches found, by byte position: reads stop at them, and appends go to a new segment. */
  private readonly knownCorrupt = new Map<number, CorruptBatch>();

  private constructor(
    readonly dir: string,
    readonly baseOffset: number,
    private readonly options: SegmentOptions,
    size: number,
  ) {
    this.file = options.files.file(this.logPath, 'r+', () => this.dropCleanIndexes());
    this.sizeBytes = size;
    this.nextOffset = baseOffset;
    this.lastBatchOffset = baseOffset;
    this.maxTs = size === 0 ? -1 : undefined;
  }

  /** Path of the `.log` file. */
  get logPath(): string {
    return path.join(this.dir, `${segmentStem(this.baseOffset)}.log`);
  }

  private get indexPath(): string {
    return path.join(this.dir, `${segmentStem(this.baseOffset)}.index`);
  }

  private get timeIndexPath(): string {
    return path.join(this.dir, `${segmentStem(this.baseOffset)}.timeindex`);
  }

  /** Size of the `.log` file, in bytes. */
  get size(): number {
    if (this.sizeBytes < 0) this.sizeBytes = fs.statSync(this.logPath).size;
    return this.sizeBytes;
  }

  /** Largest record timestamp in this segment (ms), or -1 when empty. */
  get maxTimestamp(): number {
    this.maxTs ??= this.loadedIndexes().time.lastTimestamp;
    return this.maxTs;
  }

  /** Creates a new, empty segment (fails if its file exists); its index files are written when it is sealed. */
  static create(dir: string, baseOffset: number, options: SegmentOptions): LogSegment {
    const segment = new LogSegment(dir, baseOffset, options, 0);
    options.files.transient(() => fs.closeSync(fs.openSync(segment.logPath, 'wx', FILE_MODE)));
    segment.startIndexes();
    return segment;
  }

  /**
   * Opens an existing segment (Kafka's LogLoader, one segment at a time).
   * @param recover validate every batch by length and CRC-32C, truncate a torn tail and rebuild both indexes:
   *   for segments after the recovery point, where a crash may have left a torn tail. Otherwise the segment is
   *   trusted: its indexes are loaded (and rebuilt by a full recovery if missing or invalid), and only the
   *   batches after the last offset index entry are read and validated. Either way, a bad batch below
   *   `bounds.recoveryPoint` is reported ({@link SegmentOptions.onCorrupt}) and kept, never cut off, and a
   *   segment that ends below it is reported and counted up to it (see {@link scan})
   * @param bounds what the log knows of the segment: where it ends, which offsets were synced
   */
  static open(dir: string, baseOffset: number, recover: boolean, options: SegmentOptions, bounds: SegmentBounds = {}): LogSegment {
    const { nextOffset, recoveryPoint = 0 } = bounds;
    if (!recover && nextOffset !== undefined) {
      const segment = new LogSegment(dir, baseOffset, options, -1);
      segment.nextOffset = nextOffset;
      segment.lastBatchOffset = -1;
      return segment;
    }
    const segment = new LogSegment(dir, baseOffset, options, -1);
    try {
      segment.sizeBytes = fs.fstatSync(segment.file.fd()).size;
      const loaded = recover ? null : segment.readIndexFiles(Infinity);
      if (loaded === null) {
        segment.recover(recoveryPoint);
        return segment;
      }
      segment.indexes = loaded;
      segment.maxTs = loaded.time.lastTimestamp;
      // The batch at the last index entry starts the tail; if it is gone, the log ends where it began.
      segment.nextOffset = loaded.offset.lastOffset;
      segment.reportTruncation(segment.scan(loaded.offset.lastPosition, false, recoveryPoint), recoveryPoint);
      return segment;
    } catch (err) {
      segment.release();
      throw err;
    }
  }

  /** Starts both indexes empty; files on disk (of an earlier segment at this offset, or stale) go until sealed. */
  private startIndexes(): void {
    this.deleteIndexes();
    this.indexes = { offset: new OffsetIndex(this.baseOffset), time: new TimeIndex(this.baseOffset) };
  }

  /**
   * Validates every batch, truncates a torn tail at or after `recoveryPoint` (see {@link scan}), and rebuilds both
   * indexes in memory (written by {@link seal}).
   */
  private recover(recoveryPoint: number): void {
    this.startIndexes();
    this.nextOffset = this.baseOffset;
    this.maxTs = -1;
    this.bytesSinceIndexEntry = 0;
    this.reportTruncation(this.scan(0, true, recoveryPoint), recoveryPoint);
  }

  /** Both index files parsed, or null if either is missing or invalid. */
  private readIndexFiles(nextOffset: number): Indexes | null {
    const offsetData = readFileIfExists(this.options.files, this.indexPath);
    const offset = offsetData === undefined ? null : OffsetIndex.parse(offsetData, this.baseOffset, this.size);
    if (offset === null) return null;
    const timeData = readFileIfExists(this.options.files, this.timeIndexPath);
    const time = timeData === undefined ? null : TimeIndex.parse(timeData, this.baseOffset, nextOffset);
    return time === null ? null : { offset, time };
  }

  /**
   * The indexes, loading those of a closed segment from their files (rebuilt from the batches if missing
   * or invalid, as at open). The `.log` descriptor is opened with them, so the cache's eviction of the file
   * drops them again.
   */
  private loadedIndexes(): Indexes {
    this.file.fd();
    if (this.indexes !== null) return this.indexes;
    const loaded = this.readIndexFiles(this.nextOffset);
    if (loaded !== null) {
      this.indexes = loaded;
      return loaded;
    }
    const nextOffset = this.nextOffset;
    // Opened and in use: every batch it holds was synced or counted, so nothing of it is cut off now.
    this.recover(Infinity);
    this.nextOffset = Math.max(this.nextOffset, nextOffset); // compaction may have emptied its last offsets
    this.seal();
    return this.indexes!;
  }

  /** On eviction of the `.log` descriptor: drops indexes whose files hold every entry. */
  private dropCleanIndexes(): void {
    if (!this.indexesDirty && this.lastBatchOffset < 0) this.indexes = null;
  }

  private reportTruncation(result: RecoveryResult, recoveryPoint: number): void {
    if (result.truncatedBytes > 0) {
      this.options.logger.warn(
        { segment: this.logPath, keptBytes: result.validBytes, truncatedBytes: result.truncatedBytes,
          nextOffset: this.nextOffset, recoveryPoint, reason: result.reason },
        'truncated a torn tail of the log (written after the recovery point)',
      );
    }
  }

  /**
   * Walks the batches from byte `from` (a batch start) to the end, checking each one's length, CRC-32C and
   * offsets: finds `nextOffset` and `maxTimestamp`, and rebuilds the indexes when asked.
   *
   * A bad batch that starts at or after `recoveryPoint` is a torn tail (a crash cut its write short): the file is
   * cut there. One that starts below it held synced records, so it is corruption, not a tear: it is reported
   * ({@link found}) and kept, and the walk goes on after it when its length leads to a place in the file; else the
   * rest of the file is kept unread. A segment whose batches end below a finite `recoveryPoint` (synced bytes gone)
   * is reported the same way, at its end. Either way its `nextOffset` is then raised to the recovery point: no
   * offset below it is given out again.
   */
  private scan(from: number, rebuildIndexes: boolean, recoveryPoint: number): RecoveryResult {
    const size = this.size;
    const reader = new ChunkReader(this.file, size);
    let pos = from;
    let reason: string | undefined;
    let maxTs = this.maxTs ?? -1;
    /** The least offset the batch at `pos` may start at: past a corrupt batch, where its header says it ends. */
    let floor = this.nextOffset;
    /** Whether the last batch met was corrupt (it then holds the offsets up to the recovery point). */
    let endsCorrupt = false;
    while (pos < size) {
      const { header, bytes, why } = this.checkBatch(reader, pos, size);
      if (why !== undefined) {
        if (floor >= recoveryPoint) {
          reason = why;
          break;
        }
        const plausible = header !== undefined && header.baseOffset >= floor && header.baseOffset < recoveryPoint;
        this.found(pos, plausible ? header.baseOffset : floor, why);
        endsCorrupt = true;
        if (header === undefined || bytes < BATCH_HEADER_BYTES || pos + bytes > size) break; // the rest is kept unread
        if (plausible) floor = Math.max(floor, Math.min(header.baseOffset + header.lastOffsetDelta + 1, recoveryPoint));
        pos += bytes;
        continue;
      }
      endsCorrupt = false;
      if (header!.maxTimestamp > maxTs) maxTs = header!.maxTimestamp;
      this.maxTs = maxTs;
      if (rebuildIndexes) this.maybeIndex(header!.baseOffset, pos, bytes);
      this.nextOffset = header!.baseOffset + header!.lastOffsetDelta + 1;
      this.lastBatchOffset = header!.baseOffset;
      floor = this.nextOffset;
      pos += bytes;
    }
    const truncatedBytes = reason === undefined ? 0 : size - pos;
    if (truncatedBytes > 0) {
      const fd = this.file.fd();
      fs.ftruncateSync(fd, pos);
      fs.fdatasyncSync(fd);
      this.sizeBytes = pos;
    }
    if (Number.isFinite(recoveryPoint) && this.nextOffset < recoveryPoint) {
      if (!endsCorrupt) {
        this.found(this.size, this.nextOffset, `the segment's batches end at offset ${this.nextOffset}, below the recovery point ` +
          `${recoveryPoint}: offsets ${this.nextOffset} to ${recoveryPoint - 1} were synced and are gone from the file`);
      }
      this.nextOffset = recoveryPoint;
    }
    return { validBytes: pos, truncatedBytes, ...(reason === undefined ? {} : { reason }) };
  }

  /** Reads and checks the batch at byte `pos`: its header (when one fits), its size, and what is wrong with it, if anything. */
  private checkBatch(reader: ChunkReader, pos: number, size: number): { header?: BatchHeader; bytes: number; why?: string } {
    let off = reader.ensure(pos, BATCH_HEADER_BYTES);
    if (off < 0) return { bytes: size - pos, why: `only ${size - pos} bytes left at position ${pos}, a batch header needs ${BATCH_HEADER_BYTES}` };
    const header = readBatchHeader(reader.buffer, off);
    const bytes = LOG_OVERHEAD + header.batchLength;
    off = bytes >= BATCH_HEADER_BYTES ? reader.ensure(pos, bytes) : -1;
    const check = off < 0 ? `batch at position ${pos} of ${bytes} bytes is cut off` : validateBatch(reader.buffer.subarray(off, off + bytes));
    if (typeof check === 'string') return { header, bytes, why: check };
    if (header.baseOffset < this.nextOffset) {
      return { header, bytes, why: `batch at position ${pos} has base offset ${header.baseOffset}, below ${this.nextOffset}` };
    }
    return { header, bytes };
  }

  /**
   * Records a corrupt batch a scan found (once per position, told to {@link SegmentOptions.onCorrupt}): reads then
   * stop at it, whatever its header says.
   */
  private found(position: number, offset: number, reason: string): void {
    if (this.knownCorrupt.has(position)) return;
    const batch = { segment: this.logPath, position, offset, reason };
    this.knownCorrupt.set(position, batch);
    this.options.onCorrupt?.(batch);
  }

  /** Whether a scan found a corrupt batch in the segment: the log appends to a new segment instead. */
  get holdsCorruption(): boolean {
    return this.knownCorrupt.size > 0;
  }

  /** Indexes the batch at `position` if enough bytes passed; `maxTimestamp` already includes the batch. */
  private maybeIndex(baseOffset: number, position: number, batchBytes: number): void {
    // Position 0 needs no entry: a lookup that finds none starts from the beginning.
    if (position > 0 && this.bytesSinceIndexEntry >= this.options.indexIntervalBytes) {
      const indexes = this.loadedIndexes();
      indexes.offset.append(baseOffset, position);
      indexes.time.maybeAppend(this.maxTimestamp, baseOffset);
      this.indexesDirty = true;
      this.bytesSinceIndexEntry = 0;
    }
    this.bytesSinceIndexEntry += batchBytes;
  }

  /**
   * Appends one encoded batch (base offset already stamped) at the end of the file. The bytes reach the
   * page cache before this returns; {@link datasync} makes them durable. A failed write leaves the segment
   * as it was: a partly written tail is cut off again.
   * @throws the file system's error when the write failed and its tail was cut off; OnelogError
   *   `STORAGE_ERROR` when the tail could not be cut off either (the file then holds bytes the segment does not
   *   count: its partition must stop writing, see partition-log.ts)
   */
  append(batch: Buffer, header: Pick<BatchHeader, 'baseOffset' | 'lastOffsetDelta' | 'maxTimestamp'>): void {
    const size = this.size;
    const fd = this.file.fd(); // for want of a descriptor this throws before anything is written
    try {
      // A short write (the disk filling up) is continued: the next write says why it cannot (ENOSPC).
      writeFully(fd, batch, size);
    } catch (err) {
      try {
        fs.ftruncateSync(fd, size);
      } catch (cut) {
        throw new OnelogError('STORAGE_ERROR', `a write to ${this.logPath} failed (${(err as Error).message}) and its ` +
          `partly written tail could not be cut off (${(cut as Error).message})`, { segment: this.logPath, errno: (err as NodeJS.ErrnoException).code });
      }
      throw err;
    }
    if (header.maxTimestamp > this.maxTimestamp) this.maxTs = header.maxTimestamp;
    this.maybeIndex(header.baseOffset, size, batch.length);
    this.sizeBytes = size + batch.length;
    this.nextOffset = header.baseOffset + header.lastOffsetDelta + 1;
    this.lastBatchOffset = header.baseOffset;
  }

  /**
   * The offset from which to scan for the first record with timestamp >= `timestamp` (time index lookup).
   */
  offsetForTimestampLowerBound(timestamp: number): number {
    return this.loadedIndexes().time.lookup(timestamp);
  }

  /**
   * Marks the segment as closed for appends: adds the final time index entry, so the index's last entry is
   * the segment's largest timestamp, and writes both index files (replaced atomically, fdatasynced), so a
   * trusted reopen after a power loss finds them whole. A segment too small for an offset index entry gets
   * no index files: its first use rebuilds them from its few batches.
   */
  seal(): void {
    if (this.lastBatchOffset >= 0) {
      if (this.loadedIndexes().time.maybeAppend(this.maxTimestamp, this.lastBatchOffset)) this.indexesDirty = true;
      this.lastBatchOffset = -1;
    }
    if (!this.indexesDirty || this.indexes === null) return;
    if (this.indexes.offset.entries === 0) {
      // Less than indexIntervalBytes of log: a reopen rebuilds both by reading it, cheaper than two fdatasyncs now.
      this.deleteIndexes();
    } else {
      replaceFile(this.options.files, this.indexPath, this.indexes.offset.toBuffer());
      replaceFile(this.options.files, this.timeIndexPath, this.indexes.time.toBuffer());
    }
    this.indexesDirty = false;
  }

  /**
   * Reads whole batches: starting with the batch that holds `offset` (or the first after it), adding
   * following batches while the total stays within `maxBytes` (the first is returned whatever its size,
   * so a consumer always makes progress, as Kafka's KIP-74), and stopping before any batch that starts at
   * or after `endOffset`, or once the batches hold `maxOffsets` offsets from `offset` on.
   * @returns the batches as one buffer, or null when this segment holds nothing at or after `offset`
   */
  read(offset: number, maxBytes: number, endOffset: number, maxOffsets = Infinity): Buffer | null {
    let pos = this.loadedIndexes().offset.lookup(offset);
    const size = this.size;
    // Pooled: the data path gives the answer back once its frame holds a copy (src/common/buffer-pool.ts says why).
    const reader = new ChunkReader(this.file, size, ioBuffers);
    let first = -1;
    let end = -1;
    let lastRead = offset - 1;
    let passed = -1; // the last batch read past: its header says it ends before `offset`
    while (pos < size) {
      const known = this.knownCorrupt.size > 0 ? this.knownCorrupt.get(pos) : undefined;
      if (known !== undefined) {
        if (first >= 0) break; // the answer ends before it
        const past = this.pastCorrupt(reader, pos, size, offset);
        if (past < 0) {
          reader.release();
          throw this.corrupt(pos, known.offset, known.reason);
        }
        pos = past;
        continue;
      }
      const off = reader.ensure(pos, BATCH_HEADER_BYTES);
      if (off < 0) break;
      const buf = reader.buffer;
      const baseOffset = readBaseOffset(buf, off);
      if (baseOffset >= endOffset) break;
      const batchBytes = batchSize(buf, off);
      if (batchBytes < BATCH_HEADER_BYTES || pos + batchBytes > size) {
        reader.release();
        throw this.corrupt(pos, baseOffset, `its length of ${batchBytes} bytes does not fit the ${size} bytes of the file`);
      }
      const lastOffset = readLastOffset(buf, off);
      if (first < 0) {
        if (lastOffset < offset) passed = pos;
        else {
          if (baseOffset > offset) this.checkPassed(reader, passed);
          first = pos;
        }
      } else if (pos + batchBytes - first > maxBytes || lastRead + 1 - offset >= maxOffsets) break;
      if (first >= 0) {
        end = pos + batchBytes;
        lastRead = lastOffset;
      }
      pos += batchBytes;
    }
    if (first < 0) {
      this.checkPassed(reader, passed);
      reader.release();
      const lost = pos >= size ? this.knownCorrupt.get(size) : undefined; // synced bytes gone from the end
      if (lost !== undefined) throw this.corrupt(size, lost.offset, lost.reason);
      return null;
    }
    // Usually the chunk the scan read holds the whole answer: no second read. It is answered as a view of the
    // chunk when it fills most of it, else copied, so a reader that keeps the answer does not keep the chunk.
    const inChunk = reader.view(first, end);
    if (inChunk !== undefined && inChunk.length * 2 >= reader.buffer.length) return this.checked(inChunk, first);
    const out = ioBuffers.take(end - first);
    if (inChunk !== undefined) inChunk.copy(out);
    else fs.readSync(this.file.fd(), out, 0, out.length, first);
    reader.release();
    return this.checked(out, first);
  }

  /**
   * Checks (CRC-32C, magic, length) the batch at `pos` that a read passed because its header says it ends before the
   * offset asked for; the read calls it when nothing it found starts at that offset (the offset lies in a gap
   * compaction left, or past the segment's last batch). The header fields that let a read pass a batch lie under its CRC: a flipped
   * bit in its last offset delta would otherwise make the read skip records silently. A read that starts where the
   * batch before ended, as a consumer's next read does, checks nothing here.
   * @param pos the batch's byte position, or -1 when the read passed none
   * @throws OnelogError `CORRUPT_MESSAGE` naming the batch, when it fails the check
   */
  private checkPassed(reader: ChunkReader, pos: number): void {
    if (pos < 0) return;
    let off = reader.ensure(pos, BATCH_HEADER_BYTES);
    const batchBytes = batchSize(reader.buffer, off);
    off = reader.ensure(pos, batchBytes);
    const check = validateBatch(reader.buffer, off);
    if (typeof check !== 'string') return;
    const baseOffset = readBaseOffset(reader.buffer, off);
    reader.release();
    throw this.corrupt(pos, baseOffset, check);
  }

  /**
   * Where a read for `offset` that met the corrupt batch at `pos` goes on: the batch after it, when the corrupt
   * one's length leads to a whole batch header in the file whose base offset is at most `offset` (so `offset`
   * lies past the corrupt batch); else -1, and the read answers the corruption.
   */
  private pastCorrupt(reader: ChunkReader, pos: number, size: number, offset: number): number {
    const off = reader.ensure(pos, BATCH_HEADER_BYTES);
    if (off < 0) return -1;
    const next = pos + batchSize(reader.buffer, off);
    if (next < pos + BATCH_HEADER_BYTES) return -1;
    const at = reader.ensure(next, BATCH_HEADER_BYTES);
    if (at < 0) return -1;
    return readBaseOffset(reader.buffer, at) <= offset ? next : -1;
  }

  /**
   * Checks every batch read (CRC-32C, magic, length) before anyone decodes or sends it, as recovery does for
   * the unflushed tail: a bit that rots on disk after recovery is reported, never served. The batches before a
   * corrupt one are answered; a read that starts at it answers the error.
   * @param position byte position in the file of `batches`
   * @throws OnelogError `CORRUPT_MESSAGE` naming the segment file, the batch's position and first offset, when
   *   the first batch is corrupt
   */
  private checked(batches: Buffer, position: number): Buffer {
    for (let pos = 0; pos < batches.length;) {
      const size = validateBatch(batches, pos);
      if (typeof size === 'string') {
        const baseOffset = readBaseOffset(batches, pos);
        const err = this.corrupt(position + pos, baseOffset, size);
        if (pos > 0) return batches.subarray(0, pos);
        throw err;
      }
      pos += size;
    }
    return batches;
  }

  /**
   * The error answering a read of a corrupt batch, told to {@link SegmentOptions.onCorrupt} first. One a read
   * found is not remembered here: the next read checks the bytes again (a bit flipped on its way from the disk
   * reads right the next time).
   */
  private corrupt(position: number, offset: number, reason: string): OnelogError {
    const batch = this.knownCorrupt.get(position) ?? { segment: this.logPath, position, offset, reason };
    this.options.onCorrupt?.(batch);
    return new OnelogError('CORRUPT_MESSAGE', corruptBatchMessage(batch), { segment: batch.segment, position, offset: batch.offset });
  }

  /**
   * Visits each batch in order, from the one the offset index points at for `fromOffset` (at or before the
   * batch holding it), until `visit` returns false.
   * @param visit gets the header, the batch bytes (a view valid only during the call) and the batch's byte
   *   position in the segment
   */
  forEachBatch(fromOffset: number, visit: (header: BatchHeader, batch: Buffer, position: number) => boolean): void {
    for (const { header, batch, position } of this.batches(fromOffset)) if (!visit(header, batch, position)) return;
  }

  /**
   * The batches in order, from the one the offset index points at for `fromOffset` (at or before the batch
   * holding it), read in chunks of 256 KiB: for a scan that may pause between batches (compaction yields to
   * the event loop). Only the bytes the file had when the scan began are visited.
   * @param validate check each batch (length, magic, CRC-32C) before it is visited, and reach the end of the file
   *   or fail: for a walk that rewrites the segment (compaction), which must neither copy a corrupt batch nor stop
   *   short of the end. Without it, the walk ends at the first batch cut off by the end of the file.
   * @returns per batch its header, its bytes (a view valid until the next batch is asked for) and its byte
   *   position in the segment
   * @throws OnelogError `CORRUPT_MESSAGE` (with `validate`) naming the first batch that fails, told to
   *   {@link SegmentOptions.onCorrupt}
   */
  *batches(fromOffset: number, validate = false): Generator<{ header: BatchHeader; batch: Buffer; position: number }, void, undefined> {
    let pos = fromOffset <= this.baseOffset ? 0 : this.loadedIndexes().offset.lookup(fromOffset);
    const size = this.size;
    const reader = new ChunkReader(this.file, size);
    while (pos < size) {
      const known = validate ? this.knownCorrupt.get(pos) : undefined;
      if (known !== undefined) throw this.corrupt(pos, known.offset, known.reason);
      let off = reader.ensure(pos, BATCH_HEADER_BYTES);
      const header = off < 0 ? undefined : readBatchHeader(reader.buffer, off);
      const batchBytes = header === undefined ? -1 : LOG_OVERHEAD + header.batchLength;
      off = batchBytes >= BATCH_HEADER_BYTES ? reader.ensure(pos, batchBytes) : -1;
      const check = off < 0 ? `batch at position ${pos} is cut off by the end of the file` : validate ? validateBatch(reader.buffer, off) : batchBytes;
      if (typeof check === 'string') {
        if (!validate) return;
        throw this.corrupt(pos, header === undefined ? this.baseOffset : header.baseOffset, check);
      }
      yield { header: header!, batch: reader.buffer.subarray(off, off + batchBytes), position: pos };
      pos += batchBytes;
    }
  }

  /** Flushes written bytes to disk (fdatasync), off the event loop; the descriptor stays pinned meanwhile. */
  datasync(): Promise<void> {
    return this.file.pinned((fd) => new Promise<void>((resolve, reject) => fs.fdatasync(fd, (err) => (err ? reject(err) : resolve()))));
  }

  /** Flushes written bytes to disk (fdatasync), blocking. */
  datasyncNow(): void {
    fs.fdatasyncSync(this.file.fd());
  }

  /** Seals the segment and closes its descriptor. */
  close(): void {
    this.seal();
    this.release();
  }

  /** Closes the descriptor and forgets the indexes without writing anything (the files are being replaced). */
  release(): void {
    this.file.close();
    this.indexes = null;
    this.indexesDirty = false;
  }

  /** Deletes the index files (they are rebuilt when next needed). */
  deleteIndexes(): void {
    removeFileIfExists(this.indexPath);
    removeFileIfExists(this.timeIndexPath);
  }

  /** Closes and deletes the segment's files. */
  delete(): void {
    this.release();
    fs.rmSync(this.logPath, { force: true });
    this.deleteIndexes();
  }
}

/**
 * One segment of a partition's log (Kafka's LogSegment): a `.log` file of whole RecordBatch v2 batches,
 * named by the segment's base offset (20 digits), with its sparse {@link OffsetIndex} (`.index`) and
 * {@link TimeIndex} (`.timeindex`) beside it. Appends go to the end with positional writes; reads are
 * `pread`s served from the page cache.
 */
import fs from 'node:fs';
import path from 'node:path';
import { BATCH_HEADER_BYTES, LOG_OVERHEAD, readBatchHeader, validateBatch } from '../protocol/record-batch.js';
import type { BatchHeader } from '../protocol/record-batch.js';
import { OffsetIndex } from './offset-index.js';
import { TimeIndex } from './time-index.js';
import type { Logger } from './logger.js';

const CHUNK_BYTES = 256 * 1024;

/** File name stem of the segment starting at `baseOffset`: the offset zero-padded to 20 digits, as Kafka. */
export function segmentStem(baseOffset: number): string {
  return String(baseOffset).padStart(20, '0');
}

/** Reads a file in large chunks so scans over many small batches make few system calls. */
class ChunkReader {
  private buf = Buffer.allocUnsafe(CHUNK_BYTES);
  private start = 0;
  private length = 0;

  constructor(
    private readonly fd: number,
    private readonly fileBytes: number,
  ) {}

  /**
   * Makes `[pos, pos + len)` available and returns the buffer offset of `pos`, or -1 if the file ends first.
   */
  ensure(pos: number, len: number): number {
    if (pos >= this.start && pos + len <= this.start + this.length) return pos - this.start;
    if (pos + len > this.fileBytes) return -1;
    const want = Math.min(Math.max(len, CHUNK_BYTES), this.fileBytes - pos);
    if (this.buf.length < want) this.buf = Buffer.allocUnsafe(want);
    this.length = fs.readSync(this.fd, this.buf, 0, want, pos);
    this.start = pos;
    return this.length >= len ? 0 : -1;
  }

  get buffer(): Buffer {
    return this.buf;
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

/** Options for opening a segment. */
export interface SegmentOptions {
  /** Bytes of log between two offset index entries. @default 4096 (Kafka's index.interval.bytes) */
  indexIntervalBytes: number;
  logger: Logger;
}

export class LogSegment {
  /** Size of the `.log` file, in bytes. */
  size: number;
  /** Offset after the last record in this segment; `baseOffset` when it is empty. */
  nextOffset: number;
  /** Largest record timestamp in this segment (ms), or -1 when empty. */
  maxTimestamp = -1;
  /** Base offset of the last batch appended, for the closing time index entry. */
  private lastBatchOffset: number;
  private bytesSinceIndexEntry = 0;

  private constructor(
    readonly dir: string,
    readonly baseOffset: number,
    private readonly fd: number,
    private index: OffsetIndex,
    private timeIndex: TimeIndex,
    private readonly options: SegmentOptions,
  ) {
    this.size = fs.fstatSync(fd).size;
    this.nextOffset = baseOffset;
    this.lastBatchOffset = baseOffset;
  }

  /** Path of the `.log` file. */
  get logPath(): string {
    return path.join(this.dir, `${segmentStem(this.baseOffset)}.log`);
  }

  private static indexPath(dir: string, baseOffset: number): string {
    return path.join(dir, `${segmentStem(baseOffset)}.index`);
  }

  private static timeIndexPath(dir: string, baseOffset: number): string {
    return path.join(dir, `${segmentStem(baseOffset)}.timeindex`);
  }

  /** Creates a new, empty segment (fails if its file exists). */
  static create(dir: string, baseOffset: number, options: SegmentOptions): LogSegment {
    const fd = fs.openSync(path.join(dir, `${segmentStem(baseOffset)}.log`), 'wx+');
    const index = OffsetIndex.create(LogSegment.indexPath(dir, baseOffset), baseOffset);
    const timeIndex = TimeIndex.create(LogSegment.timeIndexPath(dir, baseOffset), baseOffset);
    return new LogSegment(dir, baseOffset, fd, index, timeIndex, options);
  }

  /**
   * Opens an existing segment (Kafka's LogLoader, one segment at a time).
   * @param recover validate every batch by length and CRC-32C, truncate a torn or corrupt tail and rebuild
   *   both indexes: for segments after the recovery point, where a crash may have left a torn tail.
   *   Otherwise the segment is trusted: its indexes are loaded (and rebuilt by a full recovery if missing or
   *   invalid), and only the batches after the last offset index entry are read and validated.
   * @param nextOffset for a trusted segment that is not the last: the next segment's base offset, so
   *   nothing of it needs reading at all
   */
  static open(dir: string, baseOffset: number, recover: boolean, options: SegmentOptions, nextOffset?: number): LogSegment {
    const logPath = path.join(dir, `${segmentStem(baseOffset)}.log`);
    const fd = fs.openSync(logPath, 'r+');
    const size = fs.fstatSync(fd).size;
    const indexPath = LogSegment.indexPath(dir, baseOffset);
    const timeIndexPath = LogSegment.timeIndexPath(dir, baseOffset);
    const index = recover || !fs.existsSync(indexPath) ? null : OffsetIndex.load(indexPath, baseOffset, size);
    const timeIndex = index === null ? null : TimeIndex.load(timeIndexPath, baseOffset, nextOffset ?? Infinity);
    if (index === null || timeIndex === null) {
      index?.close();
      const segment = new LogSegment(dir, baseOffset, fd, OffsetIndex.create(indexPath, baseOffset),
        TimeIndex.create(timeIndexPath, baseOffset), options);
      segment.reportTruncation(segment.scan(0, true, true));
      return segment;
    }
    const segment = new LogSegment(dir, baseOffset, fd, index, timeIndex, options);
    segment.maxTimestamp = timeIndex.lastTimestamp;
    if (nextOffset !== undefined) {
      segment.nextOffset = nextOffset;
      segment.lastBatchOffset = -1;
    } else {
      // The batch at the last index entry starts the tail; if it is gone, the log ends where it began.
      segment.nextOffset = index.lastOffset;
      segment.reportTruncation(segment.scan(index.lastPosition, false, true));
    }
    return segment;
  }

  private reportTruncation(result: RecoveryResult): void {
    if (result.truncatedBytes > 0) {
      this.options.logger.warn(
        { segment: this.logPath, keptBytes: result.validBytes, truncatedBytes: result.truncatedBytes,
          nextOffset: this.nextOffset, reason: result.reason },
        'truncated a torn or corrupt tail of the log',
      );
    }
  }

  /**
   * Walks the batches from byte `from` (a batch start) to the end: finds `nextOffset` and `maxTimestamp`,
   * rebuilds the indexes when asked, and with `validate` checks each batch's length and CRC and cuts the
   * file at the first bad one.
   */
  private scan(from: number, rebuildIndexes: boolean, validate: boolean): RecoveryResult {
    const reader = new ChunkReader(this.fd, this.size);
    let pos = from;
    let reason: string | undefined;
    while (pos < this.size) {
      let off = reader.ensure(pos, BATCH_HEADER_BYTES);
      if (off < 0) {
        reason = `only ${this.size - pos} bytes left at position ${pos}, a batch header needs ${BATCH_HEADER_BYTES}`;
        break;
      }
      const header = readBatchHeader(reader.buffer, off);
      const batchBytes = LOG_OVERHEAD + header.batchLength;
      if (validate) {
        off = batchBytes >= BATCH_HEADER_BYTES ? reader.ensure(pos, batchBytes) : -1;
        const check = off < 0 ? `batch at position ${pos} of ${batchBytes} bytes is cut off` :
          validateBatch(reader.buffer.subarray(off, off + batchBytes));
        if (typeof check === 'string') {
          reason = check;
          break;
        }
        if (header.baseOffset < this.nextOffset) {
          reason = `batch at position ${pos} has base offset ${header.baseOffset}, below ${this.nextOffset}`;
          break;
        }
      }
      if (header.maxTimestamp > this.maxTimestamp) this.maxTimestamp = header.maxTimestamp;
      if (rebuildIndexes) this.maybeIndex(header.baseOffset, pos, batchBytes);
      this.nextOffset = header.baseOffset + header.lastOffsetDelta + 1;
      this.lastBatchOffset = header.baseOffset;
      pos += batchBytes;
    }
    const truncatedBytes = this.size - pos;
    if (truncatedBytes > 0) {
      fs.ftruncateSync(this.fd, pos);
      fs.fdatasyncSync(this.fd);
      this.size = pos;
    }
    return { validBytes: pos, truncatedBytes, ...(reason === undefined ? {} : { reason }) };
  }

  /** Indexes the batch at `position` if enough bytes passed; `maxTimestamp` already includes the batch. */
  private maybeIndex(baseOffset: number, position: number, batchBytes: number): void {
    // Position 0 needs no entry: a lookup that finds none starts from the beginning.
    if (position > 0 && this.bytesSinceIndexEntry >= this.options.indexIntervalBytes) {
      this.index.append(baseOffset, position);
      this.timeIndex.maybeAppend(this.maxTimestamp, baseOffset);
      this.bytesSinceIndexEntry = 0;
    }
    this.bytesSinceIndexEntry += batchBytes;
  }

  /**
   * Appends one encoded batch (base offset already stamped) at the end of the file. The bytes reach the
   * page cache before this returns; {@link datasync} makes them durable.
   */
  append(batch: Buffer, header: Pick<BatchHeader, 'baseOffset' | 'lastOffsetDelta' | 'maxTimestamp'>): void {
    const written = fs.writeSync(this.fd, batch, 0, batch.length, this.size);
    if (written !== batch.length) throw new Error(`short write: ${written} of ${batch.length} bytes`);
    if (header.maxTimestamp > this.maxTimestamp) this.maxTimestamp = header.maxTimestamp;
    this.maybeIndex(header.baseOffset, this.size, batch.length);
    this.size += batch.length;
    this.nextOffset = header.baseOffset + header.lastOffsetDelta + 1;
    this.lastBatchOffset = header.baseOffset;
  }

  /**
   * The offset from which to scan for the first record with timestamp >= `timestamp` (time index lookup).
   */
  offsetForTimestampLowerBound(timestamp: number): number {
    return this.timeIndex.lookup(timestamp);
  }

  /**
   * Marks the segment as closed for appends: adds the final time index entry, so the index's last entry is
   * the segment's largest timestamp, and syncs both indexes, so a trusted reopen after a power loss finds
   * them whole.
   */
  seal(): void {
    if (this.lastBatchOffset < 0) return;
    this.timeIndex.maybeAppend(this.maxTimestamp, this.lastBatchOffset);
    this.index.sync();
    this.timeIndex.sync();
    this.lastBatchOffset = -1;
  }

  /**
   * Reads whole batches: starting with the batch that holds `offset` (or the first after it), adding
   * following batches while the total stays within `maxBytes` (the first is returned whatever its size,
   * so a consumer always makes progress, as Kafka's KIP-74), and stopping before any batch that starts at
   * or after `endOffset`, or once the batches hold `maxOffsets` offsets from `offset` on.
   * @returns the batches as one buffer, or null when this segment holds nothing at or after `offset`
   */
  read(offset: number, maxBytes: number, endOffset: number, maxOffsets = Infinity): Buffer | null {
    const reader = new ChunkReader(this.fd, this.size);
    let pos = this.index.lookup(offset);
    let first = -1;
    let end = -1;
    let lastRead = offset - 1;
    while (pos < this.size) {
      const off = reader.ensure(pos, BATCH_HEADER_BYTES);
      if (off < 0) break;
      const buf = reader.buffer;
      const baseOffset = buf.readInt32BE(off) * 0x1_0000_0000 + buf.readUInt32BE(off + 4);
      if (baseOffset >= endOffset) break;
      const batchBytes = LOG_OVERHEAD + buf.readInt32BE(off + 8);
      const lastOffset = baseOffset + buf.readInt32BE(off + 23);
      if (first < 0) {
        if (lastOffset >= offset) first = pos;
      } else if (pos + batchBytes - first > maxBytes || lastRead + 1 - offset >= maxOffsets) break;
      if (first >= 0) {
        end = pos + batchBytes;
        lastRead = lastOffset;
      }
      pos += batchBytes;
    }
    if (first < 0) return null;
    const out = Buffer.allocUnsafe(end - first);
    fs.readSync(this.fd, out, 0, out.length, first);
    return out;
  }

  /**
   * Visits each batch in order, from the one the offset index points at for `fromOffset` (at or before the
   * batch holding it), until `visit` returns false.
   * @param visit gets the header and the batch bytes (a view valid only during the call)
   */
  forEachBatch(fromOffset: number, visit: (header: BatchHeader, batch: Buffer) => boolean): void {
    const reader = new ChunkReader(this.fd, this.size);
    let pos = this.index.lookup(fromOffset);
    while (pos < this.size) {
      let off = reader.ensure(pos, BATCH_HEADER_BYTES);
      if (off < 0) return;
      const header = readBatchHeader(reader.buffer, off);
      const batchBytes = LOG_OVERHEAD + header.batchLength;
      off = reader.ensure(pos, batchBytes);
      if (off < 0) return;
      if (!visit(header, reader.buffer.subarray(off, off + batchBytes))) return;
      pos += batchBytes;
    }
  }

  /** Flushes written bytes to disk (fdatasync), off the event loop. */
  datasync(): Promise<void> {
    return new Promise((resolve, reject) => fs.fdatasync(this.fd, (err) => (err ? reject(err) : resolve())));
  }

  /** Flushes written bytes to disk (fdatasync), blocking. */
  datasyncNow(): void {
    fs.fdatasyncSync(this.fd);
  }

  /** Seals and closes the files. */
  close(): void {
    this.seal();
    this.index.close();
    this.timeIndex.close();
    fs.closeSync(this.fd);
  }

  /** Deletes the index files (they are rebuilt when the segment is next opened). */
  deleteIndexes(): void {
    fs.rmSync(LogSegment.indexPath(this.dir, this.baseOffset), { force: true });
    fs.rmSync(LogSegment.timeIndexPath(this.dir, this.baseOffset), { force: true });
  }

  /** Closes and deletes the segment's files. */
  delete(): void {
    this.close();
    fs.rmSync(this.logPath, { force: true });
    this.deleteIndexes();
  }
}

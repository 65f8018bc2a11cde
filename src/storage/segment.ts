/**
 * One segment of a partition's log (Kafka's LogSegment): a `.log` file of whole RecordBatch v2 batches,
 * named by the segment's base offset (20 digits), with its sparse {@link OffsetIndex} beside it.
 * Appends go to the end with positional writes; reads are `pread`s served from the page cache.
 */
import fs from 'node:fs';
import path from 'node:path';
import { BATCH_HEADER_BYTES, LOG_OVERHEAD, readBatchHeader, validateBatch } from '../protocol/record-batch.js';
import type { BatchHeader } from '../protocol/record-batch.js';
import { OffsetIndex } from './offset-index.js';
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
  private bytesSinceIndexEntry = 0;

  private constructor(
    readonly dir: string,
    readonly baseOffset: number,
    private readonly fd: number,
    private index: OffsetIndex,
    private readonly options: SegmentOptions,
  ) {
    this.size = fs.fstatSync(fd).size;
    this.nextOffset = baseOffset;
  }

  /** Path of the `.log` file. */
  get logPath(): string {
    return path.join(this.dir, `${segmentStem(this.baseOffset)}.log`);
  }

  private static indexPath(dir: string, baseOffset: number): string {
    return path.join(dir, `${segmentStem(baseOffset)}.index`);
  }

  /** Creates a new, empty segment (fails if its file exists). */
  static create(dir: string, baseOffset: number, options: SegmentOptions): LogSegment {
    const fd = fs.openSync(path.join(dir, `${segmentStem(baseOffset)}.log`), 'wx+');
    const index = OffsetIndex.create(LogSegment.indexPath(dir, baseOffset), baseOffset);
    return new LogSegment(dir, baseOffset, fd, index, options);
  }

  /**
   * Opens an existing segment.
   * @param recover validate every batch by length and CRC-32C, truncate a torn or corrupt tail and rebuild
   *   the index (done for the active segment, the only one a crash can leave torn). Otherwise the index file
   *   is loaded, and rebuilt only if it is missing or invalid.
   */
  static open(dir: string, baseOffset: number, recover: boolean, options: SegmentOptions): LogSegment {
    const logPath = path.join(dir, `${segmentStem(baseOffset)}.log`);
    const fd = fs.openSync(logPath, 'r+');
    const size = fs.fstatSync(fd).size;
    const indexPath = LogSegment.indexPath(dir, baseOffset);
    const loaded = !recover && fs.existsSync(indexPath) ? OffsetIndex.load(indexPath, baseOffset, size) : null;
    const index = loaded ?? OffsetIndex.create(indexPath, baseOffset);
    const segment = new LogSegment(dir, baseOffset, fd, index, options);
    const result = segment.scan(loaded === null, recover);
    if (result.truncatedBytes > 0) {
      options.logger.warn(
        { segment: logPath, keptBytes: result.validBytes, truncatedBytes: result.truncatedBytes,
          nextOffset: segment.nextOffset, reason: result.reason },
        'truncated a torn or corrupt tail of the log',
      );
    }
    return segment;
  }

  /**
   * Walks the batches from the start: finds `nextOffset` and `maxTimestamp`, rebuilds the index when
   * asked, and with `validate` checks each batch's CRC and cuts the file at the first bad one.
   */
  private scan(rebuildIndex: boolean, validate: boolean): RecoveryResult {
    const reader = new ChunkReader(this.fd, this.size);
    let pos = 0;
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
      if (rebuildIndex) this.maybeIndex(header.baseOffset, pos, batchBytes);
      this.nextOffset = header.baseOffset + header.lastOffsetDelta + 1;
      if (header.maxTimestamp > this.maxTimestamp) this.maxTimestamp = header.maxTimestamp;
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

  private maybeIndex(baseOffset: number, position: number, batchBytes: number): void {
    // Position 0 needs no entry: a lookup that finds none starts from the beginning.
    if (position > 0 && this.bytesSinceIndexEntry >= this.options.indexIntervalBytes) {
      this.index.append(baseOffset, position);
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
    this.maybeIndex(header.baseOffset, this.size, batch.length);
    this.size += batch.length;
    this.nextOffset = header.baseOffset + header.lastOffsetDelta + 1;
    if (header.maxTimestamp > this.maxTimestamp) this.maxTimestamp = header.maxTimestamp;
  }

  /**
   * Reads whole batches: starting with the batch that holds `offset` (or the first after it), adding
   * following batches while the total stays within `maxBytes` (the first is returned whatever its size,
   * so a consumer always makes progress, as Kafka's KIP-74), and stopping before any batch that starts at
   * or after `endOffset`.
   * @returns the batches as one buffer, or null when this segment holds nothing at or after `offset`
   */
  read(offset: number, maxBytes: number, endOffset: number): Buffer | null {
    const reader = new ChunkReader(this.fd, this.size);
    let pos = this.index.lookup(offset);
    let first = -1;
    let end = -1;
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
      } else if (pos + batchBytes - first > maxBytes) break;
      if (first >= 0) end = pos + batchBytes;
      pos += batchBytes;
    }
    if (first < 0) return null;
    const out = Buffer.allocUnsafe(end - first);
    fs.readSync(this.fd, out, 0, out.length, first);
    return out;
  }

  /**
   * Visits each batch header from the start, in order, until `visit` returns false.
   * @param visit gets the header and the batch bytes (a view valid only during the call)
   */
  forEachBatch(visit: (header: BatchHeader, batch: Buffer) => boolean): void {
    const reader = new ChunkReader(this.fd, this.size);
    let pos = 0;
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

  /** Closes the files. */
  close(): void {
    this.index.close();
    fs.closeSync(this.fd);
  }

  /** Closes and deletes the segment's files. */
  delete(): void {
    this.close();
    fs.rmSync(this.logPath, { force: true });
    fs.rmSync(LogSegment.indexPath(this.dir, this.baseOffset), { force: true });
  }
}

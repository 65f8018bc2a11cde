/**
 * Kafka RecordBatch v2 (magic 2) codec. Layout, all fixed-width fields big-endian:
 *
 * ```
 * baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic int8 | crc uint32 |
 * attributes int16 | lastOffsetDelta int32 | baseTimestamp int64 | maxTimestamp int64 |
 * producerId int64 | producerEpoch int16 | baseSequence int32 | recordCount int32 | records...
 * ```
 *
 * `batchLength` counts the bytes after itself; `crc` is CRC-32C over `[attributes, end)`, so the
 * broker can stamp `baseOffset` into an encoded batch without recomputing it. Attribute bits 0-2 name the
 * compression codec (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd: see ./compression.ts): the records section (all
 * after the 61-byte header) is then one compressed blob, the header stays as it is, and the CRC covers the
 * compressed bytes. Each record is
 * `length varint | attributes int8 | timestampDelta varlong | offsetDelta varint | keyLength varint | key |
 * valueLength varint | value | headerCount varint | (keyLength varint | key | valueLength varint | value)*`,
 * all varints zigzag-encoded and -1 meaning null.
 */
import { codecId, codecOf, compress, decompress } from './compression.js';
import type { CompressionCodec } from './compression.js';
import { crc32c } from './crc32c.js';
import { OnelogError } from './errors.js';
import type { RecordHeader, RecordInput, StoredRecord } from './types.js';

/** Size of the fixed batch header, in bytes. */
export const BATCH_HEADER_BYTES = 61;
/** Bytes before `batchLength` ends: baseOffset + batchLength. A batch occupies `LOG_OVERHEAD + batchLength`. */
export const LOG_OVERHEAD = 12;
const MAGIC = 2;
const CRC_OFFSET = 17;
const ATTRIBUTES_OFFSET = 21;
const LAST_OFFSET_DELTA_OFFSET = 23;
const RECORD_COUNT_OFFSET = 57;
const TWO_32 = 0x1_0000_0000;
/** The fewest bytes a record takes: its length, attributes, timestamp and offset deltas, key and value lengths, header count. */
const MIN_RECORD_BYTES = 7;

/** The fixed fields of a batch header. */
export interface BatchHeader {
  baseOffset: number;
  /** Bytes after the length field; the whole batch is `LOG_OVERHEAD + batchLength` bytes. */
  batchLength: number;
  partitionLeaderEpoch: number;
  magic: number;
  crc: number;
  attributes: number;
  lastOffsetDelta: number;
  baseTimestamp: number;
  maxTimestamp: number;
  producerId: number;
  producerEpoch: number;
  baseSequence: number;
  recordCount: number;
}

/** Producer fields stamped into a batch; defaults are those of a non-idempotent Java producer (-1). */
export interface BatchProducer {
  producerId: number;
  producerEpoch: number;
  baseSequence: number;
}
const NO_PRODUCER: BatchProducer = { producerId: -1, producerEpoch: -1, baseSequence: -1 };

// ---- varints -------------------------------------------------------------------------------------

/** Past this magnitude a zigzag value (twice it) is no longer a safe integer: written and read through BigInt. */
const ZIGZAG_SAFE = 2 ** 52;

function zigzag(n: number): number {
  // Works for every integer below ZIGZAG_SAFE: values past 32 bits would overflow bitwise operators.
  return n >= 0 ? n * 2 : -n * 2 - 1;
}

function unzigzag(n: number): number {
  return n % 2 === 0 ? n / 2 : -(n + 1) / 2;
}

/** Bytes an unsigned varint of `n` takes. */
function uvarintSize(n: number): number {
  let size = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    size++;
  }
  return size;
}

function varintSize(n: number): number {
  return Math.abs(n) < ZIGZAG_SAFE ? uvarintSize(zigzag(n)) : bigVarint(n).length;
}

/** The varint bytes of a safe integer whose zigzag value is not safe (a timestamp delta past 2^52 ms). */
function bigVarint(n: number): number[] {
  let z = n >= 0 ? BigInt(n) * 2n : -BigInt(n) * 2n - 1n;
  const bytes: number[] = [];
  while (z >= 0x80n) {
    bytes.push(Number(z & 0x7fn) | 0x80);
    z >>= 7n;
  }
  bytes.push(Number(z));
  return bytes;
}

function writeUvarint(buf: Buffer, pos: number, n: number): number {
  while (n >= 0x80) {
    buf[pos++] = (n % 128) | 0x80;
    n = Math.floor(n / 128);
  }
  buf[pos++] = n;
  return pos;
}

function writeVarint(buf: Buffer, pos: number, n: number): number {
  if (Math.abs(n) < ZIGZAG_SAFE) return writeUvarint(buf, pos, zigzag(n));
  for (const b of bigVarint(n)) buf[pos++] = b;
  return pos;
}

/** A reader over one buffer; `pos` advances as fields are read. */
class Reader {
  constructor(
    readonly buf: Buffer,
    public pos: number,
    readonly end: number,
  ) {}

  varint(): number {
    let result = 0;
    let scale = 1;
    const start = this.pos;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw corrupt('varint runs past the end of the batch');
      const b = this.buf[this.pos++]!;
      result += (b & 0x7f) * scale;
      if (b < 0x80) return result <= Number.MAX_SAFE_INTEGER ? unzigzag(result) : this.bigVarint(start);
      scale *= 128;
    }
    throw corrupt('varint longer than 10 bytes');
  }

  /** The varint at `start` again, through BigInt: its zigzag value is past 2^53 (a number would lose its sign bit). */
  private bigVarint(start: number): number {
    let z = 0n;
    for (let i = start, shift = 0n; i < this.pos; i++, shift += 7n) z |= BigInt(this.buf[i]! & 0x7f) << shift;
    return Number(z & 1n ? -(z + 1n) / 2n : z / 2n);
  }

  /** The `len` bytes at the position (-1: null) as a view when `keep`, else only checked and passed (null). */
  bytes(len: number, keep = true): Buffer | null {
    if (len === -1) return null;
    if (len < 0 || this.pos + len > this.end) throw corrupt(`field of ${len} bytes runs past the end of the batch`);
    const out = keep ? this.buf.subarray(this.pos, this.pos + len) : null;
    this.pos += len;
    return out;
  }
}

function corrupt(why: string): OnelogError {
  return new OnelogError('CORRUPT_MESSAGE', `record batch is corrupt: ${why}`);
}

// ---- 64-bit fields as safe numbers ----------------------------------------------------------------

function writeInt64(buf: Buffer, pos: number, n: number): void {
  const hi = Math.floor(n / TWO_32);
  buf.writeInt32BE(hi, pos);
  buf.writeUInt32BE(n - hi * TWO_32, pos + 4);
}

function readInt64(buf: Buffer, pos: number): number {
  return buf.readInt32BE(pos) * TWO_32 + buf.readUInt32BE(pos + 4);
}

// ---- encode ---------------------------------------------------------------------------------------

function recordBodySize(r: RecordInput, timestampDelta: number, offsetDelta: number): number {
  let size = 1 + varintSize(timestampDelta) + varintSize(offsetDelta);
  size += r.key === null ? 1 : varintSize(r.key.length) + r.key.length;
  size += r.value === null ? 1 : varintSize(r.value.length) + r.value.length;
  const headers = r.headers ?? [];
  size += varintSize(headers.length);
  for (const h of headers) {
    const keyBytes = Buffer.byteLength(h.key);
    size += varintSize(keyBytes) + keyBytes;
    size += h.value === null ? 1 : varintSize(h.value.length) + h.value.length;
  }
  return size;
}

/** Attribute bit: `baseTimestamp` holds the delete horizon of the batch's tombstones (KIP-534). */
export const DELETE_HORIZON_FLAG = 0x40;

/**
 * How a rewritten batch keeps its records' offsets (compaction): each record's offset delta, the batch's
 * last offset delta, and optionally the time from which its tombstones may be removed.
 */
export interface BatchLayout {
  offsetDeltas: readonly number[];
  lastOffsetDelta: number;
  /** ms since the epoch; sets {@link DELETE_HORIZON_FLAG} and stores it as `baseTimestamp`, as Kafka does. */
  deleteHorizonMs?: number;
}

/** How {@link encodeBatch} lays out and compresses a batch. */
export interface BatchOptions {
  /** Codec of the records section (attribute bits 0-2). @default 'none' */
  compression?: CompressionCodec;
  /** Offsets with gaps and a delete horizon, for compaction. @default consecutive offsets, no horizon */
  layout?: BatchLayout;
  /** Allocates an uncompressed batch's buffer, given its size in bytes (the client's buffer pool). @default `Buffer.allocUnsafe` */
  alloc?: (bytes: number) => Buffer;
}

/**
 * Encodes records into one RecordBatch v2, its records section compressed with `options.compression`.
 * @param records at least one record; a record without `timestamp` gets `defaultTimestamp`
 * @param baseOffset offset of the first record (the broker restamps it with {@link setBaseOffset})
 * @param defaultTimestamp ms since the epoch, used for records without a timestamp
 * @param producer producer id, epoch and base sequence; default -1 for each (no idempotence)
 * @param options compression codec (default none) and offset layout (default consecutive offsets)
 * @returns the batch bytes, CRC included
 * @throws OnelogError `INVALID_RECORD` if `records` is empty, `UNSUPPORTED_COMPRESSION` if the codec cannot be
 *   loaded on this platform
 */
export function encodeBatch(
  records: readonly RecordInput[],
  baseOffset: number,
  defaultTimestamp: number,
  producer: BatchProducer = NO_PRODUCER,
  options: BatchOptions = {},
): Buffer {
  if (records.length === 0) throw new OnelogError('INVALID_RECORD', 'a record batch needs at least one record');
  const { layout, compression = 'none', alloc = Buffer.allocUnsafe } = options;
  let baseTimestamp = Infinity;
  let maxTimestamp = -Infinity;
  for (const r of records) {
    const ts = r.timestamp ?? defaultTimestamp;
    if (ts < baseTimestamp) baseTimestamp = ts;
    if (ts > maxTimestamp) maxTimestamp = ts;
  }
  if (layout?.deleteHorizonMs !== undefined) baseTimestamp = layout.deleteHorizonMs;
  const offsetDelta = (i: number) => layout?.offsetDeltas[i] ?? i;
  const bodySizes = new Array<number>(records.length);
  let total = BATCH_HEADER_BYTES;
  for (let i = 0; i < records.length; i++) {
    const r = records[i]!;
    const body = recordBodySize(r, (r.timestamp ?? defaultTimestamp) - baseTimestamp, offsetDelta(i));
    bodySizes[i] = body;
    total += varintSize(body) + body;
  }
  const buf = compression === 'none' ? alloc(total) : Buffer.allocUnsafe(total);
  // the codec, CreateTime, not transactional, not control; the delete horizon flag when given
  const horizonFlag = layout?.deleteHorizonMs === undefined ? 0 : DELETE_HORIZON_FLAG;
  writeBatchHeader(buf, {
    baseOffset, attributes: codecId(compression) | horizonFlag, lastOffsetDelta: layout?.lastOffsetDelta ?? records.length - 1,
    baseTimestamp, maxTimestamp, producer, recordCount: records.length,
  });
  let pos = BATCH_HEADER_BYTES;
  for (let i = 0; i < records.length; i++) {
    const r = records[i]!;
    pos = writeVarint(buf, pos, bodySizes[i]!);
    buf[pos++] = 0; // record attributes: unused
    pos = writeVarint(buf, pos, (r.timestamp ?? defaultTimestamp) - baseTimestamp);
    pos = writeVarint(buf, pos, offsetDelta(i));
    pos = writeBytes(buf, pos, r.key);
    pos = writeBytes(buf, pos, r.value);
    const headers = r.headers ?? [];
    pos = writeVarint(buf, pos, headers.length);
    for (const h of headers) {
      const keyBytes = Buffer.byteLength(h.key);
      pos = writeVarint(buf, pos, keyBytes);
      pos += buf.write(h.key, pos, 'utf8');
      pos = writeBytes(buf, pos, h.value);
    }
  }
  const out = compression === 'none' ? buf : withCompressedRecords(buf, compression);
  sealBatch(out);
  return out;
}

/** The bytes of a value: -1 for none. */
export function valueLength(value: string | ValueWriter | null): number {
  return value === null ? -1 : typeof value === 'string' ? Buffer.byteLength(value, 'utf8') : value.byteLength;
}

/** Writes the fixed header of a batch (all but `batchLength` and `crc`, which {@link sealBatch} writes). */
function writeBatchHeader(buf: Buffer, h: {
  baseOffset: number; attributes: number; lastOffsetDelta: number; baseTimestamp: number; maxTimestamp: number;
  producer: BatchProducer; recordCount: number;
}): void {
  writeInt64(buf, 0, h.baseOffset);
  buf.writeInt32BE(0, 12); // partitionLeaderEpoch: one writer per partition on the embedded broker
  buf.writeInt8(MAGIC, 16);
  buf.writeInt16BE(h.attributes, ATTRIBUTES_OFFSET);
  buf.writeInt32BE(h.lastOffsetDelta, 23);
  writeInt64(buf, 27, h.baseTimestamp);
  writeInt64(buf, 35, h.maxTimestamp);
  writeInt64(buf, 43, h.producer.producerId);
  buf.writeInt16BE(h.producer.producerEpoch, 51);
  buf.writeInt32BE(h.producer.baseSequence, 53);
  buf.writeInt32BE(h.recordCount, 57);
}

/** Writes `batchLength` (the batch is the whole of `buf`) and the CRC-32C over `[attributes, end)`. */
function sealBatch(buf: Buffer): void {
  buf.writeInt32BE(buf.length - LOG_OVERHEAD, 8);
  buf.writeUInt32BE(crc32c(buf, ATTRIBUTES_OFFSET, buf.length), CRC_OFFSET);
}

/** A value {@link RecordBatchBuilder} writes straight into its batch: its length in bytes, then its bytes (no string of it is made). */
export interface ValueWriter {
  readonly byteLength: number;
  /** Writes exactly {@link byteLength} bytes at `pos`; answers where they end. */
  writeTo(buf: Buffer, pos: number): number;
}

/**
 * Builds one uncompressed RecordBatch v2 a record at a time, writing each record into the batch's buffer as it comes
 * (no record objects kept): what `onelog produce` encodes its input rows with. Values are text, written as UTF-8;
 * records have no headers. Offsets are consecutive from 0 (the broker stamps the base offset); `baseTimestamp` is
 * the first record's timestamp, as Kafka's producer writes it (later records' deltas may be negative).
 */
export class RecordBatchBuilder {
  private buf: Buffer;
  private pos = BATCH_HEADER_BYTES;
  private count = 0;
  private baseTimestamp = 0;
  private maxTimestamp = 0;

  /** @param capacityBytes the buffer's first size; it doubles when a record does not fit. @default 65536 */
  constructor(private readonly capacityBytes = 64 * 1024) {
    this.buf = Buffer.allocUnsafe(capacityBytes);
  }

  /** Records added since the last {@link finish}. */
  get recordCount(): number {
    return this.count;
  }

  /** Bytes the batch takes so far, header included. */
  get sizeBytes(): number {
    return this.pos;
  }

  /**
   * Appends a record.
   * @param key the key's bytes, or null
   * @param value the value as text (UTF-8) or as a {@link ValueWriter}, or null
   * @param timestamp ms since the epoch
   * @param valueBytes the value's length in bytes when the caller has it (`Buffer.byteLength` of a long concatenated
   *   string flattens it: done once, not twice)
   */
  add(key: Uint8Array | null, value: string | ValueWriter | null, timestamp: number, valueBytes = valueLength(value)): void {
    if (this.count === 0) {
      this.baseTimestamp = timestamp;
      this.maxTimestamp = timestamp;
    } else if (timestamp > this.maxTimestamp) {
      this.maxTimestamp = timestamp;
    }
    const timestampDelta = timestamp - this.baseTimestamp;
    let body = 1 + varintSize(timestampDelta) + varintSize(this.count) + 1;
    body += key === null ? 1 : varintSize(key.length) + key.length;
    body += value === null ? 1 : varintSize(valueBytes) + valueBytes;
    this.reserve(varintSize(body) + body);
    const buf = this.buf;
    let pos = writeVarint(buf, this.pos, body);
    buf[pos++] = 0; // record attributes: unused
    pos = writeVarint(buf, pos, timestampDelta);
    pos = writeVarint(buf, pos, this.count);
    if (key === null) {
      pos = writeVarint(buf, pos, -1);
    } else {
      pos = writeVarint(buf, pos, key.length);
      for (let i = 0; i < key.length; i++) buf[pos++] = key[i]!;
    }
    pos = writeVarint(buf, pos, valueBytes);
    if (typeof value === 'string') pos += buf.write(value, pos, 'utf8');
    else if (value !== null) pos = value.writeTo(buf, pos);
    buf[pos++] = 0; // no headers
    this.pos = pos;
    this.count++;
  }

  /**
   * The batch of the records added since the last call, CRC included; the builder starts a new one.
   * @throws OnelogError `INVALID_RECORD` when no record was added
   */
  finish(producer: BatchProducer = NO_PRODUCER): Buffer {
    if (this.count === 0) throw new OnelogError('INVALID_RECORD', 'a record batch needs at least one record');
    const batch = this.buf.subarray(0, this.pos);
    writeBatchHeader(batch, {
      baseOffset: 0, attributes: 0, lastOffsetDelta: this.count - 1, baseTimestamp: this.baseTimestamp, maxTimestamp: this.maxTimestamp,
      producer, recordCount: this.count,
    });
    sealBatch(batch);
    this.buf = Buffer.allocUnsafe(Math.max(this.capacityBytes, this.pos));
    this.pos = BATCH_HEADER_BYTES;
    this.count = 0;
    return batch;
  }

  /** Makes room for `bytes` more. */
  private reserve(bytes: number): void {
    if (this.pos + bytes <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + bytes));
    this.buf.copy(grown, 0, 0, this.pos);
    this.buf = grown;
  }
}

/** The header of `batch` followed by its records section compressed with `codec`. */
function withCompressedRecords(batch: Buffer, codec: CompressionCodec): Buffer {
  const compressed = compress(codec, batch.subarray(BATCH_HEADER_BYTES));
  const out = Buffer.allocUnsafe(BATCH_HEADER_BYTES + compressed.length);
  batch.copy(out, 0, 0, BATCH_HEADER_BYTES);
  compressed.copy(out, BATCH_HEADER_BYTES);
  return out;
}

function writeBytes(buf: Buffer, pos: number, bytes: Buffer | null): number {
  if (bytes === null) return writeVarint(buf, pos, -1);
  pos = writeVarint(buf, pos, bytes.length);
  bytes.copy(buf, pos);
  return pos + bytes.length;
}

/** Stamps a new base offset into an encoded batch. The CRC does not cover it, so it stays valid. */
export function setBaseOffset(batch: Buffer, baseOffset: number): void {
  writeInt64(batch, 0, baseOffset);
}

/**
 * Stamps `maxTimestamp` (ms) into an encoded batch and recomputes its CRC-32C, which covers it: what Kafka's
 * LogValidator does to a produced batch whose max timestamp disagrees with its records'.
 */
export function setMaxTimestamp(batch: Buffer, maxTimestamp: number): void {
  writeInt64(batch, 35, maxTimestamp);
  batch.writeUInt32BE(crc32c(batch, ATTRIBUTES_OFFSET, LOG_OVERHEAD + batch.readInt32BE(8)), CRC_OFFSET);
}

// ---- decode ---------------------------------------------------------------------------------------

/** The base offset of the batch at `pos` (its first 8 bytes). */
export function readBaseOffset(buf: Buffer, pos = 0): number {
  return readInt64(buf, pos);
}

/** The bytes the batch at `pos` takes, its header included: {@link LOG_OVERHEAD} plus its `batchLength`. */
export function batchSize(buf: Buffer, pos = 0): number {
  return LOG_OVERHEAD + buf.readInt32BE(pos + 8);
}

/** The offset of the last record of the batch at `pos` (its base offset plus `lastOffsetDelta`), kept by compaction. */
export function readLastOffset(buf: Buffer, pos = 0): number {
  return readInt64(buf, pos) + buf.readInt32BE(pos + LAST_OFFSET_DELTA_OFFSET);
}

/** How many records the batch at `pos` holds now (`recordCount`: fewer than its offsets span once compacted). */
export function readRecordCount(buf: Buffer, pos = 0): number {
  return buf.readInt32BE(pos + RECORD_COUNT_OFFSET);
}

/**
 * Reads the fixed header of the batch starting at `pos`.
 * @throws OnelogError `CORRUPT_MESSAGE` if fewer than {@link BATCH_HEADER_BYTES} bytes remain
 */
export function readBatchHeader(buf: Buffer, pos = 0): BatchHeader {
  if (buf.length - pos < BATCH_HEADER_BYTES) throw corrupt(`header needs ${BATCH_HEADER_BYTES} bytes`);
  return {
    baseOffset: readInt64(buf, pos),
    batchLength: buf.readInt32BE(pos + 8),
    partitionLeaderEpoch: buf.readInt32BE(pos + 12),
    magic: buf.readInt8(pos + 16),
    crc: buf.readUInt32BE(pos + CRC_OFFSET),
    attributes: buf.readInt16BE(pos + ATTRIBUTES_OFFSET),
    lastOffsetDelta: buf.readInt32BE(pos + LAST_OFFSET_DELTA_OFFSET),
    baseTimestamp: readInt64(buf, pos + 27),
    maxTimestamp: readInt64(buf, pos + 35),
    producerId: readInt64(buf, pos + 43),
    producerEpoch: buf.readInt16BE(pos + 51),
    baseSequence: buf.readInt32BE(pos + 53),
    recordCount: buf.readInt32BE(pos + RECORD_COUNT_OFFSET),
  };
}

/**
 * Checks the batch at `pos` of `buf` whole: length within `buf`, magic 2, CRC-32C matches.
 * @returns the batch size in bytes (`LOG_OVERHEAD + batchLength`), or a reason string if it is torn or corrupt
 */
export function validateBatch(buf: Buffer, pos = 0): number | string {
  const remaining = buf.length - pos;
  if (remaining < BATCH_HEADER_BYTES) return `only ${remaining} bytes left, a batch header needs ${BATCH_HEADER_BYTES}`;
  const size = LOG_OVERHEAD + buf.readInt32BE(pos + 8);
  if (size < BATCH_HEADER_BYTES) return `batch length ${size} is below the header size`;
  if (size > remaining) return `batch of ${size} bytes is cut off after ${remaining}`;
  const magic = buf.readInt8(pos + 16);
  if (magic !== MAGIC) return `magic ${magic}, expected ${MAGIC}`;
  const stored = buf.readUInt32BE(pos + CRC_OFFSET);
  const actual = crc32c(buf, pos + ATTRIBUTES_OFFSET, pos + size);
  if (stored !== actual) return `CRC-32C ${actual.toString(16)} does not match stored ${stored.toString(16)}`;
  return size;
}

/** The compression codec of a batch, from its attributes (bits 0-2). @throws OnelogError `UNSUPPORTED_COMPRESSION` for 5-7 */
export function batchCompression(header: Pick<BatchHeader, 'attributes'>): CompressionCodec {
  return codecOf(header.attributes);
}

/**
 * Decodes every record of the batch at `pos`, decompressing its records section if it is compressed. Key,
 * value and header values are views into `buf` (no copy) for an uncompressed batch, or into a fresh buffer
 * for a compressed one: copy them if `buf` is reused. The fields of each record must add up exactly to its
 * length, and the records to the records section: `recordCount` of them, nothing after.
 * @param maxSectionBytes most bytes a compressed records section may decompress to @default unbounded
 * @param visit told of each record as it is read (see {@link scanRecords})
 * @throws OnelogError `CORRUPT_MESSAGE` if a record runs past the batch, its fields do not add up to its length, the
 *   records do not fill the section exactly or the compressed section does not decompress, `RECORD_TOO_LARGE` if it
 *   decompresses to more than `maxSectionBytes`, `UNSUPPORTED_COMPRESSION` for codec values 5-7 (or a codec whose
 *   package cannot be loaded on this platform)
 */
export function decodeRecords(buf: Buffer, pos = 0, maxSectionBytes = Infinity, visit?: RecordVisitor): StoredRecord[] {
  const out: StoredRecord[] = [];
  walkRecords(buf, pos, maxSectionBytes, out, visit);
  return out;
}

/** Told each record's index, timestamp (ms), offset and length (its `length` field: the bytes after it) by {@link scanRecords}. */
export type RecordVisitor = (index: number, timestamp: number, offset: number, length: number) => void;

/**
 * Reads every record of the batch at `pos` as {@link decodeRecords} does, checking all it checks, without building
 * them (nothing allocated per record): for a check that needs only each record's timestamp, offset and length.
 * @param maxSectionBytes as {@link decodeRecords}
 * @throws OnelogError as {@link decodeRecords}
 */
export function scanRecords(buf: Buffer, pos: number, visit: RecordVisitor, maxSectionBytes = Infinity): void {
  walkRecords(buf, pos, maxSectionBytes, undefined, visit);
}

/** Reads every record of the batch at `pos`, into `out` when given, telling `visit` of each. */
function walkRecords(buf: Buffer, pos: number, maxSectionBytes: number, out: StoredRecord[] | undefined, visit?: RecordVisitor): void {
  const { h, codec, reader } = openRecords(buf, pos, maxSectionBytes);
  // Every record takes at least MIN_RECORD_BYTES: a count above what the section can hold is refused before any is read.
  if (h.recordCount < 0 || h.recordCount * MIN_RECORD_BYTES > reader.end - reader.pos) {
    throw corrupt(`record count ${h.recordCount} does not fit the ${reader.end - reader.pos} bytes of the ${codec === 'none' ? '' : `${codec} `}records section`);
  }
  const keep = out !== undefined;
  for (let i = 0; i < h.recordCount; i++) {
    const r = readRecord(reader, h, i, keep);
    if (keep) out.push(r!);
    visit?.(i, lastRead.timestamp, lastRead.offset, lastRead.length);
  }
  if (reader.pos !== reader.end) {
    throw corrupt(`${reader.end - reader.pos} bytes left after the last of ${h.recordCount} records${codec === 'none' ? '' : ` in the ${codec} section`}`);
  }
}

/**
 * {@link decodeRecords} for a reader of several batches in a row: a batch that cannot be decoded ends the answer
 * before it when `readBefore` records precede it in the answer (undefined: the reader answers those, and a read that
 * starts at the bad batch gets its error), so a corrupt batch never withholds the readable records before it.
 * @throws OnelogError as {@link decodeRecords} when nothing precedes the batch; `context.offset` is the batch's
 *   first offset
 */
export function decodeRecordsOrEnd(buf: Buffer, pos: number, readBefore: number): StoredRecord[] | undefined {
  try {
    return decodeRecords(buf, pos);
  } catch (err) {
    if (!(err instanceof OnelogError)) throw err;
    if (readBefore > 0) return undefined;
    const offset = readInt64(buf, pos);
    throw new OnelogError(err.code, `${err.message} (the batch at offset ${offset})`, { ...err.context, offset });
  }
}

/**
 * The record with offset `offset` of the batch at `pos`, or undefined when the batch has none (compaction
 * removed it): the records before it are skipped by their lengths, not decoded. Views as {@link decodeRecords}.
 * @throws OnelogError as {@link decodeRecords}
 */
export function decodeRecordAt(buf: Buffer, pos: number, offset: number): StoredRecord | undefined {
  const { h, reader } = openRecords(buf, pos);
  for (let i = 0; i < h.recordCount; i++) {
    const start = reader.pos;
    const length = reader.varint();
    const recordEnd = reader.pos + length;
    reader.pos++; // attributes
    reader.varint(); // timestamp delta
    if (h.baseOffset + reader.varint() === offset) {
      reader.pos = start;
      return readRecord(reader, h, i);
    }
    reader.pos = recordEnd;
  }
  return undefined;
}

/** The header of the batch at `pos` and a reader over its records section (decompressed if needed). */
function openRecords(buf: Buffer, pos: number, maxSectionBytes = Infinity): { h: BatchHeader; codec: CompressionCodec; reader: Reader } {
  const h = readBatchHeader(buf, pos);
  const codec = batchCompression(h);
  const end = pos + LOG_OVERHEAD + h.batchLength;
  const reader = codec === 'none'
    ? new Reader(buf, pos + BATCH_HEADER_BYTES, end)
    : readerOver(decompress(codec, buf.subarray(pos + BATCH_HEADER_BYTES, end), maxSectionBytes));
  return { h, codec, reader };
}

/** The timestamp, offset and length of the record {@link readRecord} read last: one object, so a scan allocates nothing. */
const lastRead = { timestamp: 0, offset: 0, length: 0 };

/**
 * Reads record `i` of a batch at the reader's position: built when `keep`, else only checked (undefined), its
 * timestamp, offset and length left in {@link lastRead} either way.
 * @throws OnelogError `CORRUPT_MESSAGE`
 */
function readRecord(reader: Reader, h: Pick<BatchHeader, 'baseOffset' | 'baseTimestamp'>, i: number, keep = true): StoredRecord | undefined {
  const length = reader.varint();
  const recordEnd = reader.pos + length;
  if (length < MIN_RECORD_BYTES - 1 || recordEnd > reader.end) {
    throw corrupt(`record ${i} says ${length} bytes, ${reader.end - reader.pos} are left in the batch`);
  }
  reader.pos++; // attributes
  const timestamp = h.baseTimestamp + reader.varint();
  const offset = h.baseOffset + reader.varint();
  const key = reader.bytes(reader.varint(), keep);
  const value = reader.bytes(reader.varint(), keep);
  const headerCount = reader.varint();
  if (headerCount < 0) throw corrupt(`record ${i} has ${headerCount} headers`);
  const headers: RecordHeader[] | undefined = keep ? [] : undefined;
  for (let j = 0; j < headerCount; j++) {
    const keyLength = reader.varint();
    if (keyLength === -1) throw corrupt('header key is null');
    const hk = reader.bytes(keyLength, keep);
    const hv = reader.bytes(reader.varint(), keep);
    headers?.push({ key: hk!.toString('utf8'), value: hv });
  }
  if (reader.pos !== recordEnd) throw corrupt(`record ${i} length ${length} does not match its fields`);
  lastRead.timestamp = timestamp;
  lastRead.offset = offset;
  lastRead.length = length;
  return headers === undefined ? undefined : { offset, timestamp, key, value, headers };
}

/**
 * Records cut from a stored batch as they are stored (whole records, uncompressed, their offset and timestamp deltas
 * unchanged) with the two fields of the batch's header those deltas are relative to: a share group hands out the
 * records it acquired this way, neither decoding nor encoding them (as Kafka's ShareFetch answers stored batches).
 */
export interface RecordSection {
  /** The stored batch's base offset: each record's offset is this plus its offset delta. */
  baseOffset: number;
  /** The stored batch's base timestamp, ms: each record's timestamp is this plus its timestamp delta. */
  baseTimestamp: number;
  /** Records in `bytes`. */
  count: number;
  /** The records, back to back. */
  bytes: Buffer;
}

/**
 * Where each record of the batch at `pos` lies, without building it (nothing allocated per record): told its offset,
 * its first and past-last byte in the returned `records` (the batch's records section, decompressed when the batch is
 * compressed) and a 32-bit FNV-1a hash of its key (null without one: equal keys, equal hashes).
 * @throws OnelogError as {@link decodeRecords}
 */
export function indexRecords(buf: Buffer, pos: number, visit: (offset: number, start: number, end: number, keyHash: number | null) => void):
  { baseOffset: number; baseTimestamp: number; records: Buffer } {
  const { h, reader } = openRecords(buf, pos);
  const records = reader.buf;
  for (let i = 0; i < h.recordCount; i++) {
    const start = reader.pos;
    const length = reader.varint();
    const end = reader.pos + length;
    if (length < MIN_RECORD_BYTES - 1 || end > reader.end) throw corrupt(`record ${i} says ${length} bytes, ${reader.end - reader.pos} are left in the batch`);
    reader.pos++; // attributes
    reader.varint(); // timestamp delta
    const offset = h.baseOffset + reader.varint();
    const keyLength = reader.varint();
    let hash: number | null = null;
    if (keyLength !== -1) {
      if (keyLength < 0 || reader.pos + keyLength > end) throw corrupt(`record ${i}'s key of ${keyLength} bytes runs past the record`);
      hash = 0x811c9dc5;
      for (let k = reader.pos; k < reader.pos + keyLength; k++) hash = Math.imul(hash ^ records[k]!, 0x01000193);
      hash >>>= 0;
    }
    reader.pos = end;
    visit(offset, start, end, hash);
  }
  if (reader.pos !== reader.end) throw corrupt(`${reader.end - reader.pos} bytes left after the last of ${h.recordCount} records`);
  return { baseOffset: h.baseOffset, baseTimestamp: h.baseTimestamp, records };
}

/**
 * The records of a {@link RecordSection}.
 * @throws OnelogError `CORRUPT_MESSAGE` for bytes that are not `count` whole records
 */
export function decodeSection(section: RecordSection): StoredRecord[] {
  const reader = readerOver(section.bytes);
  const out: StoredRecord[] = [];
  for (let i = 0; i < section.count; i++) out.push(readRecord(reader, section, i)!);
  if (reader.pos !== reader.end) throw corrupt(`${reader.end - reader.pos} bytes left after the last of ${section.count} records of a section`);
  return out;
}

/**
 * A {@link RecordSection} as a RecordBatch v2 of its own (uncompressed, CreateTime, no producer), its records' bytes
 * copied unchanged under a header that takes the section's base offset and base timestamp (so their deltas hold),
 * and the offset of each record in order: how a Kafka ShareFetch answer carries acquired records (the client keeps
 * those its acquired ranges name, as for Kafka's stored batches).
 * @throws OnelogError `CORRUPT_MESSAGE` for bytes that are not `count` whole records
 */
export function sectionBatch(section: RecordSection): { batch: Buffer; offsets: number[] } {
  const reader = readerOver(section.bytes);
  const offsets: number[] = [];
  let maxTimestampDelta = 0;
  for (let i = 0; i < section.count; i++) {
    const length = reader.varint();
    const end = reader.pos + length;
    if (length < MIN_RECORD_BYTES - 1 || end > reader.end) throw corrupt(`record ${i} of a section says ${length} bytes, ${reader.end - reader.pos} are left`);
    reader.pos++; // attributes
    maxTimestampDelta = Math.max(maxTimestampDelta, reader.varint());
    offsets.push(section.baseOffset + reader.varint());
    reader.pos = end;
  }
  if (reader.pos !== reader.end || offsets.length === 0) throw corrupt(`a section of ${section.count} records holds ${section.bytes.length} bytes`);
  const batch = Buffer.allocUnsafe(BATCH_HEADER_BYTES + section.bytes.length);
  writeBatchHeader(batch, {
    baseOffset: section.baseOffset, attributes: 0, lastOffsetDelta: offsets[offsets.length - 1]! - section.baseOffset,
    baseTimestamp: section.baseTimestamp, maxTimestamp: section.baseTimestamp + maxTimestampDelta, producer: NO_PRODUCER, recordCount: section.count,
  });
  section.bytes.copy(batch, BATCH_HEADER_BYTES);
  sealBatch(batch);
  return { batch, offsets };
}

function readerOver(records: Buffer): Reader {
  return new Reader(records, 0, records.length);
}

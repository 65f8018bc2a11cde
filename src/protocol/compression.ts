/**
 * Record batch compression codecs, as Kafka's RecordBatch v2 numbers them in attribute bits 0-2:
 * 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd (5-7 unused). Synchronous, since batches are encoded and decoded on
 * synchronous paths (produce, read, compaction).
 *
 * - gzip: `node:zlib` (level 6, as Java's `GZIPOutputStream`); multi-member input is read whole.
 * - snappy: the `snappy` package (napi-rs). Written with xerial/snappy-java framing, as the Java client does:
 *   the 16-byte header `0x82 SNAPPY 0x00 | version int32 = 1 | compatible version int32 = 1`, then blocks of
 *   `length int32 | raw snappy`, each of up to 32 KiB of input. Read either that framing or raw snappy (what
 *   sarama and librdkafka write by default), as snappy-java's `SnappyInputStream` does.
 * - lz4: the `lz4-napi` package (napi-rs over lz4_flex), LZ4 *frame* format, as Kafka's
 *   `KafkaLZ4BlockOutputStream` writes for magic 2 (independent blocks).
 * - zstd: the `@toondepauw/node-zstd` package (napi-rs over libzstd), one standard zstd frame at level 3
 *   (Kafka's default).
 *
 * The native packages are loaded on first use of their codec, so importing this module loads nothing native.
 */
import { createRequire } from 'node:module';
import zlib from 'node:zlib';
import type * as Lz4Module from 'lz4-napi';
import type * as SnappyModule from 'snappy';
import type * as ZstdModule from '@toondepauw/node-zstd';
import { OnelogError } from './errors.js';

/** A batch compression codec. */
export type CompressionCodec = 'none' | 'gzip' | 'snappy' | 'lz4' | 'zstd';
/** Codecs by their attribute value: `COMPRESSION_CODECS[attributes & 0x07]`. */
export const COMPRESSION_CODECS: readonly CompressionCodec[] = ['none', 'gzip', 'snappy', 'lz4', 'zstd'];
/** Mask of the codec in a batch's attributes. */
export const COMPRESSION_CODEC_MASK = 0x07;

/** The attribute value (bits 0-2) of `codec`. */
export function codecId(codec: CompressionCodec): number {
  const id = COMPRESSION_CODECS.indexOf(codec);
  if (id < 0) throw new OnelogError('UNSUPPORTED_COMPRESSION', `unknown compression codec ${JSON.stringify(codec)}`);
  return id;
}

/**
 * The codec a batch's attributes name.
 * @throws OnelogError `UNSUPPORTED_COMPRESSION` for the unused values 5-7
 */
export function codecOf(attributes: number): CompressionCodec {
  const id = attributes & COMPRESSION_CODEC_MASK;
  const codec = COMPRESSION_CODECS[id];
  if (codec === undefined) throw new OnelogError('UNSUPPORTED_COMPRESSION', `compression codec ${id} is not a known codec`, { codec: id });
  return codec;
}

// ---- lazily loaded native packages ----------------------------------------------------------------

const require = createRequire(import.meta.url);

function load<T>(codec: CompressionCodec, pkg: string): T {
  try {
    return require(pkg) as T;
  } catch (err) {
    throw new OnelogError(
      'UNSUPPORTED_COMPRESSION',
      `${codec} needs the npm package ${pkg}, which failed to load on ${process.platform}-${process.arch}: ${(err as Error).message}`,
      { codec },
    );
  }
}

let snappy: typeof SnappyModule | undefined;
let lz4: typeof Lz4Module | undefined;
let zstd: { encoder: ZstdModule.Encoder; decoder: ZstdModule.Decoder } | undefined;

const snappyLib = () => (snappy ??= load<typeof SnappyModule>('snappy', 'snappy'));
const lz4Lib = () => (lz4 ??= load<typeof Lz4Module>('lz4', 'lz4-napi'));
const zstdLib = () => {
  if (zstd === undefined) {
    const m = load<typeof ZstdModule>('zstd', '@toondepauw/node-zstd');
    zstd = { encoder: new m.Encoder(ZSTD_LEVEL), decoder: new m.Decoder() };
  }
  return zstd;
};

/** Kafka's default zstd level (compression.zstd.level). */
const ZSTD_LEVEL = 3;
/** Java's `Deflater.DEFAULT_COMPRESSION`, and zlib's. */
const GZIP_LEVEL = 6;

// ---- xerial (snappy-java) framing ---------------------------------------------------------------

const XERIAL_MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]); // 0x82 'SNAPPY' 0x00
const XERIAL_HEADER_BYTES = 16;
/** snappy-java's `SnappyOutputStream` default block size (Kafka uses it), bytes of input per block. */
const XERIAL_BLOCK_BYTES = 32 * 1024;

function isXerial(data: Buffer): boolean {
  return data.length >= XERIAL_HEADER_BYTES && data.subarray(0, XERIAL_MAGIC.length).equals(XERIAL_MAGIC);
}

function xerialEncode(data: Buffer): Buffer {
  const lib = snappyLib();
  const header = Buffer.alloc(XERIAL_HEADER_BYTES);
  XERIAL_MAGIC.copy(header, 0);
  header.writeInt32BE(1, 8); // version
  header.writeInt32BE(1, 12); // minimum compatible version
  const parts: Buffer[] = [header];
  for (let pos = 0; pos < data.length; pos += XERIAL_BLOCK_BYTES) {
    const block = lib.compressSync(data.subarray(pos, pos + XERIAL_BLOCK_BYTES));
    const length = Buffer.allocUnsafe(4);
    length.writeInt32BE(block.length, 0);
    parts.push(length, block);
  }
  return Buffer.concat(parts);
}

function snappyUncompress(data: Buffer): Buffer {
  return snappyLib().uncompressSync(data, { asBuffer: true }) as Buffer;
}

function xerialDecode(data: Buffer): Buffer {
  const parts: Buffer[] = [];
  let pos = XERIAL_HEADER_BYTES;
  while (pos < data.length) {
    if (pos + 4 > data.length) throw new Error(`xerial block length cut off at byte ${pos}`);
    const length = data.readInt32BE(pos);
    pos += 4;
    if (length < 0 || pos + length > data.length) throw new Error(`xerial block of ${length} bytes runs past the end at byte ${pos}`);
    parts.push(snappyUncompress(data.subarray(pos, pos + length)));
    pos += length;
  }
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
}

// ---- compress / decompress --------------------------------------------------------------------------

/**
 * Compresses `data` with `codec` (`none` returns it as is).
 * @throws OnelogError `UNSUPPORTED_COMPRESSION` if the codec's package cannot be loaded on this platform
 */
export function compress(codec: CompressionCodec, data: Buffer): Buffer {
  switch (codec) {
    case 'none':
      return data;
    case 'gzip':
      return zlib.gzipSync(data, { level: GZIP_LEVEL });
    case 'snappy':
      return xerialEncode(data);
    case 'lz4':
      return lz4Lib().compressFrameSync(data);
    case 'zstd':
      return zstdLib().encoder.encodeSync(data);
    default:
      throw new OnelogError('UNSUPPORTED_COMPRESSION', `unknown compression codec ${JSON.stringify(codec)}`);
  }
}

/**
 * Decompresses `data` written with `codec` (`none` returns it as is), to at most `maxBytes` bytes: gzip stops
 * there, snappy and a zstd or lz4 frame that declares its size are refused before any is decompressed; a zstd or
 * lz4 frame that does not is measured once decompressed (lz4 grows at most 255-fold).
 * @param maxBytes largest output accepted, bytes @default unbounded
 * @throws OnelogError `CORRUPT_MESSAGE` if `data` is not valid for the codec, `RECORD_TOO_LARGE` if it decompresses
 *   to more than `maxBytes`, `UNSUPPORTED_COMPRESSION` if the codec's package cannot be loaded on this platform
 */
export function decompress(codec: CompressionCodec, data: Buffer, maxBytes = Infinity): Buffer {
  if (codec === 'none') return data;
  const bounded = Number.isFinite(maxBytes);
  let decode: (d: Buffer) => Buffer;
  switch (codec) {
    case 'gzip':
      decode = (d) => zlib.gunzipSync(d, bounded ? { maxOutputLength: Math.max(1, maxBytes) } : {});
      break;
    case 'snappy':
      decode = (d) => (isXerial(d) ? xerialDecode(d) : snappyUncompress(d));
      break;
    case 'lz4': {
      const lib = lz4Lib();
      decode = (d) => lib.decompressFrameSync(d);
      break;
    }
    case 'zstd': {
      const lib = zstdLib();
      decode = (d) => lib.decoder.decodeSync(d);
      break;
    }
    default:
      throw new OnelogError('UNSUPPORTED_COMPRESSION', `unknown compression codec ${JSON.stringify(codec)}`);
  }
  const tooLarge = (bytes: number | string) => new OnelogError('RECORD_TOO_LARGE',
    `the batch's ${codec} records decompress to ${bytes} bytes, above the limit of ${maxBytes} bytes`, { codec, maxBytes });
  const declared = bounded ? declaredBytes(codec, data) : undefined;
  if (declared !== undefined && declared > maxBytes) throw tooLarge(declared);
  let out: Buffer;
  try {
    out = decode(data);
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge(`more than ${maxBytes}`);
    throw new OnelogError('CORRUPT_MESSAGE', `record batch is corrupt: ${codec} data does not decompress: ${(err as Error).message}`, {
      codec,
    });
  }
  if (out.length > maxBytes) throw tooLarge(out.length);
  return out;
}

/**
 * The size `data` says it decompresses to, where its format says it before the data: snappy's length preamble (of
 * each xerial block, summed), the content size of a zstd or lz4 frame's header (the first frame's) when it has one.
 */
function declaredBytes(codec: CompressionCodec, data: Buffer): number | undefined {
  switch (codec) {
    case 'snappy':
      return isXerial(data) ? xerialDeclaredBytes(data) : uvarintAt(data, 0);
    case 'zstd':
      return zstdContentSize(data);
    case 'lz4':
      // LZ4 frame: magic 0x184D2204, FLG (bit 3: content size present), BD, then the content size (uint64 LE).
      return data.length >= 14 && data.readUInt32LE(0) === 0x184d2204 && (data[4]! & 0x08) !== 0 ? Number(data.readBigUInt64LE(6)) : undefined;
    default:
      return undefined;
  }
}

/** An unsigned varint (snappy's length preamble) at `pos`, or undefined when cut off. */
function uvarintAt(data: Buffer, pos: number): number | undefined {
  let n = 0;
  for (let i = 0, scale = 1; i < 5 && pos + i < data.length; i++, scale *= 128) {
    const b = data[pos + i]!;
    n += (b & 0x7f) * scale;
    if (b < 0x80) return n;
  }
  return undefined;
}

function xerialDeclaredBytes(data: Buffer): number {
  let total = 0;
  for (let pos = XERIAL_HEADER_BYTES; pos + 4 <= data.length;) {
    const length = data.readInt32BE(pos);
    total += uvarintAt(data, pos + 4) ?? 0;
    if (length < 0) break;
    pos += 4 + length;
  }
  return total;
}

/** A zstd frame header's Frame_Content_Size (RFC 8878, section 3.1.1.1), or undefined when it has none. */
function zstdContentSize(data: Buffer): number | undefined {
  if (data.length < 5 || data.readUInt32LE(0) !== 0xfd2fb528) return undefined;
  const descriptor = data[4]!;
  const singleSegment = (descriptor & 0x20) !== 0;
  const fcsBytes = [singleSegment ? 1 : 0, 2, 4, 8][descriptor >> 6]!;
  if (fcsBytes === 0) return undefined;
  const at = 5 + (singleSegment ? 0 : 1) + [0, 1, 2, 4][descriptor & 0x03]!;
  if (data.length < at + fcsBytes) return undefined;
  switch (fcsBytes) {
    case 1:
      return data[at]!;
    case 2:
      return data.readUInt16LE(at) + 256;
    case 4:
      return data.readUInt32LE(at);
    default:
      return Number(data.readBigUInt64LE(at));
  }
}

/**
 * `onelog consume`'s output: one JSON line per record, `{topic, partition, offset, timestamp, key, value, headers,
 * attempt, original}` (key, value and header values as UTF-8 text), byte for byte as `JSON.stringify` of that object
 * writes it. The lines of a fetched batch are written straight into one buffer and out in one write: an ASCII key or
 * value is escaped from its bytes as they are (no string made and encoded again), other text goes through
 * `JSON.stringify`, so invalid UTF-8 comes out as U+FFFD exactly as `Buffer.toString` gives it.
 */
import type { ConsumedMessage } from '../member/consumer.js';
import { headersToJson } from '../protocol/json-records.js';
import { jsonString } from './json-text.js';

/** A buffer is written once it holds about this many bytes. */
const FLUSH_BYTES = 1 << 20;
/** The most bytes a JSON string takes per byte of ASCII text (`\u001f`), or per UTF-16 unit of other text. */
const MOST_PER_BYTE = 6;
/** The most bytes of a line besides its topics, key, value and headers (names, numbers, punctuation). */
const LINE_OVERHEAD = 256;

const ESCAPES: ReadonlyMap<number, number> = new Map([[0x08, 0x62], [0x09, 0x74], [0x0a, 0x6e], [0x0c, 0x66], [0x0d, 0x72]]);
const HEX = '0123456789abcdef';
const ascii = (text: string) => Buffer.from(text, 'latin1');
const [TIMESTAMP, KEY, VALUE, HEADERS, ATTEMPT, END, NULL, EMPTY_HEADERS] =
  [',"timestamp":', ',"key":', ',"value":', ',"headers":', ',"attempt":', '}}\n', 'null', '{}'].map(ascii) as [Buffer, Buffer, Buffer, Buffer, Buffer, Buffer, Buffer, Buffer];

/**
 * Writes the ASCII `bytes` as a JSON string at `pos` of `out`.
 * @returns where it ended, or -1 when `bytes` hold a byte past ASCII (nothing meaningful written: use the text path)
 */
function writeAsciiString(bytes: Buffer, out: Buffer, pos: number): number {
  out[pos++] = 0x22;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (b >= 0x80) return -1;
    if (b === 0x22 || b === 0x5c) {
      out[pos++] = 0x5c;
      out[pos++] = b;
    } else if (b < 0x20) {
      out[pos++] = 0x5c;
      const short = ESCAPES.get(b);
      if (short !== undefined) {
        out[pos++] = short;
      } else {
        pos += out.write(`u00${HEX[b >> 4]}${HEX[b & 15]}`, pos, 'latin1');
      }
    } else {
      out[pos++] = b;
    }
  }
  out[pos++] = 0x22;
  return pos;
}

/** Copies the ASCII bytes of `from` to `pos` of `out` (in JS: a short copy costs less than a call into C++). */
function copyBytes(from: Buffer, out: Buffer, pos: number): number {
  for (let i = 0; i < from.length; i++) out[pos++] = from[i]!;
  return pos;
}

/** Writes the decimal digits of the integer `n` at `pos`; answers where they ended. */
function writeInteger(n: number, out: Buffer, pos: number): number {
  if (n < 0 || !Number.isSafeInteger(n)) return pos + out.write(String(n), pos, 'latin1');
  let digits = 1;
  for (let t = n; t >= 10; t = Math.floor(t / 10)) digits++;
  for (let i = pos + digits - 1, t = n; i >= pos; i--, t = Math.floor(t / 10)) out[i] = 0x30 + (t % 10);
  return pos + digits;
}

export class RecordLines {
  private buffer = Buffer.allocUnsafe(FLUSH_BYTES);
  private used = 0;
  /** `{"topic":T,"partition":P,"offset":` and `"original":{"topic":T,"partition":P,"offset":` per `T/P`, as bytes. */
  private readonly heads = new Map<string, { line: Buffer; original: Buffer }>();

  /** @param write writes bytes out, resolving once they are taken (rejecting, e.g. EPIPE, when the reader went away) */
  constructor(private readonly write: (bytes: Buffer) => Promise<void>) {}

  /** Adds a record's line; once the buffer is full it is written, and the answer resolves when it was taken. */
  push(m: ConsumedMessage): Promise<void> | undefined {
    const headers = m.headers.length === 0 ? EMPTY_HEADERS : Buffer.from(JSON.stringify(headersToJson(m.headers, 'utf8')), 'utf8');
    const most = LINE_OVERHEAD + MOST_PER_BYTE * ((m.key?.length ?? 0) + (m.value?.length ?? 0) + m.topic.length + m.original.topic.length) +
      headers.length;
    let flushed: Promise<void> | undefined;
    if (this.used + most > this.buffer.length) {
      flushed = this.flush();
      if (most > this.buffer.length) this.buffer = Buffer.allocUnsafe(most);
    }
    this.used = this.line(m, headers, this.buffer, this.used);
    return flushed;
  }

  /** Writes what the buffer holds (nothing when empty). */
  flush(): Promise<void> {
    if (this.used === 0) return Promise.resolve();
    // The stream may hold the bytes until they are written: a full buffer is handed over (the next lines go into a new
    // one), a few lines (a push consumer's, one at a time) are copied out.
    let bytes: Buffer;
    if (this.used < FLUSH_BYTES / 16) {
      bytes = Buffer.from(this.buffer.subarray(0, this.used));
    } else {
      bytes = this.buffer.subarray(0, this.used);
      this.buffer = Buffer.allocUnsafe(FLUSH_BYTES);
    }
    this.used = 0;
    return this.write(bytes);
  }

  /** The fixed parts of the lines of `topic/partition`. */
  private headsOf(topic: string, partition: number): { line: Buffer; original: Buffer } {
    const k = `${topic}/${partition}`;
    let heads = this.heads.get(k);
    if (heads === undefined) {
      const where = `{"topic":${jsonString(topic)},"partition":${partition},"offset":`;
      heads = { line: Buffer.from(where, 'utf8'), original: Buffer.from(`"original":${where}`, 'utf8') };
      this.heads.set(k, heads);
    }
    return heads;
  }

  /** Writes `m`'s line at `pos` of `out` (which has room for it); answers where it ended. */
  private line(m: ConsumedMessage, headers: Buffer, out: Buffer, pos: number): number {
    const o = m.original;
    pos = copyBytes(this.headsOf(m.topic, m.partition).line, out, pos);
    pos = writeInteger(m.offset, out, pos);
    pos = copyBytes(TIMESTAMP, out, pos);
    pos = writeInteger(m.timestamp, out, pos);
    pos = copyBytes(KEY, out, pos);
    pos = this.text(m.key, out, pos);
    pos = copyBytes(VALUE, out, pos);
    pos = this.text(m.value, out, pos);
    pos = copyBytes(HEADERS, out, pos);
    pos = copyBytes(headers, out, pos);
    pos = copyBytes(ATTEMPT, out, pos);
    pos = writeInteger(m.attempt, out, pos);
    out[pos++] = 0x2c; // ,
    pos = copyBytes(this.headsOf(o.topic, o.partition).original, out, pos);
    pos = writeInteger(o.offset, out, pos);
    pos = copyBytes(TIMESTAMP, out, pos);
    pos = writeInteger(o.timestamp, out, pos);
    return copyBytes(END, out, pos);
  }

  /** Bytes as a JSON string of their UTF-8 text (`null` for none) at `pos`; answers where it ended. */
  private text(bytes: Buffer | null, out: Buffer, pos: number): number {
    if (bytes === null) return copyBytes(NULL, out, pos);
    const end = writeAsciiString(bytes, out, pos);
    return end >= 0 ? end : pos + out.write(jsonString(bytes.toString('utf8')), pos, 'utf8');
  }
}

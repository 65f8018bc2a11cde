/**
 * The Kafka protocol's primitive encodings (big-endian integers, unsigned varints and zigzag varints,
 * length-prefixed strings and bytes in their classic and compact forms), read from a Buffer with bounds
 * checks and written to a growing buffer.
 */
import { OnelogError } from '../../protocol/errors.js';

/** A cursor over a request's bytes. Reading past the end throws `INVALID_REQUEST`. */
export class ByteReader {
  constructor(readonly buf: Buffer, public pos = 0) {}

  get remaining(): number {
    return this.buf.length - this.pos;
  }

  private need(n: number): number {
    if (n < 0 || this.pos + n > this.buf.length) {
      throw new OnelogError('INVALID_REQUEST', `malformed Kafka message: ${n} bytes needed at byte ${this.pos}, ${this.remaining} left`);
    }
    const at = this.pos;
    this.pos += n;
    return at;
  }

  int8(): number { return this.buf.readInt8(this.need(1)); }
  int16(): number { return this.buf.readInt16BE(this.need(2)); }
  uint16(): number { return this.buf.readUInt16BE(this.need(2)); }
  int32(): number { return this.buf.readInt32BE(this.need(4)); }
  float64(): number { return this.buf.readDoubleBE(this.need(8)); }
  bool(): boolean { return this.buf.readInt8(this.need(1)) !== 0; }

  /** An int64 as a number (offsets and timestamps stay below 2^53). */
  int64(): number {
    return Number(this.buf.readBigInt64BE(this.need(8)));
  }

  /** An unsigned varint (at most 5 bytes: a 32-bit value). */
  uvarint(): number {
    let value = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      const b = this.buf[this.need(1)]!;
      value += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) return value;
    }
    throw new OnelogError('INVALID_REQUEST', `malformed Kafka message: a varint longer than 5 bytes at byte ${this.pos}`);
  }

  bytes(n: number): Buffer {
    const at = this.need(n);
    return this.buf.subarray(at, at + n);
  }

  /** 16 bytes, as 32 hex digits. */
  uuid(): string {
    return this.bytes(16).toString('hex');
  }
}

/** Bytes written as a slice of the caller's buffer, not copied (record batches). */
const ZERO_COPY_BYTES = 1024;

/**
 * A growing buffer the encoders write to. Large byte strings (record batches) are kept as the caller's slices,
 * not copied: {@link parts} answers the written bytes as a list to hand to a socket as is.
 */
export class ByteWriter {
  private buf: Buffer;
  private pos = 0;
  /** Bytes before `buf`: written segments and zero-copy slices, in order. */
  private readonly done: Buffer[] = [];
  private doneBytes = 0;

  constructor(initial = 256) {
    this.buf = Buffer.allocUnsafe(initial);
  }

  /** Bytes written so far. */
  get length(): number {
    return this.doneBytes + this.pos;
  }

  private room(n: number): number {
    if (this.pos + n > this.buf.length) {
      const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
      this.buf.copy(next, 0, 0, this.pos);
      this.buf = next;
    }
    const at = this.pos;
    this.pos += n;
    return at;
  }

  // Each takes its position first: room() may replace the buffer.
  int8(v: number): void {
    const at = this.room(1);
    this.buf.writeInt8(v, at);
  }

  int16(v: number): void {
    const at = this.room(2);
    this.buf.writeInt16BE(v, at);
  }

  uint16(v: number): void {
    const at = this.room(2);
    this.buf.writeUInt16BE(v, at);
  }

  int32(v: number): void {
    const at = this.room(4);
    this.buf.writeInt32BE(v, at);
  }

  float64(v: number): void {
    const at = this.room(8);
    this.buf.writeDoubleBE(v, at);
  }

  bool(v: boolean): void {
    this.int8(v ? 1 : 0);
  }

  int64(v: number): void {
    const at = this.room(8);
    this.buf.writeBigInt64BE(BigInt(v), at);
  }

  uvarint(v: number): void {
    let rest = v;
    while (rest >= 0x80) {
      const at = this.room(1);
      this.buf[at] = (rest % 0x80) | 0x80;
      rest = Math.floor(rest / 0x80);
    }
    const at = this.room(1);
    this.buf[at] = rest;
  }

  bytes(b: Buffer): void {
    if (b.length >= ZERO_COPY_BYTES) {
      this.seal();
      this.done.push(b);
      this.doneBytes += b.length;
      return;
    }
    const at = this.room(b.length);
    b.copy(this.buf, at);
  }

  /** Ends the current segment; writing goes on in a new one. */
  private seal(): void {
    if (this.pos === 0) return;
    this.done.push(this.buf.subarray(0, this.pos));
    this.doneBytes += this.pos;
    this.buf = Buffer.allocUnsafe(Math.max(256, this.buf.length - this.pos));
    this.pos = 0;
  }

  uuid(hex: string): void {
    const b = Buffer.from(hex.padStart(32, '0'), 'hex');
    if (b.length !== 16) throw new OnelogError('INTERNAL_ERROR', `a uuid is 32 hex digits, got ${JSON.stringify(hex)}`);
    this.bytes(b);
  }

  /** What was written, in order, as segments and the slices written without a copy (the writer must not be used after). */
  parts(): Buffer[] {
    return this.pos === 0 && this.done.length > 0 ? this.done : [...this.done, this.buf.subarray(0, this.pos)];
  }

  /** What was written, as one Buffer (copied together when slices were kept; the writer must not be used after). */
  finish(): Buffer {
    return this.done.length === 0 ? this.buf.subarray(0, this.pos) : Buffer.concat(this.parts());
  }
}

/**
 * Splits a connection's bytes into Kafka request frames (a 32-bit size, then that many bytes). Chunks are kept as
 * they arrive and joined once per frame, only when a frame spans several of them: receiving a frame costs its
 * size, not its size times its number of chunks. A frame inside one chunk is a slice of it (record batches in it
 * are appended without a copy).
 */
import { OnelogError } from '../protocol/errors.js';

export class FrameReader {
  private readonly chunks: Buffer[] = [];
  private buffered = 0;

  /** @param maxFrameBytes largest frame accepted, bytes */
  constructor(private readonly maxFrameBytes: number) {}

  /** Bytes received and not yet taken as frames. */
  get pending(): number {
    return this.buffered;
  }

  /** Keeps a chunk received, as it is. */
  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
  }

  /**
   * The size the next frame declares, bytes (without its 4-byte size), or null until those 4 bytes have arrived:
   * known before any of the frame's body, so a frame can be refused before it is received.
   * @throws OnelogError `REQUEST_TOO_LARGE` for a size above the maximum, `INVALID_REQUEST` for a negative one
   */
  nextSize(): number | null {
    if (this.buffered < 4) return null;
    const size = this.peekSize();
    if (size < 0) throw new OnelogError('INVALID_REQUEST', `a frame size of ${size} bytes is negative`, { size });
    if (size > this.maxFrameBytes) {
      throw new OnelogError('REQUEST_TOO_LARGE', `a frame of ${size} bytes is above the maximum ${this.maxFrameBytes}`, { size, maxFrameBytes: this.maxFrameBytes });
    }
    return size;
  }

  /**
   * The next complete frame without its size, or null until one has arrived.
   * @throws OnelogError as {@link nextSize}
   */
  next(): Buffer | null {
    const size = this.nextSize();
    if (size === null || this.buffered < 4 + size) return null;
    this.take(4);
    return this.take(size);
  }

  private peekSize(): number {
    const first = this.chunks[0]!;
    if (first.length >= 4) return first.readInt32BE(0);
    const head = Buffer.alloc(4);
    let at = 0;
    for (const c of this.chunks) at += c.copy(head, at, 0, Math.min(c.length, 4 - at));
    return head.readInt32BE(0);
  }

  /** The next `n` buffered bytes: a slice of the first chunk when it holds them, else one copy. */
  private take(n: number): Buffer {
    this.buffered -= n;
    const first = this.chunks[0];
    if (first !== undefined && first.length >= n) {
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
      return first.subarray(0, n);
    }
    const out = Buffer.allocUnsafe(n);
    let at = 0;
    let used = 0;
    while (at < n) {
      const c = this.chunks[used]!;
      const k = Math.min(c.length, n - at);
      c.copy(out, at, 0, k);
      at += k;
      if (k === c.length) used++;
      else this.chunks[used] = c.subarray(k);
    }
    this.chunks.splice(0, used);
    return out;
  }
}

/**
 * Reusable I/O buffers for the data path: the broker's segment reads and the fetch answers that carry them out,
 * the client's produced batches and the frames that carry them.
 *
 * Why: a fetch answer or a produce request is 100 KB-1 MB. Allocated fresh each time, glibc serves buffers of that size with mmap,
 * or from the top of its heap which it trims back to the OS once they are freed, so every fetch faults its pages
 * in again: on this project's VM that cost 1 µs of system time per record consumed (60,000 page faults per
 * million records of 100 B) and as much per KiB produced. A pooled buffer is faulted in once.
 *
 * A buffer from {@link BufferPool.take} belongs to the caller until it hands it back with {@link BufferPool.give};
 * one never given back is simply garbage-collected, so a reader that does not know about the pool (the Kafka
 * listener, retries) stays correct. Giving back a buffer still in use (e.g. queued on a socket) is the one
 * mistake to avoid: give a frame back from the write's callback.
 */

/** The smallest pooled buffer, bytes: smaller requests are served by Node's own pool. */
const MIN_POOLED_BYTES = 64 * 1024;

export class BufferPool {
  /** Free backing stores by capacity (a power of two, bytes). */
  private readonly free = new Map<number, ArrayBufferLike[]>();
  /** The backing stores this pool made: only these are taken back. */
  private readonly owned = new WeakSet<ArrayBufferLike>();
  private freeBytes = 0;

  /** @param maxFreeBytes the most bytes kept free for reuse; buffers given back beyond it are left to the GC. @default 64 MiB */
  constructor(private readonly maxFreeBytes = 64 * 1024 * 1024) {}

  /** A buffer of exactly `size` bytes, uninitialised (as `Buffer.allocUnsafe`); bound, so it can be passed as an allocator. */
  readonly take = (size: number): Buffer => {
    if (size < MIN_POOLED_BYTES) return Buffer.allocUnsafe(size);
    const capacity = 2 ** Math.ceil(Math.log2(size));
    const reused = this.free.get(capacity)?.pop();
    if (reused !== undefined) {
      this.freeBytes -= capacity;
      return Buffer.from(reused, 0, size);
    }
    const fresh = Buffer.allocUnsafeSlow(capacity);
    this.owned.add(fresh.buffer);
    return fresh.subarray(0, size);
  };

  /** Hands back a buffer from {@link take} (or a view of one); anything else is ignored. The caller must not use it again. */
  give(buf: Buffer): void {
    const store = buf.buffer;
    if (!this.owned.has(store) || this.freeBytes + store.byteLength > this.maxFreeBytes) return;
    const list = this.free.get(store.byteLength);
    if (list === undefined) this.free.set(store.byteLength, [store]);
    else if (!list.includes(store)) list.push(store);
    else return; // given back twice
    this.freeBytes += store.byteLength;
  }
}

/** The process's pool for data path buffers (broker and client alike). */
export const ioBuffers = new BufferPool();

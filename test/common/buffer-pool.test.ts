import { describe, expect, it } from 'vitest';
import { BufferPool } from '../../src/common/buffer-pool.js';

describe('BufferPool', () => {
  it('hands a buffer given back to the next take of a size in the same power of two', () => {
    const pool = new BufferPool();
    const a = pool.take(100_000);
    expect(a.length).toBe(100_000);
    pool.give(a.subarray(10, 20)); // a view of it counts as the buffer
    const b = pool.take(70_000);
    expect(b.buffer).toBe(a.buffer);
    expect(b.length).toBe(70_000);
    // Taken again, it is not free any more: the next take gets a new one.
    expect(pool.take(70_000).buffer).not.toBe(a.buffer);
  });

  it('keeps a buffer given back twice only once, and ignores buffers it did not make', () => {
    const pool = new BufferPool();
    const a = pool.take(65_536);
    pool.give(a);
    pool.give(a);
    pool.give(Buffer.alloc(65_536));
    expect(pool.take(65_536).buffer).toBe(a.buffer);
    expect(pool.take(65_536).buffer).not.toBe(a.buffer);
  });

  it('keeps at most maxFreeBytes free', () => {
    const pool = new BufferPool(128 * 1024);
    const [a, b, c] = [pool.take(65_536), pool.take(65_536), pool.take(65_536)];
    for (const buf of [a, b, c]) pool.give(buf);
    const again = new Set([pool.take(65_536).buffer, pool.take(65_536).buffer, pool.take(65_536).buffer]);
    expect(again.has(a.buffer) && again.has(b.buffer)).toBe(true);
    expect(again.has(c.buffer)).toBe(false);
  });
});

/** Writes of many rows in slices, the event loop let through between two (src/catalog/slices.ts). */
import { describe, expect, it } from 'vitest';
import { inSlices, ROWS_PER_SLICE } from '../../src/catalog/slices.js';

describe('inSlices', () => {
  it('writes every row once, in order, in slices of at most ROWS_PER_SLICE, one at a time', async () => {
    for (const n of [0, 1, ROWS_PER_SLICE, ROWS_PER_SLICE + 1, 3 * ROWS_PER_SLICE + 7]) {
      const rows = Array.from({ length: n }, (_, i) => i);
      const slices: number[][] = [];
      let writing = false;
      await inSlices(rows, async (slice) => {
        expect(writing).toBe(false);
        writing = true;
        slices.push([...slice]);
        await Promise.resolve();
        writing = false;
      });
      expect(slices.flat()).toEqual(rows);
      expect(slices.every((s) => s.length > 0 && s.length <= ROWS_PER_SLICE)).toBe(true);
      expect(slices).toHaveLength(Math.ceil(n / ROWS_PER_SLICE));
    }
  });

  it('lets the event loop turn between two slices: an I/O-phase callback queued during the first runs before the second', async () => {
    const events: string[] = [];
    await inSlices(Array.from({ length: 2 * ROWS_PER_SLICE }, (_, i) => i), async (slice) => {
      events.push(`slice from ${slice[0]}`);
      if (slice[0] === 0) setImmediate(() => events.push('event loop turned'));
    });
    expect(events).toEqual(['slice from 0', 'event loop turned', `slice from ${ROWS_PER_SLICE}`]);
  });
});

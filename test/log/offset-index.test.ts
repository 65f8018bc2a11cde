import { describe, expect, it } from 'vitest';
import { OffsetIndex } from '../../src/log/segments/offset-index.js';

function entryBytes(entries: [number, number][]): Buffer {
  const buf = Buffer.alloc(entries.length * 8);
  entries.forEach(([rel, pos], i) => {
    buf.writeUInt32BE(rel, i * 8);
    buf.writeUInt32BE(pos, i * 8 + 4);
  });
  return buf;
}

describe('OffsetIndex', () => {
  it('finds the position of the last entry at or below an offset, 0 before the first', () => {
    const index = new OffsetIndex(100);
    index.append(110, 500);
    index.append(120, 900);
    index.append(135, 1400);
    expect(index.entries).toBe(3);
    expect([99, 100, 109, 110, 111, 119, 120, 134, 135, 10_000].map((o) => index.lookup(o))).toEqual([
      0, 0, 0, 500, 500, 500, 900, 900, 1400, 1400,
    ]);
    // Entries are stored relative to the base offset, 8 bytes each, big-endian.
    expect(index.toBuffer()).toEqual(entryBytes([[10, 500], [20, 900], [35, 1400]]));
  });

  it('grows past its initial capacity and parses back what it wrote', () => {
    const index = new OffsetIndex(0);
    for (let i = 1; i <= 500; i++) index.append(i * 10, i * 100);
    expect(index.entries).toBe(500);
    for (let i = 1; i <= 500; i++) expect(index.lookup(i * 10 + 5)).toBe(i * 100);
    const loaded = OffsetIndex.parse(index.toBuffer(), 0, 1_000_000)!;
    expect(loaded.entries).toBe(500);
    expect(loaded.lookup(2505)).toBe(25_000);
    expect([loaded.lastOffset, loaded.lastPosition]).toEqual([5000, 50_000]);
  });

  it('parses a valid file, and reports a wrong length, a position past the log or a non-increasing entry as invalid', () => {
    const check = (data: Buffer, logBytes = 10_000) => {
      const index = OffsetIndex.parse(data, 50, logBytes);
      return index === null ? null : [index.entries, index.lookup(1_000)];
    };
    expect(check(entryBytes([[5, 100], [9, 300]]))).toEqual([2, 300]);
    expect(check(Buffer.alloc(0))).toEqual([0, 0]);
    expect(check(Buffer.concat([entryBytes([[5, 100]]), Buffer.from([1, 2, 3])]))).toBeNull();
    expect(check(entryBytes([[5, 100], [9, 300]]), 300)).toBeNull();
    expect(check(entryBytes([[5, 100], [5, 300]]))).toBeNull();
    expect(check(entryBytes([[5, 300], [9, 300]]))).toBeNull();
    expect(check(entryBytes([[9, 100], [5, 300]]))).toBeNull();
  });
});

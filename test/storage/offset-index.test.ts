import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { OffsetIndex } from '../../src/storage/offset-index.js';
import { tmpDir } from '../helpers/tmp.js';

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
    const file = path.join(tmpDir(), 'x.index');
    const index = OffsetIndex.create(file, 100);
    index.append(110, 500);
    index.append(120, 900);
    index.append(135, 1400);
    expect(index.entries).toBe(3);
    expect([99, 100, 109, 110, 111, 119, 120, 134, 135, 10_000].map((o) => index.lookup(o))).toEqual([
      0, 0, 0, 500, 500, 500, 900, 900, 1400, 1400,
    ]);
    index.close();
    // Entries are stored relative to the base offset, 8 bytes each, big-endian.
    expect(fs.readFileSync(file)).toEqual(entryBytes([[10, 500], [20, 900], [35, 1400]]));
  });

  it('grows past its initial capacity', () => {
    const file = path.join(tmpDir(), 'x.index');
    const index = OffsetIndex.create(file, 0);
    for (let i = 1; i <= 500; i++) index.append(i * 10, i * 100);
    expect(index.entries).toBe(500);
    for (let i = 1; i <= 500; i++) expect(index.lookup(i * 10 + 5)).toBe(i * 100);
    index.close();
    const loaded = OffsetIndex.load(file, 0, 1_000_000)!;
    expect(loaded.entries).toBe(500);
    expect(loaded.lookup(2505)).toBe(25_000);
    loaded.close();
  });

  it('loads a valid file, and reports a wrong length, a position past the log or a non-increasing entry as invalid', () => {
    const file = path.join(tmpDir(), 'x.index');
    const check = (data: Buffer, logBytes = 10_000) => {
      fs.writeFileSync(file, data);
      const index = OffsetIndex.load(file, 50, logBytes);
      const result = index === null ? null : [index.entries, index.lookup(1_000)];
      index?.close();
      return result;
    };
    expect(check(entryBytes([[5, 100], [9, 300]]))).toEqual([2, 300]);
    expect(check(Buffer.alloc(0))).toEqual([0, 0]);
    expect(check(Buffer.concat([entryBytes([[5, 100]]), Buffer.from([1, 2, 3])]))).toBeNull();
    expect(check(entryBytes([[5, 100], [9, 300]]), 300)).toBeNull();
    expect(check(entryBytes([[5, 100], [5, 300]]))).toBeNull();
    expect(check(entryBytes([[5, 300], [9, 300]]))).toBeNull();
    expect(check(entryBytes([[9, 100], [5, 300]]))).toBeNull();
  });

  it('create replaces an existing file', () => {
    const file = path.join(tmpDir(), 'x.index');
    fs.writeFileSync(file, entryBytes([[5, 100]]));
    const index = OffsetIndex.create(file, 0);
    expect(index.entries).toBe(0);
    index.close();
    expect(fs.statSync(file).size).toBe(0);
  });
});

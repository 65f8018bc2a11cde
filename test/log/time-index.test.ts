import { describe, expect, it } from 'vitest';
import { TimeIndex } from '../../src/log/segments/time-index.js';

describe('TimeIndex', () => {
  it('appends only growing timestamps and finds where to start scanning for a time', () => {
    const index = new TimeIndex(100);
    expect(index.maybeAppend(1000, 110)).toBe(true);
    expect(index.maybeAppend(900, 120)).toBe(false); // not larger: skipped
    index.maybeAppend(2000, 130);
    index.maybeAppend(3000, 140);
    expect(index.entries).toBe(3);
    expect(index.lastTimestamp).toBe(3000);
    expect(index.lookup(500)).toBe(100); // nothing below: the segment start
    expect(index.lookup(1000)).toBe(100); // (1000, 110) is not below 1000
    expect(index.lookup(1001)).toBe(110);
    expect(index.lookup(2500)).toBe(130);
    expect(index.lookup(9999)).toBe(140);
    const file = index.toBuffer();
    expect(file.length).toBe(36);
    const loaded = TimeIndex.parse(file, 100, 200)!;
    expect([loaded.entries, loaded.lastTimestamp, loaded.lookup(2500)]).toEqual([3, 3000, 130]);
  });

  it('keeps timestamps beyond 32 bits exact, in the file layout (int64 timestamp, uint32 relative offset)', () => {
    const index = new TimeIndex(0);
    index.maybeAppend(1_442_018_849_913, 5);
    const file = index.toBuffer();
    expect(file.readBigInt64BE(0)).toBe(1_442_018_849_913n);
    expect(file.readUInt32BE(8)).toBe(5);
    expect(TimeIndex.parse(file, 0, 10)!.lastTimestamp).toBe(1_442_018_849_913);
  });

  it('refuses a wrong length, decreasing entries or offsets past the segment', () => {
    const index = new TimeIndex(0);
    index.maybeAppend(1000, 1);
    index.maybeAppend(2000, 5);
    const good = index.toBuffer();
    expect(TimeIndex.parse(good, 0, 10)!.entries).toBe(2);
    expect(TimeIndex.parse(good, 0, 5)).toBeNull(); // offset 5 is not below the next offset 5
    expect(TimeIndex.parse(good.subarray(0, 20), 0, 10)).toBeNull();
    expect(TimeIndex.parse(Buffer.concat([good.subarray(12, 24), good.subarray(0, 12)]), 0, 10)).toBeNull();
  });
});

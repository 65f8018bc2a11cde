import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { TimeIndex } from '../../src/storage/time-index.js';
import { tmpDir } from '../helpers/tmp.js';

describe('TimeIndex', () => {
  it('appends only growing timestamps and finds where to start scanning for a time', () => {
    const file = path.join(tmpDir(), 'x.timeindex');
    const index = TimeIndex.create(file, 100);
    index.maybeAppend(1000, 110);
    index.maybeAppend(900, 120); // not larger: skipped
    index.maybeAppend(2000, 130);
    index.maybeAppend(3000, 140);
    expect(index.entries).toBe(3);
    expect(index.lastTimestamp).toBe(3000);
    expect(index.lookup(500)).toBe(100); // nothing below: the segment start
    expect(index.lookup(1000)).toBe(100); // (1000, 110) is not below 1000
    expect(index.lookup(1001)).toBe(110);
    expect(index.lookup(2500)).toBe(130);
    expect(index.lookup(9999)).toBe(140);
    index.close();
    expect(fs.statSync(file).size).toBe(36);
    const loaded = TimeIndex.load(file, 100, 200)!;
    expect([loaded.entries, loaded.lastTimestamp, loaded.lookup(2500)]).toEqual([3, 3000, 130]);
    loaded.close();
  });

  it('keeps timestamps beyond 32 bits exact', () => {
    const file = path.join(tmpDir(), 'x.timeindex');
    const index = TimeIndex.create(file, 0);
    index.maybeAppend(1_442_018_849_913, 5);
    index.close();
    const loaded = TimeIndex.load(file, 0, 10)!;
    expect(loaded.lastTimestamp).toBe(1_442_018_849_913);
    loaded.close();
  });

  it('refuses a missing file, a wrong length, decreasing entries or offsets past the segment', () => {
    const dir = tmpDir();
    const file = path.join(dir, 'x.timeindex');
    expect(TimeIndex.load(file, 0, 10)).toBeNull();
    const index = TimeIndex.create(file, 0);
    index.maybeAppend(1000, 1);
    index.maybeAppend(2000, 5);
    index.close();
    const good = fs.readFileSync(file);
    expect(TimeIndex.load(file, 0, 5)).toBeNull(); // offset 5 is not below the next offset 5
    fs.writeFileSync(file, good.subarray(0, 20));
    expect(TimeIndex.load(file, 0, 10)).toBeNull();
    fs.writeFileSync(file, Buffer.concat([good.subarray(12, 24), good.subarray(0, 12)]));
    expect(TimeIndex.load(file, 0, 10)).toBeNull();
  });
});

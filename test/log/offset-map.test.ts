/** The bounded key map of compaction (Kafka's SkimpyOffsetMap): put/get, full, load factor, sizing, bounds. */
import { describe, expect, it } from 'vitest';
import {
  checkOffsetMapBytes, DEFAULT_LOAD_FACTOR, MAX_OFFSET_MAP_BYTES, MIN_OFFSET_MAP_BYTES, OFFSET_MAP_SLOT_BYTES, OffsetMap, primeAtMost,
} from '../../src/log/offset-map.js';
import { codeOf } from '../helpers/errors.js';

const key = (s: string) => Buffer.from(s);

describe('OffsetMap', () => {
  it('maps keys by their bytes to the latest offset put, and -1 for a key never put', () => {
    const map = new OffsetMap(1024);
    map.reset();
    expect(map.get(key('a'))).toBe(-1);
    expect(map.put(key('a'), 0)).toBe(true);
    expect(map.put(key('b'), 1)).toBe(true);
    expect(map.put(key('a'), 7)).toBe(true);
    // Another buffer with the same bytes is the same key; a view into a larger buffer too.
    expect(map.get(Buffer.from('xay').subarray(1, 2))).toBe(7);
    expect(map.get(key('b'))).toBe(1);
    expect(map.get(key('a\0'))).toBe(-1);
    expect(map.put(Buffer.alloc(0), 3)).toBe(true); // the empty key is a key
    expect(map.get(Buffer.alloc(0))).toBe(3);
    expect(map.size).toBe(3);
    // Offsets up to 2^53 - 2 come back exact.
    map.put(key('big'), Number.MAX_SAFE_INTEGER - 1);
    expect(map.get(key('big'))).toBe(Number.MAX_SAFE_INTEGER - 1);
  });

  it('holds every key put below its capacity, at the load factor, and refuses new keys once full', () => {
    const map = new OffsetMap(101 * OFFSET_MAP_SLOT_BYTES); // 101 slots, a prime: all of them are used
    map.reset();
    expect(map.capacity).toBe(Math.floor(101 * DEFAULT_LOAD_FACTOR)); // 90
    for (let i = 0; i < map.capacity; i++) expect(map.put(key(`k${i}`), i * 10)).toBe(true);
    expect(map.full).toBe(true);
    expect(map.put(key('one too many'), 5)).toBe(false);
    expect(map.get(key('one too many'))).toBe(-1);
    expect(map.size).toBe(90);
    // A key already in the map still takes a later offset.
    expect(map.put(key('k3'), 999)).toBe(true);
    for (let i = 0; i < map.capacity; i++) expect(map.get(key(`k${i}`))).toBe(i === 3 ? 999 : i * 10);
  });

  it('takes its load factor from the option', () => {
    const half = new OffsetMap(101 * OFFSET_MAP_SLOT_BYTES, 0.5);
    half.reset();
    expect(half.capacity).toBe(50);
    // Whatever the factor, one slot stays empty (probing ends there).
    const almostAll = new OffsetMap(101 * OFFSET_MAP_SLOT_BYTES, 0.999);
    almostAll.reset();
    expect(almostAll.capacity).toBe(100);
    const two = new OffsetMap(MIN_OFFSET_MAP_BYTES);
    two.reset();
    expect([two.capacity, two.put(key('a'), 1), two.put(key('b'), 2), two.get(key('a'))]).toEqual([1, true, false, 1]);
  });

  it('finds every key at 90% load in a large table (double hashing visits all slots)', () => {
    const map = new OffsetMap(200_003 * OFFSET_MAP_SLOT_BYTES);
    map.reset();
    const n = map.capacity;
    expect(n).toBe(Math.floor(primeAtMost(200_003) * 0.9));
    let wrong = 0;
    for (let i = 0; i < n; i++) if (!map.put(key(`key-${i}`), i)) wrong++;
    for (let i = 0; i < n; i++) if (map.get(key(`key-${i}`)) !== i) wrong++;
    for (let i = n; i < n + 1000; i++) if (map.get(key(`key-${i}`)) !== -1) wrong++;
    expect(wrong).toBe(0);
  });

  it('sizes itself on reset for the keys expected, up to the whole buffer, and gives its memory back on release', () => {
    const map = new OffsetMap(64 * 1024 * 1024);
    expect(map.allocatedBytes).toBe(0); // nothing until used
    map.reset(1000);
    expect(map.capacity).toBeGreaterThanOrEqual(1000);
    expect(map.allocatedBytes).toBeLessThan(1000 * OFFSET_MAP_SLOT_BYTES * 1.2);
    map.put(key('a'), 1);
    map.reset(10); // a smaller reset reuses the buffer, emptied
    expect([map.size, map.get(key('a')), map.capacity >= 10]).toEqual([0, -1, true]);
    map.reset();
    expect(map.capacity).toBe(map.maxEntries);
    expect(map.maxEntries).toBe(Math.floor(primeAtMost(Math.floor((64 * 1024 * 1024) / 24)) * 0.9)); // ~2.5 million
    expect(map.allocatedBytes).toBeLessThanOrEqual(64 * 1024 * 1024);
    map.release();
    expect(map.allocatedBytes).toBe(0);
    expect(map.get(key('a'))).toBe(-1);
    expect(() => map.put(key('a'), 1)).toThrow(/before reset/);
  });

  it('refuses sizes and load factors out of bounds, naming the setting and what is allowed', () => {
    for (const bytes of [0, MIN_OFFSET_MAP_BYTES - 1, MAX_OFFSET_MAP_BYTES + 1, 1000.5, Number.NaN]) {
      expect(codeOf(() => new OffsetMap(bytes))).toBe('INVALID_REQUEST');
    }
    expect(() => checkOffsetMapBytes(10, '--cleaner-dedupe-buffer-bytes')).toThrow(
      '--cleaner-dedupe-buffer-bytes must be an integer number of bytes from 48 (two 24-byte slots) to 2147483648 (2 GiB), got 10');
    expect(checkOffsetMapBytes(MIN_OFFSET_MAP_BYTES)).toBe(48);
    for (const factor of [0, 1, -0.5, 1.5, Number.NaN]) {
      expect(() => new OffsetMap(1024, factor)).toThrow('loadFactor must be above 0 and below 1');
    }
  });
});

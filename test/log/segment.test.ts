import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeRecords, encodeBatch, LOG_OVERHEAD, readBatchHeader } from '../../src/protocol/record-batch.js';
import { LogSegment, segmentStem } from '../../src/log/segments/segment.js';
import type { SegmentOptions } from '../../src/log/segments/segment.js';
import type { CorruptBatch } from '../../src/log/partition.js';
import { tmpDir } from '../helpers/tmp.js';
import { batchSpans, rec, RecordingLogger, smallFileCache, T0 } from './log-fixtures.js';

// Segments still open at the end of a test; `shut` closes one early (never twice: fd numbers get reused).
const opened = new Set<LogSegment>();
afterEach(() => {
  for (const s of opened) s.close();
  opened.clear();
});

function shut(s: LogSegment): void {
  opened.delete(s);
  s.close();
}

function options(indexIntervalBytes = 4096, logger = new RecordingLogger(), files = smallFileCache()): SegmentOptions & { logger: RecordingLogger } {
  return { indexIntervalBytes, logger, files };
}

function create(dir: string, base: number, opts: SegmentOptions = options()): LogSegment {
  const s = LogSegment.create(dir, base, opts);
  opened.add(s);
  return s;
}

function reopen(dir: string, base: number, recover: boolean, opts: SegmentOptions = options()): LogSegment {
  const s = LogSegment.open(dir, base, recover, opts);
  opened.add(s);
  return s;
}

/**
 * Appends `count` batches of `perBatch` records each, from the segment's next offset; record values are
 * `v<offset>` and timestamps T0 + offset.
 */
function fill(segment: LogSegment, count: number, perBatch = 1): void {
  for (let b = 0; b < count; b++) {
    const base = segment.nextOffset;
    const records = Array.from({ length: perBatch }, (_, i) => rec(`v${base + i}`, T0 + base + i));
    const batch = encodeBatch(records, base, T0);
    segment.append(batch, readBatchHeader(batch));
  }
}

/** Decodes every batch of a read into `[offset, value]` pairs. */
function decodeAll(buf: Buffer | null): [number, string][] {
  if (buf === null) return [];
  const out: [number, string][] = [];
  for (let pos = 0; pos < buf.length; pos += LOG_OVERHEAD + buf.readInt32BE(pos + 8)) {
    for (const r of decodeRecords(buf, pos)) out.push([r.offset, r.value!.toString()]);
  }
  return out;
}

const expected = (from: number, to: number): [number, string][] =>
  Array.from({ length: to - from }, (_, i) => [from + i, `v${from + i}`]);

describe('LogSegment', () => {
  it('names its files by the base offset in 20 digits', () => {
    expect(segmentStem(0)).toBe('00000000000000000000');
    expect(segmentStem(1234)).toBe('00000000000000001234');
    expect(segmentStem(Number.MAX_SAFE_INTEGER)).toBe('00009007199254740991');
    const dir = tmpDir();
    const s = create(dir, 42);
    expect(path.basename(s.logPath)).toBe('00000000000000000042.log');
    // The index files are written when the segment is sealed (here: closed), once it has an index entry.
    expect(fs.readdirSync(dir)).toEqual(['00000000000000000042.log']);
    expect(() => LogSegment.create(dir, 42, options())).toThrow(/EEXIST/);
    fill(s, 1);
    s.seal();
    expect(fs.readdirSync(dir)).toEqual(['00000000000000000042.log']); // one batch: reopening reads it instead
    fill(s, 100);
    shut(s);
    expect(fs.readdirSync(dir).sort()).toEqual(['00000000000000000042.index', '00000000000000000042.log', '00000000000000000042.timeindex']);
  });

  it('reopens with the same size, next offset, max timestamp and bytes', () => {
    const dir = tmpDir();
    const s = create(dir, 10);
    fill(s, 5, 3);
    const { size, nextOffset, maxTimestamp } = s;
    const bytes = s.read(10, Infinity, Infinity);
    expect([nextOffset, maxTimestamp]).toEqual([25, T0 + 24]);
    shut(s);
    for (const recover of [true, false]) {
      const again = reopen(dir, 10, recover);
      expect([again.size, again.nextOffset, again.maxTimestamp]).toEqual([size, nextOffset, maxTimestamp]);
      expect(again.read(10, Infinity, Infinity)).toEqual(bytes);
      expect(decodeAll(again.read(10, Infinity, Infinity))).toEqual(expected(10, 25));
      shut(again);
    }
  });

  it('an empty segment reopens empty', () => {
    const dir = tmpDir();
    shut(create(dir, 7));
    const s = reopen(dir, 7, true);
    expect([s.size, s.nextOffset, s.maxTimestamp]).toEqual([0, 7, -1]);
    expect(s.read(7, Infinity, Infinity)).toBeNull();
  });

  describe('read', () => {
    it('starts at the batch holding the offset and stops at endOffset', () => {
      const dir = tmpDir();
      const s = create(dir, 0);
      fill(s, 4, 3); // batches [0..2] [3..5] [6..8] [9..11]
      expect(decodeAll(s.read(4, Infinity, Infinity))).toEqual(expected(3, 12));
      expect(decodeAll(s.read(5, Infinity, 9))).toEqual(expected(3, 9));
      expect(decodeAll(s.read(6, Infinity, 9))).toEqual(expected(6, 9));
      expect(s.read(9, Infinity, 9)).toBeNull();
      expect(s.read(12, Infinity, Infinity)).toBeNull();
    });

    it('adds batches within maxBytes, but always returns the first whatever its size', () => {
      const dir = tmpDir();
      const s = create(dir, 0);
      fill(s, 4);
      const batchBytes = s.size / 4;
      expect(Number.isInteger(batchBytes)).toBe(true);
      expect(decodeAll(s.read(0, 1, Infinity))).toEqual(expected(0, 1));
      expect(decodeAll(s.read(0, batchBytes, Infinity))).toEqual(expected(0, 1));
      expect(decodeAll(s.read(0, 2 * batchBytes - 1, Infinity))).toEqual(expected(0, 1));
      expect(decodeAll(s.read(0, 2 * batchBytes, Infinity))).toEqual(expected(0, 2));
      expect(decodeAll(s.read(1, 3 * batchBytes, Infinity))).toEqual(expected(1, 4));
    });

    it('with a small index interval, every offset reads back from the right batch', () => {
      const dir = tmpDir();
      const s = create(dir, 1000, options(64));
      fill(s, 300, 2);
      shut(s);
      const indexFile = path.join(dir, `${segmentStem(1000)}.index`);
      // Two-record batches are about 80 bytes, so nearly every batch gets an entry: the index is really used.
      expect(fs.statSync(indexFile).size / 8).toBeGreaterThan(100);
      const again = reopen(dir, 1000, false, options(64));
      for (let o = 1000; o < 1600; o++) {
        const got = decodeAll(again.read(o, 1, Infinity));
        const first = o - ((o - 1000) % 2);
        expect(got).toEqual(expected(first, first + 2));
      }
    });
  });

  describe('index files', () => {
    function build(): { dir: string; indexFile: string; index: Buffer; all: [number, string][] } {
      const dir = tmpDir();
      const s = create(dir, 0, options(64));
      fill(s, 200);
      shut(s);
      const indexFile = path.join(dir, `${segmentStem(0)}.index`);
      return { dir, indexFile, index: fs.readFileSync(indexFile), all: expected(0, 200) };
    }

    function readsFromEveryOffset(s: LogSegment): void {
      for (let o = 0; o < 200; o += 7) expect(decodeAll(s.read(o, Infinity, Infinity))).toEqual(expected(o, 200));
    }

    it('rebuilds a missing index when the segment is opened, and writes it when sealed', () => {
      const { dir, indexFile, index } = build();
      expect(index.length).toBeGreaterThan(0);
      fs.rmSync(indexFile);
      const s = reopen(dir, 0, false, options(64));
      readsFromEveryOffset(s);
      shut(s);
      expect(fs.readFileSync(indexFile)).toEqual(index);
    });

    it('rebuilds an index of the wrong length', () => {
      const { dir, indexFile, index } = build();
      fs.writeFileSync(indexFile, Buffer.concat([index, Buffer.from([0xff, 0xff, 0xff])]));
      const s = reopen(dir, 0, false, options(64));
      readsFromEveryOffset(s);
      shut(s);
      expect(fs.readFileSync(indexFile)).toEqual(index);
    });

    it('a closed segment loads its indexes on first use, rebuilding and writing them if missing', () => {
      const { dir, indexFile, index } = build();
      fs.rmSync(indexFile);
      const s = LogSegment.open(dir, 0, false, options(64), { nextOffset: 200 }); // trusted, not the last: nothing read
      opened.add(s);
      expect(fs.existsSync(indexFile)).toBe(false);
      readsFromEveryOffset(s);
      expect(fs.readFileSync(indexFile)).toEqual(index);
    });

    it('keeps reading and appending while the cache closes its descriptor to serve other files', () => {
      const files = smallFileCache();
      const dir = tmpDir();
      const s = create(dir, 0, options(64, new RecordingLogger(), files));
      const others = Array.from({ length: 3 * files.maxOpenFiles }, (_, i) => {
        fs.writeFileSync(path.join(dir, `other-${i}`), 'x');
        return files.file(path.join(dir, `other-${i}`), 'r');
      });
      for (let round = 0; round < 40; round++) {
        fill(s, 5);
        for (const f of others) f.fd(); // every other file once: the segment's descriptor is evicted
        expect(files.stats().open).toBeLessThanOrEqual(files.maxOpenFiles);
        expect(decodeAll(s.read(0, Infinity, Infinity))).toEqual(expected(0, 5 * (round + 1)));
      }
      expect(files.stats().evictions).toBeGreaterThan(40);
      for (const f of others) f.close();
      shut(s);
      expect(decodeAll(reopen(dir, 0, true).read(0, Infinity, Infinity))).toEqual(expected(0, 200));
    });

    it('rebuilds an index whose entries decrease or point past the log', () => {
      const { dir, indexFile, index } = build();
      const bad = Buffer.from(index);
      bad.writeUInt32BE(0xffff_fff0, bad.length - 4); // last entry's position past the end of the log
      fs.writeFileSync(indexFile, bad);
      let s = reopen(dir, 0, false, options(64));
      readsFromEveryOffset(s);
      shut(s);
      expect(fs.readFileSync(indexFile)).toEqual(index);
      const swapped = Buffer.from(index);
      index.copy(swapped, 0, 8, 16);
      index.copy(swapped, 8, 0, 8);
      fs.writeFileSync(indexFile, swapped);
      s = reopen(dir, 0, false, options(64));
      readsFromEveryOffset(s);
      shut(s);
      expect(fs.readFileSync(indexFile)).toEqual(index);
    });

    it('a truncated (shorter but well-formed) index still reads correctly', () => {
      const { dir, indexFile, index } = build();
      fs.writeFileSync(indexFile, index.subarray(0, 16));
      readsFromEveryOffset(reopen(dir, 0, false, options(64)));
    });

    it('recovery rebuilds the index even when the old one looks valid', () => {
      const { dir, indexFile, index } = build();
      fs.writeFileSync(indexFile, index.subarray(0, 16));
      shut(reopen(dir, 0, true, options(64)));
      expect(fs.readFileSync(indexFile)).toEqual(index);
    });
  });

  describe('recovery of the active segment', () => {
    function build(batches = 5): { dir: string; spans: ReturnType<typeof batchSpans>; logFile: string } {
      const dir = tmpDir();
      const s = create(dir, 0, options(64));
      fill(s, batches, 2);
      shut(s);
      const logFile = path.join(dir, `${segmentStem(0)}.log`);
      return { dir, spans: batchSpans(logFile), logFile };
    }

    it('cuts a batch torn in the middle', () => {
      const { dir, spans, logFile } = build();
      const last = spans[4]!;
      fs.truncateSync(logFile, last.position + Math.floor(last.bytes / 2));
      const logger = new RecordingLogger();
      const s = reopen(dir, 0, true, options(64, logger));
      expect([s.size, s.nextOffset, s.maxTimestamp]).toEqual([last.position, 8, T0 + 7]);
      expect(fs.statSync(logFile).size).toBe(last.position);
      expect(decodeAll(s.read(0, Infinity, Infinity))).toEqual(expected(0, 8));
      expect(logger.warns).toHaveLength(1);
      expect(logger.warns[0]!.obj).toMatchObject({ keptBytes: last.position, truncatedBytes: Math.floor(last.bytes / 2) });
      // The next batch goes right after the last whole one, with the next offset.
      fill(s, 1, 2);
      shut(s);
      const again = reopen(dir, 0, true);
      expect(decodeAll(again.read(0, Infinity, Infinity))).toEqual(expected(0, 10));
    });

    it('cuts a header torn before its end', () => {
      const { dir, spans, logFile } = build();
      fs.truncateSync(logFile, spans[3]!.position + 20);
      const s = reopen(dir, 0, true);
      expect([s.size, s.nextOffset]).toEqual([spans[3]!.position, 6]);
    });

    it('cuts from a batch whose CRC does not match, and everything after it', () => {
      const { dir, spans, logFile } = build();
      const data = fs.readFileSync(logFile);
      const victim = spans[3]!;
      data[victim.position + victim.bytes - 3]! ^= 0x01; // inside the last record's value
      fs.writeFileSync(logFile, data);
      const logger = new RecordingLogger();
      const s = reopen(dir, 0, true, options(64, logger));
      expect([s.size, s.nextOffset]).toEqual([victim.position, 6]);
      expect(fs.statSync(logFile).size).toBe(victim.position);
      expect(String((logger.warns[0]!.obj as { reason: string }).reason)).toMatch(/CRC/);
    });

    it('a byte flipped inside the last batch drops only that batch', () => {
      const { dir, spans, logFile } = build();
      const data = fs.readFileSync(logFile);
      const last = spans[4]!;
      data[last.position + 30]! ^= 0x80; // baseTimestamp: covered by the CRC
      fs.writeFileSync(logFile, data);
      const s = reopen(dir, 0, true);
      expect([s.size, s.nextOffset]).toEqual([last.position, 8]);
      expect(decodeAll(s.read(0, Infinity, Infinity))).toEqual(expected(0, 8));
    });

    it.each([
      ['zeros', Buffer.alloc(100)],
      ['a few bytes', Buffer.from([1, 2, 3])],
      ['0xff', Buffer.alloc(200, 0xff)],
      ['a header claiming a huge batch', (() => {
        const b = Buffer.alloc(80);
        b.writeInt32BE(0x7fff_0000, 8);
        return b;
      })()],
    ])('cuts garbage after the last batch: %s', (_, garbage) => {
      const { dir, spans, logFile } = build();
      const end = spans[4]!.position + spans[4]!.bytes;
      fs.appendFileSync(logFile, garbage);
      const s = reopen(dir, 0, true);
      expect([s.size, s.nextOffset]).toEqual([end, 10]);
      expect(fs.statSync(logFile).size).toBe(end);
      expect(decodeAll(s.read(0, Infinity, Infinity))).toEqual(expected(0, 10));
    });

    it('cuts a valid batch whose offsets go back: a copy of an earlier one, or of the last one', () => {
      const { dir, spans, logFile } = build();
      const data = fs.readFileSync(logFile);
      fs.appendFileSync(logFile, data.subarray(spans[1]!.position, spans[1]!.position + spans[1]!.bytes));
      const s = reopen(dir, 0, true);
      expect([s.size, s.nextOffset]).toEqual([data.length, 10]);
      shut(s);

      const single = tmpDir();
      const one = create(single, 0);
      fill(one, 3); // one record per batch: the last batch is offset 2 alone
      shut(one);
      const file = path.join(single, `${segmentStem(0)}.log`);
      const bytes = fs.readFileSync(file);
      const last = batchSpans(file)[2]!;
      fs.appendFileSync(file, bytes.subarray(last.position));
      const again = reopen(single, 0, true);
      expect([again.size, again.nextOffset]).toEqual([bytes.length, 3]);
    });

    it('with a recovery point: a bad batch below it is reported and kept, stepped over, and reads stop at it; one at or after it is cut', () => {
      const { dir, spans, logFile } = build(); // offsets 0-9, two per batch
      const data = fs.readFileSync(logFile);
      data[spans[1]!.position + spans[1]!.bytes - 3]! ^= 0x01; // offsets 2-3, below the recovery point 8
      data[spans[4]!.position + spans[4]!.bytes - 3]! ^= 0x01; // offsets 8-9, after it: a torn tail
      fs.writeFileSync(logFile, data);
      const found: CorruptBatch[] = [];
      const s = LogSegment.open(dir, 0, true, { ...options(64), onCorrupt: (b) => found.push(b) }, { recoveryPoint: 8 });
      opened.add(s);
      expect([s.size, s.nextOffset]).toEqual([spans[4]!.position, 8]);
      expect(found).toEqual([{ segment: logFile, position: spans[1]!.position, offset: 2, reason: expect.stringMatching(/CRC-32C/) as unknown }]);
      expect(decodeAll(s.read(0, Infinity, Infinity))).toEqual(expected(0, 2)); // the answer ends before it
      expect(() => s.read(2, Infinity, Infinity)).toThrow(/byte \d+ of .* \(offsets from 2\) is corrupt on disk/);
      expect(decodeAll(s.read(4, Infinity, Infinity))).toEqual(expected(4, 8)); // what follows it still reads
      expect(s.holdsCorruption).toBe(true);
    });

    it('a torn tail keeps only what lies before it, even when the first batch is torn', () => {
      const { dir, logFile } = build(1);
      fs.truncateSync(logFile, 10);
      const s = reopen(dir, 0, true);
      expect([s.size, s.nextOffset, s.maxTimestamp]).toEqual([0, 0, -1]);
      expect(s.read(0, Infinity, Infinity)).toBeNull();
    });
  });

  it('forEachBatch visits batches in order until told to stop', () => {
    const dir = tmpDir();
    const s = create(dir, 0);
    fill(s, 5, 2);
    const seen: number[] = [];
    s.forEachBatch(s.baseOffset, (h, batch) => {
      seen.push(h.baseOffset);
      expect(batch.length).toBe(LOG_OVERHEAD + h.batchLength);
      return h.baseOffset < 4;
    });
    expect(seen).toEqual([0, 2, 4]);
  });

  it('delete removes both files', () => {
    const dir = tmpDir();
    const s = create(dir, 5);
    fill(s, 2);
    opened.delete(s);
    s.delete();
    expect(fs.readdirSync(dir)).toEqual([]);
  });
});

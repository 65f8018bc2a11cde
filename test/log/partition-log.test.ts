import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/common/clock.js';
import type { PartitionLog } from '../../src/log/segments/partition-log.js';
import { tmpDir } from '../helpers/tmp.js';
import { errorOf } from '../helpers/errors.js';
import {
  activeLogPath, batchSpans, codeOf, logFiles, openLog, pairs, readAll, rec, RecordingLogger, smallFileCache, T0,
} from './log-fixtures.js';

// Logs still open at the end of a test; `shut` closes one early (never twice: fd numbers get reused).
const opened = new Set<PartitionLog>();
afterEach(async () => {
  vi.useRealTimers();
  vi.restoreAllMocks();
  for (const log of opened) await log.close();
  opened.clear();
});

function open(dir: string, overrides: Parameters<typeof openLog>[1] = {}): PartitionLog {
  const log = openLog(dir, overrides);
  opened.add(log);
  return log;
}

async function shut(log: PartitionLog): Promise<void> {
  opened.delete(log);
  await log.close();
}

/** Appends `batches` batches of `perBatch` records; values are `v<offset>`. */
async function fill(log: PartitionLog, batches: number, perBatch = 1): Promise<void> {
  for (let b = 0; b < batches; b++) {
    const base = log.logEndOffset;
    await log.append(Array.from({ length: perBatch }, (_, i) => rec(`v${base + i}`)));
  }
}

const expected = (from: number, to: number): [number, string][] =>
  Array.from({ length: to - from }, (_, i) => [from + i, `v${from + i}`]);

describe('PartitionLog', () => {
  describe('append, close, reopen', () => {
    it('reads back the same records, log end offset and high watermark after reopening', async () => {
      const dir = tmpDir();
      const clock = new ManualClock(T0);
      let log = open(dir, { clock });
      expect([log.logStartOffset, log.logEndOffset, log.highWatermark]).toEqual([0, 0, 0]);
      expect(await log.append([rec('a'), { key: Buffer.from('k'), value: null, headers: [{ key: 'h', value: Buffer.from('x') }] }]))
        .toEqual({ baseOffset: 0, lastOffset: 1 });
      clock.advance(5);
      expect(await log.append([rec('c', 42)])).toEqual({ baseOffset: 2, lastOffset: 2 });
      expect(await log.append([rec('d'), rec('e'), rec('f')])).toEqual({ baseOffset: 3, lastOffset: 5 });
      const before = readAll(log);
      expect(before).toEqual([
        { offset: 0, timestamp: T0, key: null, value: Buffer.from('a'), headers: [] },
        { offset: 1, timestamp: T0, key: Buffer.from('k'), value: null, headers: [{ key: 'h', value: Buffer.from('x') }] },
        { offset: 2, timestamp: 42, key: null, value: Buffer.from('c'), headers: [] },
        { offset: 3, timestamp: T0 + 5, key: null, value: Buffer.from('d'), headers: [] },
        { offset: 4, timestamp: T0 + 5, key: null, value: Buffer.from('e'), headers: [] },
        { offset: 5, timestamp: T0 + 5, key: null, value: Buffer.from('f'), headers: [] },
      ]);
      await shut(log);
      log = open(dir);
      expect([log.logStartOffset, log.logEndOffset, log.highWatermark]).toEqual([0, 6, 6]);
      expect(readAll(log)).toEqual(before);
      expect(await log.append([rec('g')])).toEqual({ baseOffset: 6, lastOffset: 6 });
    });

    it('refuses appends after close with BROKER_CLOSED', async () => {
      const log = open(tmpDir());
      await shut(log);
      await expect(log.append([rec('x')])).rejects.toMatchObject({ code: 'BROKER_CLOSED', context: { topic: 't', partition: 0 } });
    });

    it('close waits for every append already accepted, not only the sync in flight', async () => {
      const dir = tmpDir();
      const log = open(dir);
      const appends = [log.append([rec('a')]), log.append([rec('b')]), log.append([rec('c')])];
      await shut(log);
      const results = await Promise.allSettled(appends);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
      const again = open(dir);
      expect(pairs(readAll(again))).toEqual([[0, 'a'], [1, 'b'], [2, 'c']]);
    });

    it('close waits for appends that need a second sync round, even on a slow disk', async () => {
      // A slow disk: each fdatasync starts only on the next turn of the event loop. The first append's sync
      // is in flight when close() is called; the other two appends need a second sync round after it.
      const realFdatasync = fs.fdatasync;
      vi.spyOn(fs, 'fdatasync').mockImplementation(((fd: number, cb: (err: NodeJS.ErrnoException | null) => void) => {
        setImmediate(() => realFdatasync(fd, cb));
      }) as typeof fs.fdatasync);
      const dir = tmpDir();
      const log = open(dir);
      const appends = [log.append([rec('a')]), log.append([rec('b')]), log.append([rec('c')])];
      await shut(log);
      const results = await Promise.allSettled(appends);
      expect(results.map((r) => (r.status === 'fulfilled' ? r.value : String(r.reason)))).toEqual([
        { baseOffset: 0, lastOffset: 0 }, { baseOffset: 1, lastOffset: 1 }, { baseOffset: 2, lastOffset: 2 },
      ]);
      vi.restoreAllMocks();
      expect(pairs(readAll(open(dir)))).toEqual([[0, 'a'], [1, 'b'], [2, 'c']]);
    });

    it('shows a record to readers only once it is synced', async () => {
      const log = open(tmpDir());
      await fill(log, 1);
      const pending = log.append([rec('v1')]);
      expect([log.logEndOffset, log.highWatermark]).toEqual([2, 1]);
      expect(pairs(log.read(1, { maxBytes: 1 << 20, maxRecords: 10 }))).toEqual([]);
      expect(pairs(log.read(0, { maxBytes: 1 << 20, maxRecords: 10 }))).toEqual([[0, 'v0']]);
      await pending;
      expect(pairs(log.read(1, { maxBytes: 1 << 20, maxRecords: 10 }))).toEqual([[1, 'v1']]);
    });
  });

  describe('read', () => {
    it('at the high watermark returns nothing; above it, or below the start, throws OFFSET_OUT_OF_RANGE', async () => {
      const log = open(tmpDir());
      await fill(log, 3);
      expect(log.read(3, { maxBytes: 1000, maxRecords: 10 })).toEqual([]);
      const err = errorOf(() => log.read(4, { maxBytes: 1000, maxRecords: 10 }));
      expect(err.code).toBe('OFFSET_OUT_OF_RANGE');
      expect(err.context).toMatchObject({ topic: 't', partition: 0, offset: 4, logStartOffset: 0, highWatermark: 3 });
      expect(codeOf(() => log.read(-1, { maxBytes: 1000, maxRecords: 10 }))).toBe('OFFSET_OUT_OF_RANGE');
    });

    it('returns at most maxRecords, cutting inside a batch, from the offset asked (not the batch start)', async () => {
      const log = open(tmpDir());
      await fill(log, 4, 5); // batches [0..4] [5..9] [10..14] [15..19]
      const read = (offset: number, maxRecords: number) => pairs(log.read(offset, { maxBytes: 1 << 20, maxRecords }));
      expect(read(0, 1)).toEqual(expected(0, 1));
      expect(read(2, 2)).toEqual(expected(2, 4));
      expect(read(3, 4)).toEqual(expected(3, 7));
      expect(read(7, 100)).toEqual(expected(7, 20));
      expect(read(19, 100)).toEqual(expected(19, 20));
    });

    it('adds batches within maxBytes, and returns the first batch even when it is larger', async () => {
      const log = open(tmpDir());
      await fill(log, 4, 3);
      const [b0, b1, b2, b3] = batchSpans(activeLogPath(log.dir)).map((s) => s.bytes) as [number, number, number, number];
      const read = (offset: number, maxBytes: number) => pairs(log.read(offset, { maxBytes, maxRecords: 100 }));
      expect(read(0, 1)).toEqual(expected(0, 3));
      expect(read(4, 1)).toEqual(expected(4, 6));
      expect(read(0, b0 + b1 - 1)).toEqual(expected(0, 3));
      expect(read(0, b0 + b1)).toEqual(expected(0, 6));
      expect(read(1, b0 + b1 + b2 + b3)).toEqual(expected(1, 12));
      expect(read(1, b0 + b1 + b2 + b3 - 1)).toEqual(expected(1, 9));
    });
  });

  describe('segments', () => {
    it('rolls to new segments named by their base offset, and reads across them', async () => {
      const dir = tmpDir();
      let log = open(dir, { segmentBytes: 300 });
      await fill(log, 30, 2);
      const files = logFiles(dir);
      expect(files.length).toBeGreaterThan(5);
      for (const f of files) {
        expect(f).toMatch(/^\d{20}\.log$/);
        const spans = batchSpans(path.join(dir, f));
        expect(spans[0]!.baseOffset).toBe(Number(f.slice(0, 20)));
        const bytes = spans.reduce((n, s) => n + s.bytes, 0);
        // A segment passes segmentBytes only when a single batch does.
        expect(bytes <= 300 || spans.length === 1).toBe(true);
      }
      for (let i = 1; i < files.length; i++) {
        const prev = batchSpans(path.join(dir, files[i - 1]!));
        expect(Number(files[i]!.slice(0, 20))).toBe(prev[prev.length - 1]!.lastOffset + 1);
      }
      expect(pairs(readAll(log, 0, 1))).toEqual(expected(0, 60));
      expect(pairs(readAll(log, 0, 7))).toEqual(expected(0, 60));
      // A read that starts on the last record of a segment, and one on the first of the next.
      const second = Number(files[1]!.slice(0, 20));
      expect(pairs(log.read(second - 1, { maxBytes: 1 << 20, maxRecords: 1 }))).toEqual(expected(second - 1, second));
      expect(pairs(log.read(second, { maxBytes: 1 << 20, maxRecords: 1 }))).toEqual(expected(second, second + 1));
      await shut(log);
      log = open(dir, { segmentBytes: 300 });
      expect(logFiles(dir)).toEqual(files);
      expect([log.logEndOffset, log.highWatermark]).toEqual([60, 60]);
      expect(pairs(readAll(log))).toEqual(expected(0, 60));
      await fill(log, 1, 2);
      expect(pairs(readAll(log))).toEqual(expected(0, 62));
    });

    it('puts a batch larger than segmentBytes alone in a segment', async () => {
      const dir = tmpDir();
      const log = open(dir, { segmentBytes: 100 });
      await log.append([rec('x'.repeat(500))]);
      await log.append([rec('y'.repeat(500))]);
      await log.append([rec('z')]);
      expect(logFiles(dir)).toEqual(['00000000000000000000.log', '00000000000000000001.log', '00000000000000000002.log']);
      expect(readAll(log).map((r) => r.value!.length)).toEqual([500, 500, 1]);
    });

    it('with a small index interval, reads from every offset return exactly the right records', async () => {
      const dir = tmpDir();
      const opts = { segmentBytes: 2000, indexIntervalBytes: 64 };
      let log = open(dir, opts);
      for (let b = 0; b < 150; b++) {
        const base = log.logEndOffset;
        await log.append(Array.from({ length: 1 + (b % 3) }, (_, i) => rec(`v${base + i}`)));
      }
      const end = log.logEndOffset;
      const check = () => {
        for (let o = 0; o < end; o++) {
          expect(pairs(log.read(o, { maxBytes: 1, maxRecords: 2 }))[0]).toEqual([o, `v${o}`]);
        }
        expect(pairs(readAll(log, 0, 3))).toEqual(expected(0, end));
      };
      check();
      const files = logFiles(dir);
      expect(files.length).toBeGreaterThan(2);
      const firstIndex = path.join(dir, files[0]!.replace('.log', '.index'));
      const secondIndex = path.join(dir, files[1]!.replace('.log', '.index'));
      const indexBytes = fs.readFileSync(firstIndex);
      expect(indexBytes.length).toBeGreaterThan(8 * 5);

      await shut(log);
      fs.rmSync(firstIndex);
      fs.appendFileSync(secondIndex, Buffer.from([1, 2, 3])); // wrong length
      log = open(dir, opts);
      check();
      expect(fs.readFileSync(firstIndex)).toEqual(indexBytes);
      expect(fs.statSync(secondIndex).size % 8).toBe(0);
    });
  });

  describe('recovery', () => {
    /** A log of several segments whose process died: the active segment was never sealed, its tail never synced by a roll or a clean close. */
    async function build(dir: string, logger: RecordingLogger) {
      const files = smallFileCache();
      const log = open(dir, { segmentBytes: 400, logger, files });
      await fill(log, 20, 2);
      opened.delete(log); // the process dies: no close
      files.closeAll();
      expect(logFiles(dir).length).toBeGreaterThan(2);
      const file = activeLogPath(dir);
      return { file, spans: batchSpans(file) };
    }

    it('cuts a batch torn in the middle of the active segment and continues offsets from the last whole batch', async () => {
      const dir = tmpDir();
      const logger = new RecordingLogger();
      const { file, spans } = await build(dir, logger);
      expect(spans.length).toBeGreaterThan(1);
      const last = spans[spans.length - 1]!;
      expect(last.lastOffset).toBe(39);
      fs.truncateSync(file, last.position + 30);
      const log = open(dir, { segmentBytes: 400, logger });
      expect([log.logEndOffset, log.highWatermark]).toEqual([last.baseOffset, last.baseOffset]);
      expect(fs.statSync(file).size).toBe(last.position);
      expect(pairs(readAll(log))).toEqual(expected(0, last.baseOffset));
      expect(logger.warns).toHaveLength(1);
      expect(logger.warns[0]!.obj).toMatchObject({ segment: file, keptBytes: last.position, truncatedBytes: 30, nextOffset: last.baseOffset });
      expect(await log.append([rec(`v${last.baseOffset}`)])).toEqual({ baseOffset: last.baseOffset, lastOffset: last.baseOffset });
      await shut(log);
      expect(pairs(readAll(open(dir)))).toEqual(expected(0, last.baseOffset + 1));
    });

    it('drops a last batch whose CRC does not match', async () => {
      const dir = tmpDir();
      const { file, spans } = await build(dir, new RecordingLogger());
      const last = spans[spans.length - 1]!;
      const data = fs.readFileSync(file);
      data[last.position + last.bytes - 2]! ^= 0x10;
      fs.writeFileSync(file, data);
      const log = open(dir);
      expect(log.logEndOffset).toBe(last.baseOffset);
      expect(fs.statSync(file).size).toBe(last.position);
      expect(pairs(readAll(log))).toEqual(expected(0, last.baseOffset));
    });

    it('drops garbage after the last batch', async () => {
      const dir = tmpDir();
      const { file, spans } = await build(dir, new RecordingLogger());
      const last = spans[spans.length - 1]!;
      fs.appendFileSync(file, Buffer.alloc(77, 0xab));
      const log = open(dir);
      expect(log.logEndOffset).toBe(40);
      expect(fs.statSync(file).size).toBe(last.position + last.bytes);
      expect(pairs(readAll(log))).toEqual(expected(0, 40));
      expect(await log.append([rec('v40')])).toEqual({ baseOffset: 40, lastOffset: 40 });
    });

    it('an active segment cut to nothing restarts at its base offset, the end of the previous segment', async () => {
      const dir = tmpDir();
      const { file, spans } = await build(dir, new RecordingLogger());
      fs.truncateSync(file, 0);
      const log = open(dir);
      expect(log.logEndOffset).toBe(spans[0]!.baseOffset);
      expect(pairs(readAll(log))).toEqual(expected(0, spans[0]!.baseOffset));
    });

    it('never hands out an offset below the log start offset, even when the tail above it was lost', async () => {
      const dir = tmpDir();
      let log = open(dir);
      await fill(log, 5, 2);
      expect(log.deleteRecordsBefore(10, 'delete-records')).toBe(10);
      await shut(log);
      fs.truncateSync(activeLogPath(dir), 0);
      log = open(dir);
      expect([log.logStartOffset, log.logEndOffset, log.highWatermark]).toEqual([10, 10, 10]);
      expect(await log.append([rec('v10')])).toEqual({ baseOffset: 10, lastOffset: 10 });
      await shut(log);
      log = open(dir);
      expect(pairs(readAll(log))).toEqual([[10, 'v10']]);
    });
  });

  describe('offsetForTimestamp', () => {
    it('finds the first offset whose timestamp is >= t, in offset order, or the high watermark', async () => {
      const log = open(tmpDir(), { segmentBytes: 200 });
      expect(log.offsetForTimestamp(0)).toBe(0);
      // Timestamps by offset: 10 20 30 | 25 40 | 5 | 60 70 (batches), so not monotonic.
      await log.append([rec('a', 10), rec('b', 20), rec('c', 30)]);
      await log.append([rec('d', 25), rec('e', 40)]);
      await log.append([rec('f', 5)]);
      await log.append([rec('g', 60), rec('h', 70)]);
      expect(logFiles(log.dir).length).toBeGreaterThan(1);
      const at = (ts: number[]) => ts.map((t) => log.offsetForTimestamp(t));
      expect(at([-1, 0, 10, 11, 20, 21, 30, 31, 40, 41, 60, 70, 71, 1e15])).toEqual([0, 0, 0, 1, 1, 2, 2, 4, 4, 6, 6, 7, 8, 8]);
    });

    it('ignores records below the log start offset', async () => {
      const log = open(tmpDir());
      await log.append([10, 20, 30, 40, 50].map((t, i) => rec(`v${i}`, t)));
      log.deleteRecordsBefore(2, 'delete-records');
      expect([0, 10, 20, 25, 30, 50, 51].map((t) => log.offsetForTimestamp(t))).toEqual([2, 2, 2, 2, 2, 4, 5]);
    });

    it('ignores records appended but not yet synced', async () => {
      const log = open(tmpDir());
      await log.append([rec('a', 10)]);
      const pending = log.append([rec('b', 20)]);
      expect(log.offsetForTimestamp(15)).toBe(1);
      expect(log.highWatermark).toBe(1);
      await pending;
      expect(log.offsetForTimestamp(15)).toBe(1);
      expect(log.offsetForTimestamp(25)).toBe(2);
    });
  });

  describe('deleteRecordsBefore', () => {
    it('moves the log start offset, deletes whole segments below it, and keeps it across reopen', async () => {
      const dir = tmpDir();
      const logger = new RecordingLogger();
      const clock = new ManualClock(T0);
      let log = open(dir, { segmentBytes: 300, indexIntervalBytes: 64, logger, clock });
      await fill(log, 20, 2);
      const files = logFiles(dir);
      const bases = files.map((f) => Number(f.slice(0, 20)));
      expect(bases.length).toBeGreaterThan(3);
      const cut = bases[2]! + 1; // inside the third segment
      expect(log.deleteRecordsBefore(cut, 'delete-records')).toBe(cut);
      expect(log.logStartOffset).toBe(cut);
      expect(logFiles(dir)).toEqual(files.slice(2));
      // The closed segments left have their index files; the active one's are written when it is sealed.
      expect(fs.readdirSync(dir).filter((f) => f.endsWith('.index'))).toEqual(files.slice(2, -1).map((f) => f.replace('.log', '.index')));
      expect(JSON.parse(fs.readFileSync(path.join(dir, 'log-start-offset.json'), 'utf8'))).toEqual({
        logStartOffset: cut, reason: 'delete-records', updatedAt: new Date(T0).toISOString(),
      });
      expect(logger.infos.at(-1)!.obj).toMatchObject({ previousLogStartOffset: 0, logStartOffset: cut, reason: 'delete-records' });
      expect(pairs(readAll(log))).toEqual(expected(cut, 40));
      const err = errorOf(() => log.read(cut - 1, { maxBytes: 1 << 20, maxRecords: 1 }));
      expect(err.code).toBe('OFFSET_OUT_OF_RANGE');
      expect(err.context).toMatchObject({ offset: cut - 1, logStartOffset: cut, highWatermark: 40 });
      // Not past the start: nothing moves.
      expect(log.deleteRecordsBefore(cut - 1, 'retention-time')).toBe(cut);
      expect(log.deleteRecordsBefore(0, 'retention-time')).toBe(cut);

      await shut(log);
      log = open(dir, { segmentBytes: 300 });
      expect([log.logStartOffset, log.logEndOffset, log.highWatermark]).toEqual([cut, 40, 40]);
      expect(codeOf(() => log.read(cut - 1, { maxBytes: 1 << 20, maxRecords: 1 }))).toBe('OFFSET_OUT_OF_RANGE');
      expect(codeOf(() => log.read(0, { maxBytes: 1 << 20, maxRecords: 1 }))).toBe('OFFSET_OUT_OF_RANGE');
      expect(pairs(readAll(log))).toEqual(expected(cut, 40));
    });

    it('deletes a segment that ends exactly at the new log start offset', async () => {
      const dir = tmpDir();
      const log = open(dir, { segmentBytes: 300 });
      await fill(log, 20, 2);
      const files = logFiles(dir);
      const second = Number(files[1]!.slice(0, 20));
      log.deleteRecordsBefore(second - 1, 'retention-time');
      expect(logFiles(dir)).toEqual(files);
      log.deleteRecordsBefore(second, 'retention-time');
      expect(logFiles(dir)).toEqual(files.slice(1));
      expect(pairs(readAll(log))).toEqual(expected(second, 40));
    });

    it('refuses an offset above the high watermark, and accepts the high watermark itself', async () => {
      const dir = tmpDir();
      let log = open(dir, { segmentBytes: 300 });
      await fill(log, 20, 2);
      const err = errorOf(() => log.deleteRecordsBefore(41, 'delete-records'));
      expect(err.code).toBe('OFFSET_OUT_OF_RANGE');
      expect(err.context).toMatchObject({ offset: 41, logStartOffset: 0, highWatermark: 40 });
      expect(log.logStartOffset).toBe(0);
      expect(log.deleteRecordsBefore(40, 'retention-size')).toBe(40);
      expect(logFiles(dir)).toHaveLength(1);
      expect(log.read(40, { maxBytes: 1000, maxRecords: 10 })).toEqual([]);
      expect(log.offsetForTimestamp(0)).toBe(40);
      await fill(log, 1);
      expect(pairs(readAll(log))).toEqual(expected(40, 41));
      await shut(log);
      log = open(dir, { segmentBytes: 300 });
      expect([log.logStartOffset, log.logEndOffset]).toEqual([40, 41]);
      expect(pairs(readAll(log))).toEqual(expected(40, 41));
    });

    it('refuses an offset above the high watermark even while it is below the log end offset', async () => {
      const log = open(tmpDir());
      await fill(log, 1);
      const pending = log.append([rec('v1')]);
      expect(codeOf(() => log.deleteRecordsBefore(2, 'delete-records'))).toBe('OFFSET_OUT_OF_RANGE');
      await pending;
      expect(log.deleteRecordsBefore(2, 'delete-records')).toBe(2);
    });
  });

  describe('group commit', () => {
    it('a record written while a sync runs becomes visible only after a sync that started after it', async () => {
      // A slow disk: each fdatasync starts only on the next turn of the event loop.
      const realFdatasync = fs.fdatasync;
      vi.spyOn(fs, 'fdatasync').mockImplementation(((fd: number, cb: (err: NodeJS.ErrnoException | null) => void) => {
        setImmediate(() => realFdatasync(fd, cb));
      }) as typeof fs.fdatasync);
      const log = open(tmpDir());
      const first = log.append([rec('v0')]); // starts a sync covering offset 0
      const second = log.append([rec('v1')]); // written while that sync runs
      expect(await first).toEqual({ baseOffset: 0, lastOffset: 0 });
      expect([log.logEndOffset, log.highWatermark]).toEqual([2, 1]);
      expect(pairs(log.read(0, { maxBytes: 1 << 20, maxRecords: 10 }))).toEqual([[0, 'v0']]);
      expect(await second).toEqual({ baseOffset: 1, lastOffset: 1 });
      expect(log.highWatermark).toBe(2);
    });

    it('200 concurrent appends get distinct, increasing offsets in call order, sharing few fdatasyncs', async () => {
      const dir = tmpDir();
      const log = open(dir);
      const syncs = vi.spyOn(fs, 'fdatasync');
      const sizes = Array.from({ length: 200 }, (_, i) => 1 + (i % 3));
      const results = await Promise.all(
        sizes.map((n, i) => log.append(Array.from({ length: n }, (_, j) => rec(`${i}.${j}`)))),
      );
      let next = 0;
      for (const [i, r] of results.entries()) {
        expect(r).toEqual({ baseOffset: next, lastOffset: next + sizes[i]! - 1 });
        next += sizes[i]!;
      }
      expect([log.logEndOffset, log.highWatermark]).toEqual([next, next]);
      expect(syncs.mock.calls.length).toBeGreaterThan(0);
      expect(syncs.mock.calls.length).toBeLessThan(10);
      const want = sizes.flatMap((n, i) => Array.from({ length: n }, (_, j) => `${i}.${j}`));
      expect(readAll(log).map((r) => r.value!.toString())).toEqual(want);
      await shut(log);
      expect(readAll(open(dir)).map((r) => r.value!.toString())).toEqual(want);
    });

    it('concurrent appends that roll segments are all durable and readable', async () => {
      const dir = tmpDir();
      const log = open(dir, { segmentBytes: 500 });
      const results = await Promise.all(Array.from({ length: 100 }, (_, i) => log.append([rec(`v${i}`)])));
      expect(results.map((r) => r.baseOffset)).toEqual(Array.from({ length: 100 }, (_, i) => i));
      expect(logFiles(dir).length).toBeGreaterThan(5);
      await shut(log);
      expect(pairs(readAll(open(dir, { segmentBytes: 500 })))).toEqual(expected(0, 100));
    });
  });

  describe('waitForData', () => {
    it('resolves when a record arrives past the offset', async () => {
      const log = open(tmpDir());
      await fill(log, 2);
      let woken = false;
      const wait = log.waitForData(2, 600_000).then(() => {
        woken = true;
      });
      await new Promise((r) => setImmediate(r));
      expect(woken).toBe(false);
      await fill(log, 1);
      await new Promise((r) => setImmediate(r));
      expect(woken).toBe(true);
      await wait;
    });

    it('resolves at once when data is there, or maxWaitMs is 0, or the log is closed', async () => {
      const log = open(tmpDir());
      await fill(log, 1);
      const state = (p: Promise<void>) => Promise.race([p.then(() => 'resolved'), new Promise((r) => setImmediate(() => r('pending')))]);
      expect(await state(log.waitForData(0, 600_000))).toBe('resolved');
      expect(await state(log.waitForData(1, 0))).toBe('resolved');
      const waiting = log.waitForData(1, 600_000);
      expect(await state(waiting)).toBe('pending');
      await shut(log);
      expect(await state(waiting)).toBe('resolved');
      expect(await state(log.waitForData(1, 600_000))).toBe('resolved');
    });

    it('gives up after maxWaitMs', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      const log = open(tmpDir());
      let woken = false;
      void log.waitForData(0, 500).then(() => {
        woken = true;
      });
      await vi.advanceTimersByTimeAsync(499);
      expect(woken).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      expect(woken).toBe(true);
    });
  });
});

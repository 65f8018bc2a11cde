/** The recovery point checkpoint: what a clean and an unclean reopen read, and that both give the same log. */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { tmpDir } from '../helpers/tmp.js';
import { PartitionLog } from '../../src/log/segments/partition-log.js';
import { batchSpans, logFiles, logOptions, openLog, pairs, readAll, rec, smallFileCache } from './log-fixtures.js';

afterEach(() => vi.restoreAllMocks());

async function buildLog(dir: string): Promise<void> {
  const log = openLog(dir, { segmentBytes: 20_000 });
  for (let b = 0; b < 200; b++) await log.append(Array.from({ length: 5 }, (_, i) => rec(`value-${b}-${i}-`.padEnd(100, 'x'), 1000 + b)));
  await log.close();
}

/** Bytes read from `.log` files while `fn` runs. */
function logBytesRead(fn: () => void): number {
  let bytes = 0;
  const real = fs.readSync;
  vi.spyOn(fs, 'readSync').mockImplementation(((fd: number, buf: NodeJS.ArrayBufferView, ...rest: unknown[]) => {
    const n = (real as (...a: unknown[]) => number)(fd, buf, ...rest);
    bytes += n;
    return n;
  }) as typeof fs.readSync);
  fn();
  vi.restoreAllMocks();
  return bytes;
}

describe('recovery point', () => {
  it('after a clean close, reopening reads only the tail of the last segment', async () => {
    const dir = tmpDir();
    await buildLog(dir);
    expect(logFiles(dir).length).toBeGreaterThan(5);
    const totalBytes = logFiles(dir).reduce((n, f) => n + fs.statSync(path.join(dir, f)).size, 0);
    let log!: ReturnType<typeof openLog>;
    const read = logBytesRead(() => (log = openLog(dir, { segmentBytes: 20_000 })));
    expect(read).toBeLessThan(totalBytes / 10);
    expect(log.logEndOffset).toBe(1000);
    expect(log.offsetForTimestamp(1150)).toBe(750);
    expect(pairs(readAll(log))).toHaveLength(1000);
    await log.close();
  });

  it('after a crash, trusts the segments below the recovery point and recovers the rest', async () => {
    const dir = tmpDir();
    await buildLog(dir);
    // A crash after a roll: the checkpoint unclean at the active segment's base (as the roll wrote it) and the
    // active segment, written since, maybe torn.
    const checkpoint = path.join(dir, 'recovery-point.json');
    const files = logFiles(dir);
    fs.writeFileSync(checkpoint, JSON.stringify({ recoveryPoint: Number(files[files.length - 1]!.slice(0, 20)), clean: false }));
    const active = path.join(dir, files[files.length - 1]!);
    fs.truncateSync(active, fs.statSync(active).size - 7);
    const activeBytes = fs.statSync(active).size;
    let log!: ReturnType<typeof openLog>;
    const read = logBytesRead(() => (log = openLog(dir, { segmentBytes: 20_000 })));
    expect(read).toBeGreaterThanOrEqual(activeBytes - 8192);
    expect(read).toBeLessThan(activeBytes + 300_000);
    expect(log.logEndOffset).toBeLessThan(1000);
    expect(pairs(readAll(log)).map(([o]) => o)).toEqual(Array.from({ length: log.logEndOffset }, (_, i) => i));
    expect(JSON.parse(fs.readFileSync(checkpoint, 'utf8'))).toMatchObject({ clean: false });
    await log.close();
    expect(JSON.parse(fs.readFileSync(checkpoint, 'utf8'))).toEqual({ recoveryPoint: log.logEndOffset, clean: true });
  });

  it('a crash after writes that followed a clean close: either way of opening keeps every whole batch and cuts a torn one', async () => {
    for (const recoverActiveSegment of [false, true]) {
      const dir = tmpDir();
      const options = { segmentBytes: 1 << 30, indexIntervalBytes: 256 };
      let log = openLog(dir, options);
      for (let b = 0; b < 50; b++) await log.append([rec(`before-${b}`.padEnd(100, 'x'))]);
      await log.close(); // clean: index files written, recovery point at 50
      const files = smallFileCache();
      log = openLog(dir, { ...options, files });
      for (let b = 0; b < 50; b++) await log.append([rec(`after-${b}`.padEnd(100, 'x'))]);
      files.closeAll(); // the process dies: no close, nothing sealed
      const file = path.join(dir, logFiles(dir)[0]!);
      const last = batchSpans(file).at(-1)!;
      fs.truncateSync(file, last.position + 20); // the last batch torn
      const read = logBytesRead(() => (log = PartitionLog.open(dir, 't', 0, { ...logOptions(options), recoverActiveSegment })));
      expect(read).toBeGreaterThan(49 * 100); // at least everything appended since the clean close was validated
      expect(pairs(readAll(log)).map(([, v]) => v!.replace(/x+$/, ''))).toEqual([
        ...Array.from({ length: 50 }, (_, b) => `before-${b}`), ...Array.from({ length: 49 }, (_, b) => `after-${b}`),
      ]);
      await log.close();
    }
  });

  it('an unreadable recovery point (torn by a power loss after a clean close) only means recovering every segment', async () => {
    const dir = tmpDir();
    await buildLog(dir);
    fs.writeFileSync(path.join(dir, 'recovery-point.json'), 'garbage{');
    const log = openLog(dir, { segmentBytes: 20_000 });
    expect(pairs(readAll(log)).map(([o]) => o)).toEqual(Array.from({ length: 1000 }, (_, i) => i));
    await log.close();
  });

  it('ends the log at the batch of the last index entry when a cut goes through it (fuzzer counterexample)', async () => {
    const dir = tmpDir();
    let log = openLog(dir, { segmentBytes: 200, indexIntervalBytes: 64 });
    await log.append([rec('')]);
    await log.append([rec('')]);
    await log.close();
    // The checkpoint before the last (a power loss took the last one, which a clean close does not sync): the
    // second batch is above its recovery point.
    fs.writeFileSync(path.join(dir, 'recovery-point.json'), JSON.stringify({ recoveryPoint: 1, clean: true }));
    const file = path.join(dir, logFiles(dir)[0]!);
    const size = fs.statSync(file).size;
    fs.truncateSync(file, size - 10); // through the second batch, which the index points at
    log = openLog(dir, { segmentBytes: 200, indexIntervalBytes: 64 });
    expect(log.logEndOffset).toBe(1);
    expect(pairs(readAll(log))).toEqual([[0, '']]);
    await log.close();
  });
});

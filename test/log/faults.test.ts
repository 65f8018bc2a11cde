/**
 * A partition log on a sick disk (test/helpers/faulty-disk.ts): a short write is completed; a write error or
 * a failed fdatasync stops the partition's writes for good, typed STORAGE_ERROR and logged once, never retried
 * and acknowledged, while reads go on; a full disk refuses the append, stores nothing and lets appends resume
 * once space is free; a byte that rots on disk is reported as CORRUPT_MESSAGE, never served; and after the
 * fault and a restart, recovery gives back exactly what was acknowledged.
 */
import fs from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { PartitionLog } from '../../src/log/segments/partition-log.js';
import { FaultyDisk } from '../helpers/faulty-disk.js';
import { asyncErrorOf, errorOf } from '../helpers/errors.js';
import { tmpDir } from '../helpers/tmp.js';
import { activeLogPath, batchSpans, openLog, pairs, readAll, rec, RecordingLogger } from './log-fixtures.js';
import type { LogOverrides } from './log-fixtures.js';

let disk: FaultyDisk | null = null;
const opened = new Set<PartitionLog>();
afterEach(async () => {
  disk?.uninstall();
  disk = null;
  vi.restoreAllMocks();
  for (const log of opened) await log.close();
  opened.clear();
});

function sickDisk(): FaultyDisk {
  disk = new FaultyDisk();
  return disk;
}

function open(dir: string, overrides: LogOverrides = {}): PartitionLog {
  // recoverActiveSegment: as the log manager opens a partition its journal says was written and not closed cleanly.
  const log = openLog(dir, { recoverActiveSegment: true, ...overrides });
  opened.add(log);
  return log;
}

async function closed(log: PartitionLog): Promise<void> {
  opened.delete(log);
  await log.close();
}

const SEGMENT = /\.log$/;

describe('a partition log on a sick disk', () => {
  it('completes a short write: the append is whole on disk and after a restart', async () => {
    const dir = tmpDir();
    const faults = sickDisk();
    const log = open(dir);
    await log.append([rec('a')]);
    const short = faults.add({ op: 'write', path: SEGMENT, short: true, times: 1 });
    await log.append([rec('bb'), rec('cc')]);
    expect(short.hits).toBe(1);
    expect(pairs(readAll(log))).toEqual([[0, 'a'], [1, 'bb'], [2, 'cc']]);
    await closed(log);
    expect(pairs(readAll(open(dir)))).toEqual([[0, 'a'], [1, 'bb'], [2, 'cc']]);
  });

  it('EIO on write: the partition stops accepting writes, logs it once, serves reads; a restart gives back what was acknowledged', async () => {
    const dir = tmpDir();
    const faults = sickDisk();
    const logger = new RecordingLogger();
    const log = open(dir, { logger });
    await log.append([rec('a'), rec('b')]);
    faults.add({ op: 'write', path: SEGMENT, errno: 'EIO', times: 1 });
    const err = await asyncErrorOf(log.append([rec('lost')]));
    expect(err).toMatchObject({ code: 'STORAGE_ERROR', context: { topic: 't', partition: 0, errno: 'EIO' } });
    expect(err.message).toMatch(/stopped accepting writes.*restart the broker/i);
    expect(log.failure).toBe(err);
    faults.heal(); // the disk works again, but what it dropped is unknown: still no writes
    expect(await asyncErrorOf(log.append([rec('c')]))).toBe(err);
    expect(errorOf(() => log.deleteRecordsBefore(1, 'delete-records'))).toBe(err);
    expect(errorOf(() => log.enforceRetention())).toBe(err);
    expect(logger.errors).toHaveLength(1);
    expect(logger.errors[0]!.obj).toMatchObject({ topic: 't', partition: 0, errno: 'EIO' });
    expect(pairs(readAll(log))).toEqual([[0, 'a'], [1, 'b']]);
    await closed(log);
    const reopened = open(dir);
    expect(pairs(readAll(reopened))).toEqual([[0, 'a'], [1, 'b']]);
    await reopened.append([rec('c')]);
    expect(pairs(readAll(reopened))).toEqual([[0, 'a'], [1, 'b'], [2, 'c']]);
  });

  it('ENOSPC on write: the append is refused with RESOURCE_EXHAUSTED, nothing of it stays, and appends resume once space is free', async () => {
    const dir = tmpDir();
    const faults = sickDisk();
    const log = open(dir);
    await log.append([rec('a')]);
    const sizeBefore = fs.statSync(activeLogPath(dir)).size;
    // As a filling disk does: part of the batch is written, then the rest finds no space.
    faults.add({ op: 'write', path: SEGMENT, short: true, times: 1 });
    faults.add({ op: 'write', path: SEGMENT, errno: 'ENOSPC' });
    const err = await asyncErrorOf(log.append([rec('refused')]));
    expect(err).toMatchObject({ code: 'RESOURCE_EXHAUSTED', context: { resource: 'disk', errno: 'ENOSPC' } });
    expect(fs.statSync(activeLogPath(dir)).size).toBe(sizeBefore);
    expect(log.failure).toBeNull();
    expect(log.logEndOffset).toBe(1);
    faults.heal();
    expect(await log.append([rec('b')])).toMatchObject({ baseOffset: 1 });
    expect(pairs(readAll(log))).toEqual([[0, 'a'], [1, 'b']]);
    await closed(log);
    expect(pairs(readAll(open(dir)))).toEqual([[0, 'a'], [1, 'b']]);
  });

  it('flush policy always, EIO on fdatasync: the append is not acknowledged, the fdatasync never tried again', async () => {
    const dir = tmpDir();
    const faults = sickDisk();
    const logger = new RecordingLogger();
    const log = open(dir, { logger });
    await log.append([rec('a')]);
    const fsync = faults.add({ op: 'fsync', path: SEGMENT, errno: 'EIO' });
    const err = await asyncErrorOf(log.append([rec('b')]));
    expect(err).toMatchObject({ code: 'STORAGE_ERROR', context: { errno: 'EIO' } });
    expect(log.highWatermark).toBe(1); // never visible to readers: not acknowledged
    faults.heal();
    const syncs = vi.spyOn(fs, 'fdatasync');
    expect(await asyncErrorOf(log.append([rec('c')]))).toBe(err);
    expect(await asyncErrorOf(log.flush())).toBe(err);
    expect(syncs).not.toHaveBeenCalled(); // a second fdatasync could succeed over pages the kernel dropped
    expect(fsync.hits).toBe(1);
    expect(logger.errors).toHaveLength(1);
    expect(pairs(readAll(log))).toEqual([[0, 'a']]);
  });

  it('flush policy interval, EIO on the background fdatasync: the partition stops accepting writes', async () => {
    const faults = sickDisk();
    const log = open(tmpDir(), { flushPolicy: 'interval', flushMs: 60_000, flushMessages: 2 });
    faults.add({ op: 'fsync', path: SEGMENT, errno: 'EIO' });
    await log.append([rec('a')]); // acknowledged at once: interval's promise covers only a process crash
    await log.append([rec('b')]); // flushMessages reached: a background fdatasync, which fails
    await vi.waitFor(() => expect(log.failure).not.toBeNull());
    expect(log.failure).toMatchObject({ code: 'STORAGE_ERROR', context: { errno: 'EIO' } });
    expect(await asyncErrorOf(log.append([rec('c')]))).toBe(log.failure);
    expect(pairs(readAll(log))).toEqual([[0, 'a'], [1, 'b']]);
  });

  it('ENOSPC on fdatasync (a failed writeback) stops writes too: unlike a refused write, its data may be gone', async () => {
    const faults = sickDisk();
    const log = open(tmpDir());
    faults.add({ op: 'fsync', path: SEGMENT, errno: 'ENOSPC', times: 1 });
    const err = await asyncErrorOf(log.append([rec('a')]));
    expect(err).toMatchObject({ code: 'STORAGE_ERROR', context: { errno: 'ENOSPC' } });
    faults.heal();
    expect(await asyncErrorOf(log.append([rec('b')]))).toBe(err);
  });

  it('the kernel dropped the pages of a failed fdatasync: after a restart the log holds exactly what was acknowledged', async () => {
    const dir = tmpDir();
    const faults = sickDisk();
    const log = open(dir);
    const acked: string[] = [];
    for (let i = 0; i < 12; i++) {
      await log.append([rec(`v${i}`)]);
      acked.push(`v${i}`);
    }
    // One failed writeback; the next fdatasync would succeed, over the dropped pages.
    faults.add({ op: 'fsync', path: SEGMENT, errno: 'EIO', dropUnsynced: true, times: 1 });
    const sends = ['x1', 'x2', 'y1', 'y2'];
    const outcomes = [
      ...(await Promise.allSettled([log.append([rec('x1')]), log.append([rec('x2')])])),
      ...(await Promise.allSettled([log.append([rec('y1')]), log.append([rec('y2')])])),
    ];
    outcomes.forEach((o, i) => o.status === 'fulfilled' && acked.push(sends[i]!));
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected', 'rejected', 'rejected']);
    await closed(log);
    faults.heal();
    const reopened = open(dir);
    expect(readAll(reopened).map((r) => r.value!.toString())).toEqual(acked);
    expect(reopened.logEndOffset).toBe(acked.length);
  });

  it('a roll whose fdatasync of the full segment fails stops writes; the closed segments stay readable', async () => {
    const dir = tmpDir();
    const faults = sickDisk();
    // interval with no timer due: the roll's fdatasync is the only one.
    const config = { segmentBytes: 200, flushPolicy: 'interval', flushMs: 60_000 } as const;
    const log = open(dir, config);
    await log.append([rec('v0')]);
    const fsync = faults.add({ op: 'fsync', path: SEGMENT, errno: 'EIO' });
    const acked = ['v0'];
    let err: Error | undefined;
    for (let i = 1; err === undefined; i++) {
      err = await log.append([rec(`v${i}`)]).then(() => void acked.push(`v${i}`), (e: Error) => e);
    }
    expect(fsync.hits).toBe(1);
    expect(err).toMatchObject({ code: 'STORAGE_ERROR', message: expect.stringMatching(/stopped accepting writes/) });
    expect(log.failure).toBe(err);
    expect(readAll(log).map((r) => r.value!.toString())).toEqual(acked);
    await closed(log);
    faults.heal();
    expect(readAll(open(dir, config)).map((r) => r.value!.toString())).toEqual(acked);
  });

  describe('a power loss (what the last fdatasync of each file covered survives)', () => {
    const values = (log: PartitionLog) => readAll(log).map((r) => r.value!.toString());

    it('flush policy always: every acknowledged record survives, across segments', async () => {
      const dir = tmpDir();
      const faults = sickDisk();
      const log = open(dir, { segmentBytes: 400 });
      const acked: string[] = [];
      for (let i = 0; i < 30; i++) {
        await log.append([rec(`v${i}`)]);
        acked.push(`v${i}`);
      }
      const after = tmpDir();
      faults.powerLossCopy(dir, after);
      expect(values(open(after, { segmentBytes: 400 }))).toEqual(acked);
    });

    it('flush policy interval: records acknowledged since the last fdatasync are lost, the rest is whole', async () => {
      const dir = tmpDir();
      const faults = sickDisk();
      const config = { flushPolicy: 'interval', flushMs: 60_000 } as const;
      const log = open(dir, config);
      await log.append([rec('a'), rec('b')]);
      await log.append([rec('c')]);
      await log.flush(); // as the flush.ms timer does
      await log.append([rec('d')]);
      await log.append([rec('e')]);
      expect(log.highWatermark).toBe(5); // all five acknowledged and readable
      const after = tmpDir();
      faults.powerLossCopy(dir, after);
      const reopened = open(after, config);
      expect(values(reopened)).toEqual(['a', 'b', 'c']);
      await reopened.append([rec('f')]);
      expect(pairs(readAll(reopened)).at(-1)).toEqual([3, 'f']);
    });

    it('flush policy never: only what a roll or a clean close synced survives', async () => {
      const dir = tmpDir();
      const faults = sickDisk();
      const config = { flushPolicy: 'never', segmentBytes: 400 } as const;
      const log = open(dir, config);
      const acked: string[] = [];
      for (let i = 0; i < 30; i++) {
        await log.append([rec(`v${i}`)]);
        acked.push(`v${i}`);
      }
      const activeBase = Number(activeLogPath(dir).slice(-24, -4));
      expect(activeBase).toBeGreaterThan(0);
      const after = tmpDir();
      faults.powerLossCopy(dir, after);
      expect(values(open(after, config))).toEqual(acked.slice(0, activeBase)); // the sealed segments only
    });
  });

  it('a byte rotted on disk: the fetch answers CORRUPT_MESSAGE naming the segment and offset, logged once; other batches still serve', async () => {
    const dir = tmpDir();
    const logger = new RecordingLogger();
    const log = open(dir, { logger });
    await log.append([rec('a')]);
    await log.append([rec('b')]);
    await log.append([rec('c')]);
    const file = activeLogPath(dir);
    const second = batchSpans(file)[1]!;
    const fd = fs.openSync(file, 'r+');
    const byte = Buffer.alloc(1);
    fs.readSync(fd, byte, 0, 1, second.position + second.bytes - 1);
    fs.writeSync(fd, Buffer.from([byte[0]! ^ 0x10]), 0, 1, second.position + second.bytes - 1);
    fs.closeSync(fd);
    const read = () => log.fetch(1, { maxBytes: 1 << 20, maxRecords: 10 });
    const err = errorOf(read);
    expect(err).toMatchObject({ code: 'CORRUPT_MESSAGE', context: { topic: 't', partition: 0, segment: file, offset: 1, position: second.position } });
    expect(err.message).toMatch(/CRC-32C/);
    // A read from before it answers the batches before it; one from it, the error.
    expect(log.readBatches(0, 1 << 20)).toMatchObject({ nextOffset: 1 });
    expect(errorOf(() => log.readBatches(1, 1 << 20)).code).toBe('CORRUPT_MESSAGE');
    expect(errorOf(read).code).toBe('CORRUPT_MESSAGE');
    expect(logger.errors).toHaveLength(1);
    expect(pairs(log.fetch(0, { maxBytes: 1 << 20, maxRecords: 1 }).records)).toEqual([[0, 'a']]);
    expect(pairs(log.fetch(2, { maxBytes: 1 << 20, maxRecords: 10 }).records)).toEqual([[2, 'c']]);
  });

  it('a bit flipped on its way from the disk (a read that returns bad bytes) is caught the same way', async () => {
    const dir = tmpDir();
    const faults = sickDisk();
    const log = open(dir);
    await log.append([rec('a'), rec('b')]);
    await closed(log);
    const reopened = open(dir); // its reads come from the file now, not a chunk cached by the appends
    faults.add({ op: 'read', path: SEGMENT, corrupt: true });
    expect(errorOf(() => reopened.fetch(0, { maxBytes: 1 << 20, maxRecords: 10 })).code).toBe('CORRUPT_MESSAGE');
    faults.heal();
    expect(pairs(readAll(reopened))).toEqual([[0, 'a'], [1, 'b']]);
  });
});

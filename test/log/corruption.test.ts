/**
 * A corrupt batch below the recovery point (issue 31, point 7): after a clean stop every offset below the recovery
 * point was synced, so a bad batch there is corruption, never a torn tail. Opening or first use cuts nothing, the
 * high watermark stays, the records before it are served, a read of it answers CORRUPT_MESSAGE naming the file,
 * byte and offset, it is reported once (logged, and told to the log manager for its alert), and a produce gets the
 * next offset, never one given before. A torn tail above the recovery point after a crash is still cut.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { PartitionLog } from '../../src/log/segments/partition-log.js';
import type { CorruptBatch } from '../../src/log/partition.js';
import { errorOf } from '../helpers/errors.js';
import { tmpDir } from '../helpers/tmp.js';
import { activeLogPath, batchSpans, logFiles, openLog, pairs, readAll, rec, RecordingLogger, smallFileCache } from './log-fixtures.js';
import type { BatchSpan, LogOverrides } from './log-fixtures.js';

const opened = new Set<PartitionLog>();
afterEach(async () => {
  for (const log of opened) await log.close();
  opened.clear();
});

/** A log whose logger and corrupt-batch reports the test reads. */
function open(dir: string, overrides: LogOverrides = {}): { log: PartitionLog; logger: RecordingLogger; reported: CorruptBatch[] } {
  const logger = new RecordingLogger();
  const reported: CorruptBatch[] = [];
  const log = openLog(dir, { logger, onCorrupt: (batch) => reported.push(batch), ...overrides });
  opened.add(log);
  return { log, logger, reported };
}

async function shut(log: PartitionLog): Promise<void> {
  opened.delete(log);
  await log.close();
}

/** Appends `batches` batches of 10 records each; values are `v<offset>`. */
async function fill(log: PartitionLog, batches: number): Promise<void> {
  for (let b = 0; b < batches; b++) {
    const base = log.logEndOffset;
    await log.append(Array.from({ length: 10 }, (_, i) => rec(`v${base + i}`.padEnd(20, '.'))));
  }
}

const values = (from: number, to: number): [number, string][] => Array.from({ length: to - from }, (_, i) => [from + i, `v${from + i}`.padEnd(20, '.')]);

/** XORs one byte of a file, as a bit rotting on disk. */
function flip(file: string, position: number): void {
  const data = fs.readFileSync(file);
  data[position]! ^= 0x10;
  fs.writeFileSync(file, data);
}

/** Every segment file's size, by name. */
function sizes(dir: string): Record<string, number> {
  return Object.fromEntries(logFiles(dir).map((f) => [f, fs.statSync(path.join(dir, f)).size]));
}

/** Writes `batches` batches of 10 records and stops cleanly: the recovery point is then the log end. */
async function stoppedCleanly(dir: string, batches: number, overrides: LogOverrides = {}): Promise<void> {
  const { log } = open(dir, overrides);
  await fill(log, batches);
  await shut(log);
  expect(JSON.parse(fs.readFileSync(path.join(dir, 'recovery-point.json'), 'utf8'))).toEqual({ recoveryPoint: batches * 10, clean: true });
}

/** Asserts the read of `bad` answers CORRUPT_MESSAGE naming its file, byte and first offset. */
function expectCorrupt(log: PartitionLog, file: string, bad: BatchSpan, offset = bad.baseOffset): void {
  const err = errorOf(() => log.fetch(offset, { maxBytes: 1 << 20, maxRecords: 100 }));
  expect(err).toMatchObject({ code: 'CORRUPT_MESSAGE', context: { topic: 't', partition: 0, segment: file, position: bad.position, offset: bad.baseOffset } });
  expect(err.message).toContain(`byte ${bad.position} of ${file}`);
}

describe('a corrupt batch below the recovery point', () => {
  it('in the last batch of a closed segment, after a clean stop: its first use cuts nothing, keeps the high watermark, serves the records before it, and a produce gets the next offset', async () => {
    const dir = tmpDir();
    await stoppedCleanly(dir, 8, { segmentBytes: 1000 });
    const files = logFiles(dir);
    expect(files.length).toBeGreaterThan(2);
    // A closed segment of less than 4 KiB has no index files: its first use rebuilds them by reading it.
    const file = path.join(dir, files[0]!);
    expect(fs.existsSync(file.replace(/\.log$/, '.index'))).toBe(false);
    const spans = batchSpans(file);
    const bad = spans.at(-1)!;
    flip(file, fs.statSync(file).size - 20);
    const before = sizes(dir);

    const reopened = open(dir, { segmentBytes: 1000 });
    let { log } = reopened;
    expect([log.logEndOffset, log.highWatermark]).toEqual([80, 80]);
    expect(pairs(log.fetch(0, { maxBytes: 1 << 20, maxRecords: 1000 }).records)).toEqual(values(0, bad.baseOffset));
    expectCorrupt(log, file, bad);
    expect(sizes(dir)).toEqual(before);
    expect([log.logEndOffset, log.highWatermark]).toEqual([80, 80]);
    // The records after it, in the next segments, still serve.
    expect(pairs(readAll(log, bad.lastOffset + 1))).toEqual(values(bad.lastOffset + 1, 80));
    expect(reopened.reported).toEqual([{ segment: file, position: bad.position, offset: bad.baseOffset, reason: expect.stringMatching(/CRC-32C/) as unknown }]);
    expect(reopened.logger.errors).toHaveLength(1);
    expect(reopened.logger.warns).toEqual([]);
    expect(await log.append([rec('next')])).toEqual({ baseOffset: 80, lastOffset: 80 });
    await shut(log);

    ({ log } = open(dir, { segmentBytes: 1000 }));
    expect(log.highWatermark).toBe(81);
    expectCorrupt(log, file, bad);
  });

  it('in the last batch of the active segment, after a clean stop (20 bytes from its end): opening cuts nothing, the high watermark stays at the recovery point, and the next produce gets it, in a new segment', async () => {
    const dir = tmpDir();
    await stoppedCleanly(dir, 20);
    const file = activeLogPath(dir);
    const bad = batchSpans(file).at(-1)!;
    expect([bad.baseOffset, bad.lastOffset]).toEqual([190, 199]);
    flip(file, fs.statSync(file).size - 20);
    const before = sizes(dir);

    const reopened = open(dir);
    let { log } = reopened;
    // Opening validates the tail after the last index entry: it finds the batch there, and keeps it.
    expect(reopened.reported).toMatchObject([{ segment: file, position: bad.position, offset: 190 }]);
    expect(sizes(dir)).toEqual(before);
    expect([log.logEndOffset, log.highWatermark]).toEqual([200, 200]);
    expect(pairs(log.fetch(150, { maxBytes: 1 << 20, maxRecords: 1000 }).records)).toEqual(values(150, 190));
    expectCorrupt(log, file, bad);
    expectCorrupt(log, file, bad, 195); // an offset inside it
    expect(reopened.logger.errors).toHaveLength(1);
    expect(reopened.logger.warns).toEqual([]);

    expect(await log.append([rec('v200'.padEnd(20, '.'))])).toEqual({ baseOffset: 200, lastOffset: 200 });
    expect(logFiles(dir)).toHaveLength(2); // appended to a new segment, not after the corrupt batch
    expect(pairs(log.fetch(200, { maxBytes: 1 << 20, maxRecords: 10 }).records)).toEqual(values(200, 201));
    await shut(log);
    ({ log } = open(dir));
    expect([log.logEndOffset, log.highWatermark]).toEqual([201, 201]);
    expect(pairs(readAll(log, 200))).toEqual(values(200, 201));
    expectCorrupt(log, file, bad);
  });

  it('a batch in the middle of the active segment\'s tail whose length field rotted: kept, and the rest of the file with it', async () => {
    const dir = tmpDir();
    await stoppedCleanly(dir, 6);
    const file = activeLogPath(dir);
    const bad = batchSpans(file)[3]!;
    const data = fs.readFileSync(file);
    data.writeInt32BE(0x7fff_0000, bad.position + 8); // batchLength: now past the end of the file
    fs.writeFileSync(file, data);
    const before = sizes(dir);
    const reopened = open(dir);
    const { log } = reopened;
    expect(sizes(dir)).toEqual(before);
    expect([log.logEndOffset, log.highWatermark]).toEqual([60, 60]);
    expect(reopened.reported).toMatchObject([{ segment: file, position: bad.position, offset: 30, reason: expect.stringMatching(/cut off/) as unknown }]);
    expect(pairs(log.fetch(0, { maxBytes: 1 << 20, maxRecords: 1000 }).records)).toEqual(values(0, 30));
    expectCorrupt(log, file, bad, 30);
    expectCorrupt(log, file, bad, 55); // the batches after it are unreachable, never skipped silently
    expect(await log.append([rec('v60'.padEnd(20, '.'))])).toEqual({ baseOffset: 60, lastOffset: 60 });
  });

  it('the active segment lost synced bytes at its end: the log end stays at the recovery point, a read of the lost offsets answers CORRUPT_MESSAGE, no offset is given twice', async () => {
    const dir = tmpDir();
    await stoppedCleanly(dir, 5);
    const file = activeLogPath(dir);
    const lost = batchSpans(file)[3]!;
    fs.truncateSync(file, lost.position); // batches 30-49 gone
    const reopened = open(dir);
    const { log } = reopened;
    expect(fs.statSync(file).size).toBe(lost.position);
    expect([log.logEndOffset, log.highWatermark]).toEqual([50, 50]);
    expect(reopened.reported).toMatchObject([{ segment: file, position: lost.position, offset: 30, reason: expect.stringMatching(/below the recovery point 50/) as unknown }]);
    expect(pairs(log.fetch(0, { maxBytes: 1 << 20, maxRecords: 1000 }).records)).toEqual(values(0, 30));
    expect(errorOf(() => log.fetch(42, { maxBytes: 1 << 20, maxRecords: 10 }))).toMatchObject({ code: 'CORRUPT_MESSAGE', context: { segment: file, position: lost.position, offset: 30 } });
    expect(await log.append([rec('v50'.padEnd(20, '.'))])).toEqual({ baseOffset: 50, lastOffset: 50 });
  });

  it.each([false, true])('after a crash (recoverActiveSegment %s), a torn tail above the recovery point is still cut, a bad batch below it in the same segment kept', async (recoverActiveSegment) => {
    const dir = tmpDir();
    await stoppedCleanly(dir, 5);
    const files = smallFileCache();
    let { log } = open(dir, { files });
    await fill(log, 5);
    opened.delete(log); // the process dies: no close
    files.closeAll();
    const file = activeLogPath(dir);
    const spans = batchSpans(file);
    const below = spans[2]!;
    const torn = spans[8]!;
    fs.truncateSync(file, torn.position + 30); // batch 80-89 torn: written after the recovery point
    flip(file, below.position + below.bytes - 5);

    const reopened = open(dir, { recoverActiveSegment });
    log = reopened.log;
    expect(fs.statSync(file).size).toBe(torn.position);
    expect([log.logEndOffset, log.highWatermark]).toEqual([80, 80]);
    expect(reopened.logger.warns).toMatchObject([{ obj: { segment: file, keptBytes: torn.position, truncatedBytes: 30, recoveryPoint: 50 } }]);
    expect(reopened.reported).toMatchObject([{ segment: file, position: below.position, offset: 20 }]);
    expect(pairs(log.fetch(0, { maxBytes: 1 << 20, maxRecords: 1000 }).records)).toEqual(values(0, 20));
    expectCorrupt(log, file, below);
    expect(pairs(readAll(log, 30))).toEqual(values(30, 80));
    expect(await log.append([rec('v80'.padEnd(20, '.'))])).toEqual({ baseOffset: 80, lastOffset: 80 });
  });

  it.each([4096, 64])('compaction leaves a segment holding a corrupt batch as it is, never serving it rewritten (index interval %i)', async (indexIntervalBytes) => {
    const dir = tmpDir();
    const settings = { segmentBytes: 400, indexIntervalBytes, cleanupPolicy: 'compact' as const, minCompactionLagMs: 0 };
    let { log } = open(dir, settings);
    for (let i = 0; i < 30; i++) await log.append([{ key: Buffer.from(`k${i % 3}`), value: Buffer.from(`value-${i}`) }]);
    await shut(log);
    const file = path.join(dir, logFiles(dir)[0]!);
    const bad = batchSpans(file)[1]!; // key k1, superseded later: a compaction would drop or rewrite it
    flip(file, bad.position + bad.bytes - 2);
    const corrupted = fs.readFileSync(file);
    const reopened = open(dir, settings);
    log = reopened.log;
    await log.compact(true);
    expect(fs.readFileSync(file)).toEqual(corrupted);
    expect(reopened.reported).toMatchObject([{ segment: file, position: bad.position, offset: 1 }]);
    expectCorrupt(log, file, bad);
    expect(logFiles(dir).length).toBeGreaterThan(2); // the other segments compacted
  });
});

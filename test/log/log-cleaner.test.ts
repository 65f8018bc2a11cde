/** Log compaction on a partition log: latest per key, offsets kept, tombstones, lag, crash safety, produce going on. */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/common/clock.js';
import { COMPRESSION_CODECS } from '../../src/protocol/compression.js';
import type { CompressionCodec } from '../../src/protocol/compression.js';
import { batchCompression, encodeBatch, readBatchHeader } from '../../src/protocol/record-batch.js';
import type { RecordInput } from '../../src/protocol/types.js';
import { tmpDir } from '../helpers/tmp.js';
import { batchSpans, logFiles, openLog, readAll, T0 } from './log-fixtures.js';

const kv = (key: string, value: string | null, timestamp?: number): RecordInput => ({
  key: Buffer.from(key), value: value === null ? null : Buffer.from(value), ...(timestamp === undefined ? {} : { timestamp }),
});
const view = (log: ReturnType<typeof openLog>) =>
  readAll(log).map((r) => [r.offset, r.key!.toString(), r.value === null ? null : r.value.toString()]);

/** Every batch of the log's segment files: base offset, codec, whether it has a delete horizon. */
function batchesOf(dir: string): { baseOffset: number; codec: CompressionCodec; horizon: boolean }[] {
  return logFiles(dir).flatMap((f) => {
    const data = fs.readFileSync(path.join(dir, f));
    return batchSpans(path.join(dir, f)).map((span) => {
      const h = readBatchHeader(data, span.position);
      return { baseOffset: h.baseOffset, codec: batchCompression(h), horizon: (h.attributes & 0x40) !== 0 };
    });
  });
}

describe('log compaction', () => {
  it('keeps the latest record per key in closed segments, at its original offset', async () => {
    const clock = new ManualClock(T0);
    const log = openLog(tmpDir(), { clock, segmentBytes: 300, cleanupPolicy: 'compact' });
    const keys = ['a', 'b', 'c', 'd'];
    for (let i = 0; i < 40; i++) await log.append([kv(keys[i % 4]!, `v${i}`)]);
    const stats = await log.compact();
    expect(stats!.segments).toBeGreaterThan(3);
    const records = view(log);
    // Closed segments keep only latest versions; the active segment is untouched.
    const latest = new Map<string, number>();
    for (let i = 0; i < 40; i++) latest.set(keys[i % 4]!, i);
    const activeBase = Number(logFiles(log.dir).at(-1)!.slice(0, 20));
    for (const [offset, key, value] of records) {
      expect(value).toBe(`v${offset}`);
      if ((offset as number) < activeBase) expect(latest.get(key as string)).toBe(offset);
    }
    expect(log.logEndOffset).toBe(40);
    expect((await log.append([kv('a', 'next')])).baseOffset).toBe(40);
    await log.close();
  });

  it('compacts everything on demand (sealing the active segment): one record per key', async () => {
    const log = openLog(tmpDir(), { segmentBytes: 1 << 20, cleanupPolicy: 'compact' });
    for (let i = 0; i < 100; i++) await log.append([kv(`k${i % 7}`, `v${i}`)]);
    const stats = await log.compact(true);
    expect(stats).toMatchObject({ recordsBefore: 100, recordsAfter: 7 });
    expect(view(log)).toEqual([93, 94, 95, 96, 97, 98, 99].map((o) => [o, `k${o % 7}`, `v${o}`]));
    expect(await log.compact(true)).toMatchObject({ recordsBefore: 7, recordsAfter: 7 });
    await log.close();
  });

  it('keeps a latest tombstone for delete.retention.ms, then removes it', async () => {
    const clock = new ManualClock(T0);
    const log = openLog(tmpDir(), { clock, cleanupPolicy: 'compact', deleteRetentionMs: 60_000 });
    await log.append([kv('a', '1'), kv('b', '1'), kv('a', null), kv('c', '1'), kv('c', null), kv('c', '2')]);
    await log.compact(true);
    expect(view(log)).toEqual([[1, 'b', '1'], [2, 'a', null], [5, 'c', '2']]);
    clock.advance(59_999);
    await log.compact(true);
    expect(view(log)).toEqual([[1, 'b', '1'], [2, 'a', null], [5, 'c', '2']]);
    clock.advance(1);
    const stats = await log.compact(true);
    expect(stats!.tombstonesRemoved).toBe(1);
    expect(view(log)).toEqual([[1, 'b', '1'], [5, 'c', '2']]);
    // Record timestamps survive the batch rewrite with a delete horizon.
    expect(readAll(log).map((r) => r.timestamp)).toEqual([T0, T0]);
    await log.close();
  });

  it('leaves segments younger than min.compaction.lag.ms alone', async () => {
    const clock = new ManualClock(T0);
    const log = openLog(tmpDir(), { clock, segmentBytes: 200, cleanupPolicy: 'compact', minCompactionLagMs: 10_000 });
    for (let i = 0; i < 10; i++) await log.append([kv('k', `old${i}`, T0)]);
    for (let i = 0; i < 10; i++) await log.append([kv('k', `young${i}`, T0 + 9_000)]);
    clock.advance(9_500); // old records are 9.5 s old, young ones 0.5 s: neither past the 10 s lag
    expect((await log.compact())!.segments).toBe(0);
    clock.advance(1_000); // old ones are now 10.5 s old
    await log.compact();
    const values = view(log).map(([, , v]) => v as string);
    expect(values.filter((v) => v.startsWith('old'))).toEqual([]);
    expect(values.filter((v) => v.startsWith('young'))).toEqual(Array.from({ length: 10 }, (_, i) => `young${i}`));
    await log.close();
  });

  it('drops the output of a compaction that crashed before its swap, and reads the intact log', async () => {
    const dir = tmpDir();
    let log = openLog(dir, { segmentBytes: 300, cleanupPolicy: 'compact' });
    for (let i = 0; i < 20; i++) await log.append([kv('k', `v${i}`)]);
    await log.close();
    const first = path.join(dir, logFiles(dir)[0]!);
    fs.writeFileSync(`${first}.cleaned`, Buffer.from('half-written'));
    log = openLog(dir, { segmentBytes: 300, cleanupPolicy: 'compact' });
    expect(fs.existsSync(`${first}.cleaned`)).toBe(false);
    expect(view(log).map(([o]) => o)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    await log.close();
  });

  it('lets appends and reads go on while it runs, and survives a reopen', async () => {
    const dir = tmpDir();
    let log = openLog(dir, { segmentBytes: 4096, cleanupPolicy: 'compact' });
    for (let i = 0; i < 3000; i++) await log.append([kv(`k${i % 50}`, `v${i}`)]);
    const pass = log.compact();
    const appended = log.append([kv('k0', 'during')]);
    const read = log.read(log.logStartOffset, { maxBytes: 1 << 20, maxRecords: 5 });
    await Promise.all([pass, appended]);
    expect(read.length).toBeGreaterThan(0);
    const before = view(log);
    await log.close();
    log = openLog(dir, { segmentBytes: 4096, cleanupPolicy: 'compact' });
    expect(view(log)).toEqual(before);
    expect(before.at(-1)).toEqual([3000, 'k0', 'during']);
    await log.close();
  });

  it('compacts gzip batches into gzip batches, tombstones and their horizon included', async () => {
    const clock = new ManualClock(T0);
    const dir = tmpDir();
    const log = openLog(dir, { clock, segmentBytes: 400, cleanupPolicy: 'compact', deleteRetentionMs: 60_000 });
    const keys = ['a', 'b', 'c', 'd', 'e'];
    for (let i = 0; i < 60; i++) {
      const batch = [kv(keys[i % 5]!, `value ${i} `.repeat(8)), kv(keys[(i + 2) % 5]!, i === 58 ? null : `other ${i} `.repeat(8))];
      await log.appendBatch(encodeBatch(batch, 0, clock.now(), undefined, { compression: 'gzip' }));
    }
    expect(batchesOf(dir).every((b) => b.codec === 'gzip')).toBe(true);
    const stats = await log.compact(true);
    expect(stats).toMatchObject({ recordsBefore: 120, recordsAfter: 5 });
    // The latest record of each key, as an uncompressed log keeps them; a's is the tombstone at offset 117.
    const latest = new Map<string, [number, string | null]>();
    for (let i = 0; i < 60; i++) {
      latest.set(keys[i % 5]!, [2 * i, `value ${i} `.repeat(8)]);
      latest.set(keys[(i + 2) % 5]!, [2 * i + 1, i === 58 ? null : `other ${i} `.repeat(8)]);
    }
    const expected = [...latest].map(([k, [o, v]]) => [o, k, v]).sort((x, y) => (x[0] as number) - (y[0] as number));
    expect(view(log)).toEqual(expected);
    const after = batchesOf(dir);
    expect(after.length).toBeGreaterThan(0);
    expect(after.map((b) => b.codec)).toEqual(after.map(() => 'gzip'));
    expect(after.filter((b) => b.horizon).length).toBe(1); // the batch keeping the tombstone
    clock.advance(60_000);
    expect((await log.compact(true))!.tombstonesRemoved).toBe(1);
    expect(view(log)).toEqual(expected.filter(([, , v]) => v !== null));
    expect(batchesOf(dir).every((b) => b.codec === 'gzip' && !b.horizon)).toBe(true);
    await log.close();
  });

  it('keeps each batch\'s own codec in a log that mixes codecs', async () => {
    const dir = tmpDir();
    const log = openLog(dir, { segmentBytes: 1 << 20, cleanupPolicy: 'compact' });
    const codecOfBatch = new Map<number, CompressionCodec>();
    for (let i = 0; i < 40; i++) {
      const compression = COMPRESSION_CODECS[i % COMPRESSION_CODECS.length]!;
      const { baseOffset } = await log.appendBatch(
        encodeBatch([kv(`k${i % 7}`, `v${i}`), kv(`k${(i + 3) % 7}`, `w${i}`)], 0, T0, undefined, { compression }),
      );
      codecOfBatch.set(baseOffset, compression);
    }
    await log.compact(true);
    expect(view(log).length).toBe(7);
    const after = batchesOf(dir);
    for (const b of after) expect(b.codec).toBe(codecOfBatch.get(b.baseOffset));
    expect(new Set(after.map((b) => b.codec)).size).toBeGreaterThan(1);
    await log.close();
  });

  it('does nothing on a topic whose cleanup policy is delete', async () => {
    const log = openLog(tmpDir(), { cleanupPolicy: 'delete' });
    await log.append([kv('a', '1'), kv('a', '2')]);
    expect(await log.compact(true)).toBeNull();
    await log.close();
  });

  it('lets readers move past offsets compaction emptied, at the end of the log and between batches', async () => {
    const clock = new ManualClock(T0);
    const log = openLog(tmpDir(), { clock, cleanupPolicy: 'compact', deleteRetentionMs: 0 });
    await log.append([kv('a', '1')]);
    await log.append([kv('b', '1'), kv('b', '2'), kv('b', '3')]);
    await log.append([kv('c', '1')]);
    await log.append([kv('c', null)]);
    await log.compact(true); // the tombstone gets its horizon (now + 0)
    await log.compact(true); // and goes: offsets 3 and 4 are now empty, at the end
    expect(view(log)).toEqual([[0, 'a', '1'], [3, 'b', '3']]);
    expect(log.highWatermark).toBe(6);
    expect(log.fetch(4, { maxBytes: 1, maxRecords: 10 })).toEqual({ records: [], nextOffset: 6 });
    // A one-byte budget returns one batch at a time: the reader still reaches every record.
    const first = log.fetch(1, { maxBytes: 1, maxRecords: 10 });
    expect([first.records.map((r) => r.offset), first.nextOffset]).toEqual([[3], 4]);
    expect(readAll(log, 0, 1, 1).map((r) => r.offset)).toEqual([0, 3]);
    await log.close();
  });

  it('reads on within a segment past a batch whose surviving records lie before the offset asked for', async () => {
    const log = openLog(tmpDir(), { cleanupPolicy: 'compact' });
    await log.append([kv('p', '0'), kv('q', '1'), kv('q', '2')]);
    await log.append([kv('q', '3')]);
    await log.compact(true);
    expect(view(log)).toEqual([[0, 'p', '0'], [3, 'q', '3']]);
    expect(log.fetch(1, { maxBytes: 1, maxRecords: 10 }).records.map((r) => r.offset)).toEqual([3]);
    await log.close();
  });
});

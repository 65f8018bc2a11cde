/** Retention by time and by size: the exact boundary, the reason, deleted segments, and policies that keep. */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/common/clock.js';
import { tmpDir } from '../helpers/tmp.js';
import { batchSpans, codeOf, logConfig, logFiles, openLog, pairs, readAll, rec, T0 } from './log-fixtures.js';

const SECOND = 1000;

/** 100 records, one per batch, record i stamped T0 + i seconds. */
async function hundredSeconds(dir: string, clock: ManualClock, overrides = {}) {
  const log = openLog(dir, { clock, segmentBytes: 1000, ...overrides });
  for (let i = 0; i < 100; i++) await log.append([rec(`v${i}`, T0 + i * SECOND)]);
  return log;
}

describe('retention', () => {
  it('by time: moves the log start to the first unexpired record, inside a segment, and says why', async () => {
    const dir = tmpDir();
    const clock = new ManualClock(T0 + 100 * SECOND);
    const log = await hundredSeconds(dir, clock, { retentionMs: 50 * SECOND + 500 });
    const segmentsBefore = logFiles(dir).length;
    // Cut-off: T0 + 49.5 s, so records 0..49 expired and 50 is the first kept.
    expect(log.enforceRetention()).toEqual({ previousLogStartOffset: 0, logStartOffset: 50, reason: 'retention-time' });
    expect(log.logStartOffset).toBe(50);
    expect(codeOf(() => log.read(49, { maxBytes: 1 << 20, maxRecords: 10 }))).toBe('OFFSET_OUT_OF_RANGE');
    expect(pairs(readAll(log))[0]).toEqual([50, 'v50']);
    expect(logFiles(dir).length).toBeLessThan(segmentsBefore);
    const checkpoint = JSON.parse(fs.readFileSync(path.join(dir, 'log-start-offset.json'), 'utf8'));
    expect(checkpoint).toMatchObject({ logStartOffset: 50, reason: 'retention-time' });
    expect(log.enforceRetention()).toBeNull();
    clock.advance(10 * SECOND);
    expect(log.enforceRetention()).toMatchObject({ logStartOffset: 60, reason: 'retention-time' });
    await log.close();
  });

  it('by time: when every record expired, nothing is served, the old segments go, and offsets go on', async () => {
    const dir = tmpDir();
    const clock = new ManualClock(T0 + 1000 * SECOND);
    const log = await hundredSeconds(dir, clock, { retentionMs: SECOND });
    expect(log.enforceRetention()).toMatchObject({ logStartOffset: 100 });
    expect(logFiles(dir)).toEqual(['00000000000000000100.log']);
    expect(log.read(100, { maxBytes: 1 << 20, maxRecords: 10 })).toEqual([]);
    expect((await log.append([rec('next', clock.now())])).baseOffset).toBe(100);
    await log.close();
  });

  it('by size: keeps exactly the batches that fit in retentionBytes, counted from the end', async () => {
    const dir = tmpDir();
    const clock = new ManualClock(T0);
    const log = await hundredSeconds(dir, clock, { retentionMs: -1, retentionBytes: 2500 });
    const moved = log.enforceRetention();
    expect(moved?.reason).toBe('retention-size');
    const spans = logFiles(dir).flatMap((f) => batchSpans(path.join(dir, f)));
    const kept = spans.filter((s) => s.baseOffset >= log.logStartOffset);
    const keptBytes = kept.reduce((n, s) => n + s.bytes, 0);
    const firstDropped = spans.filter((s) => s.baseOffset < log.logStartOffset).at(-1);
    expect(keptBytes).toBeLessThanOrEqual(2500);
    if (firstDropped) expect(keptBytes + firstDropped.bytes).toBeGreaterThan(2500);
    expect(pairs(readAll(log)).map(([o]) => o)).toEqual(kept.map((s) => s.baseOffset));
    await log.close();
  });

  it('keeps everything with unlimited settings or a compact-only cleanup policy', async () => {
    const clock = new ManualClock(T0 + 1e9);
    const unlimited = await hundredSeconds(tmpDir(), clock, { retentionMs: -1, retentionBytes: -1 });
    expect(unlimited.enforceRetention()).toBeNull();
    await unlimited.close();
    const compacted = await hundredSeconds(tmpDir(), clock, { retentionMs: 1, cleanupPolicy: 'compact' });
    expect(compacted.enforceRetention()).toBeNull();
    compacted.setConfig(logConfig({ retentionMs: 1, cleanupPolicy: 'compact,delete' }));
    expect(compacted.enforceRetention()).toMatchObject({ logStartOffset: 100 });
    await compacted.close();
  });

  it('rolls the active segment once it is segment.ms old', async () => {
    const dir = tmpDir();
    const clock = new ManualClock(T0);
    const log = openLog(dir, { clock, segmentMs: 60 * SECOND });
    await log.append([rec('a')]);
    clock.advance(59 * SECOND);
    await log.append([rec('b')]);
    expect(logFiles(dir)).toHaveLength(1);
    clock.advance(SECOND);
    await log.append([rec('c')]);
    expect(logFiles(dir)).toEqual(['00000000000000000000.log', '00000000000000000002.log']);
    await log.close();
  });
});

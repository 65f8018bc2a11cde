/** The three flush policies: when an append is acknowledged, when fdatasync runs, what readers see. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { tmpDir } from '../helpers/tmp.js';
import fs from 'node:fs';
import { holdSyncs, logConfig, openLog, pairs, rec, RecordingLogger, smallFileCache } from './log-fixtures.js';

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});


describe('flush policy', () => {
  it('interval: acknowledges before fdatasync, shows the record at once, syncs after flushMs', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const syncs = holdSyncs();
    const log = openLog(tmpDir(), { flushPolicy: 'interval', flushMs: 50 });
    await log.append([rec('a')]);
    await log.append([rec('b')]);
    expect(log.highWatermark).toBe(2);
    expect(pairs(log.read(0, { maxBytes: 1 << 20, maxRecords: 10 }))).toEqual([[0, 'a'], [1, 'b']]);
    expect(syncs.count).toBe(0);
    vi.advanceTimersByTime(49);
    expect(syncs.count).toBe(0);
    vi.advanceTimersByTime(1);
    expect(syncs.count).toBe(1);
    syncs.releaseAll();
    const flushed = log.flush();
    syncs.releaseAll();
    await flushed;
    await log.close();
  });

  it('interval: flushMessages unsynced records start an fdatasync without waiting for the timer', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const syncs = holdSyncs();
    const log = openLog(tmpDir(), { flushPolicy: 'interval', flushMs: 60_000, flushMessages: 3 });
    await log.append([rec('a'), rec('b')]);
    expect(syncs.count).toBe(0);
    await log.append([rec('c')]);
    expect(syncs.count).toBe(1);
    syncs.releaseAll();
    await log.close();
  });

  it('interval: a background flush that found no descriptor is tried again flushMs later', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const files = smallFileCache();
    const logger = new RecordingLogger();
    const log = openLog(tmpDir(), { flushPolicy: 'interval', flushMs: 50, files, logger });
    await log.append([rec('a')]);
    files.closeAll(); // the segment's descriptor went to someone else
    const open = vi.spyOn(fs, 'openSync').mockImplementation(() => {
      throw Object.assign(new Error('EMFILE: too many open files'), { code: 'EMFILE' });
    });
    const syncs = vi.spyOn(fs, 'fdatasync');
    vi.advanceTimersByTime(50);
    await vi.waitFor(() => expect(logger.warns.map((w) => w.msg)).toContain('background fdatasync found no descriptor; trying again'));
    open.mockClear();
    for (const wait of [50, 100, 200]) { // tried again after flushMs, doubling; warned about once
      await vi.advanceTimersByTimeAsync(wait - 1);
      expect(open).not.toHaveBeenCalled();
      await vi.advanceTimersByTimeAsync(1);
      await vi.waitFor(() => expect(open).toHaveBeenCalled());
      open.mockClear();
    }
    expect(logger.warns.filter((w) => w.msg === 'background fdatasync found no descriptor; trying again')).toHaveLength(1);
    expect(syncs).not.toHaveBeenCalled();
    open.mockRestore();
    await vi.advanceTimersByTimeAsync(400);
    await vi.waitFor(() => expect(syncs).toHaveBeenCalledTimes(1));
    await log.close();
  });

  it('never: acknowledges and shows records without any fdatasync until close', async () => {
    const syncs = holdSyncs();
    const log = openLog(tmpDir(), { flushPolicy: 'never' });
    for (let i = 0; i < 20; i++) await log.append([rec(`v${i}`)]);
    expect(log.highWatermark).toBe(20);
    expect(syncs.count).toBe(0);
    const closing = log.close();
    await new Promise((r) => setImmediate(r));
    syncs.releaseAll();
    await closing;
    expect(syncs.count).toBe(1);
  });

  it('always: an append resolves only after the fdatasync covering it', async () => {
    const syncs = holdSyncs();
    const log = openLog(tmpDir(), { flushPolicy: 'always' });
    let done = false;
    const pending = log.append([rec('a')]).then(() => (done = true));
    await new Promise((r) => setImmediate(r));
    expect(done).toBe(false);
    expect(log.highWatermark).toBe(0);
    syncs.releaseAll();
    await pending;
    expect(log.highWatermark).toBe(1);
    await log.close();
  });

  it('switching to always syncs what interval left unsynced', async () => {
    const syncs = holdSyncs();
    const log = openLog(tmpDir(), { flushPolicy: 'interval', flushMs: 60_000 });
    await log.append([rec('a')]);
    expect(syncs.count).toBe(0);
    log.setConfig(logConfig({ flushPolicy: 'always' }));
    expect(syncs.count).toBe(1);
    syncs.releaseAll();
    await log.close();
  });
});

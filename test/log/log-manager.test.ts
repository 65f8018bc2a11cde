import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FileCache } from '../../src/log/segments/file-cache.js';
import { LogManager } from '../../src/log/segments/log-manager.js';
import type { LogOverrides } from './log-fixtures.js';
import { tmpDir } from '../helpers/tmp.js';
import { logConfig, logFiles, logOptions, pairs, readAll, rec, RecordingLogger } from './log-fixtures.js';
import { errorOf } from '../helpers/errors.js';

const managers = new Set<LogManager>();
afterEach(async () => {
  vi.restoreAllMocks();
  for (const m of managers) await m.close();
  managers.clear();
});

function manager(dir: string, overrides: LogOverrides = {}): LogManager {
  const m = new LogManager(dir, logOptions(overrides));
  managers.add(m);
  return m;
}

async function closeManager(m: LogManager): Promise<void> {
  managers.delete(m);
  await m.close();
}

/** A manager with topic `t` of `partitions` partitions created (directories and registration), as the broker does. */
function withTopic(dir: string, partitions: number, overrides: LogOverrides = {}): LogManager {
  const m = manager(dir, overrides);
  m.createTopicLogs('t', partitions);
  m.addTopic('t', partitions, logConfig({ segmentBytes: 1 << 20 }));
  return m;
}

describe('LogManager', () => {
  it('keeps each partition in <dir>/<topic>-<partition>, with the topic\'s segment size', async () => {
    const dir = path.join(tmpDir(), 'logs');
    const m = manager(dir);
    m.createTopicLogs('edits', 3);
    m.addTopic('edits', 3, logConfig({ segmentBytes: 200 }));
    expect(fs.readdirSync(dir).filter((f) => f.startsWith('edits')).sort()).toEqual(['edits-0', 'edits-1', 'edits-2']);
    for (let i = 0; i < 10; i++) await m.get('edits', 1).append([rec(`v${i}`)]);
    expect(logFiles(path.join(dir, 'edits-1')).length).toBeGreaterThan(2);
    const logs = m.partitions('edits');
    expect(logs.map((l) => [l.topic, l.partition])).toEqual([['edits', 0], ['edits', 1], ['edits', 2]]);
    expect(logFiles(path.join(dir, 'edits-0'))).toEqual(['00000000000000000000.log']);
    expect(m.partitions('edits')).toEqual(logs);
  });

  it('reports an unknown topic, a bad partition and a missing partition by code', () => {
    const m = withTopic(tmpDir(), 2);
    expect(errorOf(() => m.get('nope', 0))).toMatchObject({ code: 'UNKNOWN_TOPIC', context: { topic: 'nope' } });
    expect(errorOf(() => m.partitions('nope')).code).toBe('UNKNOWN_TOPIC');
    expect(errorOf(() => m.partitionCount('nope')).code).toBe('UNKNOWN_TOPIC');
    for (const bad of [-1, 1.5, '0', null, undefined]) expect(errorOf(() => m.get('t', bad)).code).toBe('INVALID_REQUEST');
    expect(errorOf(() => m.get('t', 2))).toMatchObject({ code: 'UNKNOWN_PARTITION', context: { topic: 't', partition: 2, partitions: 2 } });
    expect(m.get('t', 1).partition).toBe(1);
  });

  it('close closes every log; a new manager on the same directory finds the data', async () => {
    const dir = tmpDir();
    const m = withTopic(dir, 2);
    const [a, b] = m.partitions('t');
    await a!.append([rec('x')]);
    await b!.append([rec('y'), rec('z')]);
    await closeManager(m);
    await expect(a!.append([rec('late')])).rejects.toMatchObject({ code: 'BROKER_CLOSED' });
    expect(errorOf(() => m.get('t', 0)).code).toBe('UNKNOWN_TOPIC');
    const again = manager(dir);
    again.start([{ name: 't', partitions: 2, config: logConfig({ segmentBytes: 1 << 20 }) }]);
    expect(again.partitions('t').map((l) => pairs(readAll(l)))).toEqual([[[0, 'x']], [[0, 'y'], [1, 'z']]]);
  });

  describe('start-up', () => {
    const layout = (partitions: number) => [{ name: 't', partitions, config: logConfig({ segmentBytes: 1 << 20 }) }];

    it('opens no partition after a clean shutdown, and loads each on first use', async () => {
      const dir = tmpDir();
      const m = withTopic(dir, 50);
      for (let p = 0; p < 50; p += 7) await m.get('t', p).append([rec(`p${p}`)]);
      await closeManager(m);
      expect(fs.readFileSync(path.join(dir, 'unclean-partitions'), 'utf8')).toBe('');
      const again = manager(dir);
      expect(again.start(layout(50))).toEqual({ topics: 1, partitions: 50, recovered: 0, repaired: 0 });
      expect(again.stats()).toEqual({ topics: 1, partitions: 50, loaded: 0 });
      expect(pairs(readAll(again.get('t', 14)))).toEqual([[0, 'p14']]);
      expect(again.stats().loaded).toBe(1);
    });

    it('a byte flipped in a partition after a clean shutdown: its first use cuts nothing and keeps its offsets; the manager keeps the corrupt batch across unloads and tells its listener, of those found before it listened too', async () => {
      const dir = tmpDir();
      const m = withTopic(dir, 2);
      for (let i = 0; i < 20; i++) await m.get('t', 1).append([rec(`v${i}`), rec(`w${i}`)]);
      await m.get('t', 0).append([rec('zero')]);
      await closeManager(m);
      const file = path.join(dir, 't-1', '00000000000000000000.log');
      const data = fs.readFileSync(file);
      data[data.length - 20]! ^= 0x04;
      fs.writeFileSync(file, data);
      const logger = new RecordingLogger();
      const again = manager(dir, { logger });
      expect(again.start(layout(2))).toMatchObject({ recovered: 0 });
      expect(again.corruptBatches('t', 1)).toEqual([]); // not opened yet
      // First use: a background sweep opens the partition (its tail validated) and unloads it after.
      expect(await again.visit('t', (l) => l.highWatermark, () => {})).toEqual([1, 40]);
      expect(again.stats().loaded).toBe(0);
      expect(fs.statSync(file).size).toBe(data.length);
      const found = again.corruptBatches('t', 1);
      expect(found).toMatchObject([{ segment: file, offset: 38 }]);
      const log = again.get('t', 1);
      expect([log.logEndOffset, log.highWatermark]).toEqual([40, 40]);
      expect(errorOf(() => log.fetch(38, { maxBytes: 1 << 20, maxRecords: 10 }))).toMatchObject({
        code: 'CORRUPT_MESSAGE', context: { topic: 't', partition: 1, segment: file, position: found[0]!.position, offset: 38 },
      });
      expect(logger.errors).toHaveLength(2); // once by each opening that found it
      expect(logger.warns.map((w) => w.msg)).not.toContain('truncated a torn tail of the log (written after the recovery point)');
      const told: unknown[] = [];
      again.watchCorruption((topic, partition, batch) => told.push([topic, partition, batch.offset]));
      expect(told).toEqual([['t', 1, 38]]);
      expect(again.corruptBatches('t', 1)).toEqual(found); // reopened and read again: the same batch, once
      expect(again.corruptBatches('t', 0)).toEqual([]);
      expect(await log.append([rec('next')])).toEqual({ baseOffset: 40, lastOffset: 40 });
    });

    it('after a crash recovers exactly the partitions written since the last clean shutdown', async () => {
      const dir = tmpDir();
      const m = withTopic(dir, 20);
      await m.get('t', 3).append([rec('a')]);
      await m.get('t', 11).append([rec('b')]);
      readAll(m.get('t', 5)); // read only: needs no recovery
      expect(fs.readFileSync(path.join(dir, 'unclean-partitions'), 'utf8').split('\n').filter(Boolean).sort()).toEqual(['t-11', 't-3']);
      // A crash: the manager is dropped without closing; its descriptors go with the cache.
      managers.delete(m);
      m.files.closeAll();
      fs.appendFileSync(path.join(dir, 't-3', '00000000000000000000.log'), Buffer.alloc(30, 7)); // a torn tail
      const logger = new RecordingLogger();
      const again = manager(dir, { logger });
      expect(again.start(layout(20))).toMatchObject({ recovered: 2 });
      expect(again.stats().loaded).toBe(2);
      expect(logger.warns.map((w) => w.msg)).toContain('truncated a torn tail of the log (written after the recovery point)');
      expect(pairs(readAll(again.get('t', 3)))).toEqual([[0, 'a']]);
      await closeManager(again);
      expect(fs.readFileSync(path.join(dir, 'unclean-partitions'), 'utf8')).toBe('');
    });

    it('a directory without a journal (an earlier version) reads every recovery point once', async () => {
      const dir = tmpDir();
      const m = withTopic(dir, 6);
      await m.get('t', 4).append([rec('a')]);
      managers.delete(m);
      m.files.closeAll();
      // An earlier version marked every partition it opened unclean, and had no journal.
      fs.writeFileSync(path.join(dir, 't-4', 'recovery-point.json'), JSON.stringify({ recoveryPoint: 0, clean: false }));
      fs.rmSync(path.join(dir, 'unclean-partitions'));
      const again = manager(dir);
      expect(again.start(layout(6))).toMatchObject({ recovered: 1 });
      expect(fs.readFileSync(path.join(dir, 'unclean-partitions'), 'utf8')).toBe('t-4\n');
    });

    it('removes the empty directories of partitions no topic has (a creation cut short), and nothing else', () => {
      const dir = tmpDir();
      for (const name of ['gone-0', 'gone-1', 't-3', 't-0']) fs.mkdirSync(path.join(dir, name));
      fs.mkdirSync(path.join(dir, 'kept-0'));
      fs.writeFileSync(path.join(dir, 'kept-0', '00000000000000000000.log'), 'x');
      const logger = new RecordingLogger();
      manager(dir, { logger }).start(layout(2));
      expect(fs.readdirSync(dir).filter((f) => f !== 'unclean-partitions').sort()).toEqual(['kept-0', 't-0', 't-1']);
      expect(logger.infos.find((i) => i.msg.startsWith('removed the empty directories'))?.obj).toEqual({ removed: 3 });
    });

    it('creates the missing directories of a half-created topic, empty, and says so', async () => {
      const dir = tmpDir();
      const m = withTopic(dir, 4);
      await m.get('t', 1).append([rec('kept')]);
      await closeManager(m);
      // As an earlier version could leave it: the catalog says 10 partitions, the disk holds 4.
      const logger = new RecordingLogger();
      const again = manager(dir, { logger });
      expect(again.start(layout(10))).toMatchObject({ partitions: 10, repaired: 6 });
      expect(logger.warns.filter((w) => w.msg.startsWith('created the missing directory'))).toHaveLength(6);
      expect(again.partitions('t').map((l) => l.highWatermark)).toEqual([0, 1, 0, 0, 0, 0, 0, 0, 0, 0]);
      await again.get('t', 9).append([rec('new')]);
      expect(pairs(readAll(again.get('t', 9)))).toEqual([[0, 'new']]);
    });
  });

  describe('topic creation', () => {
    it('is all or nothing: a failure half-way removes every directory it made', () => {
      const dir = tmpDir();
      const m = manager(dir);
      const real = fs.mkdirSync;
      let calls = 0;
      vi.spyOn(fs, 'mkdirSync').mockImplementation(((p: fs.PathLike, o?: fs.MakeDirectoryOptions) => {
        if (++calls === 40) throw Object.assign(new Error('ENOSPC: no space left on device, mkdir'), { code: 'ENOSPC' });
        return real(p, o);
      }) as typeof fs.mkdirSync);
      const err = errorOf(() => m.createTopicLogs('big', 100));
      expect(err).toMatchObject({ code: 'RESOURCE_EXHAUSTED', context: { topic: 'big', resource: 'disk' } });
      expect(fs.readdirSync(dir).filter((f) => f.startsWith('big-'))).toEqual([]);
      vi.restoreAllMocks();
      m.createTopicLogs('big', 100); // the same creation, retried, succeeds
      expect(fs.readdirSync(dir).filter((f) => f.startsWith('big-'))).toHaveLength(100);
    });

    it('reuses an empty directory left by a creation that crashed, and refuses one holding data', () => {
      const dir = tmpDir();
      const m = manager(dir);
      fs.mkdirSync(path.join(dir, 'x-1'));
      m.createTopicLogs('x', 2);
      fs.mkdirSync(path.join(dir, 'y-1'));
      fs.writeFileSync(path.join(dir, 'y-1', '00000000000000000000.log'), 'data');
      expect(errorOf(() => m.createTopicLogs('y', 3))).toMatchObject({ code: 'TOPIC_ALREADY_EXISTS', context: { topic: 'y', partition: 1 } });
      expect(fs.existsSync(path.join(dir, 'y-0'))).toBe(false);
      expect(fs.existsSync(path.join(dir, 'y-1', '00000000000000000000.log'))).toBe(true);
    });
  });

  it('a background visit unloads again the partitions it opened, and keeps those in use', async () => {
    const dir = tmpDir();
    const m = withTopic(dir, 200);
    await m.get('t', 7).append([rec('x')]);
    const seen = await m.visit('t', (log) => log.highWatermark, () => {});
    expect(seen.filter((hw) => hw === 1)).toHaveLength(1);
    expect(m.stats().loaded).toBe(1);
  });

  it('never holds more descriptors than its budget, over many partitions', async () => {
    const dir = tmpDir();
    const files = new FileCache({ maxOpenFiles: 12 });
    const m = withTopic(dir, 300, { files });
    let peak = 0;
    for (let round = 0; round < 3; round++) {
      for (let p = 0; p < 300; p++) {
        await m.get('t', p).append([rec(`${round}-${p}`)]);
        peak = Math.max(peak, files.stats().open);
      }
    }
    for (let p = 0; p < 300; p++) expect(pairs(readAll(m.get('t', p))).map(([, v]) => v)).toEqual([`0-${p}`, `1-${p}`, `2-${p}`]);
    expect(peak).toBeLessThanOrEqual(12);
    expect(files.stats().evictions).toBeGreaterThan(300);
  });
});

import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LogManager } from '../../src/storage/log-manager.js';
import { tmpDir } from '../helpers/tmp.js';
import { logConfig, logFiles, logOptions, pairs, readAll, rec } from './log-fixtures.js';
import { errorOf } from '../helpers/errors.js';

const managers = new Set<LogManager>();
afterEach(async () => {
  for (const m of managers) await m.close();
  managers.clear();
});

function manager(dir: string): LogManager {
  const m = new LogManager(dir, logOptions());
  managers.add(m);
  return m;
}

describe('LogManager', () => {
  it('keeps each partition in <dir>/<topic>-<partition>, with the topic\'s segment size', async () => {
    const dir = path.join(tmpDir(), 'logs');
    const m = manager(dir);
    const logs = m.openTopic('edits', 3, logConfig({ segmentBytes: 200 }));
    expect(logs.map((l) => [l.topic, l.partition])).toEqual([['edits', 0], ['edits', 1], ['edits', 2]]);
    expect(fs.readdirSync(dir).sort()).toEqual(['edits-0', 'edits-1', 'edits-2']);
    for (let i = 0; i < 10; i++) await m.get('edits', 1).append([rec(`v${i}`)]);
    expect(logFiles(path.join(dir, 'edits-1')).length).toBeGreaterThan(2);
    expect(logFiles(path.join(dir, 'edits-0'))).toEqual(['00000000000000000000.log']);
    expect(m.partitions('edits')).toBe(logs);
  });

  it('reports an unknown topic, a bad partition and a missing partition by code', () => {
    const m = manager(tmpDir());
    m.openTopic('t', 2, logConfig({ segmentBytes: 1 << 20 }));
    expect(errorOf(() => m.get('nope', 0))).toMatchObject({ code: 'UNKNOWN_TOPIC', context: { topic: 'nope' } });
    expect(errorOf(() => m.partitions('nope')).code).toBe('UNKNOWN_TOPIC');
    for (const bad of [-1, 1.5, '0', null, undefined]) expect(errorOf(() => m.get('t', bad)).code).toBe('INVALID_REQUEST');
    expect(errorOf(() => m.get('t', 2))).toMatchObject({ code: 'UNKNOWN_PARTITION', context: { topic: 't', partition: 2, partitions: 2 } });
    expect(m.get('t', 1).partition).toBe(1);
  });

  it('close closes every log; a new manager on the same directory finds the data', async () => {
    const dir = tmpDir();
    const m = manager(dir);
    const [a, b] = m.openTopic('t', 2, logConfig({ segmentBytes: 1 << 20 }));
    await a!.append([rec('x')]);
    await b!.append([rec('y'), rec('z')]);
    managers.delete(m);
    await m.close();
    await expect(a!.append([rec('late')])).rejects.toMatchObject({ code: 'BROKER_CLOSED' });
    expect(errorOf(() => m.get('t', 0)).code).toBe('UNKNOWN_TOPIC');
    const again = manager(dir);
    const logs = again.openTopic('t', 2, logConfig({ segmentBytes: 1 << 20 }));
    expect(logs.map((l) => pairs(readAll(l)))).toEqual([[[0, 'x']], [[0, 'y'], [1, 'z']]]);
  });
});

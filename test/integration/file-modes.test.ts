/**
 * What `onelog serve` creates in its data directory is its owner's alone (docs/security.md, "Files"): every
 * directory 0700, every file 0600 (segments and their indexes, checkpoints, recovery-point.json, the journal, the
 * lock and id files, the SQLite catalog with its -wal and -shm, LMDB's data.mdb and lock.mdb), even under
 * `umask 000`; a data directory an earlier version left 0755 is narrowed at start. Needs the build.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli, startServer } from '../helpers/processes.js';
import type { ServerProcess } from '../helpers/processes.js';
import { tmpDir } from '../helpers/tmp.js';

let server: ServerProcess | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

/** Every entry under `dir` (itself included) whose mode lets anyone but its owner in, as `MODE path`. */
function openToOthers(dir: string): { checked: string[]; open: string[] } {
  const checked: string[] = [];
  const open: string[] = [];
  const walk = (p: string) => {
    const stat = fs.statSync(p);
    checked.push(path.relative(dir, p) || '.');
    const expected = stat.isDirectory() ? 0o700 : 0o600;
    if ((stat.mode & 0o777) !== expected) open.push(`${(stat.mode & 0o777).toString(8)} ${path.relative(dir, p) || '.'}`);
    if (stat.isDirectory()) for (const name of fs.readdirSync(p)) walk(path.join(p, name));
  };
  walk(dir);
  return { checked, open };
}

describe('the modes of the data directory', () => {
  it('every directory is 0700 and every file 0600 after produces, rolls, commits, a checkpoint, compaction and a clean stop, under umask 000', async () => {
    const dataDir = path.join(tmpDir(), 'data');
    server = await startServer(dataDir, { umask: '000' });
    const cli = (args: string[], input?: string) => runCli(server!.url, args, input === undefined ? undefined : Buffer.from(input));
    expect((await cli(['topics', 'create', 'edits', '--partitions', '2', '--config', 'segment.bytes=16384'])).code).toBe(0);
    expect((await cli(['topics', 'create', 'latest', '--partitions', '1', '--config', 'cleanup.policy=compact', '--config', 'segment.bytes=16384'])).code).toBe(0);
    const lines = Array.from({ length: 1000 }, (_, i) => JSON.stringify({ key: `k${i % 5}`, value: `value ${i} ${'x'.repeat(100)}` })).join('\n');
    expect((await cli(['produce', 'edits', '--batch-records', '50'], lines)).code).toBe(0);
    expect((await cli(['produce', 'latest', '--key-field', 'key', '--batch-records', '50'], lines)).code).toBe(0);
    expect((await cli(['consume', 'edits', '--group', 'g', '--from', 'earliest', '--max-records', '300'])).code).toBe(0);
    expect((await cli(['offsets', 'checkpoint', 'save', 'g', 'before'])).code).toBe(0);
    expect((await cli(['topics', 'compact', 'latest'])).code).toBe(0);
    const running = openToOthers(dataDir); // the lock file and SQLite's -wal and -shm are there only while it runs
    expect(await server.stop()).toBe(0);
    server = undefined;
    const stopped = openToOthers(dataDir);

    expect([...running.open, ...stopped.open]).toEqual([]);
    // What the walks must have met, so that a mode nobody set is not missed by a walk of nothing.
    const names = [...running.checked, ...stopped.checked].map((c) => path.basename(c));
    for (const name of ['catalog.sqlite', 'catalog.sqlite-wal', 'catalog.sqlite-shm', 'broker.lock', 'log-owner', 'data.mdb', 'lock.mdb',
      'unclean-partitions', 'recovery-point.json']) {
      expect(names, name).toContain(name);
    }
    for (const ext of ['.log', '.index', '.timeindex']) expect(names.filter((n) => n.endsWith(ext)).length, ext).toBeGreaterThan(2);
    expect(running.checked.map((c) => path.basename(c)).filter((n) => n.startsWith('journal-')), 'the commit journal').toHaveLength(1);
  });

  it('a data directory left open to others by an earlier version is narrowed to 0700 at start', async () => {
    const dataDir = path.join(tmpDir(), 'data');
    fs.mkdirSync(dataDir, { mode: 0o755 });
    fs.chmodSync(dataDir, 0o755);
    server = await startServer(dataDir);
    expect(fs.statSync(dataDir).mode & 0o777).toBe(0o700);
  });
});

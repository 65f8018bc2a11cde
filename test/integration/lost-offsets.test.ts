/**
 * `onelog serve` on a data directory whose offsets file was lost (issue 31, point 8), with real processes: a group
 * whose start policy is latest committed part of a topic; the broker stopped; `offsets/data.mdb` deleted. The next
 * start is refused (exit 1, STORAGE_ERROR naming the store and --allow-missing-offsets) instead of silently starting
 * the group at latest; with the flag it starts, the group's partitions paused with alerts, and a consume skips
 * nothing: it reads nothing until `onelog offsets reset --execute`, and every record from where the reset put it.
 * A fresh data directory with topics and no commits starts as before. Needs the build.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { GroupDescription } from '../../src/protocol/groups.js';
import type { GroupAlert } from '../../src/protocol/monitoring-api.js';
import { runCli, startServer } from '../helpers/processes.js';
import type { ServerProcess } from '../helpers/processes.js';
import { tmpDir } from '../helpers/tmp.js';

const running: ServerProcess[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop('SIGKILL');
});

async function server(dataDir: string, args: string[] = []): Promise<ServerProcess> {
  const s = await startServer(dataDir, { args });
  running.push(s);
  return s;
}

async function stop(s: ServerProcess): Promise<void> {
  running.splice(running.indexOf(s), 1);
  expect(await s.stop('SIGTERM')).toBe(0);
}

async function cli(url: string, args: string[], input?: Buffer): Promise<string> {
  const r = await runCli(url, args, input);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout;
}

const rows = (from: number, to: number) => Buffer.from(Array.from({ length: to - from }, (_, i) => `{"id":"order-${from + i}","n":${from + i}}\n`).join(''));

describe('serve on a lost offsets file', () => {
  it('refuses to start; with --allow-missing-offsets the group is paused with alerts and a consume skips nothing', async () => {
    const dataDir = tmpDir();
    let s = await server(dataDir);
    await cli(s.url, ['topics', 'create', 'orders', '--partitions', '2']);
    // The group starts at latest (an empty topic), then reads 6 of 40 records: 34 are unread when the file goes.
    const first = await runCli(s.url, ['consume', 'orders', '--group', 'billing', '--from', 'latest', '--idle-timeout-ms', '300']);
    expect(first.stdout).toBe('');
    await cli(s.url, ['produce', 'orders', '--key-field', 'id'], rows(0, 40));
    expect((await cli(s.url, ['consume', 'orders', '--group', 'billing', '--max-records', '6'])).trim().split('\n')).toHaveLength(6);
    await stop(s);
    fs.rmSync(path.join(dataDir, 'offsets', 'data.mdb'));

    // Started anyway (the bug), it is stopped after the test like the others.
    const refused = await startServer(dataDir).then((started) => void running.push(started), (err: unknown) => err);
    expect(refused).toBeInstanceOf(Error);
    expect((refused as Error).message).toMatch(/STORAGE_ERROR: the catalog says 1 group\(s\) committed offsets \(billing\) but the offset store \(LMDB in .*offsets\).*--allow-missing-offsets/s);

    s = await server(dataDir, ['--allow-missing-offsets']);
    const described = JSON.parse(await cli(s.url, ['groups', 'describe', 'billing', '--json'])) as GroupDescription;
    expect(described.subscriptions[0]!.partitions.map((p) => [p.paused?.code, p.paused?.reason, p.committedOffset]))
      .toEqual([['OFFSET_OUT_OF_RANGE', 'offsets-lost', null], ['OFFSET_OUT_OF_RANGE', 'offsets-lost', null]]);
    const alerts = JSON.parse(await cli(s.url, ['alerts', 'list', '--active', '--group', 'billing', '--json'])) as GroupAlert[];
    expect(alerts.map((a) => `${a.kind} ${a.topic}/${a.partition}`).sort()).toEqual(['offset-out-of-range orders/0', 'offset-out-of-range orders/1']);
    expect(alerts[0]!.message).toContain('lost them (the broker was started with --allow-missing-offsets)');
    // Paused: nothing read, nothing committed, so no unread record is skipped.
    const paused = await runCli(s.url, ['consume', 'orders', '--group', 'billing', '--idle-timeout-ms', '500']);
    expect(paused.code).toBe(1);
    expect(paused.stdout).toBe('');
    expect(paused.stderr).toContain('OFFSET_OUT_OF_RANGE');
    await cli(s.url, ['produce', 'orders', '--key-field', 'id'], rows(40, 44));
    // A restart without the flag goes on: the partitions stay paused, their alerts open.
    await stop(s);
    s = await server(dataDir);
    expect((JSON.parse(await cli(s.url, ['alerts', 'list', '--active', '--group', 'billing', '--json'])) as GroupAlert[])).toHaveLength(2);

    await cli(s.url, ['offsets', 'reset', 'billing', '--topic', 'orders', '--to-earliest', '--execute']);
    const read = (await cli(s.url, ['consume', 'orders', '--group', 'billing', '--max-records', '44'])).trim().split('\n')
      .map((l) => JSON.parse(l) as { value: string });
    expect(read.map((r) => (JSON.parse(r.value) as { n: number }).n).sort((a, b) => a - b)).toEqual(Array.from({ length: 44 }, (_, i) => i));
  });

  it('a fresh data directory, and one with topics but no commits, start normally without their offsets file', async () => {
    const dataDir = tmpDir();
    let s = await server(dataDir);
    await cli(s.url, ['topics', 'create', 'orders', '--partitions', '2']);
    await cli(s.url, ['produce', 'orders'], rows(0, 3));
    await stop(s);
    fs.rmSync(path.join(dataDir, 'offsets', 'data.mdb'));
    s = await server(dataDir);
    expect(await cli(s.url, ['topics', 'list'])).toContain('orders');
  });
});

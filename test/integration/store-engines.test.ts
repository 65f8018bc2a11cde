/**
 * `onelog serve --catalog postgres://... --offsets redis://...|postgres`: the broker with its catalog in the
 * machine's PostgreSQL (a schema of the test's own) and its offsets in Redis (a key prefix of its own) or in the
 * same PostgreSQL. Real processes: the Wikipedia edits produced and consumed by a group, a SIGKILL, and the
 * group resumes after its last commit, read back from those servers; the data directory holds only the log.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { HttpApi } from '../../src/client/http-api.js';
import { pgSchema, REDIS_URL, redisPrefix } from '../helpers/services.js';
import type { PgSchema } from '../helpers/services.js';
import { runCli, startServer } from '../helpers/processes.js';
import type { ServerProcess } from '../helpers/processes.js';
import { tmpDir } from '../helpers/tmp.js';
import { WIKITICKER } from '../helpers/wikiticker.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function server(dataDir: string, args: string[]): Promise<ServerProcess> {
  const s = await startServer(dataDir, { args });
  cleanups.push(() => s.stop('SIGKILL'));
  return s;
}

async function schema(): Promise<PgSchema> {
  const s = await pgSchema('serve');
  cleanups.push(() => s.drop());
  return s;
}

/** Produces the edits, consumes `records` of them with group `audit`, and answers the group's committed offsets. */
async function produceAndConsume(url: string, records: number): Promise<number[]> {
  expect((await runCli(url, ['topics', 'create', 'edits', '--partitions', '4', '--config', 'retention.ms=-1'])).code).toBe(0);
  const produced = await runCli(url, ['produce', 'edits', '--file', WIKITICKER, '--key-field', 'channel', '--key-field', 'page', '--json']);
  expect(produced.code).toBe(0);
  const consumed = await runCli(url, ['consume', 'edits', '--group', 'audit', '--from', 'earliest', '--max-records', String(records)]);
  expect(consumed.code).toBe(0);
  expect(consumed.stdout.trim().split('\n')).toHaveLength(records);
  return committed(url);
}

async function committed(url: string): Promise<number[]> {
  const d = await new HttpApi(url).describeGroup('audit');
  return d.subscriptions[0]!.partitions.map((p) => p.committedOffset ?? -1);
}

describe('serve with the catalog and the offsets on servers', () => {
  it('catalog in PostgreSQL, offsets in Redis: a group resumes after a SIGKILL from what the servers hold', async () => {
    const pg = await schema();
    const redis = redisPrefix();
    cleanups.push(() => redis.drop());
    const dataDir = tmpDir();
    const args = ['--catalog', pg.url, '--offsets', `${REDIS_URL}?keyPrefix=${encodeURIComponent(redis.prefix)}`];
    let s = await server(dataDir, args);
    const before = await produceAndConsume(s.url, 500);
    expect(before.reduce((a, b) => a + b, 0)).toBe(500);
    await s.stop('SIGKILL');
    // Only the log is in the data directory: the catalog is in PostgreSQL, the offsets in Redis.
    expect(fs.existsSync(path.join(dataDir, 'catalog.sqlite'))).toBe(false);
    expect(fs.existsSync(path.join(dataDir, 'offsets'))).toBe(false);
    const topics = await pg.pool(1).query<{ name: string; partitions: number }>('select name, partitions from topics');
    expect(topics.rows).toEqual([{ name: 'edits', partitions: 4 }]);
    const client = new Redis(REDIS_URL);
    cleanups.push(() => client.quit());
    expect(await client.hlen(`${redis.prefix}offsets:audit`)).toBe(4);

    s = await server(dataDir, args);
    expect(await committed(s.url)).toEqual(before);
    const next = await runCli(s.url, ['consume', 'edits', '--group', 'audit', '--max-records', '8']);
    const offsets = next.stdout.trim().split('\n').map((l) => JSON.parse(l) as { partition: number; offset: number });
    // Each record read is at or after its partition's committed offset: nothing read before is read again.
    for (const r of offsets) expect(r.offset).toBeGreaterThanOrEqual(before[r.partition]!);
    expect((await committed(s.url)).reduce((a, b) => a + b, 0)).toBe(508);
  });

  it('catalog and offsets in one PostgreSQL (--offsets postgres)', async () => {
    const pg = await schema();
    const dataDir = tmpDir();
    const args = ['--catalog', pg.url, '--offsets', 'postgres'];
    let s = await server(dataDir, args);
    const before = await produceAndConsume(s.url, 300);
    await s.stop('SIGKILL');
    const rows = await pg.pool(1).query<{ n: number }>(`select count(*)::int as n from onelog_committed_offsets where group_id = 'audit'`);
    expect(rows.rows[0]!.n).toBe(4);
    s = await server(dataDir, args);
    expect(await committed(s.url)).toEqual(before);
  });

  it('a second broker on the same catalog with another data directory is refused, also on a fresh catalog', async () => {
    const pg = await schema();
    const args = ['--catalog', pg.url, '--offsets', 'postgres'];
    const dataDir = tmpDir();
    const first = await server(dataDir, args);
    // The catalog has no topic yet: the refusal does not rest on the log's partitions.
    await expect(startServer(tmpDir(), { args })).rejects.toThrow(/INVALID_CONFIG.*one broker per catalog/s);
    expect((await runCli(first.url, ['topics', 'create', 't', '--partitions', '1'])).code).toBe(0);
    await expect(startServer(tmpDir(), { args })).rejects.toThrow(/one broker per catalog/);
    // The first broker's own data directory starts again on it.
    await first.stop('SIGTERM');
    const again = await server(dataDir, args);
    expect((await runCli(again.url, ['topics', 'list'])).stdout).toContain('t');
  });

  it('refuses engines it does not know, naming what is allowed, before opening anything', async () => {
    const dataDir = tmpDir();
    await expect(startServer(dataDir, { args: ['--offsets', 'postgres'] })).rejects.toThrow(/--offsets postgres keeps the offsets in the catalog's PostgreSQL/);
    await expect(startServer(dataDir, { args: ['--catalog', 'mysql://root@127.0.0.1/test'] })).rejects.toThrow(/--catalog takes a PostgreSQL URL/);
    await expect(startServer(dataDir, { args: ['--offsets', 'memcached://127.0.0.1'] })).rejects.toThrow(/--offsets takes redis:\/\//);
    expect(fs.readdirSync(dataDir)).toEqual([]);
  });
});

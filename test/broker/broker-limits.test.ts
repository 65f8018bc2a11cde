/**
 * The broker under resource limits: topic creation all or nothing, and running out of descriptors or disk
 * on an append, a fetch or a compaction answers a typed error, stores nothing, and service resumes once the
 * resource frees, without a restart.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { ManualClock } from '../../src/common/clock.js';
import { LmdbOffsetStore } from '../../src/offsets/lmdb-offset-store.js';
import { asyncErrorOf } from '../helpers/errors.js';
import { tmpDir } from '../helpers/tmp.js';

const open: Broker[] = [];
async function broker(dataDir = tmpDir(), maxOpenFiles = 8) {
  const b = await Broker.open({ dataDir, clock: new ManualClock(1_700_000_000_000), maxOpenFiles, compactionIntervalMs: 0, retentionCheckIntervalMs: 0 });
  open.push(b);
  return b;
}
afterEach(async () => {
  vi.restoreAllMocks();
  for (const b of open.splice(0)) await b.close();
});

const rec = (value: string, key: string | null = null) => ({ key: key === null ? null : Buffer.from(key), value: Buffer.from(value) });
const errno = (code: string) => Object.assign(new Error(`${code}: injected`), { code });

/** From now on every open of a file fails as if the process had no descriptor left; returns the undo. */
function outOfDescriptors(): () => void {
  const spy = vi.spyOn(fs, 'openSync').mockImplementation(() => {
    throw errno('EMFILE');
  });
  return () => spy.mockRestore();
}

/** Appends to every other partition so the cache (budget 8) closes the descriptors of `topic`'s first partitions. */
async function churn(b: Broker, topic: string, partitions: number) {
  for (let p = 4; p < partitions; p++) await b.produce({ topic, records: [{ ...rec(`churn-${p}`), partition: p }] });
}

/** A data directory, its broker closed, holding topic `topic` with one record 'kept' in `partition`. */
async function closedWithRecord(topic: string, partitions: number, partition: number): Promise<string> {
  const dataDir = tmpDir();
  const b = await broker(dataDir);
  await b.createTopic({ topic, partitions });
  await b.produce({ topic, records: [{ ...rec('kept'), partition }] });
  await b.close();
  open.splice(open.indexOf(b), 1);
  return dataDir;
}

async function values(b: Broker, topic: string, partition: number) {
  const { partitions } = await b.fetch({ topic, partitions: [{ partition, offset: 0 }], maxRecords: 1000 });
  return partitions[0]!.records.map((r) => r.value!.toString());
}

describe('Broker under resource limits', () => {
  it('creates a topic all or nothing: a failure half-way leaves no topic, no directory; a retry succeeds', async () => {
    const dataDir = tmpDir();
    const b = await broker(dataDir);
    const real = fs.mkdirSync;
    let calls = 0;
    vi.spyOn(fs, 'mkdirSync').mockImplementation(((p: fs.PathLike, o?: fs.MakeDirectoryOptions) => {
      if (++calls === 57) throw errno('ENOSPC');
      return real(p, o);
    }) as typeof fs.mkdirSync);
    const err = await asyncErrorOf(b.createTopic({ topic: 'wide', partitions: 100 }));
    expect(err).toMatchObject({ code: 'RESOURCE_EXHAUSTED', context: { topic: 'wide', resource: 'disk' } });
    vi.restoreAllMocks();
    expect(await b.listTopics()).toEqual([]);
    expect(fs.readdirSync(path.join(dataDir, 'log')).filter((f) => f.startsWith('wide-'))).toEqual([]);
    expect((await asyncErrorOf(b.describeTopic('wide'))).code).toBe('UNKNOWN_TOPIC');
    await b.createTopic({ topic: 'wide', partitions: 100 });
    expect(await b.listTopics()).toEqual([{ topic: 'wide', partitions: 100 }]);
    await b.produce({ topic: 'wide', records: [{ ...rec('x'), partition: 99 }] });
    expect(await values(b, 'wide', 99)).toEqual(['x']);
  });

  it('a data directory with a half-created topic (as an earlier version left it) starts, and the topic is whole', async () => {
    const dataDir = await closedWithRecord('half', 10, 2);
    for (let p = 5; p < 10; p++) fs.rmSync(path.join(dataDir, 'log', `half-${p}`), { recursive: true });
    const b = await broker(dataDir);
    expect((await b.describeTopic('half')).partitions.map((p) => p.highWatermark)).toEqual([0, 0, 1, 0, 0, 0, 0, 0, 0, 0]);
    expect(fs.readdirSync(path.join(dataDir, 'log')).filter((f) => f.startsWith('half-'))).toHaveLength(10);
    await b.produce({ topic: 'half', records: [{ ...rec('new'), partition: 9 }] });
    expect(await values(b, 'half', 9)).toEqual(['new']);
    expect(await values(b, 'half', 2)).toEqual(['kept']);
  });

  it('refuses to start when the whole log directory is missing (a volume not mounted), rather than serving empty partitions', async () => {
    const dataDir = await closedWithRecord('t', 3, 1);
    fs.renameSync(path.join(dataDir, 'log'), path.join(dataDir, 'log-elsewhere'));
    const err = await asyncErrorOf(broker(dataDir));
    expect(err).toMatchObject({ code: 'STORAGE_ERROR', context: { topics: 1 } });
    expect(err.message).toMatch(/log directory .* is missing/);
    expect(fs.existsSync(path.join(dataDir, 'log'))).toBe(false);
    fs.mkdirSync(path.join(dataDir, 'log')); // the mount point of a volume not mounted
    expect(await asyncErrorOf(broker(dataDir))).toMatchObject({ code: 'STORAGE_ERROR', message: expect.stringMatching(/holds none of their partitions/) });
    fs.rmdirSync(path.join(dataDir, 'log'));
    fs.renameSync(path.join(dataDir, 'log-elsewhere'), path.join(dataDir, 'log'));
    expect(await values(await broker(dataDir), 't', 1)).toEqual(['kept']);
  });

  it('a member joining a topic of many partitions gets their start positions committed in one write', async () => {
    const b = await broker();
    await b.createTopic({ topic: 'wide', partitions: 500 });
    await b.produce({ topic: 'wide', records: [{ ...rec('x'), partition: 7 }] });
    const commit = vi.spyOn(LmdbOffsetStore.prototype, 'commit');
    const joined = await b.joinGroup({ groupId: 'g', topics: ['wide'], startPolicy: 'latest' });
    expect(joined.assignment).toHaveLength(500);
    expect(joined.assignment.find((a) => a.partition === 7)).toMatchObject({ offset: 1 });
    expect(commit).toHaveBeenCalledTimes(1);
    const described = await b.describeGroup('g');
    expect(described.subscriptions[0]!.partitions.map((p) => p.committedOffset)).toEqual(Array.from({ length: 500 }, (_, p) => (p === 7 ? 1 : 0)));
  });

  it('a topic the catalog refuses leaves no directory behind', async () => {
    const dataDir = tmpDir();
    const b = await broker(dataDir);
    await b.createTopic({ topic: 't', partitions: 2 });
    const [first, second] = await Promise.allSettled([
      b.createTopic({ topic: 'u', partitions: 3 }), b.createTopic({ topic: 'u', partitions: 5 }),
    ]);
    expect(first.status).toBe('fulfilled');
    expect(second).toMatchObject({ status: 'rejected', reason: { code: 'TOPIC_ALREADY_EXISTS' } });
    expect(fs.readdirSync(path.join(dataDir, 'log')).filter((f) => f.startsWith('u-')).sort()).toEqual(['u-0', 'u-1', 'u-2']);
  });

  it('out of descriptors on an append: RESOURCE_EXHAUSTED, nothing stored; then normal service', async () => {
    const b = await broker();
    // flush.policy always: no flush timer reopens partition 0's segment at a moment of its own (on a loaded
    // machine, late in the churn), which left it cached and the append below served (a flake seen in CI).
    await b.createTopic({ topic: 't', partitions: 20, config: { flushPolicy: 'always' } });
    await b.produce({ topic: 't', records: [{ ...rec('a'), partition: 0 }] });
    await churn(b, 't', 20);
    const restore = outOfDescriptors();
    const err = await asyncErrorOf(b.produce({ topic: 't', records: [{ ...rec('lost'), partition: 0 }] }));
    expect(err).toMatchObject({ code: 'RESOURCE_EXHAUSTED', retriable: true, context: { resource: 'open-files' } });
    restore();
    const { offsets } = await b.produce({ topic: 't', records: [{ ...rec('b'), partition: 0 }] });
    expect(offsets).toEqual([{ partition: 0, offset: 1 }]);
    expect(await values(b, 't', 0)).toEqual(['a', 'b']);
  });

  it('a full disk on an append: RESOURCE_EXHAUSTED naming the disk, nothing stored; then normal service', async () => {
    const b = await broker();
    await b.createTopic({ topic: 't', partitions: 1 });
    await b.produce({ topic: 't', records: [rec('a')] });
    const real = fs.writeSync;
    let calls = 0;
    const spy = vi.spyOn(fs, 'writeSync').mockImplementation(((fd: number, buf: Buffer, off?: number, len?: number, pos?: number) => {
      // As a filling disk does: a short write first, then ENOSPC for the rest.
      if (++calls === 1) return real(fd, buf, off, Math.floor((len ?? buf.length) / 2), pos);
      throw errno('ENOSPC');
    }) as unknown as typeof fs.writeSync);
    const err = await asyncErrorOf(b.produce({ topic: 't', records: [rec('lost'.repeat(100))] }));
    expect(err).toMatchObject({ code: 'RESOURCE_EXHAUSTED', context: { resource: 'disk', topic: 't', partition: 0 } });
    spy.mockRestore();
    await b.produce({ topic: 't', records: [rec('b')] });
    expect(await values(b, 't', 0)).toEqual(['a', 'b']);
    expect((await b.describeTopic('t')).partitions[0]!.highWatermark).toBe(2);
  });

  it('a disk without room for a whole request refuses it before writing anything', async () => {
    const b = await broker();
    await b.createTopic({ topic: 't', partitions: 3 });
    const real = fs.statfsSync;
    const spy = vi.spyOn(fs, 'statfsSync').mockImplementation(((p: fs.PathLike) => ({ ...real(p), bavail: 100, bsize: 4096 })) as typeof fs.statfsSync);
    const records = [0, 1, 2].map((partition) => ({ ...rec('x'.repeat(200)), partition }));
    const err = await asyncErrorOf(b.produce({ topic: 't', records }));
    expect(err).toMatchObject({ code: 'RESOURCE_EXHAUSTED', context: { topic: 't', resource: 'disk', freeBytes: 409_600 } });
    expect((await b.describeTopic('t')).partitions.map((p) => p.highWatermark)).toEqual([0, 0, 0]);
    spy.mockRestore();
    await b.produce({ topic: 't', records });
    expect((await b.describeTopic('t')).partitions.map((p) => p.highWatermark)).toEqual([1, 1, 1]);
  });

  it('a partition failing after others stored their records says what was stored', async () => {
    const b = await broker();
    await b.createTopic({ topic: 't', partitions: 4 });
    const real = fs.writeSync;
    let writes = 0;
    vi.spyOn(fs, 'writeSync').mockImplementation(((...args: Parameters<typeof fs.writeSync>) => {
      if (++writes === 2) throw errno('ENOSPC'); // the second partition's batch meets a full disk
      return (real as (...a: unknown[]) => number)(...args);
    }) as typeof fs.writeSync);
    const err = await asyncErrorOf(b.produce({ topic: 't', records: [0, 1, 2, 3].map((partition) => ({ ...rec(`p${partition}`), partition })) }));
    vi.restoreAllMocks();
    expect(err).toMatchObject({ code: 'RESOURCE_EXHAUSTED', context: { partition: 1, resource: 'disk' } });
    expect(err.context.stored).toEqual([0, 2, 3].map((partition) => ({ partition, baseOffset: 0, lastOffset: 0 })));
    expect(err.message).toMatch(/for partitions 0, 2, 3 were stored/);
    expect((await b.describeTopic('t')).partitions.map((p) => p.highWatermark)).toEqual([1, 0, 1, 1]);
  });

  it('out of descriptors on a fetch: the partition answers RESOURCE_EXHAUSTED; then normal service', async () => {
    const b = await broker();
    // Synced as it is appended: no background flush touches partition 1's file after the churn evicted it.
    await b.createTopic({ topic: 't', partitions: 20, config: { flushPolicy: 'always' } });
    await b.produce({ topic: 't', records: [{ ...rec('a'), partition: 1 }, { ...rec('b'), partition: 1 }] });
    await churn(b, 't', 20);
    const restore = outOfDescriptors();
    const { partitions } = await b.fetch({ topic: 't', partitions: [{ partition: 1, offset: 0 }] });
    expect(partitions[0]).toMatchObject({ records: [], nextOffset: 0, error: { code: 'RESOURCE_EXHAUSTED', resource: 'open-files' } });
    restore();
    expect(await values(b, 't', 1)).toEqual(['a', 'b']);
  });

  it('out of descriptors during a compaction: RESOURCE_EXHAUSTED, the log intact; the next pass compacts', async () => {
    const b = await broker();
    await b.createTopic({ topic: 'c', partitions: 1, config: { cleanupPolicy: 'compact' } });
    for (let i = 0; i < 30; i++) await b.produce({ topic: 'c', records: [rec(`v${i}`, `k${i % 3}`)] });
    const restore = outOfDescriptors();
    const err = await asyncErrorOf(b.compactTopic({ topic: 'c' }));
    expect(err).toMatchObject({ code: 'RESOURCE_EXHAUSTED', context: { topic: 'c', partition: 0, resource: 'open-files' } });
    restore();
    expect(await values(b, 'c', 0)).toHaveLength(30);
    const result = await b.compactTopic({ topic: 'c' });
    expect(result.partitions[0]).toMatchObject({ recordsBefore: 30, recordsAfter: 3 });
    expect(await values(b, 'c', 0)).toEqual(['v27', 'v28', 'v29']);
  });
});

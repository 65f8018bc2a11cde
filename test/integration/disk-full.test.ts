/**
 * A real full disk: `onelog serve` on a tmpfs of a few MiB (mounted here; needs root, as CI runs), fed the
 * Wikipedia edits until the file system is full. The broker refuses the produce that does not fit with
 * RESOURCE_EXHAUSTED before writing any of it, keeps serving reads, takes produces again once the file system
 * is grown (no restart), and after SIGKILL and a restart holds exactly the acknowledged records.
 * Needs the build (`npm run build`, done by `npm test`).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpApi, Producer } from '../../src/client/index.js';
import { LmdbOffsetStore } from '../../src/offsets/lmdb-offset-store.js';
import { OnelogError } from '../../src/protocol/errors.js';
import { startServer } from '../helpers/processes.js';
import type { ServerProcess } from '../helpers/processes.js';
import { tmpDir } from '../helpers/tmp.js';
import { readEdits } from '../helpers/wikiticker.js';

const mounts: string[] = [];
const running: ServerProcess[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop('SIGKILL');
  // -l: an LMDB environment left open after its failed write (see LmdbOffsetStore.close) keeps the mount busy.
  for (const dir of mounts.splice(0)) execFileSync('umount', ['-l', dir]);
});

/** A tmpfs of `size` (as mount's size=, e.g. '12m') mounted on a fresh directory. */
function smallFileSystem(size: string): string {
  const dir = tmpDir();
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir]);
  mounts.push(dir);
  return dir;
}

/** Writes `file` until the file system is full. */
function fillUp(file: string): void {
  const fd = fs.openSync(file, 'w');
  const chunk = Buffer.alloc(64 * 1024);
  try {
    for (;;) fs.writeSync(fd, chunk);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  } finally {
    fs.closeSync(fd);
  }
}

async function serve(dataDir: string): Promise<ServerProcess> {
  const server = await startServer(dataDir);
  running.push(server);
  return server;
}

/** Every value of partition 0 from offset 0 up to the high watermark. */
async function readValues(api: HttpApi, topic: string): Promise<string[]> {
  const out: string[] = [];
  for (let offset = 0; ;) {
    const { partitions } = await api.fetch({ topic, partitions: [{ partition: 0, offset }], maxRecords: 5000, maxBytes: 8 << 20 });
    const p = partitions[0]!;
    out.push(...p.records.map((r) => r.value!.toString()));
    if (p.nextOffset >= p.highWatermark || p.records.length === 0) return out;
    offset = p.nextOffset;
  }
}

const edits = readEdits();
const BATCH = 400;

describe('a real full disk', () => {
  it.runIf(process.getuid?.() === 0)('refuses the produce that does not fit, serves reads, resumes once the disk grows, and loses nothing acknowledged to SIGKILL', async () => {
    const mount = smallFileSystem('12m');
    const dataDir = path.join(mount, 'data');
    let server = await serve(dataDir);
    let api = new HttpApi(server.url);
    await api.createTopic({ topic: 'edits', partitions: 1, config: { retentionMs: -1 } });
    const producer = new Producer(api);
    const acked: string[] = [];
    let next = 0;
    const sendBatch = async () => {
      const batch = Array.from({ length: BATCH }, () => edits[next++ % edits.length]!);
      await producer.send({ topic: 'edits', messages: batch.map((e) => ({ key: e.key, value: e.value, timestamp: e.timestamp, partition: 0 })) });
      acked.push(...batch.map((e) => e.value));
    };
    let refusal: unknown;
    for (let i = 0; i < 200 && refusal === undefined; i++) await sendBatch().catch((err: unknown) => (refusal = err));
    expect(refusal).toBeInstanceOf(OnelogError);
    expect(refusal).toMatchObject({ code: 'RESOURCE_EXHAUSTED', context: { resource: 'disk' } });
    expect(acked.length).toBeGreaterThan(5 * BATCH); // several MiB went in first
    const before = fs.statfsSync(mount);
    expect(before.bavail * before.bsize).toBeLessThan(2 << 20);

    // Nothing of the refused batch was stored; everything acknowledged reads back; it stays refused while full,
    // and so does a commit (refused before LMDB meets the full disk, which would stop every write).
    expect(await readValues(api, 'edits')).toEqual(acked);
    next -= BATCH;
    await expect(sendBatch()).rejects.toMatchObject({ code: 'RESOURCE_EXHAUSTED' });
    // Something else fills the rest of the disk: even a commit finds no room.
    const commit = (offset: number) => api.commitOffsets({ groupId: 'readers', topic: 'edits', offsets: [{ partition: 0, offset }] });
    await commit(100);
    fillUp(path.join(mount, 'filler'));
    await expect(commit(200)).rejects.toMatchObject({ code: 'RESOURCE_EXHAUSTED', context: { resource: 'disk' } });

    // Space freed (the filler gone, the file system grown): the same broker takes produces and commits again.
    fs.rmSync(path.join(mount, 'filler'));
    execFileSync('mount', ['-o', 'remount,size=32m', mount]);
    next -= BATCH;
    for (let i = 0; i < 5; i++) await sendBatch();
    expect(await readValues(api, 'edits')).toEqual(acked);
    await commit(acked.length);

    server.proc.kill('SIGKILL');
    await new Promise((resolve) => server.proc.once('exit', resolve));
    running.splice(running.indexOf(server), 1);
    server = await serve(dataDir);
    api = new HttpApi(server.url);
    expect(await readValues(api, 'edits')).toEqual(acked);
    const { subscriptions } = await api.describeGroup('readers');
    expect(subscriptions[0]!.partitions[0]).toMatchObject({ committedOffset: acked.length, highWatermark: acked.length });
  });

  it.runIf(process.getuid?.() === 0)('LMDB on a full disk: the commit is refused with its cause, and nothing is left unhandled to end the process', async () => {
    // A commit journal of one record per file (removed once LMDB holds it), so that LMDB's file fills the disk.
    const store = LmdbOffsetStore.open(path.join(smallFileSystem('1m'), 'offsets'), { journal: { maxFileBytes: 1 } });
    try {
      let err: unknown;
      for (let i = 0; i < 10_000 && err === undefined; i++) {
        const offsets = Array.from({ length: 50 }, (_, p) => ({ topic: `topic-${i}`, partition: p, offset: i, metadata: 'm'.repeat(200) }));
        await store.commit('g', offsets, 0, undefined, { sync: true }).catch((e: unknown) => (err = e));
      }
      // LMDB reports the full file system as an I/O error (the broker checks for room before it writes); or the
      // journal's write, before LMDB's, meets it as ENOSPC.
      expect([{ message: /^LMDB write failed: /, code: 'EIO' }, { message: /^ENOSPC/, code: 'ENOSPC' }].some(({ message, code }) =>
        message.test((err as Error).message) && (err as { code?: string }).code === code), String(err)).toBe(true);
      expect(await store.get('g', 'topic-0', 0)).toMatchObject({ offset: 0 });
    } finally {
      await store.close();
    }
  });
});

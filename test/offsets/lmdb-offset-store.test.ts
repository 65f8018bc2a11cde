import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { open } from 'lmdb';
import { describe, expect, it, vi } from 'vitest';
import { CommitJournal } from '../../src/offsets/commit-journal.js';
import { LmdbOffsetStore } from '../../src/offsets/lmdb-offset-store.js';
import { tmpDir } from '../helpers/tmp.js';
import { offsetStoreContract } from './offset-store.contract.js';

offsetStoreContract('LMDB', () => {
  const dir = tmpDir('onelog-lmdb-');
  return { open: async () => LmdbOffsetStore.open(dir) };
});

/** The key layout: `utf8(groupId) 0x00 utf8(topic) 0x00 uint32be(partition)`. */
function key(groupId: string, topic: string, partition: number): Buffer {
  const tail = Buffer.alloc(4);
  tail.writeUInt32BE(partition);
  return Buffer.concat([Buffer.from(groupId), Buffer.from([0]), Buffer.from(topic), Buffer.from([0]), tail]);
}

/** A stored value of format 1 without metadata. */
function rawValue(offset: number, commitTimestamp: number): Buffer {
  const value = Buffer.alloc(17);
  value[0] = 1;
  value.writeDoubleLE(offset, 1);
  value.writeDoubleLE(commitTimestamp, 9);
  return value;
}

/** Every raw entry of one sub-database, read with lmdb directly (the store closed). */
function rawEntries(dir: string, name: string): Array<{ key: Buffer; value: Buffer }> {
  const root = open({ path: dir, name: undefined });
  try {
    const db = root.openDB<Buffer, Buffer>({ name, keyEncoding: 'binary', encoding: 'binary' });
    return [...db.getRange()].map(({ key, value }) => ({ key: Buffer.from(key), value: Buffer.from(value) }));
  } finally {
    void root.close();
  }
}

/**
 * Runs `body` (the text of an async function of `store`, an LmdbOffsetStore over `dir`) in a child process that
 * SIGKILLs itself as soon as `body` ends.
 */
async function killedAfter(dir: string, body: string): Promise<void> {
  const storeModule = path.resolve(import.meta.dirname, '../../src/offsets/lmdb-offset-store.ts');
  const script = `
    const { LmdbOffsetStore } = await import(${JSON.stringify(storeModule)});
    const store = LmdbOffsetStore.open(${JSON.stringify(dir)});
    await (async (store) => { ${body} })(store);
    process.kill(process.pid, 'SIGKILL');`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: path.resolve(import.meta.dirname, '../..'), stdio: ['ignore', 'inherit', 'inherit'],
  });
  const signal = await new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, s) => resolve(s)));
  expect(signal).toBe('SIGKILL');
}

/** The commit journal's files in `dir`. */
const journalFiles = (dir: string) => fs.readdirSync(dir).filter((f) => f.startsWith('journal-'));

describe('LmdbOffsetStore', () => {
  it('keeps its data in the directory it is given', async () => {
    const dir = tmpDir('onelog-lmdb-');
    const store = LmdbOffsetStore.open(dir);
    await store.commit('g', [{ topic: 't', partition: 0, offset: 1 }], 0);
    await store.close();
    expect(fs.readdirSync(dir).sort()).toEqual(['data.mdb', 'lock.mdb']);
  });

  it('stores the documented key and value bytes (value format 1)', async () => {
    const dir = tmpDir('onelog-lmdb-');
    const store = LmdbOffsetStore.open(dir);
    await store.commit('gü', [{ topic: 't', partition: 258, offset: 2 ** 53 - 1, metadata: 'm✓' }], 1_700_000_000_123);
    await store.close();
    const value = Buffer.alloc(17);
    value[0] = 1;
    value.writeDoubleLE(2 ** 53 - 1, 1);
    value.writeDoubleLE(1_700_000_000_123, 9);
    expect(rawEntries(dir, 'committed-offsets-v1')).toEqual([
      { key: Buffer.from([0x67, 0xc3, 0xbc, 0, 0x74, 0, 0, 0, 1, 2]), value: Buffer.concat([value, Buffer.from('m✓')]) },
    ]);
  });

  it('moves offsets an older build kept as MessagePack objects into the binary format, once', async () => {
    const dir = tmpDir('onelog-lmdb-');
    // What the MessagePack-valued store (before value format 1) wrote.
    const root = open({ path: dir, name: undefined });
    const legacy = root.openDB<object, Buffer>({ name: 'committed-offsets', keyEncoding: 'binary' });
    await legacy.put(key('g', 't', 0), { offset: 5, metadata: 'ünï ✓', commitTimestamp: 10 });
    await legacy.put(key('g', 't', 1), { offset: Number.MAX_SAFE_INTEGER, metadata: '', commitTimestamp: 11 });
    await legacy.put(key('h', 'u', 3), { offset: 7, metadata: 'x', commitTimestamp: 12 });
    await root.close();

    const store = LmdbOffsetStore.open(dir);
    expect(await store.list('g')).toEqual([
      { topic: 't', partition: 0, offset: 5, metadata: 'ünï ✓', commitTimestamp: 10 },
      { topic: 't', partition: 1, offset: Number.MAX_SAFE_INTEGER, metadata: '', commitTimestamp: 11 },
    ]);
    expect(await store.get('h', 'u', 3)).toEqual({ offset: 7, metadata: 'x', commitTimestamp: 12 });
    await store.commit('g', [{ topic: 't', partition: 0, offset: 6 }], 20);
    await store.close();

    // The legacy sub-database is gone, so opening again migrates nothing over newer commits.
    const check = open({ path: dir, name: undefined });
    expect(check.openDB({ name: 'committed-offsets', create: false } as { name: string })).toBeUndefined();
    await check.close();
    const again = LmdbOffsetStore.open(dir);
    expect(await again.get('g', 't', 0)).toEqual({ offset: 6, metadata: '', commitTimestamp: 20 });
    await again.close();
  });

  it('refuses a commit with a bad partition or an oversized key whole, before writing any of it', async () => {
    const dir = tmpDir('onelog-lmdb-');
    const store = LmdbOffsetStore.open(dir);
    for (const bad of [-1, 2 ** 32, 1.5, Number.NaN]) {
      await expect(store.commit('g', [{ topic: 't', partition: 0, offset: 1 }, { topic: 't', partition: bad, offset: 2 }], 0)).rejects.toThrow(RangeError);
    }
    await expect(store.commit('g', [{ topic: 't', partition: 0, offset: 1 }, { topic: 'é'.repeat(1000), partition: 0, offset: 2 }], 0)).rejects.toThrow(/bytes, over/);
    expect(await store.list('g')).toEqual([]);
    // Long keys under the limit are fine, ASCII or not.
    await store.commit('g', [{ topic: 'a'.repeat(1900), partition: 1, offset: 3 }, { topic: 'é'.repeat(900), partition: 2, offset: 4 }], 0);
    expect((await store.list('g')).map((o) => o.offset)).toEqual([3, 4]);
    await store.close();
  });

  it('a commit acknowledged before LMDB wrote it is kept by the journal through a SIGKILL, and replayed once', async () => {
    const dir = tmpDir('onelog-lmdb-');
    await killedAfter(dir, `
      await store.commit('g', [{ topic: 't', partition: 0, offset: 3 }], 1, { generationId: 0 }, { sync: true });
      // LMDB's writes from here on never happen (the crash comes first, however soon LMDB would have written).
      store.db.batch = () => new Promise(() => {});
      await store.commit('g', [{ topic: 't', partition: 0, offset: 7, metadata: 'm' }, { topic: 'u', partition: 1, offset: 9 }], 2);
      // Read back from memory before LMDB holds it.
      const got = await store.get('g', 't', 0);
      if (got.offset !== 7) throw new Error('pending commit not read back: ' + JSON.stringify(got));`);
    // LMDB alone has the synced commit: the other is only in the journal.
    expect(rawEntries(dir, 'committed-offsets-v1').map((e) => e.value.readDoubleLE(1))).toEqual([3]);
    expect(journalFiles(dir)).toHaveLength(1);
    const store = LmdbOffsetStore.open(dir);
    expect(await store.list('g')).toEqual([
      { topic: 't', partition: 0, offset: 7, metadata: 'm', commitTimestamp: 2 },
      { topic: 'u', partition: 1, offset: 9, metadata: '', commitTimestamp: 2 },
    ]);
    await store.commit('g', [{ topic: 't', partition: 0, offset: 8 }], 3);
    await store.close();
    // Replayed into LMDB at the open and the journal removed at the clean close: opening again changes nothing.
    expect(journalFiles(dir)).toEqual([]);
    const again = LmdbOffsetStore.open(dir);
    expect((await again.list('g')).map((o) => o.offset)).toEqual([8, 9]);
    await again.close();
  });

  it('keeps a commit metadata of 100 KB, journaled and replayed (no limit beyond LMDB\'s own)', async () => {
    const dir = tmpDir('onelog-lmdb-');
    const metadata = 'ü'.repeat(50_000);
    await killedAfter(dir, `await store.commit('g', [{ topic: 't', partition: 0, offset: 1, metadata: ${JSON.stringify(metadata)} }], 1);`);
    const store = LmdbOffsetStore.open(dir);
    expect(await store.get('g', 't', 0)).toEqual({ offset: 1, metadata, commitTimestamp: 1 });
    await store.close();
  });

  it('a commit with sync resolves once LMDB holds it: it survives a SIGKILL without the journal', async () => {
    const dir = tmpDir('onelog-lmdb-');
    await killedAfter(dir, `await store.commit('g', [{ topic: 't', partition: 0, offset: 5 }], 1, undefined, { sync: true });`);
    for (const f of journalFiles(dir)) fs.rmSync(path.join(dir, f));
    const store = LmdbOffsetStore.open(dir);
    expect(await store.get('g', 't', 0)).toEqual({ offset: 5, metadata: '', commitTimestamp: 1 });
    await store.close();
  });

  it('replays only the journal records LMDB does not hold: a deleted group\'s commit is not brought back', async () => {
    const dir = tmpDir('onelog-lmdb-');
    const store = LmdbOffsetStore.open(dir);
    await store.commit('g', [{ topic: 't', partition: 0, offset: 5 }], 1, undefined, { sync: true });
    await store.deleteGroup('g');
    // What a crash would have left: the journal as it stands now (a clean close removes it).
    const kept = journalFiles(dir).map((f) => [f, fs.readFileSync(path.join(dir, f))] as const);
    await store.close();
    for (const [f, bytes] of kept) fs.writeFileSync(path.join(dir, f), bytes);
    // And a record LMDB never got, after it.
    const { records, start } = CommitJournal.read(dir);
    expect(records.map((r) => r.seq)).toEqual([1]);
    const journal = start(1);
    for (const r of records) {
      for (const put of r.puts) journal.add(put.key, put.value);
      journal.append(r.seq);
    }
    journal.add(key('h', 't', 2), rawValue(11, 4));
    journal.append(2);
    journal.close(false);

    const again = LmdbOffsetStore.open(dir);
    expect(await again.list('g')).toEqual([]);
    expect(await again.list('h')).toEqual([{ topic: 't', partition: 2, offset: 11, metadata: '', commitTimestamp: 4 }]);
    // Numbering goes on after the replayed record.
    await again.commit('h', [{ topic: 't', partition: 2, offset: 12 }], 5);
    expect(journalFiles(dir)).toEqual(['journal-0000000000000003']);
    await again.close();
  });

  it('a background LMDB write that fails is reported by the next write, and the journal keeps the commit it held', async () => {
    const dir = tmpDir('onelog-lmdb-');
    const store = LmdbOffsetStore.open(dir);
    await store.commit('g', [{ topic: 't', partition: 0, offset: 1 }], 1);
    // lmdb-js's failure: a generic error whose commitError carries the cause (errno 5).
    const db = (store as unknown as { db: { batch: (f: () => void) => Promise<boolean> } }).db;
    const batch = vi.spyOn(db, 'batch').mockImplementationOnce(() => {
      const cause = Object.assign(new Error('Input/output error'), { code: 5 });
      return Promise.reject(Object.assign(new Error('Commit failed (see commitError for details)'), { commitError: Promise.reject(cause) }));
    });
    await store.commit('g', [{ topic: 't', partition: 0, offset: 2 }], 2); // acknowledged: journaled
    expect(await store.get('g', 't', 0)).toMatchObject({ offset: 2 });
    // Answered in the next event-loop turn, by when the failure is known: every later write throws it.
    await expect(store.advanceGeneration('g', 1)).rejects.toMatchObject({ code: 'EIO' });
    await expect(store.commit('g', [{ topic: 't', partition: 0, offset: 3 }], 3)).rejects.toMatchObject({
      message: 'LMDB write failed: Input/output error', code: 'EIO',
    });
    batch.mockRestore();
    await store.close();
    expect(journalFiles(dir)).toHaveLength(1);
    const again = LmdbOffsetStore.open(dir);
    expect(await again.get('g', 't', 0)).toEqual({ offset: 2, metadata: '', commitTimestamp: 2 });
    await again.close();
  });

  it('every commit acknowledged before a SIGKILL is there after reopening', async () => {
    const dir = tmpDir('onelog-lmdb-');
    const storeModule = path.resolve(import.meta.dirname, '../../src/offsets/lmdb-offset-store.ts');
    // A child commits 10 at a time (one event turn, so one LMDB transaction) and prints each as acknowledged.
    const script = `
      const { LmdbOffsetStore } = await import(${JSON.stringify(storeModule)});
      const store = LmdbOffsetStore.open(${JSON.stringify(dir)});
      for (let i = 0; ; i += 10) {
        await Promise.all(Array.from({ length: 10 }, (_, k) => {
          const n = i + k;
          return store.commit('g' + (n % 3), [{ topic: 't', partition: n % 50, offset: n, metadata: 'm' + n }], n)
            .then(() => process.stdout.write('ack ' + n + '\\n'));
        }));
      }`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: path.resolve(import.meta.dirname, '../..'),
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const acked: number[] = [];
    const lines = readline.createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      const [kind, n] = line.split(' ');
      if (kind === 'ack') acked.push(Number(n));
      if (acked.length === 2000) child.kill('SIGKILL');
    });
    // Killed after 2,000 acknowledgements, or after 30 s whatever it printed (then the count below fails).
    const deadline = setTimeout(() => child.kill('SIGKILL'), 30_000);
    let signal: NodeJS.Signals | null;
    try {
      signal = await new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, s) => resolve(s)));
    } finally {
      clearTimeout(deadline);
      child.kill('SIGKILL');
      lines.close();
    }
    expect(signal).toBe('SIGKILL');
    expect(acked.length).toBeGreaterThanOrEqual(2000);

    const store = LmdbOffsetStore.open(dir);
    // Per key, offsets only grow: what is stored is the last acknowledged commit of that key or a later one.
    const lastAcked = new Map<string, number>();
    for (const n of acked) lastAcked.set(`g${n % 3}/${n % 50}`, Math.max(n, lastAcked.get(`g${n % 3}/${n % 50}`) ?? -1));
    for (const [k, n] of lastAcked) {
      const [group, partition] = k.split('/');
      const got = await store.get(group!, 't', Number(partition));
      expect(got, k).toBeDefined();
      expect(got!.offset, k).toBeGreaterThanOrEqual(n);
      expect(got!.offset % 150, k).toBe(n % 150);
      expect(got).toEqual({ offset: got!.offset, metadata: `m${got!.offset}`, commitTimestamp: got!.offset });
    }
    await store.close();
  });
});

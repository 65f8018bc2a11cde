import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FileCache, MIN_OPEN_FILES } from '../../src/log/segments/file-cache.js';
import type { CachedFile } from '../../src/log/segments/file-cache.js';
import { defaultMaxOpenFiles, openFilesLimit } from '../../src/log/segments/open-files-limit.js';
import { errorOf } from '../helpers/errors.js';
import { tmpDir } from '../helpers/tmp.js';

afterEach(() => {
  vi.restoreAllMocks();
});

/** `count` files holding their own index as text, each behind a cached handle. */
function filesIn(cache: FileCache, count: number, onEvict?: (i: number) => void): CachedFile[] {
  const dir = tmpDir();
  return Array.from({ length: count }, (_, i) => {
    const file = path.join(dir, `f${i}`);
    fs.writeFileSync(file, String(i));
    return cache.file(file, 'r', onEvict ? () => onEvict(i) : undefined);
  });
}

/** What the descriptor returned by `fd()` reads: proves it is open and belongs to this file. */
function contentOf(f: CachedFile): string {
  const buf = Buffer.alloc(16);
  return buf.toString('utf8', 0, fs.readSync(f.fd(), buf, 0, 16, 0));
}

/** Descriptors this process holds open on files under `dir` (from /proc). */
function openUnder(dir: string): number {
  return fs.readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return fs.readlinkSync(`/proc/self/fd/${fd}`).startsWith(dir);
    } catch {
      return false;
    }
  }).length;
}

const emfile = () => Object.assign(new Error('EMFILE: too many open files, open'), { code: 'EMFILE' });

describe('FileCache', () => {
  it('opens on demand and closes the least recently used beyond its budget', () => {
    const cache = new FileCache({ maxOpenFiles: 8 });
    const evicted: number[] = [];
    const files = filesIn(cache, 10, (i) => evicted.push(i));
    expect(cache.stats().open).toBe(0);
    for (let i = 0; i < 8; i++) expect(contentOf(files[i]!)).toBe(String(i));
    expect(cache.stats()).toMatchObject({ open: 8, opens: 8, evictions: 0 });
    contentOf(files[0]!); // 0 is now the most recently used: 1 goes first
    contentOf(files[8]!);
    contentOf(files[9]!);
    expect(evicted).toEqual([1, 2]);
    expect(files.map((f) => f.isOpen)).toEqual([true, false, false, true, true, true, true, true, true, true]);
    expect(contentOf(files[1]!)).toBe('1'); // reopened
    expect(cache.stats()).toMatchObject({ open: 8, opens: 11, evictions: 3 });
    files[5]!.close(); // an explicit close frees the slot and is no eviction
    expect(evicted).toEqual([1, 2, 3]);
    expect(cache.stats().open).toBe(7);
    cache.closeAll();
    expect(cache.stats().open).toBe(0);
  });

  it('never holds more descriptors than its budget, whatever the order of uses (checked against /proc)', () => {
    fc.assert(fc.property(
      fc.integer({ min: MIN_OPEN_FILES, max: 12 }),
      fc.array(fc.record({ file: fc.nat({ max: 29 }), op: fc.constantFrom('use', 'use', 'use', 'close', 'transient') }), { maxLength: 200 }),
      (budget, ops) => {
        const cache = new FileCache({ maxOpenFiles: budget });
        const files = filesIn(cache, 30);
        const dir = path.dirname(files[0]!.path);
        for (const { file, op } of ops) {
          if (op === 'use') expect(contentOf(files[file]!)).toBe(String(file));
          else if (op === 'close') files[file]!.close();
          else cache.transient(() => expect(fs.readFileSync(files[file]!.path, 'utf8')).toBe(String(file)));
          expect(openUnder(dir)).toBe(cache.stats().open);
          expect(cache.stats().open).toBeLessThanOrEqual(budget);
        }
        cache.closeAll();
        expect(openUnder(dir)).toBe(0);
      },
    ), { numRuns: 60 });
  });

  it('keeps a pinned file open, lets only maxPinned pins run at once, and closes a file closed while pinned after its pin', async () => {
    const cache = new FileCache({ maxOpenFiles: 8, maxPinned: 2 });
    const files = filesIn(cache, 12);
    const releases: Array<() => void> = [];
    const started: number[] = [];
    const pins = [0, 1, 2].map((i) => files[i]!.pinned(async (fd) => {
      started.push(i);
      expect(fs.readFileSync(fd, 'utf8')).toBe(String(i));
      await new Promise<void>((resolve) => releases.push(resolve));
      return i;
    }));
    await Promise.resolve();
    expect(started).toEqual([0, 1]); // the third waits for a pin slot
    for (let i = 3; i < 12; i++) contentOf(files[i]!); // pressure: everything but the pinned may go
    expect(files[0]!.isOpen && files[1]!.isOpen).toBe(true);
    expect(cache.stats().open).toBeLessThanOrEqual(8);
    files[0]!.close(); // deferred until its pin ends
    expect(files[0]!.isOpen).toBe(true);
    releases.shift()!();
    expect(await pins[0]).toBe(0);
    expect(files[0]!.isOpen).toBe(false);
    await vi.waitFor(() => expect(started).toEqual([0, 1, 2]));
    releases.splice(0).forEach((go) => go());
    expect(await Promise.all(pins)).toEqual([0, 1, 2]);
  });

  it('out of descriptors anyway: evicts and retries, and with nothing left to close throws RESOURCE_EXHAUSTED', () => {
    const cache = new FileCache({ maxOpenFiles: 16 });
    const files = filesIn(cache, 12);
    for (let i = 0; i < 10; i++) contentOf(files[i]!);
    const real = fs.openSync;
    let failures = 1;
    const open = vi.spyOn(fs, 'openSync').mockImplementation(((...args: Parameters<typeof fs.openSync>) => {
      if (failures-- > 0) throw emfile();
      return real(...args);
    }) as typeof fs.openSync);
    // One EMFILE: half the cache goes (the least recently used), then the open succeeds.
    expect(contentOf(files[10]!)).toBe('10');
    expect(files.slice(0, 5).map((f) => f.isOpen)).toEqual([false, false, false, false, false]);
    expect(files.slice(5, 11).every((f) => f.isOpen)).toBe(true);

    failures = Infinity; // the process has no descriptor left at all
    const err = errorOf(() => files[11]!.fd());
    expect(err).toMatchObject({ code: 'RESOURCE_EXHAUSTED', retriable: true, context: { resource: 'open-files', maxOpenFiles: 16, errno: 'EMFILE' } });
    expect(err.message).toMatch(/ulimit -n/);
    expect(cache.stats().open).toBe(0); // it gave back all it had
    expect(errorOf(() => cache.transient(() => fs.openSync(files[0]!.path, 'r'))).code).toBe('RESOURCE_EXHAUSTED');

    open.mockRestore(); // descriptors free up: service resumes
    expect(files.map(contentOf)).toEqual(files.map((_, i) => String(i)));
    cache.closeAll();
  });

  it('closes the files not used since the check before last, and none in use', async () => {
    const cache = new FileCache({ maxOpenFiles: 8 });
    const files = filesIn(cache, 4);
    files.forEach(contentOf);
    expect(cache.closeIdle()).toBe(0); // used in the period that just ended
    contentOf(files[0]!);
    let release = () => {};
    const pinned = files[1]!.pinned(() => new Promise<void>((resolve) => (release = resolve)));
    expect(cache.closeIdle()).toBe(2); // 2 and 3: unused for a whole period; 1 is pinned
    expect(files.map((f) => f.isOpen)).toEqual([true, true, false, false]);
    release();
    await pinned;
    expect(cache.closeIdle()).toBe(2);
    expect(cache.stats().open).toBe(0);
  });

  it('refuses a budget below the minimum, naming it', () => {
    expect(errorOf(() => new FileCache({ maxOpenFiles: 3 }))).toMatchObject({ code: 'INVALID_REQUEST', message: expect.stringMatching(/>= 8/) });
  });

  it('derives its default budget from the soft limit, leaving room for connections', () => {
    expect([256, 1024, 20_000, 40].map((n) => defaultMaxOpenFiles(n))).toEqual([192, 768, 15_000, MIN_OPEN_FILES]);
    expect(defaultMaxOpenFiles(Infinity)).toBe(65_536);
    const limits = fs.readFileSync('/proc/self/limits', 'utf8');
    expect(limits).toContain(`Max open files            ${openFilesLimit()}`);
  });
});

/**
 * Reloads of a cache one at a time: a read begun before a change never overwrites what a read begun after it found,
 * calls made while a read waits to start join it, and a failed read does not stop the next.
 */
import { describe, expect, it } from 'vitest';
import { serialReloads } from '../../src/security/serial-reloads.js';

/** Lets every pending promise callback run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('serialReloads', () => {
  it('runs reads one after the other, the waiting one shared, the cache ending as the last read found it', async () => {
    let stored = 'v1';
    let cache = '';
    const reads: Array<{ release(): void }> = [];
    const reload = serialReloads(async () => {
      const seen = stored; // what the catalog holds when the read starts
      await new Promise<void>((resolve) => reads.push({ release: resolve }));
      cache = seen;
    });
    const first = reload();
    await settle();
    expect(reads).toHaveLength(1);
    stored = 'v2'; // a change committed while the first read runs: the next read starts only after it
    const second = reload();
    const third = reload();
    expect(third).toBe(second); // it had not started: it reads after both calls were made
    await settle();
    expect(reads).toHaveLength(1);
    reads[0]!.release();
    await first;
    expect(cache).toBe('v1');
    await settle();
    expect(reads).toHaveLength(2);
    reads[1]!.release();
    await second;
    expect(cache).toBe('v2');
  });

  it('a failed read rejects its callers and the next one runs', async () => {
    let fail = true;
    let reads = 0;
    const reload = serialReloads(async () => {
      reads++;
      if (fail) throw new Error('catalog down');
    });
    await expect(reload()).rejects.toThrow('catalog down');
    fail = false;
    await reload();
    expect(reads).toBe(2);
  });
});

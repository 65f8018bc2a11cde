import { describe, expect, it } from 'vitest';
import { OnelogError } from '../../src/protocol/errors.js';
import { resourceExhausted } from '../../src/common/resource-exhausted.js';
import { storageError } from '../../src/log/segments/storage-errors.js';

const errno = (code: string) => Object.assign(new Error(`${code}: from the system`), { code });
const where = { topic: 't', partition: 3 };

describe('storage errors', () => {
  it('names the resource that ran out: disk, descriptors, memory, with what to do', () => {
    const cases: Array<[unknown, string, RegExp]> = [
      [errno('ENOSPC'), 'disk', /disk .* is full.*retention/],
      [errno('EDQUOT'), 'disk', /disk/],
      [errno('SQLITE_FULL'), 'disk', /disk/],
      [errno('EMFILE'), 'open-files', /ulimit -n/],
      [errno('ENFILE'), 'open-files', /--max-open-files/],
      [errno('ENOMEM'), 'memory', /out of memory/],
      [new RangeError('Array buffer allocation failed'), 'memory', /smaller/],
    ];
    for (const [err, resource, message] of cases) {
      const e = storageError(err, 'append', where);
      expect(e).toMatchObject({ code: 'RESOURCE_EXHAUSTED', retriable: true, context: { ...where, resource } });
      expect(e.message).toMatch(/^append failed: /);
      expect(e.message).toMatch(message);
      expect(e.httpStatus).toBe(503);
    }
  });

  it('types every other failure STORAGE_ERROR with its errno, and lets onelog errors through', () => {
    expect(storageError(errno('EIO'), 'fetch', where)).toMatchObject({ code: 'STORAGE_ERROR', context: { ...where, errno: 'EIO' } });
    expect(resourceExhausted(errno('EIO'), 'fetch')).toBeUndefined();
    const own = new OnelogError('OFFSET_OUT_OF_RANGE', 'x', { topic: 'other' });
    expect(storageError(own, 'fetch', where)).toBe(own);
    // An unreadable checkpoint, or the file cache's RESOURCE_EXHAUSTED, gets the partition and the action it lacked.
    expect(storageError(new OnelogError('CORRUPT_MESSAGE', 'checkpoint f is unreadable', { file: 'f' }), 'opening partition t/3', where))
      .toMatchObject({ code: 'CORRUPT_MESSAGE', message: 'opening partition t/3 failed: checkpoint f is unreadable', context: { ...where, file: 'f' } });
    const cache = new OnelogError('RESOURCE_EXHAUSTED', 'out of file descriptors', { resource: 'open-files', maxOpenFiles: 8 });
    expect(storageError(cache, 'compaction', where)).toMatchObject({
      code: 'RESOURCE_EXHAUSTED', message: 'compaction failed: out of file descriptors', context: { ...where, resource: 'open-files', maxOpenFiles: 8 },
    });
  });
});

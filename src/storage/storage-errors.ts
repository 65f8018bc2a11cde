/**
 * Failures of the file system, typed: running out of descriptors, disk or memory is `RESOURCE_EXHAUSTED`
 * (retriable: nothing was stored, and the same request succeeds once the resource frees), anything else
 * `STORAGE_ERROR`. Each message names the limit and what to do about it.
 */
import { OnelogError } from '../protocol/errors.js';
import { isOutOfDescriptors } from './file-cache.js';

/**
 * The typed error for a failed storage operation (an OnelogError passes through, given `where` if it names no topic).
 * @param action what failed, for the message: "append", "fetch", "compaction", ...
 * @param where the partition: `{ topic, partition }`
 */
export function storageError(err: unknown, action: string, where: Record<string, unknown>): OnelogError {
  if (err instanceof OnelogError) {
    // Errors of the file cache or a checkpoint know no partition: say which, and what was being done.
    if ('topic' in err.context || !('topic' in where)) return err;
    return new OnelogError(err.code, `${action} failed: ${err.message}`, { ...where, ...err.context });
  }
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return resourceExhausted(err, action, where) ??
    new OnelogError('STORAGE_ERROR', `${action} failed: ${(err as Error | null)?.message ?? String(err)}`, { ...where, ...(code ? { errno: code } : {}) });
}

/**
 * `RESOURCE_EXHAUSTED` naming the resource, if `err` says the process ran out of file descriptors, disk
 * (also SQLite's SQLITE_FULL) or memory; undefined for any other error. For the faces too: a catalog or
 * offset store write can meet a full disk as the log does.
 */
export function resourceExhausted(err: unknown, action: string, where: Record<string, unknown> = {}): OnelogError | undefined {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  const detail = (err as Error | null)?.message ?? String(err);
  if (code === 'ENOSPC' || code === 'EDQUOT' || code === 'SQLITE_FULL') {
    return new OnelogError('RESOURCE_EXHAUSTED', `${action} failed: the disk holding the data directory is full (${detail}); ` +
      'nothing of this batch was stored. Free space (retention deletes old segments: onelog topics enforce-retention, ' +
      'or lower retention.ms / retention.bytes) and retry', { ...where, resource: 'disk', errno: code });
  }
  if (isOutOfDescriptors(err)) {
    return new OnelogError('RESOURCE_EXHAUSTED', `${action} failed: out of file descriptors (${detail}); retry once ` +
      'connections close, or raise the open-files limit (ulimit -n) or lower onelog serve --max-open-files', {
      ...where, resource: 'open-files', errno: code,
    });
  }
  if (code === 'ENOMEM' || (err instanceof RangeError && /allocat/i.test(detail))) {
    return new OnelogError('RESOURCE_EXHAUSTED', `${action} failed: out of memory (${detail}); retry with smaller ` +
      'requests (maxBytes, batch sizes), or give the broker more memory', { ...where, resource: 'memory', ...(code ? { errno: code } : {}) });
  }
  return undefined;
}

/**
 * Running out of a resource, typed: descriptors, disk or memory is `RESOURCE_EXHAUSTED` (retriable: nothing was stored,
 * and the same request succeeds once the resource frees), with a message naming the limit and what to do about it.
 * Shared by the log, the catalog and offset store writes (a full disk), and the faces.
 */
import { OnelogError } from '../protocol/errors.js';

/** Whether `err` says the process or the system has no descriptor left. */
export function isOutOfDescriptors(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return code === 'EMFILE' || code === 'ENFILE';
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

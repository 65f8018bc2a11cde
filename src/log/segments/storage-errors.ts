/**
 * Failures of the file system, typed: running out of descriptors, disk or memory is `RESOURCE_EXHAUSTED`
 * (retriable: nothing was stored, and the same request succeeds once the resource frees), anything else
 * `STORAGE_ERROR`. Each message names the limit and what to do about it.
 */
import { OnelogError } from '../../protocol/errors.js';
import { resourceExhausted } from '../../common/resource-exhausted.js';

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

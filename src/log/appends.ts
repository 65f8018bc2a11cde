/**
 * Appends of several batches in one request, the same on every log engine: batches of different partitions are
 * stored independently, so a failure can come after some of them were stored. The request is then refused with the
 * failure's code, naming what was stored, so a client that is not idempotent knows a retry stores those again.
 */
import { OnelogError } from '../protocol/errors.js';

/** One batch of the request that was stored before another failed. */
export interface StoredBatch {
  partition: number;
  baseOffset: number;
  lastOffset: number;
}

/**
 * The refusal of a request whose batches `stored` were stored and another failed with `error`: `error` itself when
 * none was stored; else its code, its message naming the partitions stored, and `context.stored`.
 */
export function partialAppendError(error: OnelogError, stored: readonly StoredBatch[]): OnelogError {
  if (stored.length === 0) return error;
  return new OnelogError(error.code, `${error.message}; the batches of this request for partitions ` +
    `${[...new Set(stored.map((s) => s.partition))].join(', ')} were stored (see stored): a retry stores them again unless the producer is idempotent`,
  { ...error.context, stored });
}

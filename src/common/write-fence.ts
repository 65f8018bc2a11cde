/**
 * The broker's stop on writes after its catalog or offset store failed: a disk error under either leaves the
 * store's state unknown (a commit whose write failed may or may not be on disk, and what the store caches may
 * no longer match it), so the broker stops accepting writes of any kind (appends, commits, catalog changes)
 * rather than acknowledge anything it may not keep, as a partition does after a disk error of its log
 * (log/segments/partition-log.ts). Reads go on. A full disk is not such a failure: the write is refused with
 * `RESOURCE_EXHAUSTED` and writes resume once space is free. Only a restart, once the disk is healthy, lifts
 * the stop.
 */
import type { Clock } from './clock.js';
import type { Logger } from './logger.js';
import { OnelogError } from '../protocol/errors.js';
import { resourceExhausted } from './resource-exhausted.js';

/** Which store a guarded write goes to, for the message. */
export type FencedStore = 'catalog' | 'offset store';

/**
 * One per broker. Writes of the catalog and the offset store run through {@link guard}; the first failure of
 * a write that is neither a full disk nor an error the store itself raised for the request (a typed
 * OnelogError, a constraint, a RangeError for a bad argument) stops every later write.
 */
export class WriteFence {
  private failed: OnelogError | null = null;
  private readonly listeners: ((failure: OnelogError) => void)[] = [];

  /** @param clock stamps `failedAt` */
  constructor(private readonly clock: Clock, private readonly logger: Logger) {}

  /** The failure that stopped writes (`STORAGE_ERROR` naming the store, its cause and `failedAt`), or null. */
  get failure(): OnelogError | null {
    return this.failed;
  }

  /** Calls `listener` with the failure when writes stop (the log manager stops its appends). */
  onFailure(listener: (failure: OnelogError) => void): void {
    this.listeners.push(listener);
  }

  /** @throws the {@link failure}, if writes stopped */
  check(): void {
    if (this.failed !== null) throw this.failed;
  }

  /**
   * Runs a write of `store` unless writes stopped, and types its failure.
   * @param isFailure whether an error of `work` is a failure of the store (else it is thrown as it is)
   * @throws the {@link failure} (before or because of this write); OnelogError `RESOURCE_EXHAUSTED` (disk) for a
   *   full disk; what `work` threw when `isFailure` says it is not the store's failure
   */
  async guard<T>(store: FencedStore, action: string, isFailure: (err: unknown) => boolean, work: () => Promise<T>): Promise<T> {
    this.check();
    try {
      return await work();
    } catch (err) {
      const full = resourceExhausted(err, `${store} ${action}`);
      if (full !== undefined) throw full;
      if (!isFailure(err)) throw err;
      throw this.fail(store, action, err as Error);
    }
  }

  private fail(store: FencedStore, action: string, cause: Error): OnelogError {
    if (this.failed !== null) return this.failed;
    const errno = (cause as NodeJS.ErrnoException).code;
    this.failed = new OnelogError('STORAGE_ERROR', `the broker stopped accepting writes: a ${store} ${action} failed ` +
      `(${cause.message}). Whether it reached the disk is unknown, so nothing more is acknowledged; reads go on. Restart ` +
      'the broker once the disk is healthy', { store, ...(errno ? { errno } : {}), failedAt: new Date(this.clock.now()).toISOString() });
    this.logger.error({ store, action, err: cause.message, errno }, 'a store failure stopped the broker\'s writes');
    for (const listener of this.listeners) listener(this.failed);
    return this.failed;
  }
}

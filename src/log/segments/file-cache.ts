/**
 * The bounded file-handle cache every file of the log store goes through (segment `.log` files, index files,
 * checkpoints, producer state snapshots, compaction output): at most `maxOpenFiles` descriptors are open at
 * once, counting short-lived ones. A cached file is opened on demand and closed least-recently-used when
 * another needs its slot, as Kafka's lazy indexes and Redpanda's and NATS's bounded handles do, so the number
 * of partitions on a broker is bounded by disk, not by `ulimit -n`.
 *
 * - {@link CachedFile.fd} opens the file if needed (evicting the least recently used unpinned file first) and
 *   marks it most recently used. A descriptor is only valid until the next call into the cache: synchronous
 *   code may use it at once; code that awaits asks again, or pins.
 * - {@link CachedFile.pinned} holds the descriptor across an asynchronous call (an fdatasync): a pinned file
 *   is never evicted. At most {@link FileCacheOptions.maxPinned} files are pinned at once; further pins wait
 *   their turn, so synchronous callers always find a slot.
 * - {@link FileCache.transient} reserves one slot for synchronous code that opens and closes a file itself
 *   (a checkpoint write, an index file read, a directory fsync).
 *
 * Out of descriptors anyway (other parts of the process took them: sockets, LMDB, SQLite), an open that fails
 * with EMFILE or ENFILE evicts more files and retries; with nothing left to evict it throws
 * `RESOURCE_EXHAUSTED`. The cache holds no state that a failed open could corrupt, so service resumes as soon
 * as descriptors free up.
 *
 * Closing a descriptor with writes not yet synced does not lose them: they stay in the page cache, and a
 * later fdatasync on a new descriptor of the same file writes them back and reports a writeback error that
 * nobody has seen yet (Linux >= 4.17, errseq).
 */
import fs from 'node:fs';
import { isOutOfDescriptors } from '../../common/resource-exhausted.js';
import { OnelogError } from '../../protocol/errors.js';
import { FILE_MODE } from '../../common/file-modes.js';

/** Options of a file-handle cache. */
export interface FileCacheOptions {
  /**
   * Descriptors the cache may hold open at once, cached and transient (>= {@link MIN_OPEN_FILES}).
   * @default {@link defaultMaxOpenFiles} of the process's soft limit
   */
  maxOpenFiles: number;
  /**
   * Files pinned at once across asynchronous calls (fdatasync); more wait. @default half of `maxOpenFiles`
   */
  maxPinned?: number;
}

/** The smallest budget: a roll holds two segment files and a transient one at once, with room for pins. */
export const MIN_OPEN_FILES = 8;

/** What the cache has done, for logs and benchmarks. */
export interface FileCacheStats {
  /** Descriptors open now (cached, pinned and transient). */
  open: number;
  maxOpenFiles: number;
  /** `fd()` calls answered by an open descriptor. */
  hits: number;
  /** Files opened (a miss). */
  opens: number;
  /** Files closed to make room. */
  evictions: number;
}

const NO_FD = -1;

/** A file whose descriptor the cache opens on demand and may close when it needs the slot. */
export class CachedFile {
  /** The descriptor, or -1 while closed. */
  private descriptor = NO_FD;
  private pins = 0;
  private closeWhenUnpinned = false;
  /** Neighbours in the cache's recency list (older is nearer eviction). */
  older: CachedFile | null = null;
  newer: CachedFile | null = null;
  /** The cache's idle-check period in which the file was last used (see {@link FileCache.closeIdle}). */
  usedIn = 0;

  /**
   * @param flags as `fs.openSync`'s; reopening uses them again, so they must not truncate (`r`, `r+`, `a`)
   * @param onEvict called after the cache closed the descriptor to make room (not after {@link close})
   */
  constructor(
    private readonly cache: FileCache,
    readonly path: string,
    private readonly flags: string,
    private readonly onEvict?: () => void,
  ) {}

  /** Whether a descriptor is open now. */
  get isOpen(): boolean {
    return this.descriptor !== NO_FD;
  }

  /** Whether a pinned call holds the descriptor. */
  get isPinned(): boolean {
    return this.pins > 0;
  }

  /**
   * The open descriptor, opening the file if needed; marks the file most recently used. Valid until the
   * next call into the cache.
   * @throws OnelogError `RESOURCE_EXHAUSTED` when no descriptor can be had; the file system's error otherwise
   */
  fd(): number {
    if (this.descriptor !== NO_FD) {
      this.cache.touch(this);
      return this.descriptor;
    }
    this.closeWhenUnpinned = false;
    this.descriptor = this.cache.openFor(this, this.path, this.flags);
    return this.descriptor;
  }

  /**
   * Runs `use` with the descriptor held open until it settles (for asynchronous calls such as fdatasync).
   * Starts at once while fewer than {@link FileCacheOptions.maxPinned} files are pinned; waits its turn otherwise.
   */
  pinned<T>(use: (fd: number) => Promise<T>): Promise<T> {
    if (this.cache.tryPin()) return this.runPinned(use);
    return this.cache.waitForPin().then(() => this.runPinned(use));
  }

  /** With a pin slot held: opens, pins, runs `use`, then gives everything back. */
  private async runPinned<T>(use: (fd: number) => Promise<T>): Promise<T> {
    try {
      const fd = this.fd();
      this.pins++;
      try {
        return await use(fd);
      } finally {
        this.pins--;
        if (this.pins === 0 && this.closeWhenUnpinned) this.close();
      }
    } finally {
      this.cache.releasePin();
    }
  }

  /** Closes the descriptor now and gives its slot back (or once the last pinned call ends). */
  close(): void {
    if (this.pins > 0) {
      this.closeWhenUnpinned = true;
      return;
    }
    if (this.descriptor === NO_FD) return;
    const fd = this.descriptor;
    this.descriptor = NO_FD;
    this.cache.forget(this);
    fs.closeSync(fd);
  }

  /** For the cache: closes the descriptor to free its slot, then tells the owner. */
  evict(): void {
    this.close();
    this.onEvict?.();
  }
}

export class FileCache {
  readonly maxOpenFiles: number;
  private readonly maxPinned: number;
  /** Least recently used first: the next to evict. */
  private oldest: CachedFile | null = null;
  private newest: CachedFile | null = null;
  private cached = 0;
  private transients = 0;
  private pinnedNow = 0;
  private readonly pinWaiters: Array<() => void> = [];
  private hits = 0;
  private opens = 0;
  private evictions = 0;
  /** Counts the calls of {@link closeIdle}: the periods files are marked used in. */
  private period = 0;

  /** @throws OnelogError `INVALID_REQUEST` for a budget below {@link MIN_OPEN_FILES} */
  constructor(options: FileCacheOptions) {
    if (!Number.isInteger(options.maxOpenFiles) || options.maxOpenFiles < MIN_OPEN_FILES) {
      throw new OnelogError('INVALID_REQUEST', `maxOpenFiles must be an integer >= ${MIN_OPEN_FILES}, got ${options.maxOpenFiles}`);
    }
    this.maxOpenFiles = options.maxOpenFiles;
    this.maxPinned = Math.max(1, Math.min(options.maxPinned ?? Math.floor(options.maxOpenFiles / 2), options.maxOpenFiles - 4));
  }

  /**
   * A file opened through the cache on first use. Nothing is opened now.
   * @param flags `fs.openSync` flags that do not truncate: `r`, `r+`, `a`
   * @param onEvict called when the cache closed the file to make room (to drop what was loaded with it)
   */
  file(path: string, flags: 'r' | 'r+' | 'a', onEvict?: () => void): CachedFile {
    return new CachedFile(this, path, flags, onEvict);
  }

  /**
   * Runs synchronous `work` that opens at most one descriptor at a time and closes it before returning,
   * with a slot reserved for it. Retried after evicting (half the cache, then all) if it fails for want of descriptors.
   * @throws OnelogError `RESOURCE_EXHAUSTED` when no descriptor can be had
   */
  transient<T>(work: () => T): T {
    this.makeRoom(1);
    this.transients++;
    try {
      return this.retryOutOfDescriptors(work);
    } finally {
      this.transients--;
    }
  }

  /** Counts and limits at this moment. */
  stats(): FileCacheStats {
    return { open: this.openCount, maxOpenFiles: this.maxOpenFiles, hits: this.hits, opens: this.opens, evictions: this.evictions };
  }

  /** Descriptors open now through the cache. */
  get openCount(): number {
    return this.cached + this.transients;
  }

  /**
   * Closes the files not used since the call before last (unpinned), so a log store at rest gives its
   * descriptors back to connections; the broker calls it every `fileIdleCheckIntervalMs`, so a file is closed
   * after one to two intervals unused.
   * @returns how many were closed
   */
  closeIdle(): number {
    this.period++;
    let closed = 0;
    for (let f = this.oldest; f !== null && f.usedIn < this.period - 1;) {
      const next = f.newer;
      if (!f.isPinned) {
        f.evict();
        closed++;
      }
      f = next;
    }
    return closed;
  }

  /** Closes every cached file that is not pinned (shutdown, tests). */
  closeAll(): void {
    this.evictOldest(this.cached);
  }

  // ---- for CachedFile ------------------------------------------------------------------------------

  /** Opens `path` for `file`, within the budget, and links it as most recently used. */
  openFor(file: CachedFile, path: string, flags: string): number {
    this.makeRoom(1);
    const fd = this.retryOutOfDescriptors(() => fs.openSync(path, flags, FILE_MODE));
    this.opens++;
    this.cached++;
    file.usedIn = this.period;
    this.linkNewest(file);
    return fd;
  }

  touch(file: CachedFile): void {
    this.hits++;
    file.usedIn = this.period;
    if (this.newest === file) return;
    this.unlink(file);
    this.linkNewest(file);
  }

  forget(file: CachedFile): void {
    this.unlink(file);
    this.cached--;
  }

  /** Takes a pin slot if one is free. */
  tryPin(): boolean {
    if (this.pinnedNow >= this.maxPinned) return false;
    this.pinnedNow++;
    return true;
  }

  /** Resolves when a pin slot was handed to the caller. */
  waitForPin(): Promise<void> {
    return new Promise<void>((resolve) => this.pinWaiters.push(resolve));
  }

  releasePin(): void {
    const next = this.pinWaiters.shift();
    if (next) next(); // the slot passes straight to the next waiter
    else this.pinnedNow--;
  }

  // ---- internals ----------------------------------------------------------------------------------

  /** Evicts least recently used, unpinned files until `slots` more descriptors fit in the budget. */
  private makeRoom(slots: number): void {
    const excess = this.openCount + slots - this.maxOpenFiles;
    if (excess > 0) this.evictOldest(excess);
  }

  /** Evicts up to `count` least recently used, unpinned files; returns how many went. */
  private evictOldest(count: number): number {
    let evicted = 0;
    for (let f = this.oldest; f !== null && evicted < count; ) {
      const next = f.newer;
      if (!f.isPinned) {
        f.evict();
        evicted++;
      }
      f = next;
    }
    this.evictions += evicted;
    return evicted;
  }

  /**
   * Runs `open`; when it fails with EMFILE or ENFILE (the process or the system is out of descriptors,
   * whatever the budget says), evicts half the cached files, then all, and tries again.
   * @throws OnelogError `RESOURCE_EXHAUSTED` when nothing is left to evict
   */
  private retryOutOfDescriptors<T>(open: () => T): T {
    for (let attempt = 0; ; attempt++) {
      try {
        return open();
      } catch (err) {
        if (!isOutOfDescriptors(err)) throw err;
        if (this.evictOldest(attempt === 0 ? Math.ceil(this.cached / 2) : this.cached) === 0) {
          throw this.exhausted(err as NodeJS.ErrnoException);
        }
      }
    }
  }

  private exhausted(err: NodeJS.ErrnoException): OnelogError {
    return new OnelogError(
      'RESOURCE_EXHAUSTED',
      `out of file descriptors (${err.code}) with ${this.openCount} log files open of a budget of ${this.maxOpenFiles}: ` +
      'the rest of the process (connections, LMDB, SQLite) holds the others. Retry once connections close, or raise ' +
      'the open-files limit (ulimit -n) or lower onelog serve --max-open-files',
      { resource: 'open-files', maxOpenFiles: this.maxOpenFiles, openFiles: this.openCount, errno: err.code },
    );
  }

  private unlink(file: CachedFile): void {
    if (file.older) file.older.newer = file.newer;
    else if (this.oldest === file) this.oldest = file.newer;
    if (file.newer) file.newer.older = file.older;
    else if (this.newest === file) this.newest = file.older;
    file.older = file.newer = null;
  }

  private linkNewest(file: CachedFile): void {
    file.older = this.newest;
    if (this.newest) this.newest.newer = file;
    else this.oldest = file;
    this.newest = file;
  }
}

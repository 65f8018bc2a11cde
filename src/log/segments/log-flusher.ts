/**
 * What of a partition's log is on disk, and the fdatasyncs that move it forward: callers waiting for the
 * same range share one fdatasync (group commit), a timer runs the `interval` flush policy, and a background
 * flush syncs without making anyone wait.
 *
 * A failed fdatasync is never tried again (the "fsyncgate" lesson): the kernel may have dropped the pages whose
 * writeback failed and reports the failure once, so a second fdatasync could succeed over lost data and
 * acknowledge what came after it. The first failure is final: it and every later sync throw the error the
 * target's `onFailure` gives (the partition stops accepting writes). Only a sync that never ran, for want of a
 * file descriptor, is not a failure of the disk and may be tried again.
 */
import type { OnelogError } from '../../protocol/errors.js';
import { storageError } from './storage-errors.js';

/** What the flusher needs from its log. */
export interface FlushTarget {
  /** The log end offset now: a sync started now covers everything below it. */
  end(): number;
  /** fdatasyncs the active segment. */
  datasync(): Promise<void>;
  /** Everything below `offset` is on disk. */
  onSynced(offset: number): void;
  /** A background flush failed for want of a descriptor (nothing is lost: it is tried again). */
  onBackgroundError(err: Error): void;
  /**
   * An fdatasync failed (`err` says how, typed by storageError): what was not synced may be lost. Called once;
   * the error returned is what this and every later sync throws.
   */
  onFailure(err: OnelogError): OnelogError;
  /** Names the partition in errors. */
  where: { topic: string; partition: number };
  /** How long after a background flush that found no descriptor to try again, ms (the flush.ms in force). */
  retryMs(): number;
}

/** Longest wait before a background flush that found no descriptor is tried again, ms. */
const MAX_RETRY_MS = 10_000;

export class LogFlusher {
  /** Everything below this offset is on disk (fdatasync returned). */
  private syncedOffset: number;
  private inFlight: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  /** Background flushes failed in a row. */
  private failures = 0;
  /** Set by the first failed fdatasync: every later sync throws it. */
  private failure: OnelogError | null = null;

  /** @param synced the offset below which everything is known to be on disk */
  constructor(synced: number, private readonly target: FlushTarget) {
    this.syncedOffset = synced;
  }

  get synced(): number {
    return this.syncedOffset;
  }

  /**
   * Waits until everything below `offset` is on disk; concurrent callers share one fdatasync.
   * @throws the `onFailure` error once an fdatasync failed (this one or any before); OnelogError
   *   `RESOURCE_EXHAUSTED` if no descriptor was free to run it
   */
  async syncTo(offset: number): Promise<void> {
    while (this.syncedOffset < offset) {
      if (this.failure !== null) throw this.failure;
      this.inFlight ??= this.run();
      await this.inFlight;
    }
  }

  private async run(): Promise<void> {
    const upTo = this.target.end();
    try {
      await this.target.datasync();
    } catch (err) {
      const typed = storageError(err, 'fdatasync', this.target.where);
      if (typed.code === 'RESOURCE_EXHAUSTED' && typed.context.resource === 'open-files') throw typed; // it never ran
      this.failure ??= this.target.onFailure(typed);
      throw this.failure;
    } finally {
      this.inFlight = null;
    }
    if (upTo > this.syncedOffset) this.syncedOffset = upTo;
    this.target.onSynced(upTo);
  }

  /**
   * Syncs everything appended so far without making anyone wait. A failed fdatasync goes to `onFailure` (see
   * the file's comment); one that found no descriptor (it never ran, so nothing is known lost) goes to
   * `onBackgroundError`, once per run of such failures, and is tried again after `retryMs`, doubling up to
   * {@link MAX_RETRY_MS}.
   */
  flushInBackground(): void {
    this.cancelTimer();
    if (this.failure !== null) return;
    this.syncTo(this.target.end()).then(() => {
      this.failures = 0;
    }, (err: unknown) => {
      if (err === this.failure) return;
      if (this.failures++ === 0) this.target.onBackgroundError(err as Error);
      this.schedule(Math.min(this.target.retryMs() * 2 ** (this.failures - 1), MAX_RETRY_MS));
    });
  }

  /** Flushes in the background `ms` from now, unless a flush is already scheduled. */
  schedule(ms: number): void {
    this.timer ??= setTimeout(() => this.flushInBackground(), ms).unref();
  }

  cancelTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** Records that everything below `offset` reached the disk by other means (a segment roll synced it). */
  markSynced(offset: number): void {
    if (offset > this.syncedOffset) this.syncedOffset = offset;
  }

  /** Whether no fdatasync runs or is scheduled and everything below `end` is on disk. */
  idle(end: number): boolean {
    return this.inFlight === null && this.timer === null && this.syncedOffset >= end;
  }

  /** Resolves once the fdatasync in flight, if any, ended (whatever its outcome). */
  async settled(): Promise<void> {
    await this.inFlight?.catch(() => {});
  }

  /** Runs `task` now, or after the fdatasync in flight (which may be syncing a file `task` deletes). */
  afterInFlight(task: () => void): void {
    if (this.inFlight === null) task();
    else void this.inFlight.catch(() => {}).then(task);
  }

  /**
   * For a close: syncs until everything appended is durable, so no append waiting on a sync finds its file
   * closed; stops at the first failed sync (its waiters get the error).
   */
  async drain(): Promise<void> {
    this.cancelTimer();
    while (this.syncedOffset < this.target.end()) {
      try {
        await this.syncTo(this.target.end());
      } catch {
        return;
      }
    }
  }
}

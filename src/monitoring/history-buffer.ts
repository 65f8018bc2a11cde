/**
 * What the stored history (health samples, topic traffic) holds in memory before the catalog: per key (a group
 * partition, a topic) the item of its latest minute, and the items of minutes that ended until written. Written one
 * write at a time, in the order asked for: what is final once a minute ends (the first item of a later minute queues
 * the write, which takes every item of a minute that ended), everything before a read and at a stop; and what is
 * older than {@link HISTORY_HOURS} is pruned at most once per minute of the clock. A failed write is logged and its
 * batch dropped (the history misses those minutes), so memory stays bounded whatever the catalog does.
 */
import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import { Turns } from '../common/turns.js';
import { HISTORY_HOURS, HISTORY_STEP_MS } from '../protocol/monitoring-api.js';

/** The start of the minute holding `at` (both ms since the epoch). */
export function minuteOf(at: number): number {
  return at - (((at % HISTORY_STEP_MS) + HISTORY_STEP_MS) % HISTORY_STEP_MS);
}

/** How long the history is kept, ms: the current minute and the 1,439 before it. */
export const HISTORY_KEPT_MS = HISTORY_HOURS * 3_600_000;

/** An item of one minute. */
export interface MinuteItem {
  /** The minute's start, ms since the epoch. */
  minute: number;
}

/** Where a buffer's items go. */
export interface HistoryStore<T extends MinuteItem> {
  /** Names the history in logs (`health history`). */
  what: string;
  /** Writes items to the catalog; called at every write, with none too (the store may refresh what it knows of the catalog). */
  write(items: T[]): Promise<void>;
  /** Deletes what the catalog holds of minutes before `beforeMs`. */
  prune(beforeMs: number): Promise<void>;
}

export class HistoryBuffer<T extends MinuteItem> {
  /** Per key, the item of its latest minute not yet written. */
  private pending = new Map<string, T>();
  /** Items of minutes that ended, replaced in {@link pending} by a later minute's, to write. */
  private final: T[] = [];
  private readonly turns = new Turns();
  /** A write of what is final is queued and not started: another need not be. */
  private queued = false;
  /** The minute of the last prune. */
  private prunedMinute = -Infinity;

  constructor(private readonly store: HistoryStore<T>, private readonly clock: Clock, private readonly logger: Logger) {}

  /** The item waiting for `key` in the current minute, or a new one from `create(minute)` (the one before it is final). */
  current(key: string, create: (minute: number) => T): T {
    const minute = minuteOf(this.clock.now());
    const item = this.pending.get(key);
    return item?.minute === minute ? item : this.put(key, create(minute));
  }

  /**
   * Puts `item` as `key`'s latest, replacing one of the same minute (one of an earlier minute is final); an item of a
   * minute earlier than the one waiting (taken before it, put after) is dropped.
   * @returns the item waiting for `key` now
   */
  put(key: string, item: T): T {
    const before = this.pending.get(key);
    if (before !== undefined && before.minute > item.minute) return before;
    if (before !== undefined && before.minute < item.minute) {
      this.final.push(before);
      this.kick();
    }
    this.pending.set(key, item);
    return item;
  }

  /** Writes everything waiting (a read of the history comes next, or a stop); resolves once written. Never rejects. */
  flush(): Promise<void> {
    return this.turns.run(() => this.write(true));
  }

  /**
   * Drops the items `which` selects, then runs `remove` (deleting what the catalog holds of them) after the writes
   * queued before. Never rejects: a failure is logged.
   */
  async forget(which: (item: T) => boolean, remove: () => Promise<void>): Promise<void> {
    for (const [key, item] of this.pending) if (which(item)) this.pending.delete(key);
    this.final = this.final.filter((item) => !which(item));
    try {
      await this.turns.run(remove);
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, `could not delete from the ${this.store.what}: what was left is pruned after ${HISTORY_HOURS} hours`);
    }
  }

  /** Queues a write of what is final, unless one is queued already. */
  private kick(): void {
    if (this.queued) return;
    this.queued = true;
    void this.turns.run(() => {
      this.queued = false;
      return this.write(false);
    });
  }

  private async write(all: boolean): Promise<void> {
    const minute = minuteOf(this.clock.now());
    const batch = this.final;
    this.final = [];
    for (const [key, item] of this.pending) {
      if (all || item.minute < minute) {
        batch.push(item);
        this.pending.delete(key);
      }
    }
    try {
      // Pruning first frees room for new series under a cap.
      if (minute > this.prunedMinute) {
        this.prunedMinute = minute;
        await this.store.prune(minute - HISTORY_KEPT_MS + HISTORY_STEP_MS);
      }
      await this.store.write(batch); // an empty batch too: the store may refresh what it knows of the catalog
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, `could not write the ${this.store.what} to the catalog: those minutes are missing from it`);
    }
  }
}

/**
 * The consumer's nacks off the fetch path: records of a batch whose handler threw are nacked together when
 * the batch ends (one request per partition; the broker moves them in order, sharing fdatasyncs), and the
 * batch's commit waits for them in the background while the next batch is fetched and handled, at most
 * {@link MAX_COMMITS_BEHIND} batches behind. A record counts as processed only once its nack is durable: the
 * commit stops before a nack that failed, nothing after it is committed, and {@link NackPipeline.failure}
 * says why (the consumer then stops with it). docs/retries.md.
 */
import type { HeldPartition } from './member-session.js';

/** Batches whose commit may wait for their nacks while later batches are handled (a crash redelivers at most these). */
const MAX_COMMITS_BEHIND = 16;

/** Offsets to commit, by `topic/partition` (each the NEXT offset to read). */
export type Progress = Map<string, { topic: string; partition: number; offset: number }>;

export class NackPipeline {
  /** Failed records of the batch in hand. */
  private pending: Array<{ h: HeldPartition; offset: number; reason: string }> = [];
  private chain: Promise<void> = Promise.resolve();
  private behind = 0;
  /** Why a nack (or a commit after one) failed in the background; set once. */
  failure: unknown = undefined;

  /**
   * @param send nacks records of one partition (retrying while the broker is unreachable): true once moved,
   *   false when the member was fenced; rejects when they cannot be nacked
   */
  constructor(private readonly send: (h: HeldPartition, records: Array<{ offset: number; reason: string }>) => Promise<boolean>) {}

  /** Notes a failed record of the batch in hand; it is nacked when the batch ends. */
  add(h: HeldPartition, offset: number, reason: string): void {
    this.pending.push({ h, offset, reason });
  }

  /** Whether a batch's commit must go through {@link endBatch}: it has nacks, or commits before it still wait. */
  get busy(): boolean {
    return this.pending.length > 0 || this.behind > 0;
  }

  /**
   * Ends a batch: sends its nacks and schedules `commit(progress)` after them (and after the batches before).
   * Resolves at once unless too many batches are behind, or `wait` (a batch that failed, a stop) asks for it.
   */
  async endBatch(progress: Progress, commit: ((progress: Progress) => Promise<unknown>) | null, wait: boolean): Promise<void> {
    const nacks = this.sendPending();
    this.behind++;
    this.chain = this.chain.then(async () => {
      try {
        const outcomes = await Promise.allSettled(nacks.map((n) => n.nacked));
        if (this.failure !== undefined) return;
        outcomes.forEach((outcome, i) => {
          if (outcome.status === 'fulfilled' && outcome.value) return;
          const { h, offset } = nacks[i]!;
          const key = `${h.topic}/${h.partition}`;
          const at = progress.get(key);
          if (at && at.offset > offset) progress.set(key, { ...at, offset });
          if (outcome.status === 'rejected') this.failure ??= outcome.reason;
        });
        if (commit) await commit(progress);
      } catch (err) {
        this.failure ??= err;
      } finally {
        this.behind--;
      }
    });
    if (wait || this.behind > MAX_COMMITS_BEHIND) await this.chain;
  }

  /** Resolves once every scheduled commit ran (never rejects: failures are kept in {@link failure}). */
  settled(): Promise<void> {
    return this.chain;
  }

  /** Sends the batch's failed records, one request per partition, without waiting. */
  private sendPending(): Array<{ h: HeldPartition; offset: number; nacked: Promise<boolean> }> {
    const byPartition = new Map<HeldPartition, Array<{ offset: number; reason: string }>>();
    for (const { h, offset, reason } of this.pending.splice(0)) byPartition.set(h, [...(byPartition.get(h) ?? []), { offset, reason }]);
    return [...byPartition].flatMap(([h, records]) => {
      const nacked = this.send(h, records);
      nacked.catch(() => {}); // settled by endBatch's chain (allSettled), not unhandled meanwhile
      return records.map(({ offset }) => ({ h, offset, nacked }));
    });
  }
}

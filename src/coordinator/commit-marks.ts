/**
 * Which subscriptions have committed, as the catalog records it (`markCommitted` of {@link Catalog.subscriptions}, set at
 * a subscription's first commit): what tells a lost offset store from a new one when the broker starts
 * (lost-offsets.ts). The marks are read once at start and kept in memory, so a commit costs a set lookup and only
 * a subscription's first commit in this process a catalog write, made once its offsets are written, so that no mark
 * stands without an offset behind it (a refused or failed commit marks nothing; a crash between the two leaves the
 * subscription unmarked until its next commit, which marks it). Every commit of a group's offsets goes through
 * {@link CommitMarks.commit}. Retry tier topics are not marked: a tier is read from its earliest record, so a tier whose
 * offsets were lost delivers its retries again and skips none.
 *
 * A commit of a topic with `flush.policy=always` resolves once the offset store synced it (the records it moves past
 * were synced before they were acknowledged), and so does a commit that marks its subscription: a power loss must not
 * take an offset whose mark it leaves (the next start would take the store for lost). Any other commit resolves once
 * it survives a crash of the broker's process (`CommitOptions.sync`).
 */
import type { Catalog } from '../catalog/catalog.js';
import type { Clock } from '../common/clock.js';
import type { GenerationFence, OffsetCommit, OffsetStore } from '../offsets/offset-store.js';
import type { RetryTopics } from './retry-topics.js';

export class CommitMarks {
  /** The topics of each group whose subscription is known to be marked. */
  private readonly marked = new Map<string, Set<string>>();

  /** @param synced whether a topic's commits are synced before they resolve (its `flush.policy` is `always`) */
  constructor(
    private readonly catalog: Catalog, private readonly offsets: OffsetStore, private readonly clock: Clock, private readonly retryTopics: RetryTopics,
    private readonly synced: (topic: string) => boolean,
  ) {}

  /** Reads the marks (one query). */
  async start(): Promise<void> {
    for (const s of await this.catalog.subscriptions.listCommitted()) this.add(s.groupId, s.topic);
  }

  /**
   * Commits `offsets` (all of `topic`) for `groupId` to the offset store, then marks the subscription as committed
   * if it is not yet.
   * @param now the commit time, ms since the epoch
   * @throws what the offset store's commit throws (nothing is marked then)
   */
  async commit(groupId: string, topic: string, offsets: readonly OffsetCommit[], now: number, fence?: GenerationFence): Promise<void> {
    const marks = offsets.length > 0 && !this.marked.get(groupId)?.has(topic) && !this.retryTopics.tierOf(groupId, topic);
    await this.offsets.commit(groupId, offsets, now, fence, { sync: marks || this.synced(topic) });
    if (!marks) return;
    await this.catalog.subscriptions.markCommitted(groupId, topic, this.clock.now());
    this.add(groupId, topic);
  }

  private add(groupId: string, topic: string): void {
    const topics = this.marked.get(groupId);
    if (topics) topics.add(topic);
    else this.marked.set(groupId, new Set([topic]));
  }

  /**
   * Forgets a group's marks: it was deleted (its subscriptions with it), or it is taken over from another broker
   * of a cluster (which may have deleted and created it again since), so its next commit marks it again.
   */
  forgetGroup(groupId: string): void {
    this.marked.delete(groupId);
  }

  /** Forgets the marks of a deleted topic's subscriptions (gone with it). */
  forgetTopic(topic: string): void {
    for (const topics of this.marked.values()) topics.delete(topic);
  }
}

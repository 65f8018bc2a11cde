/**
 * Which subscriptions have committed, as the catalog records it ({@link Catalog.markCommitted}, set at a
 * subscription's first commit): what tells a lost offset store from a new one when the broker starts
 * (lost-offsets.ts). The marks are read once at start and kept in memory, so a commit costs a set lookup and only
 * a subscription's first commit in this process a catalog write, made before the offsets are, so that no offset is
 * stored unmarked. Retry tier topics are not marked: a tier is read from its earliest record, so a tier whose
 * offsets were lost delivers its retries again and skips none.
 */
import type { Catalog } from '../catalog/catalog.js';
import type { Clock } from '../clock.js';
import type { RetryTopics } from './retry-topics.js';

export class CommitMarks {
  /** The topics of each group whose subscription is known to be marked. */
  private readonly marked = new Map<string, Set<string>>();

  constructor(private readonly catalog: Catalog, private readonly clock: Clock, private readonly retryTopics: RetryTopics) {}

  /** Reads the marks (one query). */
  async start(): Promise<void> {
    for (const s of await this.catalog.listCommittedSubscriptions()) this.add(s.groupId, s.topic);
  }

  /** Marks the subscription of `groupId` to `topic` as committed, once; called before each commit of its offsets. */
  async committing(groupId: string, topic: string): Promise<void> {
    if (this.marked.get(groupId)?.has(topic) || this.retryTopics.tierOf(groupId, topic)) return;
    await this.catalog.markCommitted(groupId, topic, this.clock.now());
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

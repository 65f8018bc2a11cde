/**
 * Which topics are retry tiers or dead-letter topics of which subscription. A group's members consume the
 * tier topics of each topic they subscribe to (they never name them), so joins expand a member's topics with
 * them, and a tier partition is positioned as its subscription says, from its earliest record. Kept in memory
 * from the catalog's subscriptions.
 */
import type { SubscriptionRecord } from '../catalog/subscriptions.js';
import { tierTopicName } from '../protocol/retry-policy.js';

/** A retry tier topic's place: the subscription it belongs to and its tier (1-based). */
export interface TierOwner {
  groupId: string;
  topic: string;
  tier: number;
}

export class RetryTopics {
  private readonly tiers = new Map<string, TierOwner>();
  /** `groupId \0 topic` -> tier topic names, in tier order. */
  private readonly bySubscription = new Map<string, string[]>();

  /** Registers a subscription's tier topics (1..retryTiers); replaces what it had. */
  set(sub: Pick<SubscriptionRecord, 'groupId' | 'topic' | 'retryTiers'>): void {
    const key = `${sub.groupId}\0${sub.topic}`;
    for (const name of this.bySubscription.get(key) ?? []) this.tiers.delete(name);
    const names = Array.from({ length: sub.retryTiers }, (_, i) => tierTopicName(sub.topic, sub.groupId, i + 1));
    names.forEach((name, i) => this.tiers.set(name, { groupId: sub.groupId, topic: sub.topic, tier: i + 1 }));
    if (names.length > 0) this.bySubscription.set(key, names);
    else this.bySubscription.delete(key);
  }

  /** Forgets every subscription of a group (deleted). */
  deleteGroup(groupId: string): void {
    for (const key of [...this.bySubscription.keys()]) {
      if (!key.startsWith(`${groupId}\0`)) continue;
      for (const name of this.bySubscription.get(key)!) this.tiers.delete(name);
      this.bySubscription.delete(key);
    }
  }

  /** The subscription `topic` is a retry tier of, for group `groupId`, or undefined. */
  tierOf(groupId: string, topic: string): TierOwner | undefined {
    const owner = this.tiers.get(topic);
    return owner?.groupId === groupId ? owner : undefined;
  }

  /** Whether `topic` is a retry tier of any subscription. */
  isTier(topic: string): boolean {
    return this.tiers.has(topic);
  }

  /** The tier topics of a subscription, in tier order (empty without any). */
  tiersOf(groupId: string, topic: string): readonly string[] {
    return this.bySubscription.get(`${groupId}\0${topic}`) ?? [];
  }

  /** The topics a member subscribed to `topics` consumes: each followed by its tier topics. */
  expand(groupId: string, topics: readonly string[]): string[] {
    return [...new Set(topics.flatMap((t) => [t, ...this.tiersOf(groupId, t)]))];
  }
}

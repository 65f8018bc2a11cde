/**
 * Reads the health of groups' partitions (see partition-health.ts) from the log store and what the caller
 * read of the offset store and the catalog. It remembers since when each group's partition has had unread
 * records (in memory: after a restart, from the first look), which `stalled` counts from when that is later
 * than the last commit; so a partition idle for hours is not stalled the moment a record arrives.
 */
import type { Catalog, SubscriptionRecord } from '../catalog/catalog.js';
import type { Clock } from '../clock.js';
import type { GroupOffset, OffsetStore } from '../offsets/offset-store.js';
import type { HealthSettings, PartitionHealth } from '../protocol/monitoring-api.js';
import type { PartitionOffsets } from '../storage/log-manager.js';
import type { LogManager } from '../storage/log-manager.js';
import { assessPartition } from './partition-health.js';
import type { PartitionAssessment } from './partition-health.js';

/** A group's committed position in a partition. */
export interface CommittedPosition {
  offset: number;
  /** ms since the epoch */
  commitTimestamp: number;
}

/** One group's partition as {@link HealthReader.walk} visits it. */
export interface GroupPartitionHealth {
  groupId: string;
  sub: SubscriptionRecord;
  offsets: PartitionOffsets;
  /** The group's commit; undefined if it never committed the partition. */
  committed: GroupOffset | undefined;
  paused: boolean;
  assessment: PartitionAssessment;
}

export class HealthReader {
  /** `group \0 topic \0 partition` -> since when unread records have been seen there (ms since the epoch). */
  private readonly unreadSince = new Map<string, number>();

  constructor(
    private readonly catalog: Catalog,
    private readonly offsets: OffsetStore,
    private readonly logs: LogManager,
    private readonly clock: Clock,
  ) {}

  /**
   * Visits every partition of every group's subscriptions that `include` keeps, with the group's health there
   * (the alert evaluator and the metrics read them so); a subscription to a topic gone is skipped.
   */
  async *walk(include: (sub: SubscriptionRecord) => boolean = () => true): AsyncGenerator<GroupPartitionHealth> {
    for (const { groupId } of await this.catalog.listGroups()) {
      const subs = (await this.catalog.listSubscriptions(groupId)).filter(include);
      if (subs.length === 0) continue;
      const committed = new Map((await this.offsets.list(groupId)).map((o) => [`${o.topic}/${o.partition}`, o]));
      const pauses = await this.catalog.listPauses(groupId);
      for (const sub of subs) {
        if (!(await this.catalog.getTopic(sub.topic))) continue;
        for (const offsets of this.logs.offsets(sub.topic)) {
          const key = `${sub.topic}/${offsets.partition}`;
          const c = committed.get(key);
          const paused = pauses.has(key);
          yield { groupId, sub, offsets, committed: c, paused, assessment: this.assess(groupId, sub.topic, sub, offsets, c, paused) };
        }
      }
    }
  }

  /** The health of `groupId` in one partition of `topic`, as {@link assess} finds it. */
  partition(
    groupId: string, topic: string, settings: HealthSettings, offsets: PartitionOffsets, committed: CommittedPosition | undefined, paused: boolean,
  ): PartitionHealth {
    return this.assess(groupId, topic, settings, offsets, committed, paused).health;
  }

  /**
   * The health of `groupId` in one partition of `topic`, and the conditions behind it.
   * @param offsets the partition's log start offset and high watermark (from {@link LogManager.offsets})
   * @throws OnelogError `UNKNOWN_TOPIC`; the log store's errors if the partition cannot be read
   */
  assess(
    groupId: string, topic: string, settings: HealthSettings, offsets: PartitionOffsets, committed: CommittedPosition | undefined, paused: boolean,
  ): PartitionAssessment {
    const config = this.logs.config(topic);
    const deletes = config.cleanupPolicy.split(',').includes('delete');
    const unread = committed === undefined ? null
      : committed.offset >= offsets.highWatermark ? { records: 0, estimate: false, firstTimestamp: null, bytes: 0 }
        : this.logs.get(topic, offsets.partition).unread(committed.offset);
    const key = `${groupId}\0${topic}\0${offsets.partition}`;
    const now = this.clock.now();
    let unreadSince: number | null = null;
    if (unread?.firstTimestamp != null) {
      unreadSince = this.unreadSince.get(key) ?? now;
      this.unreadSince.set(key, unreadSince);
    } else {
      this.unreadSince.delete(key);
    }
    return assessPartition({
      committedOffset: committed?.offset ?? null, commitTimestamp: committed?.commitTimestamp ?? null,
      logStartOffset: offsets.logStartOffset, highWatermark: offsets.highWatermark, paused, unread,
      retentionMs: deletes ? config.retentionMs : -1, retentionBytes: deletes ? config.retentionBytes : -1, unreadSince,
    }, settings, now);
  }

  /** Forgets what it remembers of a deleted group. */
  deleteGroup(groupId: string): void {
    for (const key of this.unreadSince.keys()) if (key.startsWith(`${groupId}\0`)) this.unreadSince.delete(key);
  }
}

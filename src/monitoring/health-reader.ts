/**
 * Reads the health of groups' partitions (see partition-health.ts) from the log store and what the caller
 * read of the offset store and the catalog. It remembers since when each group's partition has had unread
 * records (in memory: after a restart, from the first look), which `stalled` counts from when that is later
 * than the last commit; so a partition idle for hours is not stalled the moment a record arrives.
 */
import type { Clock } from '../clock.js';
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

export class HealthReader {
  /** `group \0 topic \0 partition` -> since when unread records have been seen there (ms since the epoch). */
  private readonly unreadSince = new Map<string, number>();

  constructor(private readonly logs: LogManager, private readonly clock: Clock) {}

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

/**
 * Reads the health of groups' partitions (see partition-health.ts) from the log store and what the caller
 * read of the offset store and the catalog. It remembers since when it has seen each group's partition hold
 * unread records (in memory), which bounds the first unread record's timestamp from above for `stalled`: a record
 * stamped ahead of the broker's clock has waited only since it was first seen.
 */
import { deletesOldRecords, isCompacted } from '../protocol/types.js';
import type { Catalog } from '../catalog/catalog.js';
import type { SubscriptionRecord } from '../catalog/subscriptions.js';
import type { Clock } from '../common/clock.js';
import type { GroupOffset, OffsetStore } from '../offsets/offset-store.js';
import type { PartitionOffsets } from '../log/logs.js';
import type { Logs } from '../log/logs.js';
import type { CorruptBatch } from '../log/partition.js';
import type { UnreadRange } from '../log/partition.js';
import { assessPartition } from './partition-health.js';
import type { PartitionAssessment } from './partition-health.js';

/** A group's committed position in a partition. */
export interface CommittedPosition {
  offset: number;
  /** ms since the epoch */
  commitTimestamp: number;
}

/** Partitions a {@link HealthReader.walk} slice holds by default: a few ms of work when no unread range is cached (a read from disk each). */
export const DEFAULT_SLICE_PARTITIONS = 100;

/** Unread ranges kept (about 100 bytes each), the oldest dropped first. */
const MAX_CACHED_RANGES = 200_000;

/** One group's partition as {@link HealthReader.walk} visits it. */
export interface GroupPartitionHealth {
  groupId: string;
  sub: SubscriptionRecord;
  offsets: PartitionOffsets;
  /** The group's commit; undefined if it never committed the partition. */
  committed: GroupOffset | undefined;
  paused: boolean;
  assessment: PartitionAssessment;
  /** The first corrupt batch found in the partition's files at or after its log start (see Logs.corruptBatches), if any. */
  corruptBatch: CorruptBatch | undefined;
}

export class HealthReader {
  /** group -> topic -> partition -> since when unread records have been seen there (ms since the epoch). */
  private readonly unreadSince = new Map<string, Map<string, Map<number, number>>>();
  /**
   * topic -> partition -> offset -> the unread range read from there, valid while the partition's log start and
   * high watermark are unchanged (then no record came or went). Groups at the same offset share it; a scrape
   * after an evaluation reads no log. Compacted partitions are read each time (compaction changes them in place).
   */
  private ranges = new Map<string, Map<number, Map<number, CachedRange>>>();
  private cachedRanges = 0;

  constructor(
    private readonly catalog: Catalog,
    private readonly offsets: OffsetStore,
    private readonly logs: Logs,
    private readonly clock: Clock,
  ) {}

  /**
   * Visits every partition of every group's subscriptions that `include` keeps, with the group's health there
   * (the metrics read them so), at most `slicePartitions` at a time; a subscription to a topic gone is skipped.
   * It never waits for the event loop itself: a caller that must not hold it up lets it turn between slices.
   * @param slicePartitions most partitions in one slice, >= 1 @default {@link DEFAULT_SLICE_PARTITIONS}
   */
  async *walk(include: (sub: SubscriptionRecord) => boolean = () => true, slicePartitions = DEFAULT_SLICE_PARTITIONS): AsyncGenerator<GroupPartitionHealth[]> {
    for (const groupId of await this.groupIds()) yield* this.group(groupId, include, slicePartitions);
  }

  /** Every group in the catalog. */
  async groupIds(): Promise<string[]> {
    return (await this.catalog.groups.list()).map((g) => g.groupId);
  }

  /**
   * Visits the partitions of one group's subscriptions that `include` keeps, as {@link walk} does; what the group
   * committed and paused is read once, before the first slice.
   */
  async *group(groupId: string, include: (sub: SubscriptionRecord) => boolean = () => true, slicePartitions = DEFAULT_SLICE_PARTITIONS): AsyncGenerator<GroupPartitionHealth[]> {
    const subs = (await this.catalog.subscriptions.list(groupId)).filter(include);
    if (subs.length === 0) return;
    const committed = new Map((await this.offsets.list(groupId)).map((o) => [`${o.topic}/${o.partition}`, o]));
    const pauses = await this.catalog.pauses.list(groupId);
    for (const sub of subs) {
      if (!(await this.catalog.topics.get(sub.topic))) continue;
      const reader = this.subscription(sub);
      const partitions = await this.logs.offsets(sub.topic);
      for (let first = 0; first < partitions.length; first += slicePartitions) {
        yield await Promise.all(partitions.slice(first, first + slicePartitions).map(async (offsets) => {
          const key = `${sub.topic}/${offsets.partition}`;
          const c = committed.get(key);
          const paused = pauses.has(key);
          const corruptBatch = this.logs.corruptBatches?.(sub.topic, offsets.partition).find((b) => b.offset >= offsets.logStartOffset);
          return { groupId, sub, offsets, committed: c, paused, assessment: await reader.assess(offsets, c, paused), corruptBatch };
        }));
      }
    }
  }

  /** The shortest `stallMs` of the subscriptions to `topic`, ms; null when no group subscribes to it. */
  async shortestStallMs(topic: string): Promise<number | null> {
    const subs = await this.catalog.subscriptions.listByTopic(topic);
    return subs.length === 0 ? null : Math.min(...subs.map((s) => s.stallMs));
  }

  /** What the group has committed in the partition now (not what a {@link group} slice read before). */
  async committedNow(groupId: string, topic: string, partition: number): Promise<CommittedPosition | undefined> {
    return this.offsets.get(groupId, topic, partition);
  }

  /**
   * Reads the health of a subscription's partitions, its topic's settings read once.
   * @throws OnelogError `UNKNOWN_TOPIC`
   */
  subscription(sub: SubscriptionRecord): SubscriptionHealthReader {
    const config = this.logs.config(sub.topic);
    const deletes = deletesOldRecords(config.cleanupPolicy);
    const compacted = isCompacted(config.cleanupPolicy);
    const retention = { ms: deletes ? config.retentionMs : -1, bytes: deletes ? config.retentionBytes : -1 };
    const since = nested(nested(this.unreadSince, sub.groupId), sub.topic);
    const ranges = nested(this.ranges, sub.topic);
    const now = this.clock.now();
    return {
      assess: async (offsets, committed, paused) => {
        const unread = committed === undefined ? null
          : committed.offset >= offsets.highWatermark ? NOTHING_UNREAD
            : compacted ? await this.logs.get(sub.topic, offsets.partition).unread(committed.offset)
              : await this.cachedUnread(sub.topic, ranges, offsets, committed.offset);
        let unreadSince: number | null = null;
        if (unread?.firstTimestamp != null) {
          unreadSince = since.get(offsets.partition) ?? now;
          since.set(offsets.partition, unreadSince);
        } else {
          since.delete(offsets.partition);
        }
        return assessPartition({
          committedOffset: committed?.offset ?? null, commitTimestamp: committed?.commitTimestamp ?? null,
          logStartOffset: offsets.logStartOffset, highWatermark: offsets.highWatermark, paused, unread,
          retentionMs: retention.ms, retentionBytes: retention.bytes, unreadSince,
        }, sub, now);
      },
    };
  }

  private async cachedUnread(topic: string, ranges: Map<number, Map<number, CachedRange>>, offsets: PartitionOffsets, offset: number): Promise<UnreadRange> {
    const byOffset = nested(ranges, offsets.partition);
    const cached = byOffset.get(offset);
    if (cached && cached.logStartOffset === offsets.logStartOffset && cached.highWatermark === offsets.highWatermark) return cached.range;
    const range = await this.logs.get(topic, offsets.partition).unread(offset);
    if (!cached && ++this.cachedRanges > MAX_CACHED_RANGES) {
      // Past the bound, start over: the next reads fill it with the offsets groups are at now.
      this.ranges = new Map();
      this.cachedRanges = 0;
      return range;
    }
    byOffset.set(offset, { logStartOffset: offsets.logStartOffset, highWatermark: offsets.highWatermark, range });
    return range;
  }

  /** Forgets what it remembers of a deleted topic. */
  deleteTopic(topic: string): void {
    for (const byTopic of this.unreadSince.values()) byTopic.delete(topic);
    // A topic created again under the name has other records.
    for (const byOffset of this.ranges.get(topic)?.values() ?? []) this.cachedRanges -= byOffset.size;
    this.ranges.delete(topic);
  }

  /** Forgets what it remembers of a deleted group. */
  deleteGroup(groupId: string): void {
    this.unreadSince.delete(groupId);
  }
}

/** What a subscription's health is read with. */
export interface SubscriptionHealthReader {
  /**
   * The group's health in one partition, and the conditions behind it.
   * @param offsets the partition's log start offset and high watermark (from {@link Logs.offsets})
   * @throws the log store's errors if the partition cannot be read
   */
  assess(offsets: PartitionOffsets, committed: CommittedPosition | undefined, paused: boolean): Promise<PartitionAssessment>;
}

interface CachedRange {
  logStartOffset: number;
  highWatermark: number;
  range: UnreadRange;
}

const NOTHING_UNREAD: UnreadRange = { records: 0, estimate: false, firstTimestamp: null, bytes: 0 };

/** The map under `key` in `map`, created empty if missing. */
function nested<K, V extends Map<unknown, unknown>>(map: Map<K, V>, key: K): V {
  let inner = map.get(key);
  if (inner === undefined) map.set(key, (inner = new Map() as V));
  return inner;
}

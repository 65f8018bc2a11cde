/**
 * Where a group resumes in a partition, decided when the partition is assigned or a fetch falls off the log:
 * the committed offset; for a partition never committed, the subscription's start policy, committed at once
 * (so the starting point is fixed when the partition is first assigned, as a Pub/Sub subscription's is, and
 * records deleted before the group reads them pause it like any other); for a committed offset outside the log, the subscription's out-of-range policy:
 * `pause` (the default: the partition stops for this group, an alert is recorded, and only an explicit reset
 * resumes it) or a jump to `earliest` / `latest`, recorded as an alert with the number of records skipped.
 * A client's commit that moves a committed offset from before the log start to or past it (a Kafka client
 * whose auto.offset.reset skipped deleted records, a standalone consumer) is such a jump too: recorded as an
 * `offset-jump` alert, the partition's pause lifted.
 */
import type { Clock } from '../common/clock.js';
import type { Catalog } from '../catalog/catalog.js';
import type { SubscriptionRecord } from '../catalog/subscriptions.js';
import type { Monitor } from '../monitoring/monitor.js';
import type { PartitionError, TopicPartition } from '../protocol/partitions.js';
import type { OffsetStore } from '../offsets/offset-store.js';
import type { Partition } from '../log/partition.js';
import { offsetOutOfRange } from './out-of-range.js';
import type { CommitMarks } from './commit-marks.js';

/** A commit that moves a group past records deleted before it read them. */
export interface CommitJump {
  partition: number;
  /** The committed offset before, below the log start. */
  from: number;
  /** The offset committed, at or after the log start. */
  to: number;
  logStartOffset: number;
}

/** Where a partition starts for a group: an offset, or the error that paused it. */
export type Position = { offset: number; error?: undefined } | { offset?: undefined; error: PartitionError };

export class Positions {
  constructor(
    private readonly catalog: Catalog,
    private readonly offsets: OffsetStore,
    private readonly clock: Clock,
    private readonly monitor: Monitor,
    private readonly marks: CommitMarks,
  ) {}

  /**
   * Resolves where `groupId` starts reading each of `logs` (partitions of the subscription's topic). The
   * start positions of partitions never committed are committed together, in one durable write.
   * @param paused the group's paused partitions (`topic/partition` -> error), from {@link Catalog.pauses}
   * @param commitStarts commit the start positions (not for a Kafka member, whose client's auto.offset.reset decides)
   * @returns a position per log, in order
   */
  async resolveAll(
    groupId: string, subscription: SubscriptionRecord, logs: readonly Partition[], paused: ReadonlyMap<string, PartitionError>,
    commitStarts = true,
  ): Promise<Position[]> {
    const positions: Position[] = [];
    const starts: { topic: string; partition: number; offset: number }[] = [];
    for (const log of logs) {
      const tp = { topic: log.topic, partition: log.partition };
      const pause = paused.get(`${tp.topic}/${tp.partition}`);
      const committed = pause ? undefined : await this.offsets.get(groupId, tp.topic, tp.partition);
      if (pause) {
        positions.push({ error: pause });
      } else if (committed === undefined) {
        // The start is committed at once, whatever the policy: from then on the group owns that position, so
        // records deleted before it reads them are an error, not silently skipped.
        const offset = subscription.startPolicy === 'earliest' ? log.logStartOffset : log.highWatermark;
        starts.push({ ...tp, offset });
        positions.push({ offset });
      } else if (committed.offset >= log.logStartOffset && committed.offset <= log.highWatermark) {
        positions.push({ offset: committed.offset });
      } else {
        positions.push(await this.outOfRange(groupId, subscription, log, committed.offset));
      }
    }
    if (starts.length > 0 && commitStarts) {
      await this.marks.commit(groupId, subscription.topic, starts, this.clock.now());
    }
    return positions;
  }

  /**
   * The entries of a commit (not yet made) that jump past records deleted before the group read them: from a
   * committed offset below the log start to one at or after it. Reads committed offsets only for partitions
   * whose log start moved.
   */
  async jumpsOf(groupId: string, logs: readonly Partition[], offsets: ReadonlyArray<{ partition: number; offset: number }>): Promise<CommitJump[]> {
    const jumps: CommitJump[] = [];
    for (const [i, o] of offsets.entries()) {
      const log = logs[i]!;
      if (log.logStartOffset === 0 || o.offset < log.logStartOffset) continue;
      const before = await this.offsets.get(groupId, log.topic, o.partition);
      if (before !== undefined && before.offset < log.logStartOffset) {
        jumps.push({ partition: o.partition, from: before.offset, to: o.offset, logStartOffset: log.logStartOffset });
      }
    }
    return jumps;
  }

  /** Records committed jumps ({@link jumpsOf}) as `offset-jump` alerts and lifts their partitions' pauses. */
  async recordJumps(groupId: string, topic: string, jumps: readonly CommitJump[], memberId: string | undefined): Promise<void> {
    for (const j of jumps) {
      const tp = { topic, partition: j.partition };
      const recordsSkipped = j.logStartOffset - j.from; // offsets: an upper bound where compaction left gaps
      await this.catalog.pauses.remove(groupId, tp);
      await this.monitor.alerts.record({
        groupId, kind: 'offset-jump', ...tp,
        message: `group ${groupId} committed offset ${j.to} in ${topic}/${j.partition}, past ${recordsSkipped} records deleted ` +
          `before it read them (its committed offset was ${j.from}, the log start is ${j.logStartOffset})`,
        context: { groupId, ...tp, committedOffset: j.from, newOffset: j.to, logStartOffset: j.logStartOffset, recordsSkipped, policy: 'commit', memberId: memberId ?? null },
      });
    }
    await this.monitor.evaluate({ groupId }); // the jump ends the data-lost episode
  }

  /**
   * Applies the subscription's out-of-range policy to a position outside `log`: pauses the partition for
   * the group (recording the error and an alert) or jumps (committing the new offset, recording an alert
   * with the records skipped).
   */
  async outOfRange(groupId: string, subscription: SubscriptionRecord, log: Partition, position: number): Promise<Position> {
    const tp: TopicPartition = { topic: log.topic, partition: log.partition };
    const facts = {
      groupId, ...tp, committedOffset: position, logStartOffset: log.logStartOffset, highWatermark: log.highWatermark,
    };
    const now = this.clock.now();
    if (subscription.onOutOfRange === 'pause') {
      const outOfRange = offsetOutOfRange(facts);
      const error = { ...outOfRange.toJSON(), paused: true };
      await this.catalog.pauses.add(groupId, tp, error, now);
      await this.monitor.alerts.raise({ groupId, kind: 'offset-out-of-range', ...tp, message: outOfRange.message, context: outOfRange.context });
      return { error };
    }
    const offset = subscription.onOutOfRange === 'earliest' ? log.logStartOffset : log.highWatermark;
    // Offsets, not records, when compaction left gaps: the count is an upper bound there.
    const recordsSkipped = Math.max(0, offset - position);
    await this.marks.commit(groupId, tp.topic, [{ ...tp, offset }], now);
    await this.monitor.alerts.record({
      groupId, kind: 'offset-jump', ...tp,
      message: `group ${groupId} jumped from offset ${position} to ${offset} in ${tp.topic}/${tp.partition} ` +
        `(onOutOfRange: ${subscription.onOutOfRange}): ${recordsSkipped} records skipped`,
      context: { ...facts, newOffset: offset, recordsSkipped, policy: subscription.onOutOfRange },
    });
    await this.monitor.evaluate({ groupId }); // the jump ends the data-lost episode
    return { offset };
  }
}

/**
 * The recent health of groups' partitions, for the console's charts: a sample per evaluation run (lag, time
 * lag, headroom), kept in memory with bounds: at most {@link HISTORY_POINTS} samples per partition (the last
 * hour at the default 30 s evaluation interval) and at most `maxSeries` partitions over all groups (later ones
 * are not sampled). Lost on a restart.
 */
import type { GroupHistory, PartitionHealth } from '../protocol/monitoring-api.js';

/** A group's samples of one partition, oldest first. */
export type PartitionHistory = GroupHistory['partitions'][number];

/** Samples kept per partition. */
const HISTORY_POINTS = 120;

export class HealthHistory {
  /** group -> `topic/partition` -> samples */
  private readonly series = new Map<string, Map<string, PartitionHistory>>();
  private count = 0;

  /** @param maxSeries most partitions sampled over every group @param windowMs samples older than this are dropped, ms */
  constructor(private readonly maxSeries = 10_000, private readonly windowMs = 3_600_000) {}

  /** Adds a sample of `groupId`'s partition taken at `at` (ms since the epoch). */
  record(groupId: string, topic: string, partition: number, health: PartitionHealth, at: number): void {
    let group = this.series.get(groupId);
    const key = `${topic}/${partition}`;
    let history = group?.get(key);
    if (history === undefined) {
      if (this.count >= this.maxSeries) return;
      if (group === undefined) this.series.set(groupId, (group = new Map()));
      group.set(key, (history = { topic, partition, samples: [] }));
      this.count++;
    }
    const { samples } = history;
    samples.push({ at, lag: health.lag, timeLagMs: health.timeLagMs, headroomMs: health.headroomMs, headroomBytes: health.headroomBytes });
    while (samples.length > HISTORY_POINTS || (samples.length > 0 && samples[0]!.at < at - this.windowMs)) samples.shift();
  }

  /** A group's samples, per partition (topic, then partition order). */
  of(groupId: string): PartitionHistory[] {
    return [...(this.series.get(groupId)?.values() ?? [])]
      .sort((a, b) => (a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1));
  }

  /** Forgets a deleted topic's partitions in every group. */
  deleteTopic(topic: string): void {
    for (const group of this.series.values()) {
      for (const [key, history] of group) if (history.topic === topic) { group.delete(key); this.count--; }
    }
  }

  /** Forgets a deleted group. */
  deleteGroup(groupId: string): void {
    this.count -= this.series.get(groupId)?.size ?? 0;
    this.series.delete(groupId);
  }
}

/**
 * A group's lag totals ({@link GroupLagTotals}), added up a partition at a time: the one rule `groups describe`, the
 * console and `/metrics` show them by.
 */
import type { GroupLagTotals, PartitionHealth } from '../protocol/monitoring-api.js';

export class LagTotals {
  private readonly totals: GroupLagTotals = { totalLag: 0, maxLag: null, maxTimeLag: null };

  /** Counts one partition's health (a partition without a commit, `lag` null, counts in nothing). */
  add(topic: string, partition: number, health: Pick<PartitionHealth, 'lag' | 'timeLagMs'>): void {
    const { lag, timeLagMs } = health;
    if (lag === null) return;
    const t = this.totals;
    t.totalLag += lag;
    if (t.maxLag === null || lag > t.maxLag.lag) t.maxLag = { topic, partition, lag };
    if (timeLagMs !== null && (t.maxTimeLag === null || timeLagMs > t.maxTimeLag.timeLagMs)) t.maxTimeLag = { topic, partition, timeLagMs };
  }

  /** The totals of the partitions added so far. */
  get value(): GroupLagTotals {
    return { ...this.totals };
  }
}

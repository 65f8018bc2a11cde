/** A group's lag totals (src/monitoring/group-lag-totals.ts): partitions without a commit count in none; ties keep the first. */
import { describe, expect, it } from 'vitest';
import { LagTotals } from '../../src/monitoring/group-lag-totals.js';

describe('a group\'s lag totals', () => {
  it('sum the committed partitions\' lag and name the worst by lag and by time lag', () => {
    const totals = new LagTotals();
    expect(totals.value).toEqual({ totalLag: 0, maxLag: null, maxTimeLag: null });
    totals.add('orders', 0, { lag: null, timeLagMs: null }); // never committed
    expect(totals.value).toEqual({ totalLag: 0, maxLag: null, maxTimeLag: null });
    totals.add('orders', 1, { lag: 40, timeLagMs: 5_000 });
    totals.add('orders', 2, { lag: 70, timeLagMs: 1_000 });
    totals.add('payments', 0, { lag: 70, timeLagMs: 9_000 });
    totals.add('payments', 1, { lag: 0, timeLagMs: 0 });
    expect(totals.value).toEqual({
      totalLag: 180,
      maxLag: { topic: 'orders', partition: 2, lag: 70 },
      maxTimeLag: { topic: 'payments', partition: 0, timeLagMs: 9_000 },
    });
  });
});

/** The drain estimate: time to read the lag at the recent consume rate, beside the time headroom, and which wins. */
import { describe, expect, it } from 'vitest';
import { drainEstimate } from '../../src/monitoring/drain-estimate.js';
import type { HealthSample } from '../../src/protocol/monitoring-api.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** Samples a minute apart, as [committed offset, lag, headroomMs]. */
function samples(...rows: Array<[number | null, number | null, number | null]>): HealthSample[] {
  return rows.map(([committedOffset, lag, headroomMs], i) => ({ at: i * MINUTE, lag, timeLagMs: 0, headroomMs, headroomBytes: null, committedOffset }));
}

describe('drain estimate', () => {
  it('drains first: the lag read at the rate of the window before retention deletes it', () => {
    // 600 records read in 2 minutes: 5 records/s; 3,000 left: 600 s, before the hour of headroom.
    expect(drainEstimate(samples([0, 3600, HOUR], [300, 3300, HOUR], [600, 3000, HOUR]))).toEqual({
      at: 2 * MINUTE, consumeRecordsPerSec: 5, windowMs: 2 * MINUTE, drainMs: 600_000, retentionInMs: HOUR, outcome: 'drains-first',
    });
  });

  it('retention first: reading too slowly, or not at all', () => {
    expect(drainEstimate(samples([0, 60_000, HOUR], [60, 60_000, HOUR]))).toMatchObject({ consumeRecordsPerSec: 1, drainMs: 1000 * HOUR / 60, outcome: 'retention-first' });
    expect(drainEstimate(samples([5, 10, HOUR], [5, 10, HOUR]))).toMatchObject({ consumeRecordsPerSec: 0, drainMs: null, retentionInMs: HOUR, outcome: 'retention-first' });
  });

  it('without time retention: drains at any rate, else not draining', () => {
    expect(drainEstimate(samples([0, 60, null], [60, 60, null]))).toMatchObject({ drainMs: 60_000, retentionInMs: null, outcome: 'drains-first' });
    expect(drainEstimate(samples([0, 60, null], [0, 60, null]))).toMatchObject({ drainMs: null, outcome: 'not-draining' });
  });

  it('measures the rate over the last 15 minutes only, counting forward moves (a reset back counts nothing)', () => {
    const rows: Array<[number, number, number]> = [];
    for (let m = 0; m < 20; m++) rows.push([Math.min(m, 4) * 6000, 100, HOUR]); // fast, then stopped 15 minutes before the newest
    expect(drainEstimate(samples(...rows))).toMatchObject({ consumeRecordsPerSec: 0, windowMs: 15 * MINUTE, outcome: 'retention-first' });
    expect(drainEstimate(samples([100, 10, HOUR], [40, 70, HOUR], [100, 10, HOUR]))).toMatchObject({ consumeRecordsPerSec: 60 / 120 });
  });

  it('caught up, or unknown without a rate or a position', () => {
    expect(drainEstimate(samples([0, 0, HOUR]))).toMatchObject({ drainMs: 0, outcome: 'caught-up' });
    expect(drainEstimate(samples([0, 5, HOUR]))).toMatchObject({ consumeRecordsPerSec: null, outcome: 'unknown' });
    expect(drainEstimate(samples([null, null, null], [null, null, null]))).toMatchObject({ at: MINUTE, outcome: 'unknown' });
    expect(drainEstimate([])).toMatchObject({ at: null, outcome: 'unknown' });
  });
});

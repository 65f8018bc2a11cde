/** The one backoff policy (webhooks, client retries, reconnects, in-place retries), waited on a clock. */
import { describe, expect, it } from 'vitest';
import { backoff, backoffDelayMs } from '../../src/common/backoff.js';
import { ManualClock } from '../../src/common/clock.js';

describe('backoff', () => {
  it('doubles from initialMs with each failure, up to maxMs; nothing before a failure', () => {
    const policy = { initialMs: 250, maxMs: 4000 };
    expect([0, 1, 2, 3, 4, 5, 6, 100].map((n) => backoffDelayMs(n, policy))).toEqual([0, 250, 500, 1000, 2000, 4000, 4000, 4000]);
  });

  it('waits on the clock it is given: a manual clock ends the wait when it reaches it, an abort at once', async () => {
    const clock = new ManualClock(0);
    let done = false;
    const waiting = backoff(clock, 3, { initialMs: 100, maxMs: 1000 }).then(() => (done = true));
    clock.advance(399);
    await Promise.resolve();
    expect(done).toBe(false);
    clock.advance(1);
    await waiting;
    expect(done).toBe(true);
    const ctrl = new AbortController();
    const aborted = backoff(clock, 1, { initialMs: 100, maxMs: 1000 }, ctrl.signal);
    ctrl.abort();
    await aborted;
    expect(clock.sleeping).toBe(0);
  });
});

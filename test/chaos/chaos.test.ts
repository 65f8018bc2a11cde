/**
 * The crash loop's short version (`npm run chaos -- --cycles 200` is the long one): 3 SIGKILLs of the broker, the
 * second after a SIGSTOP past the session timeouts, with every workload of test/chaos/chaos.ts running; the history
 * checker must find nothing. Needs the build (`npm test` does it) and PostgreSQL.
 */
import { describe, expect, it } from 'vitest';
import { runChaos } from './chaos.js';

describe('crash loop', () => {
  it('loses, repeats and reorders nothing through 3 SIGKILLs and a SIGSTOP past the session timeouts', async () => {
    const result = await runChaos({ cycles: 3, stopEvery: 2 });
    expect(result.anomalies).toEqual([]);
    // The history is not empty: every workload sent, polled, committed or delivered.
    expect(result.acknowledged).toBeGreaterThan(1000);
    for (const what of ['poll orders-alo', 'poll orders-amo', 'poll orders-hook', 'poll payments-push', 'poll payments-eo (effects)',
      'poll clicks-reader', 'commit orders-alo true', 'commit orders-amo true', 'final-read']) {
      expect(result.operations[what], what).toBeGreaterThan(0);
    }
  }, 240_000);
});

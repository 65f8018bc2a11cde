/**
 * Exponential backoff, the one policy every retry loop uses (webhook attempts, the client's retries after a
 * failure, in-place handler retries): the delay doubles with each failure from `initialMs` up to `maxMs`.
 * Waits are taken on a {@link Clock}, so tests drive them with a manual clock.
 */
import type { Clock } from './clock.js';

/** A backoff policy; units in the names. */
export interface BackoffPolicy {
  /** Delay after the first failure, ms; >= 1. */
  initialMs: number;
  /** Longest delay, ms; >= initialMs. */
  maxMs: number;
}

/** The delay after `failures` failures (1 = the first): initialMs × 2^(failures − 1), at most maxMs; 0 before any. */
export function backoffDelayMs(failures: number, policy: BackoffPolicy): number {
  if (failures <= 0) return 0;
  return Math.min(policy.maxMs, policy.initialMs * 2 ** Math.min(failures - 1, 40));
}

/** Waits out the delay after `failures` failures on `clock` (early if `signal` aborts). */
export function backoff(clock: Clock, failures: number, policy: BackoffPolicy, signal?: AbortSignal): Promise<void> {
  return clock.sleep(backoffDelayMs(failures, policy), signal);
}

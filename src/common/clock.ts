/**
 * Time, injected. Everything that reads the time or waits for it (retention, default record timestamps,
 * commit timestamps, session timeouts, retry delays, backoff) takes a Clock so tests can drive it with
 * {@link ManualClock}.
 */
export interface Clock {
  /** Current time in ms since the Unix epoch. */
  now(): number;
  /**
   * Resolves once `ms` have passed on this clock (at once for `ms <= 0`), or when `signal` aborts (early,
   * never rejecting). As `setTimeout`, the system clock's timer holds the process open while it runs.
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** The system clock (`Date.now()`, `setTimeout`). */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) => new Promise<void>((resolve) => {
    if (ms <= 0 || signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  }),
};

/** A clock that moves only when told to; for tests. Sleeps end when {@link advance} reaches them. */
export class ManualClock implements Clock {
  private readonly sleepers = new Set<{ until: number; wake: () => void }>();

  /** @param time starting time, ms since the epoch */
  constructor(private time = 0) {}

  now(): number {
    return this.time;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (ms <= 0 || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const sleeper = {
        until: this.time + ms,
        wake: () => {
          this.sleepers.delete(sleeper);
          signal?.removeEventListener('abort', sleeper.wake);
          resolve();
        },
      };
      this.sleepers.add(sleeper);
      signal?.addEventListener('abort', sleeper.wake, { once: true });
    });
  }

  /** Sleeps not yet over (for tests that wait until something sleeps). */
  get sleeping(): number {
    return this.sleepers.size;
  }

  /** Moves the clock forward by `ms` (must be >= 0), ending the sleeps it reaches. */
  advance(ms: number): void {
    if (ms < 0) throw new RangeError(`a clock cannot go back (advance by ${ms} ms)`);
    this.time += ms;
    for (const s of [...this.sleepers]) if (s.until <= this.time) s.wake();
  }
}

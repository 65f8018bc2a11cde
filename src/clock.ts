/**
 * Time, injected. Everything that reads the time (retention, default record timestamps, commit
 * timestamps, session timeouts) takes a Clock so tests can drive it with {@link ManualClock}.
 */
export interface Clock {
  /** Current time in ms since the Unix epoch. */
  now(): number;
}

/** The system clock (`Date.now()`). */
export const systemClock: Clock = { now: () => Date.now() };

/** A clock that moves only when told to; for tests. */
export class ManualClock implements Clock {
  /** @param time starting time, ms since the epoch */
  constructor(private time = 0) {}

  now(): number {
    return this.time;
  }

  /** Moves the clock forward by `ms` (must be >= 0). */
  advance(ms: number): void {
    if (ms < 0) throw new RangeError(`a clock cannot go back (advance by ${ms} ms)`);
    this.time += ms;
  }
}

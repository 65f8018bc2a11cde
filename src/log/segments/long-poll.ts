/** Fetches waiting for new records (long-poll): woken when the high watermark moves, or all at a shutdown. */
export class LongPoll {
  private readonly waiters = new Set<() => void>();
  private ended = false;

  /** Resolves on the next {@link wakeAll}, or after `maxWaitMs`; at once when `maxWaitMs <= 0` or after {@link end}. */
  wait(maxWaitMs: number): Promise<void> {
    if (maxWaitMs <= 0 || this.ended) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.waiters.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, maxWaitMs);
      this.waiters.add(wake);
    });
  }

  /** Fetches waiting now. */
  get waiting(): number {
    return this.waiters.size;
  }

  /** Wakes every waiting fetch. */
  wakeAll(): void {
    for (const wake of [...this.waiters]) wake();
  }

  /** Wakes every waiting fetch and lets no new one wait: for a shutdown that should not wait out fetches. */
  end(): void {
    this.ended = true;
    this.wakeAll();
  }
}

/**
 * The broker's background work on timers (retention, compaction, session expiry, closing idle files): each task
 * runs every so many ms, never twice at once (a run starts only after the previous one ended), and its failures
 * are logged (at error for the broker's own, 5xx), never thrown. Timers do not hold the process open.
 */
import { guarded } from '../common/guard.js';
import type { Logger } from '../common/logger.js';
import type { JobGate } from '../cluster/placement.js';

export class BackgroundTasks {
  private readonly timers: NodeJS.Timeout[] = [];
  private stopped = false;

  /** @param topics the topics {@link everyTopic} visits, read at each run */
  constructor(private readonly logger: Logger, private readonly topics: () => Promise<string[]>) {}

  /**
   * Runs `task` every `ms` (0 = never).
   * @param gate asked before each run, which goes on only when it answers true (cluster mode: a job lease, so that
   *   one broker at a time runs the job; see {@link Placement.jobGate})
   */
  repeat(ms: number, what: string, task: () => Promise<unknown>, gate?: JobGate): void {
    if (ms <= 0) return;
    let running = false;
    // Guarded: whatever a run throws is logged (src/common/guard.ts), never an uncaught exception that ends the process.
    const run = guarded(async () => {
      if (running || this.stopped) return;
      running = true;
      try {
        if (gate === undefined || await gate(ms)) await task();
      } finally {
        running = false;
      }
    }, { what: `${what} failed`, logger: this.logger, answer: () => undefined });
    const timer = setInterval(run, ms).unref();
    this.timers.push(timer);
  }

  /**
   * Runs `task` on every topic, one after the other, every `ms` (0 = never); a topic that fails does not stop the others.
   * @param gate as {@link repeat}'s, asked before each pass
   */
  everyTopic(ms: number, what: string, task: (topic: string) => Promise<unknown>, gate?: JobGate): void {
    this.repeat(ms, what, async () => {
      for (const topic of await this.topics().catch(() => [])) {
        await task(topic).catch((err: unknown) => this.logger.warn({ topic, err: (err as Error | null)?.message }, `${what} failed`));
      }
    }, gate);
  }

  /** Stops every timer; a run under way finishes. */
  stop(): void {
    this.stopped = true;
    for (const timer of this.timers) clearInterval(timer);
  }
}

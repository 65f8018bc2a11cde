/**
 * The alert evaluator's queue (docs/monitoring.md): evaluations are asked for by scope (a group, a topic's groups,
 * every group) but queued and run one group at a time, so that
 * - a request for a group already queued and not started merges into it (a stream of commits evaluates it once);
 * - what a caller asked for (a commit, a reset, a retention run, `evaluateAlerts`) goes ahead of what only the
 *   timer asked for: the drain alternates between the two while both wait, so a periodic run over every group
 *   delays a caller's group by one group at most, and a stream of callers' requests does not starve the timer's;
 * - {@link EvaluationQueue.settle} waits for one group's evaluations only, and runs the queued one itself at once
 *   rather than waiting for its turn: a describe of a group waits for its own partitions, not for every group's.
 * A group is never evaluated twice at the same time (two runs would raise or resolve its alerts in a race).
 */
import { setImmediate as nextTurn } from 'node:timers/promises';

/** One group's evaluation, as queued. */
export interface GroupWork {
  readonly groupId: string;
  /** Every subscription of the group (a group or an every-group scope); otherwise only those of {@link topics}. */
  everyTopic: boolean;
  /** Topics whose subscriptions are evaluated, when not {@link everyTopic}. */
  readonly topics: Set<string>;
  /** Whether a caller asked for it (not only the timer): it runs before the timer's work. */
  requested: boolean;
}

interface Entry extends GroupWork {
  finished: boolean;
  readonly done: Promise<void>;
  readonly resolve: () => void;
}

export class EvaluationQueue {
  /** Queued, not started: asked for by a caller, and only by the timer; each in the order first asked for. */
  private readonly requested = new Map<string, Entry>();
  private readonly background = new Map<string, Entry>();
  /** Started, by group (the drain's one and those {@link settle} runs). */
  private readonly running = new Map<string, Entry>();
  private draining: Promise<void> | null = null;
  /** Whether the drain last ran a caller's group (the timer's goes next, if one waits). */
  private ranRequested = false;
  private stopped = false;

  /** @param evaluate runs one group's evaluation; must not reject */
  constructor(private readonly evaluate: (work: GroupWork) => Promise<void>) {}

  /**
   * Queues an evaluation of the group: of every subscription (`topic` null) or of those of `topic`, merged into
   * the one queued and not started if there is one. Resolves once it ran, at once after {@link stop}.
   * @param requested asked for by a caller (runs before the timer's work), not by the timer
   */
  add(groupId: string, topic: string | null, requested: boolean): Promise<void> {
    if (this.stopped) return Promise.resolve();
    let entry = this.requested.get(groupId) ?? this.background.get(groupId);
    if (entry === undefined) {
      let resolve!: () => void;
      const done = new Promise<void>((r) => (resolve = r));
      entry = { groupId, everyTopic: false, topics: new Set(), requested, finished: false, done, resolve };
      (requested ? this.requested : this.background).set(groupId, entry);
    } else if (requested && !entry.requested) {
      this.background.delete(groupId);
      entry.requested = true;
      this.requested.set(groupId, entry);
    }
    if (topic === null) entry.everyTopic = true;
    else entry.topics.add(topic);
    if (this.draining === null) this.draining = this.drain().finally(() => (this.draining = null));
    return entry.done;
  }

  /**
   * Resolves once the group's evaluations queued or running now ended (not those queued later); the queued one is
   * run here and now, after the running one, rather than in its turn. Other groups' evaluations are not waited for.
   */
  async settle(groupId: string): Promise<void> {
    const target = this.queuedOf(groupId) ?? this.running.get(groupId);
    if (target === undefined) return;
    while (!target.finished) {
      const running = this.running.get(groupId);
      if (running !== undefined) await running.done;
      else await this.execute(target); // still queued: nobody started it
    }
  }

  /**
   * Resolves once the evaluations callers asked for so far ended (the drain runs them first); the timer's queued
   * work is not waited for.
   */
  async settleRequested(): Promise<void> {
    await Promise.all([...this.requested.values(), ...[...this.running.values()].filter((e) => e.requested)].map((e) => e.done));
  }

  /** Queued and running evaluations (for tests and logs). */
  get size(): { queued: number; running: number } {
    return { queued: this.requested.size + this.background.size, running: this.running.size };
  }

  /**
   * Runs nothing more: what is queued resolves without running; resolves once the evaluations under way ended
   * (the evaluation function should end early once told so by its own signal).
   */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const entry of [...this.requested.values(), ...this.background.values()]) this.finish(entry);
    this.requested.clear();
    this.background.clear();
    await Promise.all([...this.running.values()].map((e) => e.done));
    await this.draining;
  }

  /** Runs queued groups, callers' first, one at a time, letting the event loop turn between them. */
  private async drain(): Promise<void> {
    while (!this.stopped) {
      const next = this.nextQueued();
      if (next === undefined) {
        if (this.requested.size + this.background.size === 0) return;
        // Every queued group is being run by settle(): wait for one of those to end.
        await Promise.race([...this.running.values()].map((e) => e.done));
        continue;
      }
      this.ranRequested = next.requested;
      await this.execute(next);
      await nextTurn();
    }
  }

  /** The first queued entry whose group is not running: a caller's, unless the last run was one and the timer's waits. */
  private nextQueued(): Entry | undefined {
    const order = this.ranRequested ? [this.background, this.requested] : [this.requested, this.background];
    for (const queue of order) {
      for (const entry of queue.values()) if (!this.running.has(entry.groupId)) return entry;
    }
    return undefined;
  }

  private queuedOf(groupId: string): Entry | undefined {
    return this.requested.get(groupId) ?? this.background.get(groupId);
  }

  /** Takes `entry` off its queue and runs it. */
  private async execute(entry: Entry): Promise<void> {
    (entry.requested ? this.requested : this.background).delete(entry.groupId);
    this.running.set(entry.groupId, entry);
    try {
      await this.evaluate(entry);
    } finally {
      this.running.delete(entry.groupId);
      this.finish(entry);
    }
  }

  private finish(entry: Entry): void {
    entry.finished = true;
    entry.resolve();
  }
}

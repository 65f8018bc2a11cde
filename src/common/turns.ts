/**
 * Order made explicit: a task takes its place in a queue when it is given, not when it starts. Work it must wait
 * for first (`ready`: a topic brought up to date with other brokers, a lease claimed) runs meanwhile, beside the
 * tasks before it, and however long that takes the task keeps its place: so one `await` added before a task
 * cannot reorder a queue's tasks.
 */

/** Tasks run one at a time, in the order they were given. */
export class Turns {
  private tail: Promise<unknown> = Promise.resolve();
  private pending = 0;

  /**
   * Runs `task` once every task given before it has settled and `ready` has resolved. The place is taken now, at the
   * call. A task's failure is its caller's alone: the next task runs all the same.
   * @param ready what the task waits for besides its turn (default: nothing); if it rejects, the task does not run
   *   and the returned promise rejects with its reason
   * @returns what `task` resolves to
   */
  run<T>(task: () => T | Promise<T>, ready?: PromiseLike<unknown>): Promise<T> {
    const previous = this.tail; // never rejects
    const next = (ready === undefined ? previous : Promise.all([previous, ready])).then(task);
    this.pending++;
    const settled = () => void this.pending--;
    // After the task before it too: a `ready` that rejects at once ends this turn, not the one before.
    this.tail = previous.then(() => next).then(settled, settled);
    return next;
  }

  /** Tasks given and not yet settled, waiting or running (inside a task: itself included). */
  get size(): number {
    return this.pending;
  }

  /** Resolves once every task given so far has settled (never rejects). */
  async idle(): Promise<void> {
    await this.tail;
  }
}

/** A {@link Turns} per key (a group, a partition): keys do not wait for each other; an idle key holds no memory. */
export class KeyedTurns<K> {
  private readonly turns = new Map<K, Turns>();

  /** As {@link Turns.run}, in `key`'s order. */
  run<T>(key: K, task: () => T | Promise<T>, ready?: PromiseLike<unknown>): Promise<T> {
    let turns = this.turns.get(key);
    if (turns === undefined) this.turns.set(key, (turns = new Turns()));
    const result = turns.run(task, ready);
    void turns.idle().then(() => {
      if (turns.size === 0 && this.turns.get(key) === turns) this.turns.delete(key);
    });
    return result;
  }
}

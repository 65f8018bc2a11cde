/**
 * The alert evaluator's queue on its own, with group evaluations the test holds and releases: a settle of one
 * group waits for that group only (the bug: a describe waited for the evaluation of every group), requests merge,
 * a group never runs twice at once, callers' work goes ahead of the timer's without starving it, stop ends it.
 */
import { describe, expect, it } from 'vitest';
import { EvaluationQueue } from '../../src/monitoring/evaluation-queue.js';
import type { GroupWork } from '../../src/monitoring/evaluation-queue.js';

/** A group evaluation started by the queue, held until the test releases it. */
interface Held {
  groupId: string;
  everyTopic: boolean;
  topics: string[];
  release: () => void;
}

/** A queue whose evaluations are held; `started` lists them in the order they started. */
function heldQueue(): { queue: EvaluationQueue; started: Held[]; running: () => string[] } {
  const started: Held[] = [];
  const active = new Set<string>();
  const queue = new EvaluationQueue((work: GroupWork) => new Promise<void>((resolve) => {
    if (active.has(work.groupId)) throw new Error(`${work.groupId} evaluated twice at once`);
    active.add(work.groupId);
    started.push({
      groupId: work.groupId, everyTopic: work.everyTopic, topics: [...work.topics],
      release: () => {
        active.delete(work.groupId);
        resolve();
      },
    });
  }));
  return { queue, started, running: () => [...active] };
}

/** Lets queued callbacks and a few turns of the event loop run. */
async function turns(n = 3): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** Tracks whether `p` has settled. */
function tracked(p: Promise<unknown>): () => boolean {
  let done = false;
  void p.then(() => (done = true));
  return () => done;
}

describe('evaluation queue', () => {
  it('settles group A without waiting for a held evaluation of every group, running A\'s queued work at once', async () => {
    const { queue, started } = heldQueue();
    // The timer asks for every group: 1,000 of them, A last.
    const groups = Array.from({ length: 1000 }, (_, i) => `g${String(i).padStart(4, '0')}`);
    const all = tracked(Promise.all(groups.map((g) => queue.add(g, null, false))));
    await turns();
    expect(started.map((h) => h.groupId)).toEqual(['g0000']); // held: the evaluation of every group is stuck
    const settledA = tracked(queue.settle('g0999'));
    await turns();
    expect(started.map((h) => h.groupId)).toEqual(['g0000', 'g0999']); // A runs now, beside the held one
    expect(settledA()).toBe(false);
    started[1]!.release();
    await turns();
    expect(settledA()).toBe(true);
    expect(all()).toBe(false);
    // A is not evaluated again in its old turn: its queued work was done.
    started[0]!.release();
    await turns();
    expect(started.map((h) => h.groupId)).toEqual(['g0000', 'g0999', 'g0001']);
  });

  it('waits for the group\'s running evaluation and the one queued at the call, not for those asked later', async () => {
    const { queue, started } = heldQueue();
    void queue.add('a', null, true);
    await turns();
    void queue.add('a', 't', true); // queued behind the running one
    const settled = tracked(queue.settle('a'));
    await turns();
    expect(started.map((h) => h.groupId)).toEqual(['a']); // never twice at once
    started[0]!.release();
    await turns();
    expect(started.map((h) => [h.groupId, h.everyTopic, h.topics])).toEqual([['a', true, []], ['a', false, ['t']]]);
    void queue.add('a', null, true); // asked for after the settle: not waited for
    started[1]!.release();
    await turns();
    expect(settled()).toBe(true);
    expect(started).toHaveLength(3);
  });

  it('merges requests for a group queued and not started into one evaluation', async () => {
    const { queue, started } = heldQueue();
    const first = tracked(queue.add('busy', null, true));
    await turns();
    const merged = [queue.add('g', 't1', false), queue.add('g', 't2', true), queue.add('g', 't1', true)];
    started[0]!.release();
    await turns();
    expect(first()).toBe(true);
    expect(started.map((h) => [h.groupId, h.everyTopic, h.topics])).toEqual([['busy', true, []], ['g', false, ['t1', 't2']]]);
    started[1]!.release();
    await Promise.all(merged);
    expect(started).toHaveLength(2);
  });

  it('runs callers\' groups ahead of the timer\'s, alternating so that neither starves', async () => {
    const { queue, started } = heldQueue();
    void queue.add('t1', null, false);
    await turns();
    for (const g of ['t2', 't3']) void queue.add(g, null, false);
    for (const g of ['c1', 'c2', 'c3']) void queue.add(g, null, true);
    for (let i = 0; i < 6; i++) {
      started.at(-1)!.release();
      await turns();
    }
    expect(started.map((h) => h.groupId)).toEqual(['t1', 'c1', 't2', 'c2', 't3', 'c3']);
    const requested = tracked(queue.settleRequested());
    void queue.add('t4', null, false);
    await turns();
    expect(requested()).toBe(true); // the timer's work is not waited for
  });

  it('settles what callers asked for without waiting for the timer\'s queued work', async () => {
    const { queue, started } = heldQueue();
    for (const g of ['t1', 't2', 't3']) void queue.add(g, null, false);
    const caller = tracked(queue.add('c', null, true));
    await turns();
    const requested = tracked(queue.settleRequested());
    started[0]!.release(); // t1 ends; c goes next, before t2 and t3
    await turns();
    expect(started.map((h) => h.groupId)).toEqual(['t1', 'c']);
    started[1]!.release();
    await turns();
    expect([caller(), requested()]).toEqual([true, true]);
  });

  it('stops: queued work resolves without running, the running one is waited for, later requests resolve at once', async () => {
    const { queue, started } = heldQueue();
    const running = tracked(queue.add('a', null, true));
    const queued = queue.add('b', null, false);
    await turns();
    const stopped = tracked(queue.stop());
    await queued;
    await turns();
    expect([running(), stopped()]).toEqual([false, false]);
    started[0]!.release();
    await turns();
    expect([running(), stopped()]).toEqual([true, true]);
    await queue.add('c', null, true);
    await queue.settle('b');
    expect(started.map((h) => h.groupId)).toEqual(['a']);
  });
});

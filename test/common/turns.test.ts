/** Order made explicit: a task's place is taken when it is given, whatever it waits for first. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KeyedTurns, Turns } from '../../src/common/turns.js';

/** A promise the test settles when it chooses. */
function deferred(): { promise: Promise<void>; resolve: () => void; reject: (err: Error) => void } {
  let resolve!: () => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

/** Lets every settled promise's reactions run (a fixed number of microtask turns is enough for these chains). */
async function drain(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}

describe('Turns', () => {
  it('runs tasks one at a time in the order given, whatever order their readies and bodies settle in', async () => {
    await fc.assert(fc.asyncProperty(
      fc.array(fc.record({ waits: fc.boolean(), fails: fc.boolean(), readyFails: fc.boolean() }), { minLength: 1, maxLength: 12 }),
      fc.array(fc.nat(), { minLength: 24, maxLength: 24 }),
      async (tasks, settleOrder) => {
        const turns = new Turns();
        const started: number[] = [];
        let running = 0;
        let overlapped = false;
        const readies = tasks.map(() => deferred());
        const bodies = tasks.map(() => deferred());
        const results = tasks.map((t, i) => turns.run(async () => {
          if (running > 0) overlapped = true;
          running++;
          started.push(i);
          try {
            await bodies[i]!.promise;
            if (t.fails) throw new Error(`task ${i} failed`);
            return i;
          } finally {
            running--;
          }
        }, t.waits ? readies[i]!.promise : undefined).then((v) => ({ ok: v }), (err: Error) => ({ err: err.message })));
        // Settle readies and bodies in a random order, letting reactions run between.
        const settlers = tasks.flatMap((t, i) => [
          () => (t.waits && t.readyFails ? readies[i]!.reject(new Error(`ready ${i} failed`)) : readies[i]!.resolve()),
          () => bodies[i]!.resolve(),
        ]);
        const order = settlers.map((s, k) => ({ s, key: settleOrder[k]! })).sort((a, b) => a.key - b.key);
        for (const { s } of order) {
          s();
          await drain();
        }
        const outcomes = await Promise.all(results);
        const ran = tasks.map((t, i) => i).filter((i) => !(tasks[i]!.waits && tasks[i]!.readyFails));
        expect(overlapped).toBe(false);
        expect(started).toEqual(ran);
        outcomes.forEach((o, i) => {
          const t = tasks[i]!;
          if (t.waits && t.readyFails) expect(o).toEqual({ err: `ready ${i} failed` });
          else if (t.fails) expect(o).toEqual({ err: `task ${i} failed` });
          else expect(o).toEqual({ ok: i });
        });
        await turns.idle();
        expect(turns.size).toBe(0);
      },
    ), { numRuns: 200 });
  });

  it('a ready that rejects at once does not let the task after it start before the one before it ends', async () => {
    const turns = new Turns();
    const first = deferred();
    const events: string[] = [];
    const a = turns.run(async () => {
      events.push('a starts');
      await first.promise;
      events.push('a ends');
    });
    const b = turns.run(() => events.push('b runs'), Promise.reject(new Error('refresh failed')));
    const c = turns.run(() => events.push('c runs'));
    await expect(b).rejects.toThrow('refresh failed');
    await drain();
    expect(events).toEqual(['a starts']);
    first.resolve();
    await Promise.all([a, c]);
    expect(events).toEqual(['a starts', 'a ends', 'c runs']);
  });
});

describe('KeyedTurns', () => {
  it('orders each key apart: a slow task of one key does not hold another key back', async () => {
    const turns = new KeyedTurns<string>();
    const slow = deferred();
    const events: string[] = [];
    const a1 = turns.run('a', async () => {
      await slow.promise;
      events.push('a1');
    });
    const a2 = turns.run('a', () => events.push('a2'));
    await turns.run('b', () => events.push('b1'));
    expect(events).toEqual(['b1']);
    slow.resolve();
    await Promise.all([a1, a2]);
    expect(events).toEqual(['b1', 'a1', 'a2']);
  });
});

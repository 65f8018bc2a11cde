/**
 * The contract every offset store engine must pass (as BullMQ runs one suite against each backend). Call
 * {@link offsetStoreContract} from an engine's test file with a factory for that engine.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { OffsetStore } from '../../src/offsets/offset-store.js';

/** A fresh, empty place to keep offsets, and a way to open a store over it (again and again). */
export interface OffsetStoreFixture {
  /** Opens a store over this fixture's place; called again after close to check what survived. */
  open(): Promise<OffsetStore>;
  /** Removes the place, if the engine needs it (temp dirs are removed by the test helper). */
  dispose?(): Promise<void>;
}

const T = 1_700_000_000_000;

/**
 * Registers the offset store contract tests under `describe(name)`.
 * @param factory makes a new, empty fixture for each test
 */
export function offsetStoreContract(name: string, factory: () => OffsetStoreFixture | Promise<OffsetStoreFixture>): void {
  describe(`offset store contract: ${name}`, () => {
    const stores = new Set<OffsetStore>();
    const fixtures: OffsetStoreFixture[] = [];

    afterEach(async () => {
      for (const s of stores) await s.close();
      stores.clear();
      for (const f of fixtures.splice(0)) await f.dispose?.();
    });

    async function fresh(): Promise<{ store: OffsetStore; fixture: OffsetStoreFixture }> {
      const fixture = await factory();
      fixtures.push(fixture);
      const store = await fixture.open();
      stores.add(store);
      return { store, fixture };
    }

    async function reopen(fixture: OffsetStoreFixture, store: OffsetStore): Promise<OffsetStore> {
      stores.delete(store);
      await store.close();
      const again = await fixture.open();
      stores.add(again);
      return again;
    }

    it('get of a key never committed is undefined', async () => {
      const { store } = await fresh();
      expect(await store.get('g', 't', 0)).toBeUndefined();
      await store.commit('g', [{ topic: 't', partition: 0, offset: 5 }], T);
      expect(await store.get('g', 't', 1)).toBeUndefined();
      expect(await store.get('g', 'u', 0)).toBeUndefined();
      expect(await store.get('h', 't', 0)).toBeUndefined();
      expect(await store.list('h')).toEqual([]);
    });

    it('commits many offsets in one call, and gets and lists them', async () => {
      const { store } = await fresh();
      const commits = [
        { topic: 'b', partition: 2, offset: 20 },
        { topic: 'a.b', partition: 0, offset: 0 },
        { topic: 'a', partition: 10, offset: 110 },
        { topic: 'b', partition: 0, offset: 22 },
        { topic: 'a', partition: 2, offset: 102 },
        { topic: 'a', partition: 256, offset: 1256 },
        { topic: 'a-b', partition: 1, offset: 7, metadata: 'm' },
        { topic: 'B', partition: 0, offset: 9 },
        { topic: 'a', partition: 1, offset: 101 },
      ];
      await store.commit('g', commits, T);
      for (const c of commits) {
        expect(await store.get('g', c.topic, c.partition)).toEqual({ offset: c.offset, metadata: c.metadata ?? '', commitTimestamp: T });
      }
      const listed = await store.list('g');
      // Ordered by topic, then partition as a number (2 before 10 before 256).
      expect(listed.map((o) => [o.topic, o.partition, o.offset])).toEqual([
        ['B', 0, 9],
        ['a', 1, 101],
        ['a', 2, 102],
        ['a', 10, 110],
        ['a', 256, 1256],
        ['a-b', 1, 7],
        ['a.b', 0, 0],
        ['b', 0, 22],
        ['b', 2, 20],
      ]);
      expect(listed[5]).toEqual({ topic: 'a-b', partition: 1, offset: 7, metadata: 'm', commitTimestamp: T });
    });

    it('lists and deletes only the group asked, not one whose id extends it', async () => {
      const { store } = await fresh();
      const groups = ['g', 'g2', 'g.x', 'gg', 'f', 'h', 'grüße'];
      for (const [i, g] of groups.entries()) {
        await store.commit(g, [{ topic: 't', partition: 0, offset: i }, { topic: 'u', partition: 3, offset: 100 + i }], T + i);
      }
      for (const [i, g] of groups.entries()) {
        expect(await store.list(g)).toEqual([
          { topic: 't', partition: 0, offset: i, metadata: '', commitTimestamp: T + i },
          { topic: 'u', partition: 3, offset: 100 + i, metadata: '', commitTimestamp: T + i },
        ]);
      }
      await store.deleteGroup('g');
      expect(await store.list('g')).toEqual([]);
      expect(await store.get('g', 't', 0)).toBeUndefined();
      expect(await store.get('g', 'u', 3)).toBeUndefined();
      for (const [i, g] of groups.entries()) {
        if (g === 'g') continue;
        expect((await store.list(g)).map((o) => o.offset)).toEqual([i, 100 + i]);
        expect(await store.get(g, 't', 0)).toMatchObject({ offset: i });
      }
      await store.deleteGroup('never-committed');
      expect((await store.list('g2')).length).toBe(2);
    });

    it('deleteTopic removes every group\'s offsets of that topic and no other', async () => {
      const { store } = await fresh();
      await store.commit('g', [{ topic: 't', partition: 0, offset: 1 }, { topic: 't', partition: 7, offset: 2 }, { topic: 'at', partition: 0, offset: 3 }], T);
      await store.commit('h\u00e9', [{ topic: 't', partition: 1, offset: 4 }, { topic: 't2', partition: 0, offset: 5 }], T);
      await store.commit('t', [{ topic: 'u', partition: 0, offset: 6 }], T); // a group named like the topic
      expect(await store.deleteTopic('t')).toBe(3);
      expect((await store.list('g')).map((o) => [o.topic, o.offset])).toEqual([['at', 3]]);
      expect((await store.list('h\u00e9')).map((o) => [o.topic, o.offset])).toEqual([['t2', 5]]);
      expect((await store.list('t')).map((o) => [o.topic, o.offset])).toEqual([['u', 6]]);
      expect(await store.deleteTopic('t')).toBe(0);
    });

    it('keeps a partition\'s record state durably beside the offsets, replaced whole, removed by null', async () => {
      const { store, fixture } = await fresh();
      expect(await store.recordState('g', 't', 0)).toBeUndefined();
      const state = { suspectFrom: 10, suspectTo: 25, crashes: { 10: 2, 11: 1 } };
      await store.setRecordState('g', 't', 0, state);
      await store.setRecordState('g', 't', 1, { suspectFrom: 3, suspectTo: 3, crashes: { 2: 5 } });
      await store.setRecordState('g', 'ta', 0, { suspectFrom: 0, suspectTo: 1, crashes: {} });
      const again = await reopen(fixture, store);
      expect(await again.recordState('g', 't', 0)).toEqual({ suspectFrom: 10, suspectTo: 25, crashes: { 10: 2, 11: 1 } });
      expect(await again.recordState('h', 't', 0)).toBeUndefined();
      expect(await again.list('g')).toEqual([]); // not an offset
      await again.setRecordState('g', 't', 0, { suspectFrom: 11, suspectTo: 25, crashes: { 11: 1 } });
      expect(await again.recordState('g', 't', 0)).toEqual({ suspectFrom: 11, suspectTo: 25, crashes: { 11: 1 } });
      await again.setRecordState('g', 't', 0, null);
      expect(await again.recordState('g', 't', 0)).toBeUndefined();
      await again.setRecordState('g', 't', 0, null); // removing what is not there is fine
      // A topic's and a group's deletion remove their record states, no other.
      await again.commit('h', [{ topic: 't', partition: 0, offset: 1 }], T);
      await again.setRecordState('h', 't', 0, state);
      await again.setRecordState('i', 't', 0, state); // a group with a record state and no offset of the topic
      expect(await again.deleteTopic('t')).toBe(1);
      expect(await again.recordState('g', 't', 1)).toBeUndefined();
      expect(await again.recordState('h', 't', 0)).toBeUndefined();
      expect(await again.recordState('i', 't', 0)).toBeUndefined();
      expect(await again.recordState('g', 'ta', 0)).toEqual({ suspectFrom: 0, suspectTo: 1, crashes: {} });
      await again.deleteGroup('g');
      expect(await again.recordState('g', 'ta', 0)).toBeUndefined();
    });

    it('keeps a record state\'s entries by offset: set and removed with the state in one write, in offset order, gone with it', async () => {
      const { store, fixture } = await fresh();
      expect(await store.recordEntries('g', 't', 0)).toEqual([]);
      await store.setRecordState('g', 't', 0, { start: 5 }, { set: [[2 ** 40, 'far'], [7, 'a'], [5, 'b'], [300, 'c']] });
      await store.setRecordState('g', 't', 0, { start: 6 }, { set: [[7, 'a2']], remove: [5, 9] }); // 9: absent, fine
      await store.setRecordState('g', 't', 1, { start: 0 }, { set: [[1, 'p1']] });
      await store.setRecordState('g', 'ta', 0, { start: 0 }, { set: [[1, 'ta']] }); // a topic named with t's prefix
      await store.setRecordState('h', 't', 0, { start: 0 }, { set: [[1, 'h']] });
      const again = await reopen(fixture, store);
      expect(await again.recordState('g', 't', 0)).toEqual({ start: 6 });
      expect(await again.recordEntries('g', 't', 0)).toEqual([[7, 'a2'], [300, 'c'], [2 ** 40, 'far']]);
      expect(await again.recordEntries('g', 't', 1)).toEqual([[1, 'p1']]);
      await expect(again.setRecordState('g', 't', 0, { start: 6 }, { set: [[-1, 'x']] })).rejects.toThrow(RangeError);
      expect(await again.recordEntries('g', 't', 0)).toHaveLength(3); // nothing of a refused write
      await again.setRecordState('g', 't', 1, null); // the state and every entry
      expect(await again.recordEntries('g', 't', 1)).toEqual([]);
      expect(await again.deleteTopic('t')).toBe(0);
      expect(await again.recordEntries('g', 't', 0)).toEqual([]);
      expect(await again.recordEntries('h', 't', 0)).toEqual([]);
      expect(await again.recordEntries('g', 'ta', 0)).toEqual([[1, 'ta']]);
      await again.deleteGroup('g');
      expect(await again.recordEntries('g', 'ta', 0)).toEqual([]);
    });

    it('a topic that is a prefix of another is a different key', async () => {
      const { store } = await fresh();
      await store.commit('g', [{ topic: 'ab', partition: 0, offset: 2 }, { topic: 'a', partition: 0, offset: 1 }], T);
      expect(await store.get('g', 'a', 0)).toMatchObject({ offset: 1 });
      expect(await store.get('g', 'ab', 0)).toMatchObject({ offset: 2 });
      expect((await store.list('g')).map((o) => [o.topic, o.offset])).toEqual([['a', 1], ['ab', 2]]);
    });

    it('a later commit overwrites offset, metadata and commit timestamp', async () => {
      const { store } = await fresh();
      await store.commit('g', [{ topic: 't', partition: 0, offset: 5, metadata: 'first' }], T);
      await store.commit('g', [{ topic: 't', partition: 0, offset: 3 }, { topic: 't', partition: 1, offset: 1 }], T + 10);
      // A commit may move an offset back (a reset), and a commit without metadata stores ''.
      expect(await store.get('g', 't', 0)).toEqual({ offset: 3, metadata: '', commitTimestamp: T + 10 });
      expect(await store.list('g')).toEqual([
        { topic: 't', partition: 0, offset: 3, metadata: '', commitTimestamp: T + 10 },
        { topic: 't', partition: 1, offset: 1, metadata: '', commitTimestamp: T + 10 },
      ]);
    });

    it('keeps metadata and the commit timestamp as given, and offsets up to 2^53 - 1', async () => {
      const { store } = await fresh();
      const metadata = 'consumer-7 at host "x"; ünïcode ✓ ' + 'y'.repeat(2000);
      await store.commit('g', [
        { topic: 't', partition: 0, offset: Number.MAX_SAFE_INTEGER, metadata },
        { topic: 't', partition: 2_147_483_647, offset: 0, metadata: '' },
      ], 123);
      expect(await store.get('g', 't', 0)).toEqual({ offset: Number.MAX_SAFE_INTEGER, metadata, commitTimestamp: 123 });
      expect(await store.get('g', 't', 2_147_483_647)).toEqual({ offset: 0, metadata: '', commitTimestamp: 123 });
    });

    it('unicode group ids, topics and metadata, and offsets across the safe integer range, round-trip', async () => {
      const { store, fixture } = await fresh();
      const group = 'grüße-日本-🚀';
      const commits = [
        { topic: 'tópico', partition: 0, offset: 0, metadata: '🚀 four-byte, ✓ three-byte, ü two-byte, and a \u0000 NUL' },
        { topic: 'tópico', partition: 1, offset: 1, metadata: '日本語のメタデータ' },
        { topic: 'tópico', partition: 2, offset: 2 ** 32, metadata: 'a'.repeat(5000) + '✓' },
        { topic: '🚀', partition: 4_294_967_295, offset: Number.MAX_SAFE_INTEGER, metadata: 'ascii only' },
        { topic: 'ascii', partition: 7, offset: 2 ** 53 - 2 },
      ];
      await store.commit(group, commits, T);
      const expected = commits.map((c) => ({ offset: c.offset, metadata: c.metadata ?? '', commitTimestamp: T }));
      for (const [i, c] of commits.entries()) expect(await store.get(group, c.topic, c.partition)).toEqual(expected[i]);
      const listed = [...commits].sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition));
      const asListed = listed.map((c) => ({ topic: c.topic, partition: c.partition, offset: c.offset, metadata: c.metadata ?? '', commitTimestamp: T }));
      expect(await store.list(group)).toEqual(asListed);
      // Neither the ASCII form of the group nor its prefix sees these offsets.
      expect(await store.list('grüße')).toEqual([]);
      expect(await store.get('grusse-日本-🚀', 'tópico', 0)).toBeUndefined();
      const again = await reopen(fixture, store);
      expect(await again.list(group)).toEqual(asListed);
    });

    it('applies operations in call order: a commit queued after deleteGroup survives it', async () => {
      const { store } = await fresh();
      await store.commit('g', [{ topic: 't', partition: 0, offset: 1 }, { topic: 't', partition: 1, offset: 1 }], T);
      // No await between the calls: an engine that batches writes must still apply them in this order.
      const first = store.commit('g', [{ topic: 't', partition: 2, offset: 2 }], T + 1);
      const deleted = store.deleteGroup('g');
      const last = store.commit('g', [{ topic: 't', partition: 3, offset: 3 }], T + 2);
      const other = store.commit('h', [{ topic: 't', partition: 0, offset: 4 }], T + 3);
      await Promise.all([first, deleted, last, other]);
      expect(await store.list('g')).toEqual([{ topic: 't', partition: 3, offset: 3, metadata: '', commitTimestamp: T + 2 }]);
      expect(await store.list('h')).toEqual([{ topic: 't', partition: 0, offset: 4, metadata: '', commitTimestamp: T + 3 }]);
    });

    it('the last of several queued commits of one key wins', async () => {
      const { store } = await fresh();
      await Promise.all(Array.from({ length: 20 }, (_, i) => store.commit('g', [{ topic: 't', partition: 0, offset: i, metadata: `m${i}` }], T + i)));
      expect(await store.get('g', 't', 0)).toEqual({ offset: 19, metadata: 'm19', commitTimestamp: T + 19 });
    });

    it('an empty commit changes nothing', async () => {
      const { store } = await fresh();
      await store.commit('g', [], T);
      expect(await store.list('g')).toEqual([]);
    });

    it('concurrent commits of different groups and partitions all land', async () => {
      const { store } = await fresh();
      await Promise.all(
        Array.from({ length: 50 }, (_, i) => store.commit(`g${i % 5}`, [{ topic: 't', partition: i, offset: i * 10 }], T + i)),
      );
      for (let g = 0; g < 5; g++) {
        const listed = await store.list(`g${g}`);
        expect(listed.map((o) => o.partition)).toEqual(Array.from({ length: 10 }, (_, k) => g + 5 * k));
        for (const o of listed) expect(o).toMatchObject({ offset: o.partition * 10, commitTimestamp: T + o.partition });
      }
    });

    it('a commit of a generation below the fence is refused whole; the fence\'s own generation and later ones pass', async () => {
      const { store } = await fresh();
      expect(await store.generation('g')).toBe(0);
      await store.commit('g', [{ topic: 't', partition: 0, offset: 1 }], T, { generationId: 0 });
      // Advancing without a fence records the generation and refuses nothing.
      expect(await store.advanceGeneration('g', 2)).toBe(2);
      await store.commit('g', [{ topic: 't', partition: 0, offset: 2 }], T, { generationId: 1 });
      expect(await store.advanceGeneration('g', 3, { fence: true })).toBe(3);
      expect(await store.generation('g')).toBe(3);
      expect(await store.generation('h')).toBe(0);
      const refused = await store.commit('g', [{ topic: 't', partition: 0, offset: 9 }, { topic: 't', partition: 1, offset: 9 }], T + 1, { generationId: 2 })
        .then(() => undefined, (err: unknown) => err);
      expect(refused).toMatchObject({ code: 'ILLEGAL_GENERATION', context: { groupId: 'g', generationId: 2, currentGenerationId: 3 } });
      expect(await store.list('g')).toEqual([{ topic: 't', partition: 0, offset: 2, metadata: '', commitTimestamp: T }]);
      await store.commit('g', [{ topic: 't', partition: 1, offset: 4 }], T + 2, { generationId: 3 });
      await store.commit('g', [{ topic: 't', partition: 1, offset: 5 }], T + 3, { generationId: 4 }); // ahead of the store: passes
      await store.commit('g', [{ topic: 't', partition: 2, offset: 6 }], T + 4); // unfenced (an admin's reset): passes
      expect((await store.list('g')).map((o) => o.offset)).toEqual([2, 5, 6]);
      // A later advance without a fence keeps the fence where it was.
      expect(await store.advanceGeneration('g', 7)).toBe(7);
      await store.commit('g', [{ topic: 't', partition: 0, offset: 7 }], T + 5, { generationId: 3 });
      await expect(store.commit('g', [{ topic: 't', partition: 0, offset: 8 }], T + 6, { generationId: 2 })).rejects.toMatchObject({ code: 'ILLEGAL_GENERATION' });
      // Another group's generations are its own.
      await store.commit('h', [{ topic: 't', partition: 0, offset: 2 }], T, { generationId: 1 });
      expect(await store.get('h', 't', 0)).toMatchObject({ offset: 2 });
    });

    it('neither the highest generation nor the fence goes down, and both survive deleteGroup and reopen', async () => {
      const { store, fixture } = await fresh();
      expect(await store.advanceGeneration('g', 5, { fence: true })).toBe(5);
      expect(await store.advanceGeneration('g', 2, { fence: true })).toBe(5);
      expect(await store.advanceGeneration('g', 5)).toBe(5);
      await store.commit('g', [{ topic: 't', partition: 0, offset: 1 }], T, { generationId: 5 });
      await expect(store.commit('g', [{ topic: 't', partition: 0, offset: 2 }], T, { generationId: 4 })).rejects.toMatchObject({ code: 'ILLEGAL_GENERATION' });
      await store.deleteGroup('g');
      expect(await store.list('g')).toEqual([]);
      expect(await store.generation('g')).toBe(5);
      const again = await reopen(fixture, store);
      expect(await again.generation('g')).toBe(5);
      await expect(again.commit('g', [{ topic: 't', partition: 0, offset: 2 }], T, { generationId: 4 })).rejects.toMatchObject({ code: 'ILLEGAL_GENERATION' });
      expect(await again.advanceGeneration('g', 6)).toBe(6);
    });

    it('fences and fenced commits called without awaits take effect in call order', async () => {
      const { store } = await fresh();
      // As two coordinators racing would: every commit of the tenure before a fence, called after it, is refused.
      const calls: Array<Promise<unknown>> = [];
      const outcomes: Array<'ok' | 'refused'> = [];
      for (let g = 1; g <= 20; g++) {
        calls.push(store.advanceGeneration('g', g, { fence: true }));
        for (const generationId of [g - 1, g]) {
          const i = outcomes.push('ok') - 1;
          calls.push(store.commit('g', [{ topic: 't', partition: 0, offset: generationId * 10 }], T + g, { generationId }).catch((err: { code?: string }) => {
            if (err.code !== 'ILLEGAL_GENERATION') throw err;
            outcomes[i] = 'refused';
          }));
        }
      }
      await Promise.all(calls);
      expect(outcomes).toEqual(Array.from({ length: 20 }, () => ['refused', 'ok'] as const).flat());
      expect(await store.get('g', 't', 0)).toMatchObject({ offset: 200 });
      expect(await store.generation('g')).toBe(20);
    });

    it('everything committed survives close and reopen; deletes too', async () => {
      const { store, fixture } = await fresh();
      await store.commit('g', [{ topic: 't', partition: 0, offset: 5, metadata: 'm' }, { topic: 't', partition: 1, offset: 6 }], T);
      await store.commit('g2', [{ topic: 't', partition: 0, offset: 50 }], T + 1);
      await store.commit('gone', [{ topic: 't', partition: 0, offset: 1 }], T + 2);
      await store.deleteGroup('gone');
      const again = await reopen(fixture, store);
      expect(await again.get('g', 't', 0)).toEqual({ offset: 5, metadata: 'm', commitTimestamp: T });
      expect(await again.list('g')).toEqual([
        { topic: 't', partition: 0, offset: 5, metadata: 'm', commitTimestamp: T },
        { topic: 't', partition: 1, offset: 6, metadata: '', commitTimestamp: T },
      ]);
      expect(await again.list('g2')).toEqual([{ topic: 't', partition: 0, offset: 50, metadata: '', commitTimestamp: T + 1 }]);
      expect(await again.list('gone')).toEqual([]);
      await again.commit('g', [{ topic: 't', partition: 0, offset: 8 }], T + 3);
      const third = await reopen(fixture, again);
      expect(await third.get('g', 't', 0)).toEqual({ offset: 8, metadata: '', commitTimestamp: T + 3 });
    });

    it('close waits for the calls in flight, which keep what they wrote; later calls are refused with BROKER_CLOSED', async () => {
      const { store, fixture } = await fresh();
      const inFlight = [
        store.commit('g', [{ topic: 't', partition: 0, offset: 7 }], T),
        store.advanceGeneration('g', 3, { fence: true }),
        store.commit('g', [{ topic: 't', partition: 1, offset: 9 }], T, { generationId: 3 }),
      ];
      const closing = store.close();
      await expect(Promise.all(inFlight)).resolves.toEqual([undefined, 3, undefined]);
      await closing;
      const refused = [
        store.commit('g', [{ topic: 't', partition: 0, offset: 8 }], T),
        store.advanceGeneration('g', 4, { fence: true }),
        store.get('g', 't', 0),
        store.list('g'),
        store.generation('g'),
        store.deleteGroup('g'),
        store.deleteTopic('t'),
      ];
      for (const call of refused) await expect(call).rejects.toMatchObject({ code: 'BROKER_CLOSED' });
      await store.close();
      const again = await reopen(fixture, store);
      expect(await again.list('g')).toMatchObject([{ partition: 0, offset: 7 }, { partition: 1, offset: 9 }]);
      expect(await again.generation('g')).toBe(3);
    });
  });
}

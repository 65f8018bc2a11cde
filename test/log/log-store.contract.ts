/**
 * The contract every log store engine must pass (local segment files, objects in S3-compatible storage indexed
 * in PostgreSQL): the same tests through the LogStore interface. Call {@link logStoreContract} from an engine's
 * test file with a factory for that engine.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_TOPIC_CONFIG } from '../../src/protocol/topic-config.js';
import { decodeRecords, encodeBatch, validateBatch } from '../../src/protocol/record-batch.js';
import type { AppendOutcome, LogStore } from '../../src/log/log-store.js';
import { editsByPartition, readEdits } from '../helpers/wikiticker.js';
import type { Edit } from '../helpers/wikiticker.js';

/** A fresh, empty place for a log, and a way to open a store over it (again and again). */
export interface LogStoreFixture {
  open(): Promise<LogStore>;
  dispose(): Promise<void>;
}

/** Batches of `per` edits each, as a producer would send them. */
function batchesOf(edits: readonly Edit[], per: number): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < edits.length; i += per) {
    out.push(encodeBatch(edits.slice(i, i + per).map((e) => ({ key: Buffer.from(e.key), value: Buffer.from(e.value), timestamp: e.timestamp })), 0, 0));
  }
  return out;
}

function stored(outcome: AppendOutcome): { baseOffset: number; lastOffset: number } {
  if ('error' in outcome) throw outcome.error;
  return outcome;
}

/** Every record of a partition from `from`, read in pages of `maxBytes`: [offset, value]. */
async function readAll(store: LogStore, topic: string, partition: number, from: number, maxBytes: number): Promise<Array<[number, string]>> {
  const out: Array<[number, string]> = [];
  let offset = from;
  for (;;) {
    const read = await store.read(topic, partition, offset, maxBytes);
    if (read.batches.length === 0) return out;
    for (let pos = 0; pos < read.batches.length;) {
      const size = validateBatch(read.batches, pos);
      if (typeof size === 'string') throw new Error(size);
      for (const r of decodeRecords(read.batches, pos)) if (r.offset >= offset) out.push([r.offset, r.value!.toString()]);
      pos += size;
    }
    expect(read.nextOffset).toBeGreaterThan(offset);
    offset = read.nextOffset;
  }
}

export function logStoreContract(name: string, factory: () => Promise<LogStoreFixture>): void {
  describe(`log store contract: ${name}`, () => {
    const fixtures: LogStoreFixture[] = [];
    const stores = new Set<LogStore>();
    afterEach(async () => {
      for (const s of stores) await s.close();
      stores.clear();
      for (const f of fixtures.splice(0)) await f.dispose();
    });

    async function fresh(): Promise<{ store: LogStore; fixture: LogStoreFixture }> {
      const fixture = await factory();
      fixtures.push(fixture);
      const store = await fixture.open();
      stores.add(store);
      return { store, fixture };
    }

    const edits = editsByPartition(readEdits().slice(0, 3000), 4);

    it('the Wikipedia edits over 4 partitions, appended at once: offsets in append order, read back whole and in pages', async () => {
      const { store } = await fresh();
      await store.createTopic('edits', 4, DEFAULT_TOPIC_CONFIG);
      const requests = edits.flatMap((e, partition) => batchesOf(e, 50).map((batch) => ({ topic: 'edits', partition, batch })));
      // Two requests at once, as two producers would send them.
      const half = Math.floor(requests.length / 2);
      const [first, second] = await Promise.all([store.append(requests.slice(0, half)), store.append(requests.slice(half))]);
      const outcomes = [...first!, ...second!].map(stored);
      for (let p = 0; p < 4; p++) {
        const mine = outcomes.filter((_, i) => requests[i]!.partition === p);
        // Each partition's batches follow each other in the order they were appended.
        let next = 0;
        for (const o of mine) {
          expect(o.baseOffset).toBe(next);
          next = o.lastOffset + 1;
        }
        expect(await store.positions('edits', p)).toEqual({ logStartOffset: 0, highWatermark: edits[p]!.length });
        const want = edits[p]!.map((e, i): [number, string] => [i, e.value]);
        expect(await readAll(store, 'edits', p, 0, 1024 * 1024)).toEqual(want);
        expect(await readAll(store, 'edits', p, 0, 1)).toEqual(want); // a batch a read
      }
    });

    it('a read starts at the batch holding the offset; at the high watermark it is empty; outside the log it is OFFSET_OUT_OF_RANGE', async () => {
      const { store } = await fresh();
      await store.createTopic('t', 2, DEFAULT_TOPIC_CONFIG);
      const batches = batchesOf(edits[0]!.slice(0, 100), 10);
      (await store.append(batches.map((batch) => ({ topic: 't', partition: 0, batch })))).map(stored);
      const middle = await store.read('t', 0, 35, 1);
      expect(decodeRecords(middle.batches).map((r) => r.offset)).toEqual([30, 31, 32, 33, 34, 35, 36, 37, 38, 39]);
      expect(middle).toMatchObject({ nextOffset: 40, logStartOffset: 0, highWatermark: 100 });
      expect(await readAll(store, 't', 0, 35, 300)).toEqual(edits[0]!.slice(35, 100).map((e, i): [number, string] => [35 + i, e.value]));
      const end = await store.read('t', 0, 100, 1000);
      expect(end).toMatchObject({ nextOffset: 100, highWatermark: 100 });
      expect(end.batches.length).toBe(0);
      expect((await store.read('t', 1, 0, 1000)).batches.length).toBe(0);
      await expect(store.read('t', 0, 101, 1000)).rejects.toMatchObject({ code: 'OFFSET_OUT_OF_RANGE', context: { offset: 101, highWatermark: 100 } });
      await expect(store.positions('t', 2)).rejects.toMatchObject({ code: 'UNKNOWN_PARTITION' });
    });

    it('deleteRecordsBefore moves the log start forward only; below it reads are OFFSET_OUT_OF_RANGE; above the high watermark it is refused', async () => {
      const { store } = await fresh();
      await store.createTopic('t', 1, DEFAULT_TOPIC_CONFIG);
      (await store.append(batchesOf(edits[1]!.slice(0, 40), 10).map((batch) => ({ topic: 't', partition: 0, batch })))).map(stored);
      expect(await store.deleteRecordsBefore('t', 0, 25)).toBe(25);
      expect(await store.deleteRecordsBefore('t', 0, 5)).toBe(25);
      expect(await store.positions('t', 0)).toEqual({ logStartOffset: 25, highWatermark: 40 });
      await expect(store.read('t', 0, 24, 1000)).rejects.toMatchObject({ code: 'OFFSET_OUT_OF_RANGE', context: { logStartOffset: 25 } });
      expect((await readAll(store, 't', 0, 25, 1000)).map(([o]) => o)).toEqual(Array.from({ length: 15 }, (_, i) => 25 + i));
      await expect(store.deleteRecordsBefore('t', 0, 41)).rejects.toMatchObject({ code: 'OFFSET_OUT_OF_RANGE' });
      expect(await store.deleteRecordsBefore('t', 0, 40)).toBe(40);
      expect((await store.read('t', 0, 40, 1000)).batches.length).toBe(0);
    });

    it('waitForData wakes when a batch lands past the offset, and ends on its timeout otherwise', async () => {
      const { store } = await fresh();
      await store.createTopic('t', 1, DEFAULT_TOPIC_CONFIG);
      const [batch] = batchesOf(edits[2]!.slice(0, 5), 5);
      let woke = false;
      const waiting = store.waitForData('t', 0, 0, 20_000).then(() => (woke = true));
      expect(woke).toBe(false);
      stored((await store.append([{ topic: 't', partition: 0, batch: batch! }]))[0]!);
      await waiting;
      expect(woke).toBe(true);
      // Nothing past 5: ends when its 50 ms are up.
      await store.waitForData('t', 0, 5, 50);
      expect((await store.positions('t', 0)).highWatermark).toBe(5);
    });

    it('an idempotent producer: retries answered with the stored offsets, nothing stored twice, also after a reopen; what breaks its sequence is refused', async () => {
      const { store, fixture } = await fresh();
      await store.createTopic('t', 1, DEFAULT_TOPIC_CONFIG);
      const values = edits[3]!.slice(0, 12).map((e) => Buffer.from(e.value));
      const batch = (producerId: number, producerEpoch: number, baseSequence: number, from: number, count: number) =>
        encodeBatch(values.slice(from, from + count).map((value) => ({ key: null, value })), 0, 1, { producerId, producerEpoch, baseSequence });
      const at = (batches: Buffer[]) => batches.map((b) => ({ topic: 't', partition: 0, batch: b }));
      const b0 = batch(7, 0, 0, 0, 3);
      const b1 = batch(7, 0, 3, 3, 2);
      expect(await store.append(at([b0, b1]))).toEqual([{ baseOffset: 0, lastOffset: 2 }, { baseOffset: 3, lastOffset: 4 }]);
      // Retries, alone and together, get the stored offsets back; nothing is stored again.
      expect(await store.append(at([b1]))).toEqual([{ baseOffset: 3, lastOffset: 4, duplicate: true }]);
      expect(await store.append(at([b0, b1]))).toEqual([{ baseOffset: 0, lastOffset: 2, duplicate: true }, { baseOffset: 3, lastOffset: 4, duplicate: true }]);
      // A new batch and a plain one beside it go on.
      const plain = encodeBatch([{ key: null, value: values[5]! }], 0, 1);
      expect(await store.append(at([batch(7, 0, 5, 6, 2), plain]))).toEqual([{ baseOffset: 5, lastOffset: 6 }, { baseOffset: 7, lastOffset: 7 }]);
      const refused = await store.append(at([batch(7, 0, 9, 8, 1)]));
      expect(refused).toMatchObject([{ error: { code: 'OUT_OF_ORDER_SEQUENCE' } }]);
      expect(await store.append(at([batch(99, 0, 4, 8, 1)]))).toMatchObject([{ error: { code: 'UNKNOWN_PRODUCER_ID' } }]);
      expect(await store.append(at([batch(7, 1, 0, 8, 1)]))).toEqual([{ baseOffset: 8, lastOffset: 8 }]); // a new epoch starts at 0
      expect(await store.append(at([batch(7, 0, 7, 9, 1)]))).toMatchObject([{ error: { code: 'INVALID_PRODUCER_EPOCH' } }]);
      expect(await store.positions('t', 0)).toEqual({ logStartOffset: 0, highWatermark: 9 });
      expect((await readAll(store, 't', 0, 0, 100_000)).map(([, v]) => v)).toEqual([0, 1, 2, 3, 4, 6, 7, 5, 8].map((i) => values[i]!.toString()));
      stores.delete(store);
      await store.close();
      const again = await fixture.open();
      stores.add(again);
      expect(await again.append(at([batch(7, 1, 0, 8, 1)]))).toEqual([{ baseOffset: 8, lastOffset: 8, duplicate: true }]);
      expect(await again.append(at([batch(7, 1, 1, 10, 1)]))).toEqual([{ baseOffset: 9, lastOffset: 9 }]);
      // A batch and its retry in one request: stored once.
      const b2 = batch(7, 1, 2, 11, 1);
      expect(await again.append(at([b2, b2]))).toEqual([{ baseOffset: 10, lastOffset: 10 }, { baseOffset: 10, lastOffset: 10, duplicate: true }]);
      expect((await again.positions('t', 0)).highWatermark).toBe(11);
    });

    it('everything acknowledged is there after close and reopen, and appends go on after it', async () => {
      const { store, fixture } = await fresh();
      await store.createTopic('t', 2, DEFAULT_TOPIC_CONFIG);
      const requests = [0, 1].flatMap((partition) => batchesOf(edits[partition]!.slice(0, 30), 7).map((batch) => ({ topic: 't', partition, batch })));
      (await store.append(requests)).map(stored);
      stores.delete(store);
      await store.close();
      const again = await fixture.open();
      stores.add(again);
      for (const p of [0, 1]) expect((await readAll(again, 't', p, 0, 1000)).map(([, v]) => v)).toEqual(edits[p]!.slice(0, 30).map((e) => e.value));
      const [more] = batchesOf(edits[0]!.slice(30, 33), 3);
      expect(stored((await again.append([{ topic: 't', partition: 0, batch: more! }]))[0]!)).toEqual({ baseOffset: 30, lastOffset: 32 });
    });
  });
}

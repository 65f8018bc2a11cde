/**
 * The contract every log engine must pass, through the {@link Logs} interface the broker uses (examples, and a model
 * fuzz of appends, delete-records and reopens): the segment files
 * ({@link LogManager}) and objects indexed by a sequencer (ClusterLogs, over PostgreSQL and S3 in the services
 * tier, over the in-memory sequencer and object store in the unit tier). Call {@link logsContract} from an engine's
 * test file with a factory for that engine.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_TOPIC_CONFIG } from '../../src/protocol/topic-config.js';
import { decodeRecords, encodeBatch, validateBatch } from '../../src/protocol/record-batch.js';
import type { Logs, TopicLayout } from '../../src/log/logs.js';
import type { AppendResult } from '../../src/log/partition.js';
import { editsByPartition, readEdits } from '../helpers/wikiticker.js';
import type { Edit } from '../helpers/wikiticker.js';

/** A fresh, empty place for a log, and a way to open an engine over it (again and again). */
export interface LogsFixture {
  /** Opens the engine and starts it with `topics` (the catalog's part in the broker). */
  open(topics: readonly TopicLayout[]): Promise<Logs>;
  /** Records a topic in the catalog the engine reads (cluster mode reads a topic announced by a broker from it). */
  recordTopic(topic: TopicLayout): Promise<void>;
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

/** Every record of a partition from `from`, read in pages of `maxBytes`: [offset, value]. */
async function readAll(logs: Logs, topic: string, partition: number, from: number, maxBytes: number): Promise<Array<[number, string]>> {
  const out: Array<[number, string]> = [];
  let offset = from;
  for (;;) {
    const read = await logs.get(topic, partition).readBatches(offset, maxBytes);
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

/** A partition's positions as every broker sees them now. */
async function positions(logs: Logs, topic: string, partition: number): Promise<{ logStartOffset: number; highWatermark: number }> {
  await logs.refresh(topic, [partition]);
  const { logStartOffset, highWatermark } = logs.get(topic, partition);
  return { logStartOffset, highWatermark };
}

/** Appends batches to partitions of `topic`, as one request. */
function append(logs: Logs, topic: string, batches: ReadonlyArray<{ partition: number; batch: Buffer }>): Promise<AppendResult[]> {
  return logs.appendAll(batches.map((b) => ({ log: logs.get(topic, b.partition), batch: b.batch })));
}

/** A call of the engine as a promise: the local engine answers (and throws) at once, the object one later. */
async function settled<T>(call: () => T | Promise<T>): Promise<T> {
  return call();
}

export function logsContract(name: string, factory: () => Promise<LogsFixture>): void {
  describe(`log contract: ${name}`, () => {
    const fixtures: LogsFixture[] = [];
    const open = new Set<Logs>();
    afterEach(async () => {
      for (const logs of open) await logs.close();
      open.clear();
      for (const f of fixtures.splice(0)) await f.dispose();
    });

    /** An engine over a fresh place; `reopen` closes it and opens another over the same place, with the topics created. */
    async function fresh(): Promise<{ logs: Logs; createTopic(topic: string, partitions: number): Promise<void>; reopen(): Promise<Logs> }> {
      const fixture = await factory();
      fixtures.push(fixture);
      const topics: TopicLayout[] = [];
      let logs = await fixture.open(topics);
      open.add(logs);
      return {
        logs,
        // As the broker creates one: the partitions, then the catalog's row, then the topic served.
        async createTopic(topic, partitions) {
          const layout = { name: topic, partitions, config: DEFAULT_TOPIC_CONFIG };
          await logs.createTopicLogs(topic, partitions);
          await fixture.recordTopic(layout);
          logs.addTopic(topic, partitions, DEFAULT_TOPIC_CONFIG, true);
          topics.push(layout);
        },
        async reopen() {
          open.delete(logs);
          await logs.close();
          logs = await fixture.open(topics);
          open.add(logs);
          return logs;
        },
      };
    }

    const edits = editsByPartition(readEdits().slice(0, 3000), 4);

    it('the Wikipedia edits over 4 partitions, appended at once: offsets in append order, read back whole and in pages', async () => {
      const { logs, createTopic } = await fresh();
      await createTopic('edits', 4);
      const requests = edits.flatMap((e, partition) => batchesOf(e, 50).map((batch) => ({ partition, batch })));
      // Two requests at once, as two producers would send them.
      const half = Math.floor(requests.length / 2);
      const [first, second] = await Promise.all([append(logs, 'edits', requests.slice(0, half)), append(logs, 'edits', requests.slice(half))]);
      const outcomes = [...first!, ...second!];
      for (let p = 0; p < 4; p++) {
        const mine = outcomes.filter((_, i) => requests[i]!.partition === p);
        // Each partition's batches follow each other in the order they were appended.
        let next = 0;
        for (const o of mine) {
          expect(o.baseOffset).toBe(next);
          next = o.lastOffset + 1;
        }
        expect(await positions(logs, 'edits', p)).toEqual({ logStartOffset: 0, highWatermark: edits[p]!.length });
        const want = edits[p]!.map((e, i): [number, string] => [i, e.value]);
        expect(await readAll(logs, 'edits', p, 0, 1024 * 1024)).toEqual(want);
        expect(await readAll(logs, 'edits', p, 0, 1)).toEqual(want); // a batch a read
      }
    });

    it('a read starts at the batch holding the offset; at the high watermark it is empty; outside the log it is OFFSET_OUT_OF_RANGE', async () => {
      const { logs, createTopic } = await fresh();
      await createTopic('t', 2);
      await append(logs, 't', batchesOf(edits[0]!.slice(0, 100), 10).map((batch) => ({ partition: 0, batch })));
      const log = logs.get('t', 0);
      const middle = await log.readBatches(35, 1);
      expect(decodeRecords(middle.batches).map((r) => r.offset)).toEqual([30, 31, 32, 33, 34, 35, 36, 37, 38, 39]);
      expect(middle.nextOffset).toBe(40);
      expect(await positions(logs, 't', 0)).toEqual({ logStartOffset: 0, highWatermark: 100 });
      expect(await readAll(logs, 't', 0, 35, 300)).toEqual(edits[0]!.slice(35, 100).map((e, i): [number, string] => [35 + i, e.value]));
      const end = await log.readBatches(100, 1000);
      expect(end.nextOffset).toBe(100);
      expect(end.batches.length).toBe(0);
      expect((await logs.get('t', 1).readBatches(0, 1000)).batches.length).toBe(0);
      await expect(settled(() => log.readBatches(101, 1000))).rejects.toMatchObject({ code: 'OFFSET_OUT_OF_RANGE', context: { offset: 101, highWatermark: 100 } });
      expect(() => logs.get('t', 2)).toThrow(expect.objectContaining({ code: 'UNKNOWN_PARTITION' }));
    });

    it('deleteRecordsBefore moves the log start forward only; below it reads are OFFSET_OUT_OF_RANGE; above the high watermark it is refused', async () => {
      const { logs, createTopic } = await fresh();
      await createTopic('t', 1);
      await append(logs, 't', batchesOf(edits[1]!.slice(0, 40), 10).map((batch) => ({ partition: 0, batch })));
      const log = logs.get('t', 0);
      expect(await log.deleteRecordsBefore(25, 'delete-records')).toBe(25);
      expect(await log.deleteRecordsBefore(5, 'delete-records')).toBe(25);
      expect(await positions(logs, 't', 0)).toEqual({ logStartOffset: 25, highWatermark: 40 });
      await expect(settled(() => log.readBatches(24, 1000))).rejects.toMatchObject({ code: 'OFFSET_OUT_OF_RANGE', context: { logStartOffset: 25 } });
      expect((await readAll(logs, 't', 0, 25, 1000)).map(([o]) => o)).toEqual(Array.from({ length: 15 }, (_, i) => 25 + i));
      await expect(settled(() => log.deleteRecordsBefore(41, 'delete-records'))).rejects.toMatchObject({ code: 'OFFSET_OUT_OF_RANGE' });
      expect(await log.deleteRecordsBefore(40, 'delete-records')).toBe(40);
      expect((await log.readBatches(40, 1000)).batches.length).toBe(0);
    });

    it('waitForData wakes when a batch lands past the offset, and ends on its timeout otherwise', async () => {
      const { logs, createTopic } = await fresh();
      await createTopic('t', 1);
      const [batch] = batchesOf(edits[2]!.slice(0, 5), 5);
      let woke = false;
      const waiting = logs.get('t', 0).waitForData(0, 20_000).then(() => (woke = true));
      expect(woke).toBe(false);
      await append(logs, 't', [{ partition: 0, batch: batch! }]);
      await waiting;
      expect(woke).toBe(true);
      // Nothing past 5: ends when its 50 ms are up.
      await logs.get('t', 0).waitForData(5, 50);
      expect((await positions(logs, 't', 0)).highWatermark).toBe(5);
    });

    it('endWaits ends the long-polls waiting and lets no later one wait, on partitions first used after it and topics created after it too', async () => {
      const { logs, createTopic } = await fresh();
      await createTopic('t', 2);
      const waiting = logs.get('t', 0).waitForData(0, 20_000);
      logs.endWaits();
      await waiting;
      await logs.get('t', 1).waitForData(0, 20_000);
      await createTopic('u', 1);
      await logs.get('u', 0).waitForData(0, 20_000);
      expect((await positions(logs, 'u', 0)).highWatermark).toBe(0);
    }, 10_000); // each wait asks for 20 s: one not ended fails the test

    it('an idempotent producer: retries answered with the stored offsets, nothing stored twice, also after a reopen; what breaks its sequence is refused', async () => {
      const engine = await fresh();
      await engine.createTopic('t', 1);
      const values = edits[3]!.slice(0, 12).map((e) => Buffer.from(e.value));
      const batch = (producerId: number, producerEpoch: number, baseSequence: number, from: number, count: number) =>
        encodeBatch(values.slice(from, from + count).map((value) => ({ key: null, value })), 0, 1, { producerId, producerEpoch, baseSequence });
      let logs = engine.logs;
      const at = (batches: Buffer[]) => append(logs, 't', batches.map((b) => ({ partition: 0, batch: b })));
      const b0 = batch(7, 0, 0, 0, 3);
      const b1 = batch(7, 0, 3, 3, 2);
      expect(await at([b0, b1])).toEqual([{ baseOffset: 0, lastOffset: 2 }, { baseOffset: 3, lastOffset: 4 }]);
      // Retries, alone and together, get the stored offsets back; nothing is stored again.
      expect(await at([b1])).toEqual([{ baseOffset: 3, lastOffset: 4, duplicate: true }]);
      expect(await at([b0, b1])).toEqual([{ baseOffset: 0, lastOffset: 2, duplicate: true }, { baseOffset: 3, lastOffset: 4, duplicate: true }]);
      // A new batch and a plain one beside it go on.
      const plain = encodeBatch([{ key: null, value: values[5]! }], 0, 1);
      expect(await at([batch(7, 0, 5, 6, 2), plain])).toEqual([{ baseOffset: 5, lastOffset: 6 }, { baseOffset: 7, lastOffset: 7 }]);
      await expect(at([batch(7, 0, 9, 8, 1)])).rejects.toMatchObject({ code: 'OUT_OF_ORDER_SEQUENCE' });
      await expect(at([batch(99, 0, 4, 8, 1)])).rejects.toMatchObject({ code: 'UNKNOWN_PRODUCER_ID' });
      expect(await at([batch(7, 1, 0, 8, 1)])).toEqual([{ baseOffset: 8, lastOffset: 8 }]); // a new epoch starts at 0
      await expect(at([batch(7, 0, 7, 9, 1)])).rejects.toMatchObject({ code: 'INVALID_PRODUCER_EPOCH' });
      expect(await positions(logs, 't', 0)).toEqual({ logStartOffset: 0, highWatermark: 9 });
      expect((await readAll(logs, 't', 0, 0, 100_000)).map(([, v]) => v)).toEqual([0, 1, 2, 3, 4, 6, 7, 5, 8].map((i) => values[i]!.toString()));
      logs = await engine.reopen();
      expect(await at([batch(7, 1, 0, 8, 1)])).toEqual([{ baseOffset: 8, lastOffset: 8, duplicate: true }]);
      expect(await at([batch(7, 1, 1, 10, 1)])).toEqual([{ baseOffset: 9, lastOffset: 9 }]);
      // A batch and its retry in one request: stored once.
      const b2 = batch(7, 1, 2, 11, 1);
      expect(await at([b2, b2])).toEqual([{ baseOffset: 10, lastOffset: 10 }, { baseOffset: 10, lastOffset: 10, duplicate: true }]);
      expect((await positions(logs, 't', 0)).highWatermark).toBe(11);
    });

    it('agrees with a model through random appends, delete-records and reopens: positions, and every record from the log start', async () => {
      type Step = { kind: 'append'; partition: number; count: number; per: number } | { kind: 'delete'; partition: number; back: number } | { kind: 'reopen' };
      const step: fc.Arbitrary<Step> = fc.oneof(
        { weight: 6, arbitrary: fc.record({ kind: fc.constant('append' as const), partition: fc.nat({ max: 1 }), count: fc.integer({ min: 1, max: 9 }), per: fc.integer({ min: 1, max: 4 }) }) },
        { weight: 2, arbitrary: fc.record({ kind: fc.constant('delete' as const), partition: fc.nat({ max: 1 }), back: fc.nat({ max: 12 }) }) },
        { weight: 1, arbitrary: fc.constant({ kind: 'reopen' as const }) },
      );
      const values = [...edits[0]!, ...edits[1]!].map((e) => e.value);
      await fc.assert(fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 20 }), async (steps) => {
        const engine = await fresh();
        await engine.createTopic('m', 2);
        let logs = engine.logs;
        // The model: each partition's values by offset, and its log start offset.
        const model = [0, 1].map(() => ({ values: [] as string[], logStart: 0 }));
        let next = 0;
        for (const st of steps) {
          if (st.kind === 'append') {
            const taken = Array.from({ length: st.count }, () => values[next++ % values.length]!);
            const batches: Buffer[] = [];
            for (let i = 0; i < taken.length; i += st.per) batches.push(encodeBatch(taken.slice(i, i + st.per).map((v) => ({ key: null, value: Buffer.from(v) })), 0, 0));
            const m = model[st.partition]!;
            const outcomes = await append(logs, 'm', batches.map((batch) => ({ partition: st.partition, batch })));
            expect(outcomes[0]!.baseOffset).toBe(m.values.length);
            m.values.push(...taken);
          } else if (st.kind === 'delete') {
            const m = model[st.partition]!;
            const to = Math.max(0, m.values.length - st.back);
            expect(await logs.get('m', st.partition).deleteRecordsBefore(to, 'delete-records')).toBe(Math.max(m.logStart, to));
            m.logStart = Math.max(m.logStart, to);
          } else {
            logs = await engine.reopen();
          }
          for (const [partition, m] of model.entries()) {
            expect(await positions(logs, 'm', partition)).toEqual({ logStartOffset: m.logStart, highWatermark: m.values.length });
            const want = m.values.slice(m.logStart).map((v, i): [number, string] => [m.logStart + i, v]);
            expect(await readAll(logs, 'm', partition, m.logStart, 200)).toEqual(want);
          }
        }
      }), { numRuns: 12 });
    });

    it('everything acknowledged is there after close and reopen, and appends go on after it', async () => {
      const engine = await fresh();
      await engine.createTopic('t', 2);
      await append(engine.logs, 't', [0, 1].flatMap((partition) => batchesOf(edits[partition]!.slice(0, 30), 7).map((batch) => ({ partition, batch }))));
      const again = await engine.reopen();
      for (const p of [0, 1]) expect((await readAll(again, 't', p, 0, 1000)).map(([, v]) => v)).toEqual(edits[p]!.slice(0, 30).map((e) => e.value));
      const [more] = batchesOf(edits[0]!.slice(30, 33), 3);
      expect(await append(again, 't', [{ partition: 0, batch: more! }])).toEqual([{ baseOffset: 30, lastOffset: 32 }]);
    });
  });
}

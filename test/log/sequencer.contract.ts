/**
 * The sequencer's contract (src/log/objects/sequencer.ts), run on every engine: PostgreSQL's (test/cluster/sequencer.test.ts)
 * and the one in memory (test/log/sequencer-contract.test.ts). Leases taken, renewed, expired by the database's clock
 * and released; commits that assign offsets and index them; refused commits of a lost lease; idempotent producers'
 * batches; and a property test: brokers committing at once while leases move between them leave every partition's
 * index gapless and without overlap, with each acknowledged chunk at its offsets.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import type { ChunkResult, ObjectChunk, Sequencer } from '../../src/log/objects/sequencer.js';

/** One cluster's sequencer tables, and what a test does to them from outside a broker. */
export interface SequencerFixture {
  /** The sequencers of brokers 1..n over this cluster's tables. */
  brokers(n: number, leaseMs?: number): Promise<Sequencer[]>;
  /** Ends a partition's lease now, as the database's clock passing its expiry would. */
  expire(topic: string, partition: number): Promise<void>;
  /** The keys of the objects committed, in order. */
  objectKeys(): Promise<string[]>;
  dispose(): Promise<void>;
}

const chunk = (partition: number, epoch: number, offsets: number, position = 0): ObjectChunk => ({
  topic: 't', partition, epoch, offsets, position, length: 100 * offsets, maxTimestamp: 1_000 + offsets,
});

function ok(r: ChunkResult): { baseOffset: number; highWatermark: number } {
  if ('error' in r) throw r.error;
  return r;
}

/** Runs the contract on the engine `open` makes a fresh cluster of. */
export function sequencerContract(engine: string, open: () => Promise<SequencerFixture>): void {
  describe(`sequencer contract: ${engine}`, () => {
    const opened: SequencerFixture[] = [];
    afterEach(async () => {
      for (const f of opened.splice(0)) await f.dispose();
    });
    async function cluster(n: number, leaseMs = 60_000): Promise<{ f: SequencerFixture; seqs: Sequencer[] }> {
      const f = await open();
      opened.push(f);
      return { f, seqs: await f.brokers(n, leaseMs) };
    }

    it('leases: taken at a new epoch, renewed at the same one, refused while another holds it, taken over after expiry or release', async () => {
      const { f, seqs: [a, b] } = await cluster(2);
      await a!.addPartitions('t', 2);
      await a!.addPartitions('t', 2); // again: nothing changes
      const first = await a!.acquire([{ topic: 't', partition: 0 }, { topic: 't', partition: 1 }]);
      expect(first.map((l) => [l.partition, l.epoch])).toEqual([[0, 1], [1, 1]]);
      expect(first[0]!.expiresAt).toBeGreaterThan(Date.now() + 50_000);
      expect((await a!.acquire([{ topic: 't', partition: 0 }])).map((l) => l.epoch)).toEqual([1]);
      expect(await b!.acquire([{ topic: 't', partition: 0 }, { topic: 't', partition: 1 }, { topic: 't', partition: 9 }])).toEqual([]);
      await f.expire('t', 0);
      expect((await b!.acquire([{ topic: 't', partition: 0 }])).map((l) => [l.partition, l.epoch])).toEqual([[0, 2]]);
      await a!.release(first.filter((l) => l.partition === 1));
      expect((await b!.acquire([{ topic: 't', partition: 1 }])).map((l) => [l.partition, l.epoch])).toEqual([[1, 2]]);
      expect(await a!.state('t', 1)).toMatchObject({ leaderBrokerId: 2, leaderEpoch: 2, highWatermark: 0, logStartOffset: 0 });
      expect(await a!.state('t', 7)).toBeUndefined();
    });

    it('a hand-over gives a held lease to another broker at the next epoch: the old holder\'s commits are refused, the new one renews it', async () => {
      const { f, seqs: [a, b] } = await cluster(2);
      await a!.addPartitions('t', 3);
      const leases = await a!.acquire([0, 1, 2].map((partition) => ({ topic: 't', partition })));
      await f.expire('t', 2);
      // Partition 0 at its epoch, partition 1 at a stale one, partition 2 expired: only 0 moves.
      expect(await a!.handOver([
        { topic: 't', partition: 0, epoch: leases[0]!.epoch, toBrokerId: 2 }, { topic: 't', partition: 1, epoch: leases[1]!.epoch + 5, toBrokerId: 2 },
        { topic: 't', partition: 2, epoch: leases[2]!.epoch, toBrokerId: 2 },
      ])).toEqual([{ topic: 't', partition: 0 }]);
      expect(await a!.state('t', 0)).toMatchObject({ leaderBrokerId: 2, leaderEpoch: leases[0]!.epoch + 1 });
      expect(await a!.state('t', 1)).toMatchObject({ leaderBrokerId: 1, leaderEpoch: leases[1]!.epoch });
      const refused = await a!.commit('obj-old', 100, [chunk(0, leases[0]!.epoch, 1)]);
      expect('error' in refused[0]! && refused[0].error).toMatchObject({ code: 'NOT_LEADER_OR_FOLLOWER', context: { leaderBrokerId: 2 } });
      const taken = await b!.acquire([{ topic: 't', partition: 0 }]);
      expect(taken.map((l) => [l.partition, l.epoch])).toEqual([[0, leases[0]!.epoch + 1]]); // renewed at the epoch handed over
      expect(ok((await b!.commit('obj-new', 100, [chunk(0, taken[0]!.epoch, 1)]))[0]!)).toEqual({ baseOffset: 0, highWatermark: 1 });
      expect(await a!.acquire([{ topic: 't', partition: 0 }])).toEqual([]);
    });

    it('a commit assigns each chunk the next offsets and indexes it; a lost lease refuses its chunk only', async () => {
      const { f, seqs: [a, b] } = await cluster(2);
      await a!.addPartitions('t', 3);
      const leases = await a!.acquire([0, 1, 2].map((partition) => ({ topic: 't', partition })));
      const epoch = (p: number) => leases[p]!.epoch;
      const r1 = await a!.commit('obj-1', 600, [chunk(1, epoch(1), 3, 0), chunk(0, epoch(0), 2, 300), chunk(1, epoch(1), 1, 500)]);
      expect(r1.map(ok)).toEqual([{ baseOffset: 0, highWatermark: 3 }, { baseOffset: 0, highWatermark: 2 }, { baseOffset: 3, highWatermark: 4 }]);
      // Broker b takes partition 2 over while a is paused; a's next object is refused for 2, accepted for 0.
      await f.expire('t', 2);
      await b!.acquire([{ topic: 't', partition: 2 }]);
      const r2 = await a!.commit('obj-2', 300, [chunk(2, epoch(2), 5), chunk(0, epoch(0), 1, 200)]);
      expect('error' in r2[0]! && r2[0].error).toMatchObject({
        code: 'NOT_LEADER_OR_FOLLOWER', context: { topic: 't', partition: 2, brokerId: 1, epoch: 1, leaderBrokerId: 2, leaderEpoch: 2 },
      });
      expect(ok(r2[1]!)).toEqual({ baseOffset: 2, highWatermark: 3 });
      // An object all of whose chunks are refused leaves nothing: no index row, no object row.
      const r3 = await a!.commit('obj-3', 100, [chunk(2, epoch(2), 1)]);
      expect('error' in r3[0]!).toBe(true);
      expect(await a!.lookup('t', 2, 0)).toEqual([]);
      expect(await f.objectKeys()).toEqual(['obj-1', 'obj-2']);
      expect(await a!.lookup('t', 1, 0)).toEqual([
        { baseOffset: 0, endOffset: 3, objectKey: 'obj-1', position: 0, length: 300, maxTimestamp: 1003 },
        { baseOffset: 3, endOffset: 4, objectKey: 'obj-1', position: 500, length: 100, maxTimestamp: 1001 },
      ]);
      expect((await a!.lookup('t', 1, 3)).map((e) => e.baseOffset)).toEqual([3]);
      expect(await a!.lookup('t', 1, 4)).toEqual([]);
      expect((await a!.lookup('t', 0, 1)).map((e) => [e.objectKey, e.baseOffset, e.endOffset])).toEqual([['obj-1', 0, 2], ['obj-2', 2, 3]]);
      // Its own lease expired with nobody taking it: refused too, by the database's clock.
      await f.expire('t', 0);
      const r4 = await a!.commit('obj-4', 100, [chunk(0, epoch(0), 1)]);
      expect('error' in r4[0]! && r4[0].error.message).toMatch(/its lease expired/);
    });

    it('records each idempotent batch of an accepted chunk at its offsets, keeping the last 5 per producer', async () => {
      const { f, seqs: [a, b] } = await cluster(2);
      await a!.addPartitions('t', 2);
      const [lease0, lease1] = await a!.acquire([{ topic: 't', partition: 0 }, { topic: 't', partition: 1 }]);
      for (let i = 0; i < 8; i++) {
        // Two batches of producer 3 a chunk (one record, then two), beside a plain one.
        await a!.commit(`obj-${i}`, 1, [{
          ...chunk(0, lease0!.epoch, 4), producerBatches: [
            { producerId: 3, producerEpoch: 0, baseSequence: 3 * i, lastSequence: 3 * i, offsetInChunk: 1, lastOffsetDelta: 0 },
            { producerId: 3, producerEpoch: 0, baseSequence: 3 * i + 1, lastSequence: 3 * i + 2, offsetInChunk: 2, lastOffsetDelta: 1 },
          ],
        }]);
      }
      const stored = await b!.producerBatches('t', 0);
      expect(stored.map((s) => [s.baseSequence, s.lastSequence, s.baseOffset, s.lastOffset])).toEqual([
        [16, 17, 22, 23], [18, 18, 25, 25], [19, 20, 26, 27], [21, 21, 29, 29], [22, 23, 30, 31],
      ]);
      // A refused chunk records nothing.
      await f.expire('t', 1);
      await b!.acquire([{ topic: 't', partition: 1 }]);
      await a!.commit('obj-x', 1, [{ ...chunk(1, lease1!.epoch, 1), producerBatches: [{ producerId: 4, producerEpoch: 0, baseSequence: 0, lastSequence: 0, offsetInChunk: 0, lastOffsetDelta: 0 }] }]);
      expect(await b!.producerBatches('t', 1)).toEqual([]);
    });

    it('property: brokers committing at once while leases move leave each partition gapless, without overlap, every acknowledged chunk indexed at its offsets', async () => {
      const { f, seqs } = await cluster(3);
      await seqs[0]!.addPartitions('t', 3);
      let run = 0;
      await fc.assert(fc.asyncProperty(
        fc.array(fc.record({ broker: fc.nat(2), partitions: fc.uniqueArray(fc.nat(2), { minLength: 1, maxLength: 3 }), offsets: fc.integer({ min: 1, max: 5 }), steal: fc.boolean() }),
          { minLength: 5, maxLength: 25 }),
        async (steps) => {
          run++;
          const acknowledged: Array<{ partition: number; baseOffset: number; offsets: number; key: string }> = [];
          // Every step runs at once with the others: its broker takes what leases it can, then commits an object.
          await Promise.all(steps.map(async (step, i) => {
            const seq = seqs[step.broker]!;
            if (step.steal) await f.expire('t', step.partitions[0]!);
            const leases = await seq.acquire(step.partitions.map((partition) => ({ topic: 't', partition })));
            // Chunks under the leases held, and one under an epoch it never held (refused whatever happens).
            const chunks = leases.map((l) => chunk(l.partition, l.epoch, step.offsets));
            chunks.push(chunk(step.partitions[0]!, 1_000_000, 1));
            const key = `run${run}-step${i}`;
            const results = await seq.commit(key, 1, chunks);
            expect('error' in results[results.length - 1]!).toBe(true);
            results.forEach((r, k) => {
              if (!('error' in r)) acknowledged.push({ partition: chunks[k]!.partition, baseOffset: r.baseOffset, offsets: chunks[k]!.offsets, key });
              else expect(r.error.code).toBe('NOT_LEADER_OR_FOLLOWER');
            });
          }));
          for (let p = 0; p < 3; p++) {
            const index = await seqs[0]!.lookup('t', p, 0, 100_000);
            const state = (await seqs[0]!.state('t', p))!;
            // Gapless and without overlap, from 0 to the high watermark.
            let next = 0;
            for (const e of index) {
              expect(e.baseOffset).toBe(next);
              next = e.endOffset;
            }
            expect(next).toBe(state.highWatermark);
            // Each acknowledged chunk is an index row at exactly its offsets, in its object; nothing else is.
            const mine = index.filter((e) => e.objectKey.startsWith(`run${run}-`));
            const acked = acknowledged.filter((a) => a.partition === p).sort((x, y) => x.baseOffset - y.baseOffset);
            expect(mine.map((e) => [e.baseOffset, e.endOffset, e.objectKey])).toEqual(acked.map((a) => [a.baseOffset, a.baseOffset + a.offsets, a.key]));
          }
        }), { numRuns: 15 });
    });
  });
}

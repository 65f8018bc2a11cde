/**
 * Log objects: the Wikipedia edits batched per partition into one object, read back chunk by chunk with offsets
 * stamped at the base its index row gives (every batch still valid, every record at its offset, in order), the
 * footer naming each chunk; a property test over random batch layouts (compressed, with gaps of compaction), and
 * refusals of broken input.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildObject, readFooter, stampChunk } from '../../src/log/objects/object-format.js';
import { decodeRecords, encodeBatch, readBatchHeader, validateBatch } from '../../src/protocol/record-batch.js';
import { editsByPartition, readEdits } from '../helpers/wikiticker.js';

/** Every batch of a chunk with its records' offsets and values, after stamping. */
function readChunk(object: Buffer, position: number, length: number, baseOffset: number): Array<{ offset: number; value: string }> {
  const bytes = Buffer.from(object.subarray(position, position + length)); // as a ranged GET answers: a copy
  stampChunk(bytes, baseOffset);
  const out: Array<{ offset: number; value: string }> = [];
  for (let pos = 0; pos < bytes.length;) {
    const size = validateBatch(bytes, pos);
    if (typeof size === 'string') throw new Error(size);
    for (const r of decodeRecords(bytes, pos)) out.push({ offset: r.offset, value: r.value!.toString('utf8') });
    pos += size;
  }
  return out;
}

describe('log objects', () => {
  it('the Wikipedia edits of 4 partitions in one object, read back per chunk at their offsets', () => {
    const byPartition = editsByPartition(readEdits().slice(0, 4000), 4);
    const inputs = byPartition.map((edits, partition) => ({
      topic: 'edits', partition,
      // Batches of 100 edits, as producers would send them, one compressed with zstd.
      batches: Array.from({ length: Math.ceil(edits.length / 100) }, (_, b) => encodeBatch(
        edits.slice(b * 100, b * 100 + 100).map((e) => ({ key: Buffer.from(e.key), value: Buffer.from(e.value), timestamp: e.timestamp })),
        1234, 0, undefined, b === 1 ? { compression: 'zstd' } : {})),
    }));
    const { body, chunks } = buildObject(inputs);
    expect(readFooter(body)).toEqual(chunks);
    expect(chunks.map((c) => c.records)).toEqual(byPartition.map((e) => e.length));
    expect(chunks.map((c) => c.offsets)).toEqual(byPartition.map((e) => e.length));
    const bases = [0, 17, 1_000_000, 2 ** 40];
    chunks.forEach((c, p) => {
      expect(c.maxTimestamp).toBe(Math.max(...byPartition[p]!.map((e) => e.timestamp)));
      const read = readChunk(body, c.position, c.length, bases[p]!);
      expect(read.map((r) => r.offset)).toEqual(byPartition[p]!.map((_, i) => bases[p]! + i));
      expect(read.map((r) => r.value)).toEqual(byPartition[p]!.map((e) => e.value));
    });
  });

  it('property: any layout of batches reads back with each batch after the one before, offsets gaps included', () => {
    const batchArb = fc.record({
      records: fc.integer({ min: 1, max: 5 }), gap: fc.integer({ min: 0, max: 3 }), compression: fc.constantFrom('none', 'gzip', 'lz4') as fc.Arbitrary<'none' | 'gzip' | 'lz4'>,
    });
    fc.assert(fc.property(fc.array(fc.array(batchArb, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 5 }), fc.nat(1_000_000), (layout, base) => {
      const inputs = layout.map((batches, partition) => ({
        topic: `t${partition % 2}`, partition,
        batches: batches.map((b, i) => {
          // A compacted batch: offset deltas spaced by `gap`, as the cleaner leaves them.
          const deltas = Array.from({ length: b.records }, (_, k) => k * (b.gap + 1));
          return encodeBatch(deltas.map((d) => ({ key: null, value: Buffer.from(`p${partition}b${i}d${d}`) })), 999, 0, undefined,
            { compression: b.compression, layout: { offsetDeltas: deltas, lastOffsetDelta: deltas[deltas.length - 1]! } });
        }),
      }));
      const { body, chunks } = buildObject(inputs);
      chunks.forEach((c, p) => {
        const read = readChunk(body, c.position, c.length, base);
        let expected = base;
        const want: Array<{ offset: number; value: string }> = [];
        layout[p]!.forEach((b, i) => {
          for (let k = 0; k < b.records; k++) want.push({ offset: expected + k * (b.gap + 1), value: `p${p}b${i}d${k * (b.gap + 1)}` });
          expected += (b.records - 1) * (b.gap + 1) + 1;
        });
        expect(read).toEqual(want);
        expect(c.offsets).toBe(expected - base);
        expect(stampChunk(Buffer.from(body.subarray(c.position, c.position + c.length)), base)).toBe(expected);
      });
    }), { numRuns: 100 });
  });

  it('refuses a torn batch, a chunk without batches, and an object without its footer', () => {
    const batch = encodeBatch([{ key: null, value: Buffer.from('x') }], 0, 1);
    expect(() => buildObject([{ topic: 't', partition: 0, batches: [batch.subarray(0, batch.length - 1)] }])).toThrow(/not one whole record batch/);
    expect(() => buildObject([{ topic: 't', partition: 0, batches: [] }])).toThrow(/has no batch/);
    expect(() => readFooter(Buffer.from('just some bytes'))).toThrow(/does not end in "OLG1"/);
    const { body, chunks } = buildObject([{ topic: 't', partition: 0, batches: [batch] }]);
    expect(() => stampChunk(Buffer.from(body.subarray(0, chunks[0]!.length - 3)), 0)).toThrow(/runs past its end/);
    expect(readBatchHeader(body).baseOffset).toBe(0);
  });
});

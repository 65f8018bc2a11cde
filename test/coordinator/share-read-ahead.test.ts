/**
 * A share-partition's read-ahead: records indexed where the stored batches hold them (uncompressed and compressed, real
 * Wikipedia edits), handed out as sections of the stored bytes that decode to exactly the records picked; a corrupt
 * batch ends a read before it; the read-ahead offers records in order, holds what the window took until it is handed
 * out, and passes what the window's end or the log start passed.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { indexBatches, indexOf, SectionBuilder, ShareReadAhead } from '../../src/coordinator/share-read-ahead.js';
import { decodeSharedBatches, encodeSharedBatches, sharedRecords } from '../../src/protocol/data-frames.js';
import { decodeRecords, decodeSection, encodeBatch, sectionBatch, validateBatch } from '../../src/protocol/record-batch.js';
import type { CompressionCodec } from '../../src/protocol/compression.js';
import type { StoredRecord } from '../../src/protocol/types.js';
import { codeOf } from '../helpers/errors.js';
import { readEdits } from '../helpers/wikiticker.js';

const edits = readEdits().slice(0, 600);

/** The edits as stored batches of `per` records from offset `base` on, back to back, with some records headered. */
function stored(base: number, per: number, compression: CompressionCodec = 'none'): Buffer {
  const batches: Buffer[] = [];
  for (let i = 0; i < edits.length; i += per) {
    const records = edits.slice(i, i + per).map((e, j) => ({
      key: (i + j) % 7 === 0 ? null : Buffer.from(e.key), value: Buffer.from(e.value), timestamp: e.timestamp,
      headers: (i + j) % 5 === 0 ? [{ key: 'n', value: Buffer.from(String(i + j)) }] : [],
    }));
    batches.push(encodeBatch(records, base + i, records[0]!.timestamp, undefined, { compression }));
  }
  return Buffer.concat(batches);
}

const plain = (r: StoredRecord) => ({
  offset: r.offset, timestamp: r.timestamp, key: r.key?.toString() ?? null, value: r.value?.toString() ?? null,
  headers: r.headers.map((h) => [h.key, h.value?.toString() ?? null]),
});

function decodeAll(batches: Buffer): StoredRecord[] {
  const out: StoredRecord[] = [];
  for (let pos = 0; pos < batches.length; pos += 12 + batches.readInt32BE(pos + 8)) out.push(...decodeRecords(batches, pos));
  return out;
}

describe('indexBatches and sections', () => {
  it.each(['none', 'gzip', 'lz4'] as const)('a picked subset of %s batches decodes, from its sections and from their Kafka batches, to exactly those records', (codec) => {
    const batches = stored(1000, 64, codec);
    const all = decodeAll(batches);
    const { ix, stoppedAt } = indexBatches(batches, 1000);
    expect(stoppedAt).toBeUndefined();
    expect(Array.from(ix.offsets.subarray(0, ix.n))).toEqual(all.map((r) => r.offset));
    // Equal keys, equal hashes; no key, -1.
    const hashOf = new Map<string, number>();
    all.forEach((r, i) => {
      if (r.key === null) expect(ix.keys[i]).toBe(-1);
      else {
        const k = r.key.toString();
        expect(ix.keys[i]).toBe(hashOf.get(k) ?? ix.keys[i]);
        hashOf.set(k, ix.keys[i]!);
      }
    });
    fc.assert(fc.property(fc.uniqueArray(fc.integer({ min: 0, max: all.length - 1 }), { maxLength: 200 }), (picked) => {
      picked.sort((a, b) => a - b);
      const builder = new SectionBuilder();
      for (const i of picked) builder.add(ix, indexOf(ix, all[i]!.offset));
      const sections = builder.finish();
      // Consecutive records of one stored batch share a section: never more sections than records.
      expect(sections.length).toBeLessThanOrEqual(picked.length);
      expect(sections.flatMap(decodeSection).map(plain)).toEqual(picked.map((i) => plain(all[i]!)));
      // As Kafka's ShareFetch carries them: each section a batch of its own (CRC and all), the same records at their offsets.
      const kafka = sections.map(sectionBatch);
      for (const k of kafka) expect(validateBatch(k.batch)).toBe(k.batch.length);
      expect(kafka.flatMap((k) => decodeRecords(k.batch)).map(plain)).toEqual(picked.map((i) => plain(all[i]!)));
      expect(kafka.flatMap((k) => k.offsets)).toEqual(picked.map((i) => all[i]!.offset));
    }), { numRuns: 30 });
  });

  it('indexes from an offset inside the first batch on', () => {
    const { ix } = indexBatches(stored(0, 64), 100);
    expect(ix.offsets[0]).toBe(100);
    expect(ix.n).toBe(edits.length - 100);
  });

  it('a corrupt batch ends the read before it; a read that starts at it is refused', () => {
    const batches = stored(0, 100);
    const second = 12 + batches.readInt32BE(8);
    const bad = Buffer.from(batches);
    bad.writeInt32BE(0x7fffffff, second + 57); // the second batch's record count
    const { ix, stoppedAt } = indexBatches(bad, 0);
    expect(ix.n).toBe(100);
    expect(stoppedAt).toBe(100);
    expect(codeOf(() => indexBatches(bad.subarray(second), 100))).toBe('CORRUPT_MESSAGE');
  });

  it('a SHARE_FETCHED frame carries the sections as they are and reads back as the records with their delivery counts', () => {
    const { ix } = indexBatches(stored(0, 50, 'lz4'), 0);
    const builder = new SectionBuilder();
    for (const i of [3, 4, 5, 60, 61, 200]) builder.add(ix, i);
    const acquired = { groupId: 'g', topic: 't', memberId: 'm', lockMs: 30_000, partitions: [{ partition: 2, sections: builder.finish(), deliveryCounts: [1, 1, 2, 1, 1, 5] }] };
    const { json, batches } = encodeSharedBatches(acquired);
    expect(json.partitions[0]!.sections.map((s) => s[2])).toEqual([3, 2, 1]);
    const back = decodeSharedBatches(JSON.parse(JSON.stringify(json)), Buffer.concat(batches));
    expect(back.records.map((r) => [r.partition, r.offset, r.deliveryCount, r.value!.toString()]))
      .toEqual([3, 4, 5, 60, 61, 200].map((o, i) => [2, o, acquired.partitions[0]!.deliveryCounts[i], edits[o]!.value]));
    expect(sharedRecords(acquired).records.map((r) => r.offset)).toEqual([3, 4, 5, 60, 61, 200]);
    // A payload shorter than the sections say, or counts that are not one per record: refused.
    expect(codeOf(() => decodeSharedBatches(json, Buffer.concat(batches).subarray(1)))).toBe('CORRUPT_MESSAGE');
    expect(codeOf(() => sharedRecords({ ...acquired, partitions: [{ ...acquired.partitions[0]!, deliveryCounts: [1] }] }))).toBe('CORRUPT_MESSAGE');
  });
});

describe('ShareReadAhead', () => {
  it('offers records in order, holds what the window took until handed out, passes what the window or the log start passed', () => {
    const ra = new ShareReadAhead();
    const batches = stored(0, 64);
    ra.add(batches.subarray(0, 12 + batches.readInt32BE(8) + 12 + batches.readInt32BE(12 + batches.readInt32BE(8) + 8)), 10, 128);
    expect(ra.pending).toBe(118); // from offset 10 on
    const first = ra.offer(10, 20);
    expect(first.read.map((r) => r.offset)).toEqual(Array.from({ length: 20 }, (_, i) => 10 + i));
    expect(first.nextOffset).toBe(30);
    ra.offered(15); // the window took 15: 10-24
    expect(ra.holds(24)).toBe(true);
    expect(ra.holds(25)).toBe(false); // offered, not taken
    expect(ra.pending).toBe(103);
    const builder = new SectionBuilder();
    ra.take(ra.find(12)!, builder);
    expect(ra.find(12)).toBeUndefined(); // handed out already
    const next = ra.find(13)!;
    expect(next.ix.ends[next.i]! - next.ix.starts[next.i]!).toBeGreaterThan(0);
    expect(decodeSection(builder.finish()[0]!).map((r) => r.offset)).toEqual([12]);
    // The window's end moved to 100 (records 25-99 went elsewhere): offered from there.
    expect(ra.pendingFrom(100)).toBe(28);
    expect(ra.offer(100, 100).nextOffset).toBe(128);
    ra.offered(28);
    expect(ra.pending).toBe(0);
    expect(ra.nextOffset).toBe(128);
    ra.dropBelow(20);
    expect(ra.holds(15)).toBe(false);
    expect(ra.holds(20)).toBe(true);
    // A new read: what was held is still held, the new records are offered.
    ra.add(stored(128, 64).subarray(0, 0), 128, 128);
    expect(ra.pending).toBe(0);
    expect(ra.holds(127)).toBe(true);
  });
});

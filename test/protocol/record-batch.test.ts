import { describe, expect, it } from 'vitest';
import zlib from 'node:zlib';
import fc from 'fast-check';
import { COMPRESSION_CODECS } from '../../src/protocol/compression.js';
import {
  batchCompression, decodeRecords, DELETE_HORIZON_FLAG, encodeBatch, readBatchHeader, setBaseOffset, validateBatch, decodeRecordAt,
  RecordBatchBuilder,
} from '../../src/protocol/record-batch.js';
import { validateProducedBatch } from '../../src/protocol/batch-validator.js';
import type { RecordInput } from '../../src/protocol/types.js';
import { crc32c } from '../../src/protocol/crc32c.js';
import { readEdits } from '../helpers/wikiticker.js';
import { codeOf } from '../helpers/errors.js';

// IBM/sarama record_test.go, recordBatchTestCases(), "uncompressed record"
const SARAMA_UNCOMPRESSED = Buffer.from(
  '0000000000000000000000460000000002547961fd000000000000000001588dcd5938000000000000000000000000000000000000' +
    '000000000000000128000a00080102030406050607020608090a040b0c',
  'hex',
);

// tulios/kafkajs src/protocol/requests/produce/fixtures/v3_request.json, bytes 57..326: three records with headers
const KAFKAJS_BATCH = Buffer.from(
  '0000000000000000000001020000000002d20a45ed0000000000020000015f8ebb3a0c0000015f8ebb3a0cffffffffffffffff00000000000a' +
    '000000039201000000306b65792d39643066333438636232653733306531656463343e736f6d652d76616c75652d61313762346338316639' +
    '65636431653839366533060261026202630264026302658201000002306b65792d63373037336539363563333462346363363434323e736f' +
    '6d652d76616c75652d363564663432323037306437616437333931346602026102628201000004306b65792d313639336231383461396235' +
    '32646265303362633e736f6d652d76616c75652d33666362363566666361303837636261323061640202610262',
  'hex',
);

// IBM/sarama record_test.go, recordBatchTestCases(): the same record as SARAMA_UNCOMPRESSED in a gzip, a
// snappy (raw, unframed) and an lz4 (LZ4 frame with content checksum) batch, exact bytes with their CRCs.
/** sarama's batch: baseOffset 0 .. magic 2, then `crc`, then attributes (`codec`) .. recordCount 1, then `records`. */
const saramaBatch = (length: string, crc: string, codec: string, records: string) => Buffer.from(
  `0000000000000000${length}0000000002${crc}${codec}00000000000001588dcd5938` +
    '0000000000000000' + '0000000000000000' + '0000' + '00000000' + '00000001' + records,
  'hex',
);
const SARAMA_COMPRESSED = {
  gzip: saramaBatch('0000005f', 'e74acea5', '0001',
    '1f8b080000096e8800ff001500eaff28000a00080102030406050607020608090a040b0c0300adc9586715000000'),
  snappy: saramaBatch('00000048', '15009f61', '0002', '155028000a00080102030406050607020608090a040b0c'),
  lz4: saramaBatch('00000059', 'a94a77c5', '0003',
    '04224d186470b91500008028000a00080102030406050607020608090a040b0c000000000c3bef92'),
};
const SARAMA_RECORD = {
  offset: 0,
  timestamp: 1479847795005,
  key: Buffer.from([1, 2, 3, 4]),
  value: Buffer.from([5, 6, 7]),
  headers: [{ key: '\x08\x09\x0a', value: Buffer.from([11, 12]) }],
};

const hdr = (key: string, value: string) => ({ key, value: Buffer.from(value) });

/** Any record: null or arbitrary key, value and header values, timestamps up to 2^45. */
const bytesOrNull = fc.option(fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a)), { nil: null });
const record = fc.record({
  key: bytesOrNull,
  value: bytesOrNull,
  timestamp: fc.integer({ min: 0, max: 2 ** 45 }),
  headers: fc.array(fc.record({ key: fc.string({ maxLength: 20 }), value: bytesOrNull }), { maxLength: 4 }),
});
const CODECS = COMPRESSION_CODECS.filter((c) => c !== 'none');

/** Recomputes the CRC of an edited batch, so only the edit (not the checksum) is under test. */
function restampCrc(batch: Buffer): Buffer {
  batch.writeUInt32BE(crc32c(batch, 21, batch.length), 17);
  return batch;
}

let editRecords: RecordInput[] | undefined;
/** The first 500 Wikipedia edits as records keyed by channel and page. */
function edits(): RecordInput[] {
  editRecords ??= readEdits().slice(0, 500).map((e) => ({ key: Buffer.from(e.key), value: Buffer.from(e.value), timestamp: e.timestamp }));
  return editRecords;
}

describe('record batch codec', () => {
  it('decodes sarama golden bytes', () => {
    expect(validateBatch(SARAMA_UNCOMPRESSED)).toBe(SARAMA_UNCOMPRESSED.length);
    const h = readBatchHeader(SARAMA_UNCOMPRESSED);
    expect(h).toMatchObject({ baseOffset: 0, batchLength: 70, magic: 2, crc: 0x547961fd, recordCount: 1 });
    expect(h.baseTimestamp).toBe(1479847795000);
    const [r] = decodeRecords(SARAMA_UNCOMPRESSED);
    expect(r).toEqual({
      offset: 0,
      timestamp: 1479847795005,
      key: Buffer.from([1, 2, 3, 4]),
      value: Buffer.from([5, 6, 7]),
      headers: [{ key: '\x08\x09\x0a', value: Buffer.from([11, 12]) }],
    });
  });

  it('decodes kafkajs golden bytes and re-encodes every record byte identically', () => {
    expect(validateBatch(KAFKAJS_BATCH)).toBe(270);
    const h = readBatchHeader(KAFKAJS_BATCH);
    expect(h).toMatchObject({ producerId: -1, producerEpoch: 0, baseSequence: 10, lastOffsetDelta: 2, recordCount: 3 });
    const records = decodeRecords(KAFKAJS_BATCH);
    expect(records.map((r) => [r.offset, r.key?.toString(), r.value?.toString(), r.timestamp])).toEqual([
      [0, 'key-9d0f348cb2e730e1edc4', 'some-value-a17b4c81f9ecd1e896e3', 1509928155660],
      [1, 'key-c7073e965c34b4cc6442', 'some-value-65df422070d7ad73914f', 1509928155660],
      [2, 'key-1693b184a9b52dbe03bc', 'some-value-3fcb65ffca087cba20ad', 1509928155660],
    ]);
    expect(records[0]!.headers).toEqual([hdr('a', 'b'), hdr('c', 'd'), hdr('c', 'e')]);
    // Same records, same producer fields, partitionLeaderEpoch 0: our encoder must produce the same bytes.
    const encoded = encodeBatch(records, 0, 0, { producerId: -1, producerEpoch: 0, baseSequence: 10 });
    expect(encoded.toString('hex')).toBe(KAFKAJS_BATCH.toString('hex'));
  });

  it('encodes to sarama golden bytes apart from the fields sarama leaves zero', () => {
    const records: RecordInput[] = [
      { key: Buffer.from([1, 2, 3, 4]), value: Buffer.from([5, 6, 7]), timestamp: 1479847795005,
        headers: [{ key: '\x08\x09\x0a', value: Buffer.from([11, 12]) }] },
    ];
    const ours = encodeBatch(records, 0, 0, { producerId: 0, producerEpoch: 0, baseSequence: 0 });
    // sarama writes baseTimestamp = 1479847795000 with delta 5 and maxTimestamp 0; we write
    // baseTimestamp = maxTimestamp = the record's timestamp, so compare the records section exactly.
    expect(ours.subarray(61).toString('hex')).toBe('28000000080102030406050607020608090a040b0c');
    expect(validateBatch(ours)).toBe(ours.length);
  });

  it('keeps the CRC valid when the base offset is restamped', () => {
    const batch = encodeBatch([{ key: null, value: Buffer.from('v') }], 0, 1000);
    setBaseOffset(batch, 2 ** 40 + 7);
    expect(validateBatch(batch)).toBe(batch.length);
    expect(decodeRecords(batch)[0]!.offset).toBe(2 ** 40 + 7);
  });

  it('reports a flipped byte, a cut batch and a wrong magic', () => {
    const batch = encodeBatch([{ key: Buffer.from('k'), value: Buffer.from('value') }], 0, 1000);
    const flipped = Buffer.from(batch);
    flipped[flipped.length - 2]! ^= 0x01;
    expect(validateBatch(flipped)).toMatch(/CRC-32C/);
    expect(validateBatch(batch.subarray(0, batch.length - 1))).toMatch(/cut off/);
    const badMagic = Buffer.from(batch);
    badMagic[16] = 1;
    expect(validateBatch(badMagic)).toMatch(/magic 1/);
  });

  it('round-trips any records (property)', () => {
    fc.assert(
      fc.property(fc.array(record, { minLength: 1, maxLength: 30 }), fc.integer({ min: 0, max: 2 ** 50 }), (rs, base) => {
        const batch = encodeBatch(rs, base, 0);
        expect(validateBatch(batch)).toBe(batch.length);
        const back = decodeRecords(batch);
        expect(back).toEqual(rs.map((r, i) => ({ ...r, offset: base + i })));
      }),
      { numRuns: 200 },
    );
  });
});

describe('record batch compression', () => {
  it.each(Object.entries(SARAMA_COMPRESSED))('decodes sarama\'s %s golden batch to the expected record', (codec, batch) => {
    expect(validateBatch(batch)).toBe(batch.length);
    const h = readBatchHeader(batch);
    expect(batchCompression(h)).toBe(codec);
    expect(h).toMatchObject({ recordCount: 1, lastOffsetDelta: 0, baseTimestamp: 1479847795000 });
    expect(decodeRecords(batch)).toEqual([SARAMA_RECORD]);
  });

  it.each(CODECS)('%s: sets the codec bits, keeps the header uncompressed and round-trips real records', (codec) => {
    const records = edits();
    const plain = encodeBatch(records, 1000, 0, { producerId: 7, producerEpoch: 1, baseSequence: 3 });
    const packed = encodeBatch(records, 1000, 0, { producerId: 7, producerEpoch: 1, baseSequence: 3 }, { compression: codec });
    expect(validateBatch(packed)).toBe(packed.length);
    expect(packed.length).toBeLessThan(plain.length / 2);
    const [hp, hc] = [readBatchHeader(plain), readBatchHeader(packed)];
    expect(hc.attributes & 0x07).toBe(COMPRESSION_CODECS.indexOf(codec));
    expect(hc.attributes & ~0x07).toBe(0);
    expect(hc.batchLength).toBe(packed.length - 12);
    // Everything but the length, the CRC and the codec bits is the uncompressed batch's header.
    const same = (h: typeof hp) => ({ ...h, batchLength: 0, crc: 0, attributes: h.attributes & ~0x07 });
    expect(same(hc)).toEqual(same(hp));
    expect(hc).toMatchObject({ recordCount: 500, lastOffsetDelta: 499, producerId: 7, baseSequence: 3 });
    // Flattened: a deep comparison of 500 records with Buffers takes a second.
    const flat = (b: Buffer) => decodeRecords(b).map((r) => `${r.offset} ${r.timestamp} ${r.key!.toString()} ${r.value!.toString()}`);
    expect(flat(packed)).toEqual(flat(plain));
    expect(flat(packed)[499]).toBe(`1499 ${records[499]!.timestamp} ${records[499]!.key!.toString()} ${records[499]!.value!.toString()}`);
  });

  it.each(CODECS)('%s: a flipped byte in the compressed section fails the CRC; one under a restamped CRC fails to decode', (codec) => {
    const batch = encodeBatch(edits().slice(0, 50), 0, 0, undefined, { compression: codec });
    const flipped = Buffer.from(batch);
    flipped[61 + Math.floor((batch.length - 61) / 2)]! ^= 0x10;
    expect(validateBatch(flipped)).toMatch(/CRC-32C/);
    // Past the CRC (a bad write the checksum happens to cover), decoding still refuses a cut section.
    const cut = Buffer.from(batch.subarray(0, batch.length - 20));
    cut.writeInt32BE(cut.length - 12, 8);
    restampCrc(cut);
    expect(validateBatch(cut)).toBe(cut.length);
    expect(codeOf(() => decodeRecords(cut))).toBe('CORRUPT_MESSAGE');
  });

  it('refuses a compressed section that holds more bytes than its records', () => {
    const batch = encodeBatch([{ key: null, value: Buffer.from('v') }], 0, 0, undefined, { compression: 'gzip' });
    const records = zlib.gunzipSync(batch.subarray(61));
    const padded = Buffer.concat([batch.subarray(0, 61), zlib.gzipSync(Buffer.concat([records, Buffer.from([0, 0])]))]);
    padded.writeInt32BE(padded.length - 12, 8);
    expect(codeOf(() => decodeRecords(restampCrc(padded)))).toBe('CORRUPT_MESSAGE');
  });

  it('refuses codec values 5-7 as UNSUPPORTED_COMPRESSION', () => {
    for (const id of [5, 6, 7]) {
      const batch = encodeBatch([{ key: null, value: Buffer.from('v') }], 0, 0);
      batch.writeInt16BE(id, 21);
      expect(codeOf(() => decodeRecords(restampCrc(batch)))).toBe('UNSUPPORTED_COMPRESSION');
    }
  });

  it('keeps a compacted layout (offset gaps, delete horizon) under compression, and a restamped base offset', () => {
    const kept = [
      { key: Buffer.from('a'), value: null, timestamp: 5000 },
      { key: Buffer.from('b'), value: Buffer.from('x'.repeat(200)), timestamp: 5001 },
    ];
    const layout = { offsetDeltas: [3, 9], lastOffsetDelta: 12, deleteHorizonMs: 90_000 };
    for (const codec of CODECS) {
      const batch = encodeBatch(kept, 100, 0, undefined, { compression: codec, layout });
      expect(validateBatch(batch)).toBe(batch.length);
      const h = readBatchHeader(batch);
      expect(h.attributes).toBe(DELETE_HORIZON_FLAG | COMPRESSION_CODECS.indexOf(codec));
      expect(h).toMatchObject({ baseTimestamp: 90_000, lastOffsetDelta: 12, recordCount: 2, maxTimestamp: 5001 });
      expect(decodeRecords(batch).map((r) => [r.offset, r.timestamp, r.value?.length ?? null])).toEqual([[103, 5000, null], [109, 5001, 200]]);
      setBaseOffset(batch, 2 ** 40);
      expect(validateBatch(batch)).toBe(batch.length);
      expect(decodeRecords(batch)[1]!.offset).toBe(2 ** 40 + 9);
    }
  });

  it('round-trips any records under every codec (property)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...COMPRESSION_CODECS), fc.array(record, { minLength: 1, maxLength: 30 }), fc.integer({ min: 0, max: 2 ** 50 }),
        (compression, rs, base) => {
          const batch = encodeBatch(rs, base, 0, undefined, { compression });
          expect(validateBatch(batch)).toBe(batch.length);
          expect(batchCompression(readBatchHeader(batch))).toBe(compression);
          expect(decodeRecords(batch)).toEqual(rs.map((r, i) => ({ ...r, offset: base + i })));
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('decodeRecordAt', () => {
  it('answers the one record of an offset, as decodeRecords does, in every codec and with offset gaps', () => {
    fc.assert(fc.property(
      fc.array(fc.record({ value: fc.uint8Array({ maxLength: 40 }), gap: fc.integer({ min: 1, max: 3 }) }), { minLength: 1, maxLength: 30 }),
      fc.constantFrom(...COMPRESSION_CODECS),
      (items, compression) => {
        let delta = 0;
        const offsetDeltas = items.map((it) => (delta += it.gap) - items[0]!.gap);
        const records: RecordInput[] = items.map((it) => ({ key: null, value: Buffer.from(it.value), headers: [{ key: 'h', value: Buffer.from('x') }] }));
        const batch = encodeBatch(records, 100, 1000, undefined, { compression, layout: { offsetDeltas, lastOffsetDelta: offsetDeltas[offsetDeltas.length - 1]! } });
        const all = decodeRecords(batch);
        for (const r of all) expect(decodeRecordAt(batch, 0, r.offset)).toEqual(r);
        // Offsets the batch does not hold (a gap, before, after): none.
        const held = new Set(all.map((r) => r.offset));
        for (let o = 99; o <= 100 + offsetDeltas[offsetDeltas.length - 1]! + 1; o++) if (!held.has(o)) expect(decodeRecordAt(batch, 0, o)).toBeUndefined();
      },
    ), { numRuns: 100 });
  });
});

describe('timestamps far apart in one batch', () => {
  it('round-trip when their delta is past 2^52 ms (its zigzag varint past a safe integer)', () => {
    const records = [0, 8.64e15, 4503599627370497].map((timestamp) => ({ key: null, value: Buffer.from('v'), timestamp }));
    expect(decodeRecords(encodeBatch(records, 0, 0)).map((r) => r.timestamp)).toEqual([0, 8.64e15, 4503599627370497]);
  });
});

describe('RecordBatchBuilder', () => {
  it('builds batches that decode to the records added, in order, and that the broker accepts as produced', () => {
    const builder = new RecordBatchBuilder(256); // small: the buffer grows as records come
    fc.assert(fc.property(
      fc.array(fc.record({
        key: fc.option(fc.uint8Array({ maxLength: 40 }), { nil: null }),
        value: fc.option(fc.string({ unit: 'binary', maxLength: 300 }), { nil: null }),
        timestamp: fc.integer({ min: 0, max: 8.64e15 }),
      }), { minLength: 1, maxLength: 40 }),
      (records) => {
        for (const r of records) builder.add(r.key, r.value, r.timestamp);
        expect(builder.recordCount).toBe(records.length);
        const batch = builder.finish();
        expect(builder.recordCount).toBe(0);
        expect(validateBatch(batch)).toBe(batch.length);
        const header = readBatchHeader(batch);
        expect(header).toMatchObject({
          recordCount: records.length, lastOffsetDelta: records.length - 1, baseTimestamp: records[0]!.timestamp,
          maxTimestamp: Math.max(...records.map((r) => r.timestamp)), producerId: -1,
        });
        expect(decodeRecords(batch).map((r) => [r.offset, r.key && [...r.key], r.value?.toString('utf8') ?? null, r.timestamp, r.headers])).toEqual(
          records.map((r, i) => [i, r.key && [...r.key], r.value === null ? null : Buffer.from(r.value, 'utf8').toString('utf8'), r.timestamp, []]));
        expect(validateProducedBatch(batch, 'the batch', {}, { decode: true }).records).toHaveLength(records.length);
      },
    ), { numRuns: 200 });
    expect(() => builder.finish()).toThrow(/at least one record/);
  });
});

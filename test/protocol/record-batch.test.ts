import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  decodeRecords, encodeBatch, readBatchHeader, setBaseOffset, validateBatch,
} from '../../src/protocol/record-batch.js';
import type { RecordInput } from '../../src/protocol/types.js';

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

const hdr = (key: string, value: string) => ({ key, value: Buffer.from(value) });

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
    const bytesOrNull = fc.option(fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a)), { nil: null });
    const record = fc.record({
      key: bytesOrNull,
      value: bytesOrNull,
      timestamp: fc.integer({ min: 0, max: 2 ** 45 }),
      headers: fc.array(fc.record({ key: fc.string({ maxLength: 20 }), value: bytesOrNull }), { maxLength: 4 }),
    });
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

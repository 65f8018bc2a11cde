import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodePushRecords, encodePushRecords } from '../../src/protocol/push-frames.js';
import type { StoredRecord } from '../../src/protocol/types.js';

const bytes = fc.option(fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)), { nil: null });

/** Records at increasing offsets (gaps of 0 to 3, as compaction and retries leave), each with its own timestamp. */
const records = fc.array(fc.record({
  gap: fc.nat(3), timestamp: fc.integer({ min: 0, max: 4_102_444_800_000 }), key: bytes, value: bytes,
  headers: fc.array(fc.record({ key: fc.string({ maxLength: 8 }), value: bytes }), { maxLength: 3 }),
}), { minLength: 1, maxLength: 30 }).chain((rs) => fc.nat(2 ** 40).map((start) => {
  let offset = start - 1;
  return rs.map(({ gap, ...r }): StoredRecord => ({ offset: offset += 1 + gap, ...r }));
}));

describe('binary push records frames', () => {
  it('decode to the records encoded, gaps, timestamps, null keys and values and headers kept (property)', () => {
    fc.assert(fc.property(fc.string({ minLength: 1, maxLength: 20 }), fc.nat(1000), records, (topic, partition, rs) => {
      expect(decodePushRecords(encodePushRecords(topic, partition, rs))).toEqual({ type: 'records', topic, partition, records: rs });
    }), { numRuns: 300 });
  });

  it('a frame cut short, without its header or with another frame\'s header answers CORRUPT_MESSAGE', () => {
    const frame = encodePushRecords('edits', 2, [{ offset: 7, timestamp: 1, key: Buffer.from('k'), value: Buffer.from('v'), headers: [] }]);
    const header = Buffer.from('{"type":"nacked","topic":"edits","partition":2}');
    const otherHeader = Buffer.concat([Buffer.from([0, 0, 0, header.length]), header, frame.subarray(4 + frame.readUInt32BE(0))]);
    for (const bad of [frame.subarray(0, frame.length - 1), frame.subarray(0, 3), Buffer.from('{"type":"records"}'), otherHeader]) {
      expect(() => decodePushRecords(bad)).toThrow(expect.objectContaining({ code: 'CORRUPT_MESSAGE' }));
    }
  });
});

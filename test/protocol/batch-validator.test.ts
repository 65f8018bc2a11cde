/**
 * The produced-batch validator (issue 31, point 2) against a reference decoder written from the RecordBatch v2
 * layout (BigInt varints, every rule spelled out): over random batches, mutated in their record count, offset
 * deltas, attributes, codec, timestamps and bytes, each resealed with a valid CRC, the validator accepts exactly
 * the batches the reference reads whole, and what it accepts decodes to the reference's records; a broker stores
 * only those, and a fetch decodes everything it stored.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { decompressedLimit } from '../../src/delivery/data-path.js';
import { MAX_TIMESTAMP_MS, validateProducedBatch } from '../../src/protocol/batch-validator.js';
import { COMPRESSION_CODECS, decompress } from '../../src/protocol/compression.js';
import type { CompressionCodec } from '../../src/protocol/compression.js';
import { crc32c } from '../../src/protocol/crc32c.js';
import { OnelogError } from '../../src/protocol/errors.js';
import { decodeRecords, encodeBatch, readBatchHeader } from '../../src/protocol/record-batch.js';
import type { StoredRecord } from '../../src/protocol/types.js';
import { MALFORMED_BATCHES, reseal } from '../helpers/malformed-batches.js';
import { tmpDir } from '../helpers/tmp.js';

// ---- the reference: the layout read field by field, exact integers ---------------------------------------------

class RefReader {
  pos = 0;
  constructor(readonly buf: Buffer) {}
  varint(): bigint {
    let raw = 0n;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.buf.length) throw new Error('varint past the end');
      const b = this.buf[this.pos++]!;
      raw |= BigInt(b & 0x7f) << BigInt(7 * i);
      if (b < 0x80) return (raw >> 1n) ^ -(raw & 1n);
    }
    throw new Error('varint over 10 bytes');
  }
  bytes(len: bigint, nullable = true): Buffer | null {
    if (len === -1n && nullable) return null;
    if (len < 0n || BigInt(this.pos) + len > BigInt(this.buf.length)) throw new Error('field past the end');
    const out = this.buf.subarray(this.pos, this.pos + Number(len));
    this.pos += Number(len);
    return out;
  }
}

/**
 * The batch's records when it is whole and every rule holds; else the reason. Decompression is the codec's library,
 * held to `maxSectionBytes` as the broker holds it (a zstd or lz4 frame declaring more is refused undecoded).
 */
function reference(batch: Buffer, maxSectionBytes = Infinity): StoredRecord[] | string {
  if (batch.length < 61 || batch.readInt32BE(8) + 12 !== batch.length) return 'length';
  if (batch.readInt8(16) !== 2) return 'magic';
  if (crc32c(batch, 21) !== batch.readUInt32BE(17)) return 'crc';
  const attributes = batch.readInt16BE(21);
  if ((attributes & ~7) !== 0) return 'attributes';
  const codec = COMPRESSION_CODECS[attributes & 7];
  if (codec === undefined) return 'codec';
  const count = batch.readInt32BE(57);
  if (count < 1 || batch.readInt32BE(23) + 1 !== count) return 'count';
  let section: Buffer;
  try {
    section = decompress(codec, batch.subarray(61), maxSectionBytes);
  } catch {
    return 'decompress';
  }
  const baseOffset = batch.readBigInt64BE(0);
  const baseTimestamp = batch.readBigInt64BE(27);
  const r = new RefReader(section);
  const out: StoredRecord[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const length = r.varint();
      const end = BigInt(r.pos) + length;
      if (length < 0n || end > BigInt(section.length)) return 'record length';
      r.pos++; // attributes
      const timestamp = baseTimestamp + r.varint();
      const offsetDelta = r.varint();
      const key = r.bytes(r.varint());
      const value = r.bytes(r.varint());
      const headerCount = r.varint();
      if (headerCount < 0n) return 'header count';
      const headers = [];
      for (let j = 0n; j < headerCount; j++) {
        const hk = r.bytes(r.varint(), false)!;
        headers.push({ key: hk.toString('utf8'), value: r.bytes(r.varint()) });
      }
      if (BigInt(r.pos) !== end) return 'record fields';
      if (offsetDelta !== BigInt(i)) return 'offset delta';
      if (timestamp < 0n || timestamp > BigInt(MAX_TIMESTAMP_MS)) return 'timestamp';
      out.push({ offset: Number(baseOffset + offsetDelta), timestamp: Number(timestamp), key, value, headers });
    }
  } catch (err) {
    return (err as Error).message;
  }
  return r.pos === section.length ? out : 'bytes after the records';
}

// ---- random batches, then random damage, resealed ---------------------------------------------------------------

const bytes = fc.option(fc.uint8Array({ maxLength: 12 }).map((b) => Buffer.from(b)), { nil: null });
const timestamp = fc.oneof(
  fc.integer({ min: 0, max: 2 ** 45 }),
  fc.constantFrom(-1, -5, MAX_TIMESTAMP_MS, MAX_TIMESTAMP_MS + 1, 2 ** 62),
  fc.integer({ min: -(2 ** 50), max: 2 ** 53 }),
);
const recordInput = fc.record({
  key: bytes, value: bytes, timestamp,
  headers: fc.array(fc.record({ key: fc.string({ maxLength: 4 }), value: bytes }), { maxLength: 2 }),
});
const damage = fc.oneof(
  fc.record({ kind: fc.constant('count' as const), n: fc.integer({ min: -2, max: 8 }), alsoDeltas: fc.boolean() }),
  fc.record({ kind: fc.constant('lastOffsetDelta' as const), n: fc.integer({ min: -2, max: 8 }) }),
  fc.record({ kind: fc.constant('attributes' as const), n: fc.oneof(fc.integer({ min: 0, max: 7 }), fc.constantFrom(0x08, 0x10, 0x20, 0x40, 0x80, 0x100), fc.integer({ min: -32768, max: 32767 })) }),
  fc.record({ kind: fc.constant('baseTimestamp' as const), n: fc.oneof(fc.integer({ min: -(2 ** 40), max: 2 ** 53 }), fc.constantFrom(-1, 2 ** 62)) }),
  fc.record({ kind: fc.constant('byte' as const), at: fc.nat(), n: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ kind: fc.constant('truncate' as const), n: fc.integer({ min: 1, max: 8 }) }),
  fc.record({ kind: fc.constant('append' as const), tail: fc.uint8Array({ minLength: 1, maxLength: 8 }) }),
  fc.record({ kind: fc.constant('records' as const), section: fc.uint8Array({ maxLength: 64 }) }),
);
type Damage = typeof damage extends fc.Arbitrary<infer D> ? D : never;

function damaged(batch: Buffer, all: readonly Damage[]): Buffer {
  let b = Buffer.from(batch);
  for (const d of all) {
    switch (d.kind) {
      case 'count':
        b.writeInt32BE(d.n, 57);
        if (d.alsoDeltas) b.writeInt32BE(d.n - 1, 23);
        break;
      case 'lastOffsetDelta':
        b.writeInt32BE(d.n, 23);
        break;
      case 'attributes':
        b.writeInt16BE(d.n, 21);
        break;
      case 'baseTimestamp':
        b.writeBigInt64BE(BigInt(d.n), 27);
        break;
      case 'byte':
        if (b.length > 61) b[61 + (d.at % (b.length - 61))] = d.n;
        break;
      case 'truncate':
        b = b.subarray(0, Math.max(61, b.length - d.n));
        break;
      case 'append':
        b = Buffer.concat([b, d.tail]);
        break;
      case 'records':
        b = Buffer.concat([b.subarray(0, 61), d.section]);
        break;
    }
  }
  return reseal(Buffer.from(b));
}

const batchCase = fc.record({
  records: fc.array(recordInput, { minLength: 1, maxLength: 5 }),
  codec: fc.constantFrom<CompressionCodec>('none', 'none', 'none', 'gzip', 'snappy', 'lz4', 'zstd'),
  damage: fc.array(damage, { maxLength: 3 }),
}).map(({ records, codec, damage: d }) => damaged(encodeBatch(records, 0, 0, undefined, { compression: codec }), d));

function validated(batch: Buffer, decode: boolean): StoredRecord[] | string {
  try {
    const { records } = validateProducedBatch(batch, 'the batch', {}, { decode });
    return decode ? records! : decodeRecords(batch);
  } catch (err) {
    if (err instanceof OnelogError && ['CORRUPT_MESSAGE', 'INVALID_RECORD', 'UNSUPPORTED_COMPRESSION'].includes(err.code)) return err.code;
    throw err;
  }
}

describe('validateProducedBatch', () => {
  it('accepts exactly what the reference decoder reads whole, and decodes it to the same records (property)', () => {
    fc.assert(fc.property(batchCase, (batch) => {
      const expected = reference(batch);
      for (const decode of [false, true]) {
        const got = validated(Buffer.from(batch), decode);
        if (typeof expected === 'string') expect(typeof got, `reference: ${expected}`).toBe('string');
        else expect(got).toEqual(expected);
      }
    }), { numRuns: 3000 });
  });

  it('stamps the records\' max timestamp into a batch whose header disagrees, with a CRC that holds', () => {
    const batch = encodeBatch([{ key: null, value: null, timestamp: 10 }, { key: null, value: null, timestamp: 30 }], 0, 0);
    batch.writeBigInt64BE(7n, 35);
    validateProducedBatch(reseal(batch), 'the batch', {});
    expect(readBatchHeader(batch).maxTimestamp).toBe(30);
    expect(reference(batch)).not.toBeTypeOf('string');
  });

  it('names the batch and what was wrong in each refusal of the issue\'s shapes', () => {
    for (const { name, code, batch } of MALFORMED_BATCHES) {
      let refusal: OnelogError | undefined;
      try {
        validateProducedBatch(batch(), 'batch 3 of the request to t/0', { topic: 't', partition: 0, batchIndex: 3 });
      } catch (err) {
        refusal = err as OnelogError;
      }
      expect(refusal?.code, name).toBe(code);
      expect(refusal?.message, name).toMatch(/batch 3 of the request to t\/0/);
      expect(refusal?.context, name).toMatchObject({ topic: 't', partition: 0, batchIndex: 3 });
    }
  });
});

describe('a compressed batch that decompresses past the limit', () => {
  it('is refused with RECORD_TOO_LARGE for each codec (before decompressing when the format declares its size); at the limit it passes', () => {
    const records = Array.from({ length: 10 }, (_, i) => ({ key: null, value: Buffer.alloc(1000, i), headers: [] }));
    const section = encodeBatch(records, 0, 0).length - 61;
    for (const codec of ['gzip', 'snappy', 'lz4', 'zstd'] as const) {
      const batch = encodeBatch(records, 0, 0, undefined, { compression: codec });
      expect(batch.length).toBeLessThan(section / 4);
      let refusal: OnelogError | undefined;
      try {
        validateProducedBatch(batch, 'the batch', {}, { maxRecordsBytes: section - 1 });
      } catch (err) {
        refusal = err as OnelogError;
      }
      expect(refusal?.code, codec).toBe('RECORD_TOO_LARGE');
      expect(refusal?.message, codec).toMatch(new RegExp(`the batch is refused: the batch's ${codec} records decompress to .* above the limit of ${section - 1} bytes`));
      expect(validateProducedBatch(batch, 'the batch', {}, { maxRecordsBytes: section }).header.recordCount).toBe(10);
    }
  });

  it('a broker refuses a gzip or zstd bomb of a few KiB that would decompress to 65 MiB, and a compressed record above the record limit, storing nothing', async () => {
    const broker = await Broker.open({ dataDir: tmpDir(), retentionCheckIntervalMs: 0, monitoring: { alertCheckIntervalMs: 0 } });
    try {
      await broker.createTopic({ topic: 't', partitions: 1 });
      const zeros = Buffer.alloc(65 << 20);
      for (const codec of ['gzip', 'zstd'] as const) {
        const bomb = encodeBatch([{ key: null, value: zeros, headers: [] }], 0, Date.now(), undefined, { compression: codec });
        expect(bomb.length).toBeLessThan(256 << 10);
        const code = await broker.produceBatches({ topic: 't', batches: [{ partition: 0, batch: bomb }] }).then(() => 'stored', (err: OnelogError) => err.code);
        expect(code, codec).toBe('RECORD_TOO_LARGE');
      }
      // Within the limits compressed, a record of 2 MiB in it is above the 1 MiB record limit.
      const large = encodeBatch([{ key: null, value: Buffer.alloc(2 << 20), headers: [] }], 0, Date.now(), undefined, { compression: 'lz4' });
      const refusal = await broker.produceBatches({ topic: 't', batches: [{ partition: 0, batch: large }] }).then(() => undefined, (err: OnelogError) => err);
      expect(refusal).toMatchObject({ code: 'RECORD_TOO_LARGE', context: { index: 0, recordBytes: (2 << 20) + 24 } });
      expect((await broker.describeTopic('t')).partitions[0]!.highWatermark).toBe(0);
    } finally {
      await broker.close();
    }
  });
});

describe('a broker given random batches', () => {
  it('stores only the batches the reference reads whole, and a fetch decodes every record it stored (property)', async () => {
    const broker = await Broker.open({ dataDir: tmpDir(), retentionCheckIntervalMs: 0, monitoring: { alertCheckIntervalMs: 0 } });
    try {
      await broker.createTopic({ topic: 't', partitions: 1 });
      let stored = 0;
      await fc.assert(fc.asyncProperty(fc.array(batchCase, { minLength: 1, maxLength: 3 }), async (batches) => {
        const readable = batches.every((b) => typeof reference(b, decompressedLimit({ maxBatchBytes: 1 << 20 })) !== 'string');
        const result = await broker.produceBatches({ topic: 't', batches: batches.map((batch) => ({ partition: 0, batch: Buffer.from(batch) })) })
          .then(() => 'stored', (err: OnelogError) => err.code);
        expect(result).toEqual(readable ? 'stored' : expect.stringMatching(/^(CORRUPT_MESSAGE|INVALID_RECORD|UNSUPPORTED_COMPRESSION|RECORD_TOO_LARGE)$/));
        if (readable) stored += batches.reduce((sum, b) => sum + (reference(b) as StoredRecord[]).length, 0);
        expect((await broker.describeTopic('t')).partitions[0]!.highWatermark).toBe(stored);
      }), { numRuns: 300 });
      let offset = 0;
      let fetched = 0;
      while (offset < stored) {
        const p = (await broker.fetch({ topic: 't', partitions: [{ partition: 0, offset }], maxRecords: 10_000 })).partitions[0]!;
        expect(p.error).toBeUndefined();
        fetched += p.records.length;
        offset = p.nextOffset;
      }
      expect(fetched).toBe(stored);
    } finally {
      await broker.close();
    }
  });
});

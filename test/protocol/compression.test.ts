/** The batch compression codecs: round trips on real data, the formats Kafka clients write, corrupt input. */
import zlib from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  codecId, codecOf, COMPRESSION_CODECS, compress, decompress,
} from '../../src/protocol/compression.js';
import type { CompressionCodec } from '../../src/protocol/compression.js';
import { readEdits } from '../helpers/wikiticker.js';
import { codeOf } from '../helpers/errors.js';

const CODECS = COMPRESSION_CODECS.filter((c) => c !== 'none');

let edits: string[] | undefined;
/** The first `n` Wikipedia edits, one JSON object a line. */
function editLines(n: number): Buffer {
  edits ??= readEdits().slice(0, 2000).map((e) => e.value);
  return Buffer.from(edits.slice(0, n).join('\n'), 'utf8');
}

// IBM/sarama message_test.go, emptyBulkSnappyMessage: the value of a v0 message as a Kafka broker wrote it,
// in xerial framing (header, version 1, compatible version 1, one 22-byte block). It holds a message set of
// two messages with empty keys and values at offsets 0 and 1.
const SARAMA_XERIAL = Buffer.from([
  130, 83, 78, 65, 80, 80, 89, 0, 0, 0, 0, 1, 0, 0, 0, 1,
  0, 0, 0, 22, 52, 0, 0, 25, 1, 16, 14, 227, 138, 104, 118, 25, 15, 13, 1, 8, 1, 0, 0, 62, 26, 0,
]);

describe('compression codecs', () => {
  it('numbers the codecs as Kafka does and refuses attribute values 5-7', () => {
    expect(CODECS.map(codecId)).toEqual([1, 2, 3, 4]);
    expect(codecId('none')).toBe(0);
    expect([0, 1, 2, 3, 4].map(codecOf)).toEqual(['none', 'gzip', 'snappy', 'lz4', 'zstd']);
    expect(codecOf(0x40 | 3)).toBe('lz4'); // other attribute bits do not matter
    for (const id of [5, 6, 7]) expect(codeOf(() => codecOf(id))).toBe('UNSUPPORTED_COMPRESSION');
    expect(codeOf(() => compress('brotli' as CompressionCodec, Buffer.from('x')))).toBe('UNSUPPORTED_COMPRESSION');
  });

  it.each(CODECS)('%s round-trips 2,000 Wikipedia edits and shrinks them', (codec) => {
    const data = editLines(2000);
    expect(data.length).toBeGreaterThan(800_000);
    const packed = compress(codec, data);
    expect(packed.length).toBeLessThan(data.length / 2);
    expect(decompress(codec, packed).equals(data)).toBe(true);
  });

  it('writes each codec in the format Kafka reads: gzip member, xerial snappy, LZ4 frame, zstd frame', () => {
    const data = editLines(200);
    const gzip = compress('gzip', data);
    expect(gzip.subarray(0, 3).toString('hex')).toBe('1f8b08');
    expect(zlib.gunzipSync(gzip).equals(data)).toBe(true);

    const snappy = compress('snappy', data);
    expect(snappy.subarray(0, 16).toString('hex')).toBe('82534e4150505900' + '00000001' + '00000001');
    // 32 KiB of input per block, as snappy-java's SnappyOutputStream: walk the length-prefixed blocks
    let blocks = 0;
    for (let pos = 16; pos < snappy.length; pos += 4 + snappy.readInt32BE(pos)) blocks++;
    expect(blocks).toBe(Math.ceil(data.length / 32768));

    const lz4 = compress('lz4', data);
    expect(lz4.readUInt32LE(0)).toBe(0x184d2204); // LZ4 frame magic
    const flg = lz4[4]!;
    expect(flg >> 6).toBe(1); // frame version 01
    expect(flg & 0x20).toBe(0x20); // independent blocks, which Kafka's KafkaLZ4BlockInputStream requires
    expect(flg & 0x01).toBe(0); // no dictionary id

    const zstd = compress('zstd', data);
    expect(zstd.readUInt32LE(0)).toBe(0xfd2fb528); // zstd frame magic
  });

  it('reads snappy in xerial framing as a Kafka broker wrote it (sarama fixture)', () => {
    const messageSet = decompress('snappy', SARAMA_XERIAL);
    expect(messageSet.length).toBe(52);
    for (const [i, at] of [0, 26].entries()) {
      expect(Number(messageSet.readBigInt64BE(at))).toBe(i); // offset
      expect(messageSet.readInt32BE(at + 8)).toBe(14); // message size
      const message = messageSet.subarray(at + 12, at + 26);
      expect(message.readUInt32BE(0)).toBe(zlib.crc32(message.subarray(4))); // the v0 message CRC holds
      expect(message.subarray(4).toString('hex')).toBe('0000' + '00000000' + '00000000'); // magic, attributes, empty key, empty value
    }
  });

  it('reads raw snappy (no framing), as sarama and librdkafka write it', () => {
    // sarama record_test.go, "snappy compressed record": the records section of the batch
    const raw = Buffer.from([21, 80, 40, 0, 10, 0, 8, 1, 2, 3, 4, 6, 5, 6, 7, 2, 6, 8, 9, 10, 4, 11, 12]);
    expect(decompress('snappy', raw).toString('hex')).toBe('28000a0008010203040605060702060809' + '0a040b0c');
  });

  it('reads an LZ4 frame with a content checksum (sarama fixture, written by pierrec/lz4)', () => {
    const frame = Buffer.from([
      4, 34, 77, 24, 100, 112, 185, 21, 0, 0, 128, 40, 0, 10, 0, 8, 1, 2, 3, 4, 6, 5, 6, 7, 2,
      6, 8, 9, 10, 4, 11, 12, 0, 0, 0, 0, 12, 59, 239, 146,
    ]);
    expect(decompress('lz4', frame).toString('hex')).toBe('28000a0008010203040605060702060809' + '0a040b0c');
    const badChecksum = Buffer.from(frame);
    badChecksum[badChecksum.length - 1]! ^= 0xff;
    expect(codeOf(() => decompress('lz4', badChecksum))).toBe('CORRUPT_MESSAGE');
  });

  it('reads multi-member gzip whole, as Java\'s GZIPInputStream does', () => {
    const two = Buffer.concat([zlib.gzipSync('first '), zlib.gzipSync('second')]);
    expect(decompress('gzip', two).toString()).toBe('first second');
  });

  it.each(CODECS)('%s reports data that does not decompress as CORRUPT_MESSAGE', (codec) => {
    const data = editLines(50);
    const packed = compress(codec, data);
    const truncated = packed.subarray(0, Math.floor(packed.length / 2));
    expect(codeOf(() => decompress(codec, truncated))).toBe('CORRUPT_MESSAGE');
    expect(codeOf(() => decompress(codec, Buffer.from('definitely not compressed data')))).toBe('CORRUPT_MESSAGE');
  });

  it('reports a xerial block that runs past the end', () => {
    const cut = Buffer.from(SARAMA_XERIAL.subarray(0, SARAMA_XERIAL.length - 3));
    expect(codeOf(() => decompress('snappy', cut))).toBe('CORRUPT_MESSAGE');
  });

  it('round-trips any bytes under every codec, repeatedly on one codec instance (property)', () => {
    fc.assert(
      fc.property(fc.constantFrom(...COMPRESSION_CODECS), fc.uint8Array({ maxLength: 100_000 }), (codec, bytes) => {
        const data = Buffer.from(bytes);
        expect(decompress(codec, compress(codec, data)).equals(data)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});

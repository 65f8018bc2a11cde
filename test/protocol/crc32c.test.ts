import { describe, expect, it } from 'vitest';
import { crc32c } from '../../src/protocol/crc32c.js';

// Check values of CRC-32C (Castagnoli): the catalogue check value and RFC 3720 section B.4, as tested in
// google/crc32c (src/crc32c_unittest.cc) and google/leveldb (util/crc32c_test.cc).
describe('crc32c', () => {
  it('matches the catalogue check value for "123456789"', () => {
    expect(crc32c(Buffer.from('123456789'))).toBe(0xe3069283);
  });

  it('matches the RFC 3720 B.4 vectors', () => {
    expect(crc32c(Buffer.alloc(32, 0x00))).toBe(0x8a9136aa);
    expect(crc32c(Buffer.alloc(32, 0xff))).toBe(0x62a8ab43);
    expect(crc32c(Buffer.from(Array.from({ length: 32 }, (_, i) => i)))).toBe(0x46dd794e);
    expect(crc32c(Buffer.from(Array.from({ length: 32 }, (_, i) => 31 - i)))).toBe(0x113fdb5c);
    const pdu = Buffer.from(
      '01c000000000000000000000000000001400000000000400000000140000001828000000000000000200000000000000',
      'hex',
    );
    expect(crc32c(pdu)).toBe(0xd9963a56);
  });

  it('is 0 for no bytes and honours start and end', () => {
    expect(crc32c(Buffer.alloc(0))).toBe(0);
    const padded = Buffer.concat([Buffer.from('xx'), Buffer.from('123456789'), Buffer.from('yyy')]);
    expect(crc32c(padded, 2, 11)).toBe(0xe3069283);
  });

  it('gives the same result for every split of the 8-byte fast path and the byte tail', () => {
    const data = Buffer.from(Array.from({ length: 1000 }, (_, i) => (i * 37) & 0xff));
    const bytewise = (buf: Buffer) => {
      let c = 0xffffffff;
      for (const b of buf) {
        c ^= b;
        for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
      }
      return (c ^ 0xffffffff) >>> 0;
    };
    for (const len of [0, 1, 7, 8, 9, 15, 16, 17, 999, 1000]) {
      expect(crc32c(data.subarray(0, len))).toBe(bytewise(data.subarray(0, len)));
    }
  });
});

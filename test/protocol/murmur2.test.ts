import { describe, expect, it } from 'vitest';
import { murmur2, partitionForKey } from '../../src/protocol/murmur2.js';

const bytes = (s: string) => Buffer.from(s, 'utf8');

describe('murmur2', () => {
  // apache/kafka clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java, testMurmur2
  it('matches Kafka Utils.murmur2 test vectors', () => {
    expect(murmur2(bytes('21'))).toBe(-973932308);
    expect(murmur2(bytes('foobar'))).toBe(-790332482);
    expect(murmur2(bytes('a-little-bit-long-string'))).toBe(-985981536);
    expect(murmur2(bytes('a-little-bit-longer-string'))).toBe(-1486304829);
    expect(murmur2(bytes('lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8'))).toBe(-58897971);
    expect(murmur2(Buffer.from([0x61, 0x62, 0x63]))).toBe(479470107);
  });

  // tulios/kafkajs src/producer/partitioners/default/murmur2.spec.js (generated with Kafka's Java code)
  it('matches the Java-compatible values kafkajs checks', () => {
    const cases: Array<[string, number]> = [
      ['0', 971027396], ['1', -1993445489], ['128', -326012175], ['2187', -1508407203],
      ['16384', -325739742], ['78125', -1654490814], ['279936', 1462227128], ['823543', -2014198330],
      ['2097152', 607668903], ['4782969', -1182699775], ['10000000', -1830336757],
      ['100:48069', 1009543857],
    ];
    for (const [key, hash] of cases) expect(murmur2(bytes(key)), key).toBe(hash);
  });

  it('hashes the empty key like librdkafka and sarama (0x106e08d9)', () => {
    expect(murmur2(Buffer.alloc(0)) >>> 0).toBe(0x106e08d9);
  });
});

describe('partitionForKey', () => {
  // IBM/sarama partitioner_test.go TestMurmur2Partitioner: verified against the Java client, 100 partitions
  it('picks the partition the Java client picks', () => {
    expect(partitionForKey(bytes('foo'), 100)).toBe(16);
    expect(partitionForKey(bytes('bar'), 100)).toBe(45);
    expect(partitionForKey(bytes('baz'), 100)).toBe(80);
    expect(partitionForKey(bytes('kafka'), 100)).toBe(80);
    expect(partitionForKey(bytes('sarama'), 100)).toBe(11);
    expect(partitionForKey(bytes('anything'), 1)).toBe(0);
  });

  // confluentinc/librdkafka tests/0048-partitioner.c: expected partition = 0xHASH % part_cnt
  it('matches librdkafka murmur2 partitioner expectations for 7 and 17 partitions', () => {
    const cases: Array<[string, number]> = [
      ['', 0x106e08d9],
      ['23456', 0x058d780f],
      ['this is another string with more length to it perhaps', 0x4f7703da],
      ['hejsan', 0x5ec19395],
    ];
    for (const [key, hash] of cases) {
      for (const n of [7, 17]) expect(partitionForKey(bytes(key), n), `${key} % ${n}`).toBe(hash % n);
    }
  });
});

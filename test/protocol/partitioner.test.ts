import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { partitionForKey } from '../../src/protocol/murmur2.js';
import { Partitioner, STICKY_BYTES } from '../../src/protocol/partitioner.js';
import { recordBytes } from '../../src/protocol/produce-plan.js';

describe('Partitioner', () => {
  it('sends keyed records to murmur2(key) and keyless ones to a sticky partition that moves on in turn every STICKY_BYTES', () => {
    fc.assert(fc.property(
      fc.integer({ min: 1, max: 20 }),
      fc.array(fc.record({ keyed: fc.boolean(), size: fc.integer({ min: 0, max: 5_000 }) }), { maxLength: 400 }),
      (partitions, specs) => {
        const partitioner = new Partitioner();
        const runs: Array<{ partition: number; bytes: number }> = [];
        specs.forEach(({ keyed, size }, i) => {
          const record = { key: keyed ? Buffer.from(`key-${i}`) : null, value: Buffer.alloc(size) };
          const partition = partitioner.partitionOf('t', record.key, recordBytes(record), partitions);
          expect(partition).toBeGreaterThanOrEqual(0);
          expect(partition).toBeLessThan(partitions);
          if (keyed) {
            expect(partition).toBe(partitionForKey(record.key!, partitions));
            return;
          }
          const last = runs.at(-1);
          if (last !== undefined && last.bytes < STICKY_BYTES) {
            expect(partition).toBe(last.partition);
            last.bytes += recordBytes(record);
          } else {
            if (last !== undefined) expect(partition).toBe((last.partition + 1) % partitions);
            runs.push({ partition, bytes: recordBytes(record) });
          }
        });
      },
    ));
  });

  it('keeps a sticky partition per topic', () => {
    const partitioner = new Partitioner();
    const a = [0, 1, 2].map(() => partitioner.partitionOf('a', null, STICKY_BYTES, 1_000));
    partitioner.partitionOf('b', null, STICKY_BYTES, 1_000);
    expect(a[1]).toBe((a[0]! + 1) % 1_000);
    expect(a[2]).toBe((a[0]! + 2) % 1_000);
    // Topic b's first record does not move topic a's partition.
    expect(partitioner.partitionOf('a', null, STICKY_BYTES, 1_000)).toBe((a[0]! + 3) % 1_000);
  });
});

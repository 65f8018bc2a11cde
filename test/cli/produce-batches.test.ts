/**
 * `onelog produce`'s requests (src/cli/produce-batches.ts): records written into per-partition batches as they are read,
 * partitioned as the broker would, cut at 1 MiB per batch; the records before a refused line, and nothing else.
 */
import { describe, expect, it } from 'vitest';
import { ProduceBatches, recordsBefore } from '../../src/cli/produce-batches.js';
import { Partitioner } from '../../src/protocol/partitioner.js';
import { decodeRecords } from '../../src/protocol/record-batch.js';
import { readEdits } from '../helpers/wikiticker.js';

describe('produce requests', () => {
  it('hold every record once, in input order per partition, in batches of at most 1 MiB, each record with its line', () => {
    const edits = readEdits().slice(0, 12_000);
    const batches = new ProduceBatches('edits', 3);
    const partitioner = new Partitioner();
    const expected: Array<Array<{ key: string; value: string; line: number }>> = [[], [], []];
    edits.forEach((e, i) => {
      batches.add({ key: e.key, value: e.value, timestamp: e.timestamp }, i + 1, 0);
      const p = partitioner.partitionOf('edits', Buffer.from(e.key), 0, 3);
      expected[p]!.push({ key: e.key, value: e.value, line: i + 1 });
    });
    expect(batches.records).toBe(12_000);
    const request = batches.cut();
    expect(batches.records).toBe(0);
    expect(batches.cut()).toEqual([]);
    expect(request.length).toBeGreaterThan(3); // about 5 MB of edits: several batches per partition
    expect(Math.max(...request.map((b) => b.bytes.length))).toBeLessThanOrEqual(1024 * 1024);
    for (let p = 0; p < 3; p++) {
      const got = request.filter((b) => b.partition === p).flatMap((b) => decodeRecords(b.bytes).map((r, i) => ({
        key: r.key!.toString(), value: r.value!.toString(), line: b.lines[i]!,
      })));
      expect(got).toEqual(expected[p]);
    }
    const before = recordsBefore(request, 101);
    expect(before.flatMap((b) => b.lines).sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    expect(before.flatMap((b) => decodeRecords(b.bytes).map((r) => r.timestamp))).toEqual(
      before.flatMap((b) => b.lines.map((l) => edits[l - 1]!.timestamp)));
  });
});

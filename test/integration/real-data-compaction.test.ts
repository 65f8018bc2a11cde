/**
 * Compaction on real data: the 39,244 Wikipedia edits keyed `channel|page` compact to exactly 35,278
 * records, each the latest edit of its key, at its original offset.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { readRecords } from '../../src/cli/input.js';
import type { ProduceRecord } from '../../src/protocol/produce.js';
import { tmpDir } from '../helpers/tmp.js';
import { editsByPartition, readEdits, WIKITICKER } from '../helpers/wikiticker.js';

let broker: Broker | undefined;
afterEach(() => broker?.close());

describe('compaction of the Wikipedia edits', () => {
  it('keeps exactly the latest edit of each of the 35,278 keys', async () => {
    broker = await Broker.open({ dataDir: tmpDir(), retentionCheckIntervalMs: 0, compactionIntervalMs: 0 });
    await broker.createTopic({
      topic: 'pages', partitions: 3, config: { cleanupPolicy: 'compact', segmentBytes: 1024 * 1024 },
    });
    const records: ProduceRecord[] = [];
    for await (const { record: r } of readRecords({ file: WIKITICKER, keyFields: ['channel', 'page'], timestampField: 'time' })) {
      records.push({ key: r.key === null ? null : Buffer.from(r.key), value: Buffer.from(String(r.value)), timestamp: r.timestamp! });
    }
    for (let i = 0; i < records.length; i += 5000) await broker.produce({ topic: 'pages', records: records.slice(i, i + 5000) });

    const result = await broker.compactTopic({ topic: 'pages', wait: true });
    expect(result.partitions.reduce((n, p) => n + p.recordsBefore, 0)).toBe(39_244);
    expect(result.partitions.reduce((n, p) => n + p.recordsAfter, 0)).toBe(35_278);

    const expected = editsByPartition(readEdits(), 3).map((edits) => {
      const latest = new Map<string, number>();
      edits.forEach((e, offset) => latest.set(e.key, offset));
      return new Map([...latest.values()].map((offset) => [offset, edits[offset]!]));
    });
    let total = 0;
    for (const p of (await broker.describeTopic('pages')).partitions) {
      let offset = p.logStartOffset;
      while (offset < p.highWatermark) {
        const f = await broker.fetch({ topic: 'pages', partitions: [{ partition: p.partition, offset }], maxRecords: 10_000, maxBytes: 8 << 20 });
        const got = f.partitions[0]!.records;
        if (got.length === 0) break;
        for (const r of got) {
          const e = expected[p.partition]!.get(r.offset);
          expect(e, `${p.partition}/${r.offset} should have been compacted away`).toBeDefined();
          expect([r.key!.toString(), r.value!.toString(), r.timestamp]).toEqual([e!.key, e!.value, e!.timestamp]);
        }
        total += got.length;
        offset = got.at(-1)!.offset + 1;
      }
    }
    expect(total).toBe(35_278);
  });

  it('refuses records without a key on a compacted topic, storing nothing of the request', async () => {
    broker = await Broker.open({ dataDir: tmpDir(), retentionCheckIntervalMs: 0, compactionIntervalMs: 0 });
    await broker.createTopic({ topic: 'state', partitions: 1, config: { cleanupPolicy: 'compact' } });
    await expect(broker.produce({
      topic: 'state', records: [{ key: Buffer.from('a'), value: Buffer.from('1') }, { key: null, value: Buffer.from('2') }],
    })).rejects.toMatchObject({ code: 'INVALID_RECORD', context: { index: 1 } });
    expect((await broker.describeTopic('state')).partitions[0]!.highWatermark).toBe(0);
    await broker.createTopic({ topic: 'events', partitions: 1 });
    await expect(broker.compactTopic({ topic: 'events' })).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
  });
});

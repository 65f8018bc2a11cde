/**
 * Retention on real data: the S&P 500 daily bars (2013-02-08 to 2018-02-07, 619,040 rows) with a one-year
 * retention at 2018-02-08T00:00Z keep exactly the rows dated 2017-02-08 and later, and serve nothing older.
 */
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { readRecords } from '../../src/cli/input.js';
import { ManualClock } from '../../src/common/clock.js';
import type { ProduceRecord } from '../../src/protocol/produce.js';
import { tmpDir } from '../helpers/tmp.js';

const SP500 = path.resolve(import.meta.dirname, '../../examples/data/sp500-daily-2013-2018.csv.gz');
const DAY = 24 * 3600 * 1000;
let broker: Broker | undefined;
afterEach(() => broker?.close());

describe('retention on the S&P 500 file', () => {
  it('keeps exactly the rows from 2017-02-08 on and serves nothing older', async () => {
    const clock = new ManualClock(Date.parse('2018-02-08T00:00:00Z'));
    broker = await Broker.open({ dataDir: tmpDir(), clock, retentionCheckIntervalMs: 0 });
    await broker.createTopic({
      topic: 'bars', partitions: 4, config: { retentionMs: 365 * DAY, segmentBytes: 4 * 1024 * 1024 },
    });
    const cutoff = Date.parse('2017-02-08T00:00:00Z');
    let total = 0;
    let keptExpected = 0;
    let batch: ProduceRecord[] = [];
    for await (const { record: r } of readRecords({ file: SP500, keyFields: ['Name'], timestampField: 'date' })) {
      total++;
      if (r.timestamp! >= cutoff) keptExpected++;
      batch.push({ key: r.key === null ? null : Buffer.from(r.key), value: Buffer.from(String(r.value)), timestamp: r.timestamp! });
      if (batch.length === 10_000) {
        await broker.produce({ topic: 'bars', records: batch });
        batch = [];
      }
    }
    await broker.produce({ topic: 'bars', records: batch });
    expect(total).toBe(619_040);

    const result = await broker.enforceRetention('bars');
    expect(result.partitions.every((p) => p.reason === 'retention-time')).toBe(true);

    let served = 0;
    for (const p of (await broker.describeTopic('bars')).partitions) {
      let offset = p.logStartOffset;
      const below = await broker.fetch({ topic: 'bars', partitions: [{ partition: p.partition, offset: offset - 1 }] });
      expect(below.partitions[0]!.error?.code).toBe('OFFSET_OUT_OF_RANGE');
      while (offset < p.highWatermark) {
        const f = await broker.fetch({ topic: 'bars', partitions: [{ partition: p.partition, offset }], maxRecords: 50_000, maxBytes: 8 << 20 });
        const records = f.partitions[0]!.records;
        for (const r of records) {
          expect(r.timestamp).toBeGreaterThanOrEqual(cutoff);
          expect((JSON.parse(r.value!.toString()) as { date: string }).date >= '2017-02-08').toBe(true);
        }
        served += records.length;
        offset = records.at(-1)!.offset + 1;
      }
    }
    expect(served).toBe(keptExpected);
    // about 20.5% of the rows, as the data's README measured
    expect(keptExpected / total).toBeCloseTo(0.205, 2);
  });
});

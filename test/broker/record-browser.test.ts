/**
 * The record browser on the Wikipedia edits (39,244 records in one partition, keyed `channel|page`, timestamped by
 * their edit time), checked against the file itself: pages from an offset, a timestamp and the newest; key searches
 * exact and by prefix, within the scan bound and past it (continued from `nextOffset`); values cut and read whole;
 * bad input refused with its code. The same cases run through the embedded broker (segment files) and through the
 * browser over the object engine of cluster mode (in memory), the read path both share.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { RecordBrowser } from '../../src/broker/record-browser.js';
import { ManualClock } from '../../src/common/clock.js';
import type { Logs } from '../../src/log/logs.js';
import { encodeBatch } from '../../src/protocol/record-batch.js';
import type { RecordPage, RecordPageRequest } from '../../src/protocol/record-pages.js';
import { DEFAULT_TOPIC_CONFIG } from '../../src/protocol/topic-config.js';
import { asyncCodeOf } from '../helpers/errors.js';
import { MemoryObjectStore } from '../helpers/memory-object-store.js';
import { MemorySequencer, MemorySequencerTables } from '../helpers/memory-sequencer.js';
import { objectLogsFixture } from '../helpers/object-logs.js';
import { tmpDir } from '../helpers/tmp.js';
import { readEdits } from '../helpers/wikiticker.js';

const edits = readEdits();
const HW = edits.length;
/** A key edited 33 times over the day, and a channel's prefix. */
const KEY = '#de.wikipedia|Wikipedia:Vandalismusmeldung';
const PREFIX = '#de.wikipedia|';
const at = (key: string) => edits.flatMap((e, i) => (e.key === key ? [i] : []));
const prefixed = (prefix: string) => edits.flatMap((e, i) => (e.key.startsWith(prefix) ? [i] : []));

type Browse = (request: Omit<RecordPageRequest, 'topic' | 'partition'> & { topic?: string; partition?: number }) => Promise<RecordPage>;

/** The record at `offset` as the page should answer it, its value whole. */
function stored(offset: number) {
  const e = edits[offset]!;
  return { offset, timestamp: e.timestamp, key: Buffer.from(e.key), value: Buffer.from(e.value), valueBytes: Buffer.byteLength(e.value), valueTruncated: false };
}
const offsets = (page: RecordPage) => page.records.map((r) => r.offset);

function browserCases(name: string, setup: () => Promise<{ browse: Browse; close(): Promise<void> }>): void {
  describe(`record browser: ${name}`, () => {
    let browse: Browse;
    let close: () => Promise<void>;
    beforeAll(async () => {
      ({ browse, close } = await setup());
    }, 60_000);
    afterAll(async () => close?.());

    it('answers a page from an offset, with the range read and where the next page starts', async () => {
      const page = await browse({ offset: 1000, limit: 20 });
      expect(page.records.map((r) => ({ ...r, headers: undefined }))).toEqual(Array.from({ length: 20 }, (_, i) => ({ ...stored(1000 + i), headers: undefined })));
      expect(page).toMatchObject({ logStartOffset: 0, highWatermark: HW, scanned: { fromOffset: 1000, toOffset: 1020, records: 20 }, scanLimitReached: false, nextOffset: 1020 });
      const next = await browse({ offset: page.nextOffset, limit: 20 });
      expect(offsets(next)[0]).toBe(1020);
      // At the high watermark: nothing, and the next page starts there.
      expect(await browse({ offset: HW })).toMatchObject({ records: [], nextOffset: HW, scanned: { fromOffset: HW, toOffset: HW, records: 0 } });
    });

    it('starts from a timestamp at the first record at or after it, as Kafka\'s ListOffsets', async () => {
      const noon = Date.parse('2015-09-12T12:00:00Z');
      const first = edits.findIndex((e) => e.timestamp >= noon);
      expect(first).toBeGreaterThan(0);
      const page = await browse({ timestamp: noon, limit: 5 });
      expect(offsets(page)).toEqual([first, first + 1, first + 2, first + 3, first + 4]);
      expect(page.records[0]!.timestamp).toBeGreaterThanOrEqual(noon);
      expect(edits[first - 1]!.timestamp).toBeLessThan(noon);
      expect(page.scanned.fromOffset).toBe(first);
      // After the last record: an empty page at the high watermark.
      expect(await browse({ timestamp: edits.at(-1)!.timestamp + 1 })).toMatchObject({ records: [], nextOffset: HW });
    });

    it('answers the newest records, the last ones before the high watermark (the default start)', async () => {
      const page = await browse({ newest: true, limit: 10 });
      expect(offsets(page)).toEqual(Array.from({ length: 10 }, (_, i) => HW - 10 + i));
      expect(page.records.at(-1)!.value).toEqual(Buffer.from(edits.at(-1)!.value));
      expect(page).toMatchObject({ nextOffset: HW, scanned: { fromOffset: HW - 10, toOffset: HW, records: 10 } });
      expect(offsets(await browse({ limit: 3 }))).toEqual([HW - 3, HW - 2, HW - 1]);
    });

    it('searches by exact key and by prefix within the scan bound, and goes on past it from nextOffset', async () => {
      const matches = at(KEY);
      expect(matches).toHaveLength(33);
      const exact = await browse({ offset: 0, key: Buffer.from(KEY), limit: 10, maxScanRecords: 100_000 });
      expect(offsets(exact)).toEqual(matches.slice(0, 10));
      expect(exact.records.every((r) => r.key!.toString() === KEY)).toBe(true);
      // The page is full at the 10th match: the scan stops after it, and the next page goes on from there.
      expect(exact).toMatchObject({ nextOffset: matches[9]! + 1, scanned: { fromOffset: 0, toOffset: matches[9]! + 1, records: matches[9]! + 1 }, scanLimitReached: false });
      const rest = await browse({ offset: exact.nextOffset, key: Buffer.from(KEY), limit: 100, maxScanRecords: 100_000 });
      expect(offsets(rest)).toEqual(matches.slice(10));
      expect(rest).toMatchObject({ nextOffset: HW, scanLimitReached: false });

      const de = prefixed(PREFIX);
      const prefix = await browse({ offset: 0, key: Buffer.from(PREFIX), keyMatch: 'prefix', limit: 50 });
      expect(offsets(prefix)).toEqual(de.slice(0, 50));
      // An exact search for the prefix finds no key: every record scanned, the default bound of 10,000.
      expect(await browse({ offset: 0, key: Buffer.from(PREFIX) })).toMatchObject({
        records: [], scanLimitReached: true, nextOffset: 10_000, scanned: { fromOffset: 0, toOffset: 10_000, records: 10_000 },
      });

      // The first match lies past the bound: the scan stops short of it, says so, and the next page finds it.
      const short = await browse({ offset: 0, key: Buffer.from(KEY), maxScanRecords: matches[0]! });
      expect(short).toMatchObject({ records: [], scanLimitReached: true, nextOffset: matches[0]!, scanned: { fromOffset: 0, toOffset: matches[0]!, records: matches[0]! } });
      const found = await browse({ offset: short.nextOffset, key: Buffer.from(KEY), maxScanRecords: 1, limit: 1 });
      expect(offsets(found)).toEqual([matches[0]]);
      expect(found.scanLimitReached).toBe(false); // the page is full
    });

    it('searches the newest records by key: the last matches within the bound', async () => {
      const matches = at(KEY);
      const newest = await browse({ newest: true, key: Buffer.from(KEY), limit: 5, maxScanRecords: 100_000 });
      expect(offsets(newest)).toEqual(matches.slice(-5));
      expect(newest).toMatchObject({ scanned: { fromOffset: 0, toOffset: HW, records: HW }, scanLimitReached: false, nextOffset: HW });
      // Only the last 2,000 records are searched: the matches among them, and the bound said.
      const window = HW - 2000;
      const recent = await browse({ newest: true, key: Buffer.from(PREFIX), keyMatch: 'prefix', limit: 1000, maxScanRecords: 2000 });
      expect(offsets(recent)).toEqual(prefixed(PREFIX).filter((o) => o >= window));
      expect(recent).toMatchObject({ scanned: { fromOffset: window, toOffset: HW, records: 2000 }, scanLimitReached: true });
    });

    it('cuts values past maxValueBytes, saying their full size, and reads one record whole with a larger bound', async () => {
      const page = await browse({ offset: 7, limit: 3, maxValueBytes: 100 });
      for (const [i, r] of page.records.entries()) {
        const whole = Buffer.from(edits[7 + i]!.value);
        expect(whole.length).toBeGreaterThan(100);
        expect(r).toMatchObject({ value: whole.subarray(0, 100), valueBytes: whole.length, valueTruncated: true });
      }
      const one = await browse({ offset: 8, limit: 1, maxValueBytes: 1024 * 1024 });
      expect(one.records).toHaveLength(1);
      expect(one.records[0]).toMatchObject({ offset: 8, value: Buffer.from(edits[8]!.value), valueTruncated: false });
      // The default bound (4 KiB) holds every edit (the longest is 693 bytes).
      expect((await browse({ offset: 0, limit: 100 })).records.every((r) => !r.valueTruncated)).toBe(true);
    });

    it('refuses bad input with a code naming what was wrong', async () => {
      const refused = async (request: Parameters<Browse>[0]) => asyncCodeOf(browse(request));
      expect(await refused({ offset: 0, newest: true })).toBe('INVALID_REQUEST');
      expect(await refused({ offset: 0, timestamp: 5 })).toBe('INVALID_REQUEST');
      expect(await refused({ limit: 0 })).toBe('INVALID_REQUEST');
      expect(await refused({ limit: 1001 })).toBe('INVALID_REQUEST');
      expect(await refused({ key: Buffer.from(KEY), maxScanRecords: 100_001 })).toBe('INVALID_REQUEST');
      expect(await refused({ limit: 1000, maxValueBytes: 100_000 })).toBe('INVALID_REQUEST');
      expect(await refused({ maxValueBytes: -1 })).toBe('INVALID_REQUEST');
      expect(await refused({ keyMatch: 'prefix' })).toBe('INVALID_REQUEST');
      expect(await refused({ key: Buffer.from(KEY), keyMatch: 'regex' as never })).toBe('INVALID_REQUEST');
      expect(await refused({ key: Buffer.alloc(0) })).toBe('INVALID_REQUEST');
      expect(await refused({ timestamp: -5 })).toBe('INVALID_REQUEST');
      expect(await refused({ offset: -1 })).toBe('INVALID_OFFSET');
      expect(await refused({ offset: HW + 1 })).toBe('OFFSET_OUT_OF_RANGE');
      expect(await refused({ partition: 1 })).toBe('UNKNOWN_PARTITION');
      expect(await refused({ topic: 'nope' })).toBe('UNKNOWN_TOPIC');
      await expect(browse({ limit: 1000, maxValueBytes: 100_000 })).rejects.toThrow(/at limit 1000 give at most 67108 bytes/);
      await expect(browse({ offset: HW + 1 })).rejects.toThrow(`readable offsets are 0 to ${HW}`);
    });
  });
}

/** Batches of 1,000 edits, as a producer would send them. */
function batches(): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < edits.length; i += 1000) {
    out.push(encodeBatch(edits.slice(i, i + 1000).map((e) => ({ key: Buffer.from(e.key), value: Buffer.from(e.value), timestamp: e.timestamp })), 0, 0));
  }
  return out;
}

browserCases('the embedded broker (segment files)', async () => {
  // Kept for the whole suite (tmpDir's are removed after each test).
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'onelog-records-'));
  const broker = await Broker.open({ dataDir, clock: new ManualClock(Date.parse('2015-09-13T00:00:00Z')) });
  await broker.createTopic({ topic: 'edits', partitions: 1, config: { retentionMs: -1 } });
  await broker.produceBatches({ topic: 'edits', batches: batches().map((batch) => ({ partition: 0, batch })) });
  return {
    browse: (request) => broker.browseRecords({ topic: 'edits', partition: 0, ...request }),
    close: async () => {
      await broker.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
});

browserCases('the object engine of cluster mode (sequencer and object store in memory)', async () => {
  const objects = new MemoryObjectStore();
  const tables = new MemorySequencerTables();
  const fixture = await objectLogsFixture(async () => ({ sequencer: new MemorySequencer(tables, { brokerId: 1 }), objects }), async () => {});
  const logs: Logs = await fixture.open([]);
  const layout = { name: 'edits', partitions: 1, config: DEFAULT_TOPIC_CONFIG };
  await logs.createTopicLogs('edits', 1);
  await fixture.recordTopic(layout);
  logs.addTopic('edits', 1, DEFAULT_TOPIC_CONFIG, true);
  for (const batch of batches()) await logs.appendAll([{ log: logs.get('edits', 0), batch }]);
  const browser = new RecordBrowser(logs);
  return {
    browse: (request) => browser.page({ topic: 'edits', partition: 0, ...request }),
    close: async () => {
      await logs.close();
      await fixture.dispose();
    },
  };
});

describe('record browser: the broker', () => {
  it('refuses offsets below the log start once records were deleted, naming the readable range', async () => {
    const broker = await Broker.open({ dataDir: path.join(tmpDir(), 'd'), clock: new ManualClock(Date.parse('2015-09-13T00:00:00Z')) });
    try {
      await broker.createTopic({ topic: 'edits', partitions: 1, config: { retentionMs: -1 } });
      await broker.produce({ topic: 'edits', records: edits.slice(0, 500).map((e) => ({ key: Buffer.from(e.key), value: Buffer.from(e.value), timestamp: e.timestamp, partition: 0 })) });
      await broker.deleteRecords({ topic: 'edits', partition: 0, beforeOffset: 200 });
      await expect(broker.browseRecords({ topic: 'edits', partition: 0, offset: 100 })).rejects.toThrow('readable offsets are 200 to 500');
      // From the log start on, and a timestamp before it starts there too.
      expect((await broker.browseRecords({ topic: 'edits', partition: 0, offset: 200, limit: 1 })).records[0]!.offset).toBe(200);
      expect((await broker.browseRecords({ topic: 'edits', partition: 0, timestamp: 0, limit: 1 })).records[0]!.offset).toBe(200);
      expect(await broker.browseRecords({ topic: 'edits', partition: 0, limit: 1000 })).toMatchObject({ logStartOffset: 200, scanned: { fromOffset: 200, records: 300 } });
    } finally {
      await broker.close();
    }
  });
});

/**
 * Charts that last, in a real browser (Chromium from Debian, driven by playwright-core) against an in-process broker
 * on a manual clock: a day of the Wikipedia edits arrives a minute at a time "yesterday" (2015-09-12, the edits'
 * own day) while a group reads behind them; the broker is restarted on the same data directory, and the group page
 * still charts yesterday's lag, time lag and headroom with each partition's drain estimate, and the topic page the
 * day's produce and consume rates. Screenshots go to docs/images/ with UPDATE_SCREENSHOTS=1, else to test-output/.
 */
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrokerOptions } from '../../src/broker/options.js';
import { HttpApi } from '../../src/client/http-api.js';
import { ManualClock } from '../../src/common/clock.js';
import { serveSecured } from '../helpers/secured-broker.js';
import { tmpDir } from '../helpers/tmp.js';
import { CHROMIUM, hasTool } from '../helpers/tools.js';
import { readEdits } from '../helpers/wikiticker.js';

const SCREENSHOTS = path.resolve(import.meta.dirname, process.env.UPDATE_SCREENSHOTS === '1' ? '../../docs/images' : '../../test-output');
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
/** The edits' day. */
const DAY = Date.UTC(2015, 8, 12);
const STEP = MINUTE;
/** Records the group reads per partition and step: fewer than arrive at the day's busiest hours. */
const READ_PER_STEP = 8;

let browser: Browser;

describe.runIf(hasTool(CHROMIUM, 'the console history\'s browser test'))('console: charts that last', () => {
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM.command, args: ['--headless', '--no-sandbox', '--disable-gpu'] });
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('charts yesterday\'s points after a restart: the group\'s health with its drain estimates, the topic\'s rates', async () => {
    const dataDir = tmpDir();
    const clock = new ManualClock(DAY);
    // No timer: the test samples by evaluating, at the moments it chooses.
    const broker: Partial<BrokerOptions> = {
      clock, sessionCheckIntervalMs: 0, retentionCheckIntervalMs: 0, compactionIntervalMs: 0, monitoring: { alertCheckIntervalMs: 0 },
    };
    let served = await serveSecured({ dataDir, insecure: true, broker });
    const edits = readEdits().sort((a, b) => a.timestamp - b.timestamp);
    await served.broker.createTopic({ topic: 'edits', partitions: 3, config: { retentionMs: 2 * 24 * HOUR } });
    await served.broker.subscribe({ groupId: 'indexer', topic: 'edits', startPolicy: 'earliest', stallMs: 24 * HOUR });
    const committed = [0, 0, 0];
    let next = 0;
    let fetched = 0;
    for (let at = DAY + STEP; at <= DAY + 24 * HOUR; at += STEP) {
      clock.advance(at - clock.now());
      // The edits of the last minute arrive, keyed as `onelog produce --key-field channel --key-field page` keys them.
      const arriving = [];
      while (next < edits.length && edits[next]!.timestamp < at) arriving.push(edits[next++]!);
      if (arriving.length > 0) {
        await served.broker.produce({
          topic: 'edits', records: arriving.map((e) => ({ key: Buffer.from(e.key), value: Buffer.from(e.value), timestamp: e.timestamp })),
        });
      }
      // The indexer reads at most READ_PER_STEP records of each partition, then commits.
      for (const partition of [0, 1, 2]) {
        const read = await served.broker.fetch({ topic: 'edits', groupId: 'indexer', partitions: [{ partition, offset: committed[partition]! }], maxRecords: READ_PER_STEP });
        const records = read.partitions[0]!.records;
        fetched += records.length;
        if (records.length > 0) {
          committed[partition] = records.at(-1)!.offset + 1;
          await served.broker.commitOffsets({ groupId: 'indexer', topic: 'edits', offsets: [{ partition, offset: committed[partition]! }] });
        }
      }
      await served.broker.evaluateAlerts(); // a sample of each partition
    }
    expect(next).toBe(edits.length);
    const before = await served.broker.groupHistory('indexer');
    expect(before.partitions.map((p) => p.samples.length)).toEqual([1440, 1440, 1440]);
    expect(Math.max(...before.partitions.flatMap((p) => p.samples.map((s) => s.lag!)))).toBeGreaterThan(READ_PER_STEP);

    // The broker restarts on the same data directory, a minute into the next day.
    await served.stop();
    clock.advance(MINUTE);
    served = await serveSecured({ dataDir, insecure: true, broker });
    const api = new HttpApi(served.url);
    const after = await api.groupHistory('indexer');
    // Every sample kept, but the first: 24 hours later its minute left the 1,440 kept.
    expect(after.partitions.map((p) => p.samples)).toEqual(before.partitions.map((p) => p.samples.slice(1)));
    expect(after.partitions[0]!.samples[0]!.at).toBe(DAY + 2 * STEP); // yesterday's first point now
    const rates = await api.topicHistory('edits');
    expect(rates.points).toHaveLength(24 * 60);
    const sum = (pick: (p: (typeof rates.points)[number]) => number) => Math.round(rates.points.reduce((n, p) => n + pick(p) * 60, 0));
    expect([sum((p) => p.produceRecordsPerSec), sum((p) => p.consumeRecordsPerSec)]).toEqual([edits.length, fetched]);

    const page = await browser.newPage({ viewport: { width: 1400, height: 1100 } });
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(`${served.url}/#/groups/indexer`);
    await page.locator('#chart-lag canvas').first().waitFor();
    // Every stored sample is a point: yesterday's, after the restart (and, once the page's describe of the group
    // evaluated it, today's first sample of each partition).
    const points = after.partitions.reduce((n, p) => n + p.samples.length, 0);
    for (const chart of ['#chart-lag', '#chart-time-lag', '#chart-headroom']) {
      expect(Number(await page.locator(chart).getAttribute('data-points'))).toBeOneOf([points, points + 3]);
    }
    // Beside the headroom, each partition's drain estimate as the broker computed it.
    await page.locator('#drain-estimates').waitFor();
    for (const p of after.partitions) {
      expect(await page.locator(`[data-drain="edits/${p.partition}"]`).textContent()).toBe(p.drain.outcome);
      expect(p.drain.outcome).not.toBe('unknown');
    }
    await page.screenshot({ path: path.join(SCREENSHOTS, 'console-group-history.png'), fullPage: true });

    await page.goto(`${served.url}/#/topics/edits`);
    await page.locator('#chart-rate-records canvas').first().waitFor();
    expect(Number(await page.locator('#chart-rate-records').getAttribute('data-points'))).toBe(2 * rates.points.length);
    await page.locator('#chart-rate-bytes canvas').first().waitFor();
    await page.screenshot({ path: path.join(SCREENSHOTS, 'console-topic-rates.png'), fullPage: true });
    expect(errors).toEqual([]);
  }, 120_000);
});

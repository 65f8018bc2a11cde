/**
 * The console's record browser in a real browser (Debian's Chromium, driven by playwright-core) against a broker
 * holding the Wikipedia edits over 3 partitions, keyed `channel|page` as `onelog produce --key-field channel
 * --key-field page` keys them: from the topic page to the newest records; a record found by exact key and by prefix,
 * with the scanned range shown; records found by time; a record's stable URL loaded fresh, its JSON value
 * pretty-printed; a long value cut with "show all" leading to all of it; a binary value shown as hex. Every expected
 * offset comes from the file itself. The screenshot goes to docs/images/console-records.png with UPDATE_SCREENSHOTS=1,
 * else to test-output/.
 */
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/common/clock.js';
import { partitionForKey } from '../../src/protocol/murmur2.js';
import { encodeBatch } from '../../src/protocol/record-batch.js';
import { serveSecured } from '../helpers/secured-broker.js';
import type { SecuredBroker } from '../helpers/secured-broker.js';
import { CHROMIUM, hasTool } from '../helpers/tools.js';
import { editsByPartition, readEdits } from '../helpers/wikiticker.js';
import type { Edit } from '../helpers/wikiticker.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? path.join(ROOT, 'docs/images') : path.join(ROOT, 'test-output');

const KEY = '#de.wikipedia|Wikipedia:Vandalismusmeldung';
const P = partitionForKey(Buffer.from(KEY), 3);
/** Where the long and the binary records go: another partition than the one searched. */
const OTHER = (P + 1) % 3;
const byPartition = editsByPartition(readEdits(), 3);
const edits: Edit[] = byPartition[P]!;
/** A long JSON value: 40 of the edits in an array (about 20 KiB, cut at the default 4 KiB). */
const LONG = JSON.stringify(byPartition[OTHER]!.slice(0, 40).map((e) => JSON.parse(e.value) as unknown));
const BINARY = Buffer.from([0x00, 0xff, 0x10, 0x80, 0x7f, 0x01]);

let served: SecuredBroker;
let browser: Browser;

/** The offsets the records table shows, in order. */
async function shownOffsets(page: Page): Promise<number[]> {
  return (await page.locator('#records tbody tr td:first-child [data-offset]').evaluateAll((cells) => cells.map((c) => c.getAttribute('data-offset')))).map(Number);
}

/** Submits the form and waits for the page that starts at `from` (the scanned range's first offset), searching `key`. */
async function show(page: Page, from: number, key = ''): Promise<void> {
  await page.locator('#records-show').click();
  await page.locator(`#records-scanned[data-from="${from}"][data-key="${key}"]`).waitFor({ timeout: 10_000 });
}

describe.runIf(hasTool(CHROMIUM, 'the record browser\'s browser test'))('console: record browser', () => {
  beforeAll(async () => {
    served = await serveSecured({ insecure: true, broker: { clock: new ManualClock(Date.parse('2015-09-13T00:00:00Z')) } });
    const { broker } = served;
    await broker.createTopic({ topic: 'edits', partitions: 3, config: { retentionMs: -1 } });
    for (const [partition, list] of byPartition.entries()) {
      for (let i = 0; i < list.length; i += 1000) {
        const batch = encodeBatch(list.slice(i, i + 1000).map((e) => ({ key: Buffer.from(e.key), value: Buffer.from(e.value), timestamp: e.timestamp })), 0, 0);
        await broker.produceBatches({ topic: 'edits', batches: [{ partition, batch }] });
      }
    }
    await broker.produce({
      topic: 'edits', records: [
        { key: Buffer.from('digest|40 edits'), value: Buffer.from(LONG), partition: OTHER, headers: [{ key: 'source', value: Buffer.from('wikiticker') }] },
        { key: BINARY, value: BINARY, partition: OTHER },
      ],
    });
    browser = await chromium.launch({ executablePath: CHROMIUM.command, args: ['--headless', '--no-sandbox', '--disable-gpu'] });
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });

  it('finds records by key and by time, and opens a record\'s stable URL', async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));

    // From the topic page to its newest records (partition 0).
    await page.goto(`${served.url}/#/topics/edits`);
    await page.locator('#browse-records').click();
    await page.locator('#records tbody tr').first().waitFor();
    const hw0 = byPartition[0]!.length + (OTHER === 0 ? 2 : 0);
    expect(await shownOffsets(page)).toEqual(Array.from({ length: 50 }, (_, i) => hw0 - 50 + i));

    // By exact key from offset 0: the matches among the first 10,000 records read (the default scan bound).
    const matches = edits.flatMap((e, i) => (e.key === KEY ? [i] : []));
    await page.selectOption('#records-partition', String(P));
    await page.selectOption('#records-from', 'offset');
    await page.locator('#records-offset').fill('0');
    await page.locator('#records-key').fill(KEY);
    await show(page, 0, KEY);
    const bound = Math.min(10_000, edits.length);
    expect(await shownOffsets(page)).toEqual(matches.filter((o) => o < bound));
    const scanned = page.locator('#records-scanned');
    expect(Number(await scanned.getAttribute('data-scanned'))).toBe(bound);
    expect((await scanned.textContent())!.replace(/,/g, '')).toContain(`offsets 0 to ${bound - 1} (${bound} records read)`);
    expect(await page.locator('#records-scan-limit').count()).toBe(edits.length > bound ? 1 : 0);
    // The search is the page's URL: loaded fresh, it shows the same records.
    const searchUrl = page.url();
    expect(new URL(searchUrl).hash).toBe(`#/topics/edits/records?partition=${P}&from=offset&offset=0&key=${encodeURIComponent(KEY).replace(/%20/g, '+')}&match=exact`);
    const shared = await browser.newPage();
    shared.on('pageerror', (err) => errors.push(err.message));
    await shared.goto(searchUrl);
    await shared.locator(`#records-scanned[data-from="0"][data-key="${KEY}"]`).waitFor();
    expect(await shownOffsets(shared)).toEqual(matches.filter((o) => o < bound));
    expect(await shared.locator('#records-key').inputValue()).toBe(KEY);
    if (edits.length > bound) {
      // The search goes on from where the scan stopped.
      await page.locator('#records-next').click();
      await page.locator(`#records-scanned[data-from="${bound}"][data-key="${KEY}"]`).waitFor();
      expect(await shownOffsets(page)).toEqual(matches.filter((o) => o >= bound).slice(0, 50));
    }

    // By prefix, the channel and the start of a page title.
    const prefix = '#de.wikipedia|Wikipedia:';
    await page.locator('#records-offset').fill('0');
    await page.selectOption('#records-key-match', 'prefix');
    await page.locator('#records-key').fill(prefix);
    await show(page, 0, prefix);
    expect(await shownOffsets(page)).toEqual(edits.flatMap((e, i) => (e.key.startsWith(prefix) && i < 10_000 ? [i] : [])).slice(0, 50));
    await page.screenshot({ path: path.join(SCREENSHOTS, 'console-records.png'), fullPage: false });

    // By time: the first record at or after noon, then the 49 after it.
    const noon = Date.parse('2015-09-12T12:00:00Z');
    const first = edits.findIndex((e) => e.timestamp >= noon);
    await page.locator('#records-key').fill('');
    await page.selectOption('#records-from', 'time');
    await page.locator('#records-time').fill('2015-09-12T12:00:00');
    await show(page, first);
    expect(await shownOffsets(page)).toEqual(Array.from({ length: 50 }, (_, i) => first + i));
    expect(await page.locator('#records tbody tr').first().locator('td').nth(1).textContent()).toBe(new Date(edits[first]!.timestamp).toISOString().replace('Z', ''));

    // A record's page, by its link, then its URL loaded fresh: the value pretty-printed.
    await page.locator(`#records [data-offset="${first}"] a`).click();
    await page.locator('#record').waitFor();
    const url = page.url();
    expect(url).toBe(`${served.url}/#/topics/edits/records/${P}/${first}`);
    const fresh = await browser.newPage();
    fresh.on('pageerror', (err) => errors.push(err.message));
    await fresh.goto(url);
    await fresh.locator('#record-value').waitFor();
    expect(await fresh.locator('#record-value').getAttribute('data-kind')).toBe('json');
    expect(await fresh.locator('#record-value').textContent()).toBe(JSON.stringify(JSON.parse(edits[first]!.value), null, 2));
    expect(await fresh.locator('#record-key').textContent()).toBe(edits[first]!.key);

    // A long value is cut, and "show all" shows all of it; a binary one is hex.
    await page.goto(`${served.url}/#/topics/edits/records`);
    await page.locator('#records tbody tr').first().waitFor();
    await page.selectOption('#records-partition', String(OTHER));
    await show(page, byPartition[OTHER]!.length + 2 - 50);
    const long = page.locator(`#records [data-offset="${byPartition[OTHER]!.length}"]`).locator('xpath=ancestor::tr');
    expect(await long.locator('.cut').textContent()).toContain(`4.0 KiB of ${(Buffer.byteLength(LONG) / 1024).toFixed(1)} KiB shown`);
    await long.locator('.cut a').click();
    await page.locator('#record-value').waitFor();
    expect(await page.locator('#record-value').textContent()).toBe(JSON.stringify(JSON.parse(LONG), null, 2));
    await page.goto(`${served.url}/#/topics/edits/records/${OTHER}/${byPartition[OTHER]!.length + 1}`);
    await page.locator('#record-value').waitFor();
    expect(await page.locator('#record-value').getAttribute('data-kind')).toBe('hex');
    expect(await page.locator('#record-value').textContent()).toBe('00 ff 10 80 7f 01');
    expect(await page.locator('#record-key').textContent()).toBe('00 ff 10 80 7f 01');

    // The high watermark (the long and the binary record were the last): no record there yet, said so.
    const end = byPartition[OTHER]!.length + 2;
    await page.goto(`${served.url}/#/topics/edits/records/${OTHER}/${end}`);
    await page.locator('#record-missing').waitFor();
    expect(await page.locator('#record-missing').textContent())
      .toBe(`no record at offset ${end.toLocaleString('en-US')} yet: the partition's records are at offsets 0 to ${(end - 1).toLocaleString('en-US')}`);
    expect(errors).toEqual([]);
  });
});

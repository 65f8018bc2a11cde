/**
 * The console's overview in a real browser (Chromium from Debian, driven by playwright-core) against a broker and its
 * HTTP server in process: the Wikipedia edits and a small topic, two groups at different positions, the far one
 * stalled. The page lists the topics by size and the groups worst first, says it is live, and shows a produce and a
 * commit made through the API without being reloaded or navigated. Its screenshot goes to docs/images/ with
 * UPDATE_SCREENSHOTS=1, else to test-output/.
 */
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { HttpApi } from '../../src/client/http-api.js';
import { serveSecured } from '../helpers/secured-broker.js';
import { CHROMIUM, hasTool } from '../helpers/tools.js';
import { readEdits } from '../helpers/wikiticker.js';

const SCREENSHOTS = path.resolve(import.meta.dirname, process.env.UPDATE_SCREENSHOTS === '1' ? '../../docs/images' : '../../test-output');

let browser: Browser;

/** The numbers of a table's column, top to bottom. */
const cells = (page: Page, table: string, column: number) => page.locator(`#${table} tbody tr td:nth-child(${column})`).allTextContents();
const count = async (page: Page, selector: string) => Number((await page.locator(selector).textContent())!.replace(/,/g, ''));

describe.runIf(hasTool(CHROMIUM, 'the web console\'s browser test'))('console overview', () => {
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM.command, args: ['--headless', '--no-sandbox', '--disable-gpu'] });
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('lists topics by size and groups worst first, and follows a produce and a commit live', async () => {
    const { url, broker } = await serveSecured({ insecure: true, broker: { monitoring: { alertCheckIntervalMs: 250 } } });
    await broker.advertise({ url }); // as onelog serve does once it listens
    const api = new HttpApi(url);
    await api.createTopic({ topic: 'edits', partitions: 3, config: { retentionMs: -1 } });
    await api.createTopic({ topic: 'pages', partitions: 1, config: { retentionMs: -1 } });
    const edits = readEdits();
    const asRecord = (e: (typeof edits)[number]) => ({ key: Buffer.from(e.key), value: Buffer.from(e.value), timestamp: e.timestamp });
    await api.produce({ topic: 'edits', records: edits.map(asRecord) });
    await api.produce({ topic: 'pages', records: edits.slice(0, 500).map(asRecord) });
    const topic = await api.describeTopic('edits');
    // Two groups at different positions; the far one stalls after a second without commits.
    for (const [groupId, share, stallMs] of [['near', 0.95, 600_000], ['far', 0.2, 1000]] as const) {
      await api.subscribe({ groupId, topic: 'edits', startPolicy: 'earliest', stallMs });
      await api.commitOffsets({ groupId, topic: 'edits', offsets: topic.partitions.map((p) => ({ partition: p.partition, offset: Math.floor(p.highWatermark * share) })) });
    }
    await vi.waitFor(async () => expect((await api.listAlerts({ active: true, groupId: 'far' })).length).toBe(3), { timeout: 20_000, interval: 250 });

    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(url); // the overview is the first page
    await page.locator('#overview-groups').waitFor();
    await vi.waitFor(async () => expect(await page.locator('#live-status').textContent()).toBe('live'), { timeout: 10_000, interval: 100 });
    expect(await cells(page, 'overview-topics', 1)).toEqual(['edits', 'pages']);
    expect(await count(page, '[data-records="edits"]')).toBe(edits.length);
    expect(await cells(page, 'overview-groups', 1)).toEqual(['far', 'near']);
    expect(await cells(page, 'overview-groups', 3)).toEqual(['stalled', 'lagging']);
    expect(await cells(page, 'brokers', 2)).toEqual([url]);
    expect(await cells(page, 'brokers', 5)).toEqual(['4']); // one broker, leading every partition
    const nearLag = await count(page, '[data-group-lag="near"]');
    expect(nearLag).toBe((await api.describeGroup('near')).totalLag);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'console-overview.png'), fullPage: true });

    // Changes through the API show without a reload: a mark set in the page now survives them.
    await page.evaluate(() => Object.assign(globalThis, { notReloaded: true }));
    await api.produce({ topic: 'edits', records: edits.slice(0, 100).map(asRecord) });
    await vi.waitFor(async () => expect(await count(page, '[data-records="edits"]')).toBe(edits.length + 100), { timeout: 10_000, interval: 100 });
    const now = await api.describeTopic('edits');
    await api.commitOffsets({ groupId: 'near', topic: 'edits', offsets: now.partitions.map((p) => ({ partition: p.partition, offset: p.highWatermark })) });
    await vi.waitFor(async () => expect(await count(page, '[data-group-lag="near"]')).toBe(0), { timeout: 10_000, interval: 100 });
    expect(await cells(page, 'overview-groups', 3)).toEqual(['stalled', 'ok']);
    expect(await page.evaluate(() => (globalThis as { notReloaded?: boolean }).notReloaded)).toBe(true);
    expect(page.url()).toBe(`${url}/`);
    expect(errors).toEqual([]);
  });
});

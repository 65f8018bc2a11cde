/**
 * The web console in a real browser (Chromium from Debian, driven by playwright-core) against a real server:
 * the Wikipedia edits loaded with the CLI, two groups at different positions; the group page shows each
 * partition's lag as `groups describe --json` does, its chart has points, and an alert acknowledged with a
 * click is acknowledged in the API; a group with dead letters links to them. Screenshots go to test-output/.
 */
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { HttpApi } from '../../src/client/http-api.js';
import type { GroupDescription } from '../../src/protocol/groups.js';
import { runCli, startServer } from '../helpers/processes.js';
import type { ServerProcess } from '../helpers/processes.js';
import { tmpDir } from '../helpers/tmp.js';
import { CHROMIUM, hasTool } from '../helpers/tools.js';
import { WIKITICKER } from '../helpers/wikiticker.js';

const OUTPUT = path.resolve(import.meta.dirname, '../../test-output');

let server: ServerProcess;
let browser: Browser;
let api: HttpApi;

async function cli(args: string[]): Promise<string> {
  const result = await runCli(server.url, args);
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  return result.stdout;
}

describe.runIf(hasTool(CHROMIUM, 'the web console\'s browser test'))('web console', () => {
  beforeAll(async () => {
    server = await startServer(tmpDir(), { args: ['--alert-check-interval-ms', '250'] });
    api = new HttpApi(server.url);
    browser = await chromium.launch({ executablePath: CHROMIUM.command, args: ['--headless', '--no-sandbox', '--disable-gpu'] });
    fs.mkdirSync(OUTPUT, { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  it('shows each partition\'s lag as groups describe does, charts it, and acknowledges an alert', async () => {
    await cli(['topics', 'create', 'edits', '--partitions', '3', '--config', 'retention.ms=-1']);
    await cli(['produce', 'edits', '--file', WIKITICKER, '--key-field', 'channel', '--key-field', 'page', '--timestamp-field', 'time']);
    const topic = await api.describeTopic('edits');
    // Two groups at different positions; the far one stalls after a second without commits.
    for (const [group, share, stall] of [['near', 0.95, '600000'], ['far', 0.2, '1000']] as const) {
      await cli(['groups', 'create', group, '--topic', 'edits', '--start', 'earliest', '--stall-ms', stall]);
      await api.commitOffsets({
        groupId: group, topic: 'edits', offsets: topic.partitions.map((p) => ({ partition: p.partition, offset: Math.floor(p.highWatermark * share) })),
      });
    }
    // The broker evaluates every 250 ms: wait until the far group's partitions stalled and each partition has a sample.
    await vi.waitFor(async () => {
      expect((await api.listAlerts({ active: true, groupId: 'far' })).filter((a) => a.kind === 'consumer-stalled')).toHaveLength(3);
      expect((await api.groupHistory('near')).partitions.map((p) => p.samples.length)).toEqual([1, 1, 1]); // one a minute
    }, { timeout: 20_000, interval: 250 });

    const page = await browser.newPage({ viewport: { width: 1400, height: 1100 } });
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    for (const group of ['near', 'far']) {
      await page.goto(`${server.url}/#/groups/${group}`);
      await page.locator('#group-partitions').waitFor();
      const described = JSON.parse(await cli(['groups', 'describe', group, '--json'])) as GroupDescription;
      for (const p of described.subscriptions[0]!.partitions) {
        const shown = await page.locator(`[data-lag="edits/${p.partition}"]`).textContent();
        expect(Number(shown!.replace(/,/g, ''))).toBe(p.lag);
        expect(p.lag).toBeGreaterThan(0);
      }
      // The group's totals lead the page, as groups describe shows them.
      const totals = (await page.locator('#group-totals').textContent())!.replace(/,/g, '');
      expect(totals).toContain(`lag ${described.totalLag} in all`);
      expect(totals).toContain(`most ${described.maxLag!.lag} at ${described.maxLag!.topic}/${described.maxLag!.partition}`);
      await page.locator('#chart-lag canvas').first().waitFor();
      expect(Number(await page.locator('#chart-lag').getAttribute('data-points'))).toBeGreaterThanOrEqual(3);
      await page.screenshot({ path: path.join(OUTPUT, `console-group-${group}.png`), fullPage: true });
    }

    // Acknowledge the far group's first alert with a click.
    const [alert] = (await api.listAlerts({ groupId: 'far' })).filter((a) => a.acknowledgedAt === null);
    await page.locator(`button[data-ack="${alert!.id}"]`).click();
    await page.locator(`[data-acked="${alert!.id}"]`).waitFor();
    const acked = (await api.listAlerts({ groupId: 'far' })).find((a) => a.id === alert!.id)!;
    expect(acked).toMatchObject({ acknowledgedBy: 'console', resolvedAt: null });
    expect(acked.acknowledgedAt).not.toBeNull();

    // A group whose records went to its dead-letter topic links to its dead-letters page (console-dead-letters.test.ts).
    await cli(['groups', 'create', 'idx', '--topic', 'edits', '--start', 'earliest', '--retry', '1s', '--max-attempts', '1']);
    for (const offset of [0, 1, 2]) await api.nack({ groupId: 'idx', topic: 'edits', partition: 0, offset, reason: `edit ${offset} cannot be indexed` });
    await page.goto(`${server.url}/#/groups/idx`);
    await page.locator('#group-operations').waitFor();
    expect(await page.locator('#group-operations').textContent()).toContain('dead letters of edits (3 waiting)');
    await page.locator('#group-operations a', { hasText: 'dead letters of edits' }).click();
    await page.locator('#dead-letters').waitFor();
    expect(await page.locator('#dead-letters tbody tr').count()).toBe(3);

    // The topic page puts both groups side by side.
    await page.goto(`${server.url}/#/topics/edits`);
    await page.locator('#topic-groups').waitFor();
    expect(await page.locator('#topic-groups tbody tr').count()).toBe(9);
    await page.screenshot({ path: path.join(OUTPUT, 'console-topic.png'), fullPage: true });
    await page.goto(`${server.url}/#/alerts`);
    await page.locator('#alerts').waitFor();
    await page.screenshot({ path: path.join(OUTPUT, 'console-alerts.png'), fullPage: true });
    expect(errors).toEqual([]);
  });

  it('shows a share group\'s members and each partition\'s records acquired and available, as groups describe does', async () => {
    const own = await startServer(tmpDir());
    try {
      const run = async (args: string[]) => (await runCli(own.url, args)).stdout;
      await run(['topics', 'create', 'jobs', '--partitions', '1']);
      const ownApi = new HttpApi(own.url);
      await ownApi.produce({ topic: 'jobs', records: Array.from({ length: 8 }, (_, i) => ({ key: null, value: Buffer.from(`job ${i}`) })) });
      await run(['groups', 'create', 'workers', '--topic', 'jobs', '--type', 'share', '--start', 'earliest']);
      expect((await ownApi.shareFetch({ groupId: 'workers', topic: 'jobs', memberId: 'w1', maxRecords: 3 })).records).toHaveLength(3);
      const page = await browser.newPage();
      await page.goto(`${own.url}/#/groups/workers`);
      await page.locator('#share-members').waitFor();
      const described = JSON.parse(await run(['groups', 'describe', 'workers', '--json'])) as GroupDescription;
      const { acquired, available } = described.subscriptions[0]!.partitions[0]!.share!;
      expect([acquired, available]).toEqual([3, 3]); // the window takes what the acquisition may need next
      expect(await page.locator('[data-share="jobs/0"]').textContent()).toBe(`${acquired} / ${available}`);
      expect(await page.locator('#share-members').textContent()).toContain('w1');
      await page.screenshot({ path: path.join(OUTPUT, 'console-share-group.png'), fullPage: true });
    } finally {
      await own.stop();
    }
  });

  it('asks for a token once the broker has users, and shows the data with it', async () => {
    const secured = await startServer(tmpDir());
    try {
      const { token } = JSON.parse((await runCli(secured.url, ['users', 'create', 'ops', '--json'])).stdout) as { token: string };
      await runCli(secured.url, ['--token', token, 'topics', 'create', 'private-edits', '--partitions', '1']);
      const page = await browser.newPage();
      await page.goto(`${secured.url}/#/topics`);
      await page.locator('#token-form').waitFor();
      expect(await page.locator('#topics').count()).toBe(0);
      await page.locator('#token').fill('onelog_0000000000000000_wrong');
      await page.locator('#token-form button').click();
      await page.locator('#token-form').waitFor(); // a wrong token is asked again
      await page.locator('#token').fill(token);
      await page.locator('#token-form button').click();
      await page.locator('#topics').waitFor();
      expect(await page.locator('#topics').textContent()).toContain('private-edits');
      await page.screenshot({ path: path.join(OUTPUT, 'console-token.png') });
    } finally {
      await secured.stop();
    }
  });
});

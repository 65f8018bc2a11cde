/**
 * The console in cluster mode, in Debian's Chromium: two brokers on PostgreSQL, Redis and s3rver holding Wikipedia
 * edits, each page opened on the broker that coordinates the group: the overview lists both brokers and their leases
 * and counts records the other broker appends as they come (no reload),
 * the record browser finds an edit by key, the dead-letters page redrives one and the depth falls, the replay page
 * previews a shift and executes it (the committed offsets move there), the group page charts the stored history, and
 * the other broker's console shows the group (its requests forwarded to the coordinator).
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Broker } from '../../src/broker/broker.js';
import { HttpApi } from '../../src/client/http-api.js';
import { servedBrokers, testCluster } from '../helpers/cluster.js';
import { launchChromium } from '../helpers/console-browser.js';
import { s3ForFile } from '../helpers/s3-suite.js';
import { CHROMIUM, hasTool } from '../helpers/tools.js';
import { readEdits } from '../helpers/wikiticker.js';

const s3 = s3ForFile();
const GROUP = 'indexer';
const TOPIC = 'edits';

let browser: Browser;

describe.runIf(hasTool(CHROMIUM, 'the console\'s cluster-mode browser test'))('the console in cluster mode', () => {
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('shows both brokers, browses records, redrives a dead letter, replays with a preview and charts the history', async () => {
    const served = await servedBrokers(await testCluster(s3()), 2, { monitoring: { alertCheckIntervalMs: 0 } });
    const [a] = served.brokers as [Broker, Broker];
    try {
      const api = new HttpApi(served.urls[0]!);
      await api.createTopic({ topic: TOPIC, partitions: 2, config: { retentionMs: -1 } });
      const edits = readEdits().slice(0, 1000);
      await api.produce({ topic: TOPIC, records: edits.map((e, i) => ({ key: Buffer.from(e.key), value: Buffer.from(e.value), timestamp: e.timestamp, partition: i % 2 })) });
      await api.subscribe({ groupId: GROUP, topic: TOPIC, startPolicy: 'earliest', retry: { delaysMs: [1000], maxAttempts: 1 } });
      await api.commitOffsets({ groupId: GROUP, topic: TOPIC, offsets: [{ partition: 0, offset: 400 }, { partition: 1, offset: 300 }] });
      for (const offset of [0, 1]) await api.nack({ groupId: GROUP, topic: TOPIC, partition: 0, offset, reason: `edit ${offset} cannot be indexed` });
      await a.evaluateAlerts(); // a sample of the group's health for its charts
      const page = await (await browser.newContext({ viewport: { width: 1400, height: 1000 } })).newPage();
      const errors: string[] = [];
      page.on('pageerror', (err) => errors.push(err.message));
      const open = (path: string) => page.goto(`${served.urls[0]}/#${path}`);

      // The overview: both brokers, each marked as the one answering or not, and the leases they hold.
      await open('/');
      await page.locator('#brokers tbody tr').nth(1).waitFor();
      expect(await page.locator('#cluster-mode').textContent()).toContain('cluster of 2 brokers');
      expect(await page.locator('#brokers tbody tr').allTextContents()).toEqual([expect.stringContaining(served.urls[0]!), expect.stringContaining(served.urls[1]!)]);
      expect(await page.locator('#leases-details summary').textContent()).toMatch(/\d+ leases held/);
      // Live: records the other broker appends reach this page's overview without a reload.
      const count = page.locator(`[data-records="${TOPIC}"]`);
      expect(await count.textContent()).toBe(edits.length.toLocaleString('en-US'));
      await page.evaluate(() => Object.assign(globalThis, { notReloaded: true }));
      await new HttpApi(served.urls[1]!).produce({ topic: TOPIC, records: [{ key: null, value: Buffer.from('one more'), partition: 0 }] });
      await vi.waitFor(async () => expect(await count.textContent()).toBe((edits.length + 1).toLocaleString('en-US')), { timeout: 10_000, interval: 100 });
      expect(await page.evaluate(() => (globalThis as { notReloaded?: boolean }).notReloaded)).toBe(true);

      // The record browser: the edit at partition 1 offset 7 found by its key.
      const wanted = edits[2 * 7 + 1]!;
      await open(`/topics/${TOPIC}/records?partition=1&from=offset&offset=0&key=${encodeURIComponent(wanted.key)}&match=exact`);
      await page.locator('#records tbody tr').first().waitFor();
      const offsets = await page.locator('#records [data-offset]').evaluateAll((cells) => cells.map((c) => Number(c.getAttribute('data-offset'))));
      const expected = edits.map((e, i) => ({ e, i })).filter(({ e, i }) => i % 2 === 1 && e.key === wanted.key).map(({ i }) => (i - 1) / 2);
      expect(offsets).toEqual(expected.slice(0, offsets.length));
      expect(offsets).toContain(7);

      // Dead letters: redrive one, previewed first; the depth falls from 2 to 1.
      await open(`/groups/${GROUP}/dead-letters/${TOPIC}`);
      await page.locator('#dead-letters tbody tr').nth(1).waitFor();
      await page.locator('[data-redrive="0"]').click();
      await page.locator('#dlq-plan[data-kind="redrive"]').waitFor();
      await page.locator('#dlq-execute').click();
      await vi.waitFor(async () => expect(await page.locator('[data-depth]').textContent()).toBe('1'), { timeout: 10_000, interval: 100 });
      expect((await api.listDeadLetters({ groupId: GROUP, topic: TOPIC })).depth).toBe(1);

      // Replay: a shift of -100 previewed (re-reads 100 on each partition), then executed: the offsets are there.
      await open(`/groups/${GROUP}/replay`);
      await page.locator('#replay-form').waitFor();
      await page.locator('#replay-to').selectOption('shift');
      await page.locator('#replay-value').fill('-100');
      await page.locator('#replay-preview').click();
      await page.locator('#replay-partitions [data-change="reread"]').nth(1).waitFor();
      expect(await page.locator('#replay-partitions [data-change="reread"]').allTextContents()).toEqual(['re-reads 100', 're-reads 100']);
      await page.locator('#replay-execute').click();
      await vi.waitFor(async () => {
        const committed = (await api.describeGroup(GROUP)).subscriptions.find((s) => s.topic === TOPIC)!.partitions.map((p) => p.committedOffset);
        expect(committed).toEqual([300, 200]);
      }, { timeout: 10_000, interval: 100 });

      // The group's charts, from the history stored in the catalog (PostgreSQL here).
      await open(`/groups/${GROUP}`);
      await page.locator('#chart-lag canvas').first().waitFor();
      expect(Number(await page.locator('#chart-lag').getAttribute('data-points'))).toBeGreaterThanOrEqual(2);
      // The other broker's console shows the group too: it asks for a request of a group coordinated elsewhere to be
      // forwarded to the coordinator. A client that does not ask is told NOT_COORDINATOR and goes there itself.
      await page.goto(`${served.urls[1]}/#/groups/${GROUP}`);
      await page.locator('#group-partitions').waitFor({ timeout: 10_000 });
      const plain = await fetch(`${served.urls[1]}/groups/${GROUP}`);
      expect([plain.status, await plain.json()]).toMatchObject([503, { code: 'NOT_COORDINATOR', coordinatorUrl: served.urls[0] }]);
      const forwarded = await fetch(`${served.urls[1]}/groups/${GROUP}`, { headers: { 'x-onelog-forward': 'coordinator' } });
      expect(await forwarded.json()).toMatchObject({ groupId: GROUP });
      expect(errors).toEqual([]);
    } finally {
      await served.close();
    }
  });
});

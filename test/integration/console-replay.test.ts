/**
 * The console's replay page in a real browser (Debian's Chromium, driven by playwright-core) on a broker with users,
 * holding Wikipedia edits a live consumer has read to the end: signed in with a token, an operator saves a checkpoint,
 * previews a shift back of every partition (current and new offsets, how many records each re-reads and the first of
 * them, the edits themselves), executes it while the consumer runs, and the consumer reads again from exactly the new
 * offsets; a user without `reset` on the group gets neither preview nor execute, and the API refuses it.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { HttpApi } from '../../src/client/http-api.js';
import { Onelog } from '../../src/client/index.js';
import { asyncCodeOf } from '../helpers/errors.js';
import { launchChromium, signedIn } from '../helpers/console-browser.js';
import { serveSecured } from '../helpers/secured-broker.js';
import { screenshotPath } from '../helpers/screenshots.js';
import { CHROMIUM, hasTool } from '../helpers/tools.js';
import { editsByPartition, readEdits } from '../helpers/wikiticker.js';

const GROUP = 'replayer';
const TOPIC = 'edits';
const PARTITIONS = 2;
const SHIFT = 50;

let browser: Browser;

describe.runIf(hasTool(CHROMIUM, 'the replay page\'s browser test'))('the console\'s replay page', () => {
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('previews a reset with the records to re-read, executes it at the safe point, and the consumer resumes there', async () => {
    const { url } = await serveSecured();
    const opsToken = (await new HttpApi(url, { token: '' }).createUser('ops')).token;
    const ops = new HttpApi(url, { token: opsToken });
    await ops.createTopic({ topic: TOPIC, partitions: PARTITIONS });
    const edits = readEdits().slice(0, 3000);
    await ops.produce({ topic: TOPIC, records: edits.map((e) => ({ key: Buffer.from(e.key), value: Buffer.from(e.value), timestamp: e.timestamp })) });
    const stored = editsByPartition(edits, PARTITIONS);
    const ends = stored.map((p) => p.length);

    // A live member reads everything and commits it.
    const seen: Array<{ partition: number; offset: number }> = [];
    const consumer = new Onelog({ url, token: opsToken }).consumer({ groupId: GROUP, startPolicy: 'earliest', maxWaitMs: 100, sessionTimeoutMs: 10_000 });
    consumer.subscribe({ topic: TOPIC });
    const running = consumer.run({ eachMessage: ({ partition, message }) => void seen.push({ partition, offset: message.offset }) });
    const committed = async () => (await ops.describeGroup(GROUP)).subscriptions[0]?.partitions.map((p) => p.committedOffset) ?? [];
    try {
      await vi.waitFor(async () => expect(await committed()).toEqual(ends), { timeout: 20_000, interval: 100 });

      const { page, errors } = await signedIn(browser, url, `/groups/${GROUP}/replay`, opsToken);
      await page.locator('#replay-form').waitFor();
      // A checkpoint first, as before a deploy.
      await page.locator('#checkpoint-name').fill('before-replay');
      await page.locator('#checkpoint-form button').click();
      await page.locator('#checkpoint-done').waitFor();
      expect((await ops.describeGroup(GROUP)).checkpoints.map((c) => c.name)).toEqual(['before-replay']);
      await vi.waitFor(async () => expect(await page.locator('#checkpoints').textContent()).toContain('before-replay'), { timeout: 10_000 });

      // A time, for one partition: the first edit stored there at or after it, and nothing moves.
      await page.locator('#replay-partition').selectOption('1');
      await page.locator('#replay-to').selectOption('datetime');
      await page.locator('#replay-value').fill('2015-09-12T01:00');
      await page.locator('#replay-preview').click();
      const at = stored[1]!.findIndex((e) => e.timestamp >= Date.UTC(2015, 8, 12, 1));
      await page.locator('#replay-partitions [data-new="1"]').waitFor();
      expect(await page.locator('#replay-partitions tbody tr').count()).toBe(1);
      expect(await page.locator('#replay-partitions [data-new="1"]').textContent()).toBe(at.toLocaleString('en-US'));
      expect(await page.locator('#replay-partitions [data-change="reread"]').textContent()).toBe(`re-reads ${(ends[1]! - at).toLocaleString('en-US')}`);
      expect(await page.locator('#replay-partitions li[data-offset]').first().textContent()).toContain(stored[1]![at]!.key);
      await page.locator('#replay-partition').selectOption('all');

      // The preview: each partition back SHIFT records, the first of them the edits stored there; nothing moves.
      await page.locator('#replay-to').selectOption('shift');
      await page.locator('#replay-value').fill(String(-SHIFT));
      await page.locator('#replay-preview').click();
      const rows = page.locator('#replay-partitions tbody tr');
      await rows.first().waitFor();
      expect(await rows.count()).toBe(PARTITIONS);
      for (let p = 0; p < PARTITIONS; p++) {
        const row = rows.nth(p);
        const cells = await row.locator('td').allTextContents();
        expect(cells.slice(0, 4)).toEqual([String(p), ends[p]!.toLocaleString('en-US'), (ends[p]! - SHIFT).toLocaleString('en-US'), `re-reads ${SHIFT}`]);
        const first = row.locator('li[data-offset]');
        expect(await first.evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-offset'))))).toEqual([0, 1, 2].map((i) => ends[p]! - SHIFT + i));
        expect(await first.first().textContent()).toContain(stored[p]![ends[p]! - SHIFT]!.key);
      }
      expect(await committed()).toEqual(ends);
      await page.screenshot({ path: screenshotPath('replay'), fullPage: true });

      // Executed while the member holds the partitions: applied at the safe point, then it reads again from there.
      const before = seen.length;
      // The page says it waits for the safe point while it does (watched from before the click: it may be short).
      // (Script strings: the test's own TypeScript has no DOM types.)
      await page.evaluate(`new MutationObserver(() => {
        window.sawWaiting ??= document.querySelector('#replay-waiting')?.textContent ?? undefined;
      }).observe(document.body, { childList: true, subtree: true })`);
      await page.locator('#replay-execute').click();
      await page.locator('#replay-done').waitFor({ timeout: 20_000 });
      expect(await page.evaluate('window.sawWaiting')).toContain('Waiting for the safe point');
      expect(await page.locator('#replay-done').textContent()).toContain(`${TOPIC}/0 ${ends[0]!.toLocaleString('en-US')} → ${(ends[0]! - SHIFT).toLocaleString('en-US')}`);
      await vi.waitFor(async () => expect(await committed()).toEqual(ends), { timeout: 20_000, interval: 100 });
      for (let p = 0; p < PARTITIONS; p++) {
        const again = seen.slice(before).filter((s) => s.partition === p).map((s) => s.offset);
        expect(again.slice(0, SHIFT)).toEqual(Array.from({ length: SHIFT }, (_, i) => ends[p]! - SHIFT + i));
      }
      expect((await ops.describeGroup(GROUP)).resets.map((r) => [r.partition, r.oldOffset, r.newOffset, r.requestedBy]).sort()).toEqual(
        ends.map((end, p) => [p, end, end - SHIFT, 'ops']),
      );
      expect((await ops.listAudit()).find((e) => e.action === 'offsets-reset')).toMatchObject({ principal: 'ops', outcome: 'done' });
      expect(errors).toEqual([]);
    } finally {
      await consumer.stop();
      await running;
    }

    // A user who may read the group and the topic, not reset: no preview, no execute, and the API refuses it.
    const viewerToken = (await ops.createUser('viewer')).token;
    for (const [resourceType, resourceName] of [['group', GROUP], ['topic', TOPIC]] as const) {
      await ops.addAcl({ principal: 'viewer', resourceType, resourceName, operation: 'read', patternType: 'literal', permission: 'allow' });
    }
    const viewer = await signedIn(browser, url, `/groups/${GROUP}/replay`, viewerToken);
    await viewer.page.locator('#replay-read-only').waitFor();
    expect(await viewer.page.locator('#replay-preview').isDisabled()).toBe(true);
    expect(await viewer.page.locator('#replay-execute, #checkpoint-form').count()).toBe(0);
    expect(await asyncCodeOf(new HttpApi(url, { token: viewerToken }).resetOffsets({ groupId: GROUP, topic: TOPIC, spec: { to: 'earliest' }, execute: true })))
      .toBe('FORBIDDEN');
    expect(await committed()).toEqual(ends);
    expect(viewer.errors).toEqual([]);
  });
});

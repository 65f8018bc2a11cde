/**
 * The console's dead-letters page in a real browser (Debian's Chromium, driven by playwright-core) on a broker with
 * users, holding Wikipedia edits whose first records a group could not index: signed in with a token, an operator
 * selects dead letters, previews the redrive (nothing moves), executes it and sees the depth fall and the alert clear,
 * redrives one and purges the rest the same way, each audited with the user; a user who may only read sees no redrive
 * or purge button, and the API refuses it when it tries.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { HttpApi } from '../../src/client/http-api.js';
import { launchChromium, signedIn } from '../helpers/console-browser.js';
import { serveSecured } from '../helpers/secured-broker.js';
import { screenshotPath } from '../helpers/screenshots.js';
import { CHROMIUM, hasTool } from '../helpers/tools.js';
import { readEdits } from '../helpers/wikiticker.js';

const GROUP = 'indexer';
const TOPIC = 'edits';

let browser: Browser;

describe.runIf(hasTool(CHROMIUM, 'the dead-letters page\'s browser test'))('the console\'s dead-letters page', () => {
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('previews, then redrives a selection, one, and purges, the depth falling; a reader sees no button and is refused', async () => {
    const { url } = await serveSecured();
    const opsToken = (await new HttpApi(url, { token: '' }).createUser('ops')).token;
    const ops = new HttpApi(url, { token: opsToken });
    await ops.createTopic({ topic: TOPIC, partitions: 2 });
    const edits = readEdits().slice(0, 2000);
    await ops.produce({ topic: TOPIC, records: edits.map((e) => ({ key: Buffer.from(e.key), value: Buffer.from(e.value), timestamp: e.timestamp })) });
    await ops.subscribe({ groupId: GROUP, topic: TOPIC, startPolicy: 'earliest', retry: { delaysMs: [1000], maxAttempts: 1 }, deadLetterAlertDepth: 3 });
    for (const offset of [0, 1, 2, 3]) await ops.nack({ groupId: GROUP, topic: TOPIC, partition: 0, offset, reason: `edit ${offset} cannot be indexed` });
    const depth = async () => (await ops.listDeadLetters({ groupId: GROUP, topic: TOPIC })).depth;
    const listed = (await ops.listDeadLetters({ groupId: GROUP, topic: TOPIC })).records;

    const { page, errors } = await signedIn(browser, url, `/groups/${GROUP}/dead-letters/${TOPIC}`, opsToken);
    const rows = page.locator('#dead-letters tbody tr');
    await rows.first().waitFor();
    expect(await rows.count()).toBe(4);
    expect(await page.locator('[data-depth]').textContent()).toBe('4');
    expect(await page.locator('#dlq-alert').getAttribute('data-alert')).toBe('raised');
    expect(await page.locator('#dlq-alert').textContent()).toContain('alert at 3 waiting');
    // Each dead letter as `dlq list` has it: its original position, attempts, reason, key and the edit itself.
    const first = (await rows.first().textContent())!;
    for (const text of ['edits/0@0', 'edit 0 cannot be indexed', listed[0]!.key!, listed[0]!.valuePreview!.slice(0, 40)]) expect(first).toContain(text);

    // A selection: the dry run lists exactly offsets 1 and 2 and moves nothing.
    await page.locator('[data-select="1"]').check();
    await page.locator('[data-select="2"]').check();
    await page.locator('#redrive-selected').click();
    const plan = page.locator('#dlq-plan-records tbody tr');
    await plan.first().waitFor();
    expect(await plan.allTextContents()).toEqual(['1edits/0@11', '2edits/0@21']);
    expect(await depth()).toBe(4);
    await page.screenshot({ path: screenshotPath('dead-letters'), fullPage: true });
    await page.locator('#dlq-execute').click();
    await page.locator('#dlq-outcome').waitFor();
    expect(await page.locator('#dlq-outcome').textContent()).toContain('redrove 2 dead letter(s)');
    expect(await depth()).toBe(2);
    await vi.waitFor(async () => {
      expect(await page.locator('[data-depth]').textContent()).toBe('2');
      expect(await page.locator('#dlq-alert').getAttribute('data-alert')).toBe('clear'); // below 3 again
    }, { timeout: 10_000, interval: 100 });
    expect((await page.locator('#dlq-actions tbody tr').first().textContent())).toContain('ops');

    // One, then a purge of what is left, each previewed first.
    await page.locator('[data-redrive="0"]').click();
    await page.locator('#dlq-plan[data-kind="redrive"]').waitFor();
    expect(await plan.allTextContents()).toEqual(['0edits/0@01']);
    await page.locator('#dlq-execute').click();
    await vi.waitFor(async () => expect(await depth()).toBe(1), { timeout: 10_000, interval: 100 });
    await page.locator('#purge-before').fill('4');
    await page.locator('#purge-form button').click();
    await page.locator('#dlq-plan[data-kind="purge"]').waitFor();
    expect(await plan.allTextContents()).toEqual(['3edits/0@31']);
    expect(await depth()).toBe(1);
    await page.locator('#dlq-execute').click();
    await vi.waitFor(async () => expect(await page.locator('[data-depth]').textContent()).toBe('0'), { timeout: 10_000, interval: 100 });
    expect(await depth()).toBe(0);
    const audited = (await ops.listAudit()).filter((e) => e.outcome === 'done' && e.action.startsWith('dead-letters-')).map((e) => [e.principal, e.action, e.details.offsets ?? e.details.offset ?? e.details.beforeOffset]);
    expect(audited).toEqual([['ops', 'dead-letters-purge', 4], ['ops', 'dead-letters-redrive', 0], ['ops', 'dead-letters-redrive', [1, 2]]]);
    expect(errors).toEqual([]);

    // A user who may read the group and the topic, not reset the group: the dead letters, and no button.
    for (const offset of [10, 11]) await ops.nack({ groupId: GROUP, topic: TOPIC, partition: 1, offset, reason: 'not yet' });
    const viewerToken = (await ops.createUser('viewer')).token;
    for (const [resourceType, resourceName] of [['group', GROUP], ['topic', TOPIC]] as const) {
      await ops.addAcl({ principal: 'viewer', resourceType, resourceName, operation: 'read', patternType: 'literal', permission: 'allow' });
    }
    const viewer = await signedIn(browser, url, `/groups/${GROUP}/dead-letters/${TOPIC}`, viewerToken);
    await viewer.page.locator('#dlq-read-only').waitFor();
    expect(await viewer.page.locator('#dead-letters tbody tr').count()).toBe(2);
    for (const button of ['[data-redrive]', '#redrive-all', '#redrive-selected', '#purge-form', '[data-select]']) {
      expect(await viewer.page.locator(button).count(), button).toBe(0);
    }
    // The API refuses what the page does not offer, from the page itself with the viewer's token.
    // (A script string: the test's own TypeScript has no DOM types.)
    const refused = await viewer.page.evaluate(`(async () => {
      const res = await fetch('/groups/${GROUP}/dead-letters/redrive', {
        method: 'POST', body: JSON.stringify({ topic: '${TOPIC}', all: true, execute: true }),
        headers: { 'content-type': 'application/json', authorization: 'Bearer ' + sessionStorage.getItem('onelog-token') },
      });
      return { status: res.status, code: (await res.json()).code };
    })()`);
    expect(refused).toEqual({ status: 403, code: 'FORBIDDEN' });
    expect(await depth()).toBe(2);
    expect((await ops.listAudit())[0]).toMatchObject({ principal: 'viewer', action: 'dead-letters-redrive', outcome: 'refused' });
    expect(viewer.errors).toEqual([]);
  });
});

/**
 * The console in Debian's Chromium (playwright-core; never a downloaded browser): launching it, and a tab signed in
 * with a user's token at the console's first 401, as a person would.
 */
import { chromium } from 'playwright-core';
import type { Browser, Page } from 'playwright-core';
import { CHROMIUM } from './tools.js';

/** Chromium, headless. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM.command, args: ['--headless', '--no-sandbox', '--disable-gpu'] });
}

/**
 * A new tab of its own (its own sessionStorage) on the console's `path` (`/groups/G/replay`) of the broker at `url`,
 * signed in with `token` through the token form; `errors` collects the page's uncaught errors.
 */
export async function signedIn(browser: Browser, url: string, path: string, token: string): Promise<{ page: Page; errors: string[] }> {
  const page = await (await browser.newContext({ viewport: { width: 1400, height: 1000 } })).newPage();
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(err.message));
  await page.goto(`${url}/#${path}`);
  await page.locator('#token').fill(token);
  await page.locator('#token-form button').click();
  return { page, errors };
}

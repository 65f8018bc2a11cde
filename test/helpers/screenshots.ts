/**
 * Where a browser test saves a page's screenshot: `docs/images/console-<page>.png` when `UPDATE_SCREENSHOTS=1` (the
 * pictures the README and docs/monitoring.md show, committed), else `test-output/` (left out of git).
 */
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** The path to save the screenshot of `page` (`dead-letters`) to; its folder exists. */
export function screenshotPath(page: string, env: NodeJS.ProcessEnv = process.env): string {
  const dir = path.join(ROOT, env.UPDATE_SCREENSHOTS === '1' ? 'docs/images' : 'test-output');
  fs.mkdirSync(dir, { recursive: true });
  return path.join(dir, `console-${page}.png`);
}

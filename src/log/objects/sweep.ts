/**
 * The sweep (a background job of cluster mode, run under the `job:sweep` lease; docs/cluster.md) deletes the
 * objects the log no longer needs, once they are older than the grace period:
 * - orphans: log objects no commit took (their PUT succeeded, the commit was refused, failed or never came). The
 *   grace is more than twice the sequencer's `maxObjectAgeMs`, past which no commit indexes an object, so the sweep
 *   never deletes an object a late commit could still index;
 * - retired objects: those a merge replaced, retired longer than the grace ago, so a reader that looked up their
 *   index rows just before the merge has long read them.
 */
import { OnelogError } from '../../protocol/errors.js';
import type { ObjectStore } from './object-store.js';
import type { Sequencer } from './sequencer.js';

/** What a sweep did. */
export interface SweepResult {
  /** Objects listed under `objects/`. */
  listed: number;
  /** Orphans deleted: uncommitted and older than the grace period. */
  deleted: string[];
  /** Retired objects deleted. */
  retired: string[];
}

/**
 * Sweeps once.
 * @param graceMs an uncommitted object younger than this (by its Last-Modified) stays; at least twice the
 *   sequencer's maxObjectAgeMs. @default 2 x maxObjectAgeMs + 1 minute
 * @param now ms since the epoch
 * @throws OnelogError `INVALID_REQUEST` for a grace the sequencer's maxObjectAgeMs makes unsafe; `STORAGE_ERROR`
 */
export async function sweepObjects(objects: ObjectStore, sequencer: Sequencer, graceMs = 2 * sequencer.maxObjectAgeMs + 60_000, now = Date.now()): Promise<SweepResult> {
  if (graceMs < 2 * sequencer.maxObjectAgeMs) {
    throw new OnelogError('INVALID_REQUEST', `the orphan sweep's grace (${graceMs} ms) must be at least twice the longest an object may wait ` +
      `for its commit (${sequencer.maxObjectAgeMs} ms)`, { graceMs, maxObjectAgeMs: sequencer.maxObjectAgeMs });
  }
  let listed = 0;
  const old: string[] = [];
  for await (const o of objects.list('objects/')) {
    listed++;
    if (o.lastModified < now - graceMs) old.push(o.key);
  }
  const deleted: string[] = [];
  for (let i = 0; i < old.length; i += 1000) {
    const page = old.slice(i, i + 1000);
    const committed = await sequencer.committedObjects(page);
    deleted.push(...page.filter((k) => !committed.has(k)));
  }
  await objects.delete(deleted);
  const retired = await sequencer.retiredObjects(now - graceMs);
  await objects.delete(retired);
  await sequencer.forgetObjects(retired);
  return { listed, deleted, retired };
}

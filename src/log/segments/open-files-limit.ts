/**
 * The process's open-files limit and the default budget of the log store's {@link FileCache}.
 */
import fs from 'node:fs';
import { MIN_OPEN_FILES } from './file-cache.js';

/** The largest default budget. */
const MAX_DEFAULT = 65_536;

/** The soft limit assumed where `/proc/self/limits` cannot be read (Linux's usual default). */
export const FALLBACK_OPEN_FILES_LIMIT = 1024;

/**
 * The process's soft limit on open files (`ulimit -n`), read from `/proc/self/limits` (Linux), or
 * {@link FALLBACK_OPEN_FILES_LIMIT} where that cannot be read. `unlimited` reads as `Infinity`.
 */
export function openFilesLimit(): number {
  try {
    const line = fs.readFileSync('/proc/self/limits', 'utf8').split('\n').find((l) => l.startsWith('Max open files'));
    const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0];
    if (soft === 'unlimited') return Infinity;
    const n = Number(soft);
    return Number.isInteger(n) && n > 0 ? n : FALLBACK_OPEN_FILES_LIMIT;
  } catch {
    return FALLBACK_OPEN_FILES_LIMIT;
  }
}

/**
 * The log store's default descriptor budget for a soft limit: three quarters of it, leaving at least 64
 * descriptors (and a quarter of the limit) to connections, LMDB, SQLite and Node itself; never below
 * {@link MIN_OPEN_FILES}, and at most 65,536 (beyond that, a bigger cache only holds more idle files).
 * 256 → 192, 1,024 → 768, 20,000 → 15,000.
 * @param limit the soft limit, @default {@link openFilesLimit}
 */
export function defaultMaxOpenFiles(limit = openFilesLimit()): number {
  if (!Number.isFinite(limit)) return MAX_DEFAULT;
  const reserve = Math.max(64, Math.ceil(limit / 4));
  return Math.max(MIN_OPEN_FILES, Math.min(MAX_DEFAULT, limit - reserve));
}

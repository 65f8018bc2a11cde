/**
 * The modes of everything the broker creates in its data directory: directories 0700 and files 0600, the owner's
 * alone (as PostgreSQL keeps its data directory, refusing to start on one others may read). The records, the
 * catalog (users' token hashes, ACLs, the audit) and the committed offsets are nobody else's to read; the process
 * umask can only take more bits away. Every creation names its mode, so an embedded broker in another program is
 * kept the same way as `onelog serve`; the engines that create their own files get it too (SQLite's -wal and
 * -shm files take the mode of the catalog file created here first; LMDB is given it at open).
 */
import fs from 'node:fs';
import type { Logger } from './logger.js';

/** A directory the broker creates: rwx for its owner only. */
export const DIR_MODE = 0o700;

/** A file the broker creates: rw for its owner only. */
export const FILE_MODE = 0o600;

/** Creates `dir` and any missing parent, each {@link DIR_MODE}; an existing one is left as it is. */
export function makeDir(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: DIR_MODE });
}

/**
 * Narrows the data directory `dir` to {@link DIR_MODE} if others may read or enter it (one an earlier version made
 * 0755, or made by hand): then nothing below it is reachable by them, whatever the modes of the files it already
 * holds. Logged at info when narrowed; a directory the process may not chmod (another user's) is logged at warn and
 * left as it is.
 */
export function narrowDataDir(dir: string, logger: Logger): void {
  const mode = fs.statSync(dir).mode & 0o777;
  if ((mode & ~DIR_MODE) === 0) return;
  try {
    fs.chmodSync(dir, DIR_MODE);
    logger.info({ dataDir: dir, was: mode.toString(8), now: DIR_MODE.toString(8) }, 'data directory narrowed to its owner');
  } catch (err) {
    logger.warn({ dataDir: dir, mode: mode.toString(8), err: (err as Error).message }, 'the data directory is open to other users and could not be narrowed: chmod 700 it');
  }
}

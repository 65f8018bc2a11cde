/**
 * One broker per data directory: `<dataDir>/broker.lock` holds the owning process id. A lock whose process
 * is gone (a crash, kill -9) is taken over; a live one refuses the second broker before it touches any file,
 * since two brokers appending to one log would overwrite each other's acknowledged records.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { OnelogError } from '../protocol/errors.js';
import { FILE_MODE } from '../common/file-modes.js';

/** Whether process `pid` runs. A zombie (killed, not yet reaped by its parent) does not: it holds no files. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  return !zombie(pid);
}

/** On Linux, /proc/PID/stat's state field (after the parenthesised command name) is `Z` for a zombie. */
function zombie(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z';
  } catch {
    return false; // no /proc here: trust kill(pid, 0)
  }
}

/**
 * Takes the data directory's lock for this process.
 * @returns a function that releases it
 * @throws OnelogError `DATA_DIR_LOCKED` naming the process that holds it
 */
export function lockDataDir(dataDir: string): () => void {
  const file = path.join(dataDir, 'broker.lock');
  for (let attempt = 0; ; attempt++) {
    try {
      fs.writeFileSync(file, String(process.pid), { flag: 'wx', mode: FILE_MODE });
      return () => fs.rmSync(file, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw err;
    }
    const owner = Number(fs.readFileSync(file, 'utf8').trim());
    if (Number.isInteger(owner) && owner > 0 && alive(owner)) {
      throw new OnelogError(
        'DATA_DIR_LOCKED',
        `data directory ${dataDir} is in use by another broker (process ${owner}); stop it or use another --data-dir`,
        { dataDir, pid: owner },
      );
    }
    fs.rmSync(file, { force: true }); // left by a process that is gone
  }
}

/**
 * The data directory's id, in `<dataDir>/log-owner` (a UUID written, synced, on first use): the catalog records
 * whose log it describes (Catalog.logOwner), so a catalog on PostgreSQL is not shared by two data
 * directories' logs.
 */
export function dataDirId(dataDir: string): string {
  const file = path.join(dataDir, 'log-owner');
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const id = randomUUID();
  const temp = `${file}.tmp`;
  const fd = fs.openSync(temp, 'w', FILE_MODE);
  try {
    fs.writeSync(fd, `${id}\n`);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(temp, file);
  const dir = fs.openSync(dataDir, 'r');
  try {
    fs.fsyncSync(dir);
  } finally {
    fs.closeSync(dir);
  }
  return id;
}

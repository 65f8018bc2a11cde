/**
 * One broker per data directory: `<dataDir>/broker.lock` holds the owning process id. A lock whose process
 * is gone (a crash, kill -9) is taken over; a live one refuses the second broker before it touches any file,
 * since two brokers appending to one log would overwrite each other's acknowledged records.
 */
import fs from 'node:fs';
import path from 'node:path';
import { OnelogError } from './protocol/errors.js';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
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
      fs.writeFileSync(file, String(process.pid), { flag: 'wx' });
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

/**
 * Writes that finish: write(2) may write fewer bytes than asked (a short write, e.g. as a disk fills up) without
 * an error; the rest is written by further calls, and the call that cannot go on throws why (ENOSPC, EIO).
 */
import fs from 'node:fs';

/**
 * Writes all of `data` to `fd`.
 * @param position byte position in the file of the first byte; null = at the file's current position
 * @throws the file system's error for the call that could not go on (part of `data` may be written by then)
 */
export function writeFully(fd: number, data: Uint8Array | string, position: number | null = null): void {
  const bytes = typeof data === 'string' ? Buffer.from(data) : data;
  for (let written = 0; written < bytes.length;) {
    written += fs.writeSync(fd, bytes, written, bytes.length - written, position === null ? null : position + written);
  }
}

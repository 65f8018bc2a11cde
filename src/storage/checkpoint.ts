/**
 * Small JSON checkpoint files (log start offset, recovery point), replaced atomically: the new content goes
 * to a temp file that is fsynced, renamed over the old one, and the directory is fsynced, so after a crash
 * the file holds either the old or the new content, whole.
 */
import fs from 'node:fs';
import path from 'node:path';
import { OnelogError } from '../protocol/errors.js';

/** The checkpoint's content, or undefined if the file does not exist. @throws OnelogError `CORRUPT_MESSAGE` if it is not JSON */
export function readCheckpoint<T>(file: string): T | undefined {
  if (!fs.existsSync(file)) return undefined;
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as T;
  } catch (err) {
    throw new OnelogError('CORRUPT_MESSAGE', `checkpoint ${file} is unreadable: ${(err as Error).message}`, { file });
  }
}

/** Replaces the checkpoint atomically and durably. */
export function writeCheckpoint(file: string, content: unknown): void {
  const tmp = `${file}.tmp`;
  const fd = fs.openSync(tmp, 'w');
  try {
    fs.writeSync(fd, JSON.stringify(content));
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
  syncDirectory(path.dirname(file));
}

/** fsyncs a directory, so renames and deletions in it are durable. */
export function syncDirectory(dir: string): void {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

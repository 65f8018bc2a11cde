/**
 * A partition's small JSON checkpoint files (`log-start-offset.json`, `recovery-point.json`, and the producer
 * state snapshots `<offset>.snapshot`), replaced atomically: the new content goes to a temp file that is
 * fsynced, renamed over the old one, and the directory is fsynced, so after a crash the file holds either
 * the old or the new content, whole. Every descriptor they take goes through the {@link FileCache}.
 */
import fs from 'node:fs';
import path from 'node:path';
import { OnelogError } from '../../protocol/errors.js';
import type { FileCache } from './file-cache.js';
import { FILE_MODE } from '../../common/file-modes.js';
import type { LogStartReason } from '../log-start.js';

const LOG_START_CHECKPOINT = 'log-start-offset.json';
const RECOVERY_CHECKPOINT = 'recovery-point.json';

/** A file's bytes, or undefined if it does not exist (asked first: a failed open costs an exception). */
export function readFileIfExists(files: FileCache, file: string): Buffer | undefined {
  if (!fs.existsSync(file)) return undefined;
  try {
    return files.transient(() => fs.readFileSync(file));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Deletes a file if it exists (needs no descriptor). */
export function removeFileIfExists(file: string): void {
  if (fs.existsSync(file)) fs.rmSync(file, { force: true });
}

/** The checkpoint's content, or undefined if the file does not exist. @throws OnelogError `CORRUPT_MESSAGE` if it is not JSON */
function readCheckpoint<T>(files: FileCache, file: string): T | undefined {
  const data = readFileIfExists(files, file);
  if (data === undefined) return undefined;
  try {
    return JSON.parse(data.toString('utf8')) as T;
  } catch (err) {
    throw new OnelogError('CORRUPT_MESSAGE', `checkpoint ${file} is unreadable: ${(err as Error).message}`, { file });
  }
}

/**
 * Replaces `file` with `data` atomically: written to `<file>.tmp`, fdatasynced (unless `sync` is false),
 * renamed over it. The rename is durable once the directory is synced (the caller's choice).
 */
export function replaceFile(files: FileCache, file: string, data: Buffer | string, sync = true): void {
  const tmp = `${file}.tmp`;
  files.transient(() => {
    const fd = fs.openSync(tmp, 'w', FILE_MODE);
    try {
      fs.writeFileSync(fd, data);
      if (sync) fs.fdatasyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  });
  fs.renameSync(tmp, file);
}

/** Replaces the checkpoint atomically and durably. */
function writeCheckpoint(files: FileCache, file: string, content: unknown): void {
  replaceFile(files, file, JSON.stringify(content));
  syncDirectory(files, path.dirname(file));
}

/** fsyncs a directory, so renames and deletions in it are durable. */
export function syncDirectory(files: FileCache, dir: string): void {
  files.transient(() => {
    const fd = fs.openSync(dir, 'r');
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  });
}

/** The names in a directory (listing it takes a descriptor). */
export function listDirectory(files: FileCache, dir: string): string[] {
  return files.transient(() => fs.readdirSync(dir));
}

/** The log start offset of the partition in `dir` (0 when never moved). @throws OnelogError `CORRUPT_MESSAGE` */
export function readLogStartCheckpoint(files: FileCache, dir: string): number {
  const file = path.join(dir, LOG_START_CHECKPOINT);
  const parsed = readCheckpoint<{ logStartOffset?: unknown }>(files, file);
  if (parsed === undefined) return 0;
  if (typeof parsed.logStartOffset !== 'number' || parsed.logStartOffset < 0) {
    throw new OnelogError('CORRUPT_MESSAGE', `log start offset checkpoint ${file} is invalid`, { file });
  }
  return parsed.logStartOffset;
}

/** Checkpoints a new log start offset with the reason it moved. */
export function writeLogStartCheckpoint(files: FileCache, dir: string, offset: number, reason: LogStartReason, now: number): void {
  writeCheckpoint(files, path.join(dir, LOG_START_CHECKPOINT), {
    logStartOffset: offset, reason, updatedAt: new Date(now).toISOString(),
  });
}

/** The recovery point: offsets below it are on disk in segments that were synced and sealed. */
export interface RecoveryCheckpoint {
  recoveryPoint: number;
  /** Written by a clean close: the last segment too is whole, up to `recoveryPoint`. */
  clean: boolean;
}

/**
 * The recovery point, or undefined when the file is missing or unreadable: it only tells what a restart may
 * skip, so without it every segment is recovered, which is slower but always right.
 */
export function readRecoveryCheckpoint(files: FileCache, dir: string): RecoveryCheckpoint | undefined {
  let parsed: Partial<RecoveryCheckpoint> | undefined;
  try {
    parsed = readCheckpoint<Partial<RecoveryCheckpoint>>(files, path.join(dir, RECOVERY_CHECKPOINT));
  } catch (err) {
    if (err instanceof OnelogError && err.code === 'CORRUPT_MESSAGE') return undefined;
    throw err;
  }
  if (parsed === undefined || typeof parsed.recoveryPoint !== 'number' || typeof parsed.clean !== 'boolean') return undefined;
  return { recoveryPoint: parsed.recoveryPoint, clean: parsed.clean };
}

/**
 * Replaces the recovery point checkpoint atomically.
 * @param durable fdatasync it and the directory, so the new content survives a power loss. A clean close
 *   skips both: after a power loss the file holds the checkpoint before, or is empty or torn and then read
 *   as missing (see {@link readRecoveryCheckpoint}); either costs recovery work, never data
 */
export function writeRecoveryCheckpoint(files: FileCache, dir: string, checkpoint: RecoveryCheckpoint, durable = true): void {
  replaceFile(files, path.join(dir, RECOVERY_CHECKPOINT), JSON.stringify(checkpoint), durable);
  if (durable) syncDirectory(files, dir);
}

const SNAPSHOT_FILE = /^(\d{20})\.snapshot$/;

/** Path of the producer state snapshot taken at `offset` (20-digit zero-padded, as segment files). */
function producerSnapshotPath(dir: string, offset: number): string {
  return path.join(dir, `${String(offset).padStart(20, '0')}.snapshot`);
}

/**
 * Offsets of the producer state snapshots among `files` (names in a partition directory), ascending.
 * @param files the directory's entries, when the caller already listed it
 */
export function producerSnapshotOffsets(files: readonly string[]): number[] {
  const out: number[] = [];
  for (const f of files) {
    const m = SNAPSHOT_FILE.exec(f);
    if (m) out.push(Number(m[1]));
  }
  return out.sort((a, b) => a - b);
}

/** The content of the snapshot at `offset`, parsed. @throws OnelogError `CORRUPT_MESSAGE` if missing or not JSON */
export function readProducerSnapshot(files: FileCache, dir: string, offset: number): unknown {
  const file = producerSnapshotPath(dir, offset);
  const parsed = readCheckpoint<unknown>(files, file);
  if (parsed === undefined) throw new OnelogError('CORRUPT_MESSAGE', `producer snapshot ${file} is missing`, { file });
  return parsed;
}

/** Writes the snapshot at `offset` atomically and durably (replacing one at the same offset). */
export function writeProducerSnapshot(files: FileCache, dir: string, offset: number, content: unknown): void {
  writeCheckpoint(files, producerSnapshotPath(dir, offset), content);
}

/** Deletes the snapshot at `offset` (no error if it is gone); the caller syncs the directory when it matters. */
export function deleteProducerSnapshot(dir: string, offset: number): void {
  fs.rmSync(producerSnapshotPath(dir, offset), { force: true });
}

/** Removes temp files a crash left from a snapshot write (`<offset>.snapshot.tmp`). */
export function removeProducerSnapshotTemps(dir: string, files: readonly string[]): void {
  for (const f of files) if (/^\d{20}\.snapshot\.tmp$/.test(f)) fs.rmSync(path.join(dir, f), { force: true });
}

/**
 * A partition's small JSON checkpoint files (`log-start-offset.json`, `recovery-point.json`, and the producer
 * state snapshots `<offset>.snapshot`), replaced atomically: the new content goes to a temp file that is
 * fsynced, renamed over the old one, and the directory is fsynced, so after a crash the file holds either
 * the old or the new content, whole.
 */
import fs from 'node:fs';
import path from 'node:path';
import { OnelogError } from '../protocol/errors.js';
import type { LogStartReason } from './log-start-reason.js';

const LOG_START_CHECKPOINT = 'log-start-offset.json';
const RECOVERY_CHECKPOINT = 'recovery-point.json';

/** The checkpoint's content, or undefined if the file does not exist. @throws OnelogError `CORRUPT_MESSAGE` if it is not JSON */
function readCheckpoint<T>(file: string): T | undefined {
  if (!fs.existsSync(file)) return undefined;
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as T;
  } catch (err) {
    throw new OnelogError('CORRUPT_MESSAGE', `checkpoint ${file} is unreadable: ${(err as Error).message}`, { file });
  }
}

/** Replaces the checkpoint atomically and durably. */
function writeCheckpoint(file: string, content: unknown): void {
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

/** The log start offset of the partition in `dir` (0 when never moved). @throws OnelogError `CORRUPT_MESSAGE` */
export function readLogStartCheckpoint(dir: string): number {
  const file = path.join(dir, LOG_START_CHECKPOINT);
  const parsed = readCheckpoint<{ logStartOffset?: unknown }>(file);
  if (parsed === undefined) return 0;
  if (typeof parsed.logStartOffset !== 'number' || parsed.logStartOffset < 0) {
    throw new OnelogError('CORRUPT_MESSAGE', `log start offset checkpoint ${file} is invalid`, { file });
  }
  return parsed.logStartOffset;
}

/** Checkpoints a new log start offset with the reason it moved. */
export function writeLogStartCheckpoint(dir: string, offset: number, reason: LogStartReason, now: number): void {
  writeCheckpoint(path.join(dir, LOG_START_CHECKPOINT), {
    logStartOffset: offset, reason, updatedAt: new Date(now).toISOString(),
  });
}

/** The recovery point: offsets below it are on disk in segments that were synced and sealed. */
export interface RecoveryCheckpoint {
  recoveryPoint: number;
  /** Written by a clean close: the last segment too is whole, up to `recoveryPoint`. */
  clean: boolean;
}

export function readRecoveryCheckpoint(dir: string): RecoveryCheckpoint | undefined {
  const parsed = readCheckpoint<Partial<RecoveryCheckpoint>>(path.join(dir, RECOVERY_CHECKPOINT));
  if (parsed === undefined || typeof parsed.recoveryPoint !== 'number' || typeof parsed.clean !== 'boolean') return undefined;
  return { recoveryPoint: parsed.recoveryPoint, clean: parsed.clean };
}

export function writeRecoveryCheckpoint(dir: string, checkpoint: RecoveryCheckpoint): void {
  writeCheckpoint(path.join(dir, RECOVERY_CHECKPOINT), checkpoint);
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
export function readProducerSnapshot(dir: string, offset: number): unknown {
  const file = producerSnapshotPath(dir, offset);
  const parsed = readCheckpoint<unknown>(file);
  if (parsed === undefined) throw new OnelogError('CORRUPT_MESSAGE', `producer snapshot ${file} is missing`, { file });
  return parsed;
}

/** Writes the snapshot at `offset` atomically and durably (replacing one at the same offset). */
export function writeProducerSnapshot(dir: string, offset: number, content: unknown): void {
  writeCheckpoint(producerSnapshotPath(dir, offset), content);
}

/** Deletes the snapshot at `offset` (no error if it is gone); the caller syncs the directory when it matters. */
export function deleteProducerSnapshot(dir: string, offset: number): void {
  fs.rmSync(producerSnapshotPath(dir, offset), { force: true });
}

/** Removes temp files a crash left from a snapshot write (`<offset>.snapshot.tmp`). */
export function removeProducerSnapshotTemps(dir: string, files: readonly string[]): void {
  for (const f of files) if (/^\d{20}\.snapshot\.tmp$/.test(f)) fs.rmSync(path.join(dir, f), { force: true });
}

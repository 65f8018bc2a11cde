/**
 * The commit journal of the embedded offset store (lmdb-offset-store.ts): what lets a commit be acknowledged once it
 * is written, without waiting for LMDB's synced transaction (an fsync, 0.3 ms usually and 50-130 ms at times on a
 * shared disk, which a pull member would otherwise wait out before its next fetch). Each commit's puts are appended
 * here with one `write()` before the store answers, so a process crash (kill -9) loses nothing acknowledged: the page
 * cache keeps the bytes, and the next open replays whatever LMDB had not committed. LMDB then commits the puts in the
 * background, with the sequence number of the last record it holds (the store's `applied` mark) in the same
 * transaction, and a replay skips every record at or below that mark. The journal itself is never synced: a power
 * loss (or an OS crash) may lose the commits acknowledged since LMDB's last synced transaction, normally a few
 * milliseconds, as long as one sync takes at worst; a topic with `flush.policy=always` has its commits wait for the sync.
 *
 * Files `journal-<first sequence number, 16 digits>` in the store's directory, mode 0600; a file past
 * {@link CommitJournalOptions.maxFileBytes} is closed and the next record starts a new one; a closed file is removed
 * once LMDB holds all its records ({@link CommitJournal.applied}); all are removed at a clean close.
 *
 * A record, little-endian: `uint32 payload bytes, uint32 CRC-32C of (seq, payload), float64 seq, payload`; the payload
 * is the commit's puts, each `uint16 key bytes, key, uint32 value bytes, value`. Sequence numbers strictly increase
 * across files. A record that does not check (a write torn by the crash) ends its file's replay.
 */
import fs from 'node:fs';
import path from 'node:path';
import { FILE_MODE } from '../common/file-modes.js';
import { crc32c } from '../protocol/crc32c.js';

/** Length, CRC, sequence number. */
const HEADER_BYTES = 16;
/** Key lengths are uint16 (LMDB's keys are at most 1,978 bytes); value lengths uint32. */
const MAX_KEY_BYTES = 0xffff;
const FILE_NAME = /^journal-(\d{16})$/;

/** One put of a journal record: an LMDB key and its value, as the store writes them. */
export interface JournalPut {
  key: Buffer;
  value: Buffer;
}

/** A record read back by {@link CommitJournal.read}. */
export interface JournalRecord {
  seq: number;
  puts: JournalPut[];
}

/** Options of {@link CommitJournal.open}. */
export interface CommitJournalOptions {
  /** A file this large (bytes) is closed after its last record and the next record starts a new file. @default 4194304 (4 MiB) */
  maxFileBytes?: number;
}

/** The name of the file whose first record is `seq`. */
function fileName(seq: number): string {
  return `journal-${String(seq).padStart(16, '0')}`;
}

/** The records of one file up to the first that does not check. */
function readFile(file: string): JournalRecord[] {
  const buf = fs.readFileSync(file);
  const records: JournalRecord[] = [];
  let at = 0;
  while (at + HEADER_BYTES <= buf.length) {
    const length = buf.readUInt32LE(at);
    const end = at + HEADER_BYTES + length;
    if (end > buf.length || crc32c(buf, at + 8, end) !== buf.readUInt32LE(at + 4)) break;
    const seq = buf.readDoubleLE(at + 8);
    const puts: JournalPut[] = [];
    let p = at + HEADER_BYTES;
    while (p < end) {
      const keyBytes = buf.readUInt16LE(p);
      const key = Buffer.from(buf.subarray(p + 2, p + 2 + keyBytes));
      p += 2 + keyBytes;
      const valueBytes = buf.readUInt32LE(p);
      puts.push({ key, value: Buffer.from(buf.subarray(p + 4, p + 4 + valueBytes)) });
      p += 4 + valueBytes;
    }
    records.push({ seq, puts });
    at = end;
  }
  return records;
}

/**
 * The journal files of one directory. Not safe for two processes (the broker's data directory lock keeps one).
 * Appends are synchronous `write()` calls on the event loop (a few microseconds into the page cache).
 */
export class CommitJournal {
  /** The record being built by {@link add}, header first. */
  private scratch = Buffer.allocUnsafeSlow(4096);
  private building = HEADER_BYTES;
  private fd: number;
  private file: string;
  /** Bytes in the current file (where the next record starts). */
  private size = 0;
  /** Closed files and the last sequence number each holds. */
  private readonly retired: Array<{ file: string; lastSeq: number }> = [];
  private readonly maxFileBytes: number;
  /** Set when a failed write could not be cut back: the file may end in a torn record, so nothing more is appended. */
  private broken: Error | undefined;

  private constructor(private readonly dir: string, firstSeq: number, options: CommitJournalOptions) {
    this.maxFileBytes = options.maxFileBytes ?? 4 * 1024 * 1024;
    this.file = path.join(dir, fileName(firstSeq));
    this.fd = fs.openSync(this.file, 'a', FILE_MODE);
  }

  /**
   * Reads every record the files in `dir` hold, in sequence order. `start` then removes those files and begins a new
   * journal: the caller calls it once it has applied the records it needs.
   * @returns the records found, and `start` to begin the new journal once they are applied
   */
  static read(dir: string): { records: JournalRecord[]; start: (firstSeq: number, options?: CommitJournalOptions) => CommitJournal } {
    const files = fs.readdirSync(dir).filter((f) => FILE_NAME.test(f)).sort().map((f) => path.join(dir, f));
    const records = files.flatMap(readFile);
    return {
      records,
      start: (firstSeq, options = {}) => {
        for (const f of files) fs.rmSync(f, { force: true });
        return new CommitJournal(dir, firstSeq, options);
      },
    };
  }

  /**
   * Adds one put to the record being built (the first since the last {@link append} begins it).
   * @throws RangeError for a key over 65,535 bytes (nothing of the record is written then: call {@link discard})
   */
  add(key: Buffer, value: Buffer): void {
    if (key.length > MAX_KEY_BYTES) throw new RangeError(`offset store: a journal entry's key is ${key.length} bytes, over ${MAX_KEY_BYTES}`);
    const need = this.building + 6 + key.length + value.length;
    if (need > this.scratch.length) {
      const bigger = Buffer.allocUnsafeSlow(Math.max(need, 2 * this.scratch.length));
      this.scratch.copy(bigger, 0, 0, this.building);
      this.scratch = bigger;
    }
    const buf = this.scratch;
    buf.writeUInt16LE(key.length, this.building);
    key.copy(buf, this.building + 2);
    this.building += 2 + key.length;
    buf.writeUInt32LE(value.length, this.building);
    value.copy(buf, this.building + 4);
    this.building += 4 + value.length;
  }

  /** Drops the record being built. */
  discard(): void {
    this.building = HEADER_BYTES;
  }

  /**
   * Writes the record built by {@link add} as record `seq` (greater than every earlier one), with one `write()`.
   * A write that fails leaves the file as it was before it (cut back), so later records still replay; if it cannot
   * be cut back, this and every later append throws that error.
   * @throws the file system's error (ENOSPC, EIO); the record is not in the journal then
   */
  append(seq: number): void {
    if (this.broken) throw this.broken;
    const buf = this.scratch;
    const end = this.building;
    this.building = HEADER_BYTES;
    buf.writeUInt32LE(end - HEADER_BYTES, 0);
    buf.writeDoubleLE(seq, 8);
    buf.writeUInt32LE(crc32c(buf, 8, end), 4);
    try {
      const written = fs.writeSync(this.fd, buf, 0, end);
      if (written !== end) throw Object.assign(new Error(`short write to ${this.file}: ${written} of ${end} bytes`), { code: 'EIO' });
    } catch (err) {
      try {
        fs.ftruncateSync(this.fd, this.size);
      } catch {
        this.broken = err as Error;
      }
      throw err;
    }
    this.size += end;
    if (this.size >= this.maxFileBytes) {
      fs.closeSync(this.fd);
      this.retired.push({ file: this.file, lastSeq: seq });
      this.file = path.join(this.dir, fileName(seq + 1));
      this.fd = fs.openSync(this.file, 'a', FILE_MODE);
      this.size = 0;
    }
  }

  /** LMDB holds every record up to `seq`: the closed files whose records all are at or below it are removed. */
  applied(seq: number): void {
    while (this.retired.length > 0 && this.retired[0]!.lastSeq <= seq) fs.rmSync(this.retired.shift()!.file, { force: true });
  }

  /**
   * Closes the journal. With `removeFiles` (LMDB holds every record: a clean close) its files are removed;
   * otherwise they stay for the next open to replay.
   */
  close(removeFiles: boolean): void {
    fs.closeSync(this.fd);
    if (!removeFiles) return;
    for (const { file } of this.retired) fs.rmSync(file, { force: true });
    fs.rmSync(this.file, { force: true });
  }
}

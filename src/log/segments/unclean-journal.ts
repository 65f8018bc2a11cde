/**
 * `<logDir>/unclean-partitions`: the partitions written since the last clean shutdown, one directory name
 * (`<topic>-<partition>`) per line. A name is added when the partition is first written in a session
 * (appended and fdatasynced for all the partitions first written in one turn of the event loop at once,
 * before their first append is acknowledged); a clean shutdown that closed every partition cleanly empties
 * the file. At start-up the broker recovers
 * exactly these partitions, without reading every partition's recovery point, so start-up time does not
 * grow with the number of idle partitions.
 *
 * Correctness does not rest on the journal: a partition it misses (a crash before its line was synced) is
 * opened on first use, and opening validates every batch appended since the partition's last clean close.
 * The journal decides only that recovery happens at start-up rather than at first use.
 *
 * A data directory written before this file existed has none: start-up then reads every partition's recovery
 * point once (see {@link LogManager.start}) and writes the file.
 */
import fs from 'node:fs';
import path from 'node:path';
import { readFileIfExists, replaceFile, syncDirectory } from './checkpoint.js';
import type { FileCache } from './file-cache.js';
import { FILE_MODE } from '../../common/file-modes.js';
import { writeFully } from './write-fully.js';

const FILE = 'unclean-partitions';

export class UncleanJournal {
  private readonly names: Set<string>;
  /** Added, not yet written. */
  private pending: string[] = [];
  /** Resolves when the pending names are written; null when none is pending. */
  private flushed: Promise<void> | null = null;

  private constructor(
    private readonly dir: string,
    private readonly files: FileCache,
    names: Iterable<string>,
  ) {
    this.names = new Set(names);
  }

  /**
   * Reads the journal of the log directory `dir`.
   * @returns the journal, or null when the directory has none (written before it existed)
   */
  static read(dir: string, files: FileCache): UncleanJournal | null {
    const data = readFileIfExists(files, path.join(dir, FILE));
    if (data === undefined) return null;
    return new UncleanJournal(dir, files, data.toString('utf8').split('\n').filter((line) => line.length > 0));
  }

  /** Replaces the journal with `names`, durably. */
  static write(dir: string, files: FileCache, names: Iterable<string>): UncleanJournal {
    const journal = new UncleanJournal(dir, files, names);
    journal.rewrite();
    return journal;
  }

  /** The partition directories listed. */
  get partitions(): ReadonlySet<string> {
    return this.names;
  }

  /**
   * Lists `name` unless it is listed already; the line is written and synced at the end of this turn of the
   * event loop, with any other added meanwhile.
   * @returns resolves once the line is synced, or at once if it was listed; never rejects: a failed write goes
   *   to `onError` (nothing is lost, see above)
   */
  add(name: string, onError: (err: Error) => void): Promise<void> | undefined {
    if (this.names.has(name)) return undefined;
    this.names.add(name);
    this.pending.push(name);
    this.flushed ??= new Promise<void>((resolve) => setImmediate(() => {
      this.flushed = null;
      try {
        this.flush();
      } catch (err) {
        onError(err as Error);
      }
      resolve();
    }));
    return this.flushed;
  }

  /** Appends the names added since the last flush, and syncs them. */
  private flush(): void {
    if (this.pending.length === 0) return;
    const lines = this.pending.map((n) => `${n}\n`).join('');
    this.pending = [];
    this.files.transient(() => {
      const fd = fs.openSync(path.join(this.dir, FILE), 'a', FILE_MODE);
      try {
        writeFully(fd, lines);
        fs.fdatasyncSync(fd);
      } finally {
        fs.closeSync(fd);
      }
    });
  }

  /** Keeps only `names` (the partitions still unclean at a shutdown), durably. */
  retainOnly(names: Iterable<string>): void {
    this.pending = [];
    this.names.clear();
    for (const n of names) this.names.add(n);
    this.rewrite();
  }

  private rewrite(): void {
    replaceFile(this.files, path.join(this.dir, FILE), [...this.names].map((n) => `${n}\n`).join(''));
    syncDirectory(this.files, this.dir);
  }
}

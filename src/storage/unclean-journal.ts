/**
 * `<logDir>/unclean-partitions`: the partitions written since the last clean shutdown, one directory name
 * (`<topic>-<partition>`) per line. A name is appended, and fdatasynced, before the partition's first write
 * of a session; a clean shutdown that closed every partition cleanly empties the file. So after a crash the
 * broker knows which partitions need recovery without reading every partition's recovery point, and
 * start-up time does not grow with the number of idle partitions.
 *
 * A data directory written before this file existed has none: start-up then reads every partition's recovery
 * point once (see {@link LogManager.start}) and writes the file.
 */
import fs from 'node:fs';
import path from 'node:path';
import { readFileIfExists, replaceFile, syncDirectory } from './checkpoint.js';
import type { FileCache } from './file-cache.js';

const FILE = 'unclean-partitions';

export class UncleanJournal {
  private readonly names: Set<string>;

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

  /** Lists `name`, durably, unless it is listed already. */
  add(name: string): void {
    if (this.names.has(name)) return;
    this.files.transient(() => {
      const fd = fs.openSync(path.join(this.dir, FILE), 'a');
      try {
        fs.writeSync(fd, `${name}\n`);
        fs.fdatasyncSync(fd);
      } finally {
        fs.closeSync(fd);
      }
    });
    this.names.add(name);
  }

  /** Keeps only `names` (the partitions still unclean at a shutdown), durably. */
  retainOnly(names: Iterable<string>): void {
    this.names.clear();
    for (const n of names) this.names.add(n);
    this.rewrite();
  }

  private rewrite(): void {
    replaceFile(this.files, path.join(this.dir, FILE), [...this.names].map((n) => `${n}\n`).join(''));
    syncDirectory(this.files, this.dir);
  }
}

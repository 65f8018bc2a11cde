/**
 * A fault-injecting file layer for tests: it wraps the `node:fs` calls the log store makes (every module of
 * src/log/segments/ calls them through the shared `fs` object, so a wrapper installed on it sits under all of them)
 * and makes the calls that match a rule fail as a sick disk would:
 *
 * - `write` (`writeSync`, `writeFileSync`): throw `EIO` or `ENOSPC` before writing anything, or (`short`) write
 *   only half of what was asked and return that, as a write(2) may;
 * - `fsync` (`fdatasync`, `fdatasyncSync`, `fsyncSync`): throw `EIO` or `ENOSPC` (a failed writeback) without
 *   syncing; with `dropUnsynced`, also cut the file back to its size at its last successful sync, as the
 *   kernel may drop the dirty pages whose writeback failed (the "fsyncgate" case);
 * - `read` (`readSync`): throw `EIO`, or (`corrupt`) flip one bit of the bytes read.
 *
 * The native stores (LMDB, SQLite) do their own file I/O in C, below this layer: their faults are injected at
 * their drivers (see store-faults.test.ts) and with a real full file system (disk-full.test.ts).
 */
import fs from 'node:fs';
import path from 'node:path';

/** The calls a rule can fail. */
export type FaultOp = 'write' | 'fsync' | 'read';

/** One fault: which calls fail, and how. */
export interface FaultRule {
  op: FaultOp;
  /** Files whose path matches fail; others pass. */
  path: RegExp;
  /** The errno the call throws. @default 'EIO' */
  errno?: 'EIO' | 'ENOSPC';
  /** `write` only: write half the bytes and return, throwing nothing (a short write). */
  short?: boolean;
  /** `read` only: flip a bit of the last byte read instead of throwing. */
  corrupt?: boolean;
  /** `fsync` only: cut the file back to its size at its last successful sync (dirty pages dropped). */
  dropUnsynced?: boolean;
  /** Matching calls let through before the fault strikes. @default 0 */
  after?: number;
  /** Matching calls that fail, then the rule is spent. @default Infinity */
  times?: number;
}

/** A rule installed on a {@link FaultyDisk}, with what it did. */
export interface Fault {
  readonly rule: FaultRule;
  /** Calls it failed so far. */
  hits: number;
  /** Matching calls it let through (see {@link FaultRule.after}). */
  passed: number;
  /** Paths of the files it failed. */
  readonly paths: string[];
}

type Fs = typeof fs;
const WRAPPED = ['openSync', 'closeSync', 'writeSync', 'writeFileSync', 'fdatasync', 'fdatasyncSync', 'fsyncSync', 'readSync'] as const;

/** The error a failed system call raises: `code`, `errno` and `syscall` as Node sets them. */
export function errnoError(code: 'EIO' | 'ENOSPC', syscall: string, file?: string): NodeJS.ErrnoException {
  const text = code === 'EIO' ? 'i/o error' : 'no space left on device';
  return Object.assign(new Error(`${code}: ${text}, ${syscall}${file ? ` '${file}'` : ''} (injected)`), {
    code, errno: code === 'EIO' ? -5 : -28, syscall, ...(file ? { path: file } : {}),
  });
}

/**
 * Installs itself on `node:fs` when made; {@link uninstall} puts the real calls back. One at a time per process.
 */
export class FaultyDisk {
  private readonly originals = new Map<string, unknown>();
  private readonly paths = new Map<number, string>();
  /** Size of each file at its last successful sync (or when opened), by path. */
  private readonly syncedSize = new Map<string, number>();
  /** Files written through this layer: a power loss cuts only those (a native store's file opened here is not). */
  private readonly written = new Set<string>();
  private readonly faults: Fault[] = [];

  constructor() {
    const real = Object.fromEntries(WRAPPED.map((name) => [name, fs[name]])) as Pick<Fs, (typeof WRAPPED)[number]>;
    for (const name of WRAPPED) this.originals.set(name, fs[name]);
    const mutable = fs as unknown as Record<string, unknown>;
    mutable.openSync = (file: fs.PathLike, ...rest: unknown[]) => {
      const fd = (real.openSync as (...a: unknown[]) => number)(file, ...rest);
      const name = String(file);
      this.paths.set(fd, name);
      if (!this.syncedSize.has(name)) this.syncedSize.set(name, fs.fstatSync(fd).size);
      return fd;
    };
    mutable.closeSync = (fd: number) => {
      this.paths.delete(fd);
      real.closeSync(fd);
    };
    mutable.writeSync = (fd: number, data: Buffer | string, ...rest: unknown[]) => {
      const fault = this.strike('write', this.paths.get(fd));
      this.written.add(this.paths.get(fd) ?? '');
      if (fault === null) return (real.writeSync as (...a: unknown[]) => number)(fd, data, ...rest);
      if (fault.rule.short) {
        const bytes = typeof data === 'string' ? Buffer.from(data) : data;
        const [offset = 0, length = bytes.length - offset, position = null] = rest as [number?, number?, (number | null)?];
        return real.writeSync(fd, bytes, offset, Math.max(1, Math.floor(length / 2)), position);
      }
      throw errnoError(fault.rule.errno ?? 'EIO', 'write', this.paths.get(fd));
    };
    mutable.writeFileSync = (file: fs.PathOrFileDescriptor, ...rest: unknown[]) => {
      const name = typeof file === 'number' ? this.paths.get(file) : String(file);
      const fault = this.strike('write', name);
      if (fault !== null && !fault.rule.short) throw errnoError(fault.rule.errno ?? 'EIO', 'write', name);
      if (name !== undefined) this.written.add(name);
      return (real.writeFileSync as (...a: unknown[]) => void)(file, ...rest);
    };
    const sync = (fd: number, syscall: string): void => {
      const name = this.paths.get(fd);
      const fault = this.strike('fsync', name);
      if (fault === null) {
        if (name !== undefined) this.syncedSize.set(name, fs.fstatSync(fd).size);
        return;
      }
      if (fault.rule.dropUnsynced && name !== undefined) fs.ftruncateSync(fd, this.syncedSize.get(name) ?? 0);
      throw errnoError(fault.rule.errno ?? 'EIO', syscall, name);
    };
    mutable.fdatasyncSync = (fd: number) => {
      sync(fd, 'fdatasync');
      real.fdatasyncSync(fd);
    };
    mutable.fsyncSync = (fd: number) => {
      sync(fd, 'fsync');
      real.fsyncSync(fd);
    };
    mutable.fdatasync = (fd: number, callback: (err: NodeJS.ErrnoException | null) => void) => {
      try {
        sync(fd, 'fdatasync');
      } catch (err) {
        setImmediate(() => callback(err as NodeJS.ErrnoException));
        return;
      }
      real.fdatasync(fd, callback);
    };
    mutable.readSync = (fd: number, buffer: NodeJS.ArrayBufferView, ...rest: unknown[]) => {
      const fault = this.strike('read', this.paths.get(fd));
      if (fault !== null && !fault.rule.corrupt) throw errnoError(fault.rule.errno ?? 'EIO', 'read', this.paths.get(fd));
      const read = (real.readSync as (...a: unknown[]) => number)(fd, buffer, ...rest);
      if (fault !== null && read > 0) {
        const offset = typeof rest[0] === 'number' ? rest[0] : 0;
        const bytes = new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
        bytes[offset + read - 1]! ^= 0x01;
      }
      return read;
    };
  }

  /** Adds a fault: matching calls from now on fail by it (the first rule that matches a call strikes). */
  add(rule: FaultRule): Fault {
    const fault: Fault = { rule, hits: 0, passed: 0, paths: [] };
    this.faults.push(fault);
    return fault;
  }

  /** Removes every fault: the disk is healthy again. */
  heal(): void {
    this.faults.length = 0;
  }

  /**
   * What a power loss would leave of directory `from`, copied to `to`: each file this layer saw written cut back
   * to its size at its last fdatasync (or when first opened), as its unsynced pages never reached the disk;
   * other files (checkpoints, written whole and synced before their rename) copied as they are. A model: a
   * real disk may also keep part of the unsynced data, which recovery must then cut at a whole batch.
   */
  powerLossCopy(from: string, to: string): void {
    fs.mkdirSync(to, { recursive: true });
    for (const entry of fs.readdirSync(from, { withFileTypes: true })) {
      const source = path.join(from, entry.name);
      const target = path.join(to, entry.name);
      if (entry.isDirectory()) {
        this.powerLossCopy(source, target);
        continue;
      }
      fs.copyFileSync(source, target);
      const synced = this.syncedSize.get(source);
      if (synced !== undefined && this.written.has(source) && synced < fs.statSync(target).size) fs.truncateSync(target, synced);
    }
  }

  /** Puts the real calls back on `node:fs`. */
  uninstall(): void {
    this.heal();
    const mutable = fs as unknown as Record<string, unknown>;
    for (const [name, original] of this.originals) mutable[name] = original;
  }

  /** The fault that fails this call, if any (counted), else null. */
  private strike(op: FaultOp, file: string | undefined): Fault | null {
    if (file === undefined) return null;
    for (const fault of this.faults) {
      const { rule } = fault;
      if (rule.op !== op || !rule.path.test(file)) continue;
      if (fault.passed < (rule.after ?? 0)) {
        fault.passed++;
        continue;
      }
      if (fault.hits >= (rule.times ?? Infinity)) continue;
      fault.hits++;
      fault.paths.push(file);
      return fault;
    }
    return null;
  }
}

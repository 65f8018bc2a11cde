/**
 * A segment's sparse offset index (Kafka's OffsetIndex): one 8-byte entry every `indexIntervalBytes` of
 * log, mapping a batch's base offset (relative to the segment's base offset, uint32) to the byte position
 * of that batch in the segment file (uint32), both big-endian. Entries strictly increase in both fields.
 * Lookups binary-search the in-memory copy; the file is a cache that recovery can always rebuild.
 */
import fs from 'node:fs';

const ENTRY_BYTES = 8;

export class OffsetIndex {
  private relOffsets: Uint32Array;
  private positions: Uint32Array;
  private count = 0;
  private fd: number;

  private constructor(
    readonly path: string,
    readonly baseOffset: number,
  ) {
    this.relOffsets = new Uint32Array(64);
    this.positions = new Uint32Array(64);
    this.fd = fs.openSync(path, 'a+');
  }

  /**
   * Opens the index at `path` and loads its entries. An index whose entries are not strictly increasing
   * or point past `logBytes` is reported as invalid (`null`) so the caller can rebuild it.
   * @param logBytes size of the segment's log file, in bytes
   */
  static load(path: string, baseOffset: number, logBytes: number): OffsetIndex | null {
    const index = new OffsetIndex(path, baseOffset);
    const data = fs.readFileSync(path);
    if (data.length % ENTRY_BYTES !== 0) return index.closeAndReturnNull();
    for (let p = 0; p < data.length; p += ENTRY_BYTES) {
      const rel = data.readUInt32BE(p);
      const pos = data.readUInt32BE(p + 4);
      const n = index.count;
      if (pos >= logBytes) return index.closeAndReturnNull();
      if (n > 0 && (rel <= index.relOffsets[n - 1]! || pos <= index.positions[n - 1]!)) {
        return index.closeAndReturnNull();
      }
      index.push(rel, pos);
    }
    return index;
  }

  /** Creates an empty index at `path`, replacing any file there. */
  static create(path: string, baseOffset: number): OffsetIndex {
    fs.writeFileSync(path, Buffer.alloc(0));
    return new OffsetIndex(path, baseOffset);
  }

  private closeAndReturnNull(): null {
    fs.closeSync(this.fd);
    return null;
  }

  private push(rel: number, pos: number): void {
    if (this.count === this.relOffsets.length) {
      const grow = (a: Uint32Array) => {
        const b = new Uint32Array(a.length * 2);
        b.set(a);
        return b;
      };
      this.relOffsets = grow(this.relOffsets);
      this.positions = grow(this.positions);
    }
    this.relOffsets[this.count] = rel;
    this.positions[this.count] = pos;
    this.count++;
  }

  /** Number of entries. */
  get entries(): number {
    return this.count;
  }

  /** Offset of the last entry, or the base offset when empty. */
  get lastOffset(): number {
    return this.baseOffset + (this.count === 0 ? 0 : this.relOffsets[this.count - 1]!);
  }

  /** File position of the last entry, or 0 when empty. */
  get lastPosition(): number {
    return this.count === 0 ? 0 : this.positions[this.count - 1]!;
  }

  /** Adds an entry for the batch starting at `position` whose base offset is `offset`. */
  append(offset: number, position: number): void {
    const rel = offset - this.baseOffset;
    const entry = Buffer.allocUnsafe(ENTRY_BYTES);
    entry.writeUInt32BE(rel, 0);
    entry.writeUInt32BE(position, 4);
    fs.writeSync(this.fd, entry);
    this.push(rel, position);
  }

  /**
   * The byte position from which to scan for `offset`: that of the last entry whose offset is <= `offset`,
   * or 0 when there is none.
   */
  lookup(offset: number): number {
    const rel = offset - this.baseOffset;
    let lo = 0;
    let hi = this.count - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (this.relOffsets[mid]! <= rel) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found < 0 ? 0 : this.positions[found]!;
  }

  /** Flushes the file to disk. */
  sync(): void {
    fs.fdatasyncSync(this.fd);
  }

  /** Closes the file. */
  close(): void {
    fs.closeSync(this.fd);
  }
}

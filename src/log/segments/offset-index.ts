/**
 * A segment's sparse offset index (Kafka's OffsetIndex): one 8-byte entry every `indexIntervalBytes` of
 * log, mapping a batch's base offset (relative to the segment's base offset, uint32) to the byte position
 * of that batch in the segment file (uint32), both big-endian. Entries strictly increase in both fields.
 * Lookups binary-search the in-memory copy. The segment writes the file whole when it is sealed and loads
 * it lazily; the file is a cache that recovery can always rebuild.
 */

const ENTRY_BYTES = 8;

export class OffsetIndex {
  private relOffsets = new Uint32Array(16);
  private positions = new Uint32Array(16);
  private count = 0;

  constructor(readonly baseOffset: number) {}

  /**
   * Parses an index file's bytes. An index whose entries are not strictly increasing or point past
   * `logBytes` is reported as invalid (`null`) so the caller can rebuild it.
   * @param logBytes size of the segment's log file, in bytes
   */
  static parse(data: Buffer, baseOffset: number, logBytes: number): OffsetIndex | null {
    if (data.length % ENTRY_BYTES !== 0) return null;
    const index = new OffsetIndex(baseOffset);
    for (let p = 0; p < data.length; p += ENTRY_BYTES) {
      const rel = data.readUInt32BE(p);
      const pos = data.readUInt32BE(p + 4);
      const n = index.count;
      if (pos >= logBytes) return null;
      if (n > 0 && (rel <= index.relOffsets[n - 1]! || pos <= index.positions[n - 1]!)) return null;
      index.push(rel, pos);
    }
    return index;
  }

  /** The file content: every entry, in order. */
  toBuffer(): Buffer {
    const out = Buffer.allocUnsafe(this.count * ENTRY_BYTES);
    for (let i = 0; i < this.count; i++) {
      out.writeUInt32BE(this.relOffsets[i]!, i * ENTRY_BYTES);
      out.writeUInt32BE(this.positions[i]!, i * ENTRY_BYTES + 4);
    }
    return out;
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
    this.push(offset - this.baseOffset, position);
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
}

/**
 * A segment's sparse time index (Kafka's TimeIndex): 12-byte entries `(timestamp int64, offset − baseOffset
 * uint32)`, big-endian, appended when the segment's largest timestamp grows and at least
 * `indexIntervalBytes` of log passed since the last entry, and once more when the segment is closed.
 * An entry `(T, o)` promises: every record below offset `o` in the segment has a timestamp <= T, and T is
 * the largest timestamp up to the batch at `o`. So the first record with timestamp >= t lies at or after the
 * offset of the last entry with T < t. Timestamps strictly increase; the last entry holds the segment's
 * largest timestamp once the segment is sealed. The segment writes the file whole when it is sealed and
 * loads it lazily; the file is a cache that recovery can always rebuild.
 */

const ENTRY_BYTES = 12;
const TWO_32 = 0x1_0000_0000;

export class TimeIndex {
  private timestamps = new Float64Array(16);
  private relOffsets = new Uint32Array(16);
  private count = 0;

  constructor(readonly baseOffset: number) {}

  /**
   * Parses an index file's bytes; null if of a wrong length, or not strictly increasing in both fields with
   * offsets below `nextOffset` (then the caller rebuilds it).
   */
  static parse(data: Buffer, baseOffset: number, nextOffset: number): TimeIndex | null {
    if (data.length % ENTRY_BYTES !== 0) return null;
    const index = new TimeIndex(baseOffset);
    for (let p = 0; p < data.length; p += ENTRY_BYTES) {
      const ts = data.readInt32BE(p) * TWO_32 + data.readUInt32BE(p + 4);
      const rel = data.readUInt32BE(p + 8);
      const n = index.count;
      const bad = baseOffset + rel >= nextOffset ||
        (n > 0 && (ts <= index.timestamps[n - 1]! || rel < index.relOffsets[n - 1]!));
      if (bad) return null;
      index.push(ts, rel);
    }
    return index;
  }

  /** The file content: every entry, in order. */
  toBuffer(): Buffer {
    const out = Buffer.allocUnsafe(this.count * ENTRY_BYTES);
    for (let i = 0; i < this.count; i++) {
      const ts = this.timestamps[i]!;
      const hi = Math.floor(ts / TWO_32);
      out.writeInt32BE(hi, i * ENTRY_BYTES);
      out.writeUInt32BE(ts - hi * TWO_32, i * ENTRY_BYTES + 4);
      out.writeUInt32BE(this.relOffsets[i]!, i * ENTRY_BYTES + 8);
    }
    return out;
  }

  private push(ts: number, rel: number): void {
    if (this.count === this.timestamps.length) {
      const t = new Float64Array(this.count * 2);
      t.set(this.timestamps);
      this.timestamps = t;
      const r = new Uint32Array(this.count * 2);
      r.set(this.relOffsets);
      this.relOffsets = r;
    }
    this.timestamps[this.count] = ts;
    this.relOffsets[this.count] = rel;
    this.count++;
  }

  /** The largest timestamp indexed, or -1 when empty. */
  get lastTimestamp(): number {
    return this.count === 0 ? -1 : this.timestamps[this.count - 1]!;
  }

  /** Number of entries. */
  get entries(): number {
    return this.count;
  }

  /**
   * Adds `(timestamp, offset)` if `timestamp` is above the last entry's.
   * @param offset base offset of the batch that brought the segment's largest timestamp to `timestamp`
   * @returns whether an entry was added
   */
  maybeAppend(timestamp: number, offset: number): boolean {
    if (timestamp <= this.lastTimestamp) return false;
    this.push(timestamp, offset - this.baseOffset);
    return true;
  }

  /**
   * The offset from which to scan for the first record with timestamp >= `timestamp`: that of the last entry
   * whose timestamp is below it, or the segment's base offset when there is none.
   */
  lookup(timestamp: number): number {
    let lo = 0;
    let hi = this.count - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (this.timestamps[mid]! < timestamp) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return this.baseOffset + (found < 0 ? 0 : this.relOffsets[found]!);
  }
}

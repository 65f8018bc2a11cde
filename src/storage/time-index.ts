/**
 * A segment's sparse time index (Kafka's TimeIndex): 12-byte entries `(timestamp int64, offset − baseOffset
 * uint32)`, big-endian, appended when the segment's largest timestamp grows and at least
 * `indexIntervalBytes` of log passed since the last entry, and once more when the segment is closed.
 * An entry `(T, o)` promises: every record below offset `o` in the segment has a timestamp <= T, and T is
 * the largest timestamp up to the batch at `o`. So the first record with timestamp >= t lies at or after the
 * offset of the last entry with T < t. Timestamps strictly increase; the last entry holds the segment's
 * largest timestamp once the segment is closed. The file is a cache that recovery can always rebuild.
 */
import fs from 'node:fs';

const ENTRY_BYTES = 12;
const TWO_32 = 0x1_0000_0000;

export class TimeIndex {
  private timestamps: Float64Array = new Float64Array(64);
  private relOffsets: Uint32Array = new Uint32Array(64);
  private count = 0;
  private readonly fd: number;

  private constructor(
    readonly path: string,
    readonly baseOffset: number,
  ) {
    this.fd = fs.openSync(path, 'a+');
  }

  /** Creates an empty index at `path`, replacing any file there. */
  static create(path: string, baseOffset: number): TimeIndex {
    fs.writeFileSync(path, Buffer.alloc(0));
    return new TimeIndex(path, baseOffset);
  }

  /**
   * Loads the index at `path`; null if it is missing, of a wrong length, or not strictly increasing in both
   * fields with offsets below `nextOffset` (then the caller rebuilds it).
   */
  static load(path: string, baseOffset: number, nextOffset: number): TimeIndex | null {
    if (!fs.existsSync(path)) return null;
    const data = fs.readFileSync(path);
    if (data.length % ENTRY_BYTES !== 0) return null;
    const index = new TimeIndex(path, baseOffset);
    for (let p = 0; p < data.length; p += ENTRY_BYTES) {
      const ts = data.readInt32BE(p) * TWO_32 + data.readUInt32BE(p + 4);
      const rel = data.readUInt32BE(p + 8);
      const n = index.count;
      const bad = baseOffset + rel >= nextOffset ||
        (n > 0 && (ts <= index.timestamps[n - 1]! || rel < index.relOffsets[n - 1]!));
      if (bad) {
        index.close();
        return null;
      }
      index.push(ts, rel);
    }
    return index;
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
   */
  maybeAppend(timestamp: number, offset: number): void {
    if (timestamp <= this.lastTimestamp) return;
    const rel = offset - this.baseOffset;
    const entry = Buffer.allocUnsafe(ENTRY_BYTES);
    const hi = Math.floor(timestamp / TWO_32);
    entry.writeInt32BE(hi, 0);
    entry.writeUInt32BE(timestamp - hi * TWO_32, 4);
    entry.writeUInt32BE(rel, 8);
    fs.writeSync(this.fd, entry);
    this.push(timestamp, rel);
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

  /** Flushes the file to disk. */
  sync(): void {
    fs.fdatasyncSync(this.fd);
  }

  close(): void {
    fs.closeSync(this.fd);
  }
}

/**
 * A share-partition's records read from the log and not yet handed out (share-groups.ts): the read past the window's
 * end, offered to the window in order, and the window's records until their first delivery. Records are kept as the
 * log stores them, indexed where each lies (indexRecords: nothing built per record), and handed out as
 * {@link RecordSection}s cut from the stored bytes: a record is neither decoded nor encoded on its way through the
 * broker. A redelivery's records are read from the log again ({@link indexBatches}).
 */
import { batchSize, indexRecords, LOG_OVERHEAD, readBaseOffset } from '../protocol/record-batch.js';
import type { RecordSection } from '../protocol/record-batch.js';
import type { ShareKey } from './share-partition.js';

/** The records of one stored batch: what their offset and timestamp deltas are relative to, and their bytes. */
interface Source {
  baseOffset: number;
  baseTimestamp: number;
  records: Buffer;
}

/** The records of one read from the log, indexed, in offset order. */
export interface IndexedRecords {
  /** Records indexed. */
  n: number;
  offsets: Float64Array;
  /** Each record's first and past-last byte in its source's `records`. */
  starts: Int32Array;
  ends: Int32Array;
  /** Each record's key hash (indexRecords), -1 without a key. */
  keys: Float64Array;
  /** Each record's source, an index in `sources`. */
  source: Int32Array;
  sources: Source[];
}

/**
 * The records of `batches` (whole stored batches, back to back) at or after `from`, indexed. A batch that cannot be
 * read ends them before it when records precede it (`stoppedAt`: its base offset), as a fetch's answer does, so a
 * corrupt batch never withholds the readable records before it.
 * @throws OnelogError `CORRUPT_MESSAGE` as indexRecords, when no record precedes the bad batch
 */
export function indexBatches(batches: Buffer, from: number): { ix: IndexedRecords; stoppedAt?: number } {
  let capacity = 64;
  let ix: IndexedRecords = allocate(capacity);
  for (let pos = 0; pos + LOG_OVERHEAD <= batches.length;) {
    const end = pos + batchSize(batches, pos);
    const sourceIndex = ix.sources.length;
    const before = ix.n;
    let indexed: ReturnType<typeof indexRecords>;
    try {
      indexed = indexRecords(batches, pos, (offset, start, stop, keyHash) => {
      if (offset < from) return;
      if (ix.n === capacity) ix = grow(ix, (capacity *= 2));
      ix.offsets[ix.n] = offset;
      ix.starts[ix.n] = start;
      ix.ends[ix.n] = stop;
      ix.keys[ix.n] = keyHash ?? -1;
      ix.source[ix.n] = sourceIndex;
      ix.n++;
      });
    } catch (err) {
      if (before === 0) throw err;
      ix.n = before;
      return { ix, stoppedAt: readBaseOffset(batches, pos) };
    }
    ix.sources.push(indexed);
    pos = end;
  }
  return { ix };
}

function allocate(capacity: number, sources: Source[] = []): IndexedRecords {
  return {
    n: 0, offsets: new Float64Array(capacity), starts: new Int32Array(capacity), ends: new Int32Array(capacity),
    keys: new Float64Array(capacity), source: new Int32Array(capacity), sources,
  };
}

function grow(ix: IndexedRecords, capacity: number): IndexedRecords {
  const out = allocate(capacity, ix.sources);
  out.offsets.set(ix.offsets);
  out.starts.set(ix.starts);
  out.ends.set(ix.ends);
  out.keys.set(ix.keys);
  out.source.set(ix.source);
  out.n = ix.n;
  return out;
}

/** Record `i`'s key for key order: its hash, or null without a key. */
export function keyAt(ix: IndexedRecords, i: number): ShareKey | null {
  return ix.keys[i]! < 0 ? null : ix.keys[i]!;
}

/** The index of `offset` in `ix`, or -1. */
export function indexOf(ix: IndexedRecords, offset: number): number {
  let lo = 0;
  let hi = ix.n - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const at = ix.offsets[mid]!;
    if (at === offset) return mid;
    if (at < offset) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/**
 * Sections of records added in offset order: a record whose bytes follow the last one's in the same stored batch
 * joins its section, so a run of records handed out together is one view of the stored bytes.
 */
export class SectionBuilder {
  readonly sections: RecordSection[] = [];
  private source: Source | null = null;
  private start = 0;
  private end = 0;
  private count = 0;

  /** Adds record `i` of `ix`. */
  add(ix: IndexedRecords, i: number): void {
    const source = ix.sources[ix.source[i]!]!;
    const start = ix.starts[i]!;
    if (source === this.source && start === this.end) {
      this.end = ix.ends[i]!;
      this.count++;
      return;
    }
    this.close();
    this.source = source;
    this.start = start;
    this.end = ix.ends[i]!;
    this.count = 1;
  }

  /** The sections (each a view of the stored bytes). */
  finish(): RecordSection[] {
    this.close();
    return this.sections;
  }

  private close(): void {
    if (this.source === null) return;
    const { baseOffset, baseTimestamp, records } = this.source;
    this.sections.push({ baseOffset, baseTimestamp, count: this.count, bytes: records.subarray(this.start, this.end) });
    this.source = null;
  }
}

/** A read's records with which of them are handed out. */
export interface Chunk {
  ix: IndexedRecords;
  /** 1 once a record was handed out (or is past use). */
  taken: Uint8Array;
  /** Records not yet taken. */
  left: number;
}

export class ShareReadAhead {
  /** In offset order; records of the last chunk from {@link cursor} on are not yet offered to the window. */
  private chunks: Chunk[] = [];
  private cursor = 0;
  /** Where the last read ended (past offsets compaction emptied); -1 before any. */
  private readEnd = -1;

  /** Records read and not yet offered to the window. */
  get pending(): number {
    const last = this.chunks.at(-1);
    return last === undefined ? 0 : last.ix.n - this.cursor;
  }

  /** Records read and not yet offered to the window at or after `from` (those before it are passed: the window's end passed them). */
  pendingFrom(from: number): number {
    const last = this.chunks.at(-1);
    if (last === undefined) return 0;
    const skipFrom = this.cursor;
    while (this.cursor < last.ix.n && last.ix.offsets[this.cursor]! < from) this.cursor++;
    this.pass(last, skipFrom, this.cursor);
    return this.pending;
  }

  /** The offset past the records offered so far: the next read's start when none is pending. */
  get nextOffset(): number {
    return this.readEnd;
  }

  /**
   * Takes a read from the log (whole batches from `from` on) as the records to offer next; any not offered from the
   * read before are dropped (the window's end passed them).
   * @param nextOffset where the read ended
   */
  add(batches: Buffer, from: number, nextOffset: number): void {
    const { ix, stoppedAt } = indexBatches(batches, from);
    const last = this.chunks.at(-1);
    if (last !== undefined) this.pass(last, this.cursor, last.ix.n);
    if (ix.n > 0) {
      this.chunks.push({ ix, taken: new Uint8Array(ix.n), left: ix.n });
      this.cursor = 0;
    } else this.cursor = last?.ix.n ?? 0;
    this.readEnd = stoppedAt ?? nextOffset;
    this.release();
  }

  /**
   * Up to `max` records to offer to the window, in offset order (from `from` on: those before it are passed), with
   * the offset the window ends at if it takes them all.
   */
  offer(from: number, max: number): { read: Array<{ offset: number; key: ShareKey | null }>; nextOffset: number } {
    const read: Array<{ offset: number; key: ShareKey | null }> = [];
    if (this.pendingFrom(from) === 0) return { read, nextOffset: this.readEnd };
    const { ix } = this.chunks.at(-1)!;
    const until = Math.min(ix.n, this.cursor + max);
    for (let i = this.cursor; i < until; i++) read.push({ offset: ix.offsets[i]!, key: keyAt(ix, i) });
    return { read, nextOffset: until < ix.n ? ix.offsets[until]! : this.readEnd };
  }

  /** The window took `taken` of the records {@link offer} offered: they are held until handed out. */
  offered(taken: number): void {
    this.cursor += taken;
    this.release();
  }

  /** Whether the record at `offset` is held (taken into the window, not yet handed out). */
  holds(offset: number): boolean {
    return this.find(offset) !== undefined;
  }

  /** Where the held record at `offset` lies (for {@link take}; its bytes are `ix.ends[i] - ix.starts[i]`), if it is held. */
  find(offset: number): { chunk: Chunk; ix: IndexedRecords; i: number } | undefined {
    const chunk = this.chunkOf(offset);
    if (chunk === undefined) return undefined;
    const i = indexOf(chunk.ix, offset);
    return i >= 0 && chunk.taken[i] === 0 && (chunk !== this.chunks.at(-1) || i < this.cursor) ? { chunk, ix: chunk.ix, i } : undefined;
  }

  /** Hands out a held record {@link find} found into `sections`: it is held no more. */
  take(found: { chunk: Chunk; i: number }, sections: SectionBuilder): void {
    sections.add(found.chunk.ix, found.i);
    this.pass(found.chunk, found.i, found.i + 1);
    this.release();
  }

  /** Drops what lies below `offset` (the log start moved past it). */
  dropBelow(offset: number): void {
    for (const c of this.chunks) {
      for (let i = 0; i < c.ix.n && c.ix.offsets[i]! < offset; i++) this.pass(c, i, i + 1);
    }
    this.release();
  }

  /** Marks records `[from, to)` of `c` as past use. */
  private pass(c: Chunk, from: number, to: number): void {
    for (let i = from; i < to; i++) {
      if (c.taken[i] === 0) {
        c.taken[i] = 1;
        c.left--;
      }
    }
  }

  /** Lets go of the chunks whose every record is past use, but the last (the {@link cursor} is in it) until the next read. */
  private release(): void {
    const last = this.chunks.at(-1);
    if (this.chunks.some((c) => c.left === 0 && c !== last)) this.chunks = this.chunks.filter((c) => c.left > 0 || c === last);
  }

  /** The chunk whose offsets span `offset`, if any. */
  private chunkOf(offset: number): Chunk | undefined {
    for (const c of this.chunks) if (c.ix.n > 0 && c.ix.offsets[0]! <= offset && offset <= c.ix.offsets[c.ix.n - 1]!) return c;
    return undefined;
  }
}

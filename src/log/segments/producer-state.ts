/**
 * The idempotent producer's state in one partition (Kafka's ProducerStateManager): for every producer id
 * seen, its epoch and its last {@link RETAINED_BATCHES_PER_PRODUCER} batches (sequence range and offsets).
 * {@link ProducerStateManager.check} runs before a batch gets offsets and says whether it goes on, is a
 * retry of a stored batch (answer with the original offsets), or is refused; {@link ProducerStateManager.update}
 * records it once written. Both are O(1) and allocate nothing on the accepted path.
 *
 * Durability (Kafka's snapshots, adapted): the state is rebuilt on open from a snapshot file
 * `<offset>.snapshot` (the state after every batch below `offset`) and a replay of the batch headers from
 * that offset to the log end (no record is decoded). Snapshots are taken when a segment rolls (at the new
 * segment's base offset), at a clean close (at the log end offset), and, for a partition that had no state
 * at its last roll, just before the first idempotent batch goes into the active segment. One invariant
 * makes the load cheap and correct, also after a crash:
 *
 * > For the recovery point R in `recovery-point.json`: the newest readable snapshot at or below R (and the
 * > log end), plus a replay from it, gives the state. If there is none, the state at R was empty and no
 * > idempotent batch lies after R.
 *
 * The recovery point moves only at a roll (to the new segment's base) and at a clean close (to the log end);
 * opening and writing leave it, which is why a snapshot above the log end (a tail cut by recovery) is deleted
 * on load.
 *
 * So a partition that never saw an idempotent batch has no snapshot file and pays nothing on open, and one
 * that did reads at most the active segment's headers after a crash (nothing after a clean close). A
 * snapshot is written before the recovery point moves to its offset, and older ones are deleted only after.
 * An unreadable snapshot is skipped (logged); when none readable is left, the whole log is replayed.
 *
 * Forgetting: a producer whose newest batch lies wholly below the log start offset (retention,
 * delete-records) is forgotten, at once and on every rebuild; and at most `maxProducers` producers are kept,
 * the one that appended least recently evicted first. A forgotten producer's next batch must start at
 * sequence 0, else it gets `UNKNOWN_PRODUCER_ID`.
 */
import { OnelogError } from '../../protocol/errors.js';
import type { BatchHeader } from '../../protocol/record-batch.js';
import {
  deleteProducerSnapshot, producerSnapshotOffsets, readProducerSnapshot, removeProducerSnapshotTemps, syncDirectory,
  writeProducerSnapshot,
} from './checkpoint.js';
import type { FileCache } from './file-cache.js';
import type { Logger } from '../../common/logger.js';
import type { LogSegment } from './segment.js';

/** Batches remembered per producer for retry detection (Kafka's NUM_BATCHES_TO_RETAIN, its max.in.flight bound). */
export const RETAINED_BATCHES_PER_PRODUCER = 5;
/** Producers remembered per partition unless {@link ProducerStateOptions.maxProducers} says otherwise. */
export const DEFAULT_MAX_PRODUCERS = 10_000;
/** Sequences are int32 and wrap from this to 0, as Kafka's. */
export const MAX_SEQUENCE = 0x7fff_ffff;
const SNAPSHOT_VERSION = 1;
const R = RETAINED_BATCHES_PER_PRODUCER;

/** The sequence of a batch's last record: `baseSequence + lastOffsetDelta`, wrapping past {@link MAX_SEQUENCE}. */
export function lastSequenceOf(baseSequence: number, lastOffsetDelta: number): number {
  return baseSequence > MAX_SEQUENCE - lastOffsetDelta
    ? lastOffsetDelta - (MAX_SEQUENCE - baseSequence) - 1
    : baseSequence + lastOffsetDelta;
}

/** The sequence after `sequence` (0 after {@link MAX_SEQUENCE}). */
export function nextSequence(sequence: number): number {
  return sequence === MAX_SEQUENCE ? 0 : sequence + 1;
}

/** The producer fields of a batch header that the state needs. */
export type ProducerBatchFields = Pick<BatchHeader, 'producerId' | 'producerEpoch' | 'baseSequence' | 'lastOffsetDelta'>;

/** One stored batch of a producer. */
export interface ProducerBatchMetadata {
  baseSequence: number;
  lastSequence: number;
  baseOffset: number;
  lastOffset: number;
}

/** What the partition remembers of one producer. */
export interface ProducerStateView {
  producerId: number;
  producerEpoch: number;
  /** The last batches stored, oldest first; at most {@link RETAINED_BATCHES_PER_PRODUCER}. */
  batches: ProducerBatchMetadata[];
}

/** Where the stored copy of a retried batch lies. */
export interface DuplicateBatch {
  baseOffset: number;
  lastOffset: number;
}

/** The content of a `<offset>.snapshot` file (JSON). */
export interface ProducerSnapshot {
  version: 1;
  /** The state after every batch below this offset. */
  offset: number;
  /** Least recently appended first; each batch is `[baseSequence, lastSequence, baseOffset, lastOffset]`, oldest first. */
  producers: { producerId: number; producerEpoch: number; batches: [number, number, number, number][] }[];
}

/** Options of a partition's producer state. */
export interface ProducerStateOptions {
  /** Producers remembered; past it, the one that appended least recently is forgotten. @default 10000 */
  maxProducers: number;
  logger: Logger;
  topic: string;
  partition: number;
  /** Snapshot files are read and written through this cache; unused by a state kept in memory only. */
  files?: FileCache;
}

/** Where the log stands when its producer state is loaded. */
export interface ProducerStateLoad {
  /** From `recovery-point.json`; undefined when the file is missing. */
  recoveryPoint: number | undefined;
  logStartOffset: number;
  logEndOffset: number;
}

/** One producer: its epoch, the last batches in a ring, and its place in the least-recently-appended list. */
class ProducerEntry {
  /** Ring of `[baseSequence, lastSequence, baseOffset, lastOffset]` per slot. */
  readonly ring = new Float64Array(4 * R);
  count = 0;
  /** Slot of the newest batch. */
  newest = 0;
  older: ProducerEntry | null = null;
  newer: ProducerEntry | null = null;

  constructor(
    readonly producerId: number,
    public epoch: number,
  ) {}

  get lastSequence(): number {
    return this.ring[this.newest * 4 + 1]!;
  }

  get lastOffset(): number {
    return this.ring[this.newest * 4 + 3]!;
  }

  push(baseSequence: number, lastSequence: number, baseOffset: number, lastOffset: number): void {
    this.newest = this.count === 0 ? 0 : (this.newest + 1) % R;
    if (this.count < R) this.count++;
    const at = this.newest * 4;
    this.ring[at] = baseSequence;
    this.ring[at + 1] = lastSequence;
    this.ring[at + 2] = baseOffset;
    this.ring[at + 3] = lastOffset;
  }

  /** The ring slot holding exactly this sequence range, or -1. */
  find(baseSequence: number, lastSequence: number): number {
    for (let i = 0; i < this.count; i++) {
      if (this.ring[i * 4] === baseSequence && this.ring[i * 4 + 1] === lastSequence) return i;
    }
    return -1;
  }

  /** The stored batches, oldest first. */
  batches(): [number, number, number, number][] {
    const out: [number, number, number, number][] = [];
    for (let k = this.count - 1; k >= 0; k--) {
      const at = ((this.newest - k + R) % R) * 4;
      out.push([this.ring[at]!, this.ring[at + 1]!, this.ring[at + 2]!, this.ring[at + 3]!]);
    }
    return out;
  }
}

export class ProducerStateManager {
  private readonly entries = new Map<number, ProducerEntry>();
  /** Least and most recently appended producers: appends come in offset order, so this is also newest-batch order. */
  private oldest: ProducerEntry | null = null;
  private newest: ProducerEntry | null = null;
  /** Snapshot files on disk, ascending offsets. */
  private snapshots: number[] = [];
  /** Snapshots found unreadable on load: deleted at the next roll or clean close. */
  private readonly unreadable = new Set<number>();
  private activeBaseOffset = 0;
  /** Whether a snapshot exists at the active segment's base offset (see the invariant above). */
  private activeSnapshot = false;

  /** @param dir the partition directory holding the snapshots; null for a state kept in memory only */
  private constructor(
    readonly dir: string | null,
    private readonly options: ProducerStateOptions,
  ) {}

  /** An empty state not tied to snapshot files: the snapshot methods do nothing (for tests and tools). */
  static inMemory(options: ProducerStateOptions): ProducerStateManager {
    return new ProducerStateManager(null, options);
  }

  /**
   * Rebuilds the state of the log in `dir` on open: the newest readable snapshot at or below the recovery
   * point (and the log end), then the batch headers from its offset to the log end, then the producers
   * below the log start offset forgotten. Snapshots above the log end (a truncated tail) are never used.
   * When the replay crossed the active segment's base offset, the state there is snapshotted, so the next
   * open after a crash reads only the active segment. Snapshots above the log end (a tail recovery cut) are
   * deleted.
   * @param segments the log's segments, oldest first, recovered
   * @param files the names in `dir`, listed before open
   */
  static load(
    dir: string, segments: readonly LogSegment[], files: readonly string[], at: ProducerStateLoad, options: ProducerStateOptions,
  ): ProducerStateManager {
    const m = new ProducerStateManager(dir, options);
    removeProducerSnapshotTemps(dir, files);
    m.snapshots = producerSnapshotOffsets(files);
    const active = segments[segments.length - 1]!;
    m.activeBaseOffset = active.baseOffset;
    const bound = at.recoveryPoint === undefined ? -1 : Math.min(at.recoveryPoint, at.logEndOffset);
    let loadedFrom = -1;
    for (let i = m.snapshots.length - 1; i >= 0 && loadedFrom < 0; i--) {
      const offset = m.snapshots[i]!;
      if (offset > bound) continue;
      try {
        m.restore(readProducerSnapshot(options.files!, dir, offset), offset);
        loadedFrom = offset;
      } catch (err) {
        if (!(err instanceof OnelogError)) throw err;
        m.clear();
        m.unreadable.add(offset);
        options.logger.warn({ ...m.where(), offset, err: err.message }, 'skipped an unreadable producer state snapshot');
      }
    }
    // No snapshot at or below the recovery point: by the invariant, nothing to replay, unless one was unreadable
    // or the recovery point is unknown; then replay the whole log.
    const start = loadedFrom >= 0 ? loadedFrom
      : at.recoveryPoint !== undefined && m.unreadable.size === 0 ? -1 : segments[0]!.baseOffset;
    if (start >= 0) {
      let atActive: ProducerSnapshot | null = null;
      if (start <= active.baseOffset) {
        for (const s of segments) if (s !== active && s.nextOffset > start) m.replay(s, start, at.logEndOffset);
        if (loadedFrom !== active.baseOffset) atActive = m.toSnapshot(active.baseOffset);
      }
      const seen = m.replay(active, Math.max(start, active.baseOffset), at.logEndOffset);
      if (atActive !== null && (atActive.producers.length > 0 || seen > 0)) m.writeSnapshot(active.baseOffset, atActive);
    }
    // Snapshots above the log end describe a tail that recovery cut off: new batches will take their offsets.
    if (m.snapshots.some((offset) => offset > at.logEndOffset)) m.retainOnly(m.snapshots.filter((offset) => offset <= at.logEndOffset));
    m.activeSnapshot = m.snapshots.includes(active.baseOffset) && !m.unreadable.has(active.baseOffset);
    m.evictBelow(at.logStartOffset);
    return m;
  }

  /** A copy of the state, in memory only: checks and updates of it leave this one as it is. */
  copy(): ProducerStateManager {
    const c = new ProducerStateManager(null, this.options);
    c.restore(this.toSnapshot(Number.MAX_SAFE_INTEGER), Number.MAX_SAFE_INTEGER);
    return c;
  }

  /** Producers remembered. */
  get size(): number {
    return this.entries.size;
  }

  /**
   * Checks an idempotent batch (producer id >= 0) against the state, before it gets offsets.
   * @returns null if the batch is to be appended; where its stored copy lies if it is a retry of one of
   *   the producer's last {@link RETAINED_BATCHES_PER_PRODUCER} batches (same epoch and sequence range)
   * @throws OnelogError `INVALID_PRODUCER_EPOCH` (epoch older than stored), `OUT_OF_ORDER_SEQUENCE` (a new
   *   epoch not starting at 0, or a sequence not following the last stored), `UNKNOWN_PRODUCER_ID` (an
   *   unknown producer not starting at 0), `INVALID_RECORD` (negative epoch or sequence)
   */
  check(batch: ProducerBatchFields): DuplicateBatch | null {
    const { producerId, producerEpoch, baseSequence } = batch;
    if (producerEpoch < 0 || baseSequence < 0) {
      throw new OnelogError(
        'INVALID_RECORD',
        `producer ${producerId} sends epoch ${producerEpoch} and sequence ${baseSequence} to ${this.name()}: an idempotent batch needs both >= 0`,
        { ...this.where(), producerId, producerEpoch, baseSequence },
      );
    }
    const entry = this.entries.get(producerId);
    if (entry === undefined) {
      if (baseSequence === 0) return null;
      throw new OnelogError(
        'UNKNOWN_PRODUCER_ID',
        `producer ${producerId} is not known in ${this.name()} (never seen, or forgotten after its batches expired or it ` +
        `was evicted) and its batch starts at sequence ${baseSequence}, not 0`,
        { ...this.where(), producerId, producerEpoch, baseSequence },
      );
    }
    if (producerEpoch < entry.epoch) {
      throw new OnelogError(
        'INVALID_PRODUCER_EPOCH',
        `producer ${producerId} sends epoch ${producerEpoch} to ${this.name()}, older than its epoch ${entry.epoch} there: a newer instance took over`,
        { ...this.where(), producerId, producerEpoch, currentEpoch: entry.epoch },
      );
    }
    let expectedSequence = 0;
    if (producerEpoch === entry.epoch) {
      const slot = entry.find(baseSequence, lastSequenceOf(baseSequence, batch.lastOffsetDelta));
      if (slot >= 0) return { baseOffset: entry.ring[slot * 4 + 2]!, lastOffset: entry.ring[slot * 4 + 3]! };
      expectedSequence = nextSequence(entry.lastSequence);
    }
    if (baseSequence === expectedSequence) return null;
    throw new OnelogError(
      'OUT_OF_ORDER_SEQUENCE',
      producerEpoch === entry.epoch
        ? `producer ${producerId} (epoch ${producerEpoch}) sends sequence ${baseSequence} to ${this.name()}, expected ${expectedSequence}`
        : `producer ${producerId} starts epoch ${producerEpoch} at sequence ${baseSequence} in ${this.name()}: a new epoch starts at 0`,
      { ...this.where(), producerId, producerEpoch, expectedSequence, baseSequence },
    );
  }

  /**
   * Records an idempotent batch written at `baseOffset` (after {@link check}, or replaying the log). A batch
   * of a new epoch, or one that does not follow the last stored (a forgotten producer starting over),
   * replaces the remembered batches.
   */
  update(batch: ProducerBatchFields, baseOffset: number): void {
    const { producerId, producerEpoch, baseSequence } = batch;
    let entry = this.entries.get(producerId);
    if (entry === undefined) {
      if (this.entries.size >= this.options.maxProducers && this.oldest !== null) this.forget(this.oldest);
      entry = new ProducerEntry(producerId, producerEpoch);
      this.entries.set(producerId, entry);
    } else {
      this.unlink(entry);
      if (producerEpoch !== entry.epoch || baseSequence !== nextSequence(entry.lastSequence)) {
        entry.epoch = producerEpoch;
        entry.count = 0;
      }
    }
    this.linkNewest(entry);
    entry.push(baseSequence, lastSequenceOf(baseSequence, batch.lastOffsetDelta), baseOffset, baseOffset + batch.lastOffsetDelta);
  }

  /**
   * Forgets every producer whose newest batch ends below `logStartOffset` (its batches expired or were deleted).
   * @returns how many were forgotten
   */
  evictBelow(logStartOffset: number): number {
    let n = 0;
    while (this.oldest !== null && this.oldest.lastOffset < logStartOffset) {
      this.forget(this.oldest);
      n++;
    }
    return n;
  }

  /** What is remembered of `producerId`, or undefined. */
  get(producerId: number): ProducerStateView | undefined {
    const entry = this.entries.get(producerId);
    if (entry === undefined) return undefined;
    return {
      producerId,
      producerEpoch: entry.epoch,
      batches: entry.batches().map(([baseSequence, lastSequence, baseOffset, lastOffset]) => ({ baseSequence, lastSequence, baseOffset, lastOffset })),
    };
  }

  /** The state as snapshot content, taken at `offset` (every batch remembered lies below it). */
  toSnapshot(offset: number): ProducerSnapshot {
    const producers: ProducerSnapshot['producers'] = [];
    for (let e = this.oldest; e !== null; e = e.newer) producers.push({ producerId: e.producerId, producerEpoch: e.epoch, batches: e.batches() });
    return { version: SNAPSHOT_VERSION, offset, producers };
  }

  // ---- snapshot files, in step with the log's rolls, close and recovery point --------------------

  /** Before a roll at `offset` (before the recovery point moves there): snapshots the state, if any. */
  snapshotForRoll(offset: number): void {
    if (this.entries.size > 0) this.writeSnapshot(offset, this.toSnapshot(offset));
  }

  /**
   * After the roll at `offset`, once the recovery point is there: the new active segment starts there, and
   * every other snapshot is no longer needed.
   */
  rolled(offset: number): void {
    this.activeBaseOffset = offset;
    this.activeSnapshot = this.snapshots.includes(offset);
    this.retainOnly(this.activeSnapshot ? [offset] : []);
  }

  /** At a clean close, before the clean recovery point is written at `offset` (the log end): snapshots the state, if any. */
  snapshotForClose(offset: number): void {
    if (this.entries.size > 0) this.writeSnapshot(offset, this.toSnapshot(offset));
  }

  /**
   * After a clean close moved the recovery point to `offset` (the log end): keeps only the snapshot there and
   * the one at the active segment's base, if any; those between describe states nothing will load again.
   */
  closed(offset: number): void {
    this.retainOnly(this.activeSnapshot ? [this.activeBaseOffset, offset] : [offset]);
  }

  /**
   * Before an idempotent batch goes into the active segment: makes sure a snapshot exists at its base offset,
   * so that a crash from here on replays the segment. Writes at most once per segment (none had state at
   * the roll, so the state it writes is empty).
   */
  beforeAppend(): void {
    if (this.activeSnapshot) return;
    this.writeSnapshot(this.activeBaseOffset, this.toSnapshot(this.activeBaseOffset));
    this.activeSnapshot = true;
  }

  private writeSnapshot(offset: number, content: ProducerSnapshot): void {
    if (this.dir === null) return;
    writeProducerSnapshot(this.options.files!, this.dir, offset, content);
    this.unreadable.delete(offset);
    if (!this.snapshots.includes(offset)) {
      this.snapshots.push(offset);
      this.snapshots.sort((a, b) => a - b);
    }
  }

  /** Deletes every snapshot file but those at `keep`, and syncs the directory if any went. */
  private retainOnly(keep: readonly number[]): void {
    const drop = this.snapshots.filter((offset) => !keep.includes(offset));
    if (this.dir === null || drop.length === 0) return;
    for (const offset of drop) deleteProducerSnapshot(this.dir, offset);
    this.snapshots = this.snapshots.filter((offset) => keep.includes(offset));
    for (const offset of drop) this.unreadable.delete(offset);
    syncDirectory(this.options.files!, this.dir);
  }

  /** Replays the idempotent batches of `segment` from `from` to `to` (headers only); returns how many. */
  private replay(segment: LogSegment, from: number, to: number): number {
    let n = 0;
    if (from >= to) return n;
    segment.forEachBatch(from, (header) => {
      if (header.baseOffset >= to) return false;
      if (header.baseOffset >= from && header.producerId >= 0) {
        this.update(header, header.baseOffset);
        n++;
      }
      return true;
    });
    return n;
  }

  /** Replaces the state with a snapshot's. @throws OnelogError `CORRUPT_MESSAGE` if it is not a valid snapshot taken at `offset` */
  private restore(content: unknown, offset: number): void {
    const bad = (why: string) => new OnelogError('CORRUPT_MESSAGE', `producer snapshot at ${offset} in ${this.dir} is invalid: ${why}`, { ...this.where(), offset });
    const s = content as Partial<ProducerSnapshot> | null;
    if (typeof s !== 'object' || s === null || s.version !== SNAPSHOT_VERSION) throw bad(`not a version ${SNAPSHOT_VERSION} snapshot`);
    if (s.offset !== offset) throw bad(`it says offset ${String(s.offset)}`);
    if (!Array.isArray(s.producers)) throw bad('no producers list');
    const isInt = (n: unknown, min: number, max: number) => Number.isSafeInteger(n) && (n as number) >= min && (n as number) <= max;
    const loaded: ProducerEntry[] = [];
    for (const p of s.producers as unknown[]) {
      const { producerId, producerEpoch, batches } = (p ?? {}) as Partial<ProducerSnapshot['producers'][number]>;
      if (!isInt(producerId, 0, Number.MAX_SAFE_INTEGER) || !isInt(producerEpoch, 0, 0x7fff) || !Array.isArray(batches) ||
        batches.length === 0 || batches.length > R) throw bad(`producer entry ${JSON.stringify(p)}`);
      const entry = new ProducerEntry(producerId!, producerEpoch!);
      for (const b of batches) {
        if (!Array.isArray(b) || b.length !== 4 || !isInt(b[0], 0, MAX_SEQUENCE) || !isInt(b[1], 0, MAX_SEQUENCE) ||
          !isInt(b[2], 0, offset - 1) || !isInt(b[3], b[2], offset - 1)) throw bad(`batch ${JSON.stringify(b)} of producer ${producerId}`);
        entry.push(b[0], b[1], b[2], b[3]);
      }
      loaded.push(entry);
    }
    this.clear();
    loaded.sort((a, b) => a.lastOffset - b.lastOffset);
    for (const entry of loaded) {
      if (this.entries.has(entry.producerId)) throw bad(`producer ${entry.producerId} appears twice`);
      if (this.entries.size >= this.options.maxProducers) this.forget(this.oldest!);
      this.entries.set(entry.producerId, entry);
      this.linkNewest(entry);
    }
  }

  private clear(): void {
    this.entries.clear();
    this.oldest = this.newest = null;
  }

  private forget(entry: ProducerEntry): void {
    this.unlink(entry);
    this.entries.delete(entry.producerId);
  }

  private unlink(entry: ProducerEntry): void {
    if (entry.older) entry.older.newer = entry.newer;
    else this.oldest = entry.newer;
    if (entry.newer) entry.newer.older = entry.older;
    else this.newest = entry.older;
    entry.older = entry.newer = null;
  }

  private linkNewest(entry: ProducerEntry): void {
    entry.older = this.newest;
    if (this.newest) this.newest.newer = entry;
    else this.oldest = entry;
    this.newest = entry;
  }

  private name(): string {
    return `${this.options.topic}/${this.options.partition}`;
  }

  private where(): { topic: string; partition: number } {
    return { topic: this.options.topic, partition: this.options.partition };
  }
}

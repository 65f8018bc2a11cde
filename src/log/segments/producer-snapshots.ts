/**
 * The segment engine keeps a partition's idempotent producer state ({@link ProducerStateManager}, the log's
 * rules) durable with Kafka's snapshots, adapted: the state is rebuilt on open from a snapshot file
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
 */
import { OnelogError } from '../../protocol/errors.js';
import type { Logger } from '../../common/logger.js';
import { MAX_SEQUENCE, RETAINED_BATCHES_PER_PRODUCER } from '../producer-state.js';
import type { ProducerStateManager, RememberedProducer } from '../producer-state.js';
import {
  deleteProducerSnapshot, producerSnapshotOffsets, readProducerSnapshot, removeProducerSnapshotTemps, syncDirectory,
  writeProducerSnapshot,
} from './checkpoint.js';
import type { FileCache } from './file-cache.js';
import type { LogSegment } from './segment.js';

const SNAPSHOT_VERSION = 1;

/** The content of a `<offset>.snapshot` file (JSON). */
export interface ProducerSnapshot {
  version: 1;
  /** The state after every batch below this offset. */
  offset: number;
  /** Least recently appended first; each batch is `[baseSequence, lastSequence, baseOffset, lastOffset]`, oldest first. */
  producers: RememberedProducer[];
}

/** Options of a partition's producer snapshots. */
export interface ProducerSnapshotOptions {
  logger: Logger;
  topic: string;
  partition: number;
  /** Snapshot files are read and written through this cache. */
  files: FileCache;
}

/** Where the log stands when its producer state is loaded. */
export interface ProducerStateLoad {
  /** From `recovery-point.json`; undefined when the file is missing. */
  recoveryPoint: number | undefined;
  logStartOffset: number;
  logEndOffset: number;
}

export class ProducerSnapshots {
  /** Snapshot files on disk, ascending offsets. */
  private snapshots: number[] = [];
  /** Snapshots found unreadable on load: deleted at the next roll or clean close. */
  private readonly unreadable = new Set<number>();
  private activeBaseOffset = 0;
  /** Whether a snapshot exists at the active segment's base offset (see the invariant above). */
  private activeSnapshot = false;

  /** @param dir the partition directory holding the snapshots */
  private constructor(
    readonly dir: string,
    private readonly state: ProducerStateManager,
    private readonly options: ProducerSnapshotOptions,
  ) {}

  /**
   * Rebuilds the state of the log in `dir` on open, into `state` (empty): the newest readable snapshot at or
   * below the recovery point (and the log end), then the batch headers from its offset to the log end, then
   * the producers below the log start offset forgotten. Snapshots above the log end (a truncated tail) are
   * never used. When the replay crossed the active segment's base offset, the state there is snapshotted, so
   * the next open after a crash reads only the active segment. Snapshots above the log end (a tail recovery
   * cut) are deleted.
   * @param segments the log's segments, oldest first, recovered
   * @param files the names in `dir`, listed before open
   * @returns the snapshots of `state`, to keep in step with the log's rolls, close and recovery point
   */
  static load(
    dir: string, state: ProducerStateManager, segments: readonly LogSegment[], files: readonly string[], at: ProducerStateLoad,
    options: ProducerSnapshotOptions,
  ): ProducerSnapshots {
    const m = new ProducerSnapshots(dir, state, options);
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
        m.restore(readProducerSnapshot(options.files, dir, offset), offset);
        loadedFrom = offset;
      } catch (err) {
        if (!(err instanceof OnelogError)) throw err;
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
    state.evictBelow(at.logStartOffset);
    return m;
  }

  /** The state as snapshot content, taken at `offset` (every batch remembered lies below it). */
  private toSnapshot(offset: number): ProducerSnapshot {
    return { version: SNAPSHOT_VERSION, offset, producers: this.state.producers() };
  }

  /** Before a roll at `offset` (before the recovery point moves there): snapshots the state, if any. */
  snapshotForRoll(offset: number): void {
    if (this.state.size > 0) this.writeSnapshot(offset, this.toSnapshot(offset));
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
    if (this.state.size > 0) this.writeSnapshot(offset, this.toSnapshot(offset));
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
    writeProducerSnapshot(this.options.files, this.dir, offset, content);
    this.unreadable.delete(offset);
    if (!this.snapshots.includes(offset)) {
      this.snapshots.push(offset);
      this.snapshots.sort((a, b) => a - b);
    }
  }

  /** Deletes every snapshot file but those at `keep`, and syncs the directory if any went. */
  private retainOnly(keep: readonly number[]): void {
    const drop = this.snapshots.filter((offset) => !keep.includes(offset));
    if (drop.length === 0) return;
    for (const offset of drop) deleteProducerSnapshot(this.dir, offset);
    this.snapshots = this.snapshots.filter((offset) => keep.includes(offset));
    for (const offset of drop) this.unreadable.delete(offset);
    syncDirectory(this.options.files, this.dir);
  }

  /** Replays the idempotent batches of `segment` from `from` to `to` (headers only); returns how many. */
  private replay(segment: LogSegment, from: number, to: number): number {
    let n = 0;
    if (from >= to) return n;
    segment.forEachBatch(from, (header) => {
      if (header.baseOffset >= to) return false;
      if (header.baseOffset >= from && header.producerId >= 0) {
        this.state.update(header, header.baseOffset);
        n++;
      }
      return true;
    });
    return n;
  }

  /**
   * Replaces the state with a snapshot's; leaves it as it was if the snapshot is invalid.
   * @throws OnelogError `CORRUPT_MESSAGE` if it is not a valid snapshot taken at `offset`
   */
  private restore(content: unknown, offset: number): void {
    const bad = (why: string) => new OnelogError('CORRUPT_MESSAGE', `producer snapshot at ${offset} in ${this.dir} is invalid: ${why}`, { ...this.where(), offset });
    const s = content as Partial<ProducerSnapshot> | null;
    if (typeof s !== 'object' || s === null || s.version !== SNAPSHOT_VERSION) throw bad(`not a version ${SNAPSHOT_VERSION} snapshot`);
    if (s.offset !== offset) throw bad(`it says offset ${String(s.offset)}`);
    if (!Array.isArray(s.producers)) throw bad('no producers list');
    const isInt = (n: unknown, min: number, max: number) => Number.isSafeInteger(n) && (n as number) >= min && (n as number) <= max;
    for (const p of s.producers as unknown[]) {
      const { producerId, producerEpoch, batches } = (p ?? {}) as Partial<RememberedProducer>;
      if (!isInt(producerId, 0, Number.MAX_SAFE_INTEGER) || !isInt(producerEpoch, 0, 0x7fff) || !Array.isArray(batches) ||
        batches.length === 0 || batches.length > RETAINED_BATCHES_PER_PRODUCER) throw bad(`producer entry ${JSON.stringify(p)}`);
      for (const b of batches) {
        if (!Array.isArray(b) || b.length !== 4 || !isInt(b[0], 0, MAX_SEQUENCE) || !isInt(b[1], 0, MAX_SEQUENCE) ||
          !isInt(b[2], 0, offset - 1) || !isInt(b[3], b[2], offset - 1)) throw bad(`batch ${JSON.stringify(b)} of producer ${producerId}`);
      }
    }
    const ids = new Set<number>();
    for (const { producerId } of s.producers) {
      if (ids.has(producerId)) throw bad(`producer ${producerId} appears twice`);
      ids.add(producerId);
    }
    this.state.replace(s.producers);
  }

  private where(): { topic: string; partition: number } {
    return { topic: this.options.topic, partition: this.options.partition };
  }
}

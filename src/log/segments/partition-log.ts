/**
 * One partition's log (Kafka's Log/UnifiedLog on one replica): an ordered list of {@link LogSegment}s, the
 * log start offset (persisted in a checkpoint, with the reason for its last move), the log end offset and
 * the high watermark. Every append writes its batch to the page cache before it is acknowledged, so an
 * acknowledged record survives a crash of the process under every flush policy; when it reaches the disk
 * depends on the topic's `flushPolicy`:
 *
 * - `always`: the append resolves after an fdatasync that covers it; appends that arrive while one runs
 *   share the next one (group commit). Readers see only synced records: the high watermark follows the sync.
 * - `interval`: the append resolves at once; an fdatasync runs `flushMs` after the first unsynced append, or
 *   as soon as `flushMessages` records are unsynced. A power loss can take the last `flushMs` of records.
 * - `never`: the append resolves at once; the OS writes the pages back when it decides.
 *
 * A disk error stops the partition's writes for good (until the broker restarts): a failed fdatasync (never
 * tried again, see log-flusher.ts), a failed write other than a full disk, or a write whose partly written tail
 * could not be cut off. From then on appends, deletes, retention and compaction throw the partition's
 * {@link failure} (`STORAGE_ERROR`, logged once); reads go on. A full disk (ENOSPC) during an append is not a
 * failure: the write is undone, the append refused with `RESOURCE_EXHAUSTED`, and appends resume once space is free.
 */
import { isCompacted } from '../../protocol/types.js';
import fs from 'node:fs';
import path from 'node:path';
import type { Clock } from '../../common/clock.js';
import { OnelogError } from '../../protocol/errors.js';
import { decodeRecords, encodeBatch, readBatchHeader, setBaseOffset } from '../../protocol/record-batch.js';
import { coverRecords, takeRecords } from '../../protocol/batch-reads.js';
import type { RecordInput, StoredRecord } from '../../protocol/types.js';
import type { Logger } from '../../common/logger.js';
import {
  listDirectory, readLogStartCheckpoint, readRecoveryCheckpoint, syncDirectory, writeLogStartCheckpoint, writeRecoveryCheckpoint,
} from './checkpoint.js';
import type { FileCache } from './file-cache.js';
import { defaultLogCleaner } from '../compaction.js';
import type { LogCleaner } from '../compaction.js';
import { cleanLog } from './log-cleaner.js';
import type { CompactionStats } from '../../protocol/topics.js';
import { logLogStartMove } from '../log-start.js';
import type { LogStartReason } from '../log-start.js';
import { DEFAULT_MAX_PRODUCERS, ProducerStateManager } from '../producer-state.js';
import type { DuplicateBatch, ProducerStateView } from '../producer-state.js';
import { ProducerSnapshots } from './producer-snapshots.js';
import { retentionQuestions, retentionTarget } from '../retention.js';
import { sizeBoundary } from './retention.js';
import { unreadRange } from './unread-range.js';
import type { UnreadRange } from '../partition.js';
import { LogFlusher } from './log-flusher.js';
import { LongPoll } from './long-poll.js';
import { corruptBatchMessage, LogSegment } from './segment.js';
import type { SegmentOptions } from './segment.js';
import type { CorruptBatch } from '../partition.js';
import { storageError } from './storage-errors.js';
import { makeDir } from '../../common/file-modes.js';
import type { Partition, ReadLimits } from '../partition.js';
import type { LogConfig, AppendResult } from '../partition.js';
export type { ReadLimits } from '../partition.js';




/** Options of a partition log. */
export interface PartitionLogOptions {
  /** The topic's settings; {@link PartitionLog.setConfig} changes them on a running log. */
  config: LogConfig;
  /** Bytes of log between two offset index entries. @default 4096 */
  indexIntervalBytes: number;
  clock: Clock;
  logger: Logger;
  /** Every descriptor the log takes (segments, indexes, checkpoints, snapshots) goes through this cache. */
  files: FileCache;
  /**
   * Called once, before the first write of this log's life in memory (an append, a roll) touches the active
   * segment: the log manager notes that the partition is to be recovered at start-up if the process dies
   * from here on (see unclean-journal.ts).
   */
  beforeFirstWrite?: () => Promise<void> | undefined;
  /**
   * Validate the whole active segment and rebuild its indexes even when the recovery point says the last
   * close was clean: for a partition written since (the log manager's journal says so) and not closed since.
   * @default false: after a clean close only the batches after the last offset index entry are validated
   */
  recoverActiveSegment?: boolean;
  /**
   * Idempotent producers remembered per partition (>= 1); past it, the one that appended least recently
   * is forgotten, and its next batch needs sequence 0 (see producer-state.ts). @default 10000
   */
  maxProducers?: number;
  /**
   * Told of each corrupt batch found in the log (see {@link CorruptBatch}: at open, when a closed segment's indexes
   * are rebuilt, by a read or a compaction), once per batch; it is also logged once, at level error. Corrupt
   * batches are kept as they are, never cut off. @default none
   */
  onCorrupt?: (batch: CorruptBatch) => void;
  /**
   * Compacts the log (src/log/segments/log-cleaner.ts) in its bounded key map, one log at a time: share one
   * between all the logs of a process, as the log manager does, so compaction's memory stays bounded.
   * @default {@link defaultLogCleaner}: one shared by every log opened without one, with the default 64 MiB
   *   dedupe buffer
   */
  cleaner?: LogCleaner;
}


export class PartitionLog implements Partition {
  private segments: LogSegment[];
  private logStart: number;
  private logEnd: number;
  private hw: number;
  private readonly flusher: LogFlusher;
  private compacting: Promise<CompactionStats> | null = null;
  /** The on-demand pass asked for while {@link compacting} runs: it starts once that one ends. */
  private compactingNext: Promise<CompactionStats | null> | null = null;
  /** Set by a disk error: the partition accepts no write since (see the file's comment). */
  private failed: OnelogError | null = null;
  /** Corrupt batches found, as `segment@position`: each is logged once. */
  private readonly corruptBatches = new Set<string>();
  /** When the active segment was created or, after a restart, opened (ms); segment.ms counts from here. */
  private activeSince: number;
  private config: LogConfig;
  private readonly longPoll = new LongPoll();
  private closed = false;
  /** Idempotent producers' epochs and last batches; set by {@link open}. */
  private producers!: ProducerStateManager;
  /** The producer state's snapshot files, in step with rolls, the clean close and the recovery point; set by {@link open}. */
  private producerSnapshots!: ProducerSnapshots;
  /**
   * Whether this session wrote to the log or recovered it: a clean close then checkpoints the recovery
   * point at the log end (and the producer state there), so the next open reads only the tail.
   */
  private dirty = false;
  /**
   * Whether `recovery-point.json` says clean: true. Then a clean close need not rewrite it when it names the log
   * end already ({@link checkpointedPoint}) and no idempotent producer needs its snapshot there.
   */
  private checkpointClean = false;
  /**
   * The offset `recovery-point.json` names (undefined without one): a clean close writes the log end there unless
   * it says that already, so the next open knows every offset below the log end was synced and cuts none of it.
   */
  private checkpointedPoint: number | undefined;

  private constructor(
    readonly dir: string,
    readonly topic: string,
    readonly partition: number,
    private readonly options: PartitionLogOptions,
    /** What every segment of the log is opened with (corrupt batches reported to {@link noteCorrupt}). */
    private readonly segOptions: SegmentOptions,
    segments: LogSegment[],
    logStartOffset: number,
  ) {
    this.segments = segments;
    this.logEnd = Math.max(segments[segments.length - 1]!.nextOffset, logStartOffset);
    this.hw = this.logEnd;
    this.flusher = new LogFlusher(this.logEnd, {
      end: () => this.logEnd,
      datasync: () => this.active.datasync(),
      onSynced: (offset) => this.advanceHighWatermark(offset),
      onBackgroundError: (err) => this.options.logger.warn({ ...this.where(), err: err.message }, 'background fdatasync found no descriptor; trying again'),
      onFailure: (err) => this.fail(err),
      where: this.where(),
      retryMs: () => Math.max(this.config.flushMs, 10),
    });
    this.logStart = Math.min(logStartOffset, this.logEnd);
    this.config = options.config;
    this.activeSince = options.clock.now();
  }

  /** Applies new topic settings (segment size, flush policy, ...) from the next append on. */
  setConfig(config: LogConfig): void {
    this.config = config;
    if (config.flushPolicy !== 'interval') this.flusher.cancelTimer();
    if (config.flushPolicy === 'always' && this.flusher.synced < this.logEnd) this.flusher.flushInBackground();
  }

  /**
   * Opens (or creates) the log in `dir` (Kafka's LogLoader). Segments wholly below the recovery point
   * checkpoint are trusted: nothing of them is read until used (their indexes load lazily). After a clean
   * close the last segment is trusted too (unless `recoverActiveSegment`), and only its batches after the
   * last index entry are validated: every batch appended since that close lies there, since index files are
   * written only when a segment is sealed. Every other segment is recovered: validated batch by batch, its
   * indexes rebuilt.
   *
   * Only a torn tail is cut: bytes of the last segment from a bad batch at or after the recovery point (written
   * after the last roll or clean close, so never synced by either), truncated to the last whole batch and
   * logged. A bad batch below the recovery point, or in a segment that is not the last (a roll synced it whole),
   * held synced records: it is corruption, kept as it is and reported ({@link PartitionLogOptions.onCorrupt});
   * reads of it answer `CORRUPT_MESSAGE`, and the log end never falls below the recovery point, so no offset is
   * given out twice. Opening writes nothing unless recovery cut a tail.
   * @throws the file system's error (a caller maps it with {@link storageError}); nothing stays open
   */
  static open(dir: string, topic: string, partition: number, options: PartitionLogOptions): PartitionLog {
    // Segments report what they find before the log exists: kept until it does.
    let opened: PartitionLog | undefined;
    const foundEarly: CorruptBatch[] = [];
    const segOptions: SegmentOptions = {
      indexIntervalBytes: options.indexIntervalBytes, logger: options.logger, files: options.files,
      onCorrupt: (batch) => {
        if (opened === undefined) foundEarly.push(batch);
        else opened.noteCorrupt(batch);
      },
    };
    let files: string[];
    try {
      files = listDirectory(options.files, dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      makeDir(dir);
      files = [];
    }
    // A compaction that crashed before its rename left its output beside the intact segment: drop it.
    for (const f of files.filter((f) => f.endsWith('.log.cleaned'))) fs.rmSync(path.join(dir, f));
    const bases = files
      .filter((f) => /^\d{20}\.log$/.test(f))
      .map((f) => Number(f.slice(0, 20)))
      .sort((a, b) => a - b);
    const logStart = readLogStartCheckpoint(options.files, dir);
    const recovery = readRecoveryCheckpoint(options.files, dir);
    const segments: LogSegment[] = [];
    let recovered = false;
    try {
      if (bases.length === 0) segments.push(LogSegment.create(dir, logStart, segOptions));
      bases.forEach((base, i) => {
        const next = bases[i + 1];
        if (next !== undefined && recovery && next <= recovery.recoveryPoint) {
          segments.push(LogSegment.open(dir, base, false, segOptions, { nextOffset: next }));
          return;
        }
        const trustedTail = next === undefined && recovery?.clean === true && recovery.recoveryPoint >= base &&
          options.recoverActiveSegment !== true;
        recovered ||= !trustedTail;
        // Only the last segment can hold a torn tail: a roll synced every other one whole.
        const recoveryPoint = next === undefined ? recovery?.recoveryPoint ?? 0 : Infinity;
        segments.push(LogSegment.open(dir, base, !trustedTail, segOptions, { recoveryPoint }));
      });
      // Closed segments whose indexes were just rebuilt get them written, so the next open can trust them.
      for (const s of segments.slice(0, -1)) s.seal();
      const log = new PartitionLog(dir, topic, partition, options, segOptions, segments, logStart);
      opened = log;
      for (const batch of foundEarly) log.noteCorrupt(batch);
      // A checkpoint behind the log end (the tail past it was read, as after a crash the journal did not name) is
      // moved there by the next clean close, so a bit that rots later below the log end is reported, never cut.
      log.dirty = recovered || (recovery !== undefined && recovery.recoveryPoint < log.logEnd);
      log.checkpointClean = recovery?.clean === true;
      log.checkpointedPoint = recovery?.recoveryPoint;
      log.producers = new ProducerStateManager({ maxProducers: options.maxProducers ?? DEFAULT_MAX_PRODUCERS, topic, partition });
      log.producerSnapshots = ProducerSnapshots.load(dir, log.producers, segments, files, {
        recoveryPoint: recovery?.recoveryPoint, logStartOffset: log.logStart, logEndOffset: log.logEnd,
      }, { logger: options.logger, topic, partition, files: options.files });
      return log;
    } catch (err) {
      for (const s of segments) s.release();
      throw err;
    }
  }

  /**
   * Before the first write of this session to the active segment: tells the log manager, which recovers the
   * partition at the next start if no clean close comes first (the first append is acknowledged once it is
   * noted). Nothing else needs marking: the recovery point checkpoint stays as it is, and an open after a
   * crash validates every batch appended since the last clean close either way (see {@link open}).
   */
  private beforeWrite(): Promise<void> | undefined {
    if (this.dirty) return undefined;
    this.dirty = true;
    return this.options.beforeFirstWrite?.();
  }

  /** The first offset still readable. */
  get logStartOffset(): number {
    return this.logStart;
  }

  /** The offset the next appended record gets. */
  get logEndOffset(): number {
    return this.logEnd;
  }

  /** The end of what is durable and readable: consumers read below it. Equal to the LEO once synced. */
  get highWatermark(): number {
    return this.hw;
  }

  private get active(): LogSegment {
    return this.segments[this.segments.length - 1]!;
  }

  /**
   * Appends records as one batch. Resolves once they are acknowledged under the flush policy: on disk
   * (`always`) or in the page cache (`interval`, `never`).
   * @param records at least one
   * @returns the offsets the records got
   * @throws OnelogError `BROKER_CLOSED` after close, `STORAGE_ERROR` if the write or sync fails
   */
  async append(records: readonly RecordInput[]): Promise<AppendResult> {
    return this.appendBatch(encodeBatch(records, 0, this.options.clock.now()));
  }

  /**
   * Appends one encoded batch (its base offset is replaced by the log end offset); resolves as
   * {@link append}. The batch is not decoded: the caller vouches for it.
   *
   * A batch with a producer id >= 0 is idempotent: it is checked against that producer's state first (see
   * producer-state.ts). A retry of one of the producer's last 5 batches writes nothing and resolves, once the
   * stored copy is acknowledged, with its offsets and `duplicate: true`.
   * @throws OnelogError `INVALID_PRODUCER_EPOCH`, `OUT_OF_ORDER_SEQUENCE`, `UNKNOWN_PRODUCER_ID`,
   *   `INVALID_RECORD` for an idempotent batch refused (nothing written); as {@link append} otherwise
   */
  async appendBatch(batch: Buffer): Promise<AppendResult> {
    if (this.closed) throw new OnelogError('BROKER_CLOSED', 'the partition log is closed', this.where());
    this.checkWritable();
    const header = readBatchHeader(batch);
    const idempotent = header.producerId >= 0;
    if (idempotent) {
      const stored = this.producers.check(header);
      if (stored !== null) return this.acknowledgeDuplicate(stored);
    }
    const baseOffset = this.logEnd;
    setBaseOffset(batch, baseOffset);
    let noted: Promise<void> | undefined;
    try {
      noted = this.beforeWrite();
      // A segment holding a corrupt batch takes no more: reads of what comes after it need not cross it.
      if ((this.active.size > 0 && (this.active.size + batch.length > this.config.segmentBytes ||
        this.options.clock.now() - this.activeSince >= this.config.segmentMs)) ||
        this.active.holdsCorruption) this.roll();
      if (idempotent) this.producerSnapshots.beforeAppend();
      this.active.append(batch, { ...header, baseOffset });
    } catch (err) {
      const typed = storageError(err, 'append', this.where());
      throw typed.code === 'RESOURCE_EXHAUSTED' ? typed : this.fail(typed);
    }
    if (idempotent) this.producers.update(header, baseOffset);
    const lastOffset = baseOffset + header.lastOffsetDelta;
    this.logEnd = lastOffset + 1;
    switch (this.config.flushPolicy) {
      case 'always':
        await this.flusher.syncTo(this.logEnd);
        break;
      case 'interval':
        this.advanceHighWatermark(this.logEnd);
        if (this.config.flushMessages > 0 && this.logEnd - this.flusher.synced >= this.config.flushMessages) this.flusher.flushInBackground();
        else this.flusher.schedule(this.config.flushMs);
        break;
      case 'never':
        this.advanceHighWatermark(this.logEnd);
    }
    if (noted !== undefined) await noted;
    return { baseOffset, lastOffset };
  }

  /** Answers a retried batch with its stored copy's offsets, once that copy is acknowledged (synced under `always`). */
  private async acknowledgeDuplicate(stored: DuplicateBatch): Promise<AppendResult> {
    if (this.config.flushPolicy === 'always') await this.flusher.syncTo(stored.lastOffset + 1);
    return { baseOffset: stored.baseOffset, lastOffset: stored.lastOffset, duplicate: true };
  }

  /**
   * Checks an idempotent batch against the producer state without writing anything, so a request spanning
   * partitions can be refused whole before any of it is appended.
   * @returns true when the batch is a retry of one already stored
   * @throws OnelogError as {@link appendBatch} refuses it
   */
  checkIdempotentBatch(batch: Buffer): boolean {
    return this.producers.check(readBatchHeader(batch)) !== null;
  }

  /** What this partition remembers of an idempotent producer (epoch, last batches), or undefined. */
  producerState(producerId: number): ProducerStateView | undefined {
    return this.producers.get(producerId);
  }

  /**
   * Syncs the writes below `upTo` (default: everything appended) to disk and resolves when done, whatever the
   * flush policy; appends waiting together share one fdatasync.
   */
  flush(upTo = this.logEnd): Promise<void> {
    return this.flusher.syncTo(upTo);
  }

  private advanceHighWatermark(offset: number): void {
    if (offset <= this.hw) return;
    this.hw = offset;
    this.longPoll.wakeAll();
  }

  /**
   * Seals and syncs the active segment, starts a new one at the log end offset, and moves the recovery point
   * to it; the producer state is snapshotted there first.
   */
  private roll(): void {
    void this.beforeWrite();
    this.active.seal();
    try {
      this.active.datasyncNow();
    } catch (err) {
      const typed = storageError(err, 'fdatasync', this.where());
      throw typed.code === 'RESOURCE_EXHAUSTED' && typed.context.resource === 'open-files' ? typed : this.fail(typed); // else it ran and failed
    }
    this.flusher.markSynced(this.logEnd);
    this.advanceHighWatermark(this.logEnd);
    this.producerSnapshots.snapshotForRoll(this.logEnd);
    this.segments.push(LogSegment.create(this.dir, this.logEnd, this.segOptions));
    this.activeSince = this.options.clock.now();
    writeRecoveryCheckpoint(this.options.files, this.dir, { recoveryPoint: this.logEnd, clean: false });
    this.checkpointClean = false;
    this.checkpointedPoint = this.logEnd;
    this.producerSnapshots.rolled(this.logEnd);
    this.options.logger.info({ ...this.where(), baseOffset: this.logEnd }, 'rolled a new segment');
  }

  /**
   * Reads records from `offset` on, below the high watermark.
   * @throws OnelogError `OFFSET_OUT_OF_RANGE` if `offset` is below the log start offset or above the high watermark
   */
  read(offset: number, limits: ReadLimits): StoredRecord[] {
    return this.fetch(offset, limits).records;
  }

  /**
   * Reads records from `offset` on, below the high watermark, and says where the next read starts:
   * after the last record returned when `maxRecords` cut a batch, else after the last batch read. So a
   * reader moves past offsets that compaction left empty, even at the end of the log, where no record
   * follows to show the way. Batches that hold no record at or after `offset` are read past until one does.
   * A corrupt batch ends the answer before it: the records before it are answered, and a fetch that starts at it
   * answers its error.
   * @throws OnelogError `OFFSET_OUT_OF_RANGE` if `offset` is below the log start offset or above the high watermark,
   *   `CORRUPT_MESSAGE` naming the batch when the first batch read is corrupt
   */
  fetch(offset: number, limits: ReadLimits): { records: StoredRecord[]; nextOffset: number } {
    this.checkReadable(offset);
    return this.guardedRead(() => this.fetchRecords(offset, limits));
  }

  private fetchRecords(offset: number, limits: ReadLimits): { records: StoredRecord[]; nextOffset: number } {
    const records: StoredRecord[] = [];
    let next = offset;
    let i = this.segmentFor(offset);
    while (records.length === 0 && next < this.hw && i < this.segments.length) {
      const buf = this.segments[i]!.read(next, limits.maxBytes, this.hw, limits.maxRecords - records.length);
      if (buf === null) {
        i++;
        next = Math.max(next, this.segments[i]?.baseOffset ?? this.hw);
        continue;
      }
      const taken = takeRecords(buf, next, this.hw, limits.maxRecords, records);
      if (taken.cut) return { records, nextOffset: taken.nextOffset };
      next = taken.nextOffset;
    }
    return { records, nextOffset: Math.min(next, this.hw) };
  }

  /**
   * Reads whole batches as stored, without decoding them (the binary data path): from the batch holding
   * `offset` on, below the high watermark, within `maxBytes` (the first batch always). The first batch may
   * hold records before `offset`: readers skip them.
   * @returns the batches, and where the next read starts (past offsets compaction emptied, as {@link fetch})
   * @throws OnelogError `OFFSET_OUT_OF_RANGE` as {@link read}
   */
  readBatches(offset: number, maxBytes: number, maxRecords = Infinity): { batches: Buffer; nextOffset: number } {
    this.checkReadable(offset);
    return this.guardedRead(() => this.readStoredBatches(offset, maxBytes, maxRecords));
  }

  private readStoredBatches(offset: number, maxBytes: number, maxRecords: number): { batches: Buffer; nextOffset: number } {
    let next = offset;
    for (let i = this.segmentFor(offset); next < this.hw && i < this.segments.length; i++) {
      const buf = this.segments[i]!.read(next, maxBytes, this.hw, maxRecords);
      if (buf === null) {
        next = Math.max(next, this.segments[i + 1]?.baseOffset ?? this.hw);
        continue;
      }
      const covered = coverRecords(buf, offset, this.hw, maxRecords);
      return { batches: buf.subarray(0, covered.bytes), nextOffset: covered.nextOffset };
    }
    return { batches: Buffer.alloc(0), nextOffset: Math.min(next, this.hw) };
  }

  private checkReadable(offset: number): void {
    if (offset < this.logStart || offset > this.hw) {
      throw new OnelogError(
        'OFFSET_OUT_OF_RANGE',
        `offset ${offset} is outside ${this.topic}/${this.partition}: readable offsets are ${this.logStart} to ${this.hw}`,
        { ...this.where(), offset, logStartOffset: this.logStart, highWatermark: this.hw },
      );
    }
  }

  /** Index of the last segment whose base offset is <= `offset` (0 if none). */
  private segmentFor(offset: number): number {
    let lo = 0;
    let hi = this.segments.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.segments[mid]!.baseOffset <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /**
   * The first readable offset whose record timestamp is >= `timestamp` (ms), or the high watermark when
   * every record is older (as Kafka's ListOffsets by timestamp).
   */
  offsetForTimestamp(timestamp: number): number {
    return this.guarded('offset lookup by timestamp', () => this.firstOffsetAtOrAfter(timestamp));
  }

  private firstOffsetAtOrAfter(timestamp: number): number {
    for (let i = this.segmentFor(this.logStart); i < this.segments.length; i++) {
      const segment = this.segments[i]!;
      if (segment.maxTimestamp < timestamp) continue;
      let found = -1;
      const from = Math.max(segment.offsetForTimestampLowerBound(timestamp), this.logStart);
      segment.forEachBatch(from, (header, batch) => {
        if (header.baseOffset >= this.hw) return false;
        if (header.maxTimestamp < timestamp || header.baseOffset + header.lastOffsetDelta < this.logStart) return true;
        for (const r of decodeRecords(batch)) {
          if (r.timestamp >= timestamp && r.offset >= this.logStart && r.offset < this.hw) {
            found = r.offset;
            return false;
          }
        }
        return true;
      });
      if (found >= 0) return found;
    }
    return this.hw;
  }

  /**
   * What is left to read from `offset` (see unread-range.ts): from the log start when `offset` is below it.
   * Records are counted from batch headers on a compacted topic, whose offsets have gaps.
   */
  unread(offset: number): UnreadRange {
    const from = Math.min(Math.max(offset, this.logStart), this.hw);
    const view = { segments: this.segments, highWatermark: this.hw };
    return this.guarded('unread range', () => unreadRange(view, from, this.segmentFor(from), isCompacted(this.config.cleanupPolicy)));
  }

  /** Bytes of the log on disk (every segment, sealed and active). */
  get sizeBytes(): number {
    return this.segments.reduce((sum, s) => sum + s.size, 0);
  }

  /**
   * Moves the log start offset forward to `offset` (Kafka's DeleteRecords): records below it are never
   * served again; segments wholly below it are deleted. The new log start offset is checkpointed before
   * this returns.
   * @returns the log start offset after the call (unchanged if `offset` is not past it)
   * @throws OnelogError `OFFSET_OUT_OF_RANGE` if `offset` is above the high watermark
   */
  deleteRecordsBefore(offset: number, reason: LogStartReason): number {
    if (offset > this.hw) {
      throw new OnelogError(
        'OFFSET_OUT_OF_RANGE',
        `cannot delete records before ${offset} in ${this.topic}/${this.partition}: the high watermark is ${this.hw}`,
        { ...this.where(), offset, logStartOffset: this.logStart, highWatermark: this.hw },
      );
    }
    this.checkWritable();
    return this.guarded('delete-records', () => this.moveLogStart(offset, reason));
  }

  /**
   * Applies retention at the clock's time: moves the log start offset past every expired record (exact
   * boundary, see retention.ts) and deletes the segments wholly below it.
   * @returns the move made, or null when nothing expired
   */
  enforceRetention(): { previousLogStartOffset: number; logStartOffset: number; reason: LogStartReason } | null {
    this.checkWritable();
    return this.guarded('retention', () => {
      const asked = retentionQuestions(this.config, this.options.clock.now());
      if (asked === null) return null;
      const target = retentionTarget(
        this.logStart,
        asked.timestamp === null ? null : this.firstOffsetAtOrAfter(asked.timestamp),
        asked.retentionBytes === null ? null : sizeBoundary({ segments: this.segments, logStartOffset: this.logStart, highWatermark: this.hw }, asked.retentionBytes),
      );
      if (target === null) return null;
      const previousLogStartOffset = this.logStart;
      return { previousLogStartOffset, logStartOffset: this.moveLogStart(target.offset, target.reason), reason: target.reason };
    });
  }

  /**
   * Moves the log start offset forward (never back), checkpoints it with its reason, logs the move, and
   * deletes every segment wholly below it. When no readable record is left, the active segment rolls first
   * so its file can go too.
   */
  private moveLogStart(offset: number, reason: LogStartReason): number {
    if (offset <= this.logStart) return this.logStart;
    const previous = this.logStart;
    writeLogStartCheckpoint(this.options.files, this.dir, offset, reason, this.options.clock.now());
    this.logStart = offset;
    this.producers.evictBelow(offset);
    if (offset === this.logEnd && this.active.size > 0 && !this.closed) this.roll();
    while (this.segments.length > 1 && this.segments[1]!.baseOffset <= offset) this.retire(this.segments.shift()!);
    logLogStartMove(this.options.logger, this.where(), previous, offset, reason);
    return offset;
  }

  /** The topic settings the log runs with. */
  get settings(): LogConfig {
    return this.config;
  }

  /**
   * Runs one compaction pass (see log-cleaner.ts) if the cleanup policy includes `compact`. A background call
   * made while a pass runs shares it. An on-demand one does not: that pass began earlier, with the log as it was
   * then, and may not roll the active segment; it gets the next pass, run once that one ends and shared by all
   * the on-demand calls made meanwhile.
   * @param rollActive seal the active segment first, so everything appended so far can be compacted
   *   (on-demand compaction; the background never does this)
   * @returns what the pass did, or null when the topic is not compacted
   */
  compact(rollActive = false): Promise<CompactionStats | null> {
    if (!isCompacted(this.config.cleanupPolicy)) return Promise.resolve(null);
    if (this.failed !== null) return Promise.reject(this.failed);
    if (this.compacting !== null && !rollActive) return this.compacting;
    if (this.compacting !== null) {
      return (this.compactingNext ??= this.compacting.catch(() => undefined).then(() => {
        this.compactingNext = null;
        return this.compact(true);
      }));
    }
    const pass = this.compactionPass(rollActive);
    this.compacting = pass;
    // Cleared once settled; set before, so a pass that fails at once does not stay in place for good.
    const done = () => {
      if (this.compacting === pass) this.compacting = null;
    };
    pass.then(done, done);
    return pass;
  }

  private async compactionPass(rollActive: boolean): Promise<CompactionStats> {
    try {
      if (rollActive && this.active.size > 0 && !this.closed) this.roll();
      const cleaner = this.options.cleaner ?? defaultLogCleaner();
      const stats = await cleanLog(cleaner, this, {
        clock: this.options.clock,
        minCompactionLagMs: this.config.minCompactionLagMs,
        deleteRetentionMs: this.config.deleteRetentionMs,
        files: this.options.files,
      });
      if (stats.passes > 1) {
        this.options.logger.info({ ...this.where(), ...stats, maxKeysPerPass: cleaner.maxKeysPerPass, dedupeBufferBytes: cleaner.dedupeBufferBytes },
          'compaction took several passes: the log has more keys than the dedupe buffer holds at once (onelog serve --cleaner-dedupe-buffer-bytes)');
      }
      return stats;
    } catch (err) {
      throw storageError(err, 'compaction', this.where());
    }
  }

  /** Whether {@link close} (or {@link closeIfIdle}) closed the log. */
  get isClosed(): boolean {
    return this.closed;
  }

  /** For the log cleaner: every segment, oldest first (the last is the active one). */
  get segmentsForCleaning(): readonly LogSegment[] {
    return this.segments;
  }

  /**
   * For the log cleaner: swaps the cleaned file in for a closed segment (atomic rename over the `.log`,
   * indexes rebuilt). A segment left empty is deleted. Returns false, removing the file, if the segment is no
   * longer in the log or the log closed.
   */
  async replaceSegment(segment: LogSegment, cleanedPath: string): Promise<boolean> {
    await this.flusher.settled();
    const i = this.segments.indexOf(segment);
    if (this.closed || i < 0 || i === this.segments.length - 1) {
      fs.rmSync(cleanedPath, { force: true });
      return false;
    }
    if (fs.statSync(cleanedPath).size === 0) {
      fs.rmSync(cleanedPath);
      this.segments.splice(i, 1);
      segment.delete();
      return true;
    }
    segment.release();
    segment.deleteIndexes();
    fs.renameSync(cleanedPath, segment.logPath);
    syncDirectory(this.options.files, this.dir);
    // Written and fsynced by the cleaner: a bad batch in it is corruption to report, never a tail to cut.
    const cleaned = LogSegment.open(this.dir, segment.baseOffset, true, this.segOptions, { recoveryPoint: Infinity });
    cleaned.seal();
    this.segments[i] = cleaned;
    return true;
  }

  /** Deletes a segment's files; after the sync in flight, if any, since it may be syncing that file. */
  private retire(segment: LogSegment): void {
    this.flusher.afterInFlight(() => segment.delete());
  }

  /**
   * Resolves when the high watermark passes `offset`, or after `maxWaitMs`, whichever is first
   * (the long-poll of a fetch).
   */
  waitForData(offset: number, maxWaitMs: number): Promise<void> {
    if (this.hw > offset || this.closed) return Promise.resolve();
    return this.longPoll.wait(maxWaitMs);
  }

  /** Ends every long-poll now and lets no new one wait: for a shutdown that should not wait out fetches. */
  endWaits(): void {
    this.longPoll.end();
  }

  /**
   * Waits for pending syncs, wakes waiting fetches and closes every segment. A session that wrote (or
   * recovered) ends with the producer state snapshotted and the recovery point marked clean, once everything
   * is synced; one that only read writes nothing.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Appends accepted before close may need a sync round after the one in flight: sync until all are
    // durable, so none of them finds its file closed (EBADF) and fails after its bytes were written.
    await this.flusher.drain();
    this.longPoll.wakeAll();
    this.closeFiles();
  }

  /**
   * Closes the log at once if nothing is going on (no sync pending or unsynced, no compaction, no waiting
   * fetch), as {@link close} would: for a log manager unloading a partition that is not in use.
   * @returns whether the log closed
   */
  closeIfIdle(): boolean {
    if (this.closed) return true;
    if (this.compacting !== null || this.longPoll.waiting > 0 || !this.flusher.idle(this.logEnd)) return false;
    this.closed = true;
    this.closeFiles();
    return true;
  }

  /** Whether nothing was written since the last clean close (so a crash now needs no recovery of this partition). */
  get isClean(): boolean {
    return !this.dirty;
  }

  private closeFiles(): void {
    this.flusher.cancelTimer();
    for (const s of this.segments) s.close();
    // After a disk error nothing is marked clean: the next open validates what the disk really holds.
    if (this.dirty && this.flusher.synced === this.logEnd && this.failed === null) {
      if (!this.checkpointClean || this.producers.size > 0 || this.checkpointedPoint !== this.logEnd) {
        this.producerSnapshots.snapshotForClose(this.logEnd);
        // Durable only when producer snapshots rely on it; else a power loss leaves the one before (or none), which
        // costs recovery work and lets the next open cut a bad tail above that older point.
        writeRecoveryCheckpoint(this.options.files, this.dir, { recoveryPoint: this.logEnd, clean: true }, this.producers.size > 0);
        this.producerSnapshots.closed(this.logEnd);
        this.checkpointClean = true;
        this.checkpointedPoint = this.logEnd;
      }
      this.dirty = false;
    }
  }

  /**
   * The disk error that stopped this partition's writes (`STORAGE_ERROR`, with the partition, `errno` and
   * `failedAt`), or null while it accepts writes.
   */
  get failure(): OnelogError | null {
    return this.failed;
  }

  /** @throws the partition's {@link failure}, if any */
  private checkWritable(): void {
    if (this.failed !== null) throw this.failed;
  }

  /**
   * Stops the partition's writes after a disk error (the first one counts; it is logged once).
   * @returns the partition's failure, for the caller to throw
   */
  private fail(cause: OnelogError): OnelogError {
    if (this.failed !== null) return this.failed;
    this.failed = new OnelogError('STORAGE_ERROR', `${this.topic}/${this.partition} stopped accepting writes: ${cause.message}. ` +
      'What was not yet synced to disk may be lost, so nothing more is acknowledged; reads go on. Restart the broker ' +
      'once the disk is healthy: recovery keeps what reached the disk', { ...this.where(), ...cause.context, failedAt: new Date(this.options.clock.now()).toISOString() });
    this.options.logger.error({ ...this.where(), err: cause.message, errno: cause.context.errno }, 'a disk error stopped the partition\'s writes');
    return this.failed;
  }

  /**
   * A corrupt batch a segment found: logged once (error), and told to {@link PartitionLogOptions.onCorrupt}. It
   * stays as it is: nothing of the log is cut or moved for it.
   */
  private noteCorrupt(batch: CorruptBatch): void {
    const key = `${batch.segment}@${batch.position}`;
    if (this.corruptBatches.has(key)) return;
    this.corruptBatches.add(key);
    this.options.logger.error({ ...this.where(), ...batch }, corruptBatchMessage(batch));
    this.options.onCorrupt?.(batch);
  }

  /** Runs a read, its failures typed; a corrupt batch (see LogSegment.read) is logged once per batch. */
  private guardedRead<T>(work: () => T): T {
    try {
      return this.guarded('fetch', work);
    } catch (err) {
      const { code, context, message } = err as OnelogError;
      // A batch whose CRC holds but whose records do not decode is named by its offset (record-batch.ts).
      const batch = context.segment === undefined ? `offset ${String(context.offset)}` : `${String(context.segment)}@${String(context.position)}`;
      if (code === 'CORRUPT_MESSAGE' && !this.corruptBatches.has(batch)) {
        this.corruptBatches.add(batch);
        this.options.logger.error({ ...this.where(), ...context }, message);
      }
      throw err;
    }
  }

  /** Runs a storage operation, its failures typed (see storage-errors.ts). */
  private guarded<T>(action: string, work: () => T): T {
    try {
      return work();
    } catch (err) {
      throw storageError(err, action, this.where());
    }
  }

  private where(): { topic: string; partition: number } {
    return { topic: this.topic, partition: this.partition };
  }
}

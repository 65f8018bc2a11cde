/**
 * Log compaction of topics in object storage (cluster mode, docs/cluster.md): the rules of the embedded default's
 * cleaner (src/log/segments/log-cleaner.ts, itself Kafka's LogCleaner) applied to a partition's index rows and chunks.
 * Run by the broker holding the `job:compact` lease on schedule, and by the broker asked on demand.
 *
 * **What may be cleaned.** The partition's chunks (index rows) from its first one, oldest first, while the chunk's
 * largest timestamp is at least `minCompactionLagMs` old, stopping at the first younger one; the partition's last
 * chunk (the one ending at the high watermark) is left out on schedule: it is the equivalent of Kafka's active
 * segment, the part of the log still being written to. On demand it is included, as the local engine seals its
 * active segment first (`onelog topics compact TOPIC`), so everything appended so far may be compacted. The rows
 * are read once, when the compaction starts; the keys are mapped up to the high watermark read then, so a record
 * in a chunk that is not cleaned (the last one, or a younger one) still supersedes the older records of its key.
 *
 * **A pass** (as the local cleaner's): maps each key to its latest offset over the next range `[start, end)` of
 * the log, in the cleaner's key map (Kafka's SkimpyOffsetMap, shared with every compaction of the broker, at most
 * `serve --cleaner-dedupe-buffer-bytes`), until the map is full or the high watermark; then cleans the eligible
 * chunks that start below `end`, oldest first, each batch by {@link cleanBatch} (the local cleaner's function): a
 * record goes when a later record of its key lies in the range, or when it is its key's latest, a tombstone, and
 * its batch's delete horizon passed; a kept tombstone gets a horizon (`now + deleteRetentionMs`, KIP-534). A
 * rewritten batch keeps its base offset, last offset delta, producer fields and codec, so offsets never change
 * and an idempotent producer's sequence ranges stay as they were (its state is in PostgreSQL's
 * `producer_batches`, never read from the log, so a batch compaction empties and drops loses nothing of it:
 * the local engine's rule). A log with more keys than the map holds takes several passes, with the single-map
 * result.
 *
 * **Writing.** The batches kept from the chunks a pass changes are written to new per-partition objects
 * (`segments/<topic>/<partition>/<baseOffset>-<uuid>`, keys never reused, the layout of the merger's), a chunk
 * (and an index row) per run of batches whose offsets follow each other: offsets may have gaps inside a batch,
 * but a chunk's batches are stamped one after the other ({@link stampChunk}), so a batch dropped whole starts a
 * new chunk. An object holds about `targetBytes`; once it is PUT, one PostgreSQL transaction replaces exactly the
 * changed rows whose batches it holds by its rows, only if they are still as read (a merge, a retention move, a
 * topic deletion or another compaction won otherwise: the object is deleted and the compaction stops there), and
 * retires the objects no row refers to any more. Objects are committed oldest first and a refusal ends the
 * compaction, so a tombstone never goes before the older records of its key (as the local cleaner swaps
 * segments oldest first). Unchanged chunks are left as they are. Rows that lost every record are removed (the
 * offsets of a partition are positions: a reader at one moves on to the next row; a read past the last row
 * moves to the high watermark, object-log.ts). A read that looked up the replaced rows just before still GETs
 * the retired objects (the sweep deletes them a grace later) or looks its rows up again.
 *
 * **Memory**: the key map (24 bytes a key, at most the dedupe buffer), one chunk read at a time (a chunk is at
 * most a flush's bytes or a merged segment, 8 MiB by default), the kept batches waiting for their object (about
 * `targetBytes`), and the index rows of the partition (about 150 bytes each). An object waits for its commit no
 * longer than the sequencer's `maxObjectAgeMs`, else it is deleted and the compaction stops, so the orphan sweep
 * never deletes an object a late commit would index.
 */
import { randomUUID } from 'node:crypto';
import type { CompactionStats } from '../../protocol/topics.js';
import { LOG_OVERHEAD, readBatchHeader } from '../../protocol/record-batch.js';
import type { BatchHeader } from '../../protocol/record-batch.js';
import { cleanBatch, mapBatchKeys } from '../compaction.js';
import type { BatchCleaning } from '../compaction.js';
import type { OffsetMap } from '../offset-map.js';
import { buildObject, stampChunk } from './object-format.js';
import type { ObjectStore } from './object-store.js';
import type { IndexEntry, Sequencer } from './sequencer.js';

/** A topic's settings for one compaction of a partition. */
export interface PartitionCompactionSettings {
  /** The compaction's time, ms since the epoch (the broker's clock): the lag and the delete horizons are judged by it. */
  now: number;
  /** Chunks whose largest timestamp is younger than this, ms, are not cleaned (nor any after them). */
  minCompactionLagMs: number;
  /** How long a kept tombstone stays, ms: its delete horizon is `now` plus this. */
  deleteRetentionMs: number;
  /**
   * Whether the partition's last chunk may be cleaned too (on demand, as the local engine seals its active
   * segment); false on schedule.
   */
  includeLastChunk: boolean;
}

/** Options of {@link compactPartition}. */
export interface CompactorOptions {
  /** A compacted object holds about this many bytes (more by at most one chunk). @default 8388608 (8 MiB) */
  targetBytes?: number;
  /** Chunks replaced in one transaction at most. @default 1000 */
  maxRowsPerCommit?: number;
  /** Index rows read per query. @default 1000 */
  rowsPerLookup?: number;
  /** Called after an object is PUT and before its rows are replaced (tests race produces and merges with it). */
  beforeReplace?: () => Promise<void>;
}

/** What {@link compactPartition} did. */
export interface PartitionCompaction {
  /**
   * As the local engine's, over the chunks cleaned: `segments` counts the chunks (index rows) replaced, `passes`
   * the key-map passes (0 when no chunk was old enough).
   */
  stats: CompactionStats;
  /**
   * Why the compaction stopped before the end, if it did: `changed`, another change of the rows won (a merge,
   * retention, another compaction); `stale`, an object waited longer than the sequencer's `maxObjectAgeMs`.
   */
  stopped: 'changed' | 'stale' | null;
}

const YIELD_EVERY_BATCHES = 500;
const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Compacts one partition's chunks in object storage (see the file's comment), with `map` as its key map.
 * @throws OnelogError `STORAGE_ERROR` if the object store or PostgreSQL fails: what was committed before stays,
 *   correct; an object PUT and not committed is an orphan, swept later
 */
export async function compactPartition(
  sequencer: Sequencer, objects: ObjectStore, topic: string, partition: number, settings: PartitionCompactionSettings, map: OffsetMap,
  options: CompactorOptions = {},
): Promise<PartitionCompaction> {
  const stats: CompactionStats = { segments: 0, recordsBefore: 0, recordsAfter: 0, tombstonesRemoved: 0, bytesBefore: 0, bytesAfter: 0, passes: 0 };
  const state = await sequencer.state(topic, partition);
  if (state === undefined) return { stats, stopped: null };
  const hw = state.highWatermark;
  const rowsPerLookup = options.rowsPerLookup ?? 1000;
  let rows = await partitionRows(sequencer, topic, partition, state.logStartOffset, hw, rowsPerLookup);
  // The eligible chunks end at cleanEnd: the oldest ones, old enough, never the last on schedule.
  let cleanEnd = -1;
  const candidates = settings.includeLastChunk ? rows.length : rows.length - 1;
  for (let i = 0; i < candidates; i++) {
    if (rows[i]!.maxTimestamp > settings.now - settings.minCompactionLagMs) break;
    cleanEnd = rows[i]!.endOffset;
  }
  if (cleanEnd < 0) return { stats, stopped: null };
  const tally = new Tally(stats);
  const writer = new CompactedWriter(sequencer, objects, topic, partition, tally, options);
  for (let start = rows[0]!.baseOffset; start < hw;) {
    const end = await mapKeys(objects, rows, map, start, hw);
    if (end <= start) throw new Error(`compaction of ${topic}/${partition} made no progress at offset ${start}`);
    stats.passes++;
    const pass: BatchCleaning = { map, end, now: settings.now, deleteRetentionMs: settings.deleteRetentionMs };
    for (const row of rows) {
      if (row.baseOffset >= end || row.endOffset > cleanEnd) break;
      await writer.clean(row, pass);
      if (writer.stopped !== null) return { stats: tally.finish(), stopped: writer.stopped };
    }
    await writer.commit();
    if (writer.stopped !== null) return { stats: tally.finish(), stopped: writer.stopped };
    start = end;
    // The pass replaced some rows: the next one reads them as they are now.
    if (start < hw) rows = await partitionRows(sequencer, topic, partition, state.logStartOffset, hw, rowsPerLookup);
  }
  return { stats: tally.finish(), stopped: null };
}

/** The index rows holding offsets from `from` below `hw`, oldest first. */
async function partitionRows(sequencer: Sequencer, topic: string, partition: number, from: number, hw: number, limit: number): Promise<IndexEntry[]> {
  const out: IndexEntry[] = [];
  for (let offset = from; offset < hw;) {
    const rows = await sequencer.lookup(topic, partition, offset, limit);
    for (const row of rows) if (row.baseOffset < hw) out.push(row);
    if (rows.length < limit) break;
    offset = rows[rows.length - 1]!.endOffset;
  }
  return out;
}

/** A chunk's bytes, its offsets stamped (a ranged GET). */
async function readChunk(objects: ObjectStore, row: IndexEntry): Promise<Buffer> {
  const bytes = await objects.get(row.objectKey, { position: row.position, length: row.length });
  stampChunk(bytes, row.baseOffset);
  return bytes;
}

/** Each batch of a chunk, in order, with its header, bytes and position. */
function* batchesOf(chunk: Buffer): Generator<{ header: BatchHeader; batch: Buffer }> {
  for (let pos = 0; pos < chunk.length;) {
    const header = readBatchHeader(chunk, pos);
    const size = LOG_OVERHEAD + header.batchLength;
    yield { header, batch: chunk.subarray(pos, pos + size) };
    pos += size;
  }
}

/**
 * Fills `map` with the latest offset of each key from `start` on, below `hw`, until it is full (as the local
 * cleaner's mapKeys).
 * @returns where the pass's range ends: the first record whose key did not fit, else `hw`
 */
async function mapKeys(objects: ObjectStore, rows: readonly IndexEntry[], map: OffsetMap, start: number, hw: number): Promise<number> {
  map.reset(hw - start); // no more keys than offsets
  let batches = 0;
  for (const row of rows) {
    if (row.endOffset <= start) continue;
    if (row.baseOffset >= hw) break;
    for (const { header, batch } of batchesOf(await readChunk(objects, row))) {
      const end = mapBatchKeys(map, header, batch, start, hw);
      if (end !== undefined) return end;
      if (++batches % YIELD_EVERY_BATCHES === 0) await yieldToEventLoop();
    }
  }
  return hw;
}

/** Counts the stats: each batch's records and bytes before the compaction the first time a pass reads it. */
class Tally {
  /** Batches below this offset were counted. */
  private countedTo = 0;
  private removedRecords = 0;
  private removedBytes = 0;

  constructor(private readonly stats: CompactionStats) {}

  /** A batch a pass read (counted if no pass read it before). */
  read(header: BatchHeader, bytes: number): void {
    if (header.baseOffset < this.countedTo) return;
    this.stats.recordsBefore += header.recordCount;
    this.stats.bytesBefore += bytes;
    this.countedTo = header.baseOffset + header.lastOffsetDelta + 1;
  }

  /** What a commit removed. */
  committed(rows: number, removedRecords: number, removedBytes: number, tombstonesRemoved: number): void {
    this.stats.segments += rows;
    this.removedRecords += removedRecords;
    this.removedBytes += removedBytes;
    this.stats.tombstonesRemoved += tombstonesRemoved;
  }

  finish(): CompactionStats {
    this.stats.recordsAfter = this.stats.recordsBefore - this.removedRecords;
    this.stats.bytesAfter = this.stats.bytesBefore - this.removedBytes;
    return this.stats;
  }
}

/** A run of kept batches whose offsets follow each other: one chunk, one index row. */
interface Run {
  baseOffset: number;
  /** The offset after its last batch. */
  next: number;
  batches: Buffer[];
}

/**
 * Gathers the kept batches of the chunks a pass changes into an object, PUTs it once it holds about
 * `targetBytes` (or `maxRowsPerCommit` chunks were replaced, or the pass ends), and replaces those chunks' rows
 * by its rows in one transaction.
 */
class CompactedWriter {
  stopped: 'changed' | 'stale' | null = null;
  private runs: Run[] = [];
  private bytes = 0;
  /** The changed rows whose kept batches are in {@link runs}, and what they lost. */
  private replaced: IndexEntry[] = [];
  private removedRecords = 0;
  private removedBytes = 0;
  private tombstonesRemoved = 0;
  private batches = 0;
  private readonly targetBytes: number;
  private readonly maxRows: number;

  constructor(
    private readonly sequencer: Sequencer, private readonly objects: ObjectStore, private readonly topic: string, private readonly partition: number,
    private readonly tally: Tally, private readonly options: CompactorOptions,
  ) {
    this.targetBytes = options.targetBytes ?? 8 * 1024 * 1024;
    this.maxRows = options.maxRowsPerCommit ?? 1000;
  }

  /** Cleans one chunk by the pass's map: a chunk nothing changes in stays as it is. */
  async clean(row: IndexEntry, pass: BatchCleaning): Promise<void> {
    const kept: Array<{ header: BatchHeader; batch: Buffer }> = [];
    let changed = false;
    let removedRecords = 0;
    let removedBytes = 0;
    let tombstonesRemoved = 0;
    for (const { header, batch } of batchesOf(await readChunk(this.objects, row))) {
      this.tally.read(header, batch.length);
      const cleaned = cleanBatch(batch, header, pass);
      if (cleaned === null) {
        kept.push({ header, batch });
      } else {
        changed = true;
        removedRecords += header.recordCount - cleaned.records;
        removedBytes += batch.length - (cleaned.batch?.length ?? 0);
        tombstonesRemoved += cleaned.tombstonesRemoved;
        if (cleaned.batch !== null) kept.push({ header: readBatchHeader(cleaned.batch), batch: cleaned.batch });
      }
      if (++this.batches % YIELD_EVERY_BATCHES === 0) await yieldToEventLoop();
    }
    if (!changed) return;
    this.replaced.push(row);
    this.removedRecords += removedRecords;
    this.removedBytes += removedBytes;
    this.tombstonesRemoved += tombstonesRemoved;
    for (const { header, batch } of kept) {
      const last = this.runs[this.runs.length - 1];
      const run = last !== undefined && last.next === header.baseOffset ? last : { baseOffset: header.baseOffset, next: header.baseOffset, batches: [] };
      if (run !== last) this.runs.push(run);
      run.batches.push(batch);
      run.next = header.baseOffset + header.lastOffsetDelta + 1;
      this.bytes += batch.length;
    }
    if (this.bytes >= this.targetBytes || this.replaced.length >= this.maxRows) await this.commit();
  }

  /** PUTs the object of what was gathered and replaces the changed rows by its rows (see the file's comment). */
  async commit(): Promise<void> {
    if (this.replaced.length === 0 || this.stopped !== null) return;
    const replacements: IndexEntry[] = [];
    const created: Array<{ objectKey: string; sizeBytes: number }> = [];
    const putAt = Date.now();
    if (this.runs.length > 0) {
      const { body, chunks } = buildObject(this.runs.map((r) => ({ topic: this.topic, partition: this.partition, batches: r.batches })));
      const objectKey = `segments/${encodeURIComponent(this.topic)}/${this.partition}/${this.runs[0]!.baseOffset}-${randomUUID()}`;
      await this.objects.put(objectKey, body);
      created.push({ objectKey, sizeBytes: body.length });
      this.runs.forEach((r, i) => replacements.push({
        baseOffset: r.baseOffset, endOffset: r.next, objectKey, position: chunks[i]!.position, length: chunks[i]!.length, maxTimestamp: chunks[i]!.maxTimestamp,
      }));
    }
    await this.options.beforeReplace?.();
    const stale = Date.now() - putAt > this.sequencer.maxObjectAgeMs; // the orphan sweep may be deleting it
    const replaced = !stale && await this.sequencer.rewriteIndexRows(this.topic, this.partition, this.replaced, replacements, created);
    if (replaced) {
      this.tally.committed(this.replaced.length, this.removedRecords, this.removedBytes, this.tombstonesRemoved);
    } else {
      this.stopped = stale ? 'stale' : 'changed';
      await this.objects.delete(created.map((o) => o.objectKey)).catch(() => {}); // else an orphan, swept later
    }
    this.runs = [];
    this.bytes = 0;
    this.replaced = [];
    this.removedRecords = 0;
    this.removedBytes = 0;
    this.tombstonesRemoved = 0;
  }
}

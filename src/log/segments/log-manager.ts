/**
 * Owns every partition log of a data directory (Kafka's LogManager): `<dataDir>/log/<topic>-<partition>/`.
 * Knows nothing of groups or sockets.
 *
 * Partitions are loaded lazily: {@link start} opens only the partitions a crash left unclean (listed in the
 * {@link UncleanJournal}), to recover them; every other partition is opened on first use and then stays
 * loaded, except that background sweeps ({@link visit}) unload again what they opened. So start-up time and
 * memory do not grow with the number of idle partitions, and every file goes through one bounded
 * {@link FileCache}, so neither does the number of open files.
 */
import fs from 'node:fs';
import path from 'node:path';
import { OnelogError } from '../../protocol/errors.js';
import { listDirectory, readRecoveryCheckpoint, syncDirectory } from './checkpoint.js';
import type { FileCache } from './file-cache.js';
import { PartitionLog } from './partition-log.js';
import type { PartitionLogOptions } from './partition-log.js';
import type { AppendResult, LogConfig } from '../partition.js';
import type { CorruptBatch } from '../partition.js';
import { partialAppendError } from '../appends.js';
import { storageError } from './storage-errors.js';
import { DIR_MODE, makeDir } from '../../common/file-modes.js';
import { UncleanJournal } from './unclean-journal.js';
import type { Logs, PartitionOffsets, StartReport, TopicLayout } from '../logs.js';
import { unknownTopic } from '../../protocol/validate.js';
export type { PartitionOffsets, StartReport, TopicLayout } from '../logs.js';

/** Options shared by every log of the manager; each topic brings its own settings. */
export type LogManagerOptions = Omit<PartitionLogOptions, 'config' | 'beforeFirstWrite' | 'onCorrupt'>;

/** A topic's settings and its partitions' logs, each loaded or not. */
interface TopicLogs {
  config: LogConfig;
  logs: (PartitionLog | undefined)[];
  /** Per partition, 1 while it is known to be empty without being loaded (created by this process, not used yet). */
  fresh: Uint8Array;
  /** Per partition, the corrupt batches found since start-up, by `segment@position` (kept while the partition is unloaded). */
  corrupt: Map<number, Map<string, CorruptBatch>>;
}

/** Free space a produce leaves on the disk, for the index files and checkpoints that follow appends. */
const DISK_HEADROOM_BYTES = 1 << 20;
/** Free space a write of a store beside the log (not an append) leaves on the data directory's disk, bytes. */
const STORE_WRITE_HEADROOM_BYTES = 256 * 1024;
/**
 * A statfs reading answers later produces without a new one for up to this long, ms, while what they asked
 * for since leaves {@link DISK_READING_MARGIN_BYTES} free by it (a statfs per produce costs as much as the
 * append itself).
 */
const DISK_READING_MS = 1000;
const DISK_READING_MARGIN_BYTES = 256 * (1 << 20);

/** Partitions a background sweep visits between two yields to the event loop. */
const VISIT_YIELD_EVERY = 64;

export class LogManager implements Logs {
  private readonly topics = new Map<string, TopicLogs>();
  private readonly journal: UncleanJournal;
  /** Whether the directory had no journal (written by an earlier version): {@link start} reads every recovery point once. */
  private readonly journalWasMissing: boolean;
  private loadedCount = 0;
  /** The last statfs of the log directory, and the bytes produces asked for since (see {@link ensureDiskRoom}). */
  private diskReading: { atMs: number; freeBytes: number; requestedSince: number } | null = null;
  /** Set by {@link stopWrites}: every append throws it. */
  private stopped: OnelogError | null = null;
  /** Set by {@link endWaits}: logs opened later let no long-poll wait (the broker is shutting down). */
  private waitsEnded = false;
  /** Told of each corrupt batch found (see {@link watchCorruption}). */
  private corruptionListener: ((topic: string, partition: number, batch: CorruptBatch) => void) | null = null;

  /**
   * @param dir directory holding one folder per partition; created if missing
   * @param options shared by every log; each topic brings its own settings
   */
  constructor(
    readonly dir: string,
    private readonly options: LogManagerOptions,
  ) {
    makeDir(dir);
    const journal = UncleanJournal.read(dir, options.files);
    this.journalWasMissing = journal === null;
    this.journal = journal ?? UncleanJournal.write(dir, options.files, []);
  }

  /** The cache every log's files go through. */
  get files(): FileCache {
    return this.options.files;
  }

  /**
   * Registers the catalog's topics at start-up: creates, empty, any partition directory that is missing (a
   * topic creation that an earlier version left half done) and recovers the partitions written since the
   * last clean shutdown. A partition that fails to open is logged and left to fail again when used: nothing
   * in the data directory stops the broker from starting.
   */
  start(topics: readonly TopicLayout[]): StartReport {
    const present = new Set(listDirectory(this.files, this.dir));
    let partitions = 0;
    let repaired = 0;
    const unclean: { topic: string; partition: number }[] = [];
    for (const t of topics) {
      this.addTopic(t.name, t.partitions, t.config);
      for (let p = 0; p < t.partitions; p++) {
        partitions++;
        const name = partitionDirName(t.name, p);
        if (!present.has(name)) {
          fs.mkdirSync(path.join(this.dir, name), DIR_MODE);
          repaired++;
          this.options.logger.warn({ topic: t.name, partition: p, dir: path.join(this.dir, name) },
            'created the missing directory of a partition, empty (a topic creation left half done)');
        } else if (this.journalWasMissing ? this.readsUnclean(name) : this.journal.partitions.has(name)) {
          unclean.push({ topic: t.name, partition: p });
        }
      }
    }
    if (repaired > 0) syncDirectory(this.files, this.dir);
    this.removeEmptyOrphans(present);
    let recovered = 0;
    for (const { topic, partition } of unclean) {
      try {
        this.load(topic, this.topic(topic), partition, true);
        recovered++;
      } catch (err) {
        this.options.logger.warn({ topic, partition, err: (err as Error).message }, 'could not recover a partition at start; it stays closed');
      }
    }
    this.journal.retainOnly(unclean.map((u) => partitionDirName(u.topic, u.partition)));
    return { topics: topics.length, partitions, recovered, repaired };
  }

  /**
   * Removes the empty partition directories of topics the catalog does not know: left by a topic creation
   * that a crash cut short before its catalog row (a directory holding anything is left alone).
   */
  private removeEmptyOrphans(present: ReadonlySet<string>): void {
    let removed = 0;
    for (const name of present) {
      const m = /^(.+)-(\d+)$/.exec(name);
      const t = m ? this.topics.get(m[1]!) : undefined;
      if (m === null || (t !== undefined && Number(m[2]) < t.logs.length)) continue;
      const dir = path.join(this.dir, name);
      try {
        if (!fs.statSync(dir).isDirectory() || listDirectory(this.files, dir).length > 0) continue;
        fs.rmdirSync(dir);
        removed++;
      } catch {
        // gone meanwhile, or not ours to remove
      }
    }
    if (removed > 0) {
      this.options.logger.info({ removed }, 'removed the empty directories of partitions no topic has (a topic creation cut short)');
    }
  }

  /**
   * For a data directory without a journal: whether the partition's recovery point says it was not closed
   * cleanly. Without one, the partition was never opened by a version that writes it (or is empty): opening
   * it recovers every segment anyway.
   */
  private readsUnclean(name: string): boolean {
    try {
      return readRecoveryCheckpoint(this.files, path.join(this.dir, name))?.clean === false;
    } catch {
      return true; // unreadable: let recovery look at it
    }
  }

  /**
   * Creates the directories of a new topic's partitions, all or none: on any failure those made are removed
   * and the error thrown, typed. Call {@link addTopic} once the catalog holds the topic, or
   * {@link deleteTopicFiles} if it could not be stored.
   * @throws OnelogError `TOPIC_ALREADY_EXISTS` if a directory holds data of a topic unknown to the catalog,
   *   `RESOURCE_EXHAUSTED` (disk), `STORAGE_ERROR`
   */
  createTopicLogs(topic: string, partitions: number): void {
    const made: string[] = [];
    try {
      for (let p = 0; p < partitions; p++) {
        const dir = path.join(this.dir, partitionDirName(topic, p));
        try {
          fs.mkdirSync(dir, DIR_MODE);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
          // Left by a creation that crashed before the catalog stored it: reusable only if empty.
          if (listDirectory(this.files, dir).length > 0) {
            throw new OnelogError('TOPIC_ALREADY_EXISTS', `cannot create topic ${topic}: ${dir} holds files of a topic ` +
              'the catalog does not know; move the directory away and retry', { topic, partition: p, dir });
          }
        }
        made.push(dir);
      }
      syncDirectory(this.files, this.dir);
    } catch (err) {
      for (const dir of made) this.files.transient(() => fs.rmSync(dir, { recursive: true, force: true }));
      throw storageError(err, `creating topic ${topic}`, { topic });
    }
  }

  /**
   * Takes a topic out of service for its deletion: forgets it at once (every later use answers `UNKNOWN_TOPIC`)
   * and closes its loaded logs after their pending syncs, ending their waiting fetches. Nothing on disk changes:
   * {@link deleteTopicFiles} removes the directories once the catalog no longer holds the topic.
   * @throws OnelogError `UNKNOWN_TOPIC`
   */
  async retireTopic(topic: string): Promise<void> {
    const t = this.topic(topic);
    this.topics.delete(topic);
    await Promise.all(t.logs.map(async (log, p) => {
      if (log === undefined) return;
      this.loadedCount--;
      await log.close().catch((err: unknown) =>
        this.options.logger.warn({ topic, partition: p, err: (err as Error).message }, 'a partition of a deleted topic did not close cleanly'));
    }));
  }

  /** Removes the directories of a topic's partitions: {@link createTopicLogs} made them and the catalog refused the topic, or the topic was deleted. */
  deleteTopicLogs(topic: string, partitions: number): void {
    for (let p = 0; p < partitions; p++) {
      this.files.transient(() => fs.rmSync(path.join(this.dir, partitionDirName(topic, p)), { recursive: true, force: true }));
    }
  }

  /**
   * Registers a topic whose partition directories exist; nothing is opened until used.
   * @param created the directories were just made by {@link createTopicLogs}: every partition is empty
   */
  addTopic(topic: string, partitions: number, config: LogConfig, created = false): void {
    this.topics.set(topic, {
      config, logs: new Array<PartitionLog | undefined>(partitions).fill(undefined), fresh: new Uint8Array(partitions).fill(created ? 1 : 0),
      corrupt: new Map(),
    });
  }

  /**
   * The corrupt batches found in a partition since start-up (at open, by reads, by compaction: see
   * {@link PartitionLog.open}), in the order found, those below the log start included; none for a partition not
   * opened since. @throws OnelogError `UNKNOWN_TOPIC`
   */
  corruptBatches(topic: string, partition: number): CorruptBatch[] {
    return [...this.topic(topic).corrupt.get(partition)?.values() ?? []];
  }

  /**
   * Tells `listener` of each corrupt batch found from now on, and at once of those found already (at start-up,
   * before the broker's monitor existed): the broker raises its alerts from them. One listener; a second replaces it.
   */
  watchCorruption(listener: (topic: string, partition: number, batch: CorruptBatch) => void): void {
    this.corruptionListener = listener;
    for (const [topic, t] of this.topics) {
      for (const [partition, batches] of t.corrupt) for (const batch of batches.values()) listener(topic, partition, batch);
    }
  }

  /** Records a corrupt batch a partition's log found, and tells the listener. */
  private noteCorrupt(topic: string, t: TopicLogs, partition: number, batch: CorruptBatch): void {
    let found = t.corrupt.get(partition);
    if (found === undefined) t.corrupt.set(partition, (found = new Map()));
    const key = `${batch.segment}@${batch.position}`;
    if (found.has(key)) return;
    found.set(key, batch);
    this.corruptionListener?.(topic, partition, batch);
  }

  /** Applies new topic settings to every loaded partition now, and to the others when they load. */
  setConfig(topic: string, config: LogConfig): void {
    const t = this.topic(topic);
    t.config = config;
    for (const log of t.logs) log?.setConfig(config);
  }

  /** The topic's settings. @throws OnelogError `UNKNOWN_TOPIC` */
  config(topic: string): LogConfig {
    return this.topic(topic).config;
  }

  /** Whether the topic exists (and is not being deleted). */
  has(topic: string): boolean {
    return this.topics.has(topic);
  }

  /** How many partitions the topic has; opens nothing. @throws OnelogError `UNKNOWN_TOPIC` */
  partitionCount(topic: string): number {
    return this.topic(topic).logs.length;
  }

  /** Every partition log of a topic, loading those not loaded. @throws OnelogError `UNKNOWN_TOPIC`, as {@link get} */
  partitions(topic: string): PartitionLog[] {
    const t = this.topic(topic);
    return t.logs.map((_, p) => this.load(topic, t, p));
  }

  /**
   * Every partition's log start offset and high watermark, loading the partitions not loaded, except those
   * known empty (a topic just created answers at once, however many partitions it has).
   * @throws OnelogError `UNKNOWN_TOPIC`, as {@link get}
   */
  offsets(topic: string): PartitionOffsets[] {
    const t = this.topic(topic);
    return t.logs.map((_, p) => {
      if (t.fresh[p] === 1 && t.logs[p] === undefined) return { partition: p, logStartOffset: 0, highWatermark: 0 };
      const log = this.load(topic, t, p);
      return { partition: p, logStartOffset: log.logStartOffset, highWatermark: log.highWatermark };
    });
  }

  /** The topic's partitions loaded now (opens nothing). */
  loaded(topic: string): PartitionLog[] {
    return this.topic(topic).logs.filter((log): log is PartitionLog => log !== undefined);
  }

  /**
   * One partition's log, loaded (opened, recovered if a crash left it unclean) on first use.
   * @throws OnelogError `UNKNOWN_TOPIC`, `UNKNOWN_PARTITION`, `INVALID_REQUEST`; `RESOURCE_EXHAUSTED`,
   *   `STORAGE_ERROR`, `CORRUPT_MESSAGE` if it cannot be opened (nothing stays half open: the next use retries)
   */
  get(topic: string, partition: unknown): PartitionLog {
    const t = this.topic(topic);
    if (typeof partition !== 'number' || !Number.isInteger(partition) || partition < 0) {
      throw new OnelogError('INVALID_REQUEST', `partition must be an integer >= 0, got ${JSON.stringify(partition)}`, {
        topic, partition,
      });
    }
    if (partition >= t.logs.length) {
      throw new OnelogError(
        'UNKNOWN_PARTITION',
        `topic ${topic} has no partition ${partition}: it has partitions 0 to ${t.logs.length - 1}`,
        { topic, partition, partitions: t.logs.length },
      );
    }
    return this.load(topic, t, partition);
  }

  /** Nothing to do: this process is the only writer of its data directory's log. */
  refresh(): void {}

  /**
   * Runs `work` on every partition of a topic for a background sweep (retention): a partition not loaded is
   * opened for it and unloaded right after, if nothing else started using it; one known empty since its
   * creation is skipped. Yields to the event loop every few partitions. A partition that fails is reported to
   * `onError` and the sweep goes on.
   * @returns what `work` answered, for the partitions visited
   */
  async visit<T>(topic: string, work: (log: PartitionLog) => T, onError: (partition: number, err: Error) => void): Promise<T[]> {
    const out: T[] = [];
    const count = this.partitionCount(topic);
    for (let p = 0; p < count; p++) {
      if (p % VISIT_YIELD_EVERY === VISIT_YIELD_EVERY - 1) await new Promise<void>((resolve) => setImmediate(resolve));
      const t = this.topics.get(topic);
      if (t === undefined) break;
      if (t.fresh[p] === 1 && t.logs[p] === undefined) continue; // empty since it was created: nothing to do
      const wasLoaded = t.logs[p] !== undefined;
      try {
        const log = this.load(topic, t, p);
        try {
          out.push(work(log));
        } finally {
          if (!wasLoaded && log.closeIfIdle()) this.unload(t, p);
        }
      } catch (err) {
        onError(p, err as Error);
      }
    }
    return out;
  }

  /**
   * Appends batches to partitions of one request (the batches of one partition in order). Before anything
   * is written, the disk must have room for all of them (statfs; one reading serves up to a second of
   * requests while they leave 256 MiB free by it), so a full disk refuses the request whole.
   * A partition can still fail once others stored their batches (the disk filled meanwhile, no descriptor):
   * the error then names, in `stored`, what was stored where; a retry stores those again unless the producer
   * is idempotent (as with Kafka, a produce across partitions is not atomic).
   * @throws OnelogError `RESOURCE_EXHAUSTED` (disk) before anything is written; the failure given to
   *   {@link stopWrites}; as {@link PartitionLog.appendBatch}
   */
  async appendAll(batches: readonly { log: PartitionLog; batch: Buffer }[]): Promise<AppendResult[]> {
    if (this.stopped !== null) throw this.stopped;
    let bytes = 0;
    for (const { batch } of batches) bytes += batch.length;
    this.ensureDiskRoom(bytes, batches[0]?.log.topic);
    const settled = await Promise.allSettled(batches.map(({ log, batch }) => log.appendBatch(batch)));
    const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed === undefined) return settled.map((r) => (r as PromiseFulfilledResult<AppendResult>).value);
    this.diskReading = null; // a full disk shows in the next request's reading
    const stored = settled.flatMap((r, i) => r.status === 'fulfilled'
      ? [{ partition: batches[i]!.log.partition, baseOffset: r.value.baseOffset, lastOffset: r.value.lastOffset }] : []);
    throw partialAppendError(storageError(failed.reason, 'append', {}), stored);
  }

  /**
   * Refuses every later append with `failure` (the broker's catalog or offset store failed: the broker accepts
   * no write, see write-fence.ts). Reads go on.
   */
  stopWrites(failure: OnelogError): void {
    this.stopped ??= failure;
  }

  /**
   * Checks that the log directory's file system has room for a write of `bytes`, plus 1 MiB of headroom before an
   * append (`topic` given), {@link STORE_WRITE_HEADROOM_BYTES} before a write of a store beside the log in the data
   * directory (the offset store, whose LMDB reports a full disk as an I/O error): groups keep committing (and
   * retention can free space) once appends are refused.
   * @param topic names the topic in the error, if the write is an append
   * @throws OnelogError `RESOURCE_EXHAUSTED` (resource `disk`) if it has not
   */
  ensureDiskRoom(bytes: number, topic?: string): void {
    const reading = this.diskReading;
    if (reading !== null && performance.now() - reading.atMs < DISK_READING_MS &&
      reading.freeBytes - reading.requestedSince - bytes >= DISK_READING_MARGIN_BYTES) {
      reading.requestedSince += bytes;
      return;
    }
    const { bavail, bsize } = fs.statfsSync(this.dir);
    const free = bavail * bsize;
    this.diskReading = { atMs: performance.now(), freeBytes: free, requestedSince: bytes };
    const headroom = topic === undefined ? STORE_WRITE_HEADROOM_BYTES : DISK_HEADROOM_BYTES;
    if (free >= bytes + headroom) return;
    throw new OnelogError('RESOURCE_EXHAUSTED', `the disk holding ${this.dir} has ${free} bytes free, and this request needs ` +
      `${bytes} (plus ${headroom} of headroom${topic === undefined ? '' : ' for indexes and checkpoints'}); nothing was stored. Free space ` +
      '(retention deletes old segments: onelog topics enforce-retention, or lower retention.ms / retention.bytes) and retry',
    { topic, resource: 'disk', freeBytes: free, requestBytes: bytes });
  }

  /** Counts, for logs and tests. */
  stats(): { topics: number; partitions: number; loaded: number } {
    let partitions = 0;
    for (const t of this.topics.values()) partitions += t.logs.length;
    return { topics: this.topics.size, partitions, loaded: this.loadedCount };
  }

  private topic(topic: string): TopicLogs {
    const t = this.topics.get(topic);
    if (!t) throw unknownTopic(topic);
    return t;
  }

  /** @param recover validate the whole active segment: the partition was written since the last clean shutdown */
  private load(topic: string, t: TopicLogs, partition: number, recover = false): PartitionLog {
    const existing = t.logs[partition];
    if (existing !== undefined) return existing;
    const name = partitionDirName(topic, partition);
    let log: PartitionLog;
    try {
      log = PartitionLog.open(path.join(this.dir, name), topic, partition, {
        ...this.options, config: t.config, recoverActiveSegment: recover,
        onCorrupt: (batch) => this.noteCorrupt(topic, t, partition, batch),
        beforeFirstWrite: () => this.journal.add(name, (err) =>
          this.options.logger.warn({ topic, partition, err: err.message }, 'could not note the partition for recovery at start; it is recovered when first used')),
      });
    } catch (err) {
      throw storageError(err, `opening partition ${topic}/${partition}`, { topic, partition });
    }
    if (this.waitsEnded) log.endWaits();
    t.logs[partition] = log;
    t.fresh[partition] = 0;
    this.loadedCount++;
    return log;
  }

  private unload(t: TopicLogs, partition: number): void {
    t.logs[partition] = undefined;
    this.loadedCount--;
  }

  /** Ends every long-poll fetch waiting on any log (shutdown); a log opened later lets none wait either. */
  endWaits(): void {
    this.waitsEnded = true;
    for (const t of this.topics.values()) for (const log of t.logs) log?.endWaits();
  }

  /**
   * Closes every log after its pending syncs; the journal then keeps only the partitions that could not
   * close cleanly (a failed sync), so the next start recovers just those.
   */
  async close(): Promise<void> {
    const stillUnclean: string[] = [];
    for (const [topic, t] of this.topics) {
      await Promise.all(t.logs.map(async (log, p) => {
        if (log === undefined) return;
        await log.close().catch((err: unknown) =>
          this.options.logger.warn({ topic, partition: p, err: (err as Error).message }, 'a partition did not close cleanly'));
        if (!log.isClean) stillUnclean.push(partitionDirName(topic, p));
      }));
    }
    this.topics.clear();
    this.loadedCount = 0;
    this.journal.retainOnly(stillUnclean);
    this.files.closeAll();
  }
}

/** The directory of a partition inside the log directory: `<topic>-<partition>`. */
export function partitionDirName(topic: string, partition: number): string {
  return `${topic}-${partition}`;
}

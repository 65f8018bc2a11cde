/**
 * The broker's partitions in cluster mode (docs/cluster.md): every topic's partitions as objects in S3-compatible
 * storage, through the {@link ObjectLogStore} (appends buffered for the flush window, PUT, committed by the
 * {@link Sequencer}; reads by index lookup and ranged GET), behind the {@link Logs} interface the consumer manager
 * reads through, so the broker runs the same code on both engines.
 *
 * Several brokers share the partitions, so what this broker holds in memory can lag behind what another did:
 * - positions: each partition's log start offset and high watermark are cached, moved by this broker's own
 *   commits and reads, by the sequencer's notifications of every broker's commits (within milliseconds), and
 *   read from PostgreSQL by {@link ClusterLogs.refresh}, which the broker calls before a fetch, so a fetch
 *   always sees every acknowledged record;
 * - topics: a topic created, altered or deleted by another broker is learned from the notification this class
 *   sends on its channel (`<prefix>topics`) and, for a topic not known yet, from the catalog at once.
 *
 * What differs from the local engine: idempotent batches are checked by the partition's sequencer at flush time
 * (a request spanning partitions is then not refused whole); retention moves the log start to the first chunk
 * (not batch) that must stay; compaction (src/log/objects/compactor.ts) rewrites a partition's chunks into new objects
 * (offsets kept) and replaces their index rows, run by the broker holding `job:compact` on schedule (never touching
 * the partition's last chunk, the equivalent of Kafka's active segment) and by the broker asked on demand.
 */
import { isCompacted } from '../../protocol/types.js';
import type pg from 'pg';
import type { Catalog } from '../../catalog/catalog.js';
import type { Clock } from '../../common/clock.js';
import type { Logger } from '../../common/logger.js';
import { OnelogError } from '../../protocol/errors.js';
import { pickTopicConfig } from '../../protocol/topic-config.js';
import type { StoredRecord } from '../../protocol/types.js';
import { coverRecords, takeRecords } from '../../protocol/batch-reads.js';
import { partialAppendError } from '../appends.js';
import { retentionQuestions, retentionTarget } from '../retention.js';
import { defaultLogCleaner } from '../compaction.js';
import type { LogCleaner } from '../compaction.js';
import type { CompactionStats } from '../../protocol/topics.js';
import { logLogStartMove } from '../log-start.js';
import type { LogStartReason } from '../log-start.js';
import type { PartitionPositions } from './object-log.js';
import type { BrokerPartition, Logs, PartitionOffsets, RetentionMove, StartReport, TopicLayout } from '../logs.js';
import type { ReadLimits } from '../partition.js';
import type { AppendResult, LogConfig } from '../partition.js';
import type { UnreadRange } from '../partition.js';
import type { ObjectLogStore } from './object-log.js';
import { compactPartition } from './compactor.js';
import type { CompactorOptions } from './compactor.js';
import { mergePartition } from './merger.js';
import type { ObjectStore } from './object-store.js';
import type { Sequencer, SequencerListener } from './sequencer.js';
import { sweepObjects } from './sweep.js';
import { unknownTopic } from '../../protocol/validate.js';

/** Options of {@link ClusterLogs.open}. */
export interface ClusterLogsOptions {
  store: ObjectLogStore;
  sequencer: Sequencer;
  /** The catalog: a topic another broker created is read from it. */
  catalog: Catalog;
  /** The PostgreSQL pool the sequencer and the leases run on, if any; ended by {@link ClusterLogs.close}. */
  pool?: pg.Pool;
  /** The object store the log's objects are in (merge and sweep jobs); closed by {@link ClusterLogs.close}. */
  objects: ObjectStore;
  /** How often the merge job runs, ms. @default 30000 */
  mergeIntervalMs?: number;
  /** How often the sweep job runs, ms. @default 60000 */
  sweepIntervalMs?: number;
  /**
   * How often the compaction job (`job:compact`) runs over the compacted topics, ms; 0 = only on demand (the
   * broker's `compactionIntervalMs`). @default 15000 (the embedded default's background compaction)
   */
  compactionIntervalMs?: number;
  /**
   * The key map compaction uses (its dedupe buffer, `serve --cleaner-dedupe-buffer-bytes`), shared by the broker's
   * compactions, one at a time. @default {@link defaultLogCleaner} (64 MiB)
   */
  cleaner?: LogCleaner;
  /** Object size, chunks per commit and a test hook of the compactor. @default see {@link CompactorOptions} */
  compactor?: CompactorOptions;
  clock: Clock;
  logger: Logger;
}

/**
 * A job of the log's upkeep, which the broker runs every `intervalMs` under the job's lease `lease` (`job:<what>`,
 * src/cluster/placement.ts), so that one broker of the cluster at a time runs it.
 */
export interface ObjectLogJob {
  name: string;
  lease: string;
  intervalMs: number;
  run(): Promise<unknown>;
}

interface TopicPartitions {
  config: LogConfig;
  partitions: ObjectPartition[];
}

export class ClusterLogs implements Logs {
  private readonly topics = new Map<string, TopicPartitions>();
  private stopped: OnelogError | null = null;
  private closed = false;
  /** Set by {@link endWaits}: partitions made later let no long-poll wait (the broker is shutting down). */
  private waitsEnded = false;

  /** Hears the topic changes of every broker (set by {@link open}); lost, topics changed elsewhere are still found on a miss, and at the next start. */
  private listener: SequencerListener | null = null;
  private readonly appendWatchers: Array<(topic: string) => void> = [];

  private constructor(private readonly options: ClusterLogsOptions) {}

  /**
   * Starts hearing topic changes ({@link Sequencer.listenTopics}).
   * @throws OnelogError `STORAGE_ERROR` if the sequencer cannot be heard
   */
  static async open(options: ClusterLogsOptions): Promise<ClusterLogs> {
    const logs = new ClusterLogs(options);
    logs.listener = await options.sequencer.listenTopics((topic) => void logs.reload(topic));
    options.store.onCommit((topic, partition, highWatermark) => {
      logs.topics.get(topic)?.partitions[partition]?.seen({ highWatermark });
      for (const watcher of logs.appendWatchers) watcher(topic);
    });
    return logs;
  }

  /** @see Logs.watchAppends: every commit of this broker's and every one another broker announced. */
  watchAppends(listener: (topic: string) => void): void {
    this.appendWatchers.push(listener);
  }

  /** Registers the catalog's topics with their partitions' positions as PostgreSQL has them now. */
  async start(topics: readonly TopicLayout[]): Promise<StartReport> {
    let partitions = 0;
    for (const t of topics) {
      this.addTopic(t.name, t.partitions, t.config);
      partitions += t.partitions;
    }
    for (const { topic, partition, ...positions } of await this.options.sequencer.allStates()) this.topics.get(topic)?.partitions[partition]?.seen(positions);
    return { topics: topics.length, partitions, recovered: 0, repaired: 0 };
  }

  has(topic: string): boolean {
    return this.topics.has(topic);
  }

  partitionCount(topic: string): number {
    return this.topic(topic).partitions.length;
  }

  config(topic: string): LogConfig {
    return this.topic(topic).config;
  }

  get(topic: string, partition: unknown): ObjectPartition {
    const t = this.topic(topic);
    if (typeof partition !== 'number' || !Number.isInteger(partition) || partition < 0) {
      throw new OnelogError('INVALID_REQUEST', `partition must be an integer >= 0, got ${JSON.stringify(partition)}`, { topic, partition });
    }
    const log = t.partitions[partition];
    if (log === undefined) {
      throw new OnelogError('UNKNOWN_PARTITION', `topic ${topic} has no partition ${partition}: it has partitions 0 to ${t.partitions.length - 1}`,
        { topic, partition, partitions: t.partitions.length });
    }
    return log;
  }

  partitions(topic: string): ObjectPartition[] {
    return [...this.topic(topic).partitions];
  }

  loaded(topic: string): ObjectPartition[] {
    return this.partitions(topic);
  }

  /** Every partition's positions and size, read from PostgreSQL now. */
  async offsets(topic: string): Promise<PartitionOffsets[]> {
    const t = this.topic(topic);
    const sizes = await this.options.sequencer.sizes(topic);
    await this.refresh(topic, t.partitions.map((p) => p.partition));
    return t.partitions.map((p) => {
      p.sizeBytes = sizes.get(p.partition) ?? 0;
      return { partition: p.partition, logStartOffset: p.logStartOffset, highWatermark: p.highWatermark };
    });
  }

  async refresh(topic: string, partitions: readonly number[] = []): Promise<void> {
    if (!this.topics.has(topic)) await this.reload(topic);
    const t = this.topics.get(topic);
    if (t === undefined) return;
    const wanted = partitions.filter((p) => Number.isInteger(p) && p >= 0 && p < t.partitions.length);
    if (wanted.length === 0) return;
    for (const [partition, state] of await this.options.sequencer.states(topic, wanted)) t.partitions[partition]?.seen(state);
  }

  async visit<T>(topic: string, work: (log: BrokerPartition) => T, onError: (partition: number, err: Error) => void): Promise<T[]> {
    const out: T[] = [];
    for (const log of this.partitions(topic)) {
      try {
        out.push(work(log));
      } catch (err) {
        onError(log.partition, err as Error);
      }
    }
    return out;
  }

  /**
   * Appends through the object log: resolves once the object holding the batches is PUT and committed.
   * @throws OnelogError as {@link Logs.appendAll}; `NOT_LEADER_OR_FOLLOWER` (retriable) when another broker leads a
   *   partition
   */
  async appendAll(batches: readonly { log: BrokerPartition; batch: Buffer }[]): Promise<AppendResult[]> {
    if (this.stopped !== null) throw this.stopped;
    const outcomes = await this.options.store.append(batches.map(({ log, batch }) => ({ topic: log.topic, partition: log.partition, batch })));
    const failed = outcomes.find((o): o is { error: OnelogError } => 'error' in o);
    if (failed === undefined) return outcomes as AppendResult[];
    const stored = outcomes.flatMap((o, i) => ('error' in o ? [] : [{ partition: batches[i]!.log.partition, baseOffset: o.baseOffset, lastOffset: o.lastOffset }]));
    throw partialAppendError(failed.error, stored);
  }

  async createTopicLogs(topic: string, partitions: number): Promise<void> {
    await this.options.sequencer.addPartitions(topic, partitions);
  }

  addTopic(topic: string, partitions: number, config: LogConfig, created = false): void {
    const existing = this.topics.get(topic);
    if (existing !== undefined && existing.partitions.length === partitions) {
      this.setConfig(topic, config);
      return;
    }
    const t: TopicPartitions = { config, partitions: [] };
    for (let p = 0; p < partitions; p++) t.partitions.push(new ObjectPartition(topic, p, t, this.options, (log, all) => this.compactLog(log, all)));
    if (this.waitsEnded) for (const log of t.partitions) log.endWaits();
    this.topics.set(topic, t);
    if (created) this.notify(topic);
  }

  async retireTopic(topic: string): Promise<void> {
    const t = this.topics.get(topic);
    this.topics.delete(topic);
    for (const log of t?.partitions ?? []) log.endWaits();
  }

  async deleteTopicLogs(topic: string, _partitions: number): Promise<void> {
    await this.options.sequencer.deletePartitions(topic);
    this.topics.delete(topic);
    this.notify(topic);
  }

  setConfig(topic: string, config: LogConfig): void {
    const t = this.topic(topic);
    const changed = JSON.stringify(t.config) !== JSON.stringify(config);
    t.config = config;
    if (changed) this.notify(topic);
  }

  /**
   * The compaction, merge and sweep jobs (docs/cluster.md), each to be run by the broker holding its job lease
   * (`job:compact`, `job:merge`, `job:sweep`, held three intervals and renewed at each run), skipped by the others.
   * Compaction runs every `compactionIntervalMs` (none when 0) over the compacted topics' partitions, leaving each
   * partition's last chunk alone; a run longer than its lease may overlap the next holder's, which is safe: each
   * replacement of index rows checks that they are still as read.
   */
  backgroundJobs(): ObjectLogJob[] {
    const { mergeIntervalMs = 30_000, sweepIntervalMs = 60_000, compactionIntervalMs = 15_000, sequencer, objects } = this.options;
    const compaction: ObjectLogJob[] = compactionIntervalMs <= 0 ? [] : [{
      name: 'compacting topics', lease: 'job:compact', intervalMs: compactionIntervalMs, run: () => this.compactAll(),
    }];
    return [
      ...compaction,
      { name: 'merging small objects', lease: 'job:merge', intervalMs: mergeIntervalMs, run: async () => {
        for (const [topic, t] of this.topics) {
          for (const log of t.partitions) if (!this.closed) await mergePartition(sequencer, objects, topic, log.partition);
        }
      } },
      { name: 'sweeping objects', lease: 'job:sweep', intervalMs: sweepIntervalMs, run: () => sweepObjects(objects, sequencer) },
    ];
  }

  /**
   * Compacts a partition now (src/log/objects/compactor.ts), with the cleaner's key map, after this broker's other
   * compactions. A replacement another change won is tried again (at most three times in all) when asked on demand;
   * on schedule the next run takes it up.
   * @param includeLastChunk the partition's last chunk too (on demand, as the local engine seals its active segment)
   */
  private async compactLog(log: ObjectPartition, includeLastChunk: boolean): Promise<CompactionStats> {
    const { sequencer, objects, clock, cleaner = defaultLogCleaner() } = this.options;
    let result: Awaited<ReturnType<typeof compactPartition>> | undefined;
    for (let attempt = 1; attempt <= (includeLastChunk ? 3 : 1); attempt++) {
      const { minCompactionLagMs, deleteRetentionMs } = log.settings;
      result = await cleaner.withKeyMap((map) => compactPartition(sequencer, objects, log.topic, log.partition,
        { now: clock.now(), minCompactionLagMs, deleteRetentionMs, includeLastChunk }, map, this.options.compactor));
      if (result.stopped === null) break;
      this.options.logger.info({ topic: log.topic, partition: log.partition, stopped: result.stopped, attempt },
        'compaction stopped before the end: another change of the partition\'s index rows won (changed: a merge, retention, another ' +
        'compaction), or an object waited past the sequencer\'s maxObjectAgeMs (stale); what it committed before stays');
    }
    return result!.stats;
  }

  /** The compaction job's run: every partition of every compacted topic, one at a time; a failure is logged and the rest go on. */
  private async compactAll(): Promise<void> {
    for (const [topic, t] of this.topics) {
      if (!isCompacted(t.config.cleanupPolicy)) continue;
      for (const log of t.partitions) {
        if (this.closed) return;
        await this.compactLog(log, false).catch((err: unknown) =>
          this.options.logger.warn({ topic, partition: log.partition, err: (err as Error).message }, 'compaction failed'));
      }
    }
  }

  stopWrites(failure: OnelogError): void {
    this.stopped ??= failure;
  }

  endWaits(): void {
    this.waitsEnded = true;
    for (const t of this.topics.values()) for (const log of t.partitions) log.endWaits();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.endWaits();
    await this.options.store.close();
    await this.listener?.close();
    this.options.objects.close();
    await this.options.pool?.end().catch(() => {});
    this.topics.clear();
  }

  /** Tells the other brokers a topic changed (they read it from the catalog again). */
  private notify(topic: string): void {
    this.options.sequencer.announceTopic(topic).catch((err: unknown) =>
      this.options.logger.warn({ topic, err: (err as Error).message }, 'could not tell the other brokers that a topic changed; they learn it when they next use it'));
  }

  /** Reads a topic from the catalog again: added, altered, or gone (another broker changed it). */
  private async reload(topic: string): Promise<void> {
    try {
      const t = await this.options.catalog.topics.get(topic);
      if (this.closed) return;
      if (t === undefined) {
        await this.retireTopic(topic);
        return;
      }
      const existing = this.topics.get(topic);
      if (existing !== undefined && existing.partitions.length === t.partitions) {
        existing.config = pickTopicConfig(t);
        return;
      }
      this.addTopic(topic, t.partitions, pickTopicConfig(t));
      for (const [partition, state] of await this.options.sequencer.states(topic, [...Array(t.partitions).keys()])) {
        this.topics.get(topic)?.partitions[partition]?.seen(state);
      }
    } catch (err) {
      this.options.logger.warn({ topic, err: (err as Error).message }, 'could not read a topic another broker changed from the catalog');
    }
  }

  private topic(topic: string): TopicPartitions {
    const t = this.topics.get(topic);
    if (!t) throw unknownTopic(topic);
    return t;
  }
}

/** One partition in object storage: cached positions, reads through the object log. */
export class ObjectPartition implements BrokerPartition {
  logStartOffset = 0;
  highWatermark = 0;
  /** Bytes of the chunks holding the log, as last read ({@link ClusterLogs.offsets}). */
  sizeBytes = 0;
  private waits = new Set<() => void>();
  /** Set by {@link endWaits}: later long-polls answer at once (the broker is shutting down). */
  private waitsEnded = false;

  constructor(
    readonly topic: string,
    readonly partition: number,
    private readonly owner: { config: LogConfig },
    private readonly options: Pick<ClusterLogsOptions, 'store' | 'sequencer' | 'clock' | 'logger'>,
    /** Compacts this partition now ({@link ClusterLogs}' compactLog). */
    private readonly compactor: (log: ObjectPartition, includeLastChunk: boolean) => Promise<CompactionStats>,
  ) {}

  get settings(): LogConfig {
    return this.owner.config;
  }

  /** Moves the cached positions forward to what was seen (never back: notifications may arrive out of order). */
  seen(positions: Partial<PartitionPositions>): void {
    if (positions.logStartOffset !== undefined) this.logStartOffset = Math.max(this.logStartOffset, positions.logStartOffset);
    if (positions.highWatermark !== undefined) this.highWatermark = Math.max(this.highWatermark, positions.highWatermark);
  }

  async fetch(offset: number, limits: ReadLimits): Promise<{ records: StoredRecord[]; nextOffset: number }> {
    const read = await this.options.store.read(this.topic, this.partition, offset, limits.maxBytes);
    this.seen(read);
    const records: StoredRecord[] = [];
    const taken = takeRecords(read.batches, offset, Infinity, limits.maxRecords, records);
    return { records, nextOffset: taken.cut ? taken.nextOffset : read.nextOffset };
  }

  async readBatches(offset: number, maxBytes: number, maxRecords = Infinity): Promise<{ batches: Buffer; nextOffset: number }> {
    const read = await this.options.store.read(this.topic, this.partition, offset, maxBytes);
    this.seen(read);
    const covered = coverRecords(read.batches, offset, Infinity, maxRecords);
    return covered.bytes === read.batches.length ? { batches: read.batches, nextOffset: read.nextOffset }
      : { batches: read.batches.subarray(0, covered.bytes), nextOffset: covered.nextOffset };
  }

  /** The first offset whose record's timestamp is at or after `timestamp` (ms), or the high watermark. */
  async offsetForTimestamp(timestamp: number): Promise<number> {
    let from = this.logStartOffset;
    for (;;) {
      const entry = await this.options.sequencer.firstChunkAtOrAfter(this.topic, this.partition, timestamp, from);
      if (entry === undefined) return (await this.positions()).highWatermark;
      const start = Math.max(entry.baseOffset, this.logStartOffset);
      const { records } = await this.fetch(start, { maxRecords: entry.endOffset - start, maxBytes: entry.length });
      const found = records.find((r) => r.timestamp >= timestamp && r.offset < entry.endOffset);
      if (found !== undefined) return found.offset;
      from = entry.endOffset;
    }
  }

  /**
   * What is left to read from `offset`: records (the offsets left: exact on a topic not compacted, whose offsets
   * have no gaps; on a compacted one an upper bound, `estimate: true`, as compaction leaves gaps), the first's
   * timestamp, bytes.
   */
  async unread(offset: number): Promise<UnreadRange> {
    const from = Math.min(Math.max(offset, this.logStartOffset), this.highWatermark);
    if (from >= this.highWatermark) return { records: 0, estimate: false, firstTimestamp: null, bytes: 0 };
    const [{ records }, bytes] = await Promise.all([
      this.fetch(from, { maxRecords: 1, maxBytes: 1 }), this.options.sequencer.bytesFrom(this.topic, this.partition, from),
    ]);
    const compacted = isCompacted(this.settings.cleanupPolicy);
    return { records: this.highWatermark - from, estimate: compacted, firstTimestamp: records[0]?.timestamp ?? null, bytes };
  }

  async deleteRecordsBefore(offset: number, reason: LogStartReason): Promise<number> {
    const previous = this.logStartOffset;
    const logStartOffset = await this.options.store.deleteRecordsBefore(this.topic, this.partition, offset);
    if (logStartOffset > previous) logLogStartMove(this.options.logger, { topic: this.topic, partition: this.partition }, previous, logStartOffset, reason);
    this.seen({ logStartOffset });
    return logStartOffset;
  }

  async waitForData(offset: number, maxWaitMs: number): Promise<void> {
    if (this.highWatermark > offset || maxWaitMs <= 0 || this.waitsEnded) return;
    let ended!: () => void;
    const end = new Promise<void>((resolve) => (ended = resolve));
    this.waits.add(ended);
    try {
      await Promise.race([this.options.store.waitForData(this.topic, this.partition, offset, maxWaitMs), end]);
    } finally {
      this.waits.delete(ended);
    }
    await this.positions();
  }

  /** Ends the long-polls waiting on this partition (shutdown, topic deleted). */
  endWaits(): void {
    this.waitsEnded = true;
    for (const end of this.waits) end();
  }

  async flush(): Promise<void> {
    // Appended batches are in a PUT object and committed before their append resolves.
  }

  /**
   * Retention at the clock's time (retention.ms, retention.bytes): the log start moves to the first record not
   * older than retention.ms, or to the first chunk from which the rest of the log fits in retention.bytes.
   */
  async enforceRetention(): Promise<RetentionMove | null> {
    const asked = retentionQuestions(this.settings, this.options.clock.now());
    if (asked === null) return null;
    const previous = (await this.positions()).logStartOffset;
    const target = retentionTarget(
      previous,
      asked.timestamp === null ? null : await this.offsetForTimestamp(asked.timestamp),
      asked.retentionBytes === null ? null : await this.options.sequencer.sizeBoundary(this.topic, this.partition, asked.retentionBytes),
    );
    if (target === null) return null;
    const logStartOffset = await this.deleteRecordsBefore(target.offset, target.reason);
    return { previousLogStartOffset: previous, logStartOffset, reason: target.reason };
  }

  /**
   * Compacts the partition now, on demand (src/log/objects/compactor.ts; the local engine's rules, Kafka's LogCleaner):
   * every chunk old enough by `minCompactionLagMs`, the last one included (as the local engine seals its active
   * segment first). Run by the broker asked, without the `job:compact` lease: it is safe beside the job's run on
   * another broker, because every replacement of index rows checks that they are still as read (one that another
   * change won is tried again, three times at most).
   * @param rollActive true on demand; false (the broker's per-topic background pass) does nothing here: in cluster
   *   mode the background compaction is the `job:compact` job ({@link ClusterLogs.backgroundJobs}), on one broker
   * @returns null for a topic not compacted, and for a background call
   * @throws OnelogError `STORAGE_ERROR` if the object store or PostgreSQL fails (what was committed before stays)
   */
  async compact(rollActive = false): Promise<CompactionStats | null> {
    if (!isCompacted(this.settings.cleanupPolicy) || !rollActive) return null;
    const stats = await this.compactor(this, true);
    await this.positions();
    return stats;
  }

  /** Reads the positions from PostgreSQL now. */
  private async positions(): Promise<PartitionPositions> {
    const positions = await this.options.store.positions(this.topic, this.partition);
    this.seen(positions);
    return positions;
  }
}

/**
 * Every partition of every topic, as the broker composes them (DESIGN.md: the log store), whichever engine holds
 * them: the data directory's segment files ({@link LogManager}, the embedded default) or objects in S3-compatible
 * storage indexed in PostgreSQL (log/objects/cluster-logs.ts, cluster mode). The consumer manager, the produce path
 * and topic administration see only this and {@link Partition}.
 *
 * A topic's layout (its partitions and settings) and a partition's positions are answered at once from what the
 * engine holds in memory. In cluster mode other brokers move them too: {@link refresh} brings a topic up to date
 * from the shared stores, and the broker calls it where a request must see every broker's writes (a fetch, a
 * produce to a topic created elsewhere). Which broker leads a partition or runs a job is not the log's to say: that
 * is the cluster's placement (src/cluster/placement.ts), which the embedded default has none of.
 */
import type { OnelogError } from '../protocol/errors.js';
import type { CompactionStats } from '../protocol/topics.js';
import type { LogStartReason } from './log-start.js';
import type { AppendResult, LogConfig } from './partition.js';
import type { CorruptBatch } from './partition.js';
import type { Awaitable, Partition } from './partition.js';

/** A topic as the catalog knows it. */
export interface TopicLayout {
  name: string;
  partitions: number;
  config: LogConfig;
}

/** What {@link Logs.start} did. */
export interface StartReport {
  topics: number;
  partitions: number;
  /** Partitions opened to recover them (written since the last clean shutdown). */
  recovered: number;
  /** Partitions that were missing and were created empty. */
  repaired: number;
}

/** Where a partition's log starts and ends. */
export interface PartitionOffsets {
  partition: number;
  logStartOffset: number;
  highWatermark: number;
}

/** What retention did to one partition: the log start offset's move and why. */
export interface RetentionMove {
  previousLogStartOffset: number;
  logStartOffset: number;
  reason: LogStartReason;
}

/** A partition with what the broker does to it besides reading: produce checks and upkeep. */
export interface BrokerPartition extends Partition {
  /**
   * Checks an idempotent batch against the producer state without writing anything, so a request spanning
   * partitions can be refused whole before any of it is appended (local engine). Absent in cluster mode, where the
   * partition's sequencer checks each batch when it commits it (a request spanning partitions is not refused whole).
   * @returns true when the batch is a retry of one already stored
   * @throws OnelogError `OUT_OF_ORDER_SEQUENCE`, `INVALID_PRODUCER_EPOCH`, `UNKNOWN_PRODUCER_ID`
   */
  checkIdempotentBatch?(batch: Buffer): boolean;
  /**
   * Resolves once the records below `upTo` are synced, whatever the topic's flush policy (local engine); a batch
   * in object storage is durable once its append resolved, so there it resolves at once.
   */
  flush(upTo?: number): Promise<void>;
  /**
   * Applies the topic's retention now (retention.ms, retention.bytes, see retention.ts).
   * @returns the move made, or null when nothing expired
   */
  enforceRetention(): Awaitable<RetentionMove | null>;
  /**
   * One compaction pass if the topic is compacted.
   * @param rollActive compact everything appended so far (on demand), not only what background compaction may
   * @returns what the pass did, or null when the topic is not compacted
   */
  compact(rollActive?: boolean): Promise<CompactionStats | null>;
}

/**
 * Told of an append this broker made once it is done, whoever asked (a client's produce, or the broker moving a record
 * to a retry tier or the dead letters, or redriving one): the topic, its records and their batches' bytes. The broker
 * counts them (metrics, topic rates), wakes the topic's groups and tells the console (src/broker/open.ts). Must not throw.
 */
export type Appended = (topic: string, records: number, bytes: number) => void;

export interface Logs {
  /**
   * Registers the catalog's topics at start-up (the local engine also repairs and recovers partitions).
   * Partitions open lazily on first use.
   */
  start(topics: readonly TopicLayout[]): Awaitable<StartReport>;
  /** Whether the topic exists (and is not being deleted). */
  has(topic: string): boolean;
  /** How many partitions the topic has; opens nothing. @throws OnelogError `UNKNOWN_TOPIC` */
  partitionCount(topic: string): number;
  /** The topic's settings. @throws OnelogError `UNKNOWN_TOPIC` */
  config(topic: string): LogConfig;
  /**
   * One partition, opened on first use.
   * @throws OnelogError `UNKNOWN_TOPIC`, `UNKNOWN_PARTITION`, `INVALID_REQUEST` (not an integer >= 0);
   *   `RESOURCE_EXHAUSTED`, `STORAGE_ERROR`, `CORRUPT_MESSAGE` if it cannot be opened
   */
  get(topic: string, partition: unknown): BrokerPartition;
  /** Every partition of a topic. @throws OnelogError as {@link get} */
  partitions(topic: string): BrokerPartition[];
  /** The partitions of a topic open now (opens nothing). */
  loaded(topic: string): BrokerPartition[];
  /** Every partition's log start offset and high watermark. @throws OnelogError `UNKNOWN_TOPIC`, as {@link get} */
  offsets(topic: string): Awaitable<PartitionOffsets[]>;
  /**
   * Brings a topic's layout and its partitions' positions up to date with what other brokers did (cluster mode):
   * a topic created, altered or deleted elsewhere, records appended or deleted elsewhere. Nothing to do for the
   * local engine, whose only writer is this process.
   * @param partitions the partitions whose positions are needed now (default: none, the layout only)
   */
  refresh(topic: string, partitions?: readonly number[]): Awaitable<void>;
  /**
   * Runs `work` on every partition of a topic for a background sweep (retention). A partition that fails is
   * reported to `onError` and the sweep goes on.
   * @returns what `work` answered, for the partitions visited
   */
  visit<T>(topic: string, work: (log: BrokerPartition) => T, onError: (partition: number, err: Error) => void): Promise<T[]>;
  /**
   * Appends batches to partitions of one request (the batches of one partition in order); resolves once they are
   * durable as the engine promises (local: the topic's flush policy; objects: the PUT and its commit).
   * @throws OnelogError `RESOURCE_EXHAUSTED` (disk) before anything is written; `NOT_LEADER_OR_FOLLOWER` (cluster,
   *   retriable); a failure once some batches were stored names them in `stored`; as {@link Logs.stopWrites}
   */
  appendAll(batches: readonly { log: BrokerPartition; batch: Buffer }[]): Promise<AppendResult[]>;
  /** Makes a topic's partitions, empty, before the catalog records the topic (undone by {@link deleteTopicLogs}). */
  createTopicLogs(topic: string, partitions: number): Awaitable<void>;
  /** Serves a topic the catalog records (after {@link createTopicLogs}, or a deletion undone). */
  addTopic(topic: string, partitions: number, config: LogConfig, created?: boolean): void;
  /** Stops serving a topic about to be deleted: its partitions close, nothing stored changes. */
  retireTopic(topic: string): Promise<void>;
  /** Removes a deleted topic's partitions and records. */
  deleteTopicLogs(topic: string, partitions: number): Awaitable<void>;
  /** Applies new topic settings to every partition. */
  setConfig(topic: string, config: LogConfig): void;
  /** Refuses every later append with `failure` (the broker's catalog or offset store failed). Reads go on. */
  stopWrites(failure: OnelogError): void;
  /**
   * The corrupt batches found in a partition's files since start-up (local engine: see segment.ts), those below the
   * log start included. Absent in cluster mode, whose objects are never cut or rewritten in place.
   * @throws OnelogError `UNKNOWN_TOPIC`
   */
  corruptBatches?(topic: string, partition: number): CorruptBatch[];
  /**
   * Tells `listener` of each corrupt batch found from now on, and at once of those found already (local engine).
   */
  watchCorruption?(listener: (topic: string, partition: number, batch: CorruptBatch) => void): void;
  /**
   * Tells `listener` of each topic records were appended to from now on, by any broker of the cluster (cluster mode:
   * the sequencer announces every commit). Absent on the local engine, where every append is this broker's own.
   */
  watchAppends?(listener: (topic: string) => void): void;
  /** Ends every long-poll waiting on any partition (shutdown). */
  endWaits(): void;
  /** Writes what waits, closes every partition. */
  close(): Promise<void>;
}

/**
 * The {@link LogStore} interface on the segment engine (the embedded default): the log store contract suite runs
 * on it as on the object log.
 */
import { OnelogError } from '../../protocol/errors.js';
import type { AppendOutcome, AppendRequest, LogRead, LogStore, PartitionPositions } from '../log-store.js';
import type { LogConfig } from '../partition.js';
import type { LogManager } from './log-manager.js';

/** The log store on local segment files: the {@link LogManager} behind the {@link LogStore} interface. */
export class LocalLogStore implements LogStore {
  constructor(private readonly logs: LogManager) {}

  async createTopic(topic: string, partitions: number, config: LogConfig): Promise<void> {
    this.logs.createTopicLogs(topic, partitions);
    this.logs.addTopic(topic, partitions, config, true);
  }

  async append(batches: readonly AppendRequest[]): Promise<AppendOutcome[]> {
    const settled = await Promise.allSettled(batches.map((b) => this.logs.appendAll([{ log: this.logs.get(b.topic, b.partition), batch: b.batch }])));
    return settled.map((r) => (r.status === 'fulfilled' ? r.value[0]! : { error: asOnelogError(r.reason) }));
  }

  async read(topic: string, partition: number, offset: number, maxBytes: number): Promise<LogRead> {
    const log = this.logs.get(topic, partition);
    const { batches, nextOffset } = log.readBatches(offset, maxBytes);
    return { batches, nextOffset, logStartOffset: log.logStartOffset, highWatermark: log.highWatermark };
  }

  async positions(topic: string, partition: number): Promise<PartitionPositions> {
    const log = this.logs.get(topic, partition);
    return { logStartOffset: log.logStartOffset, highWatermark: log.highWatermark };
  }

  async deleteRecordsBefore(topic: string, partition: number, offset: number): Promise<number> {
    return this.logs.get(topic, partition).deleteRecordsBefore(offset, 'delete-records');
  }

  waitForData(topic: string, partition: number, offset: number, maxWaitMs: number): Promise<void> {
    return this.logs.get(topic, partition).waitForData(offset, maxWaitMs);
  }

  close(): Promise<void> {
    return this.logs.close();
  }
}

function asOnelogError(err: unknown): OnelogError {
  return err instanceof OnelogError ? err : new OnelogError('STORAGE_ERROR', err instanceof Error ? err.message : String(err));
}

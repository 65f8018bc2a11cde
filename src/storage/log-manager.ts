/**
 * Owns every partition log of a data directory (Kafka's LogManager): `<dataDir>/<topic>-<partition>/`.
 * Knows nothing of groups or sockets.
 */
import fs from 'node:fs';
import path from 'node:path';
import { OnelogError } from '../protocol/errors.js';
import { PartitionLog } from './partition-log.js';
import type { LogConfig, PartitionLogOptions } from './partition-log.js';

export class LogManager {
  private readonly logs = new Map<string, PartitionLog[]>();

  /**
   * @param dir directory holding one folder per partition
   * @param options shared by every log; each topic brings its own settings in {@link openTopic}
   */
  constructor(
    readonly dir: string,
    private readonly options: Omit<PartitionLogOptions, 'config'>,
  ) {
    fs.mkdirSync(dir, { recursive: true });
  }

  /** Opens (creating if needed) the logs of every partition of a topic, with the topic's settings. */
  openTopic(topic: string, partitions: number, config: LogConfig): PartitionLog[] {
    const opened: PartitionLog[] = [];
    for (let p = 0; p < partitions; p++) {
      const options = { ...this.options, config };
      opened.push(PartitionLog.open(path.join(this.dir, `${topic}-${p}`), topic, p, options));
    }
    this.logs.set(topic, opened);
    return opened;
  }

  /** Every partition log of a topic. @throws OnelogError `UNKNOWN_TOPIC` */
  partitions(topic: string): PartitionLog[] {
    const logs = this.logs.get(topic);
    if (!logs) throw new OnelogError('UNKNOWN_TOPIC', `topic ${topic} does not exist`, { topic });
    return logs;
  }

  /** One partition's log. @throws OnelogError `UNKNOWN_TOPIC`, `UNKNOWN_PARTITION`, `INVALID_REQUEST` */
  get(topic: string, partition: unknown): PartitionLog {
    const logs = this.partitions(topic);
    if (typeof partition !== 'number' || !Number.isInteger(partition) || partition < 0) {
      throw new OnelogError('INVALID_REQUEST', `partition must be an integer >= 0, got ${JSON.stringify(partition)}`, {
        topic, partition,
      });
    }
    const log = logs[partition];
    if (!log) {
      throw new OnelogError(
        'UNKNOWN_PARTITION',
        `topic ${topic} has no partition ${partition}: it has partitions 0 to ${logs.length - 1}`,
        { topic, partition, partitions: logs.length },
      );
    }
    return log;
  }

  /** Ends every long-poll fetch waiting on any log (shutdown). */
  endWaits(): void {
    for (const logs of this.logs.values()) for (const log of logs) log.endWaits();
  }

  /** Closes every log after its pending syncs. */
  async close(): Promise<void> {
    for (const logs of this.logs.values()) await Promise.all(logs.map((l) => l.close()));
    this.logs.clear();
  }
}

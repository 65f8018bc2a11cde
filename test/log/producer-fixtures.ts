/** Shared helpers of the idempotent producer tests: logs opened on temp dirs, idempotent batches, what a log holds. */
import fs from 'node:fs';
import { encodeBatch } from '../../src/protocol/record-batch.js';
import { PartitionLog } from '../../src/log/segments/partition-log.js';
import type { LogOverrides } from './log-fixtures.js';
import { logOptions, readAll, T0 } from './log-fixtures.js';

export const PID = 4242;

export type ProducerLogOptions = LogOverrides & { maxProducers?: number };

/**
 * Opens logs for a test and closes them after it: those a test "crashed" (abandoned without close) are closed
 * only by {@link closeAll}, once it ends.
 */
export function openedLogs() {
  const opened = new Set<PartitionLog>();
  return {
    open(dir: string, overrides: ProducerLogOptions = {}): PartitionLog {
      const { maxProducers, ...rest } = overrides;
      const log = PartitionLog.open(dir, 't', 0, { ...logOptions(rest), ...(maxProducers === undefined ? {} : { maxProducers }) });
      opened.add(log);
      return log;
    },
    async shut(log: PartitionLog): Promise<void> {
      opened.delete(log);
      await log.close();
    },
    async closeAll(): Promise<void> {
      for (const log of opened) await log.close();
      opened.clear();
    },
  };
}

/** An idempotent batch of `count` records whose values are `<epoch>:<sequence>`. */
export function batch(baseSequence: number, count = 1, producerEpoch = 0, producerId = PID, key?: string): Buffer {
  const records = Array.from({ length: count }, (_, i) => ({
    key: key === undefined ? null : Buffer.from(key),
    value: Buffer.from(`${producerEpoch}:${baseSequence + i}`),
  }));
  return encodeBatch(records, 0, T0, { producerId, producerEpoch, baseSequence });
}

/** The values of every readable record, in offset order. */
export function values(log: PartitionLog): string[] {
  return readAll(log).map((r) => r.value!.toString());
}

export const seqs = (from: number, to: number, epoch = 0) => Array.from({ length: to - from }, (_, i) => `${epoch}:${from + i}`);

export function snapshotFiles(dir: string): string[] {
  return fs.readdirSync(dir).filter((f) => f.endsWith('.snapshot')).sort();
}

/**
 * Offset reset plans (Kafka's `kafka-consumer-groups --reset-offsets`): where each partition of a topic
 * moves for a spec, clamped to the readable log. Pure: reads the logs, writes nothing.
 */
import type { ResetOffsetsResult, ResetSpec } from '../protocol/offsets.js';
import { OnelogError } from '../protocol/errors.js';
import type { Awaitable, Partition } from '../log/partition.js';

/** A checkpoint's saved offsets, `topic/partition` -> offset. */
export type CheckpointOffsets = ReadonlyMap<string, number>;

/**
 * Plans a reset of `logs` (one topic's partitions).
 * @param committed current committed offset per partition
 * @param checkpoint the named checkpoint's offsets, for `{ to: 'checkpoint' }`
 * @returns one row per partition; partitions a checkpoint lacks keep their offset (and are left out)
 */
export async function planReset(
  spec: ResetSpec, logs: readonly Partition[], committed: ReadonlyMap<number, number>, checkpoint?: CheckpointOffsets,
): Promise<ResetOffsetsResult['partitions']> {
  const rows: ResetOffsetsResult['partitions'] = [];
  for (const log of logs) {
    const currentOffset = committed.get(log.partition) ?? null;
    const target = await resetTarget(spec, log, currentOffset, checkpoint);
    if (target === null) continue;
    const newOffset = Math.min(Math.max(target, log.logStartOffset), log.highWatermark);
    const row = { partition: log.partition, currentOffset, newOffset };
    if (target < log.logStartOffset) rows.push({ ...row, clamped: 'logStartOffset' });
    else if (target > log.highWatermark) rows.push({ ...row, clamped: 'highWatermark' });
    else rows.push(row);
  }
  return rows;
}

/** The unclamped offset a spec points at in one partition; null when a checkpoint has none for it. */
function resetTarget(spec: ResetSpec, log: Partition, currentOffset: number | null, checkpoint?: CheckpointOffsets): Awaitable<number | null> {
  switch (spec.to) {
    case 'earliest':
      return log.logStartOffset;
    case 'latest':
      return log.highWatermark;
    case 'offset':
      return spec.offset;
    case 'datetime':
      return log.offsetForTimestamp(spec.timestamp);
    case 'shift':
      // Without a committed offset, shift from where the group would start: the log start.
      return (currentOffset ?? log.logStartOffset) + spec.shiftBy;
    case 'checkpoint':
      if (!checkpoint) throw new OnelogError('UNKNOWN_CHECKPOINT', `no checkpoint named ${spec.name}`, { name: spec.name });
      return checkpoint.get(`${log.topic}/${log.partition}`) ?? null;
  }
}

/** A spec as text for the reset history, e.g. `to-datetime 2015-09-12T20:00:00.000Z`. */
export function describeSpec(spec: ResetSpec): string {
  switch (spec.to) {
    case 'earliest':
    case 'latest':
      return `to-${spec.to}`;
    case 'offset':
      return `to-offset ${spec.offset}`;
    case 'datetime':
      return `to-datetime ${new Date(spec.timestamp).toISOString()}`;
    case 'shift':
      return `shift-by ${spec.shiftBy}`;
    case 'checkpoint':
      return `to-checkpoint ${spec.name}`;
  }
}

/**
 * Moves of a partition's log start offset, the same on every log engine: each carries its reason (as Kafka's
 * LogStartOffsetIncrementReason) and is logged, and the segment engine also checkpoints it (docs/architecture.md).
 */
import type { Logger } from '../common/logger.js';

/** Why a partition's log start offset moved; checkpointed (segment engine) and logged with every move. */
export type LogStartReason = 'delete-records' | 'retention-time' | 'retention-size' | 'compaction';

/** Logs a move of a partition's log start offset (info), as every engine does once the move is durable. */
export function logLogStartMove(
  logger: Logger, where: { topic: string; partition: number }, previousLogStartOffset: number, logStartOffset: number, reason: LogStartReason,
): void {
  logger.info({ ...where, previousLogStartOffset, logStartOffset, reason }, 'moved the log start offset');
}

/**
 * A group's committed offsets (each the NEXT offset to read): commits, offset resets (Kafka's
 * kafka-consumer-groups --reset-offsets) with their history, and named checkpoints to reset to. Pure types: importing
 * this loads nothing.
 */
import type { TopicPartition } from './partitions.js';

export interface CommitRequest {
  groupId: string;
  topic: string;
  /**
   * The committing member and its generation. Without them the commit is accepted only while the group has
   * no live member (a standalone consumer, as Kafka's); with them, every partition must be the member's.
   */
  memberId?: string;
  generationId?: number;
  /** Each `offset` is the NEXT offset to read (last processed + 1), between 0 and the high watermark. */
  offsets: Array<{ partition: number; offset: number; metadata?: string }>;
}

/** Where an offset reset moves a group (Kafka's kafka-consumer-groups --reset-offsets). */
export type ResetSpec =
  | { to: 'earliest' }
  | { to: 'latest' }
  | { to: 'offset'; offset: number }
  /** first record with timestamp >= `timestamp` (ms since the epoch); the high watermark if none */
  | { to: 'datetime'; timestamp: number }
  | { to: 'shift'; shiftBy: number }
  /** the offset a named checkpoint saved for the partition (partitions it lacks keep their offset) */
  | { to: 'checkpoint'; name: string };

export interface ResetOffsetsRequest {
  groupId: string;
  topic: string;
  /** One partition; default: every partition of the topic. */
  partition?: number;
  spec: ResetSpec;
  /**
   * Apply the plan; without it the call is a dry run. With live members the coordinator first revokes the
   * partitions (their owners commit and let go), applies the reset, then assigns them again: the call
   * resolves once applied. @default false
   */
  execute?: boolean;
  /** Who asks, recorded with the executed reset. @default 'unknown' */
  requestedBy?: string;
}

export interface ResetOffsetsResult {
  groupId: string;
  topic: string;
  executed: boolean;
  partitions: Array<{
    partition: number;
    currentOffset: number | null;
    newOffset: number;
    /** Set when the target was outside [logStartOffset, highWatermark] and was clamped to it. */
    clamped?: 'logStartOffset' | 'highWatermark';
  }>;
}

/** One executed offset reset. */
export interface OffsetResetRecord {
  topic: string;
  partition: number;
  oldOffset: number | null;
  newOffset: number;
  /** The reset spec, as text (e.g. `to-earliest`, `to-checkpoint before-deploy`). */
  spec: string;
  /** Who asked (free text the caller gave, e.g. `alice@host`). */
  requestedBy: string;
  /** ms since the epoch */
  executedAt: number;
}

export interface CheckpointRequest {
  groupId: string;
  /** 1 to 200 characters. */
  name: string;
}

export interface CheckpointDescription {
  groupId: string;
  name: string;
  /** ms since the epoch */
  createdAt: number;
  offsets: Array<TopicPartition & { offset: number }>;
}

/**
 * Retention (Kafka's retention.ms / retention.bytes), the same on every log engine: where a partition's log start
 * offset must move so that no expired record is ever served. The boundary is exact, not segment- or object-granular:
 *
 * - by time: the first record whose timestamp is >= now − retentionMs (everything before it is older); the high
 *   watermark when every record is older;
 * - by size: the first batch (segment engine) or chunk (object engine) from which the rest of the log fits in
 *   retentionBytes.
 *
 * An engine asks {@link retentionQuestions}, answers each from its own indexes, and moves the log start to
 * {@link retentionTarget} with its reason.
 */
import { deletesOldRecords } from '../protocol/types.js';
import type { LogStartReason } from './log-start.js';

/** The retention settings, from the topic's configuration. */
export interface RetentionConfig {
  cleanupPolicy: string;
  /** -1 = unlimited, ms */
  retentionMs: number;
  /** -1 = unlimited, bytes per partition */
  retentionBytes: number;
}

/** What an engine must answer for retention: the offsets of a time cutoff and of a size bound (null: not asked). */
export interface RetentionQuestions {
  /** The first offset whose record's timestamp is >= this (ms) is retention by time's boundary. */
  timestamp: number | null;
  /** The first offset from which the rest of the log fits in this many bytes is retention by size's boundary. */
  retentionBytes: number | null;
}

/** Where the log start offset must go and why. */
export interface RetentionTarget {
  offset: number;
  reason: Extract<LogStartReason, 'retention-time' | 'retention-size'>;
}

/** The questions retention asks of a partition at `now` (ms); null when its cleanup policy lacks `delete` (it keeps everything). */
export function retentionQuestions(config: RetentionConfig, now: number): RetentionQuestions | null {
  if (!deletesOldRecords(config.cleanupPolicy)) return null;
  return {
    timestamp: config.retentionMs >= 0 ? now - config.retentionMs : null,
    retentionBytes: config.retentionBytes >= 0 ? config.retentionBytes : null,
  };
}

/**
 * The new log start offset from the engine's answers to {@link retentionQuestions} (null where not asked): the
 * further of the two, or null when neither passes `logStartOffset` (nothing expired). Time wins a tie.
 */
export function retentionTarget(logStartOffset: number, byTime: number | null, bySize: number | null): RetentionTarget | null {
  let best: RetentionTarget | null = null;
  if (byTime !== null && byTime > logStartOffset) best = { offset: byTime, reason: 'retention-time' };
  if (bySize !== null && bySize > (best?.offset ?? logStartOffset)) best = { offset: bySize, reason: 'retention-size' };
  return best;
}

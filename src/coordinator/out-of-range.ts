/**
 * The hard error for a group whose position lies outside a partition's log: never a silent jump. It names
 * the group, the partition, the committed offset, the log start offset and how many records were lost,
 * and says how to decide. The same code pauses a partition whose committed offset the offset store lost
 * ({@link offsetLost}): where the group stood is unknown, and guessing would skip or repeat records.
 */
import { OnelogError } from '../protocol/errors.js';

/** Where a group stands against a partition's log. */
export interface OutOfRangeFacts {
  groupId: string;
  topic: string;
  partition: number;
  committedOffset: number;
  logStartOffset: number;
  highWatermark: number;
}

/** Builds `OFFSET_OUT_OF_RANGE` for a committed offset below the log start (or above the high watermark). */
export function offsetOutOfRange(f: OutOfRangeFacts): OnelogError {
  const below = f.committedOffset < f.logStartOffset;
  const recordsLost = below ? f.logStartOffset - f.committedOffset : 0;
  const what = below
    ? `is below the log start offset ${f.logStartOffset}: ${recordsLost} records were deleted before the group read them`
    : `is above the high watermark ${f.highWatermark}`;
  return new OnelogError(
    'OFFSET_OUT_OF_RANGE',
    `group ${f.groupId} cannot read ${f.topic}/${f.partition}: its committed offset ${f.committedOffset} ${what}. ` +
      `Nothing was delivered and the committed offset was not moved; decide with ` +
      `'onelog offsets reset ${f.groupId} --topic ${f.topic} --partition ${f.partition} --to-earliest --execute' ` +
      `(or --to-offset, --to-datetime, --to-latest)`,
    { ...f, recordsLost },
  );
}

/** A partition whose committed offset was lost with the offset store (see lost-offsets.ts). */
export interface LostOffsetFacts {
  groupId: string;
  topic: string;
  partition: number;
  logStartOffset: number;
  highWatermark: number;
  /** The offset store, as store-engines.ts's `describeOffsetStore` names it. */
  offsetStore: string;
}

/**
 * Builds the `OFFSET_OUT_OF_RANGE` a partition pauses with when the group committed but the offset store holds none
 * of its offsets: where it stood is unknown, so it neither starts at its start policy nor jumps; an operator decides.
 */
export function offsetLost(f: LostOffsetFacts): OnelogError {
  return new OnelogError(
    'OFFSET_OUT_OF_RANGE',
    `group ${f.groupId} cannot read ${f.topic}/${f.partition}: it committed offsets of ${f.topic}, but the offset store ` +
      `(${f.offsetStore}) lost them (the broker was started with --allow-missing-offsets). Nothing was delivered and no start ` +
      `position was taken (its start policy would skip or repeat records); decide where it resumes (the log start offset is ` +
      `${f.logStartOffset}, the high watermark ${f.highWatermark}) with 'onelog offsets reset ${f.groupId} --topic ${f.topic} --partition ${f.partition} ` +
      `--to-datetime TIME --execute' (or --to-offset, --to-earliest, --to-latest)`,
    { ...f, committedOffset: null, reason: 'offsets-lost' },
  );
}

/**
 * The hard error for a group whose position lies outside a partition's log: never a silent jump. It names
 * the group, the partition, the committed offset, the log start offset and how many records were lost,
 * and says how to decide.
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

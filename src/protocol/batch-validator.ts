/**
 * What a produced RecordBatch must be before it is stored, checked once for every batch a producer sends (the
 * binary data socket, Kafka Produce): Kafka's LogValidator. The records are decoded once, so a batch that is
 * stored always decodes on fetch; a batch the broker cannot read back is refused, and so is the request carrying it.
 *
 * - the bytes: one whole batch, magic 2, CRC-32C over `[attributes, end)`: `CORRUPT_MESSAGE`;
 * - the attributes: a codec of 0-4 (`UNSUPPORTED_COMPRESSION` for 5-7, Kafka's UNSUPPORTED_COMPRESSION_TYPE), and
 *   no other bit: not transactional (0x10) nor control (0x20), since onelog serves no transactions and control
 *   batches are a broker's to write (Kafka refuses a producer's control batch as INVALID_RECORD), nor
 *   LogAppendTime (0x08) or the delete horizon (0x40), which are a broker's to set, nor an unused bit: `INVALID_RECORD`;
 * - the records: at least one, as many as the offset deltas say (`lastOffsetDelta + 1`) and as the records section
 *   holds, each record's fields adding up exactly to its length and the records to the section (decompressed with
 *   the declared codec), offset deltas 0 to n-1 in order: `CORRUPT_MESSAGE`;
 * - the timestamps: each record's within {@link MIN_TIMESTAMP_MS} to {@link MAX_TIMESTAMP_MS}: `INVALID_RECORD`.
 *   A batch whose `maxTimestamp` disagrees with its records' is given the right one, as Kafka does.
 *
 * Kafka bounds timestamps against the broker's clock with the topic configs `message.timestamp.before.max.ms`
 * and `message.timestamp.after.max.ms`, unbounded by default up to Kafka 3.9 (and records without a timestamp,
 * -1, pass). onelog has neither config: its bound is the range of a date, fixed, so a producer's clock is never
 * judged against the broker's, and -1 is refused with every negative time: onelog's retention, time lag and
 * offset lookups by time read a timestamp as ms since the epoch, so a record before 1970 would count as expired
 * the moment it is stored.
 */
import { codecOf } from './compression.js';
import type { CompressionCodec } from './compression.js';
import { OnelogError } from './errors.js';
import type { ErrorContext } from './errors.js';
import type { BatchHeader, RecordVisitor } from './record-batch.js';
import { decodeRecords, readBatchHeader, scanRecords, setMaxTimestamp, validateBatch } from './record-batch.js';
import type { StoredRecord } from './types.js';

/** The earliest record timestamp accepted, ms since the epoch: 1970-01-01T00:00:00Z. */
export const MIN_TIMESTAMP_MS = 0;
/** The latest record timestamp accepted, ms since the epoch: the last a JavaScript `Date` holds, +275760-09-13T00:00:00Z. */
export const MAX_TIMESTAMP_MS = 8_640_000_000_000_000;

/** Attribute bits a produced batch may set: the codec (bits 0-2). */
const PRODUCER_ATTRIBUTES = 0x07;
/** What each other attribute bit means, for the refusal. */
const BROKER_ATTRIBUTES: ReadonlyArray<[bit: number, meaning: string]> = [
  [0x08, 'the LogAppendTime timestamp type (0x08), which a broker sets'],
  [0x10, 'the transactional bit (0x10): onelog serves no transactions'],
  [0x20, 'the control bit (0x20): control batches are written by a broker, not a producer'],
  [0x40, 'the delete-horizon bit (0x40), which compaction sets'],
];

/** A batch that passed {@link validateProducedBatch}. */
export interface ProducedBatch {
  header: BatchHeader;
  codec: CompressionCodec;
  /**
   * Its records, decoded when asked for (views into the batch when uncompressed: copy them if the batch's buffer is
   * reused); else undefined, the records only read and checked, none built.
   */
  records: StoredRecord[] | undefined;
  /** The largest record's `length` field, bytes: its key, value and headers take fewer. */
  largestRecordLength: number;
}

/**
 * Checks a record timestamp against {@link MIN_TIMESTAMP_MS} and {@link MAX_TIMESTAMP_MS}.
 * @param what names the record in the refusal, e.g. `record 3 of the request`
 * @throws OnelogError `INVALID_RECORD` naming the record, the timestamp and the range allowed
 */
export function checkTimestamp(timestamp: number, what: string, context: ErrorContext = {}): void {
  const refusal = timestampRefusal(timestamp, what, context);
  if (refusal !== undefined) throw refusal;
}

/** The refusal {@link checkTimestamp} throws, or undefined for a timestamp in range. */
function timestampRefusal(timestamp: number, what: string, context: ErrorContext): OnelogError | undefined {
  if (timestamp >= MIN_TIMESTAMP_MS && timestamp <= MAX_TIMESTAMP_MS) return undefined;
  return new OnelogError('INVALID_RECORD', `${what} has timestamp ${timestamp}; a record's timestamp is ms since the epoch, ` +
    `${MIN_TIMESTAMP_MS} to ${MAX_TIMESTAMP_MS}; nothing was written`, { ...context, timestamp });
}

/**
 * Validates one produced batch fully, as the module says, reading each record once; may stamp its right
 * `maxTimestamp` into `batch` (and its CRC).
 * @param batch exactly one RecordBatch v2
 * @param name names the batch in every refusal, e.g. `batch 2 of the request to t/0`
 * @param where context every refusal carries (topic, partition, the batch's index in the request)
 * @param options `decode`: build the records too, for a caller that needs them (compaction's keys, record sizes,
 *   recompression); without it they are read and checked but not built, the fast path of every other produce.
 *   `maxRecordsBytes`: most bytes a compressed records section may decompress to (default unbounded)
 * @returns the header, codec and (with `decode`) the records
 * @throws OnelogError `CORRUPT_MESSAGE`, `INVALID_RECORD`, `UNSUPPORTED_COMPRESSION` (also when the codec's package
 *   cannot be loaded on this platform), `RECORD_TOO_LARGE` (the records decompress past `maxRecordsBytes`), each
 *   naming the batch
 */
export function validateProducedBatch(
  batch: Buffer, name: string, where: ErrorContext, { decode = false, maxRecordsBytes = Infinity }: { decode?: boolean; maxRecordsBytes?: number } = {},
): ProducedBatch {
  const refuse = (code: 'CORRUPT_MESSAGE' | 'INVALID_RECORD', why: string, context: ErrorContext = {}) =>
    new OnelogError(code, `${name} is refused: ${why}; nothing was written`, { ...where, ...context });
  const size = validateBatch(batch);
  if (typeof size === 'string') throw refuse('CORRUPT_MESSAGE', size);
  if (size !== batch.length) throw refuse('CORRUPT_MESSAGE', `${batch.length} bytes hold a batch of ${size}: one batch is expected`);
  const header = readBatchHeader(batch);
  const extra = header.attributes & ~PRODUCER_ATTRIBUTES;
  if (extra !== 0) {
    const known = BROKER_ATTRIBUTES.filter(([bit]) => (extra & bit) !== 0).map(([, meaning]) => meaning);
    const unused = extra & ~BROKER_ATTRIBUTES.reduce((all, [bit]) => all | bit, 0);
    if (unused !== 0) known.push(`unused bits 0x${(unused & 0xffff).toString(16)}`);
    throw refuse('INVALID_RECORD', `its attributes 0x${(header.attributes & 0xffff).toString(16)} set ${known.join(', ')}; ` +
      'a producer sets only the codec (bits 0-2)', { attributes: header.attributes });
  }
  if (header.recordCount < 1 || header.recordCount !== header.lastOffsetDelta + 1) {
    throw refuse('CORRUPT_MESSAGE', `it says ${header.recordCount} records but offset deltas up to ${header.lastOffsetDelta}`);
  }
  // The first record that fails; the walk goes on to the end (it cannot stop), checking nothing more.
  let refusal: OnelogError | undefined;
  let maxTimestamp = -Infinity;
  let largestRecordLength = 0;
  const check: RecordVisitor = (i, timestamp, offset, length) => {
    if (length > largestRecordLength) largestRecordLength = length;
    if (refusal !== undefined) return;
    if (offset - header.baseOffset !== i) {
      refusal = refuse('CORRUPT_MESSAGE', `record ${i} has offset delta ${offset - header.baseOffset}; a produced batch numbers its records 0 to ${header.recordCount - 1}`);
    } else if (timestamp < MIN_TIMESTAMP_MS || timestamp > MAX_TIMESTAMP_MS) {
      refusal = timestampRefusal(timestamp, `record ${i} of ${name}`, { ...where, index: i });
    } else if (timestamp > maxTimestamp) maxTimestamp = timestamp;
  };
  let codec: CompressionCodec;
  let records: StoredRecord[] | undefined;
  try {
    codec = codecOf(header.attributes);
    if (decode) records = decodeRecords(batch, 0, maxRecordsBytes, check);
    else scanRecords(batch, 0, check, maxRecordsBytes);
  } catch (err) {
    if (!(err instanceof OnelogError)) throw err;
    throw refusal ?? new OnelogError(err.code, `${name} is refused: ${err.message}; nothing was written`, { ...err.context, ...where });
  }
  if (refusal !== undefined) throw refusal;
  if (header.maxTimestamp !== maxTimestamp) {
    setMaxTimestamp(batch, maxTimestamp);
    header.maxTimestamp = maxTimestamp;
  }
  return { header, codec, records, largestRecordLength };
}

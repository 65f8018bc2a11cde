/**
 * The binary data path's produce side: a client-encoded RecordBatch v2 validated whole, its records decoded once
 * (src/protocol/batch-validator.ts, as Kafka's LogValidator), held to the limits (batch and record size, producer
 * id, keys on a compacted topic) and appended as it is: the broker assigns offsets by restamping the base offset
 * and never re-encodes it, unless the topic's `compressionType` asks for another codec than the batch's (the batch
 * is recompressed).
 */
import { isCompacted } from '../protocol/types.js';
import { validateProducedBatch } from '../protocol/batch-validator.js';
import type { BatchProducer } from '../protocol/record-batch.js';
import { decodeRecords, encodeBatch } from '../protocol/record-batch.js';
import { OnelogError } from '../protocol/errors.js';
import { RECORD_OVERHEAD_BYTES, recordBytes } from '../protocol/produce-plan.js';
import type { Partition } from '../log/partition.js';

/** The least {@link decompressedLimit} is, bytes: 64 MiB. */
const MIN_DECOMPRESSED_BATCH_BYTES = 64 * 1024 * 1024;

/**
 * Most bytes a compressed batch's records may decompress to: 64 times the batch limit, at least 64 MiB; far above
 * what real data compresses by, so only a decompression bomb meets it.
 */
export function decompressedLimit(limits: Pick<BatchLimits, 'maxBatchBytes'>): number {
  return Math.max(MIN_DECOMPRESSED_BATCH_BYTES, 64 * limits.maxBatchBytes);
}

/** Limits a produced batch is held to. */
export interface BatchLimits {
  /** Largest batch accepted, bytes (Kafka's max.message.bytes applies to the batch). */
  maxBatchBytes: number;
  /** Largest record accepted, bytes, counted as the JSON path counts it ({@link recordBytes}). */
  maxRecordBytes: number;
  /** The highest producer id issued: a higher one was never issued (`UNKNOWN_PRODUCER_ID`). */
  lastProducerId: number;
}

/**
 * Makes a client's batch ready to append to `log`: validated, and recompressed only when the topic says so.
 * @param index the batch's place in its request, which refusals name
 * @returns the batch to append (the same buffer, unless recompressed)
 * @throws OnelogError `CORRUPT_MESSAGE` (torn, bad CRC or magic, records that do not decode or disagree with the
 *   header), `INVALID_RECORD` (attributes a producer may not set, a timestamp out of range, a keyless record on a
 *   compacted topic), `UNSUPPORTED_COMPRESSION` (codec 5-7), `RECORD_TOO_LARGE` (the batch, a record in it, or
 *   records that decompress past {@link decompressedLimit}), `UNKNOWN_PRODUCER_ID`
 */
export function prepareClientBatch(batch: Buffer, log: Partition, limits: BatchLimits, index = 0): Buffer {
  const where = { topic: log.topic, partition: log.partition };
  if (batch.length > limits.maxBatchBytes) {
    throw new OnelogError('RECORD_TOO_LARGE', `the batch is ${batch.length} bytes, above the limit of ${limits.maxBatchBytes} bytes; nothing was written`, {
      ...where, batchBytes: batch.length, maxBatchBytes: limits.maxBatchBytes,
    });
  }
  const settings = log.settings;
  const wanted = settings.compressionType;
  const compacted = isCompacted(settings.cleanupPolicy);
  // The records are built only where they are needed: keys, recompression; else only read and checked.
  const validated = validateProducedBatch(batch, `batch ${index} of the request to ${log.topic}/${log.partition}`,
    { ...where, batchIndex: index }, { decode: compacted || wanted !== 'producer', maxRecordsBytes: decompressedLimit(limits) });
  const { header, codec } = validated;
  if (header.producerId > limits.lastProducerId) {
    throw new OnelogError('UNKNOWN_PRODUCER_ID', `producer id ${header.producerId} was never issued by this broker; get one from initProducerId`, {
      ...where, producerId: header.producerId,
    });
  }
  // A record counts fewer bytes than its length field plus the overhead: only a batch with a longer one is measured.
  const measure = validated.largestRecordLength + RECORD_OVERHEAD_BYTES > limits.maxRecordBytes;
  const records = validated.records ?? (measure ? decodeRecords(batch, 0, decompressedLimit(limits)) : undefined);
  if (records === undefined) return batch;
  if (measure) {
    const over = records.findIndex((r) => recordBytes(r) > limits.maxRecordBytes);
    if (over >= 0) {
      const bytes = recordBytes(records[over]!);
      throw new OnelogError('RECORD_TOO_LARGE', `record ${over} of the batch is ${bytes} bytes, above the limit of ${limits.maxRecordBytes} bytes; nothing was written`, {
        ...where, index: over, recordBytes: bytes, maxRecordBytes: limits.maxRecordBytes,
      });
    }
  }
  if (compacted) {
    const keyless = records.findIndex((r) => r.key === null);
    if (keyless >= 0) {
      throw new OnelogError('INVALID_RECORD', `record ${keyless} of the batch has no key: topic ${log.topic} is compacted; nothing was written`, {
        ...where, index: keyless,
      });
    }
  }
  if (wanted === 'producer' || wanted === codec) return batch;
  const producer: BatchProducer = { producerId: header.producerId, producerEpoch: header.producerEpoch, baseSequence: header.baseSequence };
  return encodeBatch(records, 0, header.baseTimestamp, producer, { compression: wanted });
}

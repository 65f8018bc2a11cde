/**
 * The binary data path's produce side: a client-encoded RecordBatch v2 checked at the header level (length,
 * CRC-32C, magic, record count against the offset deltas, size, producer id) and appended as it is: the
 * broker assigns offsets by restamping the base offset and never decodes the records on this path. Two
 * cases decode, as Kafka's LogValidator does: a compacted topic (every record needs a key) and a topic whose
 * `compressionType` asks for another codec than the batch's (the batch is recompressed).
 */
import type { BatchProducer } from '../protocol/record-batch.js';
import { batchCompression, decodeRecords, encodeBatch, readBatchHeader, validateBatch } from '../protocol/record-batch.js';
import { OnelogError } from '../protocol/errors.js';
import { recordBytes } from '../protocol/produce-plan.js';
import type { Partition } from '../storage/partition.js';

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
 * Makes a client's batch ready to append to `log`: checked, and recompressed only when the topic says so.
 * @returns the batch to append (the same buffer on the fast path)
 * @throws OnelogError `CORRUPT_MESSAGE` (torn, bad CRC or magic, counts that disagree), `RECORD_TOO_LARGE` (the
 *   batch, or a record in it),
 *   `INVALID_RECORD` (a keyless record on a compacted topic), `UNKNOWN_PRODUCER_ID`
 */
export function prepareClientBatch(batch: Buffer, log: Partition, limits: BatchLimits): Buffer {
  const where = { topic: log.topic, partition: log.partition };
  const size = validateBatch(batch);
  if (typeof size === 'string') throw new OnelogError('CORRUPT_MESSAGE', `the produced batch is refused: ${size}`, where);
  if (size !== batch.length) {
    throw new OnelogError('CORRUPT_MESSAGE', `a produce frame carries one batch: ${batch.length} bytes hold a batch of ${size}`, where);
  }
  if (size > limits.maxBatchBytes) {
    throw new OnelogError('RECORD_TOO_LARGE', `the batch is ${size} bytes, above the limit of ${limits.maxBatchBytes} bytes; nothing was written`, {
      ...where, batchBytes: size, maxBatchBytes: limits.maxBatchBytes,
    });
  }
  const header = readBatchHeader(batch);
  if (header.recordCount !== header.lastOffsetDelta + 1 || header.recordCount < 1) {
    throw new OnelogError('CORRUPT_MESSAGE', `the batch says ${header.recordCount} records but offset deltas up to ${header.lastOffsetDelta}`, where);
  }
  if (header.producerId > limits.lastProducerId) {
    throw new OnelogError('UNKNOWN_PRODUCER_ID', `producer id ${header.producerId} was never issued by this broker; get one from initProducerId`, {
      ...where, producerId: header.producerId,
    });
  }
  const settings = log.settings;
  const wanted = settings.compressionType;
  const recompress = wanted !== 'producer' && wanted !== batchCompression(header);
  // A batch within the record limit holds no record above it: only a larger one is decoded to check.
  const checkRecords = size > limits.maxRecordBytes;
  if (!settings.cleanupPolicy.includes('compact') && !recompress && !checkRecords) return batch;
  const records = decodeRecords(batch);
  if (checkRecords) {
    const index = records.findIndex((r) => recordBytes(r) > limits.maxRecordBytes);
    if (index >= 0) {
      const bytes = recordBytes(records[index]!);
      throw new OnelogError('RECORD_TOO_LARGE', `record ${index} of the batch is ${bytes} bytes, above the limit of ${limits.maxRecordBytes} bytes; nothing was written`, {
        ...where, index, recordBytes: bytes, maxRecordBytes: limits.maxRecordBytes,
      });
    }
  }
  if (settings.cleanupPolicy.includes('compact')) {
    const keyless = records.findIndex((r) => r.key === null);
    if (keyless >= 0) {
      throw new OnelogError('INVALID_RECORD', `record ${keyless} of the batch has no key: topic ${log.topic} is compacted; nothing was written`, {
        ...where, index: keyless,
      });
    }
  }
  if (!recompress) return batch;
  const producer: BatchProducer = { producerId: header.producerId, producerEpoch: header.producerEpoch, baseSequence: header.baseSequence };
  return encodeBatch(records, 0, header.baseTimestamp, producer, { compression: wanted });
}

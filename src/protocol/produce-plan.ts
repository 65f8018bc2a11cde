/**
 * How a produce request becomes record batches: every record is checked before any is written (a refused
 * request stores nothing), partitioned, and each partition's records are cut into batches of about
 * `maxBatchBytes`. For an idempotent request, each batch carries the producer id, epoch and the sequence of
 * its first record (a partition's sequences follow on from `baseSequences[partition]`, wrapping at 2^31).
 * Pure: no I/O.
 */
import type { ProduceRecord, ProduceRequest, ProducerIdempotence } from './produce.js';
import { checkTimestamp } from './batch-validator.js';
import { OnelogError } from './errors.js';
import type { BatchProducer } from './record-batch.js';
import { checkInteger } from './validate.js';

/** Fixed bytes a record counts for besides its key, value and headers ({@link recordBytes}). */
export const RECORD_OVERHEAD_BYTES = 24;
const SEQUENCE_WRAP = 2 ** 31;

/** What the plan needs to know of the topic and the broker. */
export interface ProducePlanOptions {
  /** Partition count of the topic. */
  partitions: number;
  /** Whether the topic is compacted (then every record needs a key). */
  compacted: boolean;
  /** Largest record (key + value + headers + overhead), bytes. */
  maxRecordBytes: number;
  /** Batch size to cut at, bytes. */
  maxBatchBytes: number;
  /**
   * The partition of a record (its own, murmur2 of its key, or the sticky partition of keyless records), given
   * its size as {@link recordBytes} counts it.
   */
  choosePartition: (record: ProduceRecord, bytes: number) => number;
}

/** One batch to append: the request indexes of its records, in order. */
export interface PlannedBatch {
  partition: number;
  indexes: number[];
  /** Set for an idempotent request. */
  producer?: BatchProducer;
}

/**
 * Plans the batches of a produce request.
 * @throws OnelogError `INVALID_RECORD` (no records, a keyless record on a compacted topic, a record without a
 *   partition in an idempotent request, a timestamp out of range: {@link checkTimestamp}), `RECORD_TOO_LARGE`, `INVALID_REQUEST` (bad idempotence fields), and
 *   what `choosePartition` throws (`UNKNOWN_PARTITION`)
 */
export function planProduce(request: ProduceRequest, options: ProducePlanOptions): PlannedBatch[] {
  const { topic, records, idempotence } = request;
  if (!Array.isArray(records) || records.length === 0) {
    throw new OnelogError('INVALID_RECORD', 'a produce request needs at least one record', { topic });
  }
  // Only the partitions written: a topic may have thousands, a request touches a few.
  const byPartition = new Map<number, number[]>();
  records.forEach((r, index) => {
    if (options.compacted && (r.key === null || r.key === undefined)) {
      throw new OnelogError('INVALID_RECORD', `record ${index} has no key: topic ${topic} is compacted, ` +
        'and compaction keeps the latest record per key; nothing was written', { topic, index });
    }
    if (r.timestamp !== undefined) checkTimestamp(r.timestamp, `record ${index}`, { topic, index });
    const size = recordBytes(r);
    if (size > options.maxRecordBytes) {
      throw new OnelogError(
        'RECORD_TOO_LARGE',
        `record ${index} is ${size} bytes, above the limit of ${options.maxRecordBytes} bytes; nothing was written`,
        { topic, index, recordBytes: size, maxRecordBytes: options.maxRecordBytes },
      );
    }
    if (idempotence && r.partition === undefined) {
      throw new OnelogError('INVALID_RECORD', `record ${index} has no partition: an idempotent produce names each record's partition`, {
        topic, index,
      });
    }
    const partition = options.choosePartition(r, size);
    const indexes = byPartition.get(partition);
    if (indexes === undefined) byPartition.set(partition, [index]);
    else indexes.push(index);
  });
  if (idempotence) checkIdempotence(idempotence, byPartition, topic);
  const batches: PlannedBatch[] = [];
  for (const partition of [...byPartition.keys()].sort((a, b) => a - b)) {
    const indexes = byPartition.get(partition)!;
    let sequence = idempotence?.baseSequences[partition] ?? 0;
    for (const chunk of chunks(records, indexes, options.maxBatchBytes)) {
      const batch: PlannedBatch = { partition, indexes: chunk };
      if (idempotence) {
        batch.producer = { producerId: idempotence.producerId, producerEpoch: idempotence.producerEpoch, baseSequence: sequence };
        sequence = (sequence + chunk.length) % SEQUENCE_WRAP;
      }
      batches.push(batch);
    }
  }
  return batches;
}

/** Splits one partition's record indexes into batches of about `maxBatchBytes`. */
function* chunks(records: readonly ProduceRecord[], indexes: number[], maxBatchBytes: number): Generator<number[]> {
  let chunk: number[] = [];
  let bytes = 0;
  for (const i of indexes) {
    const size = recordBytes(records[i]!);
    if (chunk.length > 0 && bytes + size > maxBatchBytes) {
      yield chunk;
      chunk = [];
      bytes = 0;
    }
    chunk.push(i);
    bytes += size;
  }
  if (chunk.length > 0) yield chunk;
}

/**
 * Checks an idempotent produce's identity and that every partition written has a base sequence.
 * @throws OnelogError `INVALID_REQUEST`
 */
function checkIdempotence(idempotence: ProducerIdempotence, byPartition: ReadonlyMap<number, number[]>, topic: string): void {
  checkInteger(idempotence.producerId, 'producerId', 0);
  checkInteger(idempotence.producerEpoch, 'producerEpoch', 0, 32767);
  byPartition.forEach((_indexes, partition) => {
    const base = idempotence.baseSequences?.[partition];
    if (base === undefined) {
      throw new OnelogError('INVALID_REQUEST', `idempotence.baseSequences has no entry for partition ${partition}`, { topic, partition });
    }
    checkInteger(base, `baseSequences[${partition}]`, 0, SEQUENCE_WRAP - 1);
  });
}

/** Bytes a record takes against `maxRecordBytes`: key, value, header keys and values, plus fixed overhead. */
export function recordBytes(r: Pick<ProduceRecord, 'key' | 'value' | 'headers'>): number {
  let size = RECORD_OVERHEAD_BYTES + (r.key?.length ?? 0) + (r.value?.length ?? 0);
  for (const h of r.headers ?? []) size += Buffer.byteLength(h.key) + (h.value?.length ?? 0);
  return size;
}

/** Where one record of a produce went: its partition and, once stored, its offset. */
export interface RecordOutcome {
  partition: number;
  offset?: number;
}

/**
 * A produce failure once some partitions stored their batches (`stored`: the stored batches in request order, each
 * `{ partition, baseOffset }`; cluster mode, where another broker leads the other partitions) gains `records`: for
 * each record of the request, its partition and, if stored, its offset ({@link RecordOutcome}), so that a client can
 * send only the rest, each to the partition chosen for it. A partition's batches of one request are stored, or
 * refused, together. Any other error is returned as it is.
 */
export function withRecordOutcomes(err: unknown, batches: ReadonlyArray<Pick<PlannedBatch, 'partition' | 'indexes'>>): unknown {
  const stored = (err as OnelogError | undefined)?.context?.stored;
  if (!(err instanceof OnelogError) || !Array.isArray(stored)) return err;
  const byPartition = new Map<number, number[]>();
  for (const s of stored as Array<{ partition: number; baseOffset: number }>) byPartition.set(s.partition, [...(byPartition.get(s.partition) ?? []), s.baseOffset]);
  const records: RecordOutcome[] = [];
  for (const { partition, indexes } of batches) {
    const baseOffset = byPartition.get(partition)?.shift();
    indexes.forEach((i, k) => (records[i] = baseOffset === undefined ? { partition } : { partition, offset: baseOffset + k }));
  }
  return new OnelogError(err.code, err.message, { ...err.context, records });
}

/**
 * `onelog produce`'s requests: each input record is written into its partition's RecordBatch as it is read (a
 * {@link RecordBatchBuilder} per partition; no record object is kept), its partition chosen as the broker would
 * ({@link Partitioner}: murmur2 of the key, else sticky), a partition's batch is cut at about 1 MiB, and a request
 * once it holds `--batch-records` records or about 4 MiB. Each batch keeps the input lines of its records, to name the line of a record the broker refuses.
 */
import { Partitioner } from '../protocol/partitioner.js';
import { decodeRecords, encodeBatch, RecordBatchBuilder, valueLength } from '../protocol/record-batch.js';
import type { TextRecord } from './input.js';

/** One partition's batch of a request, and the input line of each of its records. */
export interface LinedBatch {
  partition: number;
  bytes: Buffer;
  lines: number[];
}

/** A request is cut at about this many bytes of keys and values. */
export const REQUEST_BYTES = 4 * 1024 * 1024;
/** A partition's batch is cut before it passes this many bytes (Kafka's max.message.bytes default, which the broker holds batches to). */
const BATCH_BYTES = 1024 * 1024;
/** The most bytes a record takes in a batch besides its key and value (length, attributes, deltas, lengths, header count). */
const RECORD_OVERHEAD_BYTES = 32;

export class ProduceBatches {
  private readonly partitioner = new Partitioner();
  private readonly builders: RecordBatchBuilder[];
  private lines: number[][];
  /** Batches cut at {@link BATCH_BYTES} since the last {@link cut}, in order. */
  private full: LinedBatch[] = [];
  /** Records and key + value bytes added since the last {@link cut}. */
  records = 0;
  bytes = 0;

  constructor(private readonly topic: string, private readonly partitions: number) {
    this.builders = Array.from({ length: partitions }, () => new RecordBatchBuilder());
    this.lines = this.builders.map(() => []);
  }

  /**
   * Writes a record into its partition's batch.
   * @param now the timestamp of a record without one, ms since the epoch
   * @returns its key and value bytes
   */
  add(record: TextRecord, line: number, now: number): number {
    const key = record.key === null ? null : Buffer.from(record.key, 'utf8');
    const valueBytes = valueLength(record.value);
    const size = (key?.length ?? 0) + valueBytes;
    const partition = this.partitioner.partitionOf(this.topic, key, size, this.partitions);
    const builder = this.builders[partition]!;
    if (builder.recordCount > 0 && builder.sizeBytes + size + RECORD_OVERHEAD_BYTES > BATCH_BYTES) {
      this.full.push({ partition, bytes: builder.finish(), lines: this.lines[partition]! });
      this.lines[partition] = [];
    }
    builder.add(key, record.value, record.timestamp ?? now, valueBytes);
    this.lines[partition]!.push(line);
    this.records++;
    this.bytes += size;
    return size;
  }

  /**
   * The batches of the records added since the last cut: a partition's in input order (those cut full first), at most
   * about 1 MiB each; empty when there are none.
   */
  cut(): LinedBatch[] {
    const batches = [
      ...this.full,
      ...this.builders.flatMap((b, partition) => (b.recordCount === 0 ? [] : [{ partition, bytes: b.finish(), lines: this.lines[partition]! }])),
    ];
    this.full = [];
    this.lines = this.builders.map(() => []);
    this.records = 0;
    this.bytes = 0;
    return batches;
  }
}

/**
 * The records of `batches` from input lines before `line`, as new batches (the records a refused request held before
 * the one the broker refused, to be sent alone).
 */
export function recordsBefore(batches: readonly LinedBatch[], line: number): LinedBatch[] {
  return batches.flatMap((b) => {
    const kept = decodeRecords(b.bytes).filter((_, i) => b.lines[i]! < line);
    return kept.length === 0 ? [] : [{ partition: b.partition, bytes: encodeBatch(kept, 0, 0), lines: b.lines.filter((l) => l < line) }];
  });
}

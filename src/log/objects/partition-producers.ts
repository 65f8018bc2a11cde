/**
 * The idempotent producers of one partition as the broker holding its lease sees them (cluster mode,
 * docs/cluster.md): the log's ProducerStateManager (src/log/producer-state.ts), rebuilt from the batches the
 * sequencer recorded (`producer_batches`, written in the commit that stored them) when the broker takes the
 * lease, and kept up to date by its own commits, the only ones while it holds the lease. So a producer's retry
 * sent to another broker after a broker's loss is still recognised there.
 *
 * A flush's batches are sorted before the object is built ({@link plan}): new ones are written; a retry of a
 * stored batch is answered with the stored offsets; a retry of a batch earlier in the same flush is answered
 * with that batch's outcome; a batch out of sequence or of an old epoch is refused, as the local engine does.
 * The caller runs a flush with idempotent batches only after the commit before it, so the state it plans
 * against holds every batch committed.
 */
import { OnelogError } from '../../protocol/errors.js';
import { readBatchHeader } from '../../protocol/record-batch.js';
import { DEFAULT_MAX_PRODUCERS, lastSequenceOf, ProducerStateManager } from '../producer-state.js';
import type { AppendResult } from '../partition.js';
import type { ChunkProducerBatch, Sequencer } from './sequencer.js';

/** What becomes of one batch of a flush. */
export type BatchPlan =
  | { kind: 'write' }
  /** A retry of the batch written `index`-th of this flush's writes for the partition. */
  | { kind: 'same-as'; index: number }
  | { kind: 'answered'; outcome: AppendResult | { error: OnelogError } };

/** Offsets far below any real one stand for the batches of a flush until their commit gives them offsets. */
const PLACEHOLDER_STRIDE = 2 ** 32;

export class PartitionProducers {
  private constructor(
    /** The lease epoch the state was rebuilt under: another epoch means another broker may have written since. */
    readonly leaseEpoch: number,
    private readonly state: ProducerStateManager,
  ) {}

  /** Rebuilds the partition's producer state from the batches the sequencer recorded. */
  static async load(sequencer: Sequencer, topic: string, partition: number, leaseEpoch: number): Promise<PartitionProducers> {
    const state = new ProducerStateManager({ maxProducers: DEFAULT_MAX_PRODUCERS, topic, partition });
    for (const b of await sequencer.producerBatches(topic, partition)) {
      state.update({ producerId: b.producerId, producerEpoch: b.producerEpoch, baseSequence: b.baseSequence, lastOffsetDelta: b.lastOffset - b.baseOffset }, b.baseOffset);
    }
    return new PartitionProducers(leaseEpoch, state);
  }

  /** Sorts a flush's batches for this partition, in order (see the file's comment). */
  plan(batches: readonly Buffer[]): BatchPlan[] {
    const tentative = this.state.copy();
    let written = 0;
    return batches.map((batch): BatchPlan => {
      const header = readBatchHeader(batch);
      if (header.producerId < 0) {
        written++;
        return { kind: 'write' };
      }
      try {
        const stored = tentative.check(header);
        if (stored === null) {
          tentative.update(header, -(written + 1) * PLACEHOLDER_STRIDE);
          written++;
          return { kind: 'write' };
        }
        if (stored.baseOffset < 0) return { kind: 'same-as', index: -stored.baseOffset / PLACEHOLDER_STRIDE - 1 };
        return { kind: 'answered', outcome: { ...stored, duplicate: true } };
      } catch (err) {
        if (err instanceof OnelogError) return { kind: 'answered', outcome: { error: err } };
        throw err;
      }
    });
  }

  /** Records the written batches of a committed chunk at their offsets, in order. */
  committed(written: readonly Buffer[], baseOffsets: readonly number[]): void {
    written.forEach((batch, i) => {
      const header = readBatchHeader(batch);
      if (header.producerId >= 0) this.state.update(header, baseOffsets[i]!);
    });
  }
}

/** Whether a batch comes from an idempotent producer. */
export function isIdempotent(batch: Buffer): boolean {
  return readBatchHeader(batch).producerId >= 0;
}

/** The idempotent batches of a chunk's written batches, for the sequencer to record with their offsets. */
export function chunkProducerBatches(written: readonly Buffer[]): ChunkProducerBatch[] {
  const out: ChunkProducerBatch[] = [];
  let offsetInChunk = 0;
  for (const batch of written) {
    const h = readBatchHeader(batch);
    if (h.producerId >= 0) {
      out.push({
        producerId: h.producerId, producerEpoch: h.producerEpoch, baseSequence: h.baseSequence,
        lastSequence: lastSequenceOf(h.baseSequence, h.lastOffsetDelta), offsetInChunk, lastOffsetDelta: h.lastOffsetDelta,
      });
    }
    offsetInChunk += h.lastOffsetDelta + 1;
  }
  return out;
}

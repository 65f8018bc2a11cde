/**
 * Produce requests and their answers: records as JSON produce takes them (idempotent or not), the producer identities
 * the broker issues, and the binary data path's produce of encoded RecordBatch v2 batches. Pure types: importing this
 * loads nothing.
 */
import type { RecordInput } from './types.js';

/** A record to produce; without `partition` the broker picks one (murmur2 of the key, or spread if null). */
export interface ProduceRecord extends RecordInput {
  partition?: number;
}

export interface ProduceRequest {
  topic: string;
  records: ProduceRecord[];
  /**
   * Makes the produce idempotent (Kafka's enable.idempotence): every record must name its `partition`;
   * a partition's records get consecutive sequences from `baseSequences[partition]`. A retry of the same
   * request is acknowledged with the original offsets and stored once; a sequence gap is refused with
   * `OUT_OF_ORDER_SEQUENCE`.
   */
  idempotence?: ProducerIdempotence;
}

/** A producer's identity and where its sequences stand, per partition. */
export interface ProducerIdempotence {
  /** From {@link OnelogApi.initProducerId}. */
  producerId: number;
  producerEpoch: number;
  /** partition -> sequence of the request's first record in that partition (int32, wraps to 0) */
  baseSequences: Record<number, number>;
}

/** A producer id and epoch issued by the broker. */
export interface ProducerIdentity {
  producerId: number;
  producerEpoch: number;
}

/** Where each record of a produce request landed, in request order. */
export interface ProduceResult {
  topic: string;
  offsets: Array<{ partition: number; offset: number }>;
}

/** A produce of encoded RecordBatch v2 batches (the binary data path), refused or stored whole. */
export interface ProduceBatchesRequest {
  topic: string;
  /** Whole batches as a client encoded them (base offset 0; the broker restamps it), each for its partition, in order. */
  batches: Array<{ partition: number; batch: Buffer }>;
}

/** Where each produced batch landed, in request order; `duplicate` when it was an idempotent retry already stored. */
export interface ProduceBatchesResult {
  batches: Array<{ partition: number; baseOffset: number; lastOffset: number; duplicate?: boolean }>;
}

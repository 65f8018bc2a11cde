/**
 * The produce path: checks, partitions, encodes and appends records (JSON produce), or validates and appends
 * client-encoded batches as they are (the binary data path, Kafka Produce); and the identities of idempotent
 * producers. A request is stored whole or refused whole.
 */
import { isCompacted } from '../protocol/types.js';
import type { Catalog } from '../catalog/catalog.js';
import type { Clock } from '../common/clock.js';
import { prepareClientBatch } from '../delivery/data-path.js';
import type {
  ProduceBatchesRequest, ProduceBatchesResult, ProduceRecord, ProduceRequest, ProduceResult, ProducerIdentity,
} from '../protocol/produce.js';
import type { CompressionCodec } from '../protocol/compression.js';
import { OnelogError } from '../protocol/errors.js';
import { Partitioner } from '../protocol/partitioner.js';
import { planProduce, withRecordOutcomes } from '../protocol/produce-plan.js';
import { encodeBatch, readBatchHeader } from '../protocol/record-batch.js';
import type { CompressionType } from '../protocol/topic-config.js';
import type { Appended, Logs } from '../log/logs.js';

/** Limits of produced records. */
export interface ProduceLimits {
  /** Largest record (key + value + headers), bytes. */
  maxRecordBytes: number;
  /** Produce splits a partition's records into batches of about this size, bytes. */
  maxBatchBytes: number;
  /** Most records one produce request may carry (JSON records, or the batches' record counts). */
  maxRecordsPerRequest: number;
}

export class ProducePath {
  private readonly partitioner = new Partitioner();

  /**
   * @param appended told of each append once it is done: the topic, its records and their batches' bytes (the
   *   broker counts them and wakes the topic's groups; see open.ts); must not throw
   * @param lastProducerId the highest producer id issued: a higher one in a produce was never issued (`UNKNOWN_PRODUCER_ID`)
   */
  constructor(
    private readonly logs: Logs,
    private readonly catalog: Catalog,
    private readonly clock: Clock,
    private readonly limits: ProduceLimits,
    private readonly appended: Appended,
    private lastProducerId: number,
  ) {}

  /**
   * Appends records; each goes to its `partition`, else to murmur2(key) % partitions, else (null key) to the
   * topic's sticky partition ({@link Partitioner}). Every record is checked before any is written, so a refused request stores
   * nothing. Batches are compressed with the topic's `compressionType` (`producer` and `none`: uncompressed).
   * Resolves once every record is durable. A full disk refuses the request before anything is written; a
   * partition that fails once others stored their records answers an error whose `stored` names them (see
   * {@link Logs.appendAll}): an idempotent producer's retry is stored once, a plain one's again.
   * With `idempotence`, a retried request is stored once and answers the original offsets.
   * @throws OnelogError `UNKNOWN_TOPIC`, `UNKNOWN_PARTITION`, `RECORD_TOO_LARGE`, `REQUEST_TOO_LARGE`, `INVALID_RECORD`,
   *   `INVALID_REQUEST`, `OUT_OF_ORDER_SEQUENCE`, `INVALID_PRODUCER_EPOCH`, `UNKNOWN_PRODUCER_ID`
   */
  async produce(request: ProduceRequest): Promise<ProduceResult> {
    const { topic, records } = request;
    this.checkRecordCount(topic, Array.isArray(records) ? records.length : 0);
    const partitionCount = this.logs.partitionCount(topic);
    const { cleanupPolicy, compressionType } = this.logs.config(topic);
    const batches = planProduce(request, {
      partitions: partitionCount,
      compacted: isCompacted(cleanupPolicy),
      maxRecordBytes: this.limits.maxRecordBytes,
      maxBatchBytes: this.limits.maxBatchBytes,
      choosePartition: (r, bytes) => this.choosePartition(topic, r, bytes, partitionCount),
    });
    if (request.idempotence && !(await this.knowsProducer(request.idempotence.producerId))) {
      throw new OnelogError('UNKNOWN_PRODUCER_ID', `producer id ${request.idempotence.producerId} was never issued by this broker; ` +
        'get one from initProducerId (POST /producers)', { topic, producerId: request.idempotence.producerId });
    }
    const offsets = new Array<{ partition: number; offset: number }>(records.length);
    const now = this.clock.now();
    const codec = batchCodec(compressionType);
    const encoded = batches.map(({ partition, indexes, producer }) => ({
      partition, indexes, producer, log: this.logs.get(topic, partition),
      batch: encodeBatch(indexes.map((i) => records[i]!), 0, now, producer, { compression: codec }),
    }));
    // An idempotent request is refused whole: each partition's first batch is checked before any is written
    // (the partition's later batches follow on from it). Nothing awaits in between, so no other append interleaves.
    // Cluster mode has no such check: each partition's sequencer checks the batches it commits.
    const checked = new Set<number>();
    for (const { partition, producer, batch, log } of encoded) {
      if (producer && !checked.has(partition)) {
        log.checkIdempotentBatch?.(batch);
        checked.add(partition);
      }
    }
    // Batches of one partition are appended in order (their sequences follow each other).
    const appended = await this.logs.appendAll(encoded).catch((err: unknown) => {
      throw withRecordOutcomes(err, encoded); // cluster mode: a client sends the rest to the partitions' leader
    });
    this.appended(topic, request.records.length, encoded.reduce((sum, e) => sum + e.batch.length, 0));
    encoded.forEach(({ partition, indexes }, b) => indexes.forEach((i, k) => (offsets[i] = { partition, offset: appended[b]!.baseOffset + k })));
    return { topic, offsets };
  }



  /** @throws OnelogError `REQUEST_TOO_LARGE` for more records than {@link ProduceLimits.maxRecordsPerRequest} */
  private checkRecordCount(topic: string, records: number): void {
    if (records <= this.limits.maxRecordsPerRequest) return;
    throw new OnelogError('REQUEST_TOO_LARGE', `the request carries ${records} records, above the limit of ${this.limits.maxRecordsPerRequest} ` +
      'per request; send them in several requests. Nothing was written', { topic, records, maxRecordsPerRequest: this.limits.maxRecordsPerRequest });
  }

  /**
   * Appends client-encoded RecordBatch v2 batches as they are (the binary data path, Kafka Produce), each validated
   * whole first, its records decoded once (see {@link prepareClientBatch}). The request is refused whole: every batch is checked, and
   * each partition's first idempotent batch checked against its producer state, before any is appended (no
   * await in between). Resolves as {@link produce} does.
   * @throws OnelogError `UNKNOWN_TOPIC`, `UNKNOWN_PARTITION`, `CORRUPT_MESSAGE`, `RECORD_TOO_LARGE`, `REQUEST_TOO_LARGE`,
   *   `INVALID_RECORD`, `UNSUPPORTED_COMPRESSION`, `INVALID_REQUEST`, `OUT_OF_ORDER_SEQUENCE`, `INVALID_PRODUCER_EPOCH`, `UNKNOWN_PRODUCER_ID`
   */
  async produceBatches(request: ProduceBatchesRequest): Promise<ProduceBatchesResult> {
    if (!Array.isArray(request.batches) || request.batches.length === 0) {
      throw new OnelogError('INVALID_REQUEST', 'a batch produce needs at least one batch', { topic: request.topic });
    }
    const prepare = () => {
      const limits = {
        maxBatchBytes: Math.max(this.limits.maxBatchBytes, this.limits.maxRecordBytes), maxRecordBytes: this.limits.maxRecordBytes, lastProducerId: this.lastProducerId,
      };
      return request.batches.map(({ partition, batch }, index) => {
        const log = this.logs.get(request.topic, partition);
        if (!Buffer.isBuffer(batch)) throw new OnelogError('INVALID_REQUEST', 'each batch must be the bytes of one RecordBatch v2');
        return { log, batch: prepareClientBatch(batch, log, limits, index) };
      });
    };
    let prepared: ReturnType<typeof prepare>;
    try {
      prepared = prepare();
    } catch (err) {
      const producerId = (err as OnelogError).code === 'UNKNOWN_PRODUCER_ID' ? (err as OnelogError).context.producerId : undefined;
      if (typeof producerId !== 'number' || !(await this.knowsProducer(producerId))) throw err;
      prepared = prepare();
    }
    this.checkRecordCount(request.topic, prepared.reduce((sum, { batch }) => sum + readBatchHeader(batch).recordCount, 0));
    const checked = new Set<number>();
    for (const { log, batch } of prepared) {
      if (readBatchHeader(batch).producerId >= 0 && !checked.has(log.partition)) {
        log.checkIdempotentBatch?.(batch);
        checked.add(log.partition);
      }
    }
    const appended = await this.logs.appendAll(prepared);
    this.appended(request.topic,
      appended.reduce((sum, a) => sum + (a.duplicate ? 0 : a.lastOffset - a.baseOffset + 1), 0),
      appended.reduce((sum, a, i) => sum + (a.duplicate ? 0 : prepared[i]!.batch.length), 0));
    return {
      batches: appended.map(({ baseOffset, lastOffset, duplicate }, i) => ({
        partition: prepared[i]!.log.partition, baseOffset, lastOffset, ...(duplicate ? { duplicate } : {}),
      })),
    };
  }

  /**
   * Whether `producerId` was issued: by this broker, or since its start by another sharing the catalog (cluster mode),
   * which the catalog is asked for only when the id is above the highest known.
   */
  private async knowsProducer(producerId: number): Promise<boolean> {
    if (producerId > this.lastProducerId) this.lastProducerId = Math.max(this.lastProducerId, await this.catalog.producerIds.last());
    return producerId <= this.lastProducerId;
  }

  /** Issues a new idempotent producer identity: a never reused id (from the catalog) at epoch 0. */
  async initProducerId(): Promise<ProducerIdentity> {
    const producerId = await this.catalog.producerIds.issue(this.clock.now());
    this.lastProducerId = Math.max(this.lastProducerId, producerId);
    return { producerId, producerEpoch: 0 };
  }

  private choosePartition(topic: string, r: ProduceRecord, bytes: number, partitions: number): number {
    if (r.partition !== undefined) return this.logs.get(topic, r.partition).partition;
    return this.partitioner.partitionOf(topic, r.key, bytes, partitions);
  }
}

/**
 * The codec produce writes a topic's batches with. `producer` keeps the producer's codec in Kafka; the JSON
 * produce path carries none, so it writes them uncompressed, as `none` does.
 */
function batchCodec(compressionType: CompressionType): CompressionCodec {
  return compressionType === 'producer' ? 'none' : compressionType;
}

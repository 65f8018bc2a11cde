/**
 * Produce (0): each partition's record batches are appended as sent (the binary data path: each batch validated
 * whole, its records decoded once, never re-encoded; a bad batch refuses its partition's records whole), partition
 * by partition so one partition's error does not refuse the others. An idempotent producer's retried batch is a success with its original offset. `acks=0` gets no answer. Transactions are not
 * served: a transactional id answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53).
 *
 * InitProducerId (22): a new idempotent producer identity.
 */
import { OnelogError } from '../../protocol/errors.js';
import { batchSize, LOG_OVERHEAD } from '../../protocol/record-batch.js';
import { withAutoCreate } from '../auto-create.js';
import { KAFKA_ERROR, kafkaErrorCode } from '../errors.js';
import { initProducerIdRequest, initProducerIdResponse, produceRequest, produceResponse } from '../messages/produce.js';
import type { KafkaApi } from './api.js';

interface PartitionData {
  index: number;
  records: Buffer | null;
}

/** The record batches a Produce partition carries, one Buffer slice each. @throws OnelogError `CORRUPT_MESSAGE` */
function splitBatches(records: Buffer): Buffer[] {
  const batches: Buffer[] = [];
  for (let pos = 0; pos < records.length;) {
    if (records.length - pos < LOG_OVERHEAD) throw new OnelogError('CORRUPT_MESSAGE', `a torn record batch at byte ${pos} of ${records.length}`);
    const end = pos + batchSize(records, pos);
    if (end > records.length || end <= pos) throw new OnelogError('CORRUPT_MESSAGE', `a record batch runs past the ${records.length} bytes sent`);
    batches.push(records.subarray(pos, end));
    pos = end;
  }
  return batches;
}

export const produce: KafkaApi = {
  key: 0, name: 'Produce', minVersion: 3, maxVersion: 11, request: produceRequest, response: produceResponse,
  async handle(request, ctx) {
    const { api } = ctx;
    const transactional = request.transactionalId !== null;
    const topics = request.topicData as Array<{ name: string; partitionData: PartitionData[] }>;
    const responses = await Promise.all(topics.map(async ({ name, partitionData }) => ({
      name,
      partitionResponses: await Promise.all(partitionData.map(async ({ index, records }) => {
        const answer = { index, errorCode: 0, baseOffset: -1, logAppendTimeMs: -1, logStartOffset: -1, recordErrors: [], errorMessage: null as string | null };
        if (transactional) return { ...answer, errorCode: KAFKA_ERROR.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, errorMessage: 'onelog does not serve transactions' };
        try {
          const batches = splitBatches(records ?? Buffer.alloc(0));
          if (batches.length === 0) throw new OnelogError('INVALID_REQUEST', 'no record batch');
          const result = await withAutoCreate(ctx, name, () => api.produceBatches({ topic: name, batches: batches.map((batch) => ({ partition: index, batch })) }));
          return { ...answer, baseOffset: result.batches[0]!.baseOffset };
        } catch (err) {
          if (!(err instanceof OnelogError)) throw err;
          return { ...answer, errorCode: kafkaErrorCode(err), errorMessage: err.message };
        }
      })),
    })));
    return request.acks === 0 ? null : { responses, throttleTimeMs: 0 };
  },
};

export const initProducerId: KafkaApi = {
  key: 22, name: 'InitProducerId', minVersion: 0, maxVersion: 5, request: initProducerIdRequest, response: initProducerIdResponse,
  async handle(request, { api }) {
    if (request.transactionalId !== null) return { throttleTimeMs: 0, errorCode: KAFKA_ERROR.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, producerId: -1, producerEpoch: -1 };
    const { producerId, producerEpoch } = await api.initProducerId();
    return { throttleTimeMs: 0, errorCode: KAFKA_ERROR.NONE, producerId, producerEpoch };
  },
};

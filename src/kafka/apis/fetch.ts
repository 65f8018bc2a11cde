/**
 * ListOffsets (2): a partition's earliest (-2) or latest (-1) offset, or the first offset whose record's timestamp
 * is at or after a time (none later: offset -1, not the high watermark); -3 (the record with the largest timestamp)
 * answers the last record.
 *
 * Fetch (1): each partition's record batches as stored, never re-encoded (the first batch may hold records before
 * the offset asked: Kafka clients skip them), with leader epoch 0, LastStableOffset = high watermark, session 0 (no
 * incremental fetch sessions). A fetch waits up to MaxWaitMs (at most 30 s) while no partition has records. An answer
 * holds to the request's MaxBytes (fetch.max.bytes) and each partition's PartitionMaxBytes (max.partition.fetch.bytes)
 * in whole batches, but for its first batch, which goes whatever its size so the consumer makes progress (as Kafka).
 * From v13 topics are named by id (topic-ids.ts; an id no topic has answers UNKNOWN_TOPIC_ID).
 */
import type { FetchRequest } from '../../protocol/fetch.js';
import { OnelogError } from '../../protocol/errors.js';
import { KAFKA_ERROR, kafkaCodeOf, kafkaErrorCode } from '../errors.js';
import { fetchRequest, fetchResponse, listOffsetsRequest, listOffsetsResponse } from '../messages/fetch.js';
import { batchSize } from '../../protocol/record-batch.js';
import { EARLIEST, LATEST } from './api.js';
import type { KafkaApi, KafkaDataApi } from './api.js';

const MAX_TIMESTAMP = -3;
const MAX_WAIT_MS = 30_000;

export const listOffsets: KafkaApi = {
  key: 2, name: 'ListOffsets', minVersion: 1, maxVersion: 9, request: listOffsetsRequest, response: listOffsetsResponse,
  async handle(request, { api }) {
    const topics = request.topics as Array<{ name: string; partitions: Array<{ partitionIndex: number; timestamp: number }> }>;
    return {
      throttleTimeMs: 0,
      topics: await Promise.all(topics.map(async ({ name, partitions }) => ({
        name,
        partitions: await Promise.all(partitions.map(async ({ partitionIndex, timestamp }) => {
          const answer = { partitionIndex, errorCode: 0, timestamp: -1, offset: -1, leaderEpoch: 0 };
          try {
            const p = (await api.describeTopic(name)).partitions[partitionIndex];
            if (p === undefined) throw new OnelogError('UNKNOWN_PARTITION', `topic ${name} has no partition ${partitionIndex}`);
            if (timestamp === LATEST) return { ...answer, offset: p.highWatermark };
            if (timestamp === EARLIEST) return { ...answer, offset: p.logStartOffset };
            const offset = timestamp === MAX_TIMESTAMP ? p.highWatermark - 1 : await api.offsetForTimestamp(name, partitionIndex, timestamp);
            if (offset < p.logStartOffset || offset >= p.highWatermark) return answer;
            const [record] = (await api.fetch({ topic: name, partitions: [{ partition: partitionIndex, offset }], maxRecords: 1 })).partitions[0]!.records;
            return { ...answer, offset, timestamp: record?.timestamp ?? -1 };
          } catch (err) {
            if (!(err instanceof OnelogError)) throw err;
            return { ...answer, errorCode: kafkaErrorCode(err) };
          }
        })),
      }))),
    };
  },
};

interface FetchTopic {
  /** Its name (v13+: looked up by its id; null for an id no topic has). */
  topic: string | null;
  topicId: string;
  partitions: Array<{ partition: number; fetchOffset: number; partitionMaxBytes: number }>;
}

const EMPTY = Buffer.alloc(0);

/** One topic's part of a fetch, each partition's error as a Kafka code. */
async function fetchTopic(broker: KafkaDataApi, t: FetchTopic, maxBytes: number, maxWaitMs: number) {
  if (t.topic === null) {
    return t.partitions.map((p) => ({
      partitionIndex: p.partition, errorCode: KAFKA_ERROR.UNKNOWN_TOPIC_ID, highWatermark: -1, lastStableOffset: -1, logStartOffset: -1,
      abortedTransactions: null, preferredReadReplica: -1, records: EMPTY,
    }));
  }
  const request: FetchRequest = {
    topic: t.topic, partitions: t.partitions.map((p) => ({ partition: p.partition, offset: p.fetchOffset })),
    maxBytes: Math.max(1, Math.min(maxBytes, t.partitions.reduce((sum, p) => sum + p.partitionMaxBytes, 0))),
    maxRecords: 100_000, maxWaitMs,
  };
  try {
    const result = await broker.fetchBatches(request);
    return result.partitions.map((p) => ({
      partitionIndex: p.partition, errorCode: p.error ? kafkaCodeOf(p.error.code, 'fetch') : 0,
      highWatermark: p.highWatermark, lastStableOffset: p.highWatermark, logStartOffset: p.logStartOffset,
      // A partition with an error has an empty record set, as Kafka answers (librdkafka cannot read a null one).
      abortedTransactions: null, preferredReadReplica: -1, records: p.error ? EMPTY : p.batches,
    }));
  } catch (err) {
    if (!(err instanceof OnelogError)) throw err;
    return t.partitions.map((p) => ({
      partitionIndex: p.partition, errorCode: kafkaErrorCode(err, 'fetch'), highWatermark: -1, lastStableOffset: -1, logStartOffset: -1,
      abortedTransactions: null, preferredReadReplica: -1, records: EMPTY,
    }));
  }
}

export const fetch: KafkaApi = {
  key: 1, name: 'Fetch', minVersion: 4, maxVersion: 13, request: fetchRequest, response: fetchResponse,
  async handle(request, { api, header, topicIds }) {
    const topics = request.topics as FetchTopic[];
    if (header.apiVersion >= 13) for (const t of topics) t.topic = await topicIds.nameOf(api, t.topicId);
    const maxBytes = request.maxBytes as number;
    const maxWaitMs = Math.max(0, Math.min(request.maxWaitMs as number, MAX_WAIT_MS));
    const read = (wait: number) => Promise.all(topics.map(async (t) => ({ topic: t.topic, topicId: t.topicId, partitions: await fetchTopic(api, t, maxBytes, wait) })));
    let responses = await read(topics.length === 1 ? maxWaitMs : 0);
    const empty = responses.every((t) => t.partitions.every((p) => p.errorCode === 0 && (p.records?.length ?? 0) === 0));
    if (empty && topics.length > 1 && maxWaitMs > 0) {
      // Several topics: wait until any has records (or the wait ends), then read them all.
      await Promise.race(topics.map((t) => fetchTopic(api, t, maxBytes, maxWaitMs)));
      responses = await read(0);
    }
    holdToMaxBytes(topics, responses, maxBytes);
    return { throttleTimeMs: 0, errorCode: 0, sessionId: 0, responses };
  },
};

/**
 * Cuts an answer's records to whole batches within the request's `maxBytes` and each partition's `partitionMaxBytes`,
 * in the answer's order; only the answer's first batch may pass them. A partition left without records is read
 * again by its consumer's next fetch. (Topics are read side by side, and a log read always returns its first batch.)
 */
function holdToMaxBytes(topics: readonly FetchTopic[], responses: Array<{ partitions: Array<{ records: Buffer }> }>, maxBytes: number): void {
  let total = 0;
  responses.forEach((t, ti) => t.partitions.forEach((p, pi) => {
    const partitionMax = topics[ti]!.partitions[pi]?.partitionMaxBytes ?? maxBytes;
    let kept = 0;
    for (let pos = 0; pos < p.records.length;) {
      const size = batchSize(p.records, pos);
      if (total > 0 && (total + size > maxBytes || kept + size > partitionMax)) break;
      total += size;
      kept += size;
      pos += size;
    }
    if (kept < p.records.length) p.records = p.records.subarray(0, kept);
  }));
}

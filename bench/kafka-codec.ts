/**
 * What the Kafka codec's interpreter costs (docs/kafka.md): decoding a Produce request and encoding a Fetch
 * response, each of 10 partitions carrying a 16 KiB record batch (the batches are slices, never copied on decode),
 * and a Metadata response of 100 topics of 10 partitions, as the listener writes them (in parts: the batches are
 * the slices read from the log); messages per second and µs per message.
 */
import { ByteReader } from '../src/kafka/codec/bytes.js';
import { decode, encode } from '../src/kafka/codec/interpreter.js';
import type { Struct } from '../src/kafka/codec/interpreter.js';
import type { MessageDefinition } from '../src/kafka/codec/schema.js';
import { fetchResponse } from '../src/kafka/messages/fetch.js';
import { metadataResponse } from '../src/kafka/messages/metadata.js';
import { produceRequest } from '../src/kafka/messages/produce.js';

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

function rate(label: string, work: () => void, seconds = 1): void {
  for (let i = 0; i < 200; i++) work(); // warm-up
  let n = 0;
  const started = performance.now();
  while (performance.now() - started < seconds * 1000) {
    for (let i = 0; i < 100; i++) work();
    n += 100;
  }
  const ms = performance.now() - started;
  console.log(`  ${label}: ${fmt((n / ms) * 1000)} messages/s, ${(ms * 1000 / n).toFixed(1)} µs each`);
}

export async function kafkaCodecBenchmark(): Promise<void> {
  console.log('\nkafka codec: the interpreter over message definitions, in-process');
  const batch = Buffer.alloc(16 * 1024, 7);
  const partitions = Array.from({ length: 10 }, (_, index) => ({ index, records: batch }));
  const produce: Struct = { transactionalId: null, acks: -1, timeoutMs: 30_000, topicData: [{ name: 'edits', partitionData: partitions }] };
  const fetched: Struct = {
    throttleTimeMs: 0, errorCode: 0, sessionId: 0,
    responses: [{ topic: 'edits', partitions: partitions.map((p) => ({ partitionIndex: p.index, errorCode: 0, highWatermark: 1e6, lastStableOffset: 1e6, logStartOffset: 0, abortedTransactions: null, preferredReadReplica: -1, records: batch })) }],
  };
  const metadata: Struct = {
    throttleTimeMs: 0, brokers: [{ nodeId: 0, host: '127.0.0.1', port: 9092, rack: null }], clusterId: 'onelog', controllerId: 0,
    topics: Array.from({ length: 100 }, (_, t) => ({
      errorCode: 0, name: `topic-${t}`, isInternal: false,
      partitions: Array.from({ length: 10 }, (_, p) => ({ errorCode: 0, partitionIndex: p, leaderId: 0, leaderEpoch: 0, replicaNodes: [0], isrNodes: [0], offlineReplicas: [] })),
    })),
  };
  const cases: Array<[string, MessageDefinition, number, Struct]> = [
    ['Produce v7 request (10 x 16 KiB)', produceRequest, 7, produce], ['Produce v11 request (10 x 16 KiB)', produceRequest, 11, produce],
  ];
  for (const [label, def, version, value] of cases) {
    const bytes = Buffer.from(encode(def, version, value).finish());
    rate(`decode ${label}`, () => void decode(def, version, new ByteReader(bytes)));
  }
  rate('encode Fetch v11 response (10 x 16 KiB)', () => void encode(fetchResponse, 11, fetched).parts());
  rate('encode Fetch v12 response (10 x 16 KiB)', () => void encode(fetchResponse, 12, fetched).parts());
  rate('encode Metadata v9 response (100 topics x 10 partitions)', () => void encode(metadataResponse, 9, metadata).parts());
}

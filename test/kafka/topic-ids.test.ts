/**
 * Topic ids on the wire (KIP-516; src/kafka/topic-ids.ts): Metadata v10+ tells each topic's id, the same after a
 * restart and a new one for a topic created again under its name; Metadata v12 and DeleteTopics v6 take a topic by
 * its id alone, Fetch v13 reads by id; an id no topic has answers UNKNOWN_TOPIC_ID (100).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { KafkaListener } from '../../src/kafka/listener.js';
import { deleteTopicsRequest, deleteTopicsResponse } from '../../src/kafka/messages/admin.js';
import { fetchRequest, fetchResponse } from '../../src/kafka/messages/fetch.js';
import { metadataRequest, metadataResponse } from '../../src/kafka/messages/metadata.js';
import { silentLogger } from '../../src/common/logger.js';
import { batchSize, decodeRecords } from '../../src/protocol/record-batch.js';
import { call } from '../helpers/kafka-wire.js';
import { tmpDir } from '../helpers/tmp.js';
import { readEdits } from '../helpers/wikiticker.js';

let dataDir: string;
let broker: Broker;
let listener: KafkaListener;
const start = async () => {
  broker = await Broker.open({ dataDir, retentionCheckIntervalMs: 0, monitoring: { alertCheckIntervalMs: 0 } });
  listener = await KafkaListener.start(broker, { port: 0, logger: silentLogger });
};
beforeEach(async () => {
  dataDir = tmpDir();
  await start();
});
afterEach(async () => {
  await listener.close();
  await broker.close();
});

type Topic = { errorCode: number; name: string | null; topicId: string };
const metadata = async (topics: Array<{ name: string | null; topicId?: string }>) =>
  (await call(listener.port, 3, 12, metadataRequest, metadataResponse, {
    topics: topics.map((t) => ({ name: t.name, topicId: t.topicId ?? '0'.repeat(32) })), allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false,
  }) as { topics: Topic[] }).topics;

describe('topic ids', () => {
  it('tells each topic an id that lasts while the topic does, and takes it back in Metadata, Fetch and DeleteTopics', async () => {
    const edits = readEdits().slice(0, 20);
    await broker.createTopic({ topic: 'edits', partitions: 1 });
    await broker.produce({ topic: 'edits', records: edits.map((e) => ({ key: Buffer.from(e.key), value: Buffer.from(e.value), partition: 0 })) });
    const [told] = await metadata([{ name: 'edits' }]);
    expect(told!.topicId).toMatch(/^[0-9a-f]{32}$/);
    expect(told!.topicId).not.toBe('0'.repeat(32));
    // By id alone, also after a restart (a new listener knows nothing yet).
    await listener.close();
    await broker.close();
    await start();
    expect(await metadata([{ name: null, topicId: told!.topicId }])).toEqual([expect.objectContaining({ errorCode: 0, name: 'edits', topicId: told!.topicId })]);
    expect((await metadata([{ name: null, topicId: 'ab'.repeat(16) }]))[0]!.errorCode).toBe(100);

    // Fetch v13 reads a topic by its id.
    const fetched = await call(listener.port, 1, 13, fetchRequest, fetchResponse, {
      replicaId: -1, maxWaitMs: 0, minBytes: 1, maxBytes: 1 << 20, isolationLevel: 0, sessionId: 0, sessionEpoch: -1, rackId: '',
      topics: [{ topicId: told!.topicId, partitions: [{ partition: 0, fetchOffset: 0, partitionMaxBytes: 1 << 20 }] }, { topicId: 'cd'.repeat(16), partitions: [{ partition: 0, fetchOffset: 0, partitionMaxBytes: 1 << 20 }] }],
      forgottenTopicsData: [],
    }) as { responses: Array<{ topicId: string; partitions: Array<{ errorCode: number; records: Buffer }> }> };
    const records = fetched.responses[0]!.partitions[0]!.records;
    const keys: string[] = [];
    for (let pos = 0; pos < records.length; pos += batchSize(records, pos)) keys.push(...decodeRecords(records, pos).map((r) => r.key!.toString()));
    expect([fetched.responses[0]!.topicId, keys]).toEqual([told!.topicId, edits.map((e) => e.key)]);
    expect(fetched.responses[1]!.partitions[0]!.errorCode).toBe(100);

    // Deleted by its id; created again under its name, it has a new one, and the old id is no topic's.
    const deleted = await call(listener.port, 20, 6, deleteTopicsRequest, deleteTopicsResponse, { topics: [{ name: null, topicId: told!.topicId }], timeoutMs: 5000 }) as {
      responses: Array<{ name: string | null; errorCode: number }>;
    };
    expect(deleted.responses[0]).toMatchObject({ name: 'edits', errorCode: 0 });
    await broker.createTopic({ topic: 'edits', partitions: 1 });
    const [again] = await metadata([{ name: 'edits' }]);
    expect(again!.topicId).not.toBe(told!.topicId);
    expect((await metadata([{ name: null, topicId: told!.topicId }]))[0]!.errorCode).toBe(100);
    // A topic deleted and created again elsewhere (not through this listener): its old id, still known here, is no
    // topic's, and DeleteTopics by it deletes nothing.
    await broker.deleteTopic('edits');
    await new Promise((resolve) => setTimeout(resolve, 2)); // a new creation time, to the ms
    await broker.createTopic({ topic: 'edits', partitions: 1 });
    const byOldId = await call(listener.port, 20, 6, deleteTopicsRequest, deleteTopicsResponse, { topics: [{ name: null, topicId: again!.topicId }], timeoutMs: 5000 }) as {
      responses: Array<{ errorCode: number }>;
    };
    expect(byOldId.responses[0]!.errorCode).toBe(100);
    expect((await broker.describeTopic('edits')).partitions).toHaveLength(1);
  });
});

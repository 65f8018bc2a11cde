/**
 * kafkajs's admin against the Kafka listener: create topics with Kafka's setting names, list and describe groups,
 * delete records and groups, describe a topic's settings; each seen by onelog.
 */
import net from 'node:net';
import { ConfigResourceTypes, Kafka, logLevel } from 'kafkajs';
import type { Admin } from 'kafkajs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { KafkaListener } from '../../src/kafka/listener.js';
import { silentLogger } from '../../src/common/logger.js';
import { incrementalAlterConfigsRequest, incrementalAlterConfigsResponse } from '../../src/kafka/messages/admin.js';
import { call } from '../helpers/kafka-wire.js';
import { tmpDir } from '../helpers/tmp.js';

/**
 * One DeleteRecords v1 request written byte by byte (kafkajs checks offsets itself and kcat may not be installed),
 * as librdkafka's 0081 test sends it: what the partition's answer says.
 */
async function deleteRecordsRaw(port: number, topic: string, partition: number, offset: number): Promise<{ errorCode: number; lowWatermark: number }> {
  const name = Buffer.from(topic);
  const body = Buffer.alloc(2 + 2 + 4 + 2 + 4 + 2 + name.length + 4 + 4 + 8 + 4);
  let at = body.writeInt16BE(21, 0); // DeleteRecords
  at = body.writeInt16BE(1, at);
  at = body.writeInt32BE(7, at); // correlation id
  at = body.writeInt16BE(-1, at); // no client id
  at = body.writeInt32BE(1, at);
  at = body.writeInt16BE(name.length, at);
  at += name.copy(body, at);
  at = body.writeInt32BE(1, at);
  at = body.writeInt32BE(partition, at);
  at = body.writeBigInt64BE(BigInt(offset), at);
  body.writeInt32BE(5000, at); // timeout
  const size = Buffer.alloc(4);
  size.writeInt32BE(body.length);
  const socket = net.connect(port, '127.0.0.1');
  socket.write(Buffer.concat([size, body]));
  let answer = Buffer.alloc(0);
  for await (const chunk of socket) {
    answer = Buffer.concat([answer, chunk as Buffer]);
    if (answer.length >= 4 && answer.length >= 4 + answer.readInt32BE(0)) break;
  }
  socket.destroy();
  // size, correlation id, throttle, topics [name, partitions [index, low watermark, error code]]
  let pos = 4 + 4 + 4 + 4;
  pos += 2 + answer.readInt16BE(pos) + 4 + 4;
  return { lowWatermark: Number(answer.readBigInt64BE(pos)), errorCode: answer.readInt16BE(pos + 8) };
}

let broker: Broker;
let listener: KafkaListener;
let admin: Admin;

beforeEach(async () => {
  broker = await Broker.open({ dataDir: tmpDir(), retentionCheckIntervalMs: 0, monitoring: { alertCheckIntervalMs: 0 } });
  listener = await KafkaListener.start(broker, { port: 0, logger: silentLogger });
  admin = new Kafka({ clientId: 'admin', brokers: [`127.0.0.1:${listener.port}`], logLevel: logLevel.NOTHING, retry: { retries: 3, initialRetryTime: 20 } }).admin();
  await admin.connect();
});
afterEach(async () => {
  await admin.disconnect();
  await listener.close();
  await broker.close();
});

describe('kafka admin', () => {
  it('creates topics with Kafka\'s setting names, one replica, and refuses a second creation', async () => {
    expect(await admin.createTopics({
      topics: [{ topic: 'edits', numPartitions: 3, replicationFactor: 1, configEntries: [{ name: 'retention.ms', value: '-1' }, { name: 'cleanup.policy', value: 'compact' }] }],
    })).toBe(true);
    const d = await broker.describeTopic('edits');
    expect(d.partitions).toHaveLength(3);
    expect(d.config).toMatchObject({ retentionMs: -1, cleanupPolicy: 'compact' });
    await expect(admin.createTopics({ topics: [{ topic: 'edits', numPartitions: 1 }] })).resolves.toBe(false); // kafkajs: already exists
    await expect(admin.createTopics({ topics: [{ topic: 'x', numPartitions: 1, replicationFactor: 3 }] })).rejects.toMatchObject({
      errors: [expect.objectContaining({ type: 'INVALID_REPLICATION_FACTOR' })],
    });
    await expect(admin.createTopics({ topics: [{ topic: 'y', numPartitions: 1, configEntries: [{ name: 'retention.ms', value: 'soon' }] }] })).rejects.toThrow();
    expect((await broker.listTopics()).map((t) => t.topic)).toEqual(['edits']);
    // An explicit replica assignment (librdkafka's 0081): its partitions make the count, one replica each.
    expect(await admin.createTopics({ topics: [{ topic: 'assigned', replicaAssignment: Array.from({ length: 22 }, (_, partition) => ({ partition, replicas: [0] })) }] })).toBe(true);
    expect((await broker.describeTopic('assigned')).partitions).toHaveLength(22);
    await expect(admin.createTopics({ topics: [{ topic: 'gap', replicaAssignment: [{ partition: 0, replicas: [0] }, { partition: 2, replicas: [0] }] }] }))
      .rejects.toMatchObject({ errors: [expect.objectContaining({ type: 'INVALID_REPLICA_ASSIGNMENT' })] });
    await expect(admin.createTopics({ topics: [{ topic: 'two', replicaAssignment: [{ partition: 0, replicas: [0, 1] }] }] }))
      .rejects.toMatchObject({ errors: [expect.objectContaining({ type: 'INVALID_REPLICATION_FACTOR' })] });
    expect((await broker.listTopics()).map((t) => t.topic).sort()).toEqual(['assigned', 'edits']);

    const configs = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: 'edits', configNames: ['retention.ms', 'cleanup.policy'] }] });
    expect(configs.resources[0]!.configEntries.map((c) => [c.configName, c.configValue])).toEqual([['cleanup.policy', 'compact'], ['retention.ms', '-1']]);
  });

  it('lists, describes and deletes groups; deletes records', async () => {
    await broker.createTopic({ topic: 'edits', partitions: 2 });
    await broker.produce({ topic: 'edits', records: Array.from({ length: 6 }, (_, i) => ({ key: null, value: Buffer.from(`e${i}`), partition: i % 2 })) });
    await broker.subscribe({ groupId: 'indexer', topic: 'edits', startPolicy: 'earliest' });
    const member = await broker.joinGroup({ groupId: 'indexer', topics: ['edits'], clientId: 'onelog-consumer' });
    expect((await admin.listGroups()).groups).toEqual([{ groupId: 'indexer', protocolType: 'consumer' }]);
    const { groups } = await admin.describeGroups(['indexer', 'nobody']);
    expect(groups[0]).toMatchObject({ groupId: 'indexer', state: 'Stable', protocolType: 'consumer', protocol: 'sticky' });
    expect(groups[0]!.members).toMatchObject([{ memberId: member.memberId, clientId: 'onelog-consumer' }]);
    expect(groups[1]).toMatchObject({ groupId: 'nobody', state: 'Dead', members: [] });

    await admin.deleteTopicRecords({ topic: 'edits', partitions: [{ partition: 0, offset: '2' }] });
    expect((await broker.describeTopic('edits')).partitions[0]).toMatchObject({ logStartOffset: 2, highWatermark: 3 });
    // An unset offset (-1001), another negative one, one below the log start or above the high watermark deletes
    // nothing: OFFSET_OUT_OF_RANGE, as Kafka answers (it once deleted every record of the partition).
    for (const offset of ['-1001', '-2', '1', '4']) {
      await expect(deleteRecordsRaw(listener.port, 'edits', 0, Number(offset))).resolves.toEqual({ errorCode: 1, lowWatermark: -1 });
    }
    await expect(broker.deleteRecords({ topic: 'edits', partition: 0, beforeOffset: -1001 })).rejects.toMatchObject({ code: 'OFFSET_OUT_OF_RANGE' });
    expect((await broker.describeTopic('edits')).partitions[0]).toMatchObject({ logStartOffset: 2, highWatermark: 3 });
    // -1 is the high watermark.
    await expect(deleteRecordsRaw(listener.port, 'edits', 1, -1)).resolves.toEqual({ errorCode: 0, lowWatermark: 3 });

    await expect(admin.deleteGroups(['indexer'])).rejects.toThrow(); // a live member: NON_EMPTY_GROUP
    await broker.leaveGroup({ groupId: 'indexer', memberId: member.memberId });
    expect(await admin.deleteGroups(['indexer'])).toEqual([{ groupId: 'indexer', errorCode: 0 }]);
    expect(await broker.listGroups()).toEqual([]);
  });

  it('answers a topic name that cannot be a topic\'s with INVALID_TOPIC_EXCEPTION (17), so a client fails it at once', async () => {
    await expect(admin.fetchTopicMetadata({ topics: ['no such/topic'] })).rejects.toMatchObject({ type: 'INVALID_TOPIC_EXCEPTION' });
    const producer = new Kafka({ clientId: 'p', brokers: [`127.0.0.1:${listener.port}`], logLevel: logLevel.NOTHING, retry: { retries: 0 } }).producer();
    await producer.connect();
    await expect(producer.send({ topic: 'bad topic', messages: [{ value: 'x' }] })).rejects.toMatchObject({ retriable: false, cause: { type: 'INVALID_TOPIC_EXCEPTION', code: 17 } });
    await producer.disconnect();
    // The same over onelog's API; a valid name that no topic has stays UNKNOWN_TOPIC.
    await expect(broker.describeTopic('bad topic')).rejects.toMatchObject({ code: 'INVALID_TOPIC' });
    await expect(broker.describeTopic('absent')).rejects.toMatchObject({ code: 'UNKNOWN_TOPIC' });
    await expect(broker.produce({ topic: 'bad topic', records: [{ key: null, value: Buffer.from('x') }] })).rejects.toMatchObject({ code: 'INVALID_TOPIC' });
  });

  it('takes a commit ahead of the log (librdkafka\'s 0099, 0140): read back as committed, lag 0 until the log reaches it', async () => {
    await broker.createTopic({ topic: 'empty', partitions: 1 });
    await admin.setOffsets({ groupId: 'ahead', topic: 'empty', partitions: [{ partition: 0, offset: '42' }] });
    expect(await admin.fetchOffsets({ groupId: 'ahead', topics: ['empty'] })).toEqual([{ topic: 'empty', partitions: [{ partition: 0, offset: '42', metadata: null }] }]);
    expect((await broker.describeGroup('ahead')).subscriptions[0]!.partitions[0]).toMatchObject({ committedOffset: 42, lag: 0 });
  });

  it('deletes topics (DeleteTopics v1): records and committed offsets go; unknown and in-use topics are refused', async () => {
    await broker.createTopic({ topic: 'edits', partitions: 2 });
    await broker.createTopic({ topic: 'kept', partitions: 1 });
    await broker.subscribe({ groupId: 'indexer', topic: 'edits', startPolicy: 'earliest' });
    await broker.commitOffsets({ groupId: 'indexer', topic: 'edits', offsets: [{ partition: 0, offset: 0 }] });
    await admin.deleteTopics({ topics: ['edits'] });
    expect((await broker.listTopics()).map((t) => t.topic)).toEqual(['kept']);
    expect(await broker.committedOffsets('indexer')).toEqual([]);
    await expect(admin.deleteTopics({ topics: ['edits'] })).rejects.toThrow(/does not host this topic/) // UNKNOWN_TOPIC_OR_PARTITION (3);

    await broker.subscribe({ groupId: 'retrying', topic: 'kept', retry: { delaysMs: [1000] } });
    await expect(admin.deleteTopics({ topics: ['kept'] })).rejects.toThrow(); // TOPIC_IN_USE, as INVALID_REQUEST (42)
    expect((await broker.listTopics()).map((t) => t.topic)).toContain('kept');
  });
});

describe('IncrementalAlterConfigs on topics', () => {
  const alter = async (topic: string, configs: Array<[string, number, string | null]>, validateOnly = false) =>
    ((await call(listener.port, 44, 1, incrementalAlterConfigsRequest, incrementalAlterConfigsResponse, {
      resources: [{ resourceType: 2, resourceName: topic, configs: configs.map(([name, configOperation, value]) => ({ name, configOperation, value })) }], validateOnly,
    })) as { responses: Array<{ errorCode: number; errorMessage: string | null }> }).responses[0]!;

  it('sets, deletes (back to the default) and appends to or subtracts from cleanup.policy, as librdkafka\'s 0011 does', async () => {
    await broker.createTopic({ topic: 'edits', partitions: 1 });
    expect(await alter('edits', [['cleanup.policy', 2, 'compact'], ['retention.ms', 0, '60000']])).toMatchObject({ errorCode: 0 });
    expect((await broker.describeTopic('edits')).config).toMatchObject({ cleanupPolicy: 'compact,delete', retentionMs: 60_000 });
    expect(await alter('edits', [['cleanup.policy', 3, 'delete'], ['retention.ms', 1, null]])).toMatchObject({ errorCode: 0 });
    expect((await broker.describeTopic('edits')).config).toMatchObject({ cleanupPolicy: 'compact', retentionMs: 7 * 24 * 3600 * 1000 });
    // validateOnly changes nothing; a bad one refuses the resource whole.
    expect(await alter('edits', [['retention.ms', 0, '1000']], true)).toMatchObject({ errorCode: 0 });
    const bad = await alter('edits', [['retention.ms', 0, '5000'], ['cleanup.policy', 3, 'compact']]);
    expect(bad).toMatchObject({ errorCode: 40, errorMessage: expect.stringMatching(/cleanup.policy cannot be left empty/) });
    expect((await alter('edits', [['max.message.bytes', 0, '1']])).errorMessage).toMatch(/unknown topic setting max.message.bytes/);
    expect((await broker.describeTopic('edits')).config).toMatchObject({ cleanupPolicy: 'compact', retentionMs: 7 * 24 * 3600 * 1000 });
    expect((await alter('nope', [['retention.ms', 0, '1000']])).errorCode).toBe(3);
  });
});

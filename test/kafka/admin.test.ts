/**
 * kafkajs's admin against the Kafka listener: create topics with Kafka's setting names, list and describe groups,
 * delete records and groups, describe a topic's settings; each seen by onelog.
 */
import { ConfigResourceTypes, Kafka, logLevel } from 'kafkajs';
import type { Admin } from 'kafkajs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker.js';
import { KafkaListener } from '../../src/kafka/listener.js';
import { silentLogger } from '../../src/logger.js';
import { tmpDir } from '../helpers/tmp.js';

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

    await expect(admin.deleteGroups(['indexer'])).rejects.toThrow(); // a live member: NON_EMPTY_GROUP
    await broker.leaveGroup({ groupId: 'indexer', memberId: member.memberId });
    expect(await admin.deleteGroups(['indexer'])).toEqual([{ groupId: 'indexer', errorCode: 0 }]);
    expect(await broker.listGroups()).toEqual([]);
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

/**
 * @platformatic/kafka (1.35.0), the client that sends the newest versions (Produce 11, Fetch 12, JoinGroup 9,
 * SyncGroup 5, OffsetCommit 9, OffsetFetch 9, FindCoordinator 6, Metadata 9), unchanged against the listener: an
 * idempotent producer stores each record once, a consumer group reads every record once and commits at the high
 * watermarks onelog shows.
 */
import { Admin, Consumer, MessagesStreamModes, Producer, stringDeserializers, stringSerializers } from '@platformatic/kafka';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { KafkaListener } from '../../src/kafka/listener.js';
import { silentLogger } from '../../src/common/logger.js';
import { tmpDir } from '../helpers/tmp.js';

let broker: Broker;
let listener: KafkaListener;

beforeEach(async () => {
  broker = await Broker.open({ dataDir: tmpDir(), retentionCheckIntervalMs: 0, monitoring: { alertCheckIntervalMs: 0 } });
  listener = await KafkaListener.start(broker, { port: 0, logger: silentLogger });
});
afterEach(async () => {
  await listener.close();
  await broker.close();
});

describe('@platformatic/kafka', () => {
  it('creates a topic, produces idempotently, consumes in a group each record once, committed where onelog sees it; lists, describes, deletes', async () => {
    const bootstrapBrokers = [`127.0.0.1:${listener.port}`];
    const admin = new Admin({ clientId: 'pf-admin', bootstrapBrokers });
    await admin.createTopics({ topics: ['events'], partitions: 3, replicas: 1 });
    expect((await broker.describeTopic('events')).partitions).toHaveLength(3);
    const producer = new Producer({ clientId: 'pf-producer', bootstrapBrokers, serializers: stringSerializers, idempotent: true });
    try {
      await producer.send({ messages: Array.from({ length: 60 }, (_, i) => ({ topic: 'events', key: `user-${i % 7}`, value: `event ${i}`, headers: { n: String(i) } })) });
    } finally {
      await producer.close();
    }
    const topic = await broker.describeTopic('events');
    expect(topic.partitions.reduce((n, p) => n + p.highWatermark, 0)).toBe(60);

    const consumer = new Consumer({ groupId: 'pf-group', clientId: 'pf-consumer', bootstrapBrokers, deserializers: stringDeserializers });
    const seen: string[] = [];
    try {
      const stream = await consumer.consume({ autocommit: true, topics: ['events'], sessionTimeout: 10_000, heartbeatInterval: 500, mode: MessagesStreamModes.EARLIEST });
      for await (const message of stream) {
        seen.push(message.value);
        if (seen.length === 60) break;
      }
      await stream.close();
    } finally {
      await consumer.close();
    }
    expect(new Set(seen).size).toBe(60);
    const d = await broker.describeGroup('pf-group');
    expect(d.subscriptions[0]!.partitions.map((p) => p.committedOffset)).toEqual(topic.partitions.map((p) => p.highWatermark));
    expect(d.members).toEqual([]);

    try {
      expect([...(await admin.listGroups()).keys()]).toEqual(['pf-group']);
      const described = (await admin.describeGroups({ groups: ['pf-group'] })).get('pf-group');
      expect(described).toMatchObject({ id: 'pf-group', protocolType: 'consumer', members: new Map() });
      await admin.deleteTopics({ topics: ['events'] }); // DeleteTopics v6, by name
      expect(await broker.listTopics()).toEqual([]);
      expect(await broker.committedOffsets('pf-group')).toEqual([]);
    } finally {
      await admin.close();
    }
  });
});

/**
 * Automatic topic creation for Kafka clients (`serve --auto-create-topics`, Kafka's auto.create.topics.enable):
 * off by default; on, a topic a kafkajs producer names is created with `--default-partitions` partitions at its
 * Metadata request and the records stored; a Metadata request that does not allow it (allow.auto.create.topics
 * false: kafkajs's admin) creates nothing; with ACLs, creation needs create on the topic or the cluster.
 */
import { Kafka, logLevel } from 'kafkajs';
import { afterEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { KafkaListener } from '../../src/kafka/listener.js';
import type { KafkaListenerOptions } from '../../src/kafka/listener.js';
import { silentLogger } from '../../src/common/logger.js';
import { LOOPBACK_ADMIN } from '../../src/security/principal.js';
import { tmpDir } from '../helpers/tmp.js';

let broker: Broker;
let listener: KafkaListener;

async function start(options: Partial<KafkaListenerOptions> = {}) {
  broker = await Broker.open({ dataDir: tmpDir(), retentionCheckIntervalMs: 0, monitoring: { alertCheckIntervalMs: 0 } });
  listener = await KafkaListener.start(broker, { port: 0, logger: silentLogger, users: broker.users, acls: broker.acls, audit: broker.audit, ...options });
  return new Kafka({
    clientId: 'auto', brokers: [`127.0.0.1:${listener.port}`], logLevel: logLevel.NOTHING, retry: { retries: 1, initialRetryTime: 20 },
  });
}
afterEach(async () => {
  await listener.close();
  await broker.close();
});

describe('auto-created topics', () => {
  it('are created with the default partitions when a producer names them, and never without the option or the client\'s leave', async () => {
    const kafka = await start({ autoCreateTopics: { partitions: 3 } });
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic: 'clicks', messages: [{ key: 'a', value: 'first' }, { key: 'b', value: 'second' }] });
    await producer.disconnect();
    const d = await broker.describeTopic('clicks');
    expect(d.partitions).toHaveLength(3);
    expect(d.partitions.reduce((n, p) => n + p.highWatermark, 0)).toBe(2);
    // kafkajs's admin asks with allow_auto_topic_creation false: nothing is created.
    const admin = kafka.admin();
    await admin.connect();
    await expect(admin.fetchTopicMetadata({ topics: ['views'] })).rejects.toThrow(/does not host this topic-partition|UNKNOWN_TOPIC/i);
    await admin.disconnect();
    expect((await broker.listTopics()).map((t) => t.topic)).toEqual(['clicks']);
  });

  it('is off by default: an unknown topic stays unknown', async () => {
    const kafka = await start();
    const producer = kafka.producer();
    await producer.connect();
    await expect(producer.send({ topic: 'clicks', messages: [{ value: 'x' }] })).rejects.toThrow();
    await producer.disconnect();
    expect(await broker.listTopics()).toEqual([]);
  });

  it('needs create on the topic or the cluster under ACLs', async () => {
    await start({ autoCreateTopics: { partitions: 1 } });
    const admin = LOOPBACK_ADMIN;
    await broker.users.create('root', admin, true);
    const token = (await broker.users.create('alice', admin)).token;
    const alice = new Kafka({ clientId: 'a', brokers: [`127.0.0.1:${listener.port}`], logLevel: logLevel.NOTHING, retry: { retries: 0 }, sasl: { mechanism: 'plain', username: 'alice', password: token } });
    await broker.acls.add({ principal: 'alice', resourceType: 'topic', resourceName: '*', patternType: 'literal', operation: 'write', permission: 'allow' }, admin);
    const send = async (topic: string) => {
      const producer = alice.producer();
      await producer.connect();
      try {
        await producer.send({ topic, messages: [{ value: 'x' }] });
      } finally {
        await producer.disconnect();
      }
    };
    await expect(send('orders')).rejects.toThrow();
    expect(await broker.listTopics()).toEqual([]);
    await broker.acls.add({ principal: 'alice', resourceType: 'cluster', resourceName: '', patternType: 'literal', operation: 'create', permission: 'allow' }, admin);
    await send('orders');
    expect((await broker.describeTopic('orders')).partitions[0]!.highWatermark).toBe(1);
  });
});

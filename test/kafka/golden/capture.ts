/**
 * Captures the golden request frames of test/kafka/golden.test.ts: the first request of each (API, version)
 * that each real client sends (kcat from Debian, kafkajs 2.2.4, @platformatic/kafka 1.35.0) while it creates a
 * topic, produces Wikipedia edits, consumes them in a group, commits, and runs its admin calls. A proxy in
 * front of the listener records what the client writes (the listener advertises the proxy, so every connection
 * passes through it). Run again only when a client changes: `npx tsx test/kafka/golden/capture.ts`; it rewrites
 * `test/kafka/golden/<client>/<Api>-v<version>.bin` (each the frame without its size prefix).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Admin, Consumer, MessagesStreamModes, Producer, stringDeserializers, stringSerializers } from '@platformatic/kafka';
import kafkajs from 'kafkajs'; // CommonJS: its names are not ES exports under node
import { Broker } from '../../../src/broker/broker.js';
import { KAFKA_APIS, KafkaListener } from '../../../src/kafka/listener.js';
import { silentLogger } from '../../../src/common/logger.js';
import { apiOf, recordingProxy } from '../../helpers/kafka-proxy.js';
import { readEdits } from '../../helpers/wikiticker.js';

const { ConfigResourceTypes, Kafka, logLevel } = kafkajs;
const HERE = import.meta.dirname;
const EDITS = readEdits().slice(0, 30);

function kcat(args: string[], input?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const proc = spawn('kcat', args, { stdio: [input === undefined ? 'ignore' : 'pipe', 'ignore', 'inherit'] });
    if (input !== undefined) proc.stdin!.end(input);
    proc.on('error', reject);
    proc.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`kcat ${args.join(' ')} exited ${code}`))));
  });
}

const flows: Record<string, (bootstrap: string, broker: Broker) => Promise<void>> = {
  async kcat(bootstrap, broker) {
    await broker.createTopic({ topic: 'edits', partitions: 3 });
    await kcat(['-b', bootstrap, '-L']);
    await kcat(['-b', bootstrap, '-P', '-t', 'edits', '-K', '\t', '-z', 'snappy', '-X', 'enable.idempotence=true'], `${EDITS.map((e) => `${e.key}\t${e.value}`).join('\n')}\n`);
    await kcat(['-b', bootstrap, '-C', '-t', 'edits', '-o', 'beginning', '-e', '-q']);
    await kcat(['-b', bootstrap, '-G', 'kcat-group', '-o', 'beginning', '-e', '-q', 'edits']);
    await kcat(['-b', bootstrap, '-G', 'kcat-group', '-e', '-q', 'edits']); // resumes from its commits (OffsetFetch)
  },

  async kafkajs(bootstrap) {
    const kafka = new Kafka({ clientId: 'golden', brokers: [bootstrap], logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: 'edits', numPartitions: 3 }] });
    const producer = kafka.producer({ idempotent: true });
    await producer.connect();
    await producer.send({ topic: 'edits', messages: EDITS.map((e) => ({ key: e.key, value: e.value })) });
    await producer.disconnect();
    const consumer = kafka.consumer({ groupId: 'kj-group', sessionTimeout: 10_000, heartbeatInterval: 300 });
    await consumer.connect();
    await consumer.subscribe({ topic: 'edits', fromBeginning: true });
    let seen = 0;
    let heartbeats = 0;
    const read = new Promise<void>((resolve) => {
      void consumer.run({ eachMessage: async ({ heartbeat }) => { if (++seen === EDITS.length) resolve(); await heartbeat(); } });
    });
    const beat = new Promise<void>((resolve) => consumer.on(consumer.events.HEARTBEAT, () => { if (++heartbeats === 2) resolve(); }));
    await Promise.all([read, beat]);
    await consumer.disconnect();
    await admin.fetchTopicOffsets('edits');
    await admin.fetchTopicOffsetsByTimestamp('edits', Date.now());
    await admin.listGroups();
    await admin.describeGroups(['kj-group']);
    await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: 'edits' }] });
    await admin.deleteTopicRecords({ topic: 'edits', partitions: [{ partition: 0, offset: '1' }] });
    await admin.deleteGroups(['kj-group']);
    await admin.deleteTopics({ topics: ['edits'] });
    await admin.disconnect();
  },

  async platformatic(bootstrap) {
    const bootstrapBrokers = [bootstrap];
    const admin = new Admin({ clientId: 'golden', bootstrapBrokers });
    await admin.createTopics({ topics: ['edits'], partitions: 3, replicas: 1 });
    const producer = new Producer({ clientId: 'golden', bootstrapBrokers, serializers: stringSerializers, idempotent: true });
    await producer.send({ messages: EDITS.map((e) => ({ topic: 'edits', key: e.key, value: e.value })) });
    await producer.close();
    for (const mode of [MessagesStreamModes.EARLIEST, MessagesStreamModes.COMMITTED]) { // the second resumes from the commits (OffsetFetch)
      const consumer = new Consumer({ groupId: 'pf-group', clientId: 'golden', bootstrapBrokers, deserializers: stringDeserializers });
      const beat = new Promise((resolve) => consumer.once('consumer:heartbeat:end', resolve));
      const stream = await consumer.consume({ autocommit: true, topics: ['edits'], sessionTimeout: 10_000, heartbeatInterval: 300, mode });
      let seen = 0;
      if (mode === MessagesStreamModes.EARLIEST) for await (const message of stream) if (message.value !== '' && ++seen === EDITS.length) break;
      await beat;
      await stream.close();
      await consumer.close();
    }
    await admin.listGroups();
    await admin.describeGroups({ groups: ['pf-group'] });
    await admin.deleteGroups({ groups: ['pf-group'] });
    await admin.deleteTopics({ topics: ['edits'] });
    await admin.close();
  },
};

for (const [client, flow] of Object.entries(flows)) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'onelog-golden-'));
  const broker = await Broker.open({ dataDir, retentionCheckIntervalMs: 0, monitoring: { alertCheckIntervalMs: 0 } });
  const proxy = await recordingProxy(() => listener.port);
  const listener = await KafkaListener.start(broker, { port: 0, advertisedPort: proxy.port, logger: silentLogger });
  try {
    await flow(`127.0.0.1:${proxy.port}`, broker);
  } finally {
    await proxy.close();
    await listener.close();
    await broker.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  const dir = path.join(HERE, client);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const first = new Map<string, Buffer>();
  for (const frame of proxy.frames) {
    const { apiKey, apiVersion } = apiOf(frame);
    const name = `${KAFKA_APIS.find((a) => a.key === apiKey)?.name ?? `api${apiKey}`}-v${apiVersion}`;
    if (!first.has(name)) first.set(name, frame);
  }
  for (const [name, frame] of first) fs.writeFileSync(path.join(dir, `${name}.bin`), frame);
  console.log(`${client}: ${[...first.keys()].sort().join(' ')}`);
}

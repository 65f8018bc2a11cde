/**
 * The Kafka listener on a real socket, in front of a real broker: kafkajs (2.2.4) connects and reads metadata
 * unchanged; an ApiVersions version above the listener's answers UNSUPPORTED_VERSION in the v0 layout; an
 * oversized frame or an unknown API closes the connection; requests are answered in order.
 */
import net from 'node:net';
import { Kafka, logLevel } from 'kafkajs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker.js';
import { KafkaListener } from '../../src/kafka/listener.js';
import { silentLogger } from '../../src/logger.js';
import { tmpDir } from '../helpers/tmp.js';

let broker: Broker;
let listener: KafkaListener;

beforeEach(async () => {
  broker = await Broker.open({ dataDir: tmpDir(), retentionCheckIntervalMs: 0, monitoring: { alertCheckIntervalMs: 0 } });
  listener = await KafkaListener.start(broker, { port: 0, logger: silentLogger, maxFrameBytes: 1 << 20 });
});
afterEach(async () => {
  await listener.close();
  await broker.close();
});

/** Sends raw frames on one connection; resolves with the response frames (without their size) once `expect` arrived, or at close. */
function exchange(frames: Buffer[], expected: number): Promise<{ responses: Buffer[]; closed: boolean }> {
  return new Promise((resolve) => {
    const socket = net.connect(listener.port, '127.0.0.1');
    const responses: Buffer[] = [];
    let pending = Buffer.alloc(0);
    socket.on('connect', () => socket.write(Buffer.concat(frames)));
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 4 && pending.length >= 4 + pending.readInt32BE(0)) {
        responses.push(pending.subarray(4, 4 + pending.readInt32BE(0)));
        pending = pending.subarray(4 + pending.readInt32BE(0));
      }
      if (responses.length === expected) {
        socket.end();
        resolve({ responses, closed: false });
      }
    });
    socket.on('close', () => resolve({ responses, closed: true }));
  });
}

/** A request frame: size, api key, version, correlation id, client id "t", then `body`. */
function request(apiKey: number, version: number, correlationId: number, body = Buffer.alloc(0)): Buffer {
  const header = Buffer.alloc(10);
  header.writeInt16BE(apiKey, 0);
  header.writeInt16BE(version, 2);
  header.writeInt32BE(correlationId, 4);
  header.writeInt16BE(1, 8);
  const payload = Buffer.concat([header, Buffer.from('t'), body]);
  const size = Buffer.alloc(4);
  size.writeInt32BE(payload.length);
  return Buffer.concat([size, payload]);
}

describe('kafka listener', () => {
  it('serves kafkajs its metadata: one broker, the topics and their partitions; no auto-creation', async () => {
    await broker.createTopic({ topic: 'edits', partitions: 3 });
    await broker.createTopic({ topic: 'pages', partitions: 1 });
    const kafka = new Kafka({ clientId: 'test', brokers: [`127.0.0.1:${listener.port}`], logLevel: logLevel.NOTHING, retry: { retries: 0 } });
    const admin = kafka.admin();
    await admin.connect();
    try {
      expect((await admin.listTopics()).sort()).toEqual(['edits', 'pages']);
      const { topics } = await admin.fetchTopicMetadata({ topics: ['edits'] });
      expect(topics).toEqual([{
        name: 'edits',
        partitions: [0, 1, 2].map((partitionId) => ({
          partitionErrorCode: 0, partitionId, leader: 0, replicas: [0], isr: [0], offlineReplicas: [],
        })),
      }]);
      await expect(admin.fetchTopicMetadata({ topics: ['nope'] })).rejects.toThrow(/does not host this topic-partition/);
      expect((await admin.describeCluster()).brokers).toEqual([{ nodeId: 0, host: '127.0.0.1', port: listener.port }]);
    } finally {
      await admin.disconnect();
    }
    expect((await broker.listTopics()).map((t) => t.topic).sort()).toEqual(['edits', 'pages']);
  });

  it('answers ApiVersions above v3 with UNSUPPORTED_VERSION (35) in the v0 layout, and requests in order', async () => {
    const { responses } = await exchange([request(18, 7, 41), request(18, 0, 42), request(3, 1, 43, Buffer.from('ffffffff', 'hex'))], 3);
    const [tooNew, v0, metadata] = responses;
    expect(tooNew!.readInt32BE(0)).toBe(41);
    expect(tooNew!.readInt16BE(4)).toBe(35);
    expect(tooNew!.readInt32BE(6)).toBeGreaterThanOrEqual(2); // the api keys served, classic array
    expect(v0!.readInt32BE(0)).toBe(42);
    expect(v0!.readInt16BE(4)).toBe(0);
    expect(metadata!.readInt32BE(0)).toBe(43);
  });

  it('closes a connection that sends an oversized frame, an unknown API or a version it does not serve', async () => {
    const huge = Buffer.alloc(4);
    huge.writeInt32BE(2 << 20);
    for (const frame of [huge, request(9999, 0, 1), request(3, 42, 1)]) {
      const { responses, closed } = await exchange([frame], 1);
      expect(closed).toBe(true);
      expect(responses).toEqual([]);
    }
    // The listener still serves others.
    expect((await exchange([request(18, 0, 5)], 1)).responses).toHaveLength(1);
  });
});

/**
 * The Kafka listener in cluster mode: Metadata lists the cluster's live brokers with their Kafka listeners and names
 * each partition's sequencer (the holder of its lease) as its leader, a partition nobody leads the broker asked;
 * FindCoordinator names the holder of a group's lease. kafkajs (2.2.4), bootstrapped on one broker only, produces
 * to the partitions' leaders and consumes in a group coordinated by the other broker; so does kcat (librdkafka).
 */
import { spawn } from 'node:child_process';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { KafkaListener } from '../../src/kafka/listener.js';
import { metadataRequest, metadataResponse } from '../../src/kafka/messages/metadata.js';
import { findCoordinatorRequest, findCoordinatorResponse } from '../../src/kafka/messages/offsets.js';
import { parseKafkaAddress } from '../../src/kafka/placement.js';
import { silentLogger } from '../../src/common/logger.js';
import { testCluster } from '../helpers/cluster.js';
import { startS3 } from '../helpers/s3.js';
import type { S3Server } from '../helpers/s3.js';
import { KCAT, hasTool } from '../helpers/tools.js';
import { call } from '../helpers/kafka-wire.js';

let s3: S3Server;
beforeAll(async () => {
  s3 = await startS3();
});
afterAll(async () => {
  await s3?.close();
});

/** Runs kcat against the listener on `port`, `input` on its standard input; resolves with its exit code and output. */
function kcat(port: number, args: string[], input = ''): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const proc = spawn('kcat', ['-b', `127.0.0.1:${port}`, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
    proc.stdin.end(input);
    const timer = setTimeout(() => proc.kill('SIGKILL'), 30_000);
    proc.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
}

interface Metadata {
  brokers: Array<{ nodeId: number; host: string; port: number }>;
  controllerId: number;
  topics: Array<{ name: string; errorCode: number; partitions: Array<{ partitionIndex: number; leaderId: number; replicaNodes: number[]; isrNodes: number[] }> }>;
}

/** Metadata v9 (flexible) from the listener on `port` for `topics`. */
async function metadata(port: number, topics: string[]): Promise<Metadata> {
  return await call(port, 3, 9, metadataRequest, metadataResponse, {
    topics: topics.map((name) => ({ name })), allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false,
  }) as unknown as Metadata;
}

/** Each partition's leader, in partition order, for the one topic of `m`. */
const leaders = (m: Metadata) => m.topics[0]!.partitions.map((p) => {
  expect(p.replicaNodes).toEqual([p.leaderId]);
  expect(p.isrNodes).toEqual([p.leaderId]);
  return p.leaderId;
});

describe('the Kafka listener in cluster mode', () => {
  it.runIf(hasTool(KCAT, 'the cluster Metadata test (it drives kcat)'))('Metadata lists the live brokers and each partition\'s sequencer; FindCoordinator the group lease\'s holder; kafkajs follows them', async () => {
    const c = await testCluster(s3, 'kafka_metadata');
    const a = await Broker.open(c.options(1));
    const b = await Broker.open(c.options(2));
    const la = await KafkaListener.start(a, { port: 0, logger: silentLogger });
    const lb = await KafkaListener.start(b, { port: 0, logger: silentLogger });
    let aClosed = false;
    try {
      await a.advertise({ url: 'http://127.0.0.1:1', kafkaAddress: `127.0.0.1:${la.port}` });
      await b.advertise({ url: 'http://127.0.0.1:2', kafkaAddress: `127.0.0.1:${lb.port}` });
      await a.createTopic({ topic: 'edits', partitions: 3, config: { retentionMs: -1 } });
      await a.produce({ topic: 'edits', records: [{ key: null, value: Buffer.from('first'), partition: 0 }] });

      // Either broker lists both, at their listeners; partition 0 is led by broker 1, which produced to it; a
      // partition nobody leads names the broker asked (it takes the lease at the first produce).
      const both = [{ nodeId: 1, host: '127.0.0.1', port: la.port, rack: null }, { nodeId: 2, host: '127.0.0.1', port: lb.port, rack: null }];
      const fromA = await metadata(la.port, ['edits']);
      const fromB = await metadata(lb.port, ['edits', 'nope']);
      expect(fromA.brokers).toEqual(both);
      expect(fromB.brokers).toEqual(both);
      expect([fromA.controllerId, fromB.controllerId]).toEqual([1, 2]);
      expect(leaders(fromA)).toEqual([1, 1, 1]);
      expect(leaders(fromB)).toEqual([1, 2, 2]);
      expect(fromB.topics[1]).toMatchObject({ name: 'nope', errorCode: 3, partitions: [] });

      // kafkajs, given broker 2 only, sends partition 0's records to broker 1 and partition 1's to broker 2 (which
      // takes its lease): without leaders of their own, broker 2 would refuse partition 0 (NOT_LEADER_OR_FOLLOWER).
      const kafka = new Kafka({ clientId: 'kj', brokers: [`127.0.0.1:${lb.port}`], logLevel: logLevel.NOTHING, retry: { retries: 2, initialRetryTime: 50 } });
      const producer = kafka.producer();
      await producer.connect();
      try {
        await producer.send({ topic: 'edits', messages: [{ value: 'to 0', partition: 0 }, { value: 'to 1', partition: 1 }] });
      } finally {
        await producer.disconnect();
      }
      expect((await a.describeTopic('edits')).partitions.map((p) => p.highWatermark)).toEqual([2, 1, 0]);
      expect(leaders(await metadata(la.port, ['edits']))).toEqual([1, 2, 1]);

      // kcat (librdkafka), given broker 2 only, sees the same and produces to partition 0 through broker 1.
      const listing = await kcat(lb.port, ['-L', '-J', '-t', 'edits']);
      expect(listing.code).toBe(0);
      const json = JSON.parse(listing.out) as { controllerid: number; brokers: Array<{ id: number; name: string }>; topics: Array<{ partitions: Array<{ leader: number }> }> };
      expect(json.controllerid).toBe(2);
      expect(json.brokers).toEqual([{ id: 1, name: `127.0.0.1:${la.port}` }, { id: 2, name: `127.0.0.1:${lb.port}` }]);
      expect(json.topics[0]!.partitions.map((p) => p.leader)).toEqual([1, 2, 2]);
      expect(await kcat(lb.port, ['-P', '-t', 'edits', '-p', '0'], 'kcat\n')).toMatchObject({ code: 0 });
      expect((await a.describeTopic('edits')).partitions.map((p) => p.highWatermark)).toEqual([3, 1, 0]);

      // Broker 1 coordinates group `readers` once a commit reached it: FindCoordinator on broker 2 names it (v3 and
      // v4's several keys); a group nobody coordinates is named on the broker asked.
      await a.commitOffsets({ groupId: 'readers', topic: 'edits', offsets: [{ partition: 0, offset: 0 }, { partition: 1, offset: 0 }, { partition: 2, offset: 0 }] });
      expect(await b.groupCoordinator('readers')).toBe(1);
      expect(await call(lb.port, 10, 3, findCoordinatorRequest, findCoordinatorResponse, { key: 'readers', keyType: 0 }))
        .toMatchObject({ errorCode: 0, nodeId: 1, host: '127.0.0.1', port: la.port });
      expect((await call(lb.port, 10, 4, findCoordinatorRequest, findCoordinatorResponse, { keyType: 0, coordinatorKeys: ['readers', 'idle'] })).coordinators).toEqual([
        { key: 'readers', nodeId: 1, host: '127.0.0.1', port: la.port, errorCode: 0, errorMessage: null },
        { key: 'idle', nodeId: 2, host: '127.0.0.1', port: lb.port, errorCode: 0, errorMessage: null },
      ]);

      // A kafkajs consumer given broker 2 only joins the group on broker 1 and reads every record.
      const consumer = kafka.consumer({ groupId: 'readers', sessionTimeout: 10_000, heartbeatInterval: 300 });
      const seen: string[] = [];
      await consumer.connect();
      try {
        await consumer.subscribe({ topic: 'edits' });
        await consumer.run({ eachMessage: async ({ message }) => void seen.push(message.value!.toString()) });
        await vi.waitFor(() => expect(seen.sort()).toEqual(['first', 'kcat', 'to 0', 'to 1']), { timeout: 20_000, interval: 100 });
        expect((await a.describeGroup('readers')).members.map((m) => m.clientId)).toEqual(['kj']);
      } finally {
        await consumer.disconnect();
      }

      // Broker 1 closes (leaving the live brokers and giving its leases up): broker 2 is the only broker, leading all.
      await la.close();
      await a.close();
      aClosed = true;
      const alone = await metadata(lb.port, ['edits']);
      expect(alone.brokers).toEqual([{ nodeId: 2, host: '127.0.0.1', port: lb.port, rack: null }]);
      expect(leaders(alone)).toEqual([2, 2, 2]);
      expect(await call(lb.port, 10, 3, findCoordinatorRequest, findCoordinatorResponse, { key: 'readers', keyType: 0 }))
        .toMatchObject({ errorCode: 0, nodeId: 2, port: lb.port });
    } finally {
      await lb.close();
      if (!aClosed) {
        await la.close();
        await a.close();
      }
      await b.close();
      await c.dispose();
    }
  });

  it('a partition or group held by a broker without a live Kafka listener: Metadata names the broker asked, FindCoordinator answers 15', async () => {
    const c = await testCluster(s3, 'kafka_metadata');
    const a = await Broker.open(c.options(1));
    const b = await Broker.open(c.options(2));
    const lb = await KafkaListener.start(b, { port: 0, logger: silentLogger });
    try {
      // Broker 1 serves HTTP only (no kafkaAddress); broker 2 has not advertised itself: it is listed all the same.
      await a.advertise({ url: 'http://127.0.0.1:1' });
      await a.createTopic({ topic: 'edits', partitions: 2 });
      await a.produce({ topic: 'edits', records: [{ key: null, value: Buffer.from('x'), partition: 0 }] });
      await a.commitOffsets({ groupId: 'g', topic: 'edits', offsets: [{ partition: 0, offset: 1 }] });
      const m = await metadata(lb.port, ['edits']);
      expect(m.brokers).toEqual([{ nodeId: 2, host: '127.0.0.1', port: lb.port, rack: null }]);
      expect(leaders(m)).toEqual([2, 2]);
      expect(await call(lb.port, 10, 3, findCoordinatorRequest, findCoordinatorResponse, { key: 'g', keyType: 0 }))
        .toMatchObject({ errorCode: 15, nodeId: -1, errorMessage: expect.stringMatching(/broker 1 coordinates group g/) });
    } finally {
      await lb.close();
      await a.close();
      await b.close();
      await c.dispose();
    }
  });
});

describe('parseKafkaAddress', () => {
  it('reads host:port and [v6]:port; refuses what is not one', () => {
    expect(parseKafkaAddress('10.0.0.5:9092')).toEqual({ host: '10.0.0.5', port: 9092 });
    expect(parseKafkaAddress('kafka.example.com:19092')).toEqual({ host: 'kafka.example.com', port: 19092 });
    expect(parseKafkaAddress('[::1]:9092')).toEqual({ host: '::1', port: 9092 });
    for (const bad of ['9092', ':9092', 'host:', 'host:0', 'host:70000', 'host:9a']) expect(parseKafkaAddress(bad)).toBeNull();
  });
});

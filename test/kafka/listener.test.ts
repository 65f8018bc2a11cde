/**
 * The Kafka listener on a real socket, in front of a real broker: kafkajs (2.2.4) connects and reads metadata
 * unchanged; an ApiVersions version above the listener's answers UNSUPPORTED_VERSION in the v0 layout; an
 * oversized frame or an unknown API closes the connection; requests are answered in order.
 */
import net from 'node:net';
import { Kafka, logLevel } from 'kafkajs';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/common/clock.js';
import { Quotas } from '../../src/security/quotas.js';
import { Broker } from '../../src/broker/broker.js';
import type { Struct } from '../../src/kafka/codec/interpreter.js';
import type { MessageDefinition } from '../../src/kafka/codec/schema.js';
import { apiVersionsRequest, apiVersionsResponse } from '../../src/kafka/messages/api-versions.js';
import { fetchRequest, fetchResponse, listOffsetsRequest, listOffsetsResponse } from '../../src/kafka/messages/fetch.js';
import { offsetCommitRequest, offsetCommitResponse, offsetFetchRequest, offsetFetchResponse } from '../../src/kafka/messages/offsets.js';
import { KafkaListener } from '../../src/kafka/listener.js';
import { silentLogger } from '../../src/common/logger.js';
import { encodeBatch } from '../../src/protocol/record-batch.js';
import { call as callOn, exchange as exchangeOn } from '../helpers/kafka-wire.js';
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

/** Sends one request to the listener encoded from its definition and decodes the answer. */
const call = (apiKey: number, version: number, req: MessageDefinition, res: MessageDefinition, value: Struct) => callOn(listener.port, apiKey, version, req, res, value);
/** Sends raw frames to the listener. */
const exchange = (frames: Buffer[], expected: number) => exchangeOn(listener.port, frames, expected);

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

  it('advertises exactly the APIs and versions of the issue\'s table, and SASL\'s, in ApiVersions v3', async () => {
    const answer = await call(18, 3, apiVersionsRequest, apiVersionsResponse, { clientSoftwareName: 't', clientSoftwareVersion: '1' });
    const advertised = (answer.apiKeys as Array<{ apiKey: number; minVersion: number; maxVersion: number }>)
      .map((k) => [k.apiKey, k.minVersion, k.maxVersion]).sort((a, b) => a[0]! - b[0]!);
    expect(advertised).toEqual([
      [0, 3, 11], [1, 4, 13], [2, 1, 9], [3, 1, 12], [8, 2, 9], [9, 1, 9], [10, 0, 6], [11, 0, 9], [12, 0, 4], [13, 0, 5],
      [14, 0, 5], [15, 0, 5], [16, 0, 5], [17, 0, 1], [18, 0, 3], [19, 2, 7], [20, 1, 6], [21, 0, 2], [22, 0, 5], [23, 2, 4], [32, 1, 4],
      [36, 0, 2], [42, 0, 2], [44, 0, 1], [76, 1, 1], [77, 1, 1], [78, 1, 2], [79, 1, 2], [90, 0, 1], [91, 0, 0],
    ]);
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

  it('answers 500 pipelined requests in order to a client that reads only after sending them all', async () => {
    const frames = Array.from({ length: 500 }, (_, i) => request(18, 0, i));
    const socket = net.connect(listener.port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.pause(); // not read until everything is sent: the listener stops reading after 32 waiting requests
    await new Promise<void>((resolve) => socket.write(Buffer.concat(frames), () => resolve()));
    const ids: number[] = [];
    let pending = Buffer.alloc(0);
    await new Promise<void>((resolve) => {
      socket.on('data', (chunk: Buffer) => {
        pending = Buffer.concat([pending, chunk]);
        while (pending.length >= 4 && pending.length >= 4 + pending.readInt32BE(0)) {
          ids.push(pending.readInt32BE(4));
          pending = pending.subarray(4 + pending.readInt32BE(0));
        }
        if (ids.length === frames.length) resolve();
      });
      socket.resume();
    });
    socket.destroy();
    expect(ids).toEqual(frames.map((_, i) => i));
  });

  it('closes a connection idle for idleTimeoutMs, also one stuck in a partial frame', async () => {
    const idle = await KafkaListener.start(broker, { port: 0, logger: silentLogger, idleTimeoutMs: 200 });
    try {
      const socket = net.connect(idle.port, '127.0.0.1');
      socket.on('connect', () => socket.write(Buffer.from([0, 0, 0, 50, 0, 18]))); // 50 bytes promised, 2 sent
      await new Promise((resolve) => socket.once('close', resolve));
    } finally {
      await idle.close();
    }
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

  it('closes only the connection whose request handler threw, even a throw of no Error, logged at error; the process and listener go on', async () => {
    const lines: Array<{ level: string; msg: string; code: unknown }> = [];
    const at = (level: string) => (obj: object, msg: string) => lines.push({ level, msg, code: (obj as { code?: unknown }).code });
    // Metadata of every topic lists them: here that rejects with null (once a TypeError in the listener's own catch, unhandled).
    const failing = Object.assign(Object.create(broker) as Broker, { listTopics: () => Promise.reject(null) });
    const guardedListener = await KafkaListener.start(failing, { port: 0, logger: { info: at('info'), warn: at('warn'), error: at('error') } });
    try {
      const socket = net.connect(guardedListener.port, '127.0.0.1', () => socket.write(request(3, 1, 1, Buffer.from('ffffffff', 'hex'))));
      socket.on('data', () => undefined);
      await new Promise((resolve) => socket.once('close', resolve));
      expect(lines).toEqual([{ level: 'error', msg: 'kafka connection closed: a handler threw object', code: 'INTERNAL_ERROR' }]);
      const next = net.connect(guardedListener.port, '127.0.0.1', () => next.write(request(18, 0, 2)));
      expect(await new Promise((resolve) => next.once('data', (chunk: Buffer) => resolve(chunk.readInt32BE(4))))).toBe(2);
      next.destroy();
    } finally {
      await guardedListener.close();
    }
  });

  it('stores what a kafkajs idempotent producer sends, as sent, at the offsets it answers; refuses unknown topics', async () => {
    await broker.createTopic({ topic: 'edits', partitions: 2 });
    const kafka = new Kafka({ clientId: 'test', brokers: [`127.0.0.1:${listener.port}`], logLevel: logLevel.NOTHING, retry: { retries: 1, initialRetryTime: 50 } });
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    try {
      const sent = await producer.send({
        topic: 'edits', acks: -1,
        messages: Array.from({ length: 20 }, (_, i) => ({
          key: `page-${i % 5}`, value: `edit ${i}`, partition: i % 2, headers: { source: 'kafkajs' }, timestamp: String(1_442_016_000_000 + i),
        })),
      });
      expect(sent.map((s) => [s.partition, s.errorCode, s.baseOffset]).sort()).toEqual([[0, 0, '0'], [1, 0, '0']]);
      const again = await producer.send({ topic: 'edits', messages: [{ key: 'k', value: 'v', partition: 0 }] });
      expect(again[0]).toMatchObject({ partition: 0, errorCode: 0, baseOffset: '10' });
      await expect(producer.send({ topic: 'nope', messages: [{ value: 'x' }] })).rejects.toThrow();
    } finally {
      await producer.disconnect();
    }
    const fetched = await broker.fetch({ topic: 'edits', partitions: [{ partition: 0, offset: 0 }, { partition: 1, offset: 0 }] });
    const p0 = fetched.partitions[0]!.records;
    expect(p0).toHaveLength(11);
    expect(p0[0]).toMatchObject({ offset: 0, timestamp: 1_442_016_000_000 });
    expect(p0[0]!.key!.toString()).toBe('page-0');
    expect(p0[0]!.value!.toString()).toBe('edit 0');
    expect(p0[0]!.headers.map((h) => [h.key, h.value?.toString()])).toEqual([['source', 'kafkajs']]);
    expect(fetched.partitions[1]!.records.map((r) => r.value!.toString())).toEqual(Array.from({ length: 10 }, (_, i) => `edit ${2 * i + 1}`));
    expect((await broker.listTopics()).map((t) => t.topic)).toEqual(['edits']);
  });

  it('answers Produce with acks=0 not at all, and the next request still in order', async () => {
    await broker.createTopic({ topic: 't', partitions: 1 });
    const batch = encodeBatch([{ key: null, value: Buffer.from('x'), headers: [] }], 0, Date.now());
    // Produce v3: transactional id null, acks 0, timeout, [topic t [partition 0, records]]
    const body = Buffer.concat([
      Buffer.from('ffff' + '0000' + '00001388' + '00000001' + '0001' + Buffer.from('t').toString('hex') + '00000001' + '00000000', 'hex'),
      Buffer.from([0, 0, 0, 0]).fill(0), batch,
    ]);
    body.writeInt32BE(batch.length, body.length - batch.length - 4);
    const { responses } = await exchange([request(0, 3, 1, body), request(18, 0, 2)], 1);
    expect(responses.map((r) => r.readInt32BE(0))).toEqual([2]);
    expect((await broker.describeTopic('t')).partitions[0]!.highWatermark).toBe(1);
  });

  it('answers ListOffsets to kafkajs: earliest, latest, by timestamp (-1 past the last record)', async () => {
    await broker.createTopic({ topic: 'edits', partitions: 2 });
    await broker.produce({ topic: 'edits', records: Array.from({ length: 6 }, (_, i) => ({ key: null, value: Buffer.from(`e${i}`), partition: 0, timestamp: 1000 * (i + 1) })) });
    await broker.deleteRecords({ topic: 'edits', partition: 0, beforeOffset: 2 });
    const kafka = new Kafka({ clientId: 'test', brokers: [`127.0.0.1:${listener.port}`], logLevel: logLevel.NOTHING, retry: { retries: 0 } });
    const admin = kafka.admin();
    await admin.connect();
    try {
      expect(await admin.fetchTopicOffsets('edits')).toEqual([
        { partition: 0, offset: '6', high: '6', low: '2' },
        { partition: 1, offset: '0', high: '0', low: '0' },
      ]);
      // kafkajs reads an answer of -1 (no record at or after the time) as the high watermark.
      expect(await admin.fetchTopicOffsetsByTimestamp('edits', 3500)).toEqual([{ partition: 0, offset: '3' }, { partition: 1, offset: '0' }]);
      expect(await admin.fetchTopicOffsetsByTimestamp('edits', 99_000)).toEqual([{ partition: 0, offset: '6' }, { partition: 1, offset: '0' }]);
    } finally {
      await admin.disconnect();
    }
    // On the wire: -1, not the high watermark; and the found record's timestamp.
    const answer = await call(2, 5, listOffsetsRequest, listOffsetsResponse, {
      replicaId: -1, topics: [{ name: 'edits', partitions: [{ partitionIndex: 0, timestamp: 99_000 }, { partitionIndex: 0, timestamp: 3500 }] }],
    });
    expect((answer.topics as Array<{ partitions: unknown[] }>)[0]!.partitions).toEqual([
      { partitionIndex: 0, errorCode: 0, timestamp: -1, offset: -1, leaderEpoch: 0 },
      { partitionIndex: 0, errorCode: 0, timestamp: 4000, offset: 3, leaderEpoch: 0 },
    ]);
  });

  it('answers Fetch with the batches as stored, and per-partition errors', async () => {
    await broker.createTopic({ topic: 'edits', partitions: 2 });
    await broker.produce({ topic: 'edits', records: Array.from({ length: 5 }, (_, i) => ({ key: Buffer.from(`k${i}`), value: Buffer.from(`e${i}`), partition: 0 })) });
    const stored = (await broker.fetchBatches({ topic: 'edits', partitions: [{ partition: 0, offset: 0 }] })).partitions[0]!.batches;
    const answer = await call(1, 11, fetchRequest, fetchResponse, {
      replicaId: -1, maxWaitMs: 100, minBytes: 1, maxBytes: 1 << 20, isolationLevel: 0,
      topics: [
        { topic: 'edits', partitions: [{ partition: 0, fetchOffset: 0, partitionMaxBytes: 1 << 20 }, { partition: 1, fetchOffset: 7, partitionMaxBytes: 1 << 20 }] },
        { topic: 'nope', partitions: [{ partition: 0, fetchOffset: 0, partitionMaxBytes: 1 << 20 }] },
      ],
    }) as { responses: Array<{ topic: string; partitions: Array<Record<string, unknown>> }> };
    const [edits, nope] = answer.responses;
    expect(edits!.partitions[0]).toMatchObject({ partitionIndex: 0, errorCode: 0, highWatermark: 5, lastStableOffset: 5, logStartOffset: 0 });
    expect(Buffer.compare(edits!.partitions[0]!.records as Buffer, stored)).toBe(0);
    expect(edits!.partitions[1]).toMatchObject({ partitionIndex: 1, errorCode: 1, records: Buffer.alloc(0) }); // offset 7 past the high watermark 0: an empty record set, as Kafka
    expect(nope).toMatchObject({ topic: 'nope', partitions: [{ partitionIndex: 0, errorCode: 3 }] });
  });

  it('shares committed offsets: onelog\'s are what kafkajs fetches, a Kafka standalone commit is onelog\'s', async () => {
    await broker.createTopic({ topic: 'edits', partitions: 2 });
    await broker.produce({ topic: 'edits', records: Array.from({ length: 10 }, (_, i) => ({ key: null, value: Buffer.from(`e${i}`), partition: i % 2 })) });
    await broker.commitOffsets({ groupId: 'indexer', topic: 'edits', offsets: [{ partition: 0, offset: 3, metadata: 'm' }] });
    // kafkajs learns the brokers (Metadata) on its first retry of FindCoordinator.
    const kafka = new Kafka({ clientId: 'test', brokers: [`127.0.0.1:${listener.port}`], logLevel: logLevel.NOTHING, retry: { retries: 2, initialRetryTime: 20 } });
    const admin = kafka.admin();
    await admin.connect();
    try {
      // FindCoordinator, then OffsetFetch: a partition never committed answers -1.
      expect(await admin.fetchOffsets({ groupId: 'indexer', topics: ['edits'] })).toEqual([{
        topic: 'edits', partitions: [{ partition: 0, offset: '3', metadata: 'm' }, { partition: 1, offset: '-1', metadata: null }],
      }]);
      expect(await admin.fetchOffsets({ groupId: 'nobody', topics: ['edits'] })).toEqual([{
        topic: 'edits', partitions: [{ partition: 0, offset: '-1', metadata: null }, { partition: 1, offset: '-1', metadata: null }],
      }]);
    } finally {
      await admin.disconnect();
    }
    // A standalone OffsetCommit (generation -1, no member) at v8 is a commit without a member.
    const answer = await call(8, 8, offsetCommitRequest, offsetCommitResponse, {
      groupId: 'indexer', generationIdOrMemberEpoch: -1, memberId: '', groupInstanceId: null,
      topics: [{ name: 'edits', partitions: [{ partitionIndex: 1, committedOffset: 4, committedMetadata: null }] }, { name: 'nope', partitions: [{ partitionIndex: 0, committedOffset: 1 }] }],
    });
    expect(answer.topics).toEqual([
      { name: 'edits', partitions: [{ partitionIndex: 1, errorCode: 0 }] },
      { name: 'nope', partitions: [{ partitionIndex: 0, errorCode: 3 }] },
    ]);
    const d = await broker.describeGroup('indexer');
    expect(d.subscriptions[0]!.partitions.map((p) => p.committedOffset)).toEqual([3, 4]);
    // OffsetFetch v8 (groups batched) with null topics: every topic the group committed.
    const fetched = await call(9, 8, offsetFetchRequest, offsetFetchResponse, { groups: [{ groupId: 'indexer', topics: null }], requireStable: false });
    expect(fetched.groups).toEqual([{
      groupId: 'indexer', errorCode: 0,
      topics: [{ name: 'edits', partitions: [
        { partitionIndex: 0, committedOffset: 3, committedLeaderEpoch: -1, metadata: 'm', errorCode: 0 },
        { partitionIndex: 1, committedOffset: 4, committedLeaderEpoch: -1, metadata: '', errorCode: 0 },
      ] }],
    }]);
  });

  it('holds a principal above its request rate back (as Kafka throttles), answering once the bucket allows', async () => {
    const clock = new ManualClock(1_000);
    const throttled = await KafkaListener.start(broker, { port: 0, logger: silentLogger, clock, quotas: new Quotas(clock, { requestsPerSec: 2, produceBytesPerSec: 0 }) });
    try {
      const socket = net.connect(throttled.port, '127.0.0.1');
      let answers = 0;
      let pending = Buffer.alloc(0);
      socket.on('data', (chunk: Buffer) => {
        pending = Buffer.concat([pending, chunk]);
        while (pending.length >= 4 && pending.length >= 4 + pending.readInt32BE(0)) {
          answers++;
          pending = pending.subarray(4 + pending.readInt32BE(0));
        }
      });
      socket.write(Buffer.concat([request(18, 0, 1), request(18, 0, 2), request(18, 0, 3)]));
      await vi.waitFor(() => expect(answers).toBe(2), { timeout: 5000, interval: 10 });
      expect(answers).toBe(2); // the third waits on the clock
      clock.advance(500);
      await vi.waitFor(() => expect(answers).toBe(3), { timeout: 5000, interval: 10 });
      socket.destroy();
    } finally {
      await throttled.close();
    }
  });
});

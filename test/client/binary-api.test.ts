/**
 * The binary data path on a real server socket: RecordBatch v2 in WebSocket binary frames, appended without
 * per-record decoding and fetched as stored; the same records and partitions as the JSON path.
 */
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { BinaryApi, Onelog } from '../../src/client/index.js';
import type { OnelogApi } from '../../src/protocol/api.js';
import type { ProduceRequest, ProduceResult } from '../../src/protocol/produce.js';
import { encodeBatch, readBatchHeader } from '../../src/protocol/record-batch.js';
import { createHttpServer } from '../../src/server/http-server.js';
import { asyncCodeOf } from '../helpers/errors.js';
import { tmpDir } from '../helpers/tmp.js';

let broker: Broker;
let app: FastifyInstance;
let url: string;
const apis: BinaryApi[] = [];

beforeEach(async () => {
  broker = await Broker.open({ dataDir: tmpDir() });
  app = createHttpServer(broker);
  await app.listen({ port: 0, host: '127.0.0.1' });
  url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
});
afterEach(async () => {
  for (const a of apis.splice(0)) a.close();
  await app.close();
  await broker.close();
});

function binary(): BinaryApi {
  const api = new BinaryApi(url);
  apis.push(api);
  return api;
}

const messages = (n: number) => Array.from({ length: n }, (_, i) => ({ key: `user-${i % 50}`, value: `event ${i}`, headers: { n: String(i) } }));

describe('binary data path', () => {
  it('produces and fetches the same records, in the same partitions, as the JSON path', async () => {
    await broker.createTopic({ topic: 't', partitions: 3 });
    const viaBinary = await new Onelog({ api: binary() }).producer().send({ topic: 't', messages: messages(3000) });
    const viaJson = await new Onelog({ url }).producer().send({ topic: 't', messages: messages(3000) });
    expect(viaBinary.offsets.map((o) => o.partition)).toEqual(viaJson.offsets.map((o) => o.partition));
    for (let p = 0; p < 3; p++) {
      const request = { topic: 't', partitions: [{ partition: p, offset: 0 }], maxRecords: 10_000, maxBytes: 16 << 20 };
      const [b, j] = await Promise.all([binary().fetch(request), new Onelog({ url }).api.fetch(request)]);
      expect(b.partitions[0]!.records).toEqual(j.partitions[0]!.records);
      expect(b.partitions[0]!.nextOffset).toBe(j.partitions[0]!.nextOffset);
      expect(b.partitions[0]!.records.length).toBeGreaterThan(0);
    }
  });

  it('answers many concurrent large fetches on one socket with every record intact (pooled read and frame buffers)', async () => {
    await broker.createTopic({ topic: 'big', partitions: 4 });
    const api = binary();
    // 4 partitions x 2,000 records of ~100 B: each fetch answer is 100-200 KB, above the pooled size.
    const value = (p: number, i: number) => `${p}:${i}:`.padEnd(100, String.fromCharCode(97 + ((p * 7 + i) % 26)));
    for (let p = 0; p < 4; p++) {
      await api.produce({ topic: 'big', records: Array.from({ length: 2000 }, (_, i) => ({ key: null, value: Buffer.from(value(p, i)), partition: p })) });
    }
    const fetches = Array.from({ length: 40 }, (_, k) => {
      const partition = k % 4;
      const offset = (k * 97) % 800;
      return api.fetch({ topic: 'big', partitions: [{ partition, offset }], maxRecords: 1200, maxBytes: 1 << 20 })
        .then((r) => ({ partition, offset, records: r.partitions[0]!.records }));
    });
    for (const { partition, offset, records } of await Promise.all(fetches)) {
      expect(records).toHaveLength(1200);
      records.forEach((r, i) => expect(r.value!.toString()).toBe(value(partition, offset + i)));
    }
  });

  it('applies maxRecords on the client and skips records before the requested offset in the first batch', async () => {
    await broker.createTopic({ topic: 't', partitions: 1 });
    await new Onelog({ api: binary() }).producer().send({ topic: 't', messages: Array.from({ length: 100 }, (_, i) => ({ value: `v${i}`, partition: 0 })) });
    const r = await binary().fetch({ topic: 't', partitions: [{ partition: 0, offset: 40 }], maxRecords: 7 });
    expect(r.partitions[0]!.records.map((x) => x.offset)).toEqual([40, 41, 42, 43, 44, 45, 46]);
    expect(r.partitions[0]!.nextOffset).toBe(47);
  });

  it('a consumer group reads everything through the binary path', async () => {
    await broker.createTopic({ topic: 't', partitions: 2 });
    const onelog = new Onelog({ api: binary() });
    await onelog.producer().send({ topic: 't', messages: messages(1000) });
    const consumer = onelog.consumer({ groupId: 'g', startPolicy: 'earliest', maxWaitMs: 20, sessionTimeoutMs: 5000 });
    consumer.subscribe({ topic: 't' });
    const seen = new Set<string>();
    await consumer.run({
      eachMessage: ({ partition, message }) => {
        seen.add(`${partition}:${message.offset}`);
        if (seen.size === 1000) void consumer.stop();
      },
    });
    expect(seen.size).toBe(1000);
    expect((await broker.describeGroup('g')).subscriptions[0]!.partitions.map((p) => p.lag)).toEqual([0, 0]);
  });

  it('commits on the data socket, fenced as over HTTP; a commit of the wrong shape is refused and commits nothing', async () => {
    await broker.createTopic({ topic: 't', partitions: 2 });
    await new Onelog({ api: binary() }).producer().send({ topic: 't', messages: messages(100) });
    const api = binary();
    const member = await api.joinGroup({ groupId: 'g', topics: ['t'], sessionTimeoutMs: 5000 });
    const partitions = member.assignment.map((a) => a.partition);
    await api.commitOffsets({ groupId: 'g', topic: 't', memberId: member.memberId, generationId: member.generationId, offsets: partitions.map((partition) => ({ partition, offset: 3 })) });
    const committed = async () => (await broker.describeGroup('g')).subscriptions[0]!.partitions.map((p) => p.committedOffset);
    expect(await committed()).toEqual([3, 3]);
    expect(await asyncCodeOf(api.commitOffsets({
      groupId: 'g', topic: 't', memberId: member.memberId, generationId: member.generationId + 1, offsets: [{ partition: 0, offset: 5 }],
    }))).toBe('ILLEGAL_GENERATION');
    expect(await asyncCodeOf(api.commitOffsets({ groupId: 'g', topic: 't', memberId: 'nobody', generationId: 1, offsets: [{ partition: 0, offset: 5 }] })))
      .toBe('UNKNOWN_MEMBER_ID');
    for (const bad of [{ offsets: 'all' }, { offsets: [null] }, { offsets: [{ partition: -1, offset: 5 }] }, { topic: 7, offsets: [] }]) {
      expect(await asyncCodeOf(api.commitOffsets({ groupId: 'g', topic: 't', ...bad } as never))).toBe('INVALID_REQUEST');
    }
    expect(await committed()).toEqual([3, 3]);
  });

  it('refuses a corrupt batch, a keyless record on a compacted topic, and stores nothing of either', async () => {
    await broker.createTopic({ topic: 't', partitions: 1 });
    await broker.createTopic({ topic: 'state', partitions: 1, config: { cleanupPolicy: 'compact' } });
    const batch = encodeBatch([{ key: null, value: Buffer.from('x') }], 0, Date.now());
    const corrupt = Buffer.from(batch);
    corrupt.writeUInt8(corrupt.readUInt8(corrupt.length - 1) ^ 0xff, corrupt.length - 1);
    expect(await asyncCodeOf(broker.produceBatches({ topic: 't', batches: [{ partition: 0, batch: corrupt }] }))).toBe('CORRUPT_MESSAGE');
    expect(await asyncCodeOf(broker.produceBatches({ topic: 'state', batches: [{ partition: 0, batch }] }))).toBe('INVALID_RECORD');
    expect(await asyncCodeOf(new Onelog({ api: binary() }).producer().send({ topic: 'state', messages: [{ value: 'no key' }] }))).toBe('INVALID_RECORD');
    expect((await broker.describeTopic('t')).partitions[0]!.highWatermark).toBe(0);
    expect((await broker.describeTopic('state')).partitions[0]!.highWatermark).toBe(0);
  });

  it('refuses a request spanning partitions whole: a keyless record in one partition stores nothing in the others', async () => {
    await broker.createTopic({ topic: 'cp', partitions: 4, config: { cleanupPolicy: 'compact' } });
    const messages = [...Array.from({ length: 20 }, (_, i) => ({ key: `k${i}`, value: `v${i}` })), { value: 'no key' }];
    expect(await asyncCodeOf(new Onelog({ api: binary() }).producer().send({ topic: 'cp', messages }))).toBe('INVALID_RECORD');
    expect((await broker.describeTopic('cp')).partitions.map((p) => p.highWatermark)).toEqual([0, 0, 0, 0]);
  });

  it('recompresses when the topic asks for a codec, and the client decodes what is stored', async () => {
    await broker.createTopic({ topic: 'z', partitions: 1, config: { compressionType: 'gzip' } });
    await new Onelog({ api: binary() }).producer().send({ topic: 'z', messages: Array.from({ length: 50 }, (_, i) => ({ value: `v${i}`.repeat(20), partition: 0 })) });
    const stored = (await broker.fetchBatches({ topic: 'z', partitions: [{ partition: 0, offset: 0 }] })).partitions[0]!.batches;
    expect(readBatchHeader(stored).attributes & 7).toBe(1); // gzip
    const r = await binary().fetch({ topic: 'z', partitions: [{ partition: 0, offset: 0 }] });
    expect(r.partitions[0]!.records.map((x) => x.value!.toString())).toEqual(Array.from({ length: 50 }, (_, i) => `v${i}`.repeat(20)));
  });

  it('an idempotent producer over the binary path stores a retried send once', async () => {
    await broker.createTopic({ topic: 't', partitions: 2 });
    const api = binary();
    let lost = 1;
    const produce = api.produce.bind(api);
    api.produce = async (request: ProduceRequest): Promise<ProduceResult> => {
      const result = await produce(request);
      if (lost-- > 0) throw new (await import('../../src/protocol/errors.js')).OnelogError('NETWORK_ERROR', 'answer lost');
      return result;
    };
    const producer = new Onelog({ api }).producer({ idempotent: true, retryBackoffMs: 1 });
    const sent = await producer.send({ topic: 't', messages: messages(20) });
    const stored = await Promise.all([0, 1].map(async (p) =>
      (await broker.fetch({ topic: 't', partitions: [{ partition: p, offset: 0 }] })).partitions[0]!.records.length));
    expect(stored[0]! + stored[1]!).toBe(20);
    expect(new Set(sent.offsets.map((o) => `${o.partition}:${o.offset}`)).size).toBe(20);
  });

  it('lingerMs gathers sends to a topic into one request, each send answered with its own offsets', async () => {
    await broker.createTopic({ topic: 't', partitions: 1 });
    let requests = 0;
    const counting = new Proxy(broker as OnelogApi, {
      get: (target, name) => {
        const value = Reflect.get(target, name) as unknown;
        if (name === 'produce') return (r: ProduceRequest) => (requests++, target.produce(r));
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const producer = new Onelog({ api: counting }).producer({ lingerMs: 30 });
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => producer.send({ topic: 't', messages: [{ value: `m${i}`, partition: 0 }] })));
    expect(requests).toBe(1);
    expect(results.map((r) => r.offsets[0]!.offset)).toEqual(Array.from({ length: 50 }, (_, i) => i));
  });

  it('the server closes while a client\'s data socket and a push stream are still open', async () => {
    await broker.createTopic({ topic: 't', partitions: 1 });
    const api = new BinaryApi(url); // not closed by the test
    await new Onelog({ api }).producer().send({ topic: 't', messages: [{ value: 'x' }] });
    const push = new Onelog({ url }).pushConsumer({ groupId: 'g', startPolicy: 'earliest' });
    push.subscribe({ topic: 't' });
    const seen: number[] = [];
    const run = asyncCodeOf(push.run({ eachMessage: ({ message }) => void seen.push(message.offset) }));
    while (seen.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    await app.close(); // would wait forever for the open WebSockets
    expect(await run).toBe('NETWORK_ERROR'); // the stream closed without a stop: never a silent end
    expect(await asyncCodeOf(api.fetch({ topic: 't', partitions: [{ partition: 0, offset: 0 }] }))).toBe('NETWORK_ERROR');
  });
});

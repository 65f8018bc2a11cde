/**
 * A write-only user cannot poison a partition (issue 31, point 2): a RecordBatch whose CRC-32C is valid but whose
 * records cannot be read back is refused over the binary data socket and Kafka Produce with its registry code,
 * naming the batch, and nothing of the request is stored: the high watermark stays and the good records around
 * it stay readable. A corrupt batch already on disk (an older version, a disk fault) never withholds the readable
 * records before it from a JSON fetch.
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { Broker } from '../../src/broker/broker.js';
import { BinaryApi } from '../../src/client/index.js';
import { ByteReader, ByteWriter } from '../../src/kafka/codec/bytes.js';
import { decode, encode } from '../../src/kafka/codec/interpreter.js';
import type { Struct } from '../../src/kafka/codec/interpreter.js';
import { kafkaCodeOf } from '../../src/kafka/errors.js';
import { KafkaListener } from '../../src/kafka/listener.js';
import { produceRequest, produceResponse } from '../../src/kafka/messages/produce.js';
import { silentLogger } from '../../src/common/logger.js';
import { MAX_TIMESTAMP_MS } from '../../src/protocol/batch-validator.js';
import { decodeFrame, encodeFrame, FRAME_KIND } from '../../src/protocol/data-frames.js';
import { encodeBatch } from '../../src/protocol/record-batch.js';
import { createHttpServer } from '../../src/server/http-server.js';
import { PartitionLog } from '../../src/log/segments/partition-log.js';
import { logOptions } from '../log/log-fixtures.js';
import { MALFORMED_BATCHES, reseal } from '../helpers/malformed-batches.js';
import { tmpDir } from '../helpers/tmp.js';

let dataDir: string;
let broker: Broker;
let app: FastifyInstance;
let listener: KafkaListener;
let url: string;

async function start(): Promise<void> {
  broker = await Broker.open({ dataDir, retentionCheckIntervalMs: 0, monitoring: { alertCheckIntervalMs: 0 } });
  app = createHttpServer(broker);
  await app.listen({ port: 0, host: '127.0.0.1' });
  url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  listener = await KafkaListener.start(broker, { port: 0, logger: silentLogger, maxFrameBytes: 1 << 20 });
}

async function stop(): Promise<void> {
  await listener.close();
  await app.close();
  await broker.close();
}

beforeEach(async () => {
  dataDir = tmpDir();
  await start();
  await broker.createTopic({ topic: 't', partitions: 1 });
});
afterEach(stop);

const good = (value: string) => encodeBatch([{ key: null, value: Buffer.from(value), headers: [] }], 0, Date.now());

/** One PRODUCE frame of `batches` to t/0 on a raw data socket; resolves with the answer frame. */
function produceOnDataSocket(batches: Buffer[]): Promise<{ kind: number; json: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/data`);
    ws.on('error', reject);
    ws.on('open', () => ws.send(encodeFrame(FRAME_KIND.PRODUCE, 9, { topic: 't', batches: batches.map((b) => ({ partition: 0, bytes: b.length })) }, batches)));
    ws.on('message', (data: Buffer) => {
      const frame = decodeFrame(data);
      ws.close();
      resolve({ kind: frame.kind, json: frame.json as Record<string, unknown> });
    });
  });
}

/** A Kafka Produce v8 of `batches`, concatenated, to t/0; resolves with the partition's answer. */
function produceOverKafka(batches: Buffer[]): Promise<{ errorCode: number; errorMessage: string | null }> {
  const w = new ByteWriter();
  w.int32(0);
  w.int16(0); w.int16(8); w.int32(5); w.int16(1); w.bytes(Buffer.from('t'));
  encode(produceRequest, 8, { transactionalId: null, acks: -1, timeoutMs: 5000, topicData: [{ name: 't', partitionData: [{ index: 0, records: Buffer.concat(batches) }] }] }, w);
  const frame = Buffer.from(w.finish());
  frame.writeInt32BE(frame.length - 4, 0);
  return new Promise((resolve, reject) => {
    const socket = net.connect(listener.port, '127.0.0.1', () => socket.write(frame));
    let pending = Buffer.alloc(0);
    socket.on('error', reject);
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      if (pending.length < 4 || pending.length < 4 + pending.readInt32BE(0)) return;
      socket.end();
      const r = new ByteReader(pending.subarray(4, 4 + pending.readInt32BE(0)));
      r.int32(); // correlation id
      const answer = decode(produceResponse, 8, r) as { responses: Array<{ partitionResponses: Struct[] }> };
      resolve(answer.responses[0]!.partitionResponses[0] as unknown as { errorCode: number; errorMessage: string | null });
    });
  });
}

const highWatermark = async () => (await broker.describeTopic('t')).partitions[0]!.highWatermark;
/** A JSON fetch of t/0 over HTTP from `offset`: the values, where to read on, and the partition's error. */
async function jsonValues(offset = 0): Promise<{ values: string[]; nextOffset: number; error?: { code: string; message: string; offset?: number } }> {
  const res = await fetch(`${url}/topics/t/fetch`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ partitions: [{ partition: 0, offset }], maxRecords: 1000 }),
  });
  expect(res.status).toBe(200);
  const body = await res.json() as { partitions: Array<{ records: Array<{ value: string }>; nextOffset: number; error?: { code: string; message: string; offset?: number } }> };
  const { records, nextOffset, error } = body.partitions[0]!;
  return { values: records.map((r) => r.value), nextOffset, ...(error === undefined ? {} : { error }) };
}

describe('a produced batch that cannot be read back', () => {
  it('is refused over the data socket and Kafka Produce with its code, naming the batch; nothing of the request is stored', async () => {
    expect((await produceOnDataSocket([good('before')])).kind).toBe(FRAME_KIND.PRODUCED);
    let stored = 1;
    for (const { name, code, batch } of MALFORMED_BATCHES) {
      // Alone, and after a good batch in the same request: the request is refused whole.
      for (const batches of [[batch()], [good('in the request'), batch()]]) {
        const socket = await produceOnDataSocket(batches);
        expect(socket.kind, name).toBe(FRAME_KIND.ERROR);
        expect(socket.json.code, name).toBe(code);
        expect(socket.json.message, name).toMatch(new RegExp(`batch ${batches.length - 1} of the request to t/0`));
        const kafka = await produceOverKafka(batches);
        expect(kafka.errorCode, name).toBe(kafkaCodeOf(code));
        expect(kafka.errorMessage, name).toMatch(/batch \d of the request to t\/0/);
        expect(await highWatermark(), name).toBe(stored);
      }
      expect((await produceOverKafka([good(`after ${name}`)])).errorCode, name).toBe(0);
      stored++;
    }
    const { values, nextOffset } = await jsonValues();
    expect(values).toEqual(['before', ...MALFORMED_BATCHES.map(({ name }) => `after ${name}`)]);
    expect(nextOffset).toBe(stored);
  });

  it('the JSON produce holds record timestamps to the same range', async () => {
    for (const timestamp of [-5, -1, MAX_TIMESTAMP_MS + 1]) {
      const res = await fetch(`${url}/topics/t/records`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ records: [{ value: 'ok' }, { value: 'x', timestamp }] }),
      });
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ code: 'INVALID_RECORD', index: 1, timestamp });
    }
    expect(await highWatermark()).toBe(0);
  });

  it('a batch whose max timestamp disagrees with its records is stored with the right one, as Kafka does', async () => {
    const batch = encodeBatch([{ key: null, value: Buffer.from('a'), timestamp: 1000 }, { key: null, value: Buffer.from('b'), timestamp: 3000 }], 0, 0);
    batch.writeInt32BE(0, 35);
    batch.writeInt32BE(5, 39); // maxTimestamp 5, resealed with a CRC that holds
    expect((await produceOnDataSocket([reseal(batch)])).kind).toBe(FRAME_KIND.PRODUCED);
    expect(await broker.offsetForTimestamp('t', 0, 2000)).toBe(1);
    const stored = (await broker.fetchBatches({ topic: 't', partitions: [{ partition: 0, offset: 0 }] })).partitions[0]!.batches;
    expect(stored.readInt32BE(35) * 2 ** 32 + stored.readUInt32BE(39)).toBe(3000);
  });
});

describe('a corrupt batch already stored', () => {
  it('never withholds the readable records before it: a JSON fetch answers them, a fetch starting at it answers CORRUPT_MESSAGE naming it', async () => {
    for (const v of ['a', 'b', 'c']) await broker.produce({ topic: 't', records: [{ key: null, value: Buffer.from(v) }] });
    await stop();
    // Written past the produce path's checks, as an older version or a fault on disk would have left it.
    const log = PartitionLog.open(`${dataDir}/log/t-0`, 't', 0, logOptions());
    await log.appendBatch(MALFORMED_BATCHES[0]!.batch()); // offsets 3-6, says 4 records, holds 1
    await log.append([{ key: null, value: Buffer.from('d') }]);
    await log.close();
    await start();

    expect(await jsonValues(0)).toEqual({ values: ['a', 'b', 'c'], nextOffset: 3 });
    const atBad = await jsonValues(3);
    expect(atBad.error?.code).toBe('CORRUPT_MESSAGE');
    expect(atBad.error?.offset).toBe(3);
    expect(atBad.error?.message).toMatch(/the batch at offset 3/);
    expect(await jsonValues(7)).toEqual({ values: ['d'], nextOffset: 8 });

    const binary = new BinaryApi(url);
    try {
      const fetched = await binary.fetch({ topic: 't', partitions: [{ partition: 0, offset: 0 }], maxRecords: 100 });
      expect(fetched.partitions[0]!.records.map((r) => r.value!.toString())).toEqual(['a', 'b', 'c']);
      expect(fetched.partitions[0]!.nextOffset).toBe(3);
    } finally {
      binary.close();
    }
  });
});

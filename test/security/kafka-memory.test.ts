/**
 * Memory before authentication and across connections on the Kafka listener (issue 31, point 3), on a real
 * socket in front of a real broker. Four unauthenticated connections declaring 100 MiB frames once took the broker
 * from 113 to 479 MB: while SASL is required, a connection that has not authenticated may send frames of at most
 * 512 KiB (Kafka's sasl.server.max.receive.size), refused as soon as the 4-byte size is read, its body never
 * buffered; an authenticated one sends large Produce requests as before. The bytes buffered over all connections
 * are held to maxBufferedBytes by pausing reading (as Kafka's queued.max.request.bytes), and reading resumes once
 * answers free them.
 */
import net from 'node:net';
import { Kafka, logLevel } from 'kafkajs';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { ManualClock } from '../../src/common/clock.js';
import { ByteWriter } from '../../src/kafka/codec/bytes.js';
import { encode } from '../../src/kafka/codec/interpreter.js';
import type { MessageDefinition } from '../../src/kafka/codec/schema.js';
import type { Struct } from '../../src/kafka/codec/interpreter.js';
import { saslAuthenticateRequest, saslHandshakeRequest } from '../../src/kafka/messages/sasl.js';
import { KafkaListener } from '../../src/kafka/listener.js';
import { silentLogger } from '../../src/common/logger.js';
import { LOOPBACK_ADMIN } from '../../src/security/principal.js';
import { Quotas } from '../../src/security/quotas.js';
import { tmpDir } from '../helpers/tmp.js';

const KiB = 1024;
const MiB = 1024 * KiB;

let broker: Broker;
const listeners: KafkaListener[] = [];
const sockets: net.Socket[] = [];

beforeEach(async () => {
  broker = await Broker.open({ dataDir: tmpDir(), retentionCheckIntervalMs: 0, monitoring: { alertCheckIntervalMs: 0 } });
});
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  for (const l of listeners.splice(0)) await l.close();
  await broker.close();
});

async function listen(options: Partial<Parameters<typeof KafkaListener.start>[1]> = {}): Promise<KafkaListener> {
  const listener = await KafkaListener.start(broker, { port: 0, logger: silentLogger, ...options });
  listeners.push(listener);
  return listener;
}

/** A request frame (header v1, client id "t"): `body` encoded from `definition`, or raw bytes. */
function request(apiKey: number, version: number, correlationId: number, body: Buffer | { definition: MessageDefinition; value: Struct } = Buffer.alloc(0)): Buffer {
  const w = new ByteWriter();
  w.int32(0);
  w.int16(apiKey); w.int16(version); w.int32(correlationId); w.int16(1); w.bytes(Buffer.from('t'));
  const head = Buffer.from(w.finish());
  const payload = Buffer.isBuffer(body) ? body : Buffer.from(encode(body.definition, version, body.value).finish());
  const frame = Buffer.concat([head, payload]);
  frame.writeInt32BE(frame.length - 4, 0);
  return frame;
}

/** ApiVersions v0 (it has no body: the padding is read past), `size` bytes in all with its size prefix. */
const paddedApiVersions = (correlationId: number, size: number) => request(18, 0, correlationId, Buffer.alloc(size - 4 - 11));

/** A connection to `listener` whose answers (their correlation ids) and close are observed. */
function connect(listener: KafkaListener): { socket: net.Socket; answers: number[]; closed: Promise<void> } {
  const socket = net.connect(listener.port, '127.0.0.1');
  sockets.push(socket);
  const answers: number[] = [];
  let pending = Buffer.alloc(0);
  socket.on('data', (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 4 && pending.length >= 4 + pending.readInt32BE(0)) {
      answers.push(pending.readInt32BE(4));
      pending = pending.subarray(4 + pending.readInt32BE(0));
    }
  });
  socket.on('error', () => undefined); // a close follows
  return { socket, answers, closed: new Promise((resolve) => socket.once('close', () => resolve())) };
}

describe('the Kafka listener before SASL', () => {
  let token: string;
  let listener: KafkaListener;
  beforeEach(async () => {
    listener = await listen({ users: broker.users, acls: broker.acls });
    token = (await broker.users.create('ops', LOOPBACK_ADMIN)).token;
  });

  it('closes a connection whose first frame declares 100 MiB as soon as its size is read, buffering none of it', async () => {
    const { socket, answers, closed } = connect(listener);
    const size = Buffer.alloc(4);
    size.writeInt32BE(100 * MiB);
    socket.write(size); // the size only: the connection must close without waiting for the body
    await closed;
    expect(answers).toEqual([]);
    expect(listener.bufferedBytes).toBe(0);
  });

  it('refuses a frame of 512 KiB + 1 before authentication, and answers one of 512 KiB', async () => {
    const over = connect(listener);
    over.socket.write(paddedApiVersions(1, 512 * KiB + 1 + 4).subarray(0, 4 + 100)); // the size and a little of the body
    await over.closed;
    expect(over.answers).toEqual([]);

    const at = connect(listener);
    at.socket.write(paddedApiVersions(2, 512 * KiB + 4));
    await vi.waitFor(() => expect(at.answers).toEqual([2]), { timeout: 5000, interval: 10 });
    expect(at.socket.destroyed).toBe(false);
  });

  it('reads a large frame sent right behind SASL once SASL has answered: the limit ends with authentication', async () => {
    const { socket, answers } = connect(listener);
    socket.write(Buffer.concat([
      request(17, 1, 1, { definition: saslHandshakeRequest, value: { mechanism: 'PLAIN' } }),
      request(36, 0, 2, { definition: saslAuthenticateRequest, value: { authBytes: Buffer.from(`\0ops\0${token}`) } }),
      paddedApiVersions(3, 2 * MiB),
    ]));
    await vi.waitFor(() => expect(answers).toEqual([1, 2, 3]), { timeout: 5000, interval: 10 });
  });

  it('lets an authenticated kafkajs producer send Produce requests above 512 KiB', async () => {
    await broker.createTopic({ topic: 'big', partitions: 1 });
    const kafka = new Kafka({
      brokers: [`127.0.0.1:${listener.port}`], clientId: 't', logLevel: logLevel.NOTHING, retry: { retries: 0 },
      sasl: { mechanism: 'plain', username: 'ops', password: token },
    });
    const producer = kafka.producer();
    await producer.connect();
    try {
      const value = Buffer.alloc(900 * KiB, 'x');
      const [sent] = await producer.send({ topic: 'big', messages: [{ value }] });
      expect(sent!.errorCode).toBe(0);
    } finally {
      await producer.disconnect();
    }
    const fetched = await broker.fetch({ topic: 'big', partitions: [{ partition: 0, offset: 0 }], maxRecords: 1 });
    expect(fetched.partitions[0]!.records[0]!.value!.length).toBe(900 * KiB);
  });
});

describe('the bytes buffered over every Kafka connection', () => {
  it('pause reading on every connection at maxBufferedBytes, and reading resumes once answers free them', async () => {
    const clock = new ManualClock(1_000);
    // One request a second: a request past the first waits on the clock, its frame held in the listener's budget.
    const listener = await listen({ clock, quotas: new Quotas(clock, { requestsPerSec: 1, produceBytesPerSec: 0 }), maxBufferedBytes: 4 * KiB });
    const a = connect(listener);
    a.socket.write(request(18, 0, 1));
    await vi.waitFor(() => expect(a.answers).toEqual([1]), { timeout: 5000, interval: 10 });
    a.socket.write(paddedApiVersions(2, 8 * KiB)); // throttled: 8 KiB held, above the bound
    await vi.waitFor(() => expect([clock.sleeping, listener.bufferedBytes]).toEqual([1, 8 * KiB]), { timeout: 5000, interval: 10 });

    const b = connect(listener);
    b.socket.write(request(18, 0, 3));
    await vi.waitFor(() => expect(listener.pausedConnections).toBe(2), { timeout: 5000, interval: 10 }); // a, and b before its first read
    expect([b.answers, listener.bufferedBytes]).toEqual([[], 8 * KiB]); // b's request is not read

    clock.advance(1_000); // a's request is answered: its bytes are freed, both connections read again
    await vi.waitFor(() => expect([a.answers, listener.pausedConnections, clock.sleeping]).toEqual([[1, 2], 0, 1]), { timeout: 5000, interval: 10 });
    clock.advance(1_000); // b's request, read now, waited for the next token
    await vi.waitFor(() => expect(b.answers).toEqual([3]), { timeout: 5000, interval: 10 });
    expect(listener.bufferedBytes).toBe(0);
  });

  it('are freed when a connection closes with frames unhandled', async () => {
    const clock = new ManualClock(1_000);
    const listener = await listen({ clock, quotas: new Quotas(clock, { requestsPerSec: 1, produceBytesPerSec: 0 }) });
    const { socket, closed } = connect(listener);
    socket.write(Buffer.concat([request(18, 0, 1), request(18, 0, 2), paddedApiVersions(3, 10 * KiB).subarray(0, 5 * KiB)]));
    await vi.waitFor(() => expect([clock.sleeping, listener.bufferedBytes]).toEqual([1, 15 + 5 * KiB]), { timeout: 5000, interval: 10 });
    socket.destroy();
    await closed;
    await vi.waitFor(() => expect(listener.bufferedBytes).toBe(0), { timeout: 5000, interval: 10 });
  });
});

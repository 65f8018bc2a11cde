/**
 * WebSocket push with credit-based flow control, on a real server socket: the broker never sends beyond the
 * credit granted, holds at most one fetch while the member grants nothing, and delivers everything in order
 * once credit returns; a push group and a pull group read one topic side by side, each told of its partitions.
 */
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { Broker } from '../../src/broker/broker.js';
import { Onelog } from '../../src/client/index.js';
import { decodePushRecords } from '../../src/protocol/push-frames.js';
import { createHttpServer } from '../../src/server/http-server.js';
import { tmpDir } from '../helpers/tmp.js';

let broker: Broker;
let app: FastifyInstance;
let url: string;

beforeEach(async () => {
  broker = await Broker.open({ dataDir: tmpDir(), sessionCheckIntervalMs: 100 });
  app = createHttpServer(broker);
  await app.listen({ port: 0, host: '127.0.0.1' });
  url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
});
afterEach(async () => {
  await app.close();
  await broker.close();
});

async function waitFor<T>(what: string, probe: () => Promise<T | false | undefined> | T | false | undefined, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== false && value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

type Streams = Array<{ groupId: string; unackedRecords: number; bufferedRecords: number; sentRecords: number; creditRecords: number }>;
const streams = async () => ((await app.inject({ method: 'GET', url: '/push-streams' })).json() as { streams: Streams }).streams;

describe('WebSocket push', () => {
  it('never sends beyond the credit granted, holds a bounded amount while the member grants none, and delivers all in order on resume', async () => {
    await broker.createTopic({ topic: 't', partitions: 1 });
    const ws = new WebSocket(`${url.replace('http', 'ws')}/groups/slow/stream`);
    const received: number[] = [];
    ws.on('message', (data) => {
      const frame = JSON.parse(data.toString()) as { type: string; records?: Array<{ offset: number }> };
      if (frame.type === 'records') received.push(...frame.records!.map((r) => r.offset));
    });
    await new Promise((resolve) => ws.once('open', resolve));
    ws.send(JSON.stringify({ type: 'subscribe', topics: ['t'], startPolicy: 'earliest' }));
    ws.send(JSON.stringify({ type: 'credit', records: 100, bytes: 1 << 20 }));

    const producer = new Onelog({ api: broker }).producer();
    const value = Buffer.alloc(100, 'x');
    for (let i = 0; i < 100; i++) await producer.send({ topic: 't', messages: Array.from({ length: 1000 }, () => ({ value, partition: 0 })) });
    expect((await broker.describeTopic('t')).partitions[0]!.highWatermark).toBe(100_000);

    await waitFor('the first window', () => received.length === 100);
    // The member grants nothing more: whatever the broker does, its counters stay within the window + one fetch.
    for (let i = 0; i < 20; i++) {
      const [s] = await streams();
      expect(s!.sentRecords).toBe(100);
      expect(s!.creditRecords).toBe(0);
      expect(s!.unackedRecords).toBeLessThanOrEqual(100);
      expect(s!.bufferedRecords).toBe(0);
      await producer.send({ topic: 't', messages: [{ value, partition: 0 }] });
    }
    expect(received).toHaveLength(100);

    // Resume: ack as it goes and grant credit back; everything arrives, in order, once.
    let acked = -1;
    ws.on('message', (data) => {
      const frame = JSON.parse(data.toString()) as { type: string; topic: string; partition: number; records?: Array<{ offset: number }> };
      if (frame.type !== 'records') return;
      const last = frame.records!.at(-1)!.offset;
      ws.send(JSON.stringify({ type: 'ack', topic: 't', partition: 0, offset: last }));
      ws.send(JSON.stringify({ type: 'credit', records: frame.records!.length, bytes: frame.records!.length * 100 }));
      acked = last;
    });
    ws.send(JSON.stringify({ type: 'ack', topic: 't', partition: 0, offset: 99 }));
    ws.send(JSON.stringify({ type: 'credit', records: 5000, bytes: 5000 * 100 }));
    await waitFor('every record', () => received.length === 100_020);
    expect(received).toEqual(Array.from({ length: 100_020 }, (_, i) => i));
    await waitFor('the last ack committed', async () => acked === 100_019 &&
      (await broker.describeGroup('slow')).subscriptions[0]!.partitions[0]!.committedOffset === 100_020);
    ws.close();
    await waitFor('the member left', async () => (await broker.describeGroup('slow')).members.length === 0);
  });

  it('before-processing: the broker commits what it sends without waiting for acks (at-most-once)', async () => {
    await broker.createTopic({ topic: 't', partitions: 1 });
    await new Onelog({ api: broker }).producer().send({ topic: 't', messages: Array.from({ length: 20 }, (_, i) => ({ value: `v${i}`, partition: 0 })) });
    const ws = new WebSocket(`${url.replace('http', 'ws')}/groups/amo/stream`);
    const received: number[] = [];
    ws.on('message', (data) => {
      const frame = JSON.parse(data.toString()) as { type: string; records?: Array<{ offset: number }> };
      if (frame.type === 'records') received.push(...frame.records!.map((r) => r.offset));
    });
    await new Promise((resolve) => ws.once('open', resolve));
    ws.send(JSON.stringify({ type: 'subscribe', topics: ['t'], startPolicy: 'earliest', commitMode: 'before-processing' }));
    ws.send(JSON.stringify({ type: 'credit', records: 20, bytes: 1 << 20 }));
    await waitFor('every record', () => received.length === 20);
    await waitFor('committed without an ack', async () =>
      (await broker.describeGroup('amo')).subscriptions[0]!.partitions[0]!.committedOffset === 20);
    expect((await broker.describeGroup('amo')).members[0]!.commitMode).toBe('before-processing');
    ws.close();
  });

  it('refuses an ack of an offset it did not send (acks never skip records), and closes on an unknown topic', async () => {
    await broker.createTopic({ topic: 't', partitions: 1 });
    await new Onelog({ api: broker }).producer().send({ topic: 't', messages: Array.from({ length: 20 }, (_, i) => ({ value: `v${i}`, partition: 0 })) });
    const ws = new WebSocket(`${url.replace('http', 'ws')}/groups/acks/stream`);
    const frames: Array<Record<string, unknown>> = [];
    ws.on('message', (data) => frames.push(JSON.parse(data.toString()) as Record<string, unknown>));
    await new Promise((resolve) => ws.once('open', resolve));
    ws.send(JSON.stringify({ type: 'subscribe', topics: ['t'], startPolicy: 'earliest' }));
    ws.send(JSON.stringify({ type: 'credit', records: 5, bytes: 1 << 20 }));
    await waitFor('5 records', () => frames.some((f) => f.type === 'records'));
    ws.send(JSON.stringify({ type: 'ack', topic: 't', partition: 0, offset: 15 }));
    ws.send(JSON.stringify({ type: 'credit', records: 'x', bytes: 1 }));
    await waitFor('two refusals', () => frames.filter((f) => f.type === 'error').length === 2);
    const errors = frames.filter((f) => f.type === 'error').sort((a, b) => String(a.code).localeCompare(String(b.code)));
    expect(errors).toMatchObject([
      { code: 'INVALID_OFFSET', lastSent: 4 }, { code: 'INVALID_REQUEST', message: 'credit records must be an integer >= 0, got "x"' },
    ]);
    expect((await broker.describeGroup('acks')).subscriptions[0]!.partitions[0]!.committedOffset).toBe(0);
    ws.close();

    const bad = new WebSocket(`${url.replace('http', 'ws')}/groups/g2/stream`);
    await new Promise((resolve) => bad.once('open', resolve));
    const closed = new Promise<number>((resolve) => bad.once('close', (code) => resolve(code)));
    bad.send(JSON.stringify({ type: 'subscribe', topics: ['nope'] }));
    expect(await closed).toBe(1008);
  });

  it('sends records frames as binary RecordBatch frames when the subscribe asks for them, other frames as JSON; refuses another "frames"', async () => {
    await broker.createTopic({ topic: 't', partitions: 1 });
    const sent = [
      { key: Buffer.from('a'), value: Buffer.from('{"title":"Főoldal"}'), headers: [{ key: 'h', value: Buffer.from([0, 255]) }], timestamp: 1442018817000 },
      { key: null, value: null, headers: [], timestamp: 1442018818000 },
    ];
    await broker.produce({ topic: 't', records: sent });
    const ws = new WebSocket(`${url.replace('http', 'ws')}/groups/binary/stream`);
    const frames: Array<{ binary: boolean; data: Buffer }> = [];
    ws.on('message', (data: Buffer, binary: boolean) => frames.push({ binary, data }));
    await new Promise((resolve) => ws.once('open', resolve));
    ws.send(JSON.stringify({ type: 'subscribe', topics: ['t'], startPolicy: 'earliest', assignments: true, frames: 'binary' }));
    ws.send(JSON.stringify({ type: 'credit', records: 10, bytes: 1 << 20 }));
    await waitFor('the records', () => frames.some((f) => f.binary));
    const assigned = frames.find((f) => !f.binary)!;
    expect(JSON.parse(assigned.data.toString())).toEqual({ type: 'assigned', partitions: [{ topic: 't', partition: 0 }] });
    const records = frames.filter((f) => f.binary).flatMap((f) => decodePushRecords(f.data).records);
    expect(records).toEqual(sent.map((r, offset) => ({ offset, ...r })));
    ws.close();

    const refused = new WebSocket(`${url.replace('http', 'ws')}/groups/binary/stream`);
    const answer = new Promise<string>((resolve) => refused.once('message', (data: Buffer) => resolve(data.toString())));
    await new Promise((resolve) => refused.once('open', resolve));
    refused.send(JSON.stringify({ type: 'subscribe', topics: ['t'], frames: 'protobuf' }));
    expect(JSON.parse(await answer)).toMatchObject({ type: 'error', code: 'INVALID_REQUEST', message: expect.stringContaining('one of json, binary') });
  });

  it('refuses a first frame that is not a subscribe, naming what is expected', async () => {
    const ws = new WebSocket(`${url.replace('http', 'ws')}/groups/g/stream`);
    await new Promise((resolve) => ws.once('open', resolve));
    const answer = new Promise<{ frame: Record<string, unknown>; code: number }>((resolve) => {
      let frame: Record<string, unknown> = {};
      ws.on('message', (d) => (frame = JSON.parse(d.toString()) as Record<string, unknown>));
      ws.on('close', (code) => resolve({ frame, code }));
    });
    ws.send(JSON.stringify({ type: 'credit', records: 1 }));
    const { frame, code } = await answer;
    expect(code).toBe(1008);
    expect(frame).toMatchObject({ type: 'error', code: 'INVALID_REQUEST' });
    expect(frame.message).toContain('the first frame must be');
  });

  it('a push group and a pull group on one topic each receive every record once', async () => {
    await broker.createTopic({ topic: 'edits', partitions: 3 });
    const onelog = new Onelog({ url });
    await onelog.admin().describeTopic('edits');
    const messages = Array.from({ length: 3000 }, (_, i) => ({ key: `k${i % 97}`, value: `v${i}` }));
    const produced = await onelog.producer().send({ topic: 'edits', messages });
    const pushed: string[] = [];
    const pulled: string[] = [];
    const push = onelog.pushConsumer({ groupId: 'live', startPolicy: 'earliest', creditRecords: 64, creditBytes: 4096 });
    push.subscribe({ topic: 'edits' });
    // A push consumer acknowledges each record as its handler resolves: there is no batch end to hook.
    expect(() => push.run({ eachMessage: () => {}, afterBatch: () => {} })).toThrow(/afterBatch is for pull consumers/);
    const pull = onelog.consumer({ groupId: 'batch', startPolicy: 'earliest', maxWaitMs: 50 });
    pull.subscribe({ topic: 'edits' });
    const assigned = { push: [] as string[], pull: [] as string[] };
    const runs = [
      push.run({
        eachMessage: ({ partition, message }) => void pushed.push(`${partition}:${message.offset}`),
        onPartitionsAssigned: (partitions) => assigned.push.push(...partitions.map((p) => `${p.topic}/${p.partition}`)),
      }),
      pull.run({
        eachMessage: ({ partition, message }) => void pulled.push(`${partition}:${message.offset}`),
        onPartitionsAssigned: (partitions) => assigned.pull.push(...partitions.map((p) => `${p.topic}/${p.partition}`)),
      }),
    ];
    await waitFor('both groups', async () => {
      if (pushed.length < 3000 || pulled.length < 3000) return false;
      const [a, b] = await Promise.all([broker.describeGroup('live'), broker.describeGroup('batch')]);
      const done = (d: typeof a) => d.subscriptions[0]!.partitions.every((p) => p.committedOffset === p.highWatermark);
      return done(a) && done(b);
    });
    await push.stop();
    await pull.stop();
    await Promise.all(runs);
    const expected = produced.offsets.map((o) => `${o.partition}:${o.offset}`).sort();
    expect([...pushed].sort()).toEqual(expected);
    expect([...pulled].sort()).toEqual(expected);
    // Each member was told of its partitions (the push member by an `assigned` frame it asked for).
    expect(assigned.push.sort()).toEqual(['edits/0', 'edits/1', 'edits/2']);
    expect(assigned.pull.sort()).toEqual(['edits/0', 'edits/1', 'edits/2']);
  });

  it('counts a delivery when the client vanishes holding records (no close frame), not when it closes', async () => {
    await broker.createTopic({ topic: 'p', partitions: 1 });
    await broker.produce({ topic: 'p', records: [0, 1, 2].map((i) => ({ key: null, value: Buffer.from(`r${i}`), partition: 0 })) });
    await broker.subscribe({ groupId: 'pushers', topic: 'p', startPolicy: 'earliest', deliveryMode: 'push', maxDeliveries: 2 });
    /** Connects, takes the first frame of records unacknowledged, and ends the connection: abruptly, or with a close frame. */
    const holdAndEnd = async (how: 'terminate' | 'close'): Promise<number[]> => {
      const ws = new WebSocket(`${url.replace('http', 'ws')}/groups/pushers/stream`);
      const first = new Promise<number[]>((resolve) => ws.on('message', (data) => {
        const frame = JSON.parse(data.toString()) as { type: string; records?: Array<{ offset: number }> };
        if (frame.type === 'records') resolve(frame.records!.map((r) => r.offset));
      }));
      await new Promise((resolve) => ws.once('open', resolve));
      ws.send(JSON.stringify({ type: 'subscribe', topics: ['p'] }));
      ws.send(JSON.stringify({ type: 'credit', records: 100, bytes: 1 << 20 }));
      const offsets = await first;
      const closed = new Promise((resolve) => ws.once('close', resolve));
      if (how === 'terminate') ws.terminate(); // the socket ends without a close frame: 1006 on the broker's side
      else ws.close();
      await closed;
      await waitFor('the member to be gone', async () => (await broker.describeGroup('pushers')).members.length === 0);
      return offsets;
    };
    expect(await holdAndEnd('close')).toEqual([0, 1, 2]); // a client that closes: nothing counted
    expect(await holdAndEnd('terminate')).toEqual([0, 1, 2]); // delivery counted on record 0, which then comes alone
    expect(await holdAndEnd('terminate')).toEqual([0]); // the second: spent
    expect((await broker.listDeadLetters({ groupId: 'pushers', topic: 'p' })).depth).toBe(1);
    expect(await holdAndEnd('close')).toEqual([1]); // the rest, one at a time until committed past
  });
});

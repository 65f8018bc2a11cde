/**
 * No path commits a record that was not handed to a handler, a socket or an endpoint, in either commit mode:
 * a push member that detaches, a pull consumer whose handler fails or that stops mid-batch, a revocation. A
 * real server socket for push; every wait is bounded by a condition with a deadline.
 */
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { Onelog } from '../../src/client/index.js';
import type { CommitMode } from '../../src/protocol/types.js';
import { createHttpServer } from '../../src/server/http-server.js';
import { tmpDir } from '../helpers/tmp.js';

let broker: Broker;
let app: FastifyInstance;
let onelog: Onelog;

beforeEach(async () => {
  broker = await Broker.open({ dataDir: tmpDir(), sessionCheckIntervalMs: 100 });
  app = createHttpServer(broker);
  await app.listen({ port: 0, host: '127.0.0.1' });
  onelog = new Onelog({ url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}` });
});
afterEach(async () => {
  await app.close();
  await broker.close();
});

async function waitFor(what: string, probe: () => Promise<boolean> | boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const committed = async (groupId: string, topic = 't') =>
  (await broker.describeGroup(groupId)).subscriptions.find((s) => s.topic === topic)!.partitions[0]!.committedOffset;
const send = (values: string[]) => onelog.producer().send({ topic: 't', messages: values.map((value) => ({ value, partition: 0 })) });

describe('nothing is committed that was not handed', () => {
  it('push, before-processing: a member that stops as records arrive leaves them to the next member', async () => {
    await broker.createTopic({ topic: 't', partitions: 1 });
    for (let round = 0; round < 5; round++) {
      const groupId = `push-${round}`;
      const received: string[] = [];
      const attach = () => {
        const c = onelog.pushConsumer({ groupId, commitMode: 'before-processing', startPolicy: 'latest', sessionTimeoutMs: 5000 });
        c.subscribe({ topic: 't' });
        const running = c.run({ eachMessage: ({ message }) => void received.push(message.value!.toString()) });
        return { c, running };
      };
      const first = attach();
      await waitFor('the member', async () => (await broker.describeGroup(groupId).catch(() => undefined))?.members.length === 1);
      await send([`${round}-m0`, `${round}-m1`]);
      await waitFor('m0 and m1', () => received.length === 2);
      const stopping = first.c.stop();
      await send([`${round}-m2`, `${round}-m3`]);
      await stopping;
      await first.running;
      const second = attach();
      await waitFor('m2 and m3', () => received.length >= 4).catch(async (e: unknown) => {
        throw new Error(`${(e as Error).message}: received ${JSON.stringify(received)}, ${JSON.stringify(await broker.describeGroup(groupId))}`);
      });
      await second.c.stop();
      await second.running;
      expect(received).toEqual([`${round}-m0`, `${round}-m1`, `${round}-m2`, `${round}-m3`]);
    }
  });

  it('pull, before-processing: a handler that fails mid-batch leaves the rest of the batch uncommitted', async () => {
    await broker.createTopic({ topic: 't', partitions: 1 });
    await send(Array.from({ length: 10 }, (_, i) => `v${i}`));
    const handed: number[] = [];
    const consumer = onelog.consumer({ groupId: 'amo', commitMode: 'before-processing', startPolicy: 'earliest' });
    consumer.subscribe({ topic: 't' });
    const err = await consumer.run({
      eachMessage: ({ message }) => {
        handed.push(message.offset);
        if (message.offset === 3) throw new Error('bad record');
      },
    }).catch((e: unknown) => e as Error);
    expect(err).toBeInstanceOf(Error);
    expect(handed).toEqual([0, 1, 2, 3]);
    expect(await committed('amo')).toBe(4);
  });

  for (const commitMode of ['after-processing', 'before-processing'] as CommitMode[]) {
    it(`pull, ${commitMode}: stopping and revocations commit only what handlers got`, async () => {
      await broker.createTopic({ topic: 't', partitions: 1 });
      await send(Array.from({ length: 300 }, (_, i) => `v${i}`));
      const handed = new Set<number>();
      const member = () => {
        const c = onelog.consumer({ groupId: 'g', commitMode, startPolicy: 'earliest', maxRecords: 50, sessionTimeoutMs: 5000 });
        c.subscribe({ topic: 't' });
        const running = c.run({
          eachMessage: async ({ message }) => {
            handed.add(message.offset);
            await new Promise((resolve) => setImmediate(resolve));
          },
        });
        return { c, running };
      };
      const a = member();
      await waitFor('some records', () => handed.size >= 60);
      const b = member(); // the partition moves to one of them: a revocation for the other, or none
      await waitFor('more records', () => handed.size >= 150);
      await a.c.stop();
      await b.c.stop();
      await Promise.all([a.running, b.running]);
      const end = (await committed('g'))!;
      for (let o = 0; o < end; o++) expect(handed.has(o), `offset ${o} committed but never handed`).toBe(true);
    });
  }
});

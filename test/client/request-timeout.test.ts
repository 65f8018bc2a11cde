/**
 * A server that accepts connections and never answers (a broker paused by SIGSTOP, or cut off): the clients give a
 * request up after requestTimeoutMs; a read goes on to the next URL, a write is answered NETWORK_ERROR (outcome
 * unknown) and the next request goes to the next URL. Real sockets on loopback.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { Broker } from '../../src/broker/broker.js';
import { BinaryApi, HttpApi } from '../../src/client/index.js';
import { LEASE_ANSWER_MARGIN_MS } from '../../src/client/http-api.js';
import { createHttpServer } from '../../src/server/http-server.js';
import { tmpDir } from '../helpers/tmp.js';

let broker: Broker;
let app: FastifyInstance;
let good: string;
let silent: net.Server;
let hung: string;
const sockets = new Set<net.Socket>();

beforeEach(async () => {
  broker = await Broker.open({ dataDir: tmpDir() });
  app = createHttpServer(broker);
  await app.listen({ port: 0, host: '127.0.0.1' });
  good = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  // Takes every connection and never writes a byte back.
  silent = net.createServer((socket) => void sockets.add(socket));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  hung = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
  await broker.createTopic({ topic: 't', partitions: 1 });
});

afterEach(async () => {
  for (const socket of sockets) socket.destroy();
  await new Promise((resolve) => silent.close(resolve));
  await app.close();
  await broker.close();
});

describe('a server that never answers', () => {
  it('HTTP: a read goes on to the next URL; a write is NETWORK_ERROR (outcome unknown) and the next request goes on', async () => {
    const reads = new HttpApi(`${hung},${good}`, { requestTimeoutMs: 200 });
    expect((await reads.listTopics()).map((t) => t.topic)).toEqual(['t']);
    expect(reads.url).toBe(good);
    const writes = new HttpApi(`${hung},${good}`, { requestTimeoutMs: 200 });
    const refused = await writes.produce({ topic: 't', records: [{ key: null, value: Buffer.from('x') }] }).catch((err: unknown) => err);
    expect(refused).toMatchObject({ code: 'NETWORK_ERROR', message: expect.stringMatching(/did not answer within 200 ms.*may or may not have been carried out/) });
    expect((await writes.produce({ topic: 't', records: [{ key: null, value: Buffer.from('y') }] })).offsets).toEqual([{ partition: 0, offset: 0 }]);
    // A long-poll is given its maxWaitMs beyond the timeout.
    const poll = await reads.fetch({ topic: 't', partitions: [{ partition: 0, offset: 1 }], maxWaitMs: 400 });
    expect(poll.partitions[0]!.records).toEqual([]);
  });

  it('binary: a data socket whose upgrade is never answered opens at the next URL', async () => {
    const api = new BinaryApi(`${hung},${good}`, { requestTimeoutMs: 200 });
    try {
      await broker.produce({ topic: 't', records: [{ key: null, value: Buffer.from('z'), partition: 0 }] });
      const read = await api.fetch({ topic: 't', partitions: [{ partition: 0, offset: 0 }] });
      expect(read.partitions[0]!.records.map((r) => r.value!.toString())).toEqual(['z']);
      expect(api.url).toBe(good);
    } finally {
      api.close();
    }
  });

  it('waits for a broker at most the lease plus 1 s once a cluster broker named the lease, not requestTimeoutMs', async () => {
    const leased = createHttpServer(broker, { leaseMs: 300 });
    await leased.listen({ port: 0, host: '127.0.0.1' });
    const leasedUrl = `http://127.0.0.1:${(leased.server.address() as AddressInfo).port}`;
    // The default requestTimeoutMs (30 s): before any answer named a lease, that is the bound.
    const api = new HttpApi(`${leasedUrl},${hung}`);
    try {
      expect(api.answerTimeoutMs).toBe(30_000);
      expect((await api.listTopics()).map((t) => t.topic)).toEqual(['t']);
      expect(api.answerTimeoutMs).toBe(300 + LEASE_ANSWER_MARGIN_MS);
      // The broker that named it goes away; the next one never answers (paused): given up after 1.3 s.
      await leased.close();
      const began = performance.now();
      const failed = await api.listTopics().catch((err: unknown) => err);
      expect(failed).toMatchObject({ code: 'NETWORK_ERROR', message: expect.stringMatching(/did not answer within 1300 ms/) });
      expect(performance.now() - began).toBeLessThan(10_000);
    } finally {
      api.close();
      await leased.close();
    }
  });

  it('refuses a negative timeout, naming it', () => {
    expect(() => new HttpApi(good, { requestTimeoutMs: -1 })).toThrow(/requestTimeoutMs/);
  });
});

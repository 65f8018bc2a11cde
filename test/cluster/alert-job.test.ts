/**
 * Alert evaluation in cluster mode (docs/cluster.md, background work): the timer's passes run on one broker at a
 * time, the holder of the `job:alerts` lease, and another broker takes over when the holder closes (at once: it
 * gives the lease up) or stops renewing it (the lease expires, three intervals). Evaluations asked for run on every
 * broker, and two brokers evaluating one group at once raise and resolve its alert once, notified once.
 *
 * Each broker runs on its own manual clock, so a pass happens when the test advances that clock; leases expire by
 * PostgreSQL's clock. The test waits on what it can observe (passes ended, the lease's holder, notifications
 * received), each with a bounded deadline.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import fs from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import type { BrokerOptions } from '../../src/broker/options.js';
import { ManualClock } from '../../src/common/clock.js';
import { NamedLeases } from '../../src/cluster/leases.js';
import type { Monitor } from '../../src/monitoring/monitor.js';
import type { AlertNotification } from '../../src/protocol/monitoring-api.js';
import { startS3 } from '../helpers/s3.js';
import type { S3Server } from '../helpers/s3.js';
import { pgSchema, REDIS_URL, redisPrefix, uniqueName } from '../helpers/services.js';
import { tmpDir } from '../helpers/tmp.js';

const T0 = Date.UTC(2026, 0, 1);
/** The alert check interval: a lease taken at a pass lasts three of them (3 s by PostgreSQL's clock). */
const INTERVAL_MS = 1000;
const DEADLINE = { timeout: 15_000, interval: 20 };

let s3: S3Server;
beforeAll(async () => {
  s3 = await startS3();
});
afterAll(async () => {
  await s3?.close();
});
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** Passes of each broker's alert timer, by broker id, as its monitor reports them. */
type Passes = Record<number, { ran: number; skipped: number }>;

/** A fresh cluster (PostgreSQL schema, Redis prefix, bucket prefix), its brokers, and who holds `job:alerts`. */
async function cluster(): Promise<{
  open(brokerId: number, clock: ManualClock, monitoring?: BrokerOptions['monitoring']): Promise<Broker>;
  passes: Passes;
  holder(): Promise<number | null>;
}> {
  const schema = await pgSchema('alertjob');
  const redis = redisPrefix();
  const prefix = uniqueName('log');
  const passes: Passes = {};
  const observer = await NamedLeases.open({ pool: schema.pool(1), brokerId: 0 });
  closers.push(async () => {
    await schema.drop();
    await redis.drop();
  });
  return {
    passes,
    holder: async () => (await observer.holder('job:alerts'))?.brokerId ?? null,
    open: async (brokerId, clock, monitoring) => {
      const dataDir = tmpDir();
      passes[brokerId] = { ran: 0, skipped: 0 };
      const broker = await Broker.open({
        dataDir, catalog: schema.url, offsets: `${REDIS_URL}?keyPrefix=${redis.prefix}`,
        log: `s3://${s3.bucket}/${prefix}?endpoint=${encodeURIComponent(s3.endpoint)}`, brokerId, flushWindowMs: 5, clock,
        sessionCheckIntervalMs: 0, retentionCheckIntervalMs: 0, compactionIntervalMs: 0, webhookAllowPrivate: true, // sinks on 127.0.0.1
        monitoring: {
          alertCheckIntervalMs: INTERVAL_MS, onScheduledPass: ({ ran }) => void passes[brokerId]![ran ? 'ran' : 'skipped']++, ...monitoring,
        },
      });
      closers.push(async () => {
        await broker.close();
        fs.rmSync(dataDir, { recursive: true, force: true });
      });
      return broker;
    },
  };
}

/** A webhook receiver on loopback that keeps every notification. */
async function receiver(): Promise<{ url: string; accepted: AlertNotification[] }> {
  const accepted: AlertNotification[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      accepted.push(JSON.parse(body) as AlertNotification);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/alerts`, accepted };
}

/** Notifications a broker queued and its sinks did not acknowledge yet (nothing else shows them). */
const pending = (broker: Broker): number => (broker as unknown as { parts: { monitor: Monitor } }).parts.monitor.alerts.notifier.pending;

const rec = (value: string) => ({ key: null, value: Buffer.from(value), partition: 0 });

describe('alert evaluation in cluster mode', () => {
  it('runs the timer\'s passes on the job:alerts lease holder only; the other broker takes over when the lease expires or its holder closes', async () => {
    const c = await cluster();
    const clocks = { 1: new ManualClock(T0), 2: new ManualClock(T0) };
    const brokers = { 1: await c.open(1, clocks[1]), 2: await c.open(2, clocks[2]) };
    /** Advances a broker's clock one interval and waits for the pass that starts to end; answers whether it ran. */
    const pass = async (id: 1 | 2): Promise<boolean> => {
      const before = { ...c.passes[id]! };
      clocks[id].advance(INTERVAL_MS);
      await vi.waitFor(() => expect(c.passes[id]!.ran + c.passes[id]!.skipped).toBe(before.ran + before.skipped + 1), DEADLINE);
      return c.passes[id]!.ran > before.ran;
    };

    expect(await c.holder()).toBeNull();
    expect(await pass(1)).toBe(true); // takes the lease
    expect(await c.holder()).toBe(1);
    expect(await pass(2)).toBe(false);
    // A sink added on one broker is learned by the other at its next pass, run or skipped.
    const sink = await brokers[2].addAlertSink('http://127.0.0.1:1/alerts');
    expect(await pass(1)).toBe(true); // renews it
    expect(await brokers[1].listAlertSinks()).toEqual([sink]);
    const other = await brokers[1].addAlertSink('http://127.0.0.1:2/alerts');
    expect(await pass(2)).toBe(false);
    expect(await brokers[2].listAlertSinks()).toEqual([sink, other]);
    expect(c.passes).toEqual({ 1: { ran: 2, skipped: 0 }, 2: { ran: 0, skipped: 2 } });

    // Broker 1's timer stops (its clock does not move): its lease expires within three intervals, then broker 2's
    // next pass takes it, and broker 1's next pass finds it taken.
    await vi.waitFor(async () => expect(await c.holder()).toBeNull(), DEADLINE);
    expect(await pass(2)).toBe(true);
    expect(await c.holder()).toBe(2);
    expect(await pass(1)).toBe(false);
    expect(await pass(2)).toBe(true);

    // Broker 2 closes: it gives the lease up, and broker 1's next pass takes it without waiting for an expiry.
    await brokers[2].close();
    expect(await c.holder()).toBeNull();
    expect(await pass(1)).toBe(true);
    expect(await c.holder()).toBe(1);
    expect(c.passes).toEqual({ 1: { ran: 3, skipped: 1 }, 2: { ran: 2, skipped: 2 } });
  });

  it('two brokers evaluating one group at once raise its alert once and resolve it once, each notified once', async () => {
    const c = await cluster();
    const clocks = [new ManualClock(T0), new ManualClock(T0)];
    const a = await c.open(1, clocks[0]!, { alertCheckIntervalMs: 0 });
    const sink = await receiver();
    await a.addAlertSink(sink.url);
    const b = await c.open(2, clocks[1]!, { alertCheckIntervalMs: 0 });
    await a.createTopic({ topic: 't', partitions: 1, config: { retentionMs: -1 } });
    await a.subscribe({ groupId: 'g', topic: 't', startPolicy: 'earliest', stallMs: 1000 });
    await a.commitOffsets({ groupId: 'g', topic: 't', offsets: [{ partition: 0, offset: 0 }] });
    await a.produce({ topic: 't', records: [rec('x'), rec('y')] });
    const both = () => Promise.all([a.evaluateAlerts(), b.evaluateAlerts()]);
    await both(); // each sees the records unread from now on its clock
    for (const clock of clocks) clock.advance(1000);

    await both(); // each finds the group stalled
    const raised = await a.listAlerts({ active: true });
    expect(raised.map((x) => [x.kind, x.groupId])).toEqual([['consumer-stalled', 'g']]);
    expect(await b.listAlerts({ active: true })).toEqual(raised);
    await a.commitOffsets({ groupId: 'g', topic: 't', offsets: [{ partition: 0, offset: 2 }] });
    await both(); // each finds it resolved
    expect(await a.listAlerts({ active: true })).toEqual([]);
    expect((await b.listAlerts()).map((x) => [x.id, x.resolvedAt !== null])).toEqual([[raised[0]!.id, true]]);

    await vi.waitFor(() => expect(pending(a) + pending(b)).toBe(0), DEADLINE);
    expect(sink.accepted.map((n) => [n.event, n.alert.id])).toEqual([['raised', raised[0]!.id], ['resolved', raised[0]!.id]]);
  });

  it('a broker taking the lease over takes in the alerts the holder raised, and resolves them once their condition clears', async () => {
    const c = await cluster();
    const clocks = { 1: new ManualClock(T0), 2: new ManualClock(T0) };
    const a = await c.open(1, clocks[1]);
    const b = await c.open(2, clocks[2]);
    const sink = await receiver();
    await a.addAlertSink(sink.url);
    await a.createTopic({ topic: 't', partitions: 1, config: { retentionMs: -1 } });
    await a.subscribe({ groupId: 'g', topic: 't', startPolicy: 'earliest', stallMs: INTERVAL_MS });
    await a.commitOffsets({ groupId: 'g', topic: 't', offsets: [{ partition: 0, offset: 0 }] });
    await a.produce({ topic: 't', records: [rec('x'), rec('y')] });
    // Broker 1's passes: the first sees the records unread, the second finds the group stalled and raises the alert.
    for (const ran of [1, 2]) {
      clocks[1].advance(INTERVAL_MS);
      await vi.waitFor(() => expect(c.passes[1]!.ran).toBe(ran), DEADLINE);
    }
    await vi.waitFor(() => expect(sink.accepted.map((n) => n.event)).toEqual(['raised']), DEADLINE);
    const alertId = sink.accepted[0]!.alert.id;
    await a.close();

    // The group catches up through broker 2, which does not know the alert: the commit evaluates nothing. Its next
    // pass takes the lease, takes the alert in, and resolves it.
    await b.commitOffsets({ groupId: 'g', topic: 't', offsets: [{ partition: 0, offset: 2 }] });
    clocks[2].advance(INTERVAL_MS);
    await vi.waitFor(() => expect(c.passes[2]!.ran).toBe(1), DEADLINE);
    expect(await b.listAlerts({ active: true })).toEqual([]);
    await vi.waitFor(() => expect(pending(b)).toBe(0), DEADLINE);
    expect(sink.accepted.map((n) => [n.event, n.alert.id])).toEqual([['raised', alertId], ['resolved', alertId]]);
  });
});

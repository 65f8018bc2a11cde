/**
 * Alert notifications: each raise and resolve is POSTed to every sink once, in order, retried with backoff on
 * the broker's clock while the receiver fails, without holding up the broker.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { ManualClock } from '../../src/common/clock.js';
import type { AlertNotification } from '../../src/protocol/monitoring-api.js';
import { asyncCodeOf } from '../helpers/errors.js';
import { tmpDir } from '../helpers/tmp.js';

const T0 = Date.UTC(2026, 0, 1);
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A receiver on loopback answering 500 to its first `failures` requests, then 204; keeps what it accepted. */
async function receiver(failures: number): Promise<{ url: string; accepted: AlertNotification[]; attempts: () => number }> {
  const accepted: AlertNotification[] = [];
  let attempts = 0;
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      attempts++;
      if (attempts <= failures) return res.writeHead(500).end('not now');
      accepted.push(JSON.parse(body) as AlertNotification);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/alerts`, accepted, attempts: () => attempts };
}

describe('alert notifications', () => {
  it('POSTs each raise and resolve once, in order, surviving a receiver that fails twice', async () => {
    const clock = new ManualClock(T0);
    const broker = await Broker.open({
      dataDir: tmpDir(), clock, sessionCheckIntervalMs: 0, retentionCheckIntervalMs: 0, compactionIntervalMs: 0, webhookAllowPrivate: true,
      monitoring: { alertCheckIntervalMs: 0, notifications: { backoff: { initialMs: 1000, maxMs: 5000 } } },
    });
    closers.push(() => broker.close());
    const sink = await receiver(2);
    const added = await broker.addAlertSink(sink.url);
    expect(await broker.addAlertSink(sink.url)).toEqual(added); // once per URL
    expect(await broker.listAlertSinks()).toEqual([added]);

    await broker.createTopic({ topic: 't', partitions: 1, config: { retentionMs: -1 } });
    await broker.subscribe({ groupId: 'g', topic: 't', startPolicy: 'earliest', stallMs: 1000 });
    await broker.commitOffsets({ groupId: 'g', topic: 't', offsets: [{ partition: 0, offset: 0 }] });
    await broker.produce({ topic: 't', records: [{ key: null, value: Buffer.from('a') }, { key: null, value: Buffer.from('b') }] });
    await broker.evaluateAlerts();
    clock.advance(1000);
    await broker.evaluateAlerts(); // raised
    await broker.commitOffsets({ groupId: 'g', topic: 't', offsets: [{ partition: 0, offset: 1 }] });
    expect((await broker.listAlerts()).map((a) => a.resolvedAt)).toEqual([T0 + 1000]); // the commit resolved it
    clock.advance(1000);
    await broker.evaluateAlerts(); // raised again: a second episode
    expect((await broker.listAlerts()).map((a) => [a.kind, a.resolvedAt !== null])).toEqual([['consumer-stalled', false], ['consumer-stalled', true]]);

    // The receiver fails twice: the notifier backs off on the clock (1 s, then 2 s) and sends the same event again.
    for (const wait of [1000, 2000]) {
      await vi.waitFor(() => expect(clock.sleeping).toBe(1));
      clock.advance(wait);
    }
    await vi.waitFor(() => expect(sink.accepted).toHaveLength(3));
    expect(sink.attempts()).toBe(5);
    const [first, second, third] = sink.accepted;
    expect([first!.event, second!.event, third!.event]).toEqual(['raised', 'resolved', 'raised']);
    expect(first!.alert).toMatchObject({ kind: 'consumer-stalled', groupId: 'g', topic: 't', partition: 0, resolvedAt: null });
    expect(second!.alert.id).toBe(first!.alert.id);
    expect(second!.alert.resolvedAt).not.toBeNull();
    expect(third!.alert.id).toBeGreaterThan(first!.alert.id);

    // A URL's password is stored for the POSTs but never shown; adding a URL again uses no id.
    const secret = await broker.addAlertSink('http://ops:s3cret@127.0.0.1:1/alerts');
    expect(secret).toMatchObject({ id: added.id + 1, url: 'http://ops:***@127.0.0.1:1/alerts' });
    await broker.removeAlertSink(secret.id);
    await broker.removeAlertSink(added.id);
    expect(await broker.listAlertSinks()).toEqual([]);
    expect(await asyncCodeOf(broker.removeAlertSink(0))).toBe('INVALID_REQUEST');
    expect(await asyncCodeOf(broker.removeAlertSink(added.id))).toBe('NOT_FOUND');
    expect(await asyncCodeOf(broker.addAlertSink('ftp://example.com'))).toBe('INVALID_REQUEST');
  });

  it('records who acknowledged an alert; the alert stays active until its condition clears', async () => {
    const clock = new ManualClock(T0);
    const broker = await Broker.open({ dataDir: tmpDir(), clock, retentionCheckIntervalMs: 0, webhookAllowPrivate: true, monitoring: { alertCheckIntervalMs: 0 } });
    closers.push(() => broker.close());
    await broker.createTopic({ topic: 't', partitions: 1, config: { retentionMs: 1000 } });
    await broker.subscribe({ groupId: 'g', topic: 't', startPolicy: 'earliest' });
    await broker.produce({ topic: 't', records: [{ key: null, value: Buffer.from('a') }] });
    clock.advance(2000);
    await broker.enforceRetention('t');
    const [alert] = await broker.listAlerts({ active: true, groupId: 'g' });
    expect(alert).toMatchObject({ kind: 'data-lost', acknowledgedAt: null, acknowledgedBy: null });
    clock.advance(5);
    const acked = await broker.acknowledgeAlert({ id: alert!.id, requestedBy: 'alice@ops' });
    expect(acked).toMatchObject({ id: alert!.id, acknowledgedAt: T0 + 2005, acknowledgedBy: 'alice@ops', resolvedAt: null });
    expect(await broker.listAlerts({ active: true })).toEqual([acked]);
    // Who saw it first stays.
    clock.advance(5);
    expect(await broker.acknowledgeAlert({ id: alert!.id, requestedBy: 'bob@ops' })).toEqual(acked);
    expect(await asyncCodeOf(broker.acknowledgeAlert({ id: alert!.id, requestedBy: ' ' }))).toBe('INVALID_REQUEST');
    expect(await asyncCodeOf(broker.acknowledgeAlert({ id: 999 }))).toBe('NOT_FOUND');
    expect(await asyncCodeOf(broker.listAlerts({ limit: 0 }))).toBe('INVALID_REQUEST');
  });

  it('notifies the alerts of a deleted group as resolved', async () => {
    const clock = new ManualClock(T0);
    const broker = await Broker.open({ dataDir: tmpDir(), clock, retentionCheckIntervalMs: 0, webhookAllowPrivate: true, monitoring: { alertCheckIntervalMs: 0 } });
    closers.push(() => broker.close());
    const sink = await receiver(0);
    await broker.addAlertSink(sink.url);
    await broker.createTopic({ topic: 't', partitions: 1, config: { retentionMs: 1000 } });
    await broker.subscribe({ groupId: 'g', topic: 't', startPolicy: 'earliest' });
    await broker.produce({ topic: 't', records: [{ key: null, value: Buffer.from('a') }] });
    clock.advance(2000);
    await broker.enforceRetention('t');
    await broker.deleteGroup('g');
    await vi.waitFor(() => expect(sink.accepted.map((n) => `${n.event} ${n.alert.kind}`)).toEqual(['raised data-lost', 'resolved data-lost']));
    expect(sink.accepted[1]!.alert.resolvedAt).toBe(T0 + 2000);
    expect(await broker.listAlerts()).toEqual([]);
  });
});

/**
 * `GET /events` (docs/monitoring.md, "Console: live") over real HTTP on loopback: the changes a produce, a commit, an
 * alert raised and acknowledged, a topic and a group bring arrive, coalesced; a principal hears only about what it may
 * describe; the streams are capped, kept alive by heartbeats, and ended by the server's close.
 */
import { performance } from 'node:perf_hooks';
import { describe, expect, it, vi } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { HttpApi } from '../../src/client/http-api.js';
import { ManualClock } from '../../src/common/clock.js';
import { createHttpServer } from '../../src/server/http-server.js';
import { serveSecured } from '../helpers/secured-broker.js';
import { tmpDir } from '../helpers/tmp.js';
import { changesOf, openEvents } from '../helpers/event-stream.js';

const record = (value: string) => ({ key: null, value: Buffer.from(value) });
const wait = { timeout: 5000, interval: 20 };

describe('GET /events', () => {
  it('tells of records, commits, alerts raised and acknowledged, topics and groups, each change once per message', async () => {
    const clock = new ManualClock(Date.parse('2026-01-01T00:00:00Z'));
    const { url, broker } = await serveSecured({ insecure: true, broker: { clock, monitoring: { alertCheckIntervalMs: 0 } } });
    const api = new HttpApi(url);
    const events = await openEvents(url);
    await api.createTopic({ topic: 'edits', partitions: 2 });
    await vi.waitFor(() => expect(changesOf(events)).toContainEqual({ type: 'topic', topic: 'edits', change: 'created' }), wait);

    await api.produce({ topic: 'edits', records: [record('a'), record('b')].map((r, i) => ({ ...r, partition: i, timestamp: clock.now() - 60_000 })) });
    await vi.waitFor(() => expect(changesOf(events)).toContainEqual({ type: 'records', topic: 'edits' }), wait);

    await api.subscribe({ groupId: 'indexer', topic: 'edits', startPolicy: 'earliest', stallMs: 1000 });
    await api.commitOffsets({ groupId: 'indexer', topic: 'edits', offsets: [{ partition: 0, offset: 0 }, { partition: 1, offset: 0 }] });
    await vi.waitFor(() => {
      expect(changesOf(events)).toContainEqual({ type: 'group', groupId: 'indexer', change: 'changed' });
      expect(changesOf(events)).toContainEqual({ type: 'offsets', groupId: 'indexer', topic: 'edits' });
    }, wait);

    // No commit for longer than stallMs: the next evaluation raises consumer-stalled on both partitions.
    clock.advance(2000);
    await broker.evaluateAlerts();
    const alerts = await api.listAlerts({ active: true });
    expect(alerts.map((a) => a.kind)).toEqual(['consumer-stalled', 'consumer-stalled']);
    await vi.waitFor(() => {
      for (const a of alerts) expect(changesOf(events)).toContainEqual({ type: 'alert', groupId: 'indexer', topic: 'edits', alertId: a.id, change: 'raised' });
    }, wait);
    await api.acknowledgeAlert({ id: alerts[0]!.id, requestedBy: 'test' });
    await vi.waitFor(() => expect(changesOf(events)).toContainEqual(
      { type: 'alert', groupId: 'indexer', topic: 'edits', alertId: alerts[0]!.id, change: 'acknowledged' }), wait);
    // A commit to the high watermark resolves them.
    await api.commitOffsets({ groupId: 'indexer', topic: 'edits', offsets: [{ partition: 0, offset: 1 }, { partition: 1, offset: 1 }] });
    await vi.waitFor(() => expect(changesOf(events).filter((c) => c.type === 'alert' && c.change === 'resolved')).toHaveLength(2), wait);

    await api.deleteGroup('indexer');
    await api.deleteTopic('edits');
    await vi.waitFor(() => {
      expect(changesOf(events)).toContainEqual({ type: 'group', groupId: 'indexer', change: 'deleted' });
      expect(changesOf(events)).toContainEqual({ type: 'topic', topic: 'edits', change: 'deleted' });
    }, wait);
    for (const m of events.messages) expect(new Set(m.changes.map((c) => JSON.stringify(c))).size).toBe(m.changes.length);
    events.close();
  });

  it('sends the changes of a burst together, at most one message per coalescing window', async () => {
    const { url, broker } = await serveSecured({ insecure: true, server: { events: { coalesceMs: 200 } } });
    await broker.createTopic({ topic: 'a', partitions: 1 });
    await broker.createTopic({ topic: 'b', partitions: 1 });
    const events = await openEvents(url);
    const started = performance.now();
    for (let i = 0; i < 60; i++) await broker.produce({ topic: i % 2 === 0 ? 'a' : 'b', records: [record(`${i}`)] });
    const producedMs = performance.now() - started;
    await vi.waitFor(() => expect(changesOf(events)).toEqual(expect.arrayContaining([{ type: 'records', topic: 'a' }, { type: 'records', topic: 'b' }])), wait);
    // 60 produces: the first message at once, then at most one per window, the last up to a window after them; each
    // names a topic once.
    expect(events.messages.length).toBeLessThanOrEqual(Math.floor(producedMs / 200) + 2);
    expect(events.messages.length).toBeLessThan(60);
    for (const [i, m] of events.messages.entries()) {
      expect(m.changes.length).toBeLessThanOrEqual(2);
      if (i > 0) expect(m.at - events.messages[i - 1]!.at).toBeGreaterThanOrEqual(100); // the window, less what the network may shift
    }
    events.close();
  });

  it('tells a user only of the topics and groups it may describe', async () => {
    const { url, broker } = await serveSecured();
    const ops = new HttpApi(url, { token: (await new HttpApi(url, { token: '' }).createUser('ops')).token });
    const { token } = await ops.createUser('viewer');
    await ops.addAcl({ principal: 'viewer', resourceType: 'topic', resourceName: 'public', operation: 'describe', patternType: 'literal', permission: 'allow' });
    await ops.createTopic({ topic: 'public', partitions: 1 });
    await ops.createTopic({ topic: 'private', partitions: 1 });
    const events = await openEvents(url, token);
    await broker.produce({ topic: 'private', records: [record('secret')] });
    await broker.produce({ topic: 'public', records: [record('news')] });
    await vi.waitFor(() => expect(changesOf(events)).toContainEqual({ type: 'records', topic: 'public' }), wait);
    expect(JSON.stringify(changesOf(events))).not.toContain('private');
    await expect(openEvents(url, 'onelog_0000000000000000_wrong')).rejects.toMatchObject({ status: 401 });
    events.close();
  });

  it('refuses bounds out of range when the server is built', async () => {
    const broker = await Broker.open({ dataDir: tmpDir() });
    try {
      expect(() => createHttpServer(broker, { events: { maxStreams: 0 } })).toThrow(expect.objectContaining({
        code: 'INVALID_CONFIG', message: 'events.maxStreams must be an integer from 1 to 100000, got 0',
      }));
    } finally {
      await broker.close();
    }
  });

  it('refuses a stream past the cap until one closes, sends heartbeats, and ends every stream when the server closes', async () => {
    const served = await serveSecured({ insecure: true, server: { events: { maxStreams: 2, heartbeatMs: 50 } } });
    const first = await openEvents(served.url);
    const second = await openEvents(served.url);
    const refused = await openEvents(served.url).catch((err: Error & { status: number }) => err);
    expect(refused).toMatchObject({ status: 503 });
    expect((refused as Error).message).toContain('RESOURCE_EXHAUSTED');
    first.close();
    const third = await vi.waitFor(() => openEvents(served.url), wait);
    await vi.waitFor(() => expect(second.text).toContain(': heartbeat'), wait);

    // The close ends the streams at once (the server then waits only for connections with no stream).
    const stopping = performance.now();
    const stopped = served.stop();
    await Promise.all([second.ended, third.ended]);
    expect(performance.now() - stopping).toBeLessThan(1000);
    await stopped;
  });
});

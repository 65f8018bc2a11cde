/** Deleting a topic: its records, files, subscriptions, committed offsets and alerts go; groups rebalance without it. */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { ManualClock } from '../../src/common/clock.js';
import { openSqliteCatalog } from '../../src/catalog/sqlite.js';
import { createHttpServer } from '../../src/server/http-server.js';
import type { OnelogError } from '../../src/protocol/errors.js';
import { tmpDir } from '../helpers/tmp.js';
import { asyncCodeOf } from '../helpers/errors.js';
import { readEdits } from '../helpers/wikiticker.js';

const open: Broker[] = [];
async function broker(dataDir = tmpDir(), clock = new ManualClock(Date.UTC(2015, 8, 13))): Promise<Broker> {
  const b = await Broker.open({ dataDir, clock });
  open.push(b);
  return b;
}
afterEach(async () => {
  for (const b of open.splice(0)) await b.close();
});

const EDITS = readEdits().slice(0, 600);

/** Produces the first `count` edits to `topic`, keyed as onelog produce keys them. */
async function produceEdits(b: Broker, topic: string, count = EDITS.length): Promise<void> {
  await b.produce({ topic, records: EDITS.slice(0, count).map((e) => ({ key: Buffer.from(e.key), value: Buffer.from(e.value), timestamp: e.timestamp })) });
}

const partitionDirs = (dataDir: string): string[] => fs.readdirSync(path.join(dataDir, 'log')).filter((n) => fs.statSync(path.join(dataDir, 'log', n)).isDirectory()).sort();

describe('deleting a topic', () => {
  it('deletes its records, files, subscriptions and committed offsets; the name starts over empty', async () => {
    const dataDir = tmpDir();
    const b = await broker(dataDir);
    await b.createTopic({ topic: 'edits', partitions: 3, config: { retentionMs: -1 } });
    await b.createTopic({ topic: 'edits-0', partitions: 1 }); // its directory is edits-0-0: a near name that must stay
    await produceEdits(b, 'edits');
    await produceEdits(b, 'edits-0', 10);
    await b.subscribe({ groupId: 'readers', topic: 'edits', startPolicy: 'earliest' });
    await b.commitOffsets({ groupId: 'readers', topic: 'edits', offsets: [{ partition: 1, offset: 50 }] });
    await b.subscribe({ groupId: 'readers', topic: 'edits-0', startPolicy: 'earliest' });
    await b.commitOffsets({ groupId: 'readers', topic: 'edits-0', offsets: [{ partition: 0, offset: 7 }] });

    expect(await b.deleteTopic('edits')).toEqual({ topic: 'edits', partitions: 3, groups: ['readers'] });

    expect(await asyncCodeOf(b.describeTopic('edits'))).toBe('UNKNOWN_TOPIC');
    expect(await asyncCodeOf(b.produce({ topic: 'edits', records: [{ key: null, value: Buffer.from('x') }] }))).toBe('UNKNOWN_TOPIC');
    expect(await asyncCodeOf(b.fetch({ topic: 'edits', partitions: [{ partition: 0, offset: 0 }] }))).toBe('UNKNOWN_TOPIC');
    expect(await asyncCodeOf(b.deleteTopic('edits'))).toBe('UNKNOWN_TOPIC');
    expect((await b.listTopics()).map((t) => t.topic)).toEqual(['edits-0']);
    expect(partitionDirs(dataDir)).toEqual(['edits-0-0']);
    // The group keeps its other subscription and offsets; nothing of the deleted topic.
    expect(await b.committedOffsets('readers')).toMatchObject([{ topic: 'edits-0', partition: 0, offset: 7 }]);
    expect((await b.describeGroup('readers')).subscriptions.map((s) => s.topic)).toEqual(['edits-0']);

    // Created again, the topic is empty and the group starts where its start policy says, not at offset 50.
    await b.createTopic({ topic: 'edits', partitions: 3 });
    expect((await b.describeTopic('edits')).partitions.map((p) => p.highWatermark)).toEqual([0, 0, 0]);
    await produceEdits(b, 'edits', 20);
    const resumed = await b.subscribe({ groupId: 'readers', topic: 'edits', startPolicy: 'earliest' });
    expect(resumed.positions.map((p) => p.offset)).toEqual([0, 0, 0]);
  });

  it('survives a restart; a deletion a crash cut short after the catalog forgot the topic is finished at start', async () => {
    const dataDir = tmpDir();
    const b = await broker(dataDir);
    for (const topic of ['gone', 'cut']) {
      await b.createTopic({ topic, partitions: 2 });
      await produceEdits(b, topic, 100);
      await b.subscribe({ groupId: 'g', topic, startPolicy: 'earliest' });
      await b.commitOffsets({ groupId: 'g', topic, offsets: [{ partition: 0, offset: 10 }] });
    }
    await b.deleteTopic('gone');
    await b.close();
    open.splice(0);
    // What a crash right after the catalog transaction of deleting 'cut' leaves: its files and offsets.
    const catalog = await openSqliteCatalog(path.join(dataDir, 'catalog.sqlite'));
    await catalog.topics.delete('cut', 2, Date.now());
    await catalog.close();
    expect(partitionDirs(dataDir)).toEqual(['cut-0', 'cut-1']);

    const again = await broker(dataDir);
    expect(await again.listTopics()).toEqual([]);
    expect(partitionDirs(dataDir)).toEqual([]);
    expect(await again.committedOffsets('g')).toEqual([]);
    await again.createTopic({ topic: 'cut', partitions: 2 });
    expect((await again.describeTopic('cut')).partitions.map((p) => p.highWatermark)).toEqual([0, 0]);
  });

  it('a commit racing the deletion is refused or removed with it: nothing committed survives', async () => {
    const b = await broker();
    for (let round = 0; round < 12; round++) {
      await b.createTopic({ topic: 'race', partitions: 2 });
      await produceEdits(b, 'race', 20);
      const commit = (i: number) => b.commitOffsets({ groupId: 'g', topic: 'race', offsets: [{ partition: i % 2, offset: 5 }] });
      const turns = async (n: number) => { for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve)); };
      // Commits before and after the deletion starts, a varying number of event-loop turns apart.
      const before = Array.from({ length: 4 }, (_, i) => turns(round % 3).then(() => commit(i)));
      await turns(round % 4);
      const deletion = b.deleteTopic('race');
      const after = Array.from({ length: 4 }, (_, i) => turns(round % 5).then(() => commit(i)));
      const outcomes = await Promise.allSettled([...before, ...after]);
      await deletion;
      for (const o of outcomes) if (o.status === 'rejected') expect((o.reason as OnelogError).code).toBe('UNKNOWN_TOPIC');
      expect(await b.committedOffsets('g')).toEqual([]);
    }
  });

  it('rebalances the groups consuming it: their members keep their other topics', async () => {
    const b = await broker();
    await b.createTopic({ topic: 'edits', partitions: 2 });
    await b.createTopic({ topic: 'other', partitions: 2 });
    const m = await b.joinGroup({ groupId: 'g', topics: ['edits', 'other'], startPolicy: 'earliest' });
    expect(m.assignment.map((p) => `${p.topic}/${p.partition}`)).toEqual(['edits/0', 'edits/1', 'other/0', 'other/1']);

    await b.deleteTopic('edits');
    const owned = m.assignment.map((p) => ({ topic: p.topic, partition: p.partition }));
    const after = await b.heartbeat({ groupId: 'g', memberId: m.memberId, generationId: m.generationId, owned });
    expect(after.generationId).toBeGreaterThan(m.generationId);
    expect(after.assignment.map((p) => `${p.topic}/${p.partition}`)).toEqual(['other/0', 'other/1']);
    // Created again, the topic is assigned to the member still subscribed to it at the next rebalance, as in Kafka.
    const joined = await b.joinGroup({ groupId: 'g', topics: ['other'], startPolicy: 'earliest' });
    expect(joined.assignment.some((p) => p.topic === 'edits')).toBe(false);
  });

  it('resolves the open alerts about it', async () => {
    const b = await broker();
    await b.createTopic({ topic: 'edits', partitions: 1, config: { retentionMs: -1 } });
    await produceEdits(b, 'edits', 100);
    await b.subscribe({ groupId: 'g', topic: 'edits', startPolicy: 'earliest' });
    await b.deleteRecords({ topic: 'edits', partition: 0, beforeOffset: 40 });
    expect(await b.listAlerts({ active: true })).toMatchObject([{ kind: 'data-lost', topic: 'edits' }]);
    await b.deleteTopic('edits');
    expect(await b.listAlerts({ active: true })).toEqual([]);
    expect((await b.listAlerts())[0]).toMatchObject({ kind: 'data-lost', topic: 'edits', resolvedAt: expect.any(Number) });
  });

  it('over HTTP, names up to Kafka\'s 249 characters; its metrics series go with it', async () => {
    const b = await broker();
    const app = createHttpServer(b);
    try {
      const long = 'edits.'.padEnd(249, 'x');
      expect((await app.inject({ method: 'POST', url: '/topics', payload: { topic: long, partitions: 1 } })).statusCode).toBe(201);
      await produceEdits(b, long, 5);
      expect(await b.metrics.scrape()).toContain(`onelog_produced_records_total{topic="${long}"} 5`);
      const deleted = await app.inject({ method: 'DELETE', url: `/topics/${long}` });
      expect([deleted.statusCode, deleted.json()]).toEqual([200, { topic: long, partitions: 1, groups: [] }]);
      expect(await b.metrics.scrape()).not.toContain(long);
      const again = await app.inject({ method: 'DELETE', url: `/topics/${long}` });
      expect([again.statusCode, again.json().code]).toEqual([404, 'UNKNOWN_TOPIC']);
      const bad = await app.inject({ method: 'DELETE', url: '/topics/bad%20name' });
      expect([bad.statusCode, bad.json().code]).toEqual([400, 'INVALID_TOPIC']);
    } finally {
      await app.close();
    }
  });

  it('refuses a topic a retry policy uses or is on (TOPIC_IN_USE), and deletes it once the group is gone', async () => {
    const b = await broker();
    await b.createTopic({ topic: 'edits', partitions: 1 });
    await b.subscribe({ groupId: 'g', topic: 'edits', retry: { delaysMs: [1000], maxAttempts: 2, deadLetterTopic: 'edits-dead' } });
    const tiers = (await b.listTopics()).map((t) => t.topic).filter((t) => t !== 'edits' && t !== 'edits-dead');
    expect(tiers).toHaveLength(1);
    for (const topic of ['edits', 'edits-dead', tiers[0]!]) expect(await asyncCodeOf(b.deleteTopic(topic))).toBe('TOPIC_IN_USE');
    expect((await b.listTopics())).toHaveLength(3);
    await b.deleteGroup('g');
    for (const topic of ['edits', 'edits-dead', tiers[0]!]) await b.deleteTopic(topic);
    expect(await b.listTopics()).toEqual([]);
  });
});

/**
 * Issue 16: the Wikipedia edits through the cluster give the same per-key order and the same consumer results as the
 * embedded default. Every edit of the real data set (examples/data, keyed channel|page) is produced, keyed, in
 * requests of 500 in file order, to a topic of 4 partitions: once on the embedded default (one broker, a data
 * directory), once in cluster mode (PostgreSQL, Redis, s3rver), produced through broker A and read and consumed
 * through broker B of the same cluster. Both answer the same partitions and offsets, read back the same records, and a
 * consumer group (all its requests on one broker) aggregates the same totals as the file itself.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import { Broker } from '../../src/broker/broker.js';
import type { BrokerOptions } from '../../src/broker/options.js';
import { ManualClock } from '../../src/common/clock.js';
import { partitionForKey } from '../../src/protocol/murmur2.js';
import { startS3 } from '../helpers/s3.js';
import type { S3Server } from '../helpers/s3.js';
import { testCluster } from '../helpers/cluster.js';
import { tmpDir } from '../helpers/tmp.js';
import { editsByPartition, readEdits } from '../helpers/wikiticker.js';
import type { Edit } from '../helpers/wikiticker.js';

const TOPIC = 'wikiticker';
const PARTITIONS = 4;
const PRODUCE_BATCH = 500;
const GROUP = 'edit-totals';
const T0 = Date.UTC(2024, 0, 1);

const EDITS = readEdits();

/** A record as read back: what the producer sent, at its offset. */
interface ReadRecord {
  offset: number;
  key: string;
  value: string;
  timestamp: number;
}

/** Totals a consumer computes from the edits' fields. */
interface EditTotals {
  /** channel -> edits, characters added and deleted, robot edits */
  channels: Record<string, { edits: number; added: number; deleted: number; robotEdits: number }>;
  /** channel|page -> edits, characters added and deleted, net delta, and who made the last edit (order-sensitive) */
  pages: Record<string, { edits: number; added: number; deleted: number; delta: number; lastUser: string; lastTime: string }>;
}

interface WikiEdit {
  time: string;
  channel: string;
  page: string;
  user: string;
  isRobot: boolean;
  added: number;
  deleted: number;
  delta: number;
}

function emptyTotals(): EditTotals {
  return { channels: {}, pages: {} };
}

/** Adds one edit (its key and JSON value, as stored) to the totals. */
function addEdit(totals: EditTotals, key: string, value: string): void {
  const e = JSON.parse(value) as WikiEdit;
  const c = (totals.channels[e.channel] ??= { edits: 0, added: 0, deleted: 0, robotEdits: 0 });
  c.edits++;
  c.added += e.added;
  c.deleted += e.deleted;
  if (e.isRobot) c.robotEdits++;
  const p = (totals.pages[key] ??= { edits: 0, added: 0, deleted: 0, delta: 0, lastUser: '', lastTime: '' });
  p.edits++;
  p.added += e.added;
  p.deleted += e.deleted;
  p.delta += e.delta;
  p.lastUser = e.user;
  p.lastTime = e.time;
}

/** What one configuration answered. */
interface Outcome {
  /** Where each produced record landed, in file order. */
  produced: Array<{ partition: number; offset: number }>;
  /** Per partition: the records read back from offset 0, and the high watermark. */
  partitions: ReadRecord[][];
  highWatermarks: number[];
  /** What the consumer group aggregated, and the offsets it committed per partition. */
  totals: EditTotals;
  committed: number[];
  /** Fetch rounds the group member took (for the report only). */
  rounds: number;
}

/** Produces every edit through `producer`, in requests of {@link PRODUCE_BATCH}, awaiting each before the next. */
async function produceAll(producer: Broker): Promise<Outcome['produced']> {
  const produced: Outcome['produced'] = [];
  for (let i = 0; i < EDITS.length; i += PRODUCE_BATCH) {
    const chunk = EDITS.slice(i, i + PRODUCE_BATCH);
    const result = await producer.produce({
      topic: TOPIC,
      records: chunk.map((e) => ({ key: Buffer.from(e.key, 'utf8'), value: Buffer.from(e.value, 'utf8'), timestamp: e.timestamp })),
    });
    expect(result.offsets).toHaveLength(chunk.length);
    produced.push(...result.offsets);
  }
  return produced;
}

/** Reads every partition from offset 0 to its high watermark without a group. */
async function readAll(reader: Broker): Promise<Pick<Outcome, 'partitions' | 'highWatermarks'>> {
  const partitions: ReadRecord[][] = [];
  const highWatermarks: number[] = [];
  for (let partition = 0; partition < PARTITIONS; partition++) {
    const records: ReadRecord[] = [];
    let offset = 0;
    for (;;) {
      const r = await reader.fetch({ topic: TOPIC, partitions: [{ partition, offset }], maxRecords: 2000, maxBytes: 4 * 1024 * 1024 });
      const p = r.partitions[0]!;
      expect(p.error).toBeUndefined();
      for (const rec of p.records) {
        records.push({ offset: rec.offset, key: rec.key!.toString('utf8'), value: rec.value!.toString('utf8'), timestamp: rec.timestamp });
      }
      if (p.nextOffset >= p.highWatermark) {
        highWatermarks.push(p.highWatermark);
        break;
      }
      // Below the high watermark a fetch always reads something: an empty answer there would loop forever.
      expect(p.records.length).toBeGreaterThan(0);
      offset = p.nextOffset;
    }
    partitions.push(records);
  }
  return { partitions, highWatermarks };
}

/**
 * One member of a fresh group joins on `consumer`, fetches with its member id and generation until every partition
 * is at its high watermark, aggregates every record and commits after each fetch; it heartbeats every few rounds.
 * Every group request goes to `consumer`.
 */
async function consumeAll(consumer: Broker): Promise<Pick<Outcome, 'totals' | 'committed' | 'rounds'>> {
  const member = await consumer.joinGroup({ groupId: GROUP, topics: [TOPIC], startPolicy: 'earliest', clientId: 'wiki-totals' });
  expect(member.state).toBe('Stable');
  expect(member.assignment.map((p) => [p.partition, p.offset]).sort((x, y) => x[0]! - y[0]!))
    .toEqual(Array.from({ length: PARTITIONS }, (_, p) => [p, 0]));
  const owned = member.assignment.map((p) => ({ topic: p.topic, partition: p.partition }));
  const positions = member.assignment.map((p) => ({ partition: p.partition, offset: p.offset! }));
  const totals = emptyTotals();
  let rounds = 0;
  for (;;) {
    rounds++;
    const r = await consumer.fetch({
      topic: TOPIC, groupId: GROUP, memberId: member.memberId, generationId: member.generationId,
      partitions: positions, maxRecords: 2000, maxBytes: 4 * 1024 * 1024,
    });
    expect(r.generationId).toBe(member.generationId);
    let read = 0;
    let caughtUp = true;
    const commits: Array<{ partition: number; offset: number }> = [];
    for (const p of r.partitions) {
      expect(p.error).toBeUndefined();
      const position = positions.find((x) => x.partition === p.partition)!;
      for (const rec of p.records) addEdit(totals, rec.key!.toString('utf8'), rec.value!.toString('utf8'));
      // Offsets are contiguous: no compaction, no deletion on this topic.
      if (p.records.length > 0) {
        expect(p.records.map((x) => x.offset)).toEqual(p.records.map((_, i) => position.offset + i));
        expect(p.nextOffset).toBe(position.offset + p.records.length);
        commits.push({ partition: p.partition, offset: p.nextOffset });
      }
      read += p.records.length;
      position.offset = p.nextOffset;
      if (p.nextOffset < p.highWatermark) caughtUp = false;
    }
    if (commits.length > 0) {
      await consumer.commitOffsets({ groupId: GROUP, topic: TOPIC, memberId: member.memberId, generationId: member.generationId, offsets: commits });
    }
    if (caughtUp) break;
    expect(read).toBeGreaterThan(0); // not caught up, yet nothing read: would loop forever
    if (rounds % 5 === 0) {
      const beat = await consumer.heartbeat({ groupId: GROUP, memberId: member.memberId, generationId: member.generationId, owned });
      expect(beat.generationId).toBe(member.generationId);
      expect(beat.assignment.map((p) => p.partition).sort()).toEqual(owned.map((p) => p.partition).sort());
    }
  }
  // Read back from the offset store: -1 for a partition never committed.
  const committed = new Array<number>(PARTITIONS).fill(-1);
  for (const o of await consumer.committedOffsets(GROUP)) {
    if (o.topic === TOPIC) committed[o.partition] = o.offset;
  }
  await consumer.leaveGroup({ groupId: GROUP, memberId: member.memberId });
  return { totals, committed, rounds };
}

/** Produce through `producer`, then read back and consume through `consumer`. */
async function run(producer: Broker, consumer: Broker): Promise<Outcome> {
  await producer.createTopic({ topic: TOPIC, partitions: PARTITIONS, config: { retentionMs: -1 } });
  const produced = await produceAll(producer);
  const read = await readAll(consumer);
  const consumed = await consumeAll(consumer);
  return { produced, ...read, ...consumed };
}

/** The first place two configurations' partitions differ, or null. */
function firstDifference(a: ReadRecord[][], b: ReadRecord[][]): string | null {
  if (a.length !== b.length) return `${a.length} partitions against ${b.length}`;
  for (let p = 0; p < a.length; p++) {
    const x = a[p]!;
    const y = b[p]!;
    for (let i = 0; i < Math.max(x.length, y.length); i++) {
      const l = x[i];
      const r = y[i];
      if (l === undefined || r === undefined || l.offset !== r.offset || l.key !== r.key || l.value !== r.value || l.timestamp !== r.timestamp) {
        return `partition ${p}, record ${i}: ${JSON.stringify(l)} against ${JSON.stringify(r)}`;
      }
    }
  }
  return null;
}

/** The values of each key in the order given. */
function valuesByKey(records: Iterable<{ key: string; value: string }>): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const r of records) {
    let list = out.get(r.key);
    if (list === undefined) out.set(r.key, (list = []));
    list.push(r.value);
  }
  return out;
}

/** The first key whose values differ from the file's order, or null. */
function firstKeyOutOfOrder(partitions: ReadRecord[][], file: Map<string, string[]>): string | null {
  const read = valuesByKey(partitions.flat());
  if (read.size !== file.size) return `${read.size} keys read against ${file.size} in the file`;
  for (const [key, values] of file) {
    const got = read.get(key);
    if (got === undefined) return `key ${key} never read`;
    if (got.length !== values.length) return `key ${key}: ${got.length} values read against ${values.length}`;
    const i = values.findIndex((v, j) => got[j] !== v);
    if (i >= 0) return `key ${key}, value ${i}: ${got[i]} against the file's ${values[i]}`;
  }
  return null;
}

/** The file's expected partitions: the edits of each partition (murmur2 of the key) in file order, offset = index. */
function expectedPartitions(edits: Edit[]): ReadRecord[][] {
  return editsByPartition(edits, PARTITIONS).map((list) => list.map((e, offset) => ({ offset, key: e.key, value: e.value, timestamp: e.timestamp })));
}

let s3: S3Server;
let embedded: Outcome;
let cluster: Outcome;
const runMs: { embedded: number; cluster: number } = { embedded: 0, cluster: 0 };

beforeAll(async () => {
  s3 = await startS3();

  // The embedded default: one broker on a data directory.
  const dataDir = tmpDir();
  const local = await Broker.open({ dataDir, clock: new ManualClock(T0) });
  try {
    const started = performance.now();
    embedded = await run(local, local);
    runMs.embedded = performance.now() - started;
  } finally {
    await local.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }

  // Cluster mode, built as test/cluster/cluster-broker.test.ts builds it: produced through a, read and consumed through b.
  const c = await testCluster(s3, 'wiki');
  const options = (brokerId: number): BrokerOptions => c.options(brokerId, { clock: new ManualClock(T0) });
  let a: Broker | undefined;
  let b: Broker | undefined;
  try {
    a = await Broker.open(options(1));
    b = await Broker.open(options(2));
    const started = performance.now();
    cluster = await run(a, b);
    runMs.cluster = performance.now() - started;
  } finally {
    await a?.close();
    await b?.close();
    await c.dispose();
  }
}, 180_000);

afterAll(async () => {
  await s3?.close();
});

describe(`the ${EDITS.length} Wikipedia edits, embedded default and cluster mode (produced on broker 1, consumed on broker 2)`, () => {
  it('uses the whole data set', () => {
    // The sampled file of 2015-09-12: every line is one edit.
    expect(EDITS.length).toBeGreaterThan(39_000);
    expect(new Set(EDITS.map((e) => e.key)).size).toBeLessThan(EDITS.length); // some pages are edited more than once
    console.info(`wikipedia equivalence: ${EDITS.length} edits; embedded ${Math.round(runMs.embedded)} ms, cluster ${Math.round(runMs.cluster)} ms; `
      + `group fetch rounds ${embedded.rounds} / ${cluster.rounds}`);
  });

  it('places every record in the partition of its key, at the same offsets on both', () => {
    // Compared record by record, naming the first difference (a diff of 39k entries takes vitest minutes).
    const misplaced = (o: Outcome) => o.produced.findIndex((x, i) => x.partition !== partitionForKey(Buffer.from(EDITS[i]!.key, 'utf8'), PARTITIONS));
    expect(embedded.produced).toHaveLength(EDITS.length);
    expect(misplaced(embedded)).toBe(-1);
    expect(cluster.produced).toHaveLength(EDITS.length);
    const differs = cluster.produced.findIndex((x, i) => x.partition !== embedded.produced[i]!.partition || x.offset !== embedded.produced[i]!.offset);
    expect(differs === -1 ? null : { edit: differs, cluster: cluster.produced[differs], embedded: embedded.produced[differs] }).toBeNull();
    // Each partition's offsets in file order are 0, 1, 2, ...
    const next = new Array<number>(PARTITIONS).fill(0);
    const outOfOrder = embedded.produced.findIndex((o) => o.offset !== next[o.partition]!++);
    expect(outOfOrder).toBe(-1);
  });

  it('reads back, per partition from offset 0, the same (key, value, timestamp) sequence on both, and the file\'s', () => {
    expect(firstDifference(cluster.partitions, embedded.partitions)).toBeNull();
    expect(firstDifference(embedded.partitions, expectedPartitions(EDITS))).toBeNull();
    expect(cluster.partitions.reduce((n, p) => n + p.length, 0)).toBe(EDITS.length);
  });

  it('keeps every key\'s values in file order', () => {
    const file = valuesByKey(EDITS);
    expect(firstKeyOutOfOrder(embedded.partitions, file)).toBeNull();
    expect(firstKeyOutOfOrder(cluster.partitions, file)).toBeNull();
  });

  it('answers the same high watermarks: each partition\'s count of edits', () => {
    const counts = editsByPartition(EDITS, PARTITIONS).map((p) => p.length);
    expect(embedded.highWatermarks).toEqual(counts);
    expect(cluster.highWatermarks).toEqual(counts);
    expect(counts.every((n) => n > 0)).toBe(true);
  });

  it('gives a consumer group the same totals on both, equal to the file\'s, and commits up to the high watermarks', () => {
    const file = emptyTotals();
    for (const e of EDITS) addEdit(file, e.key, e.value);
    expect(Object.keys(file.channels).length).toBeGreaterThan(1);
    expect(cluster.totals.channels).toEqual(embedded.totals.channels);
    expect(embedded.totals.channels).toEqual(file.channels);
    expect(cluster.totals.pages).toEqual(embedded.totals.pages);
    expect(embedded.totals.pages).toEqual(file.pages);
    expect(embedded.committed).toEqual(embedded.highWatermarks);
    expect(cluster.committed).toEqual(cluster.highWatermarks);
  });
});

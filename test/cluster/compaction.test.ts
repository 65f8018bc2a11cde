/**
 * Compaction of topics in object storage (src/log/objects/compactor.ts), on s3rver and the machine's PostgreSQL: the
 * Wikipedia edits keyed channel|page compacted on demand keep exactly the latest edit of each key at its offset, and
 * a second broker with an empty cache reads the same; tombstones are kept for deleteRetentionMs, then removed;
 * minCompactionLagMs holds young chunks back; the job under `job:compact` leaves the last chunk alone; a record
 * produced while a compaction runs is never lost, and a merge that wins the race makes the compaction stand back; a
 * property test over random logs (several key-map passes included).
 */
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { ManualClock } from '../../src/common/clock.js';
import { compactPartition } from '../../src/log/objects/compactor.js';
import type { PartitionCompactionSettings } from '../../src/log/objects/compactor.js';
import { mergePartition } from '../../src/log/objects/merger.js';
import { ObjectLogStore } from '../../src/log/objects/object-log.js';
import { S3ObjectStore } from '../../src/log/objects/object-store.js';
import { parseS3Url } from '../../src/log/objects/s3-location.js';
import { PostgresSequencer } from '../../src/log/objects/postgres-sequencer.js';
import { decodeRecords, encodeBatch, LOG_OVERHEAD } from '../../src/protocol/record-batch.js';
import { OffsetMap } from '../../src/log/offset-map.js';
import { testCluster } from '../helpers/cluster.js';
import { startS3 } from '../helpers/s3.js';
import type { S3Server } from '../helpers/s3.js';
import { pgSchema, uniqueName } from '../helpers/services.js';
import type { PgSchema } from '../helpers/services.js';
import { editsByPartition, readEdits } from '../helpers/wikiticker.js';

let s3: S3Server;
beforeAll(async () => {
  s3 = await startS3();
});
afterAll(async () => {
  await s3?.close();
});

const T0 = Date.UTC(2024, 0, 1);

/** Every record of a partition through the broker: `offset:key=value` (value `null` for a tombstone). */
async function readAll(broker: Broker, topic: string, partition: number): Promise<string[]> {
  const out: string[] = [];
  for (let offset = 0; ;) {
    const r = (await broker.fetch({ topic, partitions: [{ partition, offset }], maxBytes: 4 * 1024 * 1024 })).partitions[0]!;
    for (const x of r.records) out.push(`${x.offset}:${x.key?.toString() ?? ''}=${x.value?.toString() ?? 'null'}`);
    if (r.nextOffset >= r.highWatermark) return out;
    expect(r.nextOffset).toBeGreaterThan(offset);
    offset = r.nextOffset;
  }
}

const keyed = (key: string, value: string | null, partition = 0) => ({ key: Buffer.from(key), value: value === null ? null : Buffer.from(value), partition });

describe('compaction in object storage, through the broker', () => {
  it('the Wikipedia edits: the latest edit of each key stays at its offset, every other goes; a second broker reads the same', async () => {
    const c = await testCluster(s3);
    const a = await Broker.open(c.options(1, { compactionIntervalMs: 0 }));
    try {
      const edits = readEdits();
      await a.createTopic({ topic: 'edits', partitions: 4, config: { cleanupPolicy: 'compact' } });
      for (let i = 0; i < edits.length; i += 500) {
        await a.produce({ topic: 'edits', records: edits.slice(i, i + 500).map((e) => ({ key: Buffer.from(e.key), value: Buffer.from(e.value), timestamp: e.timestamp })) });
      }
      const byPartition = editsByPartition(edits, 4);
      const started = performance.now();
      const result = await a.compactTopic({ topic: 'edits' });
      const ms = performance.now() - started;
      // The latest of each key, at its offset (its index in the partition), in offset order.
      const expected = byPartition.map((list) => {
        const latest = new Map<string, number>();
        list.forEach((e, i) => latest.set(e.key, i));
        return list.flatMap((e, i) => (latest.get(e.key) === i ? [`${i}:${e.key}=${e.value}`] : []));
      });
      expect(result.completed).toBe(true);
      expect(result.partitions.map((p) => p.recordsBefore)).toEqual(byPartition.map((l) => l.length));
      expect(result.partitions.map((p) => p.recordsAfter)).toEqual(expected.map((l) => l.length));
      for (const p of result.partitions) {
        expect(p).toMatchObject({ passes: 1, tombstonesRemoved: 0 });
        expect(p.bytesAfter).toBeLessThan(p.bytesBefore);
      }
      const before = edits.length;
      const after = expected.reduce((n, l) => n + l.length, 0);
      console.log(`compaction of the ${before} Wikipedia edits (4 partitions): ${after} records left, ` +
        `${result.partitions.reduce((n, p) => n + p.bytesBefore, 0)} -> ${result.partitions.reduce((n, p) => n + p.bytesAfter, 0)} bytes, ` +
        `${result.partitions.reduce((n, p) => n + p.segments, 0)} chunks rewritten, ${ms.toFixed(0)} ms`);
      for (let p = 0; p < 4; p++) expect(await readAll(a, 'edits', p)).toEqual(expected[p]);
      // A second broker, its block cache empty, reads the compacted partitions from the new objects.
      const b = await Broker.open(c.options(2, { compactionIntervalMs: 0 }));
      try {
        for (let p = 0; p < 4; p++) expect(await readAll(b, 'edits', p)).toEqual(expected[p]);
        // Positions are unchanged: compaction moves neither the log start nor the high watermark.
        expect((await b.describeTopic('edits')).partitions.map((p) => [p.logStartOffset, p.highWatermark])).toEqual(byPartition.map((l) => [0, l.length]));
      } finally {
        await b.close();
      }
      // A second compaction finds nothing to do.
      const again = await a.compactTopic({ topic: 'edits' });
      expect(again.partitions.map((p) => [p.segments, p.recordsBefore - p.recordsAfter])).toEqual([[0, 0], [0, 0], [0, 0], [0, 0]]);
    } finally {
      await a.close();
      await c.dispose();
    }
  }, 180_000);

  it('keeps a tombstone for deleteRetentionMs after the compaction that first kept it, then removes it; readers move past the gap at the end', async () => {
    const c = await testCluster(s3);
    const clock = new ManualClock(T0);
    const a = await Broker.open({ ...c.options(1, { compactionIntervalMs: 0 }), clock });
    try {
      await a.createTopic({ topic: 't', partitions: 1, config: { cleanupPolicy: 'compact', deleteRetentionMs: 60_000 } });
      await a.produce({ topic: 't', records: [keyed('k1', 'v1'), keyed('k2', 'v2')] });
      await a.produce({ topic: 't', records: [keyed('k2', 'v2b')] });
      await a.produce({ topic: 't', records: [keyed('k1', null)] });
      const first = (await a.compactTopic({ topic: 't' })).partitions[0]!;
      expect(first).toMatchObject({ recordsBefore: 4, recordsAfter: 2, tombstonesRemoved: 0 });
      expect(await readAll(a, 't', 0)).toEqual(['2:k2=v2b', '3:k1=null']);
      clock.advance(59_999);
      expect((await a.compactTopic({ topic: 't' })).partitions[0]).toMatchObject({ recordsAfter: 2, tombstonesRemoved: 0 });
      expect(await readAll(a, 't', 0)).toEqual(['2:k2=v2b', '3:k1=null']);
      clock.advance(1);
      expect((await a.compactTopic({ topic: 't' })).partitions[0]).toMatchObject({ recordsBefore: 2, recordsAfter: 1, tombstonesRemoved: 1 });
      // The tombstone was the log's last record: a reader at its offset moves on to the high watermark.
      expect(await readAll(a, 't', 0)).toEqual(['2:k2=v2b']);
      const tail = (await a.fetch({ topic: 't', partitions: [{ partition: 0, offset: 3 }] })).partitions[0]!;
      expect(tail).toMatchObject({ records: [], nextOffset: 4, highWatermark: 4 });
      // Appends go on after the gap.
      expect((await a.produce({ topic: 't', records: [keyed('k1', 'again')] })).offsets).toEqual([{ partition: 0, offset: 4 }]);
      expect(await readAll(a, 't', 0)).toEqual(['2:k2=v2b', '4:k1=again']);
    } finally {
      await a.close();
      await c.dispose();
    }
  });

  it('leaves chunks younger than minCompactionLagMs (and those after them) alone; refuses records without a key', async () => {
    const c = await testCluster(s3);
    const clock = new ManualClock(T0);
    const a = await Broker.open({ ...c.options(1, { compactionIntervalMs: 0 }), clock });
    try {
      await a.createTopic({ topic: 't', partitions: 1, config: { cleanupPolicy: 'compact,delete', minCompactionLagMs: 10_000 } });
      await a.produce({ topic: 't', records: [keyed('k', 'a')] });
      clock.advance(5_000);
      await a.produce({ topic: 't', records: [keyed('k', 'b')] });
      clock.advance(5_000);
      await a.produce({ topic: 't', records: [keyed('k', 'c')] });
      expect(await a.produce({ topic: 't', records: [{ key: null, value: Buffer.from('x'), partition: 0 }] }).catch((e: { code: string }) => e.code))
        .toBe('INVALID_RECORD');
      // Only the first chunk is 10 s old: its record goes (k has later ones), the others wait.
      expect((await a.compactTopic({ topic: 't' })).partitions[0]).toMatchObject({ recordsBefore: 1, recordsAfter: 0, segments: 1 });
      expect(await readAll(a, 't', 0)).toEqual(['1:k=b', '2:k=c']);
      clock.advance(10_000);
      expect((await a.compactTopic({ topic: 't' })).partitions[0]).toMatchObject({ recordsBefore: 2, recordsAfter: 1 });
      expect(await readAll(a, 't', 0)).toEqual(['2:k=c']);
    } finally {
      await a.close();
      await c.dispose();
    }
  });

  it('the job under job:compact compacts on one broker, never the partition\'s last chunk', async () => {
    const c = await testCluster(s3);
    const a = await Broker.open(c.options(1, { compactionIntervalMs: 50 }));
    const b = await Broker.open(c.options(2, { compactionIntervalMs: 50 }));
    try {
      await a.createTopic({ topic: 't', partitions: 1, config: { cleanupPolicy: 'compact' } });
      await a.produce({ topic: 't', records: [keyed('k', '0'), keyed('j', '0')] });
      await a.produce({ topic: 't', records: [keyed('k', '1')] });
      await a.produce({ topic: 't', records: [keyed('k', '2')] });
      // The first two chunks are cleaned by what the last one holds; the last chunk itself is not cleaned.
      await expect.poll(() => readAll(b, 't', 0), { timeout: 10_000, interval: 50 }).toEqual(['1:j=0', '3:k=2']);
      await a.produce({ topic: 't', records: [keyed('j', '1')] });
      await expect.poll(() => readAll(b, 't', 0), { timeout: 10_000, interval: 50 }).toEqual(['3:k=2', '4:j=1']);
      // One broker holds the job's lease.
      const pool = new pg.Pool({ connectionString: c.pgUrl, max: 1 });
      try {
        const { rows } = await pool.query<{ holder: number }>(`SELECT holder_broker_id AS holder FROM onelog_leases WHERE name = 'job:compact'`);
        expect(rows).toHaveLength(1);
        expect([1, 2]).toContain(rows[0]!.holder);
      } finally {
        await pool.end();
      }
    } finally {
      await a.close();
      await b.close();
      await c.dispose();
    }
  });
});

/** A broker's object log and its sequencer on `schema`, under `prefix` of the bucket. */
async function objectLog(schema: PgSchema, prefix: string): Promise<{ store: ObjectLogStore; objects: S3ObjectStore; sequencer: PostgresSequencer; close(): Promise<void> }> {
  const objects = new S3ObjectStore(parseS3Url(`s3://${s3.bucket}/${prefix}?endpoint=${s3.endpoint}`));
  const sequencer = await PostgresSequencer.open({ pool: schema.pool(3), brokerId: 1, listenUrl: schema.url });
  const store = await ObjectLogStore.open({ sequencer, objects, flushWindowMs: 0 });
  return { store, objects, sequencer, close: async () => {
    await store.close();
    objects.close();
  } };
}

/** A batch of keyed records (value null: a tombstone). */
const batchOf = (records: ReadonlyArray<[string, string | null]>) =>
  encodeBatch(records.map(([k, v]) => ({ key: Buffer.from(k), value: v === null ? null : Buffer.from(v) })), 0, T0);

/** Every record of a partition through the store: `offset:key=value`. */
async function readStore(store: ObjectLogStore, topic: string, partition: number): Promise<string[]> {
  const out: string[] = [];
  for (let offset = 0; ;) {
    const r = await store.read(topic, partition, offset, 1 << 20);
    for (let pos = 0; pos < r.batches.length; pos += LOG_OVERHEAD + r.batches.readInt32BE(pos + 8)) {
      for (const x of decodeRecords(r.batches, pos)) if (x.offset >= offset) out.push(`${x.offset}:${x.key!.toString()}=${x.value?.toString() ?? 'null'}`);
    }
    if (r.nextOffset >= r.highWatermark) return out;
    offset = r.nextOffset;
  }
}

const onDemand: PartitionCompactionSettings = { now: T0, minCompactionLagMs: 0, deleteRetentionMs: 86_400_000, includeLastChunk: true };

describe('compactPartition', () => {
  it('never loses a record produced between its read and its commit; a merge that won the race makes it stand back', async () => {
    const schema = await pgSchema('compact');
    const log = await objectLog(schema, uniqueName('log'));
    try {
      await log.sequencer.addPartitions('t', 1);
      for (let i = 0; i < 6; i++) await log.store.append([{ topic: 't', partition: 0, batch: batchOf([['k', `v${i}`], [`only${i}`, 'x']]) }]);
      const map = new OffsetMap(1 << 20);
      // A produce of k lands after the compaction mapped the keys, before its commit: the compaction keeps k's v5
      // (the latest it saw), and the new record is there too.
      const raced = await compactPartition(log.sequencer, log.objects, 't', 0, { ...onDemand, includeLastChunk: false }, map, {
        beforeReplace: async () => void (await log.store.append([{ topic: 't', partition: 0, batch: batchOf([['k', 'late']]) }])),
      });
      expect(raced.stopped).toBeNull();
      expect(await readStore(log.store, 't', 0)).toEqual([
        '1:only0=x', '3:only1=x', '5:only2=x', '7:only3=x', '9:only4=x', '10:k=v5', '11:only5=x', '12:k=late',
      ]);
      // A merge of the same rows commits first: the compaction's replacement is refused, its object deleted, nothing changes.
      for (let i = 0; i < 4; i++) await log.store.append([{ topic: 't', partition: 0, batch: batchOf([['m', `${i}`]]) }]);
      const before = await readStore(log.store, 't', 0);
      const keysBefore = new Set<string>();
      for await (const o of log.objects.list('')) keysBefore.add(o.key);
      const lost = await compactPartition(log.sequencer, log.objects, 't', 0, onDemand, map, {
        beforeReplace: async () => void expect((await mergePartition(log.sequencer, log.objects, 't', 0, { minChunks: 2 })).rowsMerged).toBeGreaterThan(0),
      });
      expect(lost.stopped).toBe('changed');
      expect(lost.stats.segments).toBe(0);
      expect(await readStore(log.store, 't', 0)).toEqual(before);
      const segments = [];
      for await (const o of log.objects.list('')) if (!keysBefore.has(o.key)) segments.push(o.key);
      expect(segments).toHaveLength(1); // the merge's object only
      // Tried again, it compacts the merged rows.
      expect((await compactPartition(log.sequencer, log.objects, 't', 0, onDemand, map)).stopped).toBeNull();
      expect(await readStore(log.store, 't', 0)).toEqual(['1:only0=x', '3:only1=x', '5:only2=x', '7:only3=x', '9:only4=x', '11:only5=x', '12:k=late', '16:m=3']);
    } finally {
      await log.close();
      await schema.drop();
    }
  });

  it('property: keeps exactly the latest record of each key at its offset, in strictly increasing offsets, whatever the passes', async () => {
    const schema = await pgSchema('compact');
    const log = await objectLog(schema, uniqueName('log'));
    let run = 0;
    try {
      const record = fc.tuple(fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f'), fc.option(fc.constantFrom('1', '2', '3'), { freq: 5 }));
      const chunks = fc.array(fc.array(fc.array(record, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 6 });
      // Map sizes from 2 slots (one key a pass) to room for every key.
      await fc.assert(fc.asyncProperty(chunks, fc.constantFrom(48, 96, 240, 4096), async (layout, mapBytes) => {
        const topic = `t${run++}`;
        await log.sequencer.addPartitions(topic, 1);
        const all: Array<[string, string | null]> = [];
        for (const batches of layout) {
          for (const b of batches) all.push(...b);
          // One append per chunk: all its batches in one flush.
          await Promise.all(batches.map((b) => log.store.append([{ topic, partition: 0, batch: batchOf(b) }])));
        }
        const latest = new Map<string, number>();
        all.forEach(([k], i) => latest.set(k, i));
        const before = await readStore(log.store, topic, 0);
        const result = await compactPartition(log.sequencer, log.objects, topic, 0, onDemand, new OffsetMap(mapBytes));
        const after = await readStore(log.store, topic, 0);
        expect(result.stopped).toBeNull();
        expect(after).toEqual(before.filter((line) => {
          const [offset, rest] = line.split(':') as [string, string];
          return latest.get(rest.split('=')[0]!) === Number(offset);
        }));
        const offsets = after.map((l) => Number(l.split(':')[0]));
        expect(offsets.every((o, i) => i === 0 || o > offsets[i - 1]!)).toBe(true);
        expect(result.stats.recordsBefore).toBe(all.length);
        expect(result.stats.recordsAfter).toBe(after.length);
        if (mapBytes === 48 && latest.size > 1) expect(result.stats.passes).toBeGreaterThan(1); // one key a pass
      }), { numRuns: 25 });
    } finally {
      await log.close();
      await schema.drop();
    }
  }, 120_000);
});

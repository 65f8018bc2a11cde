/**
 * The broker's contract (the OnelogApi as the consumer manager serves it), run on every engine the broker composes:
 * the embedded default (test/broker/broker.test.ts) and cluster mode on PostgreSQL, Redis and object storage
 * (test/cluster/cluster-broker.test.ts). The same calls give the same answers on both.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Broker } from '../../src/broker/broker.js';
import { ManualClock } from '../../src/common/clock.js';
import { OnelogError } from '../../src/protocol/errors.js';
import { asyncCodeOf } from '../helpers/errors.js';

/** Stores for brokers: each {@link open} opens a broker on the same ones (a restart), until {@link dispose}. */
export interface BrokerEngine {
  open(clock: ManualClock): Promise<Broker>;
  dispose(): Promise<void>;
}

const rec = (value: string, key: string | null = null, extra = {}) => ({
  key: key === null ? null : Buffer.from(key), value: Buffer.from(value), ...extra,
});

export function brokerContract(name: string, engine: () => BrokerEngine | Promise<BrokerEngine>): void {
  describe(`broker contract: ${name}`, () => {
    const open: Broker[] = [];
    let current: BrokerEngine | undefined;
    afterEach(async () => {
      for (const b of open.splice(0)) await b.close();
      await current?.dispose();
      current = undefined;
    });
    async function broker(clock = new ManualClock(1_700_000_000_000)): Promise<Broker> {
      current ??= await engine();
      const b = await current.open(clock);
      open.push(b);
      return b;
    }
    async function reopen(b: Broker, clock = new ManualClock(1_700_000_000_000)): Promise<Broker> {
      await b.close();
      open.splice(open.indexOf(b), 1);
      return broker(clock);
    }

    it('lets two groups progress independently and resume from their commits after reopening', async () => {
      let b = await broker();
      await b.createTopic({ topic: 't', partitions: 1 });
      await b.produce({ topic: 't', records: Array.from({ length: 10 }, (_, i) => rec(`v${i}`, null, { partition: 0 })) });
      const a = await b.subscribe({ groupId: 'a', topic: 't', startPolicy: 'earliest' });
      const z = await b.subscribe({ groupId: 'z', topic: 't', startPolicy: 'earliest' });
      expect(a.positions).toEqual([{ partition: 0, offset: 0 }]);
      const fa = await b.fetch({ topic: 't', partitions: [{ partition: 0, offset: a.positions[0]!.offset! }], maxRecords: 7 });
      expect(fa.partitions[0]!.records.map((r) => r.value!.toString())).toEqual(['v0', 'v1', 'v2', 'v3', 'v4', 'v5', 'v6']);
      await b.commitOffsets({ groupId: 'a', topic: 't', offsets: [{ partition: 0, offset: 7 }] });
      await b.commitOffsets({ groupId: 'z', topic: 't', offsets: [{ partition: 0, offset: 2 }] });
      b = await reopen(b);
      expect((await b.subscribe({ groupId: 'a', topic: 't' })).positions).toEqual([{ partition: 0, offset: 7 }]);
      expect((await b.subscribe({ groupId: 'z', topic: 't' })).positions).toEqual([{ partition: 0, offset: 2 }]);
      const g = await b.describeGroup('a');
      expect(g.subscriptions[0]!.partitions[0]).toMatchObject({ committedOffset: 7, highWatermark: 10, lag: 3 });
      expect(z.subscription.startPolicy).toBe('earliest');
    });

    it('starts a new group at latest by fixing its position when it subscribes', async () => {
      const b = await broker();
      await b.createTopic({ topic: 't', partitions: 1 });
      await b.produce({ topic: 't', records: [rec('old'), rec('old2')] });
      const s = await b.subscribe({ groupId: 'g', topic: 't' });
      expect(s.subscription.startPolicy).toBe('latest');
      expect(s.positions).toEqual([{ partition: 0, offset: 2 }]);
      await b.produce({ topic: 't', records: [rec('new')] });
      const again = await b.subscribe({ groupId: 'g', topic: 't' });
      expect(again.positions).toEqual([{ partition: 0, offset: 2 }]);
    });

    it('takes a commit beyond the high watermark (lag 0 until the log reaches it), refuses a negative offset', async () => {
      const b = await broker();
      await b.createTopic({ topic: 't', partitions: 1 });
      await b.produce({ topic: 't', records: [rec('x')] });
      expect(await asyncCodeOf(b.commitOffsets({ groupId: 'g', topic: 't', offsets: [{ partition: 0, offset: -1 }] }))).toBe('INVALID_OFFSET');
      await b.commitOffsets({ groupId: 'g', topic: 't', offsets: [{ partition: 0, offset: 42 }] });
      const ahead = (await b.describeGroup('g')).subscriptions[0]!;
      expect(ahead.partitions[0]).toMatchObject({ committedOffset: 42, lag: 0 });
      await b.produce({ topic: 't', records: Array.from({ length: 45 }, () => rec('y')) });
      expect((await b.describeGroup('g')).subscriptions[0]!.partitions[0]).toMatchObject({ committedOffset: 42, lag: 4 });
    });

    it('pauses with OFFSET_OUT_OF_RANGE, delivering nothing and moving nothing, after delete-records', async () => {
      const b = await broker();
      await b.createTopic({ topic: 't', partitions: 2 });
      await b.produce({ topic: 't', records: Array.from({ length: 10 }, (_, i) => rec(`v${i}`, null, { partition: 0 })) });
      await b.commitOffsets({ groupId: 'g', topic: 't', offsets: [{ partition: 0, offset: 3 }] });
      const del = await b.deleteRecords({ topic: 't', partition: 0, beforeOffset: 8 });
      expect(del).toEqual({ topic: 't', partition: 0, previousLogStartOffset: 0, logStartOffset: 8 });
      // Below the log start, above the high watermark, negative other than -1 (Kafka's unset -1001): refused, nothing deleted.
      for (const beforeOffset of [-1001, -2, 7, 11]) {
        await expect(b.deleteRecords({ topic: 't', partition: 0, beforeOffset })).rejects.toMatchObject({ code: 'OFFSET_OUT_OF_RANGE', context: { logStartOffset: 8, highWatermark: 10 } });
      }
      const paused = await b.subscribe({ groupId: 'g', topic: 't' });
      expect(paused.positions[0]!.offset).toBeUndefined();
      expect(paused.positions[0]!.error).toMatchObject({
        code: 'OFFSET_OUT_OF_RANGE', groupId: 'g', topic: 't', partition: 0, committedOffset: 3, logStartOffset: 8, recordsLost: 5,
      });
      expect(paused.positions[1]).toEqual({ partition: 1, offset: 0 }); // the other partition flows
      const fetched = await b.fetch({ topic: 't', groupId: 'g', partitions: [{ partition: 0, offset: 3 }] });
      expect(fetched.partitions[0]!.records).toEqual([]);
      expect(fetched.partitions[0]!.error).toMatchObject({ code: 'OFFSET_OUT_OF_RANGE', recordsLost: 5, committedOffset: 3 });
      expect((await b.describeGroup('g')).subscriptions[0]!.partitions[0]!.committedOffset).toBe(3);
      // Deleted records are never served, even though their segment file still exists.
      expect(await asyncCodeOf(b.fetch({ topic: 't', partitions: [{ partition: 0, offset: 7 }] }).then((r) => {
        if (r.partitions[0]!.error) throw OnelogError.fromJSON(r.partitions[0]!.error);
      }))).toBe('OFFSET_OUT_OF_RANGE');
      const plan = await b.resetOffsets({ groupId: 'g', topic: 't', partition: 0, spec: { to: 'earliest' } });
      expect(plan).toMatchObject({ executed: false, partitions: [{ partition: 0, currentOffset: 3, newOffset: 8 }] });
      expect((await b.subscribe({ groupId: 'g', topic: 't' })).positions[0]!.error?.code).toBe('OFFSET_OUT_OF_RANGE');
      await b.resetOffsets({ groupId: 'g', topic: 't', partition: 0, spec: { to: 'earliest' }, execute: true });
      const s = await b.subscribe({ groupId: 'g', topic: 't' });
      expect(s.positions[0]).toEqual({ partition: 0, offset: 8 });
      const r = await b.fetch({ topic: 't', partitions: [{ partition: 0, offset: s.positions[0]!.offset! }] });
      expect(r.partitions[0]!.records.map((x) => x.offset)).toEqual([8, 9]);
    });

    it('plans resets to latest, an offset (clamped), a datetime and a shift', async () => {
      const clock = new ManualClock(1000);
      const b = await broker(clock);
      await b.createTopic({ topic: 't', partitions: 1 });
      await b.produce({
        topic: 't',
        records: [10, 20, 30, 40, 50].map((ts, i) => rec(`v${i}`, null, { timestamp: ts * 1000 })),
      });
      await b.commitOffsets({ groupId: 'g', topic: 't', offsets: [{ partition: 0, offset: 4 }] });
      const plan = async (spec: Parameters<Broker['resetOffsets']>[0]['spec']) =>
        (await b.resetOffsets({ groupId: 'g', topic: 't', spec })).partitions[0];
      expect(await plan({ to: 'latest' })).toEqual({ partition: 0, currentOffset: 4, newOffset: 5 });
      expect(await plan({ to: 'offset', offset: 2 })).toEqual({ partition: 0, currentOffset: 4, newOffset: 2 });
      expect(await plan({ to: 'offset', offset: 99 })).toEqual({ partition: 0, currentOffset: 4, newOffset: 5, clamped: 'highWatermark' });
      expect(await plan({ to: 'datetime', timestamp: 25_000 })).toMatchObject({ newOffset: 2 });
      expect(await plan({ to: 'datetime', timestamp: 30_000 })).toMatchObject({ newOffset: 2 });
      expect(await plan({ to: 'datetime', timestamp: 99_000 })).toMatchObject({ newOffset: 5 });
      expect(await plan({ to: 'shift', shiftBy: -3 })).toMatchObject({ newOffset: 1 });
      expect(await plan({ to: 'shift', shiftBy: -30 })).toMatchObject({ newOffset: 0, clamped: 'logStartOffset' });
      expect((await b.describeGroup('g')).subscriptions[0]!.partitions[0]!.committedOffset).toBe(4);
    });

    it('ends waiting long-polls at once when shutting down', async () => {
      const b = await broker();
      await b.createTopic({ topic: 't', partitions: 1 });
      const pending = b.fetch({ topic: 't', partitions: [{ partition: 0, offset: 0 }], maxWaitMs: 30_000 });
      b.endWaits();
      expect((await pending).partitions[0]!.records).toEqual([]);
      const next = await b.fetch({ topic: 't', partitions: [{ partition: 0, offset: 0 }], maxWaitMs: 30_000 });
      expect(next.partitions[0]!.records).toEqual([]);
    });

    it('long-polls: a fetch at the high watermark returns as soon as a record arrives', async () => {
      const b = await broker();
      await b.createTopic({ topic: 't', partitions: 1 });
      const pending = b.fetch({ topic: 't', partitions: [{ partition: 0, offset: 0 }], maxWaitMs: 10_000 });
      await b.produce({ topic: 't', records: [rec('hello')] });
      const r = await pending;
      expect(r.partitions[0]!.records.map((x) => x.value!.toString())).toEqual(['hello']);
    });

    it('answers an idempotent producer\'s retry with the offsets first stored, storing it once', async () => {
      const b = await broker();
      await b.createTopic({ topic: 't', partitions: 1 });
      const { producerId, producerEpoch } = await b.initProducerId();
      const request = { topic: 't', records: [rec('a', null, { partition: 0 }), rec('b', null, { partition: 0 })], idempotence: { producerId, producerEpoch, baseSequences: { 0: 0 } } };
      const first = await b.produce(request);
      const retry = await b.produce(request);
      expect(retry.offsets).toEqual(first.offsets);
      const r = await b.fetch({ topic: 't', partitions: [{ partition: 0, offset: 0 }] });
      expect(r.partitions[0]!.records.map((x) => x.value!.toString())).toEqual(['a', 'b']);
    });

    it('applies time retention at the clock\'s time: the log start moves past every expired record', async () => {
      const clock = new ManualClock(100_000);
      const b = await broker(clock);
      await b.createTopic({ topic: 't', partitions: 1, config: { retentionMs: 10_000 } });
      await b.produce({ topic: 't', records: [1, 2, 3].map((s) => rec(`v${s}`, null, { partition: 0, timestamp: s * 10_000 })) });
      await b.produce({ topic: 't', records: [rec('late', null, { partition: 0, timestamp: 95_000 })] });
      const moved = await b.enforceRetention('t');
      expect(moved.partitions).toEqual([{ partition: 0, previousLogStartOffset: 0, logStartOffset: 3, reason: 'retention-time' }]);
      const r = await b.fetch({ topic: 't', partitions: [{ partition: 0, offset: 3 }] });
      expect(r.partitions[0]!.records.map((x) => x.value!.toString())).toEqual(['late']);
      expect((await b.describeTopic('t')).partitions[0]).toMatchObject({ logStartOffset: 3, highWatermark: 4 });
    });

    it('browses a partition\'s records from an offset, a time or the newest, by key, as a broker opened again sees them', async () => {
      const first = await broker();
      await first.createTopic({ topic: 't', partitions: 2, config: { retentionMs: -1 } });
      const t0 = 1_700_000_000_000 - 10_000;
      await first.produce({ topic: 't', records: ['a1', 'b1', 'a2', 'a3', 'b2'].map((v, i) => rec(v, `${v[0]}-key`, { partition: 1, timestamp: t0 + 1000 * i })) });
      const b = await reopen(first);
      const values = async (request: Omit<Parameters<Broker['browseRecords']>[0], 'topic' | 'partition'>) =>
        (await b.browseRecords({ topic: 't', partition: 1, ...request })).records.map((r) => r.value!.toString());
      expect(await values({ newest: true, limit: 2 })).toEqual(['a3', 'b2']);
      expect(await values({ offset: 1, limit: 2 })).toEqual(['b1', 'a2']);
      expect(await values({ timestamp: t0 + 1500, limit: 1 })).toEqual(['a2']);
      expect(await values({ offset: 0, key: Buffer.from('a-key') })).toEqual(['a1', 'a2', 'a3']);
      expect(await values({ newest: true, key: Buffer.from('b'), keyMatch: 'prefix' })).toEqual(['b1', 'b2']);
      expect(await b.browseRecords({ topic: 't', partition: 1, offset: 0, limit: 2 })).toMatchObject({ highWatermark: 5, nextOffset: 2, scanned: { fromOffset: 0, toOffset: 2, records: 2 } });
      expect(await b.browseRecords({ topic: 't', partition: 0 })).toMatchObject({ records: [], highWatermark: 0, nextOffset: 0 });
      expect(await asyncCodeOf(b.browseRecords({ topic: 't', partition: 2 }))).toBe('UNKNOWN_PARTITION');
      expect(await asyncCodeOf(b.browseRecords({ topic: 't', partition: 1, offset: 6 }))).toBe('OFFSET_OUT_OF_RANGE');
    });

    it('keeps a group\'s health history and a topic\'s rates across a restart: a sample and a count per minute, the drain estimate', async () => {
      const clock = new ManualClock(1_700_000_000_000);
      let b = await broker(clock);
      await b.createTopic({ topic: 't', partitions: 1, config: { retentionMs: 3_600_000 } });
      await b.subscribe({ groupId: 'g', topic: 't', startPolicy: 'earliest' });
      await b.produce({ topic: 't', records: Array.from({ length: 120 }, (_, i) => rec(`v${i}`, null, { partition: 0 })) });
      await b.evaluateAlerts(); // a sample: 120 unread
      clock.advance(60_000);
      const read = await b.fetch({ topic: 't', groupId: 'g', partitions: [{ partition: 0, offset: 0 }], maxRecords: 60 });
      expect(read.partitions[0]!.records).toHaveLength(60);
      await b.commitOffsets({ groupId: 'g', topic: 't', offsets: [{ partition: 0, offset: 60 }] });
      await b.evaluateAlerts(); // 60 read in a minute: 1 record/s, 60 s to catch up
      clock.advance(60_000);
      b = await reopen(b, clock);
      const [p] = (await b.groupHistory('g', { hours: 1 })).partitions;
      expect(p!.samples.map((s) => [s.at - 1_700_000_000_000, s.lag, s.committedOffset])).toEqual([[0, 120, 0], [60_000, 60, 60]]);
      expect(p!.drain).toMatchObject({ consumeRecordsPerSec: 1, drainMs: 60_000, outcome: 'drains-first' });
      const points = (await b.topicHistory('t', { hours: 1 })).points.slice(-2);
      expect(points.map((x) => [x.produceRecordsPerSec, x.consumeRecordsPerSec])).toEqual([[2, 0], [0, 1]]);
      expect(await asyncCodeOf(b.groupHistory('nobody'))).toBe('UNKNOWN_GROUP');
      expect(await asyncCodeOf(b.topicHistory('t', { hours: 0 }))).toBe('INVALID_REQUEST');
    });
  });
}

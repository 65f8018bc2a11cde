/** The consumer's commit semantics, on an embedded broker (the same client code runs over HTTP). */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { ManualClock } from '../../src/common/clock.js';
import { LmdbOffsetStore } from '../../src/offsets/lmdb-offset-store.js';
import { Onelog } from '../../src/client/index.js';
import { OnelogError } from '../../src/protocol/errors.js';
import { headerText, RETRY_HEADERS } from '../../src/protocol/retry-policy.js';
import { tmpDir } from '../helpers/tmp.js';

let broker: Broker;
let onelog: Onelog;

beforeEach(async () => {
  broker = await Broker.open({ dataDir: tmpDir() });
  onelog = new Onelog({ api: broker });
  await broker.createTopic({ topic: 't', partitions: 3 });
  await onelog.producer().send({
    topic: 't',
    messages: Array.from({ length: 30 }, (_, i) => ({ value: `v${i}`, partition: i % 3 })),
  });
});
afterEach(() => broker.close());

async function committed(groupId: string): Promise<Array<number | null>> {
  const d = await broker.describeGroup(groupId);
  return d.subscriptions[0]!.partitions.map((p) => p.committedOffset);
}

describe('Consumer (at-least-once)', () => {
  it('delivers every record once, in order per partition, and commits the next offset to read', async () => {
    const consumer = onelog.consumer({ groupId: 'g', startPolicy: 'earliest', maxRecords: 4, maxWaitMs: 0 });
    consumer.subscribe({ topic: 't' });
    const seen: string[] = [];
    await consumer.run({
      eachMessage: ({ partition, message }) => {
        seen.push(`${partition}:${message.offset}:${message.value}`);
        if (seen.length === 30) void consumer.stop();
      },
    });
    expect(seen).toHaveLength(30);
    for (let p = 0; p < 3; p++) {
      expect(seen.filter((s) => s.startsWith(`${p}:`))).toEqual(
        Array.from({ length: 10 }, (_, i) => `${p}:${i}:v${i * 3 + p}`),
      );
    }
    expect(await committed('g')).toEqual([10, 10, 10]);
  });

  it('fetches the next batch while a batch is handled, and drops that fetch when a handler fails instead', async () => {
    let fetches = 0;
    const fetch = broker.fetch.bind(broker);
    vi.spyOn(broker, 'fetch').mockImplementation((request) => {
      fetches++;
      return fetch(request);
    });
    const consumer = onelog.consumer({ groupId: 'g', startPolicy: 'earliest', maxRecords: 4, maxWaitMs: 0 });
    consumer.subscribe({ topic: 't' });
    const sentBeforeHandling: Array<number> = [];
    let firstOfBatch = true;
    let failed = false;
    const seen: string[] = [];
    await consumer.run({
      afterBatch: () => void (firstOfBatch = true),
      eachMessage: ({ partition, message }) => {
        // While the first record of a batch is handled, the fetch from the batch's end is already out.
        if (firstOfBatch) sentBeforeHandling.push(fetches);
        firstOfBatch = false;
        if (partition === 1 && message.offset === 5 && !failed) {
          failed = true;
          throw new Error('once');
        }
        seen.push(`${partition}:${message.offset}`);
        if (seen.length === 30) void consumer.stop();
      },
      onPartitionError: () => {},
    }).catch(() => {});
    // Every batch handled had its successor's fetch sent first (run stops at the failure: no retry policy).
    expect(sentBeforeHandling.length).toBeGreaterThan(3);
    expect(sentBeforeHandling.every((sent, batch) => sent >= batch + 2)).toBe(true);
    // The failure left partition 1 at offset 5: a new member starts there, nothing is skipped.
    const again = onelog.consumer({ groupId: 'g', startPolicy: 'earliest', maxRecords: 4, maxWaitMs: 0 });
    again.subscribe({ topic: 't' });
    await again.run({
      eachMessage: ({ partition, message }) => {
        seen.push(`${partition}:${message.offset}`);
        if (seen.length === 30) void again.stop();
      },
    });
    expect(new Set(seen).size).toBe(30);
  });

  it('a fetch sent ahead never applies onOutOfRange: the jump and its commit come after the batch before is committed', async () => {
    await broker.createTopic({ topic: 'o', partitions: 1 });
    await onelog.producer().send({ topic: 'o', messages: Array.from({ length: 20 }, (_, i) => ({ value: `v${i}` })) });
    // Retention takes offsets 0-9 while the first batch (0-3) is handled: the fetch sent ahead from 4 is out of range.
    const fetch = broker.fetch.bind(broker);
    let deleted = false;
    let aheadAnswered: Promise<unknown> = Promise.resolve();
    vi.spyOn(broker, 'fetch').mockImplementation(async (request) => {
      if (request.ahead && !deleted) {
        deleted = true;
        await broker.deleteRecords({ topic: 'o', partition: 0, beforeOffset: 10 });
        aheadAnswered = fetch(request);
        return aheadAnswered as ReturnType<typeof fetch>;
      }
      return fetch(request);
    });
    // Every commit the offset store writes for the group, the consumer's and the jump's, in the order written.
    const commits: number[] = [];
    const commit = LmdbOffsetStore.prototype.commit;
    vi.spyOn(LmdbOffsetStore.prototype, 'commit').mockImplementation(function (this: LmdbOffsetStore, groupId, offsets, now) {
      if (groupId === 'j') commits.push(...offsets.map((o) => o.offset));
      return commit.call(this, groupId, offsets, now);
    });
    const consumer = onelog.consumer({ groupId: 'j', startPolicy: 'earliest', onOutOfRange: 'earliest', maxRecords: 4, maxWaitMs: 0 });
    consumer.subscribe({ topic: 'o' });
    const seen: number[] = [];
    await consumer.run({
      eachMessage: async ({ message }) => {
        seen.push(message.offset);
        // The batch's commit goes out only after the broker answered the fetch sent ahead.
        if (message.offset === 3) await new Promise((resolve) => setTimeout(resolve, 0)).then(() => aheadAnswered);
        if (message.offset === 19) void consumer.stop();
      },
    });
    expect(deleted).toBe(true);
    expect(seen).toEqual([0, 1, 2, 3, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
    // The batch's commit (4) is written before the jump's (10), never after it (which would move the group back).
    expect(commits.indexOf(4)).toBeGreaterThanOrEqual(0);
    expect(commits.indexOf(10)).toBeGreaterThan(commits.indexOf(4));
    expect(commits).toEqual([...commits].sort((a, b) => a - b));
  });

  it('afterBatch runs once per fetched batch before its commit; when it throws, none of the batch is committed', async () => {
    const consumer = onelog.consumer({ groupId: 'g', startPolicy: 'earliest', maxRecords: 4, maxWaitMs: 0 });
    consumer.subscribe({ topic: 't' });
    let buffered: number[] = [];
    const flushed: number[][] = [];
    const commitsSeenAtFlush: Array<Array<number | null>> = [];
    await consumer.run({
      eachMessage: ({ message }) => void buffered.push(message.offset),
      afterBatch: async () => {
        commitsSeenAtFlush.push(await committed('g'));
        flushed.push(buffered);
        buffered = [];
        if (flushed.flat().length === 30) void consumer.stop();
      },
    });
    expect(flushed.flat()).toHaveLength(30);
    expect(flushed.every((b) => b.length > 0 && b.length <= 4)).toBe(true);
    // At each flush, the batch's own records are not committed yet.
    expect(commitsSeenAtFlush.every((c) => c.reduce<number>((sum, o) => sum + (o ?? 0), 0) < 30)).toBe(true);
    expect(await committed('g')).toEqual([10, 10, 10]);

    const failing = onelog.consumer({ groupId: 'h', startPolicy: 'earliest', maxRecords: 4, maxWaitMs: 0 });
    failing.subscribe({ topic: 't' });
    let batches = 0;
    const error = await failing.run({
      eachMessage: () => {},
      afterBatch: () => {
        if (++batches === 2) throw new Error('stdout closed');
      },
    }).catch((err: Error) => err);
    expect((error as Error).message).toBe('stdout closed');
    // Only the first batch (4 records) was committed.
    expect((await committed('h')).reduce<number>((sum, o) => sum + (o ?? 0), 0)).toBe(4);
  });

  it('never commits a record whose handler threw, and commits those processed before it', async () => {
    const consumer = onelog.consumer({ groupId: 'g', startPolicy: 'earliest', maxWaitMs: 0 });
    consumer.subscribe({ topic: 't' });
    const boom = new Error('handler failed');
    await expect(
      consumer.run({
        eachMessage: ({ partition, message }) => {
          if (partition === 0 && message.offset === 4) throw boom;
        },
      }),
    ).rejects.toBe(boom);
    const c = await committed('g');
    expect(c[0]).toBe(4);
    const again = onelog.consumer({ groupId: 'g', maxWaitMs: 0 });
    again.subscribe({ topic: 't' });
    let first: number | undefined;
    await again.run({
      eachMessage: ({ partition, message }) => {
        if (partition === 0 && first === undefined) {
          first = message.offset;
          void again.stop();
        }
      },
    });
    expect(first).toBe(4);
  });

  it('moves past offsets compaction emptied at the end of a partition, leaving no lag', async () => {
    await broker.createTopic({ topic: 'state', partitions: 1, config: { cleanupPolicy: 'compact', deleteRetentionMs: 0 } });
    await onelog.producer().send({ topic: 'state', messages: [{ key: 'a', value: '1' }, { key: 'b', value: '1' }, { key: 'b', value: null }] });
    await broker.compactTopic({ topic: 'state' });
    await broker.compactTopic({ topic: 'state' }); // the tombstone's horizon (now + 0) has passed: it goes
    const consumer = onelog.consumer({ groupId: 'g', startPolicy: 'earliest', maxWaitMs: 0 });
    consumer.subscribe({ topic: 'state' });
    const seen: string[] = [];
    await consumer.run({
      eachMessage: ({ message }) => {
        seen.push(`${message.key}=${message.value}`);
        void consumer.stop();
      },
    });
    expect(seen).toEqual(['a=1']);
    const partition = (await broker.describeGroup('g')).subscriptions.find((s) => s.topic === 'state')!.partitions[0]!;
    expect(partition).toMatchObject({ committedOffset: 3, highWatermark: 3, lag: 0 });
  });
});

describe('Consumer with overlapCommits', () => {
  // One partition of 12 records read 4 at a time; the first batch's commit is held until released. The order of what
  // happened says whether the next batches were handled while that commit was in flight.
  async function run(overlapCommits: boolean): Promise<{ events: string[]; committedAfter: number | null }> {
    await broker.createTopic({ topic: 'one', partitions: 1 });
    await onelog.producer().send({ topic: 'one', messages: Array.from({ length: 12 }, (_, i) => ({ value: `v${i}` })) });
    const events: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const commit = broker.commitOffsets.bind(broker);
    vi.spyOn(broker, 'commitOffsets').mockImplementation(async (request) => {
      const offset = request.offsets[0]!.offset;
      events.push(`commit ${offset} sent`);
      if (offset === 4) await held;
      await commit(request);
      events.push(`commit ${offset} answered`);
    });
    const fetch = broker.fetch.bind(broker);
    vi.spyOn(broker, 'fetch').mockImplementation(async (request) => {
      const answer = await fetch(request);
      // Released a macrotask after the next batch is in hand: an implementation that does not wait handles it first.
      if (overlapCommits ? false : request.ahead === true && answer.partitions[0]!.records.length > 0) setImmediate(release);
      return answer;
    });
    const consumer = onelog.consumer({ groupId: 'g', startPolicy: 'earliest', maxRecords: 4, maxWaitMs: 0, overlapCommits });
    consumer.subscribe({ topic: 'one' });
    await consumer.run({
      eachMessage: ({ message }) => {
        events.push(`handled ${message.offset}`);
        if (overlapCommits && message.offset === 11) release(); // two more batches were handled while it was held
        if (message.offset === 11) void consumer.stop();
      },
    });
    const described = await broker.describeGroup('g');
    return { events, committedAfter: described.subscriptions[0]!.partitions[0]!.committedOffset };
  }

  it('handles the next batch only once the batch\'s commit is answered, by default', async () => {
    const { events, committedAfter } = await run(false);
    expect(events.indexOf('commit 4 answered')).toBeLessThan(events.indexOf('handled 4'));
    expect(committedAfter).toBe(12);
  });

  it('goes on handling batches while a commit is answered, and sends what they committed, merged, once it was', async () => {
    const { events, committedAfter } = await run(true);
    expect(events.indexOf('handled 11')).toBeLessThan(events.indexOf('commit 4 answered'));
    // One commit in flight at a time, in order: the progress of the batches handled meanwhile goes out as one.
    expect(events.filter((e) => e.startsWith('commit'))).toEqual(['commit 4 sent', 'commit 4 answered', 'commit 12 sent', 'commit 12 answered']);
    expect(committedAfter).toBe(12);
  });
  it('carries the progress of a commit that did not get through (the broker unreachable) in the next one', async () => {
    await broker.createTopic({ topic: 'one', partitions: 1 });
    await onelog.producer().send({ topic: 'one', messages: Array.from({ length: 12 }, (_, i) => ({ value: `v${i}` })) });
    const sent: number[] = [];
    const commit = broker.commitOffsets.bind(broker);
    vi.spyOn(broker, 'commitOffsets').mockImplementation(async (request) => {
      sent.push(request.offsets[0]!.offset);
      if (sent.length === 1) throw new OnelogError('BROKER_CLOSED', 'the broker is closing');
      await commit(request);
    });
    const consumer = onelog.consumer({ groupId: 'g', startPolicy: 'earliest', maxRecords: 4, maxWaitMs: 0, overlapCommits: true });
    consumer.subscribe({ topic: 'one' });
    await consumer.run({ eachMessage: ({ message }) => (message.offset === 11 ? void consumer.stop() : undefined) });
    expect(sent[0]).toBe(4);
    expect(sent.at(-1)).toBe(12);
    expect((await broker.describeGroup('g')).subscriptions[0]!.partitions[0]!.committedOffset).toBe(12);
  });
});

describe('Consumer with a retry policy', () => {
  beforeEach(async () => {
    await broker.subscribe({ groupId: 'g', topic: 't', startPolicy: 'earliest', retry: { delaysMs: [60_000], maxAttempts: 2 } });
  });

  it('retries a throwing handler in place maxInPlaceRetries times, then nacks the record with the error as reason', async () => {
    const clock = new ManualClock(0);
    const consumer = onelog.consumer({ groupId: 'g', maxWaitMs: 0, maxInPlaceRetries: 2, clock });
    consumer.subscribe({ topic: 't' });
    const tries: string[] = [];
    const running = consumer.run({
      eachMessage: ({ message }) => {
        if (message.topic !== 't') return;
        tries.push(`${message.partition}:${message.offset}`);
        if (message.partition === 0 && message.offset === 4) throw new Error(`bad ${message.value}`);
        if (tries.length >= 32) void consumer.stop();
      },
    });
    // Each quick retry waits its backoff on the consumer's clock.
    for (const ms of [100, 200]) {
      await vi.waitFor(() => expect(clock.sleeping).toBe(1));
      clock.advance(ms);
    }
    await running;
    expect(tries.filter((t) => t === '0:4')).toHaveLength(3);
    const [moved] = (await broker.fetch({ topic: 't.g.retry-1', partitions: [{ partition: 0, offset: 0 }] })).partitions[0]!.records;
    expect(headerText(moved!.headers, RETRY_HEADERS.reason)).toBe('bad v12');
    expect(headerText(moved!.headers, RETRY_HEADERS.originalOffset)).toBe('4');
    expect(await committed('g')).toEqual([10, 10, 10]);
  });

  it('nack(message) from the handler moves the record and the handler goes on; attempt and original are on every message', async () => {
    const consumer = onelog.consumer({ groupId: 'g', maxWaitMs: 0 });
    consumer.subscribe({ topic: 't' });
    const seen: Array<{ offset: number; attempt: number; original: unknown }> = [];
    await consumer.run({
      eachMessage: async ({ message }) => {
        seen.push({ offset: message.offset, attempt: message.attempt, original: message.original });
        if (message.partition === 1 && message.offset === 2) expect(await consumer.nack(message, 'later')).toMatchObject({ topic: 't.g.retry-1', attempt: 2 });
        if (seen.length === 30) void consumer.stop();
      },
    });
    expect(seen.every((s) => s.attempt === 1)).toBe(true);
    expect(seen[0]!.original).toEqual({ topic: 't', partition: expect.any(Number), offset: seen[0]!.offset, timestamp: expect.any(Number) });
    expect(await committed('g')).toEqual([10, 10, 10]);
    expect((await broker.describeTopic('t.g.retry-1')).partitions.map((p) => p.highWatermark)).toEqual([0, 1, 0]);
  });

  it('with five retry tiers the first fetch is of the topic, and an idle member long-polls only the topic', async () => {
    await broker.subscribe({ groupId: 'g', topic: 't', retry: { delaysMs: [1000, 1000, 1000, 1000, 1000], maxAttempts: 6 } });
    const fetches: Array<{ topic: string; maxWaitMs: number; records: number }> = [];
    const fetch = broker.fetch.bind(broker);
    vi.spyOn(broker, 'fetch').mockImplementation(async (request) => {
      const answer = await fetch(request);
      if (!request.ahead) fetches.push({ topic: request.topic, maxWaitMs: request.maxWaitMs ?? 0, records: answer.partitions.reduce((n, p) => n + p.records.length, 0) });
      return answer;
    });
    const consumer = onelog.consumer({ groupId: 'g', maxWaitMs: 100 });
    consumer.subscribe({ topic: 't' });
    const assigned: string[] = [];
    let seen = 0;
    let idleFrom = 0;
    const running = consumer.run({
      onPartitionsAssigned: (partitions) => assigned.push(...partitions.map((p) => `${p.topic}/${p.partition}`)),
      eachMessage: () => {
        seen++;
        if (seen === 30) idleFrom = fetches.length;
      },
    });
    // Two idle rounds over the six topics, then stop.
    await vi.waitFor(() => expect(seen === 30 && fetches.length >= idleFrom + 14).toBe(true), { timeout: 5000 });
    await consumer.stop();
    await running;
    expect(assigned.sort()).toEqual(['t', ...[1, 2, 3, 4, 5].map((n) => `t.g.retry-${n}`)].flatMap((t) => [0, 1, 2].map((p) => `${t}/${p}`)).sort());
    // The records waiting on the topic come in the first answer: no tier is fetched (nor waited on) before it.
    expect(fetches[0]).toMatchObject({ topic: 't', records: expect.any(Number) });
    expect(fetches[0]!.records).toBeGreaterThan(0);
    // Idle, the topic long-polls and the tiers answer at once: a round costs one maxWaitMs, not six.
    const idle = fetches.slice(idleFrom).filter((f) => f.records === 0);
    expect(idle.filter((f) => f.topic === 't').every((f) => f.maxWaitMs === 100)).toBe(true);
    expect(idle.filter((f) => f.topic !== 't').every((f) => f.maxWaitMs === 0)).toBe(true);
    expect(new Set(idle.map((f) => f.topic)).size).toBe(6);
  });

  it('without a policy, a throwing handler still stops the consumer with its error', async () => {
    const consumer = onelog.consumer({ groupId: 'plain', startPolicy: 'earliest', maxWaitMs: 0 });
    consumer.subscribe({ topic: 't' });
    const boom = new Error('no policy');
    await expect(consumer.run({ eachMessage: () => { throw boom; } })).rejects.toBe(boom);
  });
});

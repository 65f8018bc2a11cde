/**
 * The client Consumer as a group member, on an embedded broker: commit modes, commit(message), handler
 * failures, two members sharing a topic through a rebalance, rejoining after fencing, paused partitions and
 * resets while running. The member session heartbeats on real timers, so every wait here is bounded by a
 * condition (never a sleep for a timer); session timeouts are short and fetches long-poll for 20 ms.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { Onelog } from '../../src/client/index.js';
import type { Consumer, ConsumerOptions, EachMessagePayload } from '../../src/client/index.js';
import type { OnelogApi } from '../../src/protocol/api.js';
import type { CommitRequest } from '../../src/protocol/offsets.js';
import type { OnelogError } from '../../src/protocol/errors.js';
import { tmpDir } from '../helpers/tmp.js';

const SESSION_TIMEOUT_MS = 3000;

let broker: Broker;
let onelog: Onelog;
const consumers: Consumer[] = [];

beforeEach(async () => {
  broker = await Broker.open({ dataDir: tmpDir(), sessionCheckIntervalMs: 100, retentionCheckIntervalMs: 0, compactionIntervalMs: 0 });
  onelog = new Onelog({ api: broker });
});
afterEach(async () => {
  await Promise.all(consumers.splice(0).map((c) => c.stop()));
  await broker.close();
});

/** A consumer of `topic` in `groupId`, with short timeouts, stopped after the test. */
function consumer(topic: string, options: Partial<ConsumerOptions> = {}, client = onelog): Consumer {
  const c = client.consumer({
    groupId: 'g', startPolicy: 'earliest', sessionTimeoutMs: SESSION_TIMEOUT_MS, maxWaitMs: 20, ...options,
  });
  c.subscribe({ topic });
  consumers.push(c);
  return c;
}

/** Creates `topic` with `perPartition` records in each partition, values `p<partition>-<offset>`. */
async function topic(name: string, partitions: number, perPartition: number): Promise<void> {
  await broker.createTopic({ topic: name, partitions });
  await produce(name, partitions, perPartition, 0);
}

async function produce(name: string, partitions: number, perPartition: number, from: number, timestamp?: number): Promise<void> {
  const messages = [];
  for (let p = 0; p < partitions; p++) {
    for (let i = from; i < from + perPartition; i++) messages.push({ value: `p${p}-${i}`, partition: p, ...(timestamp ? { timestamp } : {}) });
  }
  await onelog.producer().send({ topic: name, messages });
}

/** Resolves once `condition()` holds; fails after `timeoutMs` naming `what`. Polls; never waits for a timer's work. */
async function waitFor(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function committed(t: string, groupId = 'g'): Promise<Array<number | null>> {
  const d = await broker.describeGroup(groupId);
  return d.subscriptions.find((s) => s.topic === t)!.partitions.map((p) => p.committedOffset);
}

const label = ({ partition, message }: Pick<EachMessagePayload, 'partition' | 'message'>) => `${partition}:${message.offset}`;

describe('Consumer in a group', () => {
  it('before-processing commits a fetched batch before its handler runs', async () => {
    await topic('t', 2, 5);
    const c = consumer('t', { commitMode: 'before-processing' });
    const seen: Array<{ at: string; committed: number | null }> = [];
    await c.run({
      eachMessage: async (payload) => {
        seen.push({ at: label(payload), committed: (await committed('t'))[payload.partition]! });
        if (seen.length === 10) void c.stop();
      },
    });
    expect(seen).toHaveLength(10);
    for (const s of seen) expect(s.committed).toBe(5); // the whole batch, before its first record was handled
    expect((await broker.describeGroup('g')).members).toEqual([]); // left on stop
  });

  it('after-processing commits a batch only after its handlers resolved', async () => {
    await topic('t', 1, 5);
    const c = consumer('t', { maxRecords: 2 });
    const seen: Array<{ offset: number; committed: number | null }> = [];
    await c.run({
      eachMessage: async ({ message }) => {
        seen.push({ offset: message.offset, committed: (await committed('t'))[0]! });
        if (seen.length === 5) void c.stop();
      },
    });
    // Batches [0, 1], [2, 3], [4]: inside a handler, the commit is the end of the batch before (0 at first:
    // the start position, committed when the partition was first assigned).
    expect(seen).toEqual([
      { offset: 0, committed: 0 }, { offset: 1, committed: 0 },
      { offset: 2, committed: 2 }, { offset: 3, committed: 2 },
      { offset: 4, committed: 4 },
    ]);
    expect(await committed('t')).toEqual([5]);
  });

  it('commit(message) with autoCommit: false commits exactly message.offset + 1, and nothing else is committed', async () => {
    await topic('t', 3, 10);
    const c = consumer('t', { autoCommit: false });
    const seen = new Set<string>();
    await c.run({
      eachMessage: async (payload) => {
        seen.add(label(payload));
        if (payload.partition === 0 && payload.message.offset === 3) await c.commit(payload.message);
        if (seen.size === 30) void c.stop();
      },
    });
    expect(seen.size).toBe(30);
    expect(await committed('t')).toEqual([4, 0, 0]); // the others stay at their start, committed when assigned
    await expect(c.commit({ topic: 't', partition: 0, offset: 8 })).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
  });

  it('leaves a record whose handler threw uncommitted (after-processing), committing those handled before it', async () => {
    await topic('t', 3, 6);
    const c = consumer('t');
    const handled = new Map<number, number>(); // partition -> last offset handled
    const boom = new Error('handler failed');
    await expect(c.run({
      eachMessage: ({ partition, message }) => {
        if (partition === 1 && message.offset === 2) throw boom;
        handled.set(partition, message.offset);
      },
    })).rejects.toBe(boom);
    const after = await committed('t');
    expect(after[1]).toBe(2);
    for (const p of [0, 2]) expect(after[p]).toBe(handled.has(p) ? handled.get(p)! + 1 : 0);

    // The group resumes at the failed record.
    const again = consumer('t');
    let first: number | undefined;
    await again.run({
      eachMessage: ({ partition, message }) => {
        if (partition !== 1) return;
        first ??= message.offset;
        void again.stop();
      },
    });
    expect(first).toBe(2);
  });

  it('two consumers share a 4-partition topic through a rebalance and see every record exactly once', async () => {
    await topic('t', 4, 10);
    const seen = new Map<string, string[]>(); // record -> who handled it
    let gate: (() => void) | null = null;
    const gated = new Promise<void>((resolve) => (gate = resolve));
    const handler = (who: 'a' | 'b') => async (payload: EachMessagePayload) => {
      // a stops in the middle of a batch until b joined and a was told to give partitions up
      if (who === 'a' && seen.size === 10) await gated;
      seen.set(label(payload), [...(seen.get(label(payload)) ?? []), who]);
    };
    const a = consumer('t', { clientId: 'a', maxRecords: 5 });
    const runA = a.run({ eachMessage: handler('a') });
    await waitFor(() => seen.size === 10, 'a to consume 10 records');

    const b = consumer('t', { clientId: 'b', maxRecords: 5 });
    const runB = b.run({ eachMessage: handler('b') });
    await waitFor(async () => {
      const d = await broker.describeGroup('g');
      const m = d.members.find((x) => x.clientId === 'a');
      return d.members.length === 2 && m!.generationId === d.generationId; // a's heartbeat answer revoked two partitions
    }, 'a to be told of the rebalance');
    gate!();
    await waitFor(async () => {
      const d = await broker.describeGroup('g');
      return d.state === 'Stable' && d.members.length === 2 && d.members.every((m) => m.assignment.length === 2);
    }, 'the group to settle with 2 + 2');
    await produce('t', 4, 10, 10);
    await waitFor(() => seen.size === 80, 'all 80 records');
    await Promise.all([a.stop(), b.stop()]);
    await Promise.all([runA, runB]);

    expect([...seen].filter(([, who]) => who.length > 1)).toEqual([]);
    expect(seen.size).toBe(80);
    const whose = (who: string) => [...seen].filter(([, w]) => w[0] === who).map(([at]) => at);
    // b took over a backlog that was a's before the rebalance, and got new records after it.
    expect(whose('b').some((at) => Number(at.split(':')[1]) < 10)).toBe(true);
    expect(whose('b').some((at) => Number(at.split(':')[1]) >= 10)).toBe(true);
    expect(whose('a').some((at) => Number(at.split(':')[1]) >= 10)).toBe(true);
    expect(await committed('t')).toEqual([20, 20, 20, 20]);
  });

  it('rejoins by itself after being removed from the group, committing nothing for the old membership', async () => {
    await topic('t', 2, 10);
    const commits: Array<CommitRequest & { ok: boolean; code?: string }> = [];
    const api = new Proxy(broker, {
      get(target, prop) {
        if (prop === 'commitOffsets') {
          return async (request: CommitRequest) => {
            try {
              await target.commitOffsets(request);
              commits.push({ ...request, ok: true });
            } catch (err) {
              commits.push({ ...request, ok: false, code: (err as OnelogError).code });
              throw err;
            }
          };
        }
        const value: unknown = Reflect.get(target, prop);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    }) as OnelogApi;
    const c = consumer('t', {}, new Onelog({ api }));
    let gate: (() => void) | null = null;
    const gated = new Promise<void>((resolve) => (gate = resolve));
    const handledBy: Array<{ at: string; memberId: string }> = [];
    const run = c.run({
      eachMessage: async (payload) => {
        if (handledBy.length === 0) await gated; // the first record waits while the member is removed
        handledBy.push({ at: label(payload), memberId: c.memberId });
      },
    });
    await waitFor(() => gate !== null && c.memberId !== '', 'the consumer to join');
    await waitFor(async () => (await broker.describeGroup('g')).members.some((m) => m.assignment.length === 2), 'the assignment');
    const old = c.memberId;
    await broker.leaveGroup({ groupId: 'g', memberId: old }); // as if fenced: the coordinator forgot it
    gate!();
    await waitFor(() => c.memberId !== '' && c.memberId !== old, 'a rejoin under a new member id');
    await waitFor(async () => JSON.stringify(await committed('t')) === '[10,10]', 'everything committed by the new member');
    await c.stop();
    await run;

    expect(commits.filter((x) => x.memberId === old && x.ok)).toEqual([]);
    // It did try: the batch in hand when it was removed, refused; then only the new member's commits.
    expect(commits.filter((x) => x.memberId === old).map((x) => x.code)).toEqual(['UNKNOWN_MEMBER_ID']);
    expect(commits.filter((x) => x.ok).length).toBeGreaterThan(0);
    // What the old member processed is delivered again to the new one (at-least-once), never committed twice over.
    const first = handledBy[0]!;
    expect(first.memberId).toBe(old);
    expect(handledBy.some((h) => h.at === first.at && h.memberId !== old)).toBe(true);
    const lastNew = new Set(handledBy.filter((h) => h.memberId !== old).map((h) => h.at));
    expect(lastNew.size).toBe(20);
  });

  it('reports a paused partition through onPartitionError while the others flow; a reset while running resumes it', async () => {
    await topic('t', 3, 6);
    await broker.commitOffsets({ groupId: 'g', topic: 't', offsets: [{ partition: 0, offset: 1 }] });
    await broker.deleteRecords({ topic: 't', partition: 0, beforeOffset: 4 });
    const errors: Array<{ code: string; partition: number; recordsLost: unknown }> = [];
    const seen = new Set<string>();
    const c = consumer('t');
    const run = c.run({
      eachMessage: (payload) => void seen.add(label(payload)),
      onPartitionError: (error, where) => errors.push({ code: error.code, partition: where.partition, recordsLost: error.context.recordsLost }),
    });
    await waitFor(() => seen.size === 12 && errors.length > 0, 'partitions 1 and 2, and the error of 0');
    expect(errors[0]).toEqual({ code: 'OFFSET_OUT_OF_RANGE', partition: 0, recordsLost: 3 });
    expect([...seen].filter((s) => s.startsWith('0:'))).toEqual([]);
    const paused = (await broker.describeGroup('g')).subscriptions[0]!.partitions[0]!;
    expect(paused.paused).toMatchObject({ code: 'OFFSET_OUT_OF_RANGE' });

    const reset = await broker.resetOffsets({ groupId: 'g', topic: 't', partition: 0, spec: { to: 'earliest' }, execute: true, requestedBy: 'test' });
    expect(reset.partitions).toEqual([{ partition: 0, currentOffset: 1, newOffset: 4 }]);
    await waitFor(() => seen.has('0:5'), 'partition 0 after the reset');
    await waitFor(async () => (await committed('t'))[0] === 6, 'partition 0 committed');
    await c.stop();
    await run;
    expect([...seen].filter((s) => s.startsWith('0:')).sort()).toEqual(['0:4', '0:5']);
    const d = await broker.describeGroup('g');
    expect(d.subscriptions[0]!.partitions[0]!.paused).toBeNull();
    expect(d.resets[0]).toMatchObject({ partition: 0, oldOffset: 1, newOffset: 4, requestedBy: 'test' });
  });

  it('stops with the broker\'s error when no heartbeat gets through for a session timeout while it has nothing to fetch', async () => {
    await topic('t', 1, 2);
    await broker.commitOffsets({ groupId: 'g', topic: 't', offsets: [{ partition: 0, offset: 0 }] });
    await broker.deleteRecords({ topic: 't', partition: 0, beforeOffset: 2 });
    const paused: number[] = [];
    const c = consumer('t', { sessionTimeoutMs: 1000 });
    const run = c.run({ eachMessage: () => {}, onPartitionError: (_error, where) => void paused.push(where.partition) });
    await waitFor(() => paused.length === 1, 'the only partition paused');
    await broker.close(); // every later request answers BROKER_CLOSED
    await expect(run).rejects.toMatchObject({ code: 'BROKER_CLOSED' });
    broker = await Broker.open({ dataDir: tmpDir() }); // for afterEach
  });

  it('rides out a broker restart shorter than its session timeout: it rejoins and resumes from the committed offsets', async () => {
    const dataDir = tmpDir();
    await broker.close();
    broker = await Broker.open({ dataDir, sessionCheckIntervalMs: 100 });
    let current = broker;
    // The client's view of "the broker at this address": calls go to whichever broker runs now.
    const api = new Proxy({} as OnelogApi, {
      get: (_target, name) => (...args: unknown[]) => (Reflect.get(current, name) as (...a: unknown[]) => unknown).apply(current, args),
    });
    await broker.createTopic({ topic: 't', partitions: 2 });
    await new Onelog({ api }).producer().send({ topic: 't', messages: Array.from({ length: 10 }, (_, i) => ({ value: `a${i}`, partition: i % 2 })) });
    const seen: string[] = [];
    const c = consumer('t', {}, new Onelog({ api }));
    const run = c.run({ eachMessage: ({ message }) => void seen.push(message.value!.toString()) });
    await waitFor(async () => seen.length === 10 && (await committed('t')).every((o) => o === 5), 'the first 10 committed');

    await broker.close(); // the consumer's requests now fail with BROKER_CLOSED (retriable)
    await new Promise((resolve) => setTimeout(resolve, 300)); // an outage, well under the session timeout
    broker = await Broker.open({ dataDir, sessionCheckIntervalMs: 100 });
    current = broker;
    await new Onelog({ api }).producer().send({ topic: 't', messages: Array.from({ length: 10 }, (_, i) => ({ value: `b${i}`, partition: i % 2 })) });
    await waitFor(async () => seen.length === 20 && (await committed('t')).every((o) => o === 10), 'the next 10 after the restart');
    await c.stop();
    await run;
    expect(seen.slice(10).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `b${i}`));
    expect((await broker.describeGroup('g')).state).toBe('Empty');
  });

  it('seeks by timestamp: a datetime newer than every record lands at the log end; an older one replays, even while running', async () => {
    const t0 = Date.UTC(2020, 0, 1);
    await broker.createTopic({ topic: 't', partitions: 2 });
    for (let i = 0; i < 5; i++) await produce('t', 2, 1, i, t0 + i * 60_000);
    const end = await broker.resetOffsets({ groupId: 'g', topic: 't', spec: { to: 'datetime', timestamp: t0 + 3_600_000 }, execute: true });
    expect(end.partitions).toEqual([{ partition: 0, currentOffset: null, newOffset: 5 }, { partition: 1, currentOffset: null, newOffset: 5 }]);
    const d = await broker.describeGroup('g');
    expect(d.subscriptions[0]!.partitions.map((p) => [p.committedOffset, p.highWatermark, p.lag])).toEqual([[5, 5, 0], [5, 5, 0]]);

    const seen: string[] = [];
    const c = consumer('t'); // earliest would start at 0: the committed offsets win
    const run = c.run({ eachMessage: (payload) => void seen.push(label(payload)) });
    await waitFor(async () => (await broker.describeGroup('g')).members[0]?.assignment.length === 2, 'the assignment');
    await produce('t', 2, 1, 5);
    await waitFor(() => seen.length === 2, 'the two new records');
    expect(seen.sort()).toEqual(['0:5', '1:5']);

    // While running: back to the record at t0 + 3 min (offset 3), replayed by the live consumer.
    const replay = await broker.resetOffsets({ groupId: 'g', topic: 't', spec: { to: 'datetime', timestamp: t0 + 180_000 }, execute: true });
    expect(replay.partitions.map((p) => p.newOffset)).toEqual([3, 3]);
    await waitFor(() => seen.length === 8, 'the replay');
    await c.stop();
    await run;
    expect(seen.slice(2).sort()).toEqual(['0:3', '0:4', '0:5', '1:3', '1:4', '1:5']);
    expect(await committed('t')).toEqual([6, 6]);
  });
});


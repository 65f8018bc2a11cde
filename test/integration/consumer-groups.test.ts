/**
 * Consumer groups on real processes: `onelog serve` on port 0 and consumer group members as child processes
 * (test/fixtures/group-consumer.mjs, which uses the built client in dist/), on the real Wikipedia edits.
 * - three members share a 6-partition topic two partitions each; one is SIGKILLed mid-batch; after its
 *   session timeout its partitions move to the others; everything is consumed, and the only duplicates are
 *   what the killed member processed after its last commit;
 * - a zombie (SIGSTOPped past its session timeout, then SIGCONTed) has its commit refused, and the group's
 *   committed offsets do not move;
 * - an offset reset to a datetime newer than every record puts the group at the log end.
 * Needs the build (`npm run build`, done by `npm test`).
 */
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpApi, Producer } from '../../src/client/index.js';
import type { GroupDescription } from '../../src/protocol/groups.js';
import { processedRecords, startChild, stopCleanly, waitFor, waitForAllCommitted } from '../helpers/children.js';
import type { Child } from '../helpers/children.js';
import { runCli, startServer } from '../helpers/processes.js';
import type { ServerProcess } from '../helpers/processes.js';
import { tmpDir } from '../helpers/tmp.js';
import { readEdits } from '../helpers/wikiticker.js';

const SESSION_TIMEOUT_MS = 2000;
const edits = readEdits();

const running: ServerProcess[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop('SIGKILL');
});

/** A server on a fresh data dir, a topic of `partitions` partitions holding nothing yet, and an API client. */
async function setup(topic: string, partitions: number) {
  const server = await startServer(tmpDir());
  running.push(server);
  const api = new HttpApi(server.url);
  await api.createTopic({ topic, partitions, config: { retentionMs: -1 } });
  return { server, api, dir: tmpDir('onelog-consumers-') };
}

/** Produces edits[from, to) keyed `channel|page` with their own timestamps; answers the high watermarks. */
async function produceEdits(api: HttpApi, topic: string, from: number, to: number): Promise<number[]> {
  const producer = new Producer(api);
  for (let i = from; i < to; i += 500) {
    await producer.send({ topic, messages: edits.slice(i, Math.min(i + 500, to)).map((e) => ({ key: e.key, value: e.value, timestamp: e.timestamp })) });
  }
  return (await api.describeTopic(topic)).partitions.map((p) => p.highWatermark);
}

/** partition -> committed offset (null if never committed). */
function committedOf(d: GroupDescription): Array<number | null> {
  return d.subscriptions[0]!.partitions.map((p) => p.committedOffset);
}

function assignmentOf(d: GroupDescription, memberId: string): number[] | undefined {
  return d.members.find((m) => m.memberId === memberId)?.assignment.map((tp) => tp.partition).sort((a, b) => a - b);
}

const memberLine = (l: string) => l.startsWith('member ');

describe('consumer groups on real processes', () => {
  it('three members split six partitions; a SIGKILLed member\'s partitions move after its session timeout; only its uncommitted records repeat', async () => {
    const topic = 'edits';
    const groupId = 'loaders';
    const { api, server, dir } = await setup(topic, 6);
    const files = ['a', 'b', 'c'].map((n) => path.join(dir, `${n}.txt`));
    const base = { url: server.url, groupId, topic, sessionTimeoutMs: SESSION_TIMEOUT_MS, maxRecords: 50, maxWaitMs: 200 };
    // b parks (holds its handler) after its 150th record: mid-batch, so what it processed in that batch is not committed.
    const children = files.map((out, i) => startChild('group-consumer.mjs', { ...base, out, clientId: `child-${i}`, ...(i === 1 ? { park: { count: 150 } } : {}) }));
    const [a, b, c] = children as [Child, Child, Child];
    await Promise.all(children.map((ch) => ch.line(memberLine, 'its member id')));

    // Stable with two partitions each, before any record exists (so no partition changes hands mid-stream yet).
    const stable = await waitFor('three members, two partitions each', async () => {
      const d = await api.describeGroup(groupId);
      return d.state === 'Stable' && d.members.length === 3 && children.every((ch) => assignmentOf(d, ch.memberId())?.length === 2) && d;
    });
    expect(children.flatMap((ch) => assignmentOf(stable, ch.memberId())!).sort()).toEqual([0, 1, 2, 3, 4, 5]);
    const bPartitions = assignmentOf(stable, b.memberId())!;

    const highWatermarks = await produceEdits(api, topic, 0, 3000);
    expect(highWatermarks.reduce((x, y) => x + y, 0)).toBe(3000);
    expect(Math.min(...highWatermarks)).toBeGreaterThan(100);

    await b.line((l) => l.startsWith('parked '), 'parked');
    // b commits nothing while its handler is held: this is what it committed last.
    const committedAtKill = committedOf(await api.describeGroup(groupId));
    b.proc.kill('SIGKILL');
    expect((await b.exited).signal).toBe('SIGKILL');
    const killedAt = Date.now();

    const moved = await waitFor('b\'s partitions moved to a and c', async () => {
      const d = await api.describeGroup(groupId);
      const ids = d.members.map((m) => m.memberId).sort();
      return d.state === 'Stable' && ids.join() === [a.memberId(), c.memberId()].sort().join() &&
        assignmentOf(d, a.memberId())!.length === 3 && assignmentOf(d, c.memberId())!.length === 3 && d;
    }, 10_000, 25);
    // Not before the session timeout ran out (b's last heartbeat came at most a third of it before the kill).
    expect(Date.now() - killedAt).toBeGreaterThanOrEqual(SESSION_TIMEOUT_MS * 2 / 3 - 100);
    expect([...assignmentOf(moved, a.memberId())!, ...assignmentOf(moved, c.memberId())!].sort()).toEqual([0, 1, 2, 3, 4, 5]);

    const done = await waitForAllCommitted(api, groupId);
    expect(done.subscriptions[0]!.partitions.map((p) => p.highWatermark)).toEqual(highWatermarks);
    await Promise.all([stopCleanly(a), stopCleanly(c)]);

    const [byA, byB, byC] = files.map(processedRecords) as [ReturnType<typeof processedRecords>, ReturnType<typeof processedRecords>, ReturnType<typeof processedRecords>];
    // Within one member, each partition's records come in order, none twice.
    for (const records of [byA, byB, byC]) {
      for (let p = 0; p < 6; p++) {
        const offsets = records.filter((r) => r.partition === p).map((r) => r.offset);
        expect(offsets).toEqual([...offsets].sort((x, y) => x - y));
        expect(new Set(offsets).size).toBe(offsets.length);
      }
    }
    const counts = new Map<string, number>();
    for (const r of [...byA, ...byB, ...byC]) counts.set(`${r.partition}:${r.offset}`, (counts.get(`${r.partition}:${r.offset}`) ?? 0) + 1);
    let duplicates = 0;
    for (let p = 0; p < 6; p++) {
      const bOffsets = byB.filter((r) => r.partition === p).map((r) => r.offset);
      if (!bPartitions.includes(p)) expect(bOffsets, `b never had partition ${p}`).toEqual([]);
      // b owned p from offset 0 until the kill; it committed up to `from`; the new owner starts there.
      const from = committedAtKill[p] ?? 0;
      const bLast = bOffsets.length ? bOffsets.at(-1)! : -1;
      if (bPartitions.includes(p)) {
        expect(bOffsets).toEqual(Array.from({ length: bLast + 1 }, (_, i) => i));
        const next = [...byA, ...byC].filter((r) => r.partition === p).map((r) => r.offset);
        expect(next[0], `the new owner of ${p} starts at b's last commit`).toBe(from);
      }
      for (let offset = 0; offset < highWatermarks[p]!; offset++) {
        const n = counts.get(`${p}:${offset}`) ?? 0;
        const redelivered = bPartitions.includes(p) && offset >= from && offset <= bLast;
        expect(n, `record ${p}:${offset}`).toBe(redelivered ? 2 : 1);
        if (redelivered) duplicates++;
      }
    }
    expect(counts.size).toBe(3000);
    // The parked record at least was processed by b and not committed.
    expect(duplicates).toBeGreaterThan(0);
  });

  it('refuses the commit of a zombie member that was stopped past its session timeout; committed offsets stay', async () => {
    const topic = 'zombie';
    const groupId = 'sleepy';
    const { api, server, dir } = await setup(topic, 2);
    const highWatermarks = await produceEdits(api, topic, 0, 400);
    const out = path.join(dir, 'z.txt');
    const zombie = startChild('group-consumer.mjs', {
      url: server.url, groupId, topic, out, sessionTimeoutMs: SESSION_TIMEOUT_MS, maxRecords: 40, maxWaitMs: 200,
      park: { count: 100, commitOnCont: true },
    });
    const parked = await zombie.line((l) => l.startsWith('parked '), 'parked');
    const [partition, offset] = parked.slice('parked '.length).split(':').map(Number) as [number, number];
    const memberId = zombie.memberId();
    const before = await api.describeGroup(groupId);
    expect(before.members.map((m) => m.memberId)).toEqual([memberId]);
    const committedBefore = committedOf(before);
    // after-processing: the batch holding the parked record is not committed yet.
    expect(committedBefore[partition] ?? 0).toBeLessThanOrEqual(offset);

    zombie.proc.kill('SIGSTOP');
    await waitFor('the stopped member to be removed', async () => {
      const d = await api.describeGroup(groupId);
      return !d.members.some((m) => m.memberId === memberId);
    }, 10_000, 25);
    expect(committedOf(await api.describeGroup(groupId))).toEqual(committedBefore);

    zombie.proc.kill('SIGCONT');
    const answer = await zombie.line((l) => l.startsWith('commit-'), 'the commit\'s outcome');
    expect(['commit-refused UNKNOWN_MEMBER_ID', 'commit-refused ILLEGAL_GENERATION']).toContain(answer);
    const after = await api.describeGroup(groupId);
    expect(committedOf(after)).toEqual(committedBefore);
    expect(after.members).toEqual([]);

    // Stopping: its handler returns and the consumer's own commit of the batch is refused as well.
    await stopCleanly(zombie);
    const end = await api.describeGroup(groupId);
    expect(committedOf(end)).toEqual(committedBefore);
    expect(end.members).toEqual([]);
    expect(end.subscriptions[0]!.partitions.map((p) => p.highWatermark)).toEqual(highWatermarks);
    expect(processedRecords(out)).toHaveLength(100);
  });

  it('an offset reset to a datetime after every record puts the group at the log end; the next consumer reads only new records', async () => {
    const topic = 'seek';
    const groupId = 'seekers';
    const { api, server, dir } = await setup(topic, 2);
    const highWatermarks = await produceEdits(api, topic, 0, 300);
    // The group reads part of the topic (the CLI commits what it printed).
    const read = await runCli(server.url, ['consume', topic, '--group', groupId, '--from', 'earliest', '--max-records', '100']);
    expect(read.code).toBe(0);
    const partial = committedOf(await api.describeGroup(groupId));
    expect(partial.reduce<number>((s, o) => s + (o ?? 0), 0)).toBe(100);

    const future = new Date(Date.now() + 24 * 3600_000).toISOString();
    const dry = await runCli(server.url, ['offsets', 'reset', groupId, '--topic', topic, '--to-datetime', future, '--json']);
    expect(dry.code).toBe(0);
    expect(committedOf(await api.describeGroup(groupId))).toEqual(partial);
    const executed = await runCli(server.url, ['offsets', 'reset', groupId, '--topic', topic, '--to-datetime', future, '--execute', '--json']);
    expect(executed.code, executed.stderr).toBe(0);
    const result = JSON.parse(executed.stdout) as { executed: boolean; partitions: Array<{ partition: number; newOffset: number }> };
    expect(result.executed).toBe(true);
    expect(result.partitions.map((p) => p.newOffset)).toEqual(highWatermarks);
    const reset = await api.describeGroup(groupId);
    for (const p of reset.subscriptions[0]!.partitions) {
      expect(p.committedOffset).toBe(p.highWatermark);
      expect(p.lag).toBe(0);
    }

    // A member of the group gets nothing old: only what is produced after it joined.
    const out = path.join(dir, 'seek.txt');
    const child = startChild('group-consumer.mjs', { url: server.url, groupId, topic, out, sessionTimeoutMs: SESSION_TIMEOUT_MS, maxWaitMs: 200 });
    await child.line(memberLine, 'its member id');
    await waitFor('the member to hold both partitions', async () => {
      const d = await api.describeGroup(groupId);
      return d.state === 'Stable' && assignmentOf(d, child.memberId())?.length === 2;
    });
    const newHighWatermarks = await produceEdits(api, topic, 300, 310);
    await waitForAllCommitted(api, groupId);
    await stopCleanly(child);
    const got = processedRecords(out).sort((x, y) => x.partition - y.partition || x.offset - y.offset);
    const expected = [0, 1].flatMap((p) =>
      Array.from({ length: newHighWatermarks[p]! - highWatermarks[p]! }, (_, i) => ({ partition: p, offset: highWatermarks[p]! + i })));
    expect(got).toEqual(expected);
    expect(got).toHaveLength(10);
  });
});

/**
 * Issue 16's crash test: three `onelog serve` processes of one cluster on loopback, on the machine's PostgreSQL and
 * Redis and an s3rver; producers and a consumer group's three members spread over all three. The broker that
 * coordinates the group (and leads two partitions) is SIGKILLed; the broker that takes the group over is then
 * SIGSTOPped for longer than its leases, with a commit of one of its members and a produce of one of its partitions
 * left with it, and SIGCONTed. Every send attempt, poll and commit is recorded, and the group's committed offsets are
 * read from Redis every 100 ms; at the end the group catches up, every partition is read whole from both live
 * brokers, and the history checker (test/history/checker.ts) must find nothing: no acknowledged record lost, no offset
 * given twice, no gap, no record stored more often than sent or stored after a refusal, no committed offset going
 * backwards, every acknowledged record delivered to the group. The stopped broker's late commit is refused when it
 * resumes, and its offset never shows as committed; its late produce is refused, or (when the partition's lease had
 * lapsed meanwhile, no request reaching the broker that took it) stored once under a lease taken anew.
 *
 * Client requests end after {@link REQUEST_TIMEOUT_MS} (the clients' requestTimeoutMs, beyond a long-poll's wait):
 * a stopped broker's kernel accepts connections and holds the requests, so without it they would wait minutes.
 * Every phase waits for what it needs to see (in PostgreSQL's lease rows, Redis's committed offsets, the history),
 * each within {@link PHASE_MS}.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpApi } from '../../src/client/http-api.js';
import type { GroupDescription } from '../../src/protocol/groups.js';
import { RedisOffsetStore } from '../../src/offsets/redis-offset-store.js';
import { committedWatcher, finalRead, rawRequest, routedProducer } from '../chaos/cluster-workloads.js';
import type { RawAnswer } from '../chaos/cluster-workloads.js';
import { pullWorkload } from '../chaos/workloads.js';
import type { Workload } from '../chaos/workloads.js';
import { checkHistory } from '../history/checker.js';
import type { Operation } from '../history/checker.js';
import { History } from '../history/recording-api.js';
import { waitFor } from '../helpers/children.js';
import { startServer } from '../helpers/processes.js';
import type { ServerProcess } from '../helpers/processes.js';
import { startS3 } from '../helpers/s3.js';
import type { S3Server } from '../helpers/s3.js';
import { REDIS_URL, uniqueName } from '../helpers/services.js';
import { serveCluster } from '../helpers/cluster.js';
import { tmpDir } from '../helpers/tmp.js';

/** Partition and group leases, ms (`serve --lease-ms`). */
const LEASE_MS = 2000;
/** How long the stopped broker stays stopped at least, ms. */
const STOP_MS = 2.5 * LEASE_MS;
/** Longest a client waits for an answer's headers, or between body chunks, ms. */
const REQUEST_TIMEOUT_MS = 2500;
/** Members' session timeout, ms. */
const SESSION_TIMEOUT_MS = 6000;
/** Longest wait for what a phase needs to see, ms. */
const PHASE_MS = 30_000;
const TOPIC = 'events';
const PARTITIONS = 6;
const GROUP = 'cluster-chaos';
/** Answers that refuse a commit: the member's generation is fenced, or the broker no longer coordinates the group. */
const COMMIT_REFUSALS = ['ILLEGAL_GENERATION', 'NOT_COORDINATOR', 'UNKNOWN_MEMBER_ID'];

let s3: S3Server;
beforeAll(async () => {
  s3 = await startS3();
});
afterAll(async () => {
  await s3?.close();
});

/** A broker process of the cluster. */
interface ClusterBroker {
  id: number;
  url: string;
  server: ServerProcess;
  /** SIGSTOPped now. */
  stopped: boolean;
  /** Its warnings and errors (pino level >= 40) but refusals naming another broker, the last 20. */
  warnings: string[];
}

/** `list` rotated to start at index `i`. */
const rotate = <T>(list: readonly T[], i: number): T[] => [...list.slice(i), ...list.slice(0, i)];

/**
 * A commit's or send's outcome from a raw answer: 2xx acknowledged; a broker's refusal (a non-retriable 4xx, or the
 * request sent to a broker that is not the group's coordinator or the partition's leader: nothing done) refused;
 * anything else (no answer, a storage error) unknown.
 */
function rawOutcome(answer: RawAnswer): { ok: true } | { ok: false; code: string } | { ok: null } {
  if (!('status' in answer)) return { ok: null };
  if (answer.status >= 200 && answer.status < 300) return { ok: true };
  const code = typeof answer.body?.code === 'string' ? answer.body.code : '';
  const notHere = code === 'NOT_COORDINATOR' || (code === 'NOT_LEADER_OR_FOLLOWER' && answer.body?.stored === undefined);
  return (answer.status >= 400 && answer.status < 500) || notHere ? { ok: false, code } : { ok: null };
}

describe('a cluster of three brokers through a SIGKILL and a SIGSTOP past the leases', () => {
  it('loses, repeats and reorders nothing, and refuses the stopped broker\'s late commit', async () => {
    const began = Date.now();
    const log = (line: string) => console.log(`[cluster-chaos +${((Date.now() - began) / 1000).toFixed(1)}s] ${line}`);
    const apiAt = (url: string) => new HttpApi(url, { requestTimeoutMs: REQUEST_TIMEOUT_MS });
    const { schema, redis, serveArgs } = await serveCluster(s3, 'cluster_chaos');
    const pool = schema.pool(2);
    const offsets = await RedisOffsetStore.open({ url: REDIS_URL, keyPrefix: redis.prefix });
    /** Each broker's PostgreSQL sessions carry `${appName}-${brokerId}` (pg_stat_activity). */
    const appName = uniqueName('chaos').slice(-40);
    const history = new History();
    const brokers: ClusterBroker[] = [];
    const workloads: Workload[] = [];
    const startBroker = async (id: number) => {
      const warnings: string[] = [];
      const server = await startServer(tmpDir(), {
        args: [...serveArgs(id, `${schema.url}&application_name=${appName}-${id}`), '--lease-ms', String(LEASE_MS)],
        onLog: (entry) => {
          const line = JSON.stringify(entry);
          // Refusals naming another broker are answers, not trouble.
          if (typeof entry.level !== 'number' || entry.level < 40 || /NOT_LEADER_OR_FOLLOWER|NOT_COORDINATOR|does not (hold|coordinate)/.test(line)) return;
          warnings.push(line.slice(0, 600));
          if (warnings.length > 20) warnings.shift();
        },
      });
      const broker = { id, url: server.url, server, stopped: false, warnings };
      brokers.push(broker);
      return broker;
    };

    // What the phases wait for.
    const leaders = async () => (await pool.query<{ leader_broker_id: number | null }>(
      'SELECT leader_broker_id FROM onelog_partitions WHERE topic = $1 ORDER BY partition', [TOPIC])).rows.map((r) => r.leader_broker_id);
    const coordinator = async () => (await pool.query<{ holder_broker_id: number | null }>(
      'SELECT holder_broker_id FROM onelog_leases WHERE name = $1', [`group:${GROUP}`])).rows[0]?.holder_broker_id ?? null;
    const positions = async () => (await pool.query<{ partition: number; log_start_offset: string; high_watermark: string }>(
      'SELECT partition, log_start_offset, high_watermark FROM onelog_partitions WHERE topic = $1 ORDER BY partition', [TOPIC]))
      .rows.map((r) => ({ partition: r.partition, logStartOffset: Number(r.log_start_offset), highWatermark: Number(r.high_watermark) }));
    const watcher = committedWatcher(async () => (await offsets.list(GROUP)).filter((o) => o.topic === TOPIC), GROUP, history);
    workloads.push(watcher);
    const committed = async () => {
      const read = await watcher.read();
      return Array.from({ length: PARTITIONS }, (_, p) => read.get(`${TOPIC}/${p}`) ?? -1);
    };
    /** Where things stand: the group's coordinator, each partition's leader, the partitions with no acknowledged send
     * started at or after `since`, and those the group has not committed past `before` (by the watcher's read now). */
    const standing = async (since: number, before: number[]) => {
      const acked = new Set<number>();
      for (const op of history.operations) if (op.type === 'send' && op.outcome.ok === true && op.start >= since) acked.add(op.outcome.partition);
      const now = await committed();
      return {
        coordinator: await coordinator(), leaders: await leaders(),
        unacknowledged: Array.from({ length: PARTITIONS }, (_, p) => p).filter((p) => !acked.has(p)),
        notCommittedPast: now.flatMap((offset, p) => (offset > before[p]! ? [] : [`${p}: ${offset} <= ${before[p]}`])),
        sinceMs: Math.round(history.now() - since),
      };
    };
    type Standing = Awaited<ReturnType<typeof standing>>;
    const flowing = (s: Standing) => s.unacknowledged.length === 0 && s.notCommittedPast.length === 0;
    /** Waits until `done` holds of where things stand; on time out, says where they stood last. */
    const until = async (what: string, since: number, before: number[], done: (s: Standing) => boolean | Promise<boolean>) => {
      let last: Standing | undefined;
      try {
        await waitFor(what, async () => done(last = await standing(since, before)), PHASE_MS, 100);
      } catch (err) {
        throw new Error(`${(err as Error).message}; last seen: ${JSON.stringify(last)}`);
      }
    };
    /** The group's description as broker `b` answers it itself (null: it does not coordinate the group, or no answer). */
    const describeAt = async (b: ClusterBroker): Promise<GroupDescription | null> => {
      const answer = await rawRequest(b.url, 'GET', `/groups/${GROUP}`, undefined, REQUEST_TIMEOUT_MS, history);
      return 'status' in answer && answer.status === 200 ? answer.body as unknown as GroupDescription : null;
    };
    const stableWithThree = (d: GroupDescription | null) =>
      d !== null && d.state === 'Stable' && d.members.length === 3 && d.members.every((m) => m.assignment.length > 0) && d;

    try {
      // Three brokers; broker N's own first produce of partitions 2(N-1) and 2(N-1)+1 takes their leases, and the lease
      // balance (src/cluster/lease-balance.ts) may already move one while the others are still unheld: it ends at two each.
      await startBroker(1);
      await Promise.all([startBroker(2), startBroker(3)]);
      const urls = brokers.map((b) => b.url);
      log(`brokers ${brokers.map((b) => `${b.id}=${b.url}`).join(' ')}`);
      await apiAt(urls.join(',')).createTopic({ topic: TOPIC, partitions: PARTITIONS });
      for (const b of brokers) {
        const api = apiAt(b.url);
        for (const partition of [2 * (b.id - 1), 2 * (b.id - 1) + 1]) {
          const value = `warm-up-${partition}`;
          const start = history.now();
          const { offsets: [at] } = await api.produce({ topic: TOPIC, records: [{ key: null, value: Buffer.from(value), partition }] });
          history.add({ type: 'send', start, end: history.now(), process: 'warm-up', topic: TOPIC, value, outcome: { ok: true, ...at! } });
        }
      }
      await waitFor('two partitions led by each broker', async () => {
        const led = await leaders();
        return [1, 2, 3].every((id) => led.filter((l) => l === id).length === 2);
      }, PHASE_MS, 100);
      // The group's first request reaches broker 1: it coordinates the group.
      await apiAt(urls[0]!).subscribe({ groupId: GROUP, topic: TOPIC, startPolicy: 'earliest' });
      expect(await coordinator()).toBe(1);

      // Producers and members spread over the brokers: each starts at its own.
      const t0 = history.now();
      for (const [i, b] of brokers.entries()) {
        workloads.push(routedProducer({
          name: `producer-${b.id}`, apis: rotate(urls, i).map(apiAt), topic: TOPIC, partitions: PARTITIONS, history,
          batch: 10, concurrency: 2, firstPartition: (loop) => 2 * i + loop,
        }));
        workloads.push(pullWorkload({
          name: `member-${b.id}`, url: rotate(urls, i).join(','), topic: TOPIC, history, groupId: GROUP, startPolicy: 'earliest',
          sessionTimeoutMs: SESSION_TIMEOUT_MS, maxWaitMs: 200, maxRecords: 300, requestTimeoutMs: REQUEST_TIMEOUT_MS,
        }));
      }
      await until('traffic and commits on every partition, three members at broker 1', t0, Array(PARTITIONS).fill(0),
        async (s) => flowing(s) && stableWithThree(await describeAt(brokers[0]!)) !== false);
      log(`all flowing: ${tally(history.operations)}`);

      // SIGKILL broker 1, the group's coordinator and two partitions' leader: the others take them over once its
      // leases expire, and the group goes on there.
      const [x] = brokers;
      const killAt = history.now();
      const atKill = await committed();
      await x!.server.stop('SIGKILL');
      await until('the group and every partition on brokers 2 and 3, traffic and commits on every partition', killAt, atKill,
        (s) => s.coordinator !== null && s.coordinator !== 1 && s.leaders.every((l) => l !== 1) && flowing(s));
      const yId = (await coordinator())!;
      const y = brokers.find((b) => b.id === yId)!;
      const z = brokers.find((b) => b.id !== 1 && b.id !== yId)!;
      log(`broker 1 killed; broker ${y.id} coordinates the group, leaders ${(await leaders()).join(',')}: ${tally(history.operations)}`);

      // SIGSTOP broker Y (the group's coordinator now, and leader of some partitions) longer than its leases. A commit of
      // one of its members (offset 0, below what the group committed) and a produce of one of its partitions are left
      // with it: the stopped process holds them until it resumes.
      const description = await waitFor(`three members at broker ${y.id}`, async () => stableWithThree(await describeAt(y)), PHASE_MS, 100);
      const member = description.members[0]!;
      const latePartition = member.assignment.find((a) => a.topic === TOPIC)!.partition;
      // A partition Y leads, if it kept one (a lease it could not renew in time went to another broker), else any.
      const leadersAtStop = await leaders();
      const lateProducePartition = Math.max(0, leadersAtStop.indexOf(y.id));
      y.server.proc.kill('SIGSTOP');
      y.stopped = true;
      const stopAt = history.now();
      const atStop = await committed();
      expect(atStop[latePartition]).toBeGreaterThan(0);
      const lateCommit = { topic: TOPIC, memberId: member.memberId, generationId: member.generationId, offsets: [{ partition: latePartition, offset: 0 }] };
      let lateAnswers = 0;
      const lateCommitting = rawRequest(y.url, 'POST', `/groups/${GROUP}/offsets`, lateCommit, 60_000, history).finally(() => lateAnswers++);
      const lateProducing = rawRequest(y.url, 'POST', `/topics/${TOPIC}/records`, {
        encoding: 'base64', records: [{ key: null, value: Buffer.from('late-produce').toString('base64'), partition: lateProducePartition }],
      }, 60_000, history).finally(() => lateAnswers++);
      await until(`the group and every partition on broker ${z.id}, traffic and commits on every partition, ${STOP_MS} ms stopped`, stopAt, atStop,
        (s) => s.coordinator === z.id && s.leaders.every((l) => l === z.id) && flowing(s) && s.sinceMs >= STOP_MS);
      expect(lateAnswers).toBe(0); // held by the stopped process
      log(`late commit of ${TOPIC}/${latePartition} at 0 by ${member.memberId} (generation ${member.generationId}, committed ${atStop[latePartition]}); ` +
        `late produce to ${TOPIC}/${lateProducePartition} (led by broker ${leadersAtStop[lateProducePartition]} at the stop)`);
      log(`broker ${y.id} stopped ${(history.now() - stopAt).toFixed(0)} ms; broker ${z.id} took everything over: ${tally(history.operations)}`);

      // SIGCONT: the late requests are answered now.
      y.server.proc.kill('SIGCONT');
      y.stopped = false;
      const contAt = history.now();
      const commitAnswer = await lateCommitting;
      const produceAnswer = await lateProducing;
      const commitOutcome = rawOutcome(commitAnswer);
      const produceOutcome = rawOutcome(produceAnswer);
      history.add({
        type: 'commit', start: stopAt, end: commitAnswer.at, process: `late ${member.memberId}`, group: GROUP, topic: TOPIC, partition: latePartition,
        offset: 0, ok: commitOutcome.ok,
      });
      history.add({
        type: 'send', start: stopAt, end: produceAnswer.at, process: 'late', topic: TOPIC, value: 'late-produce',
        outcome: produceOutcome.ok === true ? { ok: true, ...(produceAnswer as unknown as { body: { offsets: Array<{ partition: number; offset: number }> } }).body.offsets[0]! }
          : produceOutcome.ok === false ? { ok: false, error: produceOutcome.code } : { ok: null },
      });
      log(`broker ${y.id} resumed: late commit answered ${JSON.stringify(commitAnswer).slice(0, 300)}; late produce ${JSON.stringify(produceAnswer).slice(0, 300)}`);
      await until('traffic and commits on every partition after the resumption', contAt, committedAt(contAt), flowing);

      // The end: producers stop, the group catches up with every partition's high watermark, the members leave.
      await Promise.all(workloads.filter((w) => w.name.startsWith('producer-')).map((w) => w.stop()));
      const ends = await positions();
      await waitFor('the group committed up to every high watermark', async () =>
        (await committed()).every((offset, p) => offset === ends[p]!.highWatermark), PHASE_MS, 100);
      await Promise.all(workloads.filter((w) => w.name.startsWith('member-')).map((w) => w.stop()));
      await watcher.stop();
      await watcher.read();
      expect(await positions()).toEqual(ends);
      for (const b of [y, z]) {
        const api = apiAt(b.url);
        for (const p of ends) await finalRead(api, TOPIC, p.partition, p.logStartOffset, p.highWatermark, history, `final ${b.id}`);
      }

      const anomalies = checkHistory(history.operations, { complete: [{ group: GROUP, topic: TOPIC }] });
      const counts = tally(history.operations);
      log(`${anomalies.length} anomalies; ${counts}; records ${ends.map((p) => p.highWatermark).join('+')}`);
      for (const a of anomalies.slice(0, 20)) log(`${a.kind}: ${a.message}\n  ${a.operations.map((op) => JSON.stringify(op).slice(0, 400)).join('\n  ')}`);
      expect(anomalies.map((a) => `${a.kind}: ${a.message}`)).toEqual([]);
      const acknowledged = history.operations.filter((op) => op.type === 'send' && op.outcome.ok === true).length;
      expect(acknowledged).toBeGreaterThan(1000);
      // The stopped broker's late commit: answered only after it resumed, refused, and its offset never committed.
      expect(commitAnswer.at).toBeGreaterThan(contAt);
      expect(commitOutcome).toMatchObject({ ok: false, code: expect.stringMatching(new RegExp(`^(${COMMIT_REFUSALS.join('|')})$`)) as unknown });
      const laterReads = history.operations.filter((op) => op.type === 'committed' && op.partition === latePartition && op.start > stopAt);
      expect(laterReads.length).toBeGreaterThan(0);
      expect(laterReads.filter((op) => op.type === 'committed' && op.offset! < atStop[latePartition]!)).toEqual([]);
      // Its late produce, answered after it resumed: refused while another broker held the partition's lease (and then
      // stored nowhere), or stored once at the offset acknowledged, under a lease it took anew once the other one's
      // expired (a partition no request reached for a lease); the checker holds it to either.
      expect(produceAnswer.at).toBeGreaterThan(contAt);
      expect([JSON.stringify({ ok: false, code: 'NOT_LEADER_OR_FOLLOWER' }), JSON.stringify({ ok: true })]).toContain(JSON.stringify(produceOutcome));
    } catch (err) {
      // What the producers last saw, and what the brokers' PostgreSQL sessions wait on (a lock held by a stopped one?).
      const lastSends = new Map<string, Operation[]>();
      for (const op of history.operations) if (op.type === 'send') lastSends.set(op.process, [...(lastSends.get(op.process) ?? []).slice(-40), op]);
      for (const [name, ops] of lastSends) {
        log(`${name} last sends (start+ms outcome, now ${history.now().toFixed(0)}): ${ops.filter((_, i) => i % 10 === 0).map((op) =>
          `${op.start.toFixed(0)}+${(op.end - op.start).toFixed(0)} ${JSON.stringify(op.type === 'send' ? op.outcome : null)}`).join(' | ')}`);
      }
      const { rows } = await pool.query(`SELECT application_name, state, wait_event_type, wait_event, (now() - state_change)::text AS since,
        left(query, 100) AS query FROM pg_stat_activity WHERE application_name LIKE $1 AND state <> 'idle'`, [`${appName}-%`]).catch(() => ({ rows: [] }));
      for (const r of rows) log(`PostgreSQL session ${JSON.stringify(r)}`);
      for (const b of brokers) if (b.warnings.length > 0) log(`broker ${b.id} warnings:\n  ${b.warnings.join('\n  ')}`);
      throw err;
    } finally {
      for (const b of brokers) if (b.stopped) b.server.proc.kill('SIGCONT');
      await Promise.race([Promise.all(workloads.map((w) => w.stop())), sleep(20_000)]);
      for (const b of brokers) await b.server.stop('SIGKILL');
      await offsets.close();
      await schema.drop();
      await redis.drop();
    }

    /** The group's committed offsets as the watcher last read them before `at`. */
    function committedAt(at: number): number[] {
      const before = Array<number>(PARTITIONS).fill(-1);
      for (const op of history.operations) if (op.type === 'committed' && op.end <= at && op.offset !== null) before[op.partition] = Math.max(before[op.partition]!, op.offset);
      return before;
    }
  }, 120_000);
});

/** Operations by kind (sends by outcome, commits by outcome), as one line. */
function tally(ops: readonly Operation[]): string {
  const counts: Record<string, number> = {};
  for (const op of ops) {
    const name = op.type === 'send' ? `send ${op.outcome.ok === true ? 'acknowledged' : op.outcome.ok === false ? 'refused' : 'unknown'}`
      : op.type === 'commit' ? `commit ${op.ok === true ? 'acknowledged' : op.ok === false ? 'refused' : 'unknown'}` : op.type;
    counts[name] = (counts[name] ?? 0) + 1;
  }
  return Object.entries(counts).sort().map(([name, n]) => `${name} ${n}`).join(', ');
}

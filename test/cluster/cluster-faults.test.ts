/**
 * Issue 38's faults, as an operator meets them: three `onelog serve` processes of one cluster on loopback (the
 * machine's PostgreSQL and Redis, an s3rver), six idempotent producers (one per partition) and a consumer group of
 * three members, all with the TypeScript client at its default request timeout (30 s). Three faults in turn:
 *
 * 1. kill -9 of the group's coordinator (a broker leading two partitions): each member joins the new coordinator once
 *    (one member id per member: none left behind for the session timeout to expire), and no partition is left
 *    unread longer than the lease plus a rebalance;
 * 2. SIGSTOP of a partition leader for eight leases: its producers wait for it about a lease (the client's wait for
 *    one broker is bounded by the lease the brokers name), not the pause; resumed, the broker logs at warn that
 *    its leases were taken;
 * 3. SIGTERM of the broker then leading the most partitions (and, as a rule, coordinating the group), mid-produce: no send fails
 *    (a closing broker answers `BROKER_CLOSED`, retriable, and the producers retry at the new leader).
 *
 * Throughout: no send fails, every acknowledged record is stored once and consumed. The stall of each fault (the
 * longest gap, per partition, between two consecutive acknowledgements or consumptions across it) is logged, and
 * held to the lease plus a margin. Every phase waits for what it needs to see, within {@link PHASE_MS}.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { HttpApi } from '../../src/client/http-api.js';
import { Producer } from '../../src/client/producer.js';
import { Consumer } from '../../src/member/consumer.js';
import type { GroupDescription, JoinGroupRequest, MemberAssignment } from '../../src/protocol/groups.js';
import { waitFor } from '../helpers/children.js';
import { startServer } from '../helpers/processes.js';
import type { ServerProcess } from '../helpers/processes.js';
import { s3ForFile } from '../helpers/s3-suite.js';
import { serveCluster } from '../helpers/cluster.js';
import { tmpDir } from '../helpers/tmp.js';

/** Partition and group leases, ms (`serve --lease-ms`). */
const LEASE_MS = 2000;
/**
 * How long past the lease a stall may last: a rebalance, a retry's backoff, two busy cores, ms. In CI, beside other
 * test files, a paused leader's produces once stalled 6.4 s (two answer timeouts of a lease + 1 s each).
 */
const MARGIN_MS = 6000;
/** How long the leader stays stopped, ms: eight leases, so a stall of the pause (16 s) is told from one of the lease (at most 8 s). */
const STOP_MS = 8 * LEASE_MS;
/** Members' session timeout, ms: long, so a member id left behind by a second join would stall its partitions this long. */
const SESSION_TIMEOUT_MS = 20_000;
/** Longest wait for what a phase needs to see, ms. */
const PHASE_MS = 30_000;
const TOPIC = 'faults';
const PARTITIONS = 6;
const GROUP = 'cluster-faults';

const s3 = s3ForFile();

/** A broker process of the cluster, and its warnings (pino level >= 40). */
interface ClusterBroker {
  id: number;
  url: string;
  server: ServerProcess;
  stopped: boolean;
  warnings: Array<Record<string, unknown>>;
}

/** An HttpApi that records each join's answer (which member id the coordinator gave, when). */
class JoinRecordingApi extends HttpApi {
  readonly joins: Array<{ memberId: string; at: number }> = [];

  override async joinGroup(request: JoinGroupRequest): Promise<MemberAssignment> {
    const answer = await super.joinGroup(request);
    this.joins.push({ memberId: answer.memberId, at: performance.now() });
    return answer;
  }
}

/** `list` rotated to start at index `i`. */
const rotate = <T>(list: readonly T[], i: number): T[] => [...list.slice(i), ...list.slice(0, i)];

/**
 * The longest gap, ms, between two consecutive times of `times` (ascending) across `[from, to]`: from the last time
 * at or before `from` (or `from`, if none) to the first after it, and so on up to `to`.
 */
function stallMs(times: readonly number[], from: number, to: number): number {
  let last = from;
  let longest = 0;
  for (const t of times) {
    if (t <= from) {
      last = t;
      continue;
    }
    if (t > to) break;
    longest = Math.max(longest, t - last);
    last = t;
  }
  return Math.max(longest, to - last);
}

describe('a cluster of three brokers through a coordinator kill, a paused leader and a clean stop', () => {
  it('keeps one member id per member, stalls about a lease, and fails no send', async () => {
    const began = performance.now();
    const log = (line: string) => console.log(`[cluster-faults +${((performance.now() - began) / 1000).toFixed(1)}s] ${line}`);
    const { schema, redis, serveArgs } = await serveCluster(s3(), 'cluster_faults');
    const pool = schema.pool(2);
    const brokers: ClusterBroker[] = [];
    const startBroker = async (id: number) => {
      const warnings: Array<Record<string, unknown>> = [];
      const server = await startServer(tmpDir(), {
        args: [...serveArgs(id), '--lease-ms', String(LEASE_MS)],
        onLog: (entry) => {
          if (typeof entry.level === 'number' && entry.level >= 40) warnings.push(entry);
        },
      });
      const broker = { id, url: server.url, server, stopped: false, warnings };
      brokers.push(broker);
      return broker;
    };
    const leaders = async () => (await pool.query<{ leader_broker_id: number | null }>(
      'SELECT leader_broker_id FROM onelog_partitions WHERE topic = $1 ORDER BY partition', [TOPIC])).rows.map((r) => r.leader_broker_id);
    const coordinator = async () => (await pool.query<{ holder_broker_id: number | null }>(
      'SELECT holder_broker_id FROM onelog_leases WHERE name = $1 AND expires_at > clock_timestamp()', [`group:${GROUP}`])).rows[0]?.holder_broker_id ?? null;

    // What the clients saw: each acknowledged value's partition and time, each consumed value's, each failed send.
    const acked = new Map<string, { partition: number; at: number }>();
    const ackTimes: number[][] = Array.from({ length: PARTITIONS }, () => []);
    const consumed = new Map<string, number>();
    const consumeTimes: number[][] = Array.from({ length: PARTITIONS }, () => []);
    const failures: Array<{ partition: number; code: string; message: string }> = [];
    let producing = true;
    const producerLoops: Array<Promise<void>> = [];
    const consumers: Array<{ consumer: Consumer; api: JoinRecordingApi; running: Promise<void> }> = [];
    const apis: HttpApi[] = [];
    const apiAt = (url: string) => {
      const api = new HttpApi(url);
      apis.push(api);
      return api;
    };
    /** Whether every partition had a record acknowledged after `since` and consumed. */
    const flowingSince = (since: number) => {
      const fresh = new Set<number>();
      for (const [value, at] of consumed) {
        const ack = acked.get(value);
        if (ack !== undefined && ack.at > since && at > since) fresh.add(ack.partition);
      }
      return fresh.size === PARTITIONS;
    };
    const describeAt = async (url: string): Promise<GroupDescription | null> => {
      const api = new HttpApi(url, { requestTimeoutMs: 2000 });
      try {
        return await api.describeGroup(GROUP);
      } catch {
        return null;
      } finally {
        api.close();
      }
    };
    const stalls = (from: number, to: number, which: number[][], partitions: readonly number[]) =>
      Math.max(...partitions.map((p) => stallMs(which[p]!, from, to)));
    const all = Array.from({ length: PARTITIONS }, (_, p) => p);

    try {
      await startBroker(1);
      await Promise.all([startBroker(2), startBroker(3)]);
      brokers.sort((a, b) => a.id - b.id);
      const urls = brokers.map((b) => b.url);
      log(`brokers ${brokers.map((b) => `${b.id}=${b.url}`).join(' ')}`);
      await apiAt(urls.join(',')).createTopic({ topic: TOPIC, partitions: PARTITIONS });
      // Brokers 2 and 3 take three partitions each (a broker's first produce of a partition takes its lease); the lease
      // balance (src/cluster/lease-balance.ts) then gives broker 1 its share: two partitions each.
      for (let p = 0; p < PARTITIONS; p++) {
        await apiAt(urls[p < 3 ? 1 : 2]!).produce({ topic: TOPIC, records: [{ key: null, value: Buffer.from(`warm-up-${p}`), partition: p }] });
      }
      await waitFor('two partitions led by each broker', async () => {
        const led = await leaders();
        return [1, 2, 3].every((id) => led.filter((l) => l === id).length === 2);
      }, PHASE_MS, 100);
      // The group's first request reaches broker 1: it coordinates the group.
      await apiAt(urls[0]!).subscribe({ groupId: GROUP, topic: TOPIC, startPolicy: 'earliest' });
      expect(await coordinator()).toBe(1);

      // One idempotent producer per partition, one send of 10 records at a time; each starts at its own broker.
      for (let p = 0; p < PARTITIONS; p++) {
        const producer = new Producer(apiAt(rotate(urls, p % 3).join(',')), { idempotent: true, retries: 20, retryBackoffMs: 100 });
        producerLoops.push((async () => {
          for (let seq = 0; producing; seq++) {
            const values = Array.from({ length: 10 }, (_, i) => `${p}-${seq}-${i}`);
            try {
              await producer.send({ topic: TOPIC, messages: values.map((value) => ({ value, partition: p })) });
              const at = performance.now();
              for (const value of values) acked.set(value, { partition: p, at });
              ackTimes[p]!.push(at);
            } catch (err) {
              failures.push({ partition: p, code: (err as { code?: string }).code ?? 'none', message: (err as Error).message });
              log(`send to ${p} failed: ${(err as Error).message}`);
            }
          }
        })());
      }
      // Three members, each starting at its own broker.
      for (let i = 0; i < 3; i++) {
        const api = new JoinRecordingApi(rotate(urls, i).join(','));
        apis.push(api);
        const consumer = new Consumer(api, { groupId: GROUP, startPolicy: 'earliest', sessionTimeoutMs: SESSION_TIMEOUT_MS, maxWaitMs: 200, clientId: `member-${i}` });
        consumer.subscribe({ topic: TOPIC });
        const running = consumer.run({
          eachMessage: ({ partition, message }) => {
            const at = performance.now();
            consumed.set(message.value!.toString(), at);
            consumeTimes[partition]!.push(at);
          },
        });
        consumers.push({ consumer, api, running: running.catch((err: unknown) => log(`member-${i} ended: ${(err as Error).message}`)) });
      }
      const t0 = performance.now();
      await waitFor('every partition produced and consumed, three members at broker 1', async () => {
        const d = flowingSince(t0) ? await describeAt(urls[0]!) : null;
        return d !== null && d.state === 'Stable' && d.members.length === 3;
      }, PHASE_MS, 100);
      log(`flowing: ${acked.size} acknowledged, ${consumed.size} consumed`);

      // 1. kill -9 of the group's coordinator, under the running group.
      const killAt = performance.now();
      const joinsBefore = consumers.map((c) => c.api.joins.length);
      await brokers[0]!.server.stop('SIGKILL');
      const newCoordinator = await waitFor('the group Stable with three members at a new coordinator, every partition flowing', async () => {
        const c = await coordinator();
        if (c === null || c === 1 || !flowingSince(killAt)) return undefined;
        const d = await describeAt(brokers.find((b) => b.id === c)!.url);
        return d !== null && d.state === 'Stable' && d.members.length === 3 ? { id: c, description: d } : undefined;
      }, PHASE_MS, 100);
      const killedUntil = performance.now();
      const killStall = stalls(killAt, killedUntil, consumeTimes, all);
      const joinsAfter = consumers.map((c, i) => c.api.joins.slice(joinsBefore[i]));
      log(`1. coordinator killed: broker ${newCoordinator.id} coordinates; joins per member since ${JSON.stringify(joinsAfter.map((j) => j.map((x) => x.memberId)))}; ` +
        `longest consumption stall ${(killStall / 1000).toFixed(1)} s`);
      // One join per member: the group's members are exactly the three members' current ids.
      expect.soft(joinsAfter.map((j) => j.length)).toEqual([1, 1, 1]);
      expect.soft(newCoordinator.description.members.map((m) => m.memberId).sort()).toEqual(consumers.map((c) => c.consumer.memberId).sort());
      expect.soft(killStall).toBeLessThan(LEASE_MS + MARGIN_MS);

      // 2. SIGSTOP of the other broker (a partition leader, not the coordinator) for eight leases.
      const stopped = brokers.find((b) => b.id !== 1 && b.id !== newCoordinator.id)!;
      const stoppedPartitions = (await leaders()).flatMap((l, p) => (l === stopped.id ? [p] : []));
      expect(stoppedPartitions.length).toBeGreaterThan(0);
      const stopAt = performance.now();
      stopped.server.proc.kill('SIGSTOP');
      stopped.stopped = true;
      // The fault lasts its length, whatever the clients do meanwhile.
      await sleep(STOP_MS);
      const warningsBefore = stopped.warnings.length;
      const contAt = performance.now();
      stopped.server.proc.kill('SIGCONT');
      stopped.stopped = false;
      await waitFor('every partition flowing after the resumption', () => flowingSince(contAt), PHASE_MS, 100);
      const pauseStall = stalls(stopAt, performance.now(), ackTimes, stoppedPartitions);
      log(`2. broker ${stopped.id} stopped ${((contAt - stopAt) / 1000).toFixed(1)} s: longest produce stall of its partitions ` +
        `${stoppedPartitions.join(',')} ${(pauseStall / 1000).toFixed(1)} s`);
      // Its partitions were produced to during the pause, at the broker that took their leases.
      expect.soft(stoppedPartitions.filter((p) => !ackTimes[p]!.some((t) => t > stopAt && t < contAt))).toEqual([]);
      expect.soft(pauseStall).toBeLessThan(LEASE_MS + MARGIN_MS);
      // Resumed, it finds its partitions' leases taken at a new epoch, and says so.
      // Resumed, it says at warn that it was paused past its leases (at its next registry heartbeat, within 3 s).
      const leaseWarning = await waitFor(`broker ${stopped.id} warning that it was paused past its leases`, () =>
        stopped.warnings.slice(warningsBefore).find((w) => typeof w.stalledMs === 'number'), 5000, 100).catch(() => null);
      const leaseWarnings = stopped.warnings.slice(warningsBefore).filter((w) => /lease/.test(String(w.msg)));
      log(`   resumed, it logged: ${leaseWarnings.map((w) => JSON.stringify(w).slice(0, 300)).join('\n    ')}`);
      expect.soft(leaseWarning).toMatchObject({ level: 40, leaseMs: LEASE_MS });
      expect.soft((leaseWarning?.stalledMs as number | undefined) ?? 0).toBeGreaterThan(STOP_MS - 3000);

      // 3. SIGTERM, mid-produce, of the broker leading the most partitions.
      // The broker leading the most partitions (the resumed one may have taken some back since).
      const now = await leaders();
      const lead = [newCoordinator.id, stopped.id].sort((a, b) => now.filter((l) => l === b).length - now.filter((l) => l === a).length)[0]!;
      const leader = brokers.find((b) => b.id === lead)!;
      const survivor = brokers.find((b) => b.id !== 1 && b.id !== lead)!;
      const sentBefore = acked.size;
      await waitFor('sends acknowledged since', () => acked.size > sentBefore + 50, PHASE_MS, 10);
      const termAt = performance.now();
      const exitCode = await leader.server.stop('SIGTERM');
      await waitFor(`every partition flowing at broker ${survivor.id}`, () => flowingSince(termAt), PHASE_MS, 100);
      const termProduceStall = stalls(termAt, performance.now(), ackTimes, all);
      const termConsumeStall = stalls(termAt, performance.now(), consumeTimes, all);
      log(`3. broker ${leader.id} stopped cleanly (exit ${exitCode}): longest produce stall ${(termProduceStall / 1000).toFixed(1)} s, ` +
        `consumption ${(termConsumeStall / 1000).toFixed(1)} s; failed sends ${failures.length}`);
      expect.soft(exitCode).toBe(0);
      expect.soft(termProduceStall).toBeLessThan(LEASE_MS + MARGIN_MS);

      // The end: the producers stop; every acknowledged record is consumed and stored once.
      producing = false;
      await Promise.all(producerLoops);
      await waitFor('every acknowledged record consumed', () => [...acked.keys()].every((v) => consumed.has(v)), PHASE_MS, 100);
      expect(failures).toEqual([]);
      const api = apiAt(survivor.url);
      const stored = new Map<string, number>();
      for (let p = 0; p < PARTITIONS; p++) {
        for (let offset = 0; ;) {
          const { partitions: [read] } = await api.fetch({ topic: TOPIC, partitions: [{ partition: p, offset }], maxRecords: 5000 });
          for (const r of read!.records) stored.set(r.value!.toString(), (stored.get(r.value!.toString()) ?? 0) + 1);
          if (read!.nextOffset >= read!.highWatermark) break;
          offset = read!.nextOffset;
        }
      }
      expect([...acked.keys()].filter((v) => stored.get(v) !== 1)).toEqual([]);
      expect([...stored].filter(([, n]) => n !== 1)).toEqual([]);
      log(`${acked.size} acknowledged, all stored once and consumed; stalls (s): coordinator kill ${(killStall / 1000).toFixed(1)}, ` +
        `leader paused ${(pauseStall / 1000).toFixed(1)}, leader stopped cleanly ${(termProduceStall / 1000).toFixed(1)}`);
    } catch (err) {
      for (const b of brokers) {
        const lines = b.warnings.filter((w) => !/NOT_LEADER_OR_FOLLOWER|NOT_COORDINATOR/.test(JSON.stringify(w))).slice(-10);
        if (lines.length > 0) log(`broker ${b.id} warnings:\n  ${lines.map((w) => JSON.stringify(w).slice(0, 400)).join('\n  ')}`);
      }
      log(`failed sends: ${JSON.stringify(failures.slice(0, 10))}`);
      throw err;
    } finally {
      producing = false;
      for (const b of brokers) if (b.stopped) b.server.proc.kill('SIGCONT');
      await Promise.race([Promise.all(producerLoops), new Promise((resolve) => setTimeout(resolve, 15_000).unref())]);
      await Promise.race([Promise.all(consumers.map((c) => c.consumer.stop())), new Promise((resolve) => setTimeout(resolve, 15_000).unref())]);
      for (const b of brokers) await b.server.stop('SIGKILL');
      for (const a of apis) a.close();
      await schema.drop();
      await redis.drop();
    }
  }, 150_000);
});

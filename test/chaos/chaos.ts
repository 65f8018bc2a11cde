/**
 * The crash loop (issue 15): `onelog serve` on the embedded default, with plain and idempotent producers, pull
 * consumer groups in both commit modes, a group whose offsets live in PostgreSQL (exactly-once effect), a push
 * member and a webhook attached, and compaction and retention running; the broker is SIGKILLed at random moments
 * and sometimes SIGSTOPped past the session timeouts first. Every send, poll, commit and delivery is recorded;
 * at the end the producers stop, the consumers catch up, every partition is read whole, and the history checker
 * (test/history/checker.ts) says what went wrong.
 *
 * What each mode may do, and so what is checked:
 * - every topic: no acknowledged record lost (on the compacted one: no key's latest), no offset given twice or
 *   reused, no record stored more often than sent (the idempotent producer's retries across a kill included; the
 *   plain producer never sends again), no gap or backward step in a member's polls, no committed offset going
 *   backwards, no record delivered below an offset its group had committed;
 * - at-least-once groups (the pull group after processing, the push member, the webhook): every acknowledged
 *   record delivered by the end; the at-most-once group (commit before processing) may lose records in a crash, so
 *   it is not held to that; the PostgreSQL group: every record's effect row written exactly once.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Onelog } from '../../src/client/index.js';
import type { Admin } from '../../src/client/index.js';
import { checkHistory } from '../history/checker.js';
import type { Anomaly, Operation } from '../history/checker.js';
import { History } from '../history/recording-api.js';
import { startServer } from '../helpers/processes.js';
import { exactlyOnceWorkload, producerWorkload, pullWorkload, pushWorkload, webhookEndpoint } from './workloads.js';
import type { Workload } from './workloads.js';

/** How the loop runs. */
export interface ChaosOptions {
  /** Broker crashes (SIGKILL then restart). */
  cycles: number;
  /** Seeds the random moments. @default the time */
  seed?: number;
  /** Every this many cycles, the broker is first SIGSTOPped past the session timeouts, then SIGCONTed. @default 5 */
  stopEvery?: number;
  /** PostgreSQL for the exactly-once group. @default env `ONELOG_TEST_PG`, else postgres://postgres@127.0.0.1:5432/test */
  pgUrl?: string;
  /** Where the broker's data goes (removed at the end unless `keepData`). @default a new temporary directory */
  dataDir?: string;
  keepData?: boolean;
  /** Called with a line of progress. @default none */
  log?: (line: string) => void;
}

/** What a loop found. */
export interface ChaosResult {
  cycles: number;
  anomalies: Anomaly[];
  /** Records whose send was acknowledged. */
  acknowledged: number;
  /** Operations in the history, by type (and sends by outcome, polls by group), to show what was checked. */
  operations: Record<string, number>;
}

/** Members' session timeout, ms: a SIGSTOP lasts longer, so every member is expired when the broker resumes. */
const SESSION_TIMEOUT_MS = 3000;
/** How long the consumers get to deliver everything once the producers stopped, ms. */
const CATCH_UP_MS = 120_000;

const TOPICS = {
  /** Plain producer; pull groups in both commit modes and a webhook. Default flush policy (interval). */
  orders: { partitions: 4, config: {} },
  /** Idempotent producer; the exactly-once group and a push member. Acknowledged after fdatasync. */
  payments: { partitions: 3, config: { flushPolicy: 'always' as const } },
  /** Keyed records over 40 keys; compacted while the loop runs (small segments, so there are closed ones). */
  profiles: { partitions: 2, config: { cleanupPolicy: 'compact' as const, segmentBytes: 16 * 1024 } },
  /** Retention by size deletes segments while the loop runs; its group jumps to the log start when it falls behind. */
  clicks: { partitions: 2, config: { retentionBytes: 64 * 1024, segmentBytes: 16 * 1024 } },
};

/** Deterministic random numbers in [0, 1) (mulberry32). */
function randomFrom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/** Runs the loop and checks its history. */
export async function runChaos(options: ChaosOptions): Promise<ChaosResult> {
  const log = options.log ?? (() => {});
  const seed = options.seed ?? Date.now();
  const random = randomFrom(seed);
  const stopEvery = options.stopEvery ?? 5;
  const dataDir = options.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'onelog-chaos-'));
  const pgUrl = options.pgUrl ?? process.env.ONELOG_TEST_PG ?? 'postgres://postgres@127.0.0.1:5432/test';
  log(`seed ${seed}, data in ${dataDir}`);

  // The webhook receiver is on 127.0.0.1: an internal destination, refused unless allowed.
  let server = await startServer(dataDir, { args: ['--webhook-allow-private'] });
  const url = server.url;
  const port = new URL(url).port;
  const restart = async () => (server = await startServer(dataDir, { args: ['--port', port, '--webhook-allow-private'] }));
  const history = new History();
  const admin = new Onelog({ url }).admin();
  const webhook = await webhookEndpoint(history, 'orders-hook');
  const producers: Workload[] = [];
  const consumers: Workload[] = [];
  try {
    for (const [topic, { partitions, config }] of Object.entries(TOPICS)) await admin.createTopic({ topic, partitions, config });
    const api = new Onelog({ url }).api;
    await api.subscribe({ groupId: 'orders-hook', topic: 'orders', deliveryMode: 'push', pushEndpoint: webhook.url, startPolicy: 'earliest' });
    await api.subscribe({ groupId: 'clicks-reader', topic: 'clicks', onOutOfRange: 'earliest', startPolicy: 'earliest' });

    const common = { url, history, startPolicy: 'earliest' as const, sessionTimeoutMs: SESSION_TIMEOUT_MS };
    const exactlyOnce = await exactlyOnceWorkload({
      name: 'payments-eo', url, topic: 'payments', history, pgUrl, groupId: 'payments-eo', offsetsTable: `chaos_offsets_${process.pid}`,
      effectsTable: `chaos_effects_${process.pid}`, sessionTimeoutMs: SESSION_TIMEOUT_MS, maxRecords: 100,
    });
    producers.push(
      producerWorkload({ name: 'orders', url, topic: 'orders', history, batch: 20, concurrency: 2 }),
      producerWorkload({ name: 'payments', url, topic: 'payments', history, batch: 10, idempotent: true }),
      producerWorkload({ name: 'profiles', url, topic: 'profiles', history, batch: 10, keys: 40 }),
      producerWorkload({ name: 'clicks', url, topic: 'clicks', history, batch: 20 }),
    );
    consumers.push(
      pullWorkload({ ...common, name: 'orders-alo-1', topic: 'orders', groupId: 'orders-alo', maxRecords: 200 }),
      pullWorkload({ ...common, name: 'orders-alo-2', topic: 'orders', groupId: 'orders-alo', maxRecords: 50 }),
      pullWorkload({ ...common, name: 'orders-amo', topic: 'orders', groupId: 'orders-amo', commitMode: 'before-processing' }),
      pullWorkload({ ...common, name: 'clicks-reader', topic: 'clicks', groupId: 'clicks-reader', onOutOfRange: 'earliest' }),
      pushWorkload({ ...common, name: 'payments-push', topic: 'payments', groupId: 'payments-push', creditRecords: 100 }),
      exactlyOnce,
    );

    for (let cycle = 1; cycle <= options.cycles; cycle++) {
      const maintenance = maintain(admin);
      await sleep(200 + random() * 1500);
      if (cycle % stopEvery === 0) {
        server.proc.kill('SIGSTOP');
        await sleep(SESSION_TIMEOUT_MS + 1000);
        server.proc.kill('SIGCONT');
        await sleep(200 + random() * 1000);
      }
      await maintenance.stop();
      await server.stop('SIGKILL');
      log(`cycle ${cycle}: killed${cycle % stopEvery === 0 ? ' (after a SIGSTOP)' : ''}, ${acknowledgedIn(history.operations)} acknowledged so far`);
      await restart();
    }

    // The end: nothing more is sent; every consumer catches up, stops (commits, leaves), and the logs are read whole.
    await Promise.all(producers.map((w) => w.stop()));
    await catchUp(admin, ['orders-alo', 'orders-hook', 'payments-eo', 'payments-push', 'clicks-reader'], log);
    await Promise.all(consumers.map((w) => w.stop()));
    for (const topic of Object.keys(TOPICS)) await finalReads(admin, api, topic, history);
    await committedReads(admin, ['orders-alo', 'orders-amo', 'orders-hook', 'payments-eo', 'payments-push', 'clicks-reader'], history);
    for (const op of await exactlyOnce.effects()) history.add(op);
  } finally {
    await Promise.all([...producers, ...consumers].map((w) => w.stop()));
    await webhook.close();
    await server.stop('SIGKILL');
    if (!options.keepData) fs.rmSync(dataDir, { recursive: true, force: true });
  }
  const anomalies = checkHistory(history.operations, {
    compacted: new Set(['profiles']),
    complete: [
      { group: 'orders-alo', topic: 'orders' }, { group: 'orders-hook', topic: 'orders' }, { group: 'payments-push', topic: 'payments' },
      { group: 'payments-eo (effects)', topic: 'payments' }, { group: 'clicks-reader', topic: 'clicks' },
    ],
    exactlyOnce: new Set(['payments-eo (effects)']),
  });
  return { cycles: options.cycles, anomalies, acknowledged: acknowledgedIn(history.operations), operations: tally(history.operations) };
}

/** Operations by type, sends by outcome, polls and commits by group. */
function tally(ops: readonly Operation[]): Record<string, number> {
  const counts: Record<string, number> = {};
  const count = (name: string) => (counts[name] = (counts[name] ?? 0) + 1);
  for (const op of ops) {
    if (op.type === 'send') count(`send ${op.outcome.ok === true ? 'acknowledged' : op.outcome.ok === false ? 'refused' : 'unknown'}`);
    else if (op.type === 'poll' || op.type === 'commit') count(`${op.type} ${op.group}${op.type === 'commit' ? ` ${String(op.ok)}` : ''}`);
    else count(op.type);
  }
  return counts;
}

const acknowledgedIn = (ops: readonly Operation[]) => ops.filter((op) => op.type === 'send' && op.outcome.ok === true).length;

/** Compaction of `profiles` and retention of `clicks`, asked for over and over while the broker runs (so a kill lands mid-way). */
function maintain(admin: Admin): { stop(): Promise<void> } {
  let stopping = false;
  const done = (async () => {
    while (!stopping) {
      await admin.compactTopic({ topic: 'profiles', wait: true }).catch(() => {});
      await admin.enforceRetention('clicks').catch(() => {});
      await sleep(100);
    }
  })();
  return { stop: async () => { stopping = true; await done; } };
}

/** Waits until every group has committed up to its topic's high watermark on every partition (or the time is up). */
async function catchUp(admin: Admin, groups: string[], log: (line: string) => void): Promise<void> {
  const deadline = Date.now() + CATCH_UP_MS;
  for (const group of groups) {
    for (;;) {
      const description = await admin.describeGroup(group).catch(() => null);
      const behind = description?.subscriptions.flatMap((s) => s.partitions)
        .filter((p) => (p.committedOffset ?? -1) < p.highWatermark);
      if (behind && behind.length === 0) break;
      if (Date.now() > deadline) {
        log(`group ${group} did not catch up in ${CATCH_UP_MS} ms`);
        break;
      }
      await sleep(100);
    }
  }
}

/** Reads every partition of `topic` whole, from its log start. */
async function finalReads(admin: Admin, api: Onelog['api'], topic: string, history: History): Promise<void> {
  const description = await admin.describeTopic(topic);
  for (const p of description.partitions) {
    const start = history.now();
    const records: Array<{ offset: number; key?: string; value: string }> = [];
    for (let offset = p.logStartOffset; offset < p.highWatermark;) {
      const result = await api.fetch({ topic, partitions: [{ partition: p.partition, offset }], maxRecords: 10_000 });
      const fetched = result.partitions[0]!;
      for (const r of fetched.records) records.push({ offset: r.offset, value: r.value?.toString() ?? '', ...(r.key ? { key: r.key.toString() } : {}) });
      if (fetched.nextOffset <= offset) throw new Error(`the final read of ${topic}/${p.partition} is stuck at ${offset}`);
      offset = fetched.nextOffset;
    }
    history.add({ type: 'final-read', start, end: history.now(), process: 'final', topic, partition: p.partition, logStartOffset: p.logStartOffset, records });
  }
}

/** Each group's committed offsets at the end. */
async function committedReads(admin: Admin, groups: string[], history: History): Promise<void> {
  for (const group of groups) {
    const start = history.now();
    const description = await admin.describeGroup(group);
    for (const s of description.subscriptions) {
      for (const p of s.partitions) {
        history.add({ type: 'committed', start, end: history.now(), process: 'final', group, topic: s.topic, partition: p.partition, offset: p.committedOffset });
      }
    }
  }
}


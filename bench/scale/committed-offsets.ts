/**
 * 1,000,000 committed offsets (issue 15, point 4): a `onelog serve` child whose offset store holds `groups` x
 * `partitions` (group, topic, partition) committed offsets, all of one topic, while a client keeps committing;
 * meanwhile one group is described over HTTP again and again (`GET /groups/:groupId`, what `onelog groups
 * describe` reads: per partition its committed offset, log start offset, high watermark, lag, unread records and
 * time lag). The same is first measured with one group's offsets only, so the two show whether a describe grows
 * with the store (it should grow with the group's own partitions only: its offsets are one key range). At full size
 * it goes on until the broker's timer evaluated every group's alerts (all 1,000,000 group partitions) whole within
 * the measurement, and shows the describes and commits made while that ran: it once held the event loop for minutes.
 *
 * Shape: 1,000 groups of one topic of 1,000 partitions, rather than 100 groups of 10,000 partitions, so one
 * describe answers 1,000 partitions (as a large group does) and what changes between the two measurements is the
 * store's size, not the describe's own work.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BinaryApi } from '../../src/client/binary-api.js';
import { HttpApi } from '../../src/client/http-api.js';
import { BIN } from '../../test/helpers/processes.js';
import { fmt, latencyLine, residentMemory, spawnServer } from './common.js';
import type { TimedServer } from './common.js';
import { loadAverage, machineLine } from '../peers/common.js';

/** What the committed-offsets benchmark fills and measures. */
export interface CommittedOffsetsOptions {
  /** Consumer groups committing. */
  groups: number;
  /** Partitions of the topic every group commits. */
  partitions: number;
  /** Seconds the describe latency is measured at full size, under continuous commits. */
  seconds: number;
}

const TOPIC = 'orders';
/** Records in each partition, so committed offsets lie between 0 and this high watermark. */
const RECORDS_PER_PARTITION = 1000;
/** Partitions per continuous commit: a member committing what it owns. */
const COMMIT_PARTITIONS = 100;
/** Commits in flight from the committing client. */
const COMMITS_IN_FLIGHT = 4;
/** One commit in this many is the described group's. */
const DESCRIBED_GROUP_SHARE = 10;
/** `onelog groups describe` runs through the CLI (each a node process). */
const CLI_RUNS = 5;

const groupId = (g: number) => `group-${String(g).padStart(5, '0')}`;

/** Deterministic random numbers (LCG). */
function random(seed: number): () => number {
  let s = seed;
  return () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

/** Each group commits every partition once, `inFlight` groups at a time. */
async function fill(api: BinaryApi, groups: readonly number[], partitions: number, inFlight: number): Promise<void> {
  const next = random(1);
  let i = 0;
  const worker = async () => {
    while (i < groups.length) {
      const g = groups[i++]!;
      const offsets = Array.from({ length: partitions }, (_, partition) => ({ partition, offset: Math.floor(next() * (RECORDS_PER_PARTITION + 1)) }));
      await api.commitOffsets({ groupId: groupId(g), topic: TOPIC, offsets });
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
}

/** A request timed: when it started (ms since the epoch) and how long it took, ms. */
interface Timed {
  at: number;
  ms: number;
}

/**
 * Commits `COMMIT_PARTITIONS` partitions of one group at a time until `stop()`, and counts and times them: every
 * tenth commit is the described group's (its lag moves), the others a random group's among 1 to `groups` - 1.
 */
function commitContinuously(api: BinaryApi, groups: number, partitions: number, stop: () => boolean): { done: Promise<void>; counts: { requests: number; offsets: number; timed: Timed[] } } {
  const counts = { requests: 0, offsets: 0, timed: [] as Timed[] };
  const next = random(2);
  let n = 0;
  const worker = async () => {
    while (!stop()) {
      const g = n++ % DESCRIBED_GROUP_SHARE === 0 ? 0 : 1 + Math.floor(next() * (groups - 1));
      const first = Math.floor(next() * (partitions / COMMIT_PARTITIONS)) * COMMIT_PARTITIONS;
      const offsets = Array.from({ length: Math.min(COMMIT_PARTITIONS, partitions) }, (_, k) => ({
        partition: first + k, offset: Math.floor(next() * (RECORDS_PER_PARTITION + 1)),
      }));
      const at = Date.now();
      const t = performance.now();
      await api.commitOffsets({ groupId: groupId(g), topic: TOPIC, offsets });
      counts.timed.push({ at, ms: performance.now() - t });
      counts.requests++;
      counts.offsets += offsets.length;
    }
  };
  return { done: Promise.all(Array.from({ length: COMMITS_IN_FLIGHT }, worker)).then(() => undefined), counts };
}

/** What the broker logs at the end of an evaluation of every group's alerts that took 1 s or more. */
const EVALUATED = 'evaluated the alerts of every group';
/** Longest a measurement waits, past its seconds, for an evaluation of every group to run whole within it, s. */
const MAX_EVALUATION_WAIT_SECONDS = 900;

/** An evaluation of every group the broker logged: when it started and ended (ms since the epoch) and its figures. */
interface Evaluation {
  start: number;
  end: number;
  entry: Record<string, unknown>;
}

/** The evaluations of every group `server` logged that started at or after `since` (ms since the epoch). */
function evaluationsSince(server: TimedServer, since: number): Evaluation[] {
  return server.logs.filter((e) => typeof e.msg === 'string' && e.msg.startsWith(EVALUATED) && typeof e.time === 'number' && typeof e.ms === 'number')
    .map((e) => ({ start: (e.time as number) - (e.ms as number), end: e.time as number, entry: e }))
    .filter((e) => e.start >= since);
}

/**
 * Describes `group` over HTTP until `seconds` pass while commits go on, and, with `untilEvaluated`, on until the
 * broker logged an evaluation of every group (its timer's, every 30 s) that ran whole within the measurement (at
 * most {@link MAX_EVALUATION_WAIT_SECONDS} more); prints the latencies of describes and commits, overall and while
 * that evaluation ran, and the commit rate.
 */
async function measure(server: TimedServer, label: string, groups: number, partitions: number, seconds: number, untilEvaluated: boolean): Promise<void> {
  const committer = new BinaryApi(server.url);
  const http = new HttpApi(server.url);
  let stopped = false;
  const commits = commitContinuously(committer, groups, partitions, () => stopped);
  const describes: Timed[] = [];
  let lag = 0;
  let rows = 0;
  const startedAt = Date.now();
  const started = performance.now();
  const end = started + seconds * 1000;
  const giveUp = end + MAX_EVALUATION_WAIT_SECONDS * 1000;
  let evaluation: Evaluation | undefined;
  while (performance.now() < end || (untilEvaluated && evaluation === undefined && performance.now() < giveUp)) {
    const at = Date.now();
    const t = performance.now();
    const d = await http.describeGroup(groupId(0));
    describes.push({ at, ms: performance.now() - t });
    const sub = d.subscriptions.find((s) => s.topic === TOPIC)!;
    rows = sub.partitions.length;
    lag = sub.partitions.reduce((sum, p) => sum + (p.lag ?? 0), 0);
    if (untilEvaluated) evaluation ??= evaluationsSince(server, startedAt)[0];
  }
  const elapsed = (performance.now() - started) / 1000;
  stopped = true;
  await commits.done;
  committer.close();
  http.close();
  const ms = (timed: Timed[]) => timed.map((x) => x.ms);
  console.log(`${label}: describe ${groupId(0)} (${fmt(rows)} partitions, total lag ${fmt(lag)} at the last one) for ${elapsed.toFixed(0)} s: ` +
    `${latencyLine(ms(describes))}; meanwhile ${fmt(commits.counts.requests / elapsed)} commits/s of ${COMMIT_PARTITIONS} offsets ` +
    `(${fmt(commits.counts.offsets / elapsed)} offsets/s), commit ${latencyLine(ms(commits.counts.timed))}; broker RSS ` +
    `${(residentMemory(server.proc.pid!).rssBytes / 1e6).toFixed(0)} MB`);
  if (!untilEvaluated) return;
  if (evaluation === undefined) {
    console.log(`  no evaluation of every group ran whole within ${elapsed.toFixed(0)} s (none logged "${EVALUATED}")`);
    return;
  }
  const { start, end: ended, entry } = evaluation;
  const during = (timed: Timed[]) => ms(timed.filter((x) => x.at >= start && x.at < ended));
  console.log(`  while the timer's evaluation of every group ran (${fmt(Number(entry.groups))} groups, ${fmt(Number(entry.partitionsAssessed))} ` +
    `partitions assessed in ${fmt(Number(entry.ms))} ms, slices of ${fmt(Number(entry.slicePartitions))}, longest slice ${fmt(Number(entry.longestSliceMs))} ms): ` +
    `describe ${latencyLine(during(describes))}; commit ${latencyLine(during(commits.counts.timed))}`);
}

/** Runs `onelog groups describe GROUP` through the CLI `runs` times; answers the wall times, ms. */
async function cliDescribe(url: string, runs: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await new Promise<void>((resolve, reject) => {
      const proc = spawn(process.execPath, [BIN, 'groups', 'describe', groupId(0)], { env: { ...process.env, ONELOG_URL: url }, stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      proc.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`onelog groups describe exited with ${code}: ${stderr}`))));
    });
    times.push(performance.now() - t);
  }
  return times;
}

/** Runs the committed-offsets benchmark and prints its setup and figures. */
export async function committedOffsetsBenchmark(o: CommittedOffsetsOptions): Promise<void> {
  const total = o.groups * o.partitions;
  console.log(`== ${fmt(total)} committed offsets: describe and lag of one group under continuous commits ==`);
  console.log(`setup: child \`onelog serve\` on loopback (defaults: alerts evaluated over every group every 30 s); topic "${TOPIC}" of ` +
    `${fmt(o.partitions)} partitions holding ${fmt(RECORDS_PER_PARTITION)} records each; ${fmt(o.groups)} groups each commit all ` +
    `${fmt(o.partitions)} partitions (${fmt(total)} committed offsets); then a client on the data socket commits ${COMMIT_PARTITIONS} ` +
    `partitions of one group per request (one in ${DESCRIBED_GROUP_SHARE} the described group's, the others a random group's), ` +
    `${COMMITS_IN_FLIGHT} in flight, while another describes ${groupId(0)} over HTTP, one request ` +
    `after the other, for ${o.seconds} s and on until an evaluation of every group ran whole meanwhile. Why ${fmt(o.groups)} x ${fmt(o.partitions)}: a describe answers the group's own partitions, so ` +
    'this keeps that work fixed while the store grows');
  console.log(machineLine());
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'onelog-bench-offsets-'));
  let server: TimedServer | null = null;
  try {
    server = await spawnServer(dataDir);
    const api = new BinaryApi(server.url);
    await api.createTopic({ topic: TOPIC, partitions: o.partitions, config: { retentionMs: -1 } });
    const value = Buffer.from('v');
    for (let p = 0; p < o.partitions; p++) {
      await api.produce({ topic: TOPIC, records: Array.from({ length: RECORDS_PER_PARTITION }, () => ({ key: null, value, partition: p })) });
    }

    await fill(api, [0, 1], o.partitions, 1);
    await measure(server, `with ${fmt(2 * o.partitions)} committed offsets (2 groups)`, 2, o.partitions, Math.min(10, o.seconds), false);

    const started = performance.now();
    await fill(api, Array.from({ length: o.groups - 2 }, (_, g) => g + 2), o.partitions, 8);
    const fillSeconds = (performance.now() - started) / 1000;
    console.log(`filled ${fmt(total)} committed offsets in ${fillSeconds.toFixed(1)} s (${fmt((total - 2 * o.partitions) / fillSeconds)} offsets/s ` +
      `in commits of ${fmt(o.partitions)}, 8 in flight); offset store ${(fs.statSync(path.join(dataDir, 'offsets', 'data.mdb')).size / 1e6).toFixed(0)} MB on disk`);
    api.close();
    await measure(server, `with ${fmt(total)} committed offsets (${fmt(o.groups)} groups)`, o.groups, o.partitions, o.seconds, true);
    console.log(`\`onelog groups describe ${groupId(0)}\` through the CLI (a node process each, its start included): ${latencyLine(await cliDescribe(server.url, CLI_RUNS))}`);
    console.log(`(${loadAverage()} at the end; other work on the machine moves these figures)`);
  } finally {
    await server?.stop('SIGTERM');
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

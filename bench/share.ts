/**
 * `npm run bench -- --only share` (issue 33, point 4): queues on the log. One partition of the Wikipedia edits, a
 * handler that waits 5 ms per record, and 1, 4 and 16 members reading it side by side, each run `--share-warmup-seconds`
 * uncounted (every system measured warm: onelog's JIT compiles its hot paths in the first seconds), then
 * `--share-seconds` measured:
 *
 * - onelog share groups: a `onelog serve` child, each member a client share consumer on the binary data path in this process
 *   (batches of `--share-batch` records; outcomes sent once per batch), unordered and in key order (the edits' keys:
 *   channel|page; per-key order checked: no two records of a key in flight at once, each key's in offset order);
 *   the broker's CPU per acquired-and-accepted record from its /proc times, whole and less what it spends idle
 *   (measured for 5 s before the runs);
 * - Redis Streams: XREADGROUP COUNT n by each consumer of one group on one stream, XACK of the batch's ids;
 * - NATS JetStream: one durable pull consumer (explicit ack), each worker fetching n and acking each message.
 *
 * Records/s is what the members finished in the time, over the time. Targets: 16 members >= 12x one; key order with
 * 16 members >= 8x one; <= 5 us of broker CPU per record.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { AckPolicy, connect } from 'nats';
import { Onelog } from '../src/client/index.js';
import { readEdits } from '../test/helpers/wikiticker.js';
import { processCpuMs } from './peers/common.js';
import { spawnServer } from './scale/common.js';

const HANDLER_MS = 5;
const MEMBERS = [1, 4, 16];

interface Row {
  system: string; members: number; records: number; seconds: number;
  /** The broker's CPU (user + system) over the run, per record; and the same less what it spends idle in as long. */
  cpuUsPerRecord?: number | null; cpuAboveIdleUsPerRecord?: number | null; note?: string;
}

const rate = (r: Row) => r.records / r.seconds;

/** What a run measured once its workers had warmed up: records done, seconds, and the server's CPU (ms; null where unreadable). */
interface Measured {
  records: number;
  seconds: number;
  cpuMs: number | null;
}

/**
 * Lets a run's workers go for `warmupSeconds` uncounted (the JIT, connections, caches: each system measured warm), then
 * measures `seconds`: what `done()` grew by, the time, and the CPU (user + system) of the server `pid`.
 */
async function measure(pid: number | undefined, done: () => number, warmupSeconds: number, seconds: number): Promise<Measured> {
  await sleep(warmupSeconds * 1000);
  const records = done();
  const cpu = processCpuMs(pid);
  const started = performance.now();
  await sleep(seconds * 1000);
  const cpuAfter = processCpuMs(pid);
  return { records: done() - records, seconds: (performance.now() - started) / 1000, cpuMs: cpu === null || cpuAfter === null ? null : cpuAfter - cpu };
}

/** A peer server's CPU over a run per record (its idle use is not subtracted: a peer's is near zero). */
function serverCpu(m: Measured): Pick<Row, 'cpuUsPerRecord'> {
  return { cpuUsPerRecord: m.cpuMs === null ? null : (m.cpuMs * 1000) / Math.max(1, m.records) };
}

/** The pid of the process named `name` running here (the peers' servers), if one is. */
function pidOf(name: string): number | undefined {
  try {
    const pid = Number(execFileSync('pgrep', ['-x', '-o', name], { encoding: 'utf8' }).trim());
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Members of one onelog share group for `seconds`: what they accepted; in key order, checks each key's order. */
async function onelogRun(url: string, pid: number | undefined, idleMsPerSecond: number | null, group: string, members: number, run: RunTimes, batch: number,
  keyOrder: boolean): Promise<Row> {
  const onelog = new Onelog({ url, binary: true });
  await onelog.api.subscribe({ groupId: group, topic: 'edits', type: 'share', startPolicy: 'earliest', ordering: keyOrder ? 'key' : 'none', lockMs: 60_000 });
  const inFlightKeys = new Set<string>();
  const lastOffsetOfKey = new Map<string, number>();
  let accepted = 0;
  let violations = 0;
  const consumers = Array.from({ length: members }, (_, i) => onelog.shareConsumer({ groupId: group, clientId: `m${i}`, maxRecords: batch, maxWaitMs: 100 }));
  const runs = consumers.map((c) => {
    c.subscribe({ topic: 'edits' });
    return c.run({
      eachMessage: async ({ message }) => {
        const key = message.key?.toString('latin1') ?? '';
        if (keyOrder) {
          if (inFlightKeys.has(key) || (lastOffsetOfKey.get(key) ?? -1) > message.offset) violations++;
          inFlightKeys.add(key);
        }
        await sleep(HANDLER_MS);
        if (keyOrder) {
          inFlightKeys.delete(key);
          lastOffsetOfKey.set(key, message.offset);
        }
        accepted++;
      },
    });
  });
  const m = await measure(pid, () => accepted, run.warmupSeconds, run.seconds);
  await Promise.all(consumers.map((c) => c.stop()));
  await Promise.all(runs);
  onelog.close();
  return {
    system: `onelog share group${keyOrder ? ', key order' : ''}`, members, records: m.records, seconds: m.seconds, ...serverCpu(m),
    cpuAboveIdleUsPerRecord: m.cpuMs === null || idleMsPerSecond === null ? null : ((m.cpuMs - idleMsPerSecond * m.seconds) * 1000) / Math.max(1, m.records),
    ...(keyOrder ? { note: violations === 0 ? 'per-key order held' : `${violations} per-key order violations` } : {}),
  };
}

/** Redis Streams: `members` consumers of one group on one stream, each XREADGROUP COUNT batch, 5 ms per record, XACK. */
async function redisRun(stream: string, members: number, run: RunTimes, batch: number, pid: number | undefined): Promise<Row> {
  const group = `g${members}`;
  const admin = new Redis('redis://127.0.0.1:6379');
  await admin.xgroup('CREATE', stream, group, '0');
  let acked = 0;
  let stopping = false;
  const workers = Array.from({ length: members }, async (_, i) => {
    const redis = new Redis('redis://127.0.0.1:6379');
    try {
      while (!stopping) {
        const answer = await redis.xreadgroup('GROUP', group, `c${i}`, 'COUNT', batch, 'BLOCK', 100, 'STREAMS', stream, '>') as Array<[string, Array<[string, string[]]>]> | null;
        const entries = answer?.[0]?.[1] ?? [];
        for (let n = 0; n < entries.length; n++) {
          await sleep(HANDLER_MS);
          acked++;
        }
        if (entries.length > 0) await redis.xack(stream, group, ...entries.map(([id]) => id));
      }
    } finally {
      redis.disconnect();
    }
  });
  const m = await measure(pid, () => acked, run.warmupSeconds, run.seconds);
  stopping = true;
  await Promise.all(workers);
  admin.disconnect();
  return { system: 'Redis Streams (XREADGROUP + XACK)', members, records: m.records, seconds: m.seconds, ...serverCpu(m) };
}

/** JetStream: one durable pull consumer, `members` workers each fetching `batch`, 5 ms per message, ack each. */
async function jetstreamRun(members: number, run: RunTimes, batch: number, values: Buffer[], pid: number | undefined): Promise<Row> {
  const nc = await connect({ servers: '127.0.0.1:4222', name: 'onelog-bench-share' });
  const jsm = await nc.jetstreamManager();
  const js = nc.jetstream();
  const stream = `ONELOG_BENCH_SHARE_${members}`;
  await jsm.streams.delete(stream).catch(() => false);
  await jsm.streams.add({ name: stream, subjects: [`onelog.bench.share.${members}`] });
  await Promise.all(values.map((v) => js.publish(`onelog.bench.share.${members}`, v)));
  await jsm.consumers.add(stream, { durable_name: 'workers', ack_policy: AckPolicy.Explicit, max_ack_pending: 100_000 });
  const consumer = await js.consumers.get(stream, 'workers');
  let acked = 0;
  let stopping = false;
  const workers = Array.from({ length: members }, async () => {
    while (!stopping) {
      const messages = await consumer.fetch({ max_messages: batch, expires: 1000 });
      for await (const m of messages) {
        await sleep(HANDLER_MS);
        m.ack();
        acked++;
      }
    }
  });
  const m = await measure(pid, () => acked, run.warmupSeconds, run.seconds);
  stopping = true;
  await Promise.all(workers);
  await jsm.streams.delete(stream).catch(() => false);
  await nc.close();
  return { system: 'NATS JetStream (pull consumer, ack each)', members, records: m.records, seconds: m.seconds, ...serverCpu(m) };
}

/** How long each run goes: `warmupSeconds` uncounted, then `seconds` measured. */
interface RunTimes {
  warmupSeconds: number;
  seconds: number;
}

export async function shareBenchmark(options: { seconds: number; warmupSeconds: number; batch: number }): Promise<void> {
  const { seconds, warmupSeconds, batch } = options;
  const run: RunTimes = { warmupSeconds, seconds };
  const edits = readEdits();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'onelog-bench-share-'));
  const server = await spawnServer(dataDir);
  console.log(`\n## Share groups (issue 33): one partition, ${edits.length} Wikipedia edits, a handler of ${HANDLER_MS} ms per record, ` +
    `${MEMBERS.join(', ')} members for ${warmupSeconds} s uncounted (warm-up) then ${seconds} s measured each, batches of ${batch}; a onelog serve child on ${dataDir}, ${os.cpus().length} CPUs, Node ${process.version}\n`);
  const rows: Row[] = [];
  try {
    const onelog = new Onelog({ url: server.url });
    await onelog.api.createTopic({ topic: 'edits', partitions: 1, config: { retentionMs: -1 } });
    for (let i = 0; i < edits.length; i += 5000) {
      await onelog.api.produce({ topic: 'edits', records: edits.slice(i, i + 5000).map((e) => ({ key: Buffer.from(e.key), value: Buffer.from(e.value), timestamp: e.timestamp, partition: 0 })) });
    }
    onelog.close();
    // What the broker spends with nothing to do (its timers: session expiry, alerts, metrics), ms per second.
    const idleBefore = processCpuMs(server.proc.pid);
    await sleep(5000);
    const idleAfter = processCpuMs(server.proc.pid);
    const idleMsPerSecond = idleBefore === null || idleAfter === null ? null : (idleAfter - idleBefore) / 5;
    console.log(`the broker idle: ${idleMsPerSecond === null ? 'n/a' : `${idleMsPerSecond.toFixed(1)} ms of CPU per second`} (over 5 s)\n`);
    for (const keyOrder of [false, true]) {
      for (const members of MEMBERS) {
        rows.push(await onelogRun(server.url, server.proc.pid, idleMsPerSecond, `share-${keyOrder ? 'key' : 'none'}-${members}`, members, run, batch, keyOrder));
      }
    }
  } finally {
    await server.stop();
  }
  const values = edits.map((e) => Buffer.from(e.value));
  try {
    const redis = new Redis('redis://127.0.0.1:6379');
    const stream = 'onelog-bench:share';
    await redis.del(stream);
    for (let i = 0; i < values.length; i += 1000) {
      const pipeline = redis.pipeline();
      for (const v of values.slice(i, i + 1000)) pipeline.xadd(stream, '*', 'v', v);
      await pipeline.exec();
    }
    const pid = Number(/process_id:(\d+)/.exec(await redis.info('server'))?.[1]) || undefined;
    for (const members of MEMBERS) rows.push(await redisRun(stream, members, run, batch, pid));
    await redis.del(stream);
    redis.disconnect();
  } catch (err) {
    console.log(`Redis Streams: not run (${(err as Error).message})`);
  }
  try {
    for (const members of MEMBERS) rows.push(await jetstreamRun(members, run, batch, values, pidOf('nats-server')));
  } catch (err) {
    console.log(`NATS JetStream: not run (${(err as Error).message})`);
  }
  console.log('| system | members | records/s | x one member | server CPU per record (onelog: above idle) | note |\n| --- | --- | --- | --- | --- | --- |');
  for (const r of rows) {
    const one = rows.find((o) => o.system === r.system && o.members === 1);
    const us = (v: number | null | undefined) => (v === undefined ? '' : v === null ? 'n/a' : `${v.toFixed(1)} us`);
    const cpu = r.cpuUsPerRecord === undefined ? '' : r.cpuAboveIdleUsPerRecord === undefined ? us(r.cpuUsPerRecord)
      : `${us(r.cpuUsPerRecord)} (${us(r.cpuAboveIdleUsPerRecord)} above idle)`;
    console.log(`| ${r.system} | ${r.members} | ${rate(r).toFixed(0)} | ${one ? (rate(r) / rate(one)).toFixed(1) : '-'} | ${cpu} | ${r.note ?? ''} |`);
  }
  console.log(`\nthe ceiling: ${(1000 / HANDLER_MS).toFixed(0)} records/s per member with a ${HANDLER_MS} ms handler (timers fire a little late, so a little less)`);
}

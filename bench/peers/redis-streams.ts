/**
 * Redis Streams' side of the peer benchmarks, on the Redis at 127.0.0.1:6379 (ioredis, one connection for
 * writes, one for blocking reads): produce = pipelined XADD (one pipeline per batch of N, K pipelines in
 * flight), consume = XREADGROUP COUNT N then XACK of the batch's ids, latency = XADD per tick (or per record)
 * and a blocking XREADGROUP consumer. Beside those (the same kind of client as onelog's), the best path:
 * throughput through one raw socket with pre-encoded RESP pipelines (redis-raw.ts), and redis-benchmark's own
 * figure where it is installed, to show the harness keeps up.
 *
 * Durability: the AOF with `appendfsync everysec` (fsync about once a second) or `always` (fsync before the
 * reply). The run reads `appendonly`/`appendfsync` with CONFIG GET, sets them for each row with CONFIG SET,
 * and puts the original values back afterwards; where CONFIG is refused it says so and runs with what Redis has.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import type { PeerResult, PeerWorkload } from './common.js';
import { attempt, driveBatches, emptyResult, fillerValue, formatLatency, formatThroughput, loadAverage, recordsPerFetch } from './common.js';
import type { LatencySending, LatencyTarget } from './latency.js';
import { measureLatency } from './latency.js';
import { command, RawRedis, readAll, xaddPipeline } from './redis-raw.js';

const execFileAsync = promisify(execFile);

export const REDIS_HOST = '127.0.0.1';
export const REDIS_PORT = 6379;
export const REDIS_URL = `redis://${REDIS_HOST}:${REDIS_PORT}`;
const KEY_PREFIX = 'onelog-bench:peers';
/** How long a blocking XREADGROUP waits, ms (the consumer checks for stop between reads). */
const BLOCK_MS = 100;

export type AppendFsync = 'everysec' | 'always';

/** A stream entry as XREADGROUP answers it: [id, [field, value, ...]] (buffers). */
type StreamEntry = [Buffer, Buffer[]];

/** An ioredis connection to the peer Redis ({@link REDIS_URL}), not yet connected. */
export function connect(): Redis {
  return new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: true });
}

/** The Redis settings this run found, and whether it may change them. */
export interface RedisPersistence {
  version: string;
  /** Original values, or null where CONFIG GET was refused. */
  appendonly: string | null;
  appendfsync: string | null;
  save: string | null;
  dir: string | null;
  /** Why CONFIG cannot be used, or null. */
  configRefused: string | null;
}

async function configGet(redis: Redis, name: string): Promise<string> {
  const reply = (await redis.config('GET', name)) as string[];
  return reply[1] ?? '';
}

function infoField(info: string, field: string): string | undefined {
  return new RegExp(`^${field}:(.*)$`, 'm').exec(info)?.[1]?.trim();
}

export async function readPersistence(): Promise<RedisPersistence> {
  const redis = connect();
  await redis.connect();
  try {
    const version = infoField(await redis.info('server'), 'redis_version') ?? '?';
    try {
      return {
        version, appendonly: await configGet(redis, 'appendonly'), appendfsync: await configGet(redis, 'appendfsync'),
        save: await configGet(redis, 'save'), dir: await configGet(redis, 'dir'), configRefused: null,
      };
    } catch (err) {
      const aof = infoField(await redis.info('persistence'), 'aof_enabled');
      return { version, appendonly: aof === '1' ? 'yes (INFO)' : aof === '0' ? 'no (INFO)' : null, appendfsync: null, save: null, dir: null, configRefused: (err as Error).message };
    }
  } finally {
    redis.disconnect();
  }
}

/** Waits until no AOF rewrite is running or scheduled (CONFIG SET appendonly yes starts one). */
async function aofSettled(redis: Redis): Promise<void> {
  const until = performance.now() + 120_000;
  for (;;) {
    const info = await redis.info('persistence');
    if (infoField(info, 'aof_rewrite_in_progress') === '0' && infoField(info, 'aof_rewrite_scheduled') === '0') return;
    if (performance.now() > until) throw new Error('the AOF rewrite did not finish within 120 s');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Sets the AOF on with `appendfsync` for a run. */
export async function setPersistence(redis: Redis, appendfsync: AppendFsync): Promise<void> {
  await redis.config('SET', 'appendfsync', appendfsync);
  if ((await configGet(redis, 'appendonly')) !== 'yes') await redis.config('SET', 'appendonly', 'yes');
  await aofSettled(redis);
}

/** Puts back what the run found; the AOF is rewritten first so the deleted bench keys leave no large file behind. */
export async function restorePersistence(original: RedisPersistence): Promise<void> {
  if (original.configRefused || original.appendonly === null || original.appendfsync === null) return;
  const redis = connect();
  await redis.connect();
  try {
    if ((await configGet(redis, 'appendonly')) === 'yes') {
      await aofSettled(redis);
      await redis.bgrewriteaof();
      await aofSettled(redis);
    }
    await redis.config('SET', 'appendfsync', original.appendfsync);
    await redis.config('SET', 'appendonly', original.appendonly);
    console.log(`redis: appendonly=${original.appendonly}, appendfsync=${original.appendfsync} restored`);
  } finally {
    redis.disconnect();
  }
}

export function describePersistence(p: RedisPersistence): string {
  return p.configRefused
    ? `CONFIG refused (${p.configRefused}): runs as configured, AOF ${p.appendonly ?? 'unknown'}, appendfsync unknown`
    : `found appendonly=${p.appendonly}, appendfsync=${p.appendfsync}, save="${p.save}", dir ${p.dir}`;
}

/**
 * XREADGROUP of one stream: its entries, none on timeout. RESP2 answers [[stream, entries]], RESP3 (ioredis 6's
 * default) a map that arrives flattened as [stream, entries].
 */
async function readGroup(redis: Redis, key: string, group: string, count: number, blockMs: number): Promise<StreamEntry[]> {
  const reply = (await redis.callBuffer('XREADGROUP', 'GROUP', group, 'c1', 'COUNT', count, 'BLOCK', blockMs, 'STREAMS', key, '>')) as unknown[] | null;
  if (!reply?.length) return [];
  const entries = Buffer.isBuffer(reply[0]) ? reply[1] : (reply[0] as unknown[])[1];
  return (entries ?? []) as StreamEntry[];
}

/** A latency run's sends to stream `key`: XADD per value, the values of one call in one pipeline. */
export function redisLatencySend(redis: Redis, key: string): LatencyTarget['send'] {
  return async (values) => {
    if (values.length === 1) {
      await redis.xadd(key, '*', 'v', values[0]!);
      return;
    }
    const pipeline = redis.pipeline();
    for (const v of values) pipeline.xadd(key, '*', 'v', v);
    const replies = await pipeline.exec();
    const failed = replies?.find(([err]) => err);
    if (failed) throw failed[0]!;
  };
}

/**
 * A latency run's consumer of stream `key` in consumer group `group` (created beforehand): XREADGROUP BLOCK
 * {@link BLOCK_MS} ms of up to `count` entries, each handed on, then XACK of the batch. On `reader` when given, else
 * on a connection of its own (a consumer in another process), closed when it stops.
 */
export function redisLatencyConsumer(key: string, group: string, count: number, reader?: Redis): LatencyTarget['startConsumer'] {
  return async (onValue) => {
    const redis = reader ?? connect();
    if (reader === undefined) await redis.connect();
    let stopping = false;
    const loop = (async () => {
      while (!stopping) {
        const entries = await readGroup(redis, key, group, count, BLOCK_MS);
        if (!entries.length) continue;
        for (const [, fields] of entries) onValue(fields[1]!);
        await redis.xack(key, group, ...entries.map(([id]) => id));
      }
    })();
    loop.catch(() => {});
    return async () => {
      stopping = true;
      await loop;
      if (reader === undefined) redis.disconnect();
    };
  };
}

/** Redis's two rows: through ioredis (the same kind of client as onelog's), and at its best (raw RESP pipelines). */
export interface RedisResults {
  client: PeerResult;
  best: PeerResult;
}

export async function redisBenchmark(w: PeerWorkload, appendfsync: AppendFsync, persistence: RedisPersistence, sending: LatencySending): Promise<RedisResults> {
  const settable = persistence.configRefused === null;
  const durability = settable
    ? `AOF on, appendfsync ${appendfsync}: ${appendfsync === 'always' ? 'fsync of the AOF before the reply' : 'AOF written before the reply, fsync about once a second'}; ` +
      'XACKs go through the same AOF'
    : `as Redis runs (CONFIG refused): AOF ${persistence.appendonly ?? 'unknown'}`;
  const name = settable ? `Redis ${appendfsync}` : 'Redis (as configured)';
  const result = emptyResult(`${name} (ioredis)`, durability);
  const best = emptyResult(`${name} (raw RESP, best path)`, durability);
  console.log(`-- Redis Streams ${persistence.version}, appendfsync ${appendfsync} (${loadAverage()}) --`);
  console.log(`setup: ${REDIS_URL} via ioredis; one stream per size; produce: pipelines of ${w.batchRecords} XADD (field v = value), ` +
    `${w.inFlight} pipelines in flight on one connection; consume: XREADGROUP COUNT as the setup line says, then XACK of the batch's ids; ` +
    `best path: the same through one raw socket, ${w.inFlight} pre-encoded RESP pipelines of ${w.batchRecords} XADD in flight, ` +
    'replies parsed by redis-parser; XACK of a batch pipelined with the next XREADGROUP');
  console.log(`durability: ${durability}`);
  const redis = connect();
  const reader = connect();
  await redis.connect();
  await reader.connect();
  const raw = await RawRedis.connect(REDIS_HOST, REDIS_PORT);
  try {
    if (settable) await setPersistence(redis, appendfsync);
    for (const size of w.recordSizes) {
      const key = `${KEY_PREFIX}:${appendfsync}:${size}`;
      await redis.del(key);
      try {
        await attempt(result, `produce ${size} B`, async () => {
          const value = fillerValue(size);
          const seconds = await driveBatches(w.records, w.batchRecords, w.inFlight, async (n) => {
            const pipeline = redis.pipeline();
            for (let i = 0; i < n; i++) pipeline.xadd(key, '*', 'v', value);
            const replies = await pipeline.exec();
            const failed = replies?.find(([err]) => err);
            if (failed) throw failed[0]!;
          });
          result.produce.set(size, { records: w.records, bytes: w.records * size, seconds });
          console.log(`  produce ${size} B: ${formatThroughput(result.produce.get(size)!)}`);
        });
        if (!result.produce.has(size)) continue;
        await attempt(result, `consume ${size} B`, async () => {
          let received = 0;
          let bytes = 0;
          const started = performance.now();
          await redis.xgroup('CREATE', key, 'bench', '0');
          while (received < w.records) {
            const entries = await readGroup(reader, key, 'bench', recordsPerFetch(w, size), 1000);
            if (!entries.length) throw new Error(`stalled after ${received} records`);
            for (const [, fields] of entries) bytes += fields[1]?.length ?? 0;
            received += entries.length;
            await reader.xack(key, 'bench', ...entries.map(([id]) => id));
          }
          result.consume.set(size, { records: received, bytes, seconds: (performance.now() - started) / 1000 });
          console.log(`  consume ${size} B: ${formatThroughput(result.consume.get(size)!)}`);
        });
      } finally {
        await redis.del(key);
      }
      try {
        await rawThroughput(raw, best, w, key, size);
      } finally {
        await redis.del(key);
      }
    }
    if (redisBenchmarkTool && w.recordSizes.length > 0) await printRedisBenchmark(w, `${KEY_PREFIX}:${appendfsync}:tool`, redis);
    const key = `${KEY_PREFIX}:${appendfsync}:latency`;
    await redis.del(key);
    try {
      await attempt(result, 'latency', async () => {
        await redis.xgroup('CREATE', key, 'latency', '0', 'MKSTREAM');
        result.latency = await measureLatency({
          send: redisLatencySend(redis, key),
          startConsumer: redisLatencyConsumer(key, 'latency', w.batchRecords, reader),
        }, w, sending);
        console.log(`  latency at ${w.latencyRate.toLocaleString('en-US')} records/s (XREADGROUP BLOCK ${BLOCK_MS} ms, sending per ${sending}): ` +
          formatLatency(result.latency));
      });
    } finally {
      await redis.del(key);
    }
  } finally {
    redis.disconnect();
    reader.disconnect();
    raw.close();
  }
  return { client: result, best };
}

/** Produce and consume of one size through the raw socket, into `best`. */
async function rawThroughput(raw: RawRedis, best: PeerResult, w: PeerWorkload, key: string, size: number): Promise<void> {
  await attempt(best, `produce ${size} B`, async () => {
    const value = fillerValue(size);
    const full = xaddPipeline(key, value, w.batchRecords);
    const seconds = await driveBatches(w.records, w.batchRecords, w.inFlight, async (n) => {
      await raw.send(n === w.batchRecords ? full : xaddPipeline(key, value, n), n);
    });
    best.produce.set(size, { records: w.records, bytes: w.records * size, seconds });
    console.log(`  best path: produce ${size} B: ${formatThroughput(best.produce.get(size)!)}`);
  });
  if (!best.produce.has(size)) return;
  await attempt(best, `consume ${size} B`, async () => {
    await raw.send(command('XGROUP', 'CREATE', key, 'bench', '0'), 1);
    let received = 0;
    let bytes = 0;
    const started = performance.now();
    await readAll(raw, key, 'bench', recordsPerFetch(w, size), w.records, (value) => {
      received++;
      bytes += value.length;
    });
    best.consume.set(size, { records: received, bytes, seconds: (performance.now() - started) / 1000 });
    console.log(`  best path: consume ${size} B: ${formatThroughput(best.consume.get(size)!)}`);
  });
}

/** redis-benchmark, where installed: its own figure for the same XADDs, to show whether the harness keeps up. */
const redisBenchmarkTool = ['/usr/bin/redis-benchmark', '/usr/local/bin/redis-benchmark'].find((f) => fs.existsSync(f));

/** Runs redis-benchmark on one connection with pipelines of the batch size for each record size, and prints its figure. */
async function printRedisBenchmark(w: PeerWorkload, key: string, redis: Redis): Promise<void> {
  for (const size of w.recordSizes) {
    try {
      const { stdout } = await execFileAsync(redisBenchmarkTool!, [
        '-h', REDIS_HOST, '-p', String(REDIS_PORT), '-c', '1', '-P', String(w.batchRecords), '-n', String(w.records), '-q',
        'XADD', key, '*', 'v', fillerValue(size).toString('latin1'),
      ], { maxBuffer: 1 << 20 });
      const rate = /([\d.]+) requests per second/.exec(stdout)?.[1];
      console.log(`  (for reference, redis-benchmark -c 1 -P ${w.batchRecords} -n ${w.records} XADD of ${size} B: ` +
        `${rate ? `${Math.round(Number(rate)).toLocaleString('en-US')} records/s` : stdout.trim().slice(-200)}; not in the tables)`);
    } catch (err) {
      console.log(`  (redis-benchmark failed: ${(err as Error).message})`);
    } finally {
      await redis.del(key);
    }
  }
}

/** Answers whether Redis answers PING within `timeoutMs`. */
export async function redisAnswers(timeoutMs = 2000): Promise<string | null> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: timeoutMs, retryStrategy: () => null });
  redis.on('error', () => {});
  try {
    await redis.connect();
    await redis.ping();
    return null;
  } catch (err) {
    return (err as Error).message;
  } finally {
    redis.disconnect();
  }
}

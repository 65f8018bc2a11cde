/**
 * `npm run bench -- --only cluster-brokers` (not in the default run): the whole broker in cluster mode, 1, 2 and 3
 * `onelog serve` processes (`--catalog` and the sequencer on the machine's PostgreSQL, `--offsets` on its Redis,
 * `--log` on an s3rver child on loopback), each advertised. The topic has `--cluster-producers` partitions per
 * broker; each broker gets that many producers (binary data path, `BinaryApi` pointed at it), each writing its own
 * partition in batches of 100 records of 1 KiB and waiting for each acknowledgement (closed loop), for
 * `--cluster-seconds`. Each broker leads the partitions its producers write (their first produce takes the leases,
 * outside the measurement). Prints records/s, ack p50/p99/max, objects committed per second (rows of the
 * sequencer's objects table: one PUT and one commit each) and PostgreSQL transactions per second (all sessions:
 * commits, lease and registry renewals, offsets are in Redis).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { BinaryApi } from '../src/client/binary-api.js';
import { startServer } from '../test/helpers/processes.js';
import type { ServerProcess } from '../test/helpers/processes.js';
import { startS3 } from '../test/helpers/s3.js';
import type { S3Server } from '../test/helpers/s3.js';
import { pgSchema, REDIS_URL, redisPrefix } from '../test/helpers/services.js';
import { RECORD_BYTES, RECORDS_PER_BATCH } from './cluster.js';
import type { ClusterBenchOptions } from './cluster.js';
import { fmt, latencyLine } from './scale/common.js';


export async function clusterBrokersBenchmark(options: ClusterBenchOptions): Promise<void> {
  const s3 = await startS3();
  console.log(`\n== cluster mode, whole brokers: onelog serve processes on s3rver (${s3.endpoint}), PostgreSQL (127.0.0.1:5432), Redis (6379)`);
  console.log(`setup: ${options.producersPerBroker} producers per broker (binary data path, each its own partition), closed loop, ` +
    `batches of ${RECORDS_PER_BATCH} x ${RECORD_BYTES} B records, flush window ${options.flushWindowMs} ms, ${options.seconds} s per run; ` +
    'brokers, producers, s3rver, PostgreSQL and Redis share this machine\'s 2 cores');
  try {
    for (const brokers of options.brokers) await run(brokers, options, s3);
  } finally {
    await s3.close();
  }
}

async function run(brokerCount: number, options: ClusterBenchOptions, s3: S3Server): Promise<void> {
  const schema = await pgSchema('benchbrokers');
  const redis = redisPrefix();
  const stats = new pg.Client({ connectionString: schema.url });
  await stats.connect();
  const servers: ServerProcess[] = [];
  const dirs: string[] = [];
  const apis: BinaryApi[] = [];
  try {
    for (let id = 1; id <= brokerCount; id++) {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'onelog-bench-broker-'));
      dirs.push(dataDir);
      servers.push(await startServer(dataDir, {
        args: ['--catalog', schema.url, '--offsets', `${REDIS_URL}?keyPrefix=${redis.prefix}`, '--log', `s3://${s3.bucket}/${schema.name}?endpoint=${s3.endpoint}`,
          '--broker-id', String(id), '--flush-window-ms', String(options.flushWindowMs)],
      }));
    }
    const partitions = brokerCount * options.producersPerBroker;
    const admin = new BinaryApi(servers[0]!.url);
    apis.push(admin);
    await admin.createTopic({ topic: 'bench', partitions });
    const value = Buffer.alloc(RECORD_BYTES, 0x61);
    const records = (partition: number) => Array.from({ length: RECORDS_PER_BATCH }, () => ({ key: null, value, partition }));
    const producers = servers.flatMap((server, b) => Array.from({ length: options.producersPerBroker }, (_, i) => {
      const api = new BinaryApi(server.url);
      apis.push(api);
      return { api, partition: b * options.producersPerBroker + i };
    }));
    // Each broker takes its producers' partitions' leases with one produce each, outside the measurement.
    await Promise.all(producers.map((p) => p.api.produce({ topic: 'bench', records: records(p.partition) })));
    const count = async (sql: string) => Number((await stats.query<{ n: string }>(sql)).rows[0]!.n);
    const objects = () => count('SELECT count(*) AS n FROM onelog_objects');
    const xacts = () => count('SELECT xact_commit AS n FROM pg_stat_database WHERE datname = current_database()');
    const [objectsBefore, xactsBefore] = [await objects(), await xacts()];
    const latencies: number[] = [];
    let produced = 0;
    const started = performance.now();
    const end = started + options.seconds * 1000;
    await Promise.all(producers.map(async ({ api, partition }) => {
      while (performance.now() < end) {
        const t0 = performance.now();
        await api.produce({ topic: 'bench', records: records(partition) });
        latencies.push(performance.now() - t0);
        produced += RECORDS_PER_BATCH;
      }
    }));
    const seconds = (performance.now() - started) / 1000;
    const [objectsDone, xactsDone] = [(await objects()) - objectsBefore, (await xacts()) - xactsBefore];
    latencies.sort((x, y) => x - y);
    console.log(`${brokerCount} broker(s), ${partitions} partitions: ${fmt(produced / seconds)} records/s ` +
      `(${(produced * RECORD_BYTES / seconds / 1e6).toFixed(1)} MB/s); ack ${latencyLine(latencies)}; ` +
      `${(objectsDone / seconds).toFixed(1)} objects PUT and committed/s, ${(xactsDone / seconds).toFixed(1)} PostgreSQL transactions/s`);
  } finally {
    for (const api of apis) api.close();
    for (const server of servers) await server.stop();
    await stats.end();
    await schema.drop();
    await redis.drop();
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * `npm run bench -- --only cluster` (not in the default run): the log store of cluster mode (src/cluster/
 * object-log.ts) with 1, 2 and 3 brokers, each an ObjectLogStore with its own PostgreSQL pools and object store
 * client, in this process, against the machine's PostgreSQL and an s3rver child on loopback. Each broker leads
 * its own partitions; `--cluster-producers N` producers per broker append batches of 100 records of 1 KiB to
 * them, each waiting for its acknowledgement before the next (closed loop), for `--cluster-seconds S`.
 * Prints records/s, MB/s, ack latency p50/p99/max, objects PUT and commits per second, and PostgreSQL
 * transactions per second (pg_stat_database's xact_commit of the database, all sessions). The full broker on
 * this engine comes later; these are the engine's own figures.
 */
import pg from 'pg';
import { ObjectLogStore } from '../src/log/objects/object-log.js';
import { S3ObjectStore } from '../src/log/objects/object-store.js';
import { parseS3Url } from '../src/log/objects/s3-location.js';
import { PostgresSequencer } from '../src/log/objects/postgres-sequencer.js';
import { encodeBatch } from '../src/protocol/record-batch.js';
import { pgSchema } from '../test/helpers/services.js';
import { startS3 } from '../test/helpers/s3.js';
import { fmt, latencyLine } from './scale/common.js';

export interface ClusterBenchOptions {
  brokers: number[];
  seconds: number;
  producersPerBroker: number;
  flushWindowMs: number;
}

/** The workload of both cluster benchmarks: batches of 100 records of 1 KiB. */
export const RECORD_BYTES = 1024;
export const RECORDS_PER_BATCH = 100;

export async function clusterBenchmark(options: ClusterBenchOptions): Promise<void> {
  const s3 = await startS3();
  console.log(`\n== cluster log store: objects on s3rver (${s3.endpoint}, a child process), sequencer and index on PostgreSQL (127.0.0.1:5432)`);
  console.log(`setup: ${options.producersPerBroker} producers per broker, closed loop, batches of ${RECORDS_PER_BATCH} x ${RECORD_BYTES} B records, ` +
    `flush window ${options.flushWindowMs} ms, ${options.seconds} s per run; every broker in this process (2 cores in all)`);
  try {
    for (const brokers of options.brokers) await run(brokers, options, s3);
  } finally {
    await s3.close();
  }
}

async function run(brokerCount: number, options: ClusterBenchOptions, s3: { bucket: string; endpoint: string }): Promise<void> {
  const schema = await pgSchema('bench');
  const stats = new pg.Client({ connectionString: schema.url });
  await stats.connect();
  const stores: ObjectLogStore[] = [];
  const sequencers: PostgresSequencer[] = [];
  const clients: S3ObjectStore[] = [];
  try {
    const partitions = brokerCount * options.producersPerBroker;
    for (let id = 1; id <= brokerCount; id++) {
      const objects = new S3ObjectStore(parseS3Url(`s3://${s3.bucket}/${schema.name}?endpoint=${s3.endpoint}`));
      clients.push(objects);
      const sequencer = await PostgresSequencer.open({ pool: schema.pool(4), brokerId: id, leaseMs: 60_000, listenUrl: schema.url });
      sequencers.push(sequencer);
      stores.push(await ObjectLogStore.open({ sequencer, objects, flushWindowMs: options.flushWindowMs }));
    }
    await sequencers[0]!.addPartitions('bench', partitions);
    const value = Buffer.alloc(RECORD_BYTES, 0x61);
    const batch = () => encodeBatch(Array.from({ length: RECORDS_PER_BATCH }, () => ({ key: null, value })), 0, Date.now());
    const xacts = async () => Number((await stats.query<{ n: string }>('SELECT xact_commit AS n FROM pg_stat_database WHERE datname = current_database()')).rows[0]!.n);
    // Each broker takes its partitions' leases with one append each, outside the measurement.
    await Promise.all(stores.map((store, b) => Promise.all(Array.from({ length: options.producersPerBroker }, (_, i) =>
      store.append([{ topic: 'bench', partition: b * options.producersPerBroker + i, batch: batch() }])))));
    const before = stores.map((s) => ({ ...s.stats }));
    const xactsBefore = await xacts();
    const latencies: number[] = [];
    let records = 0;
    const started = performance.now();
    const end = started + options.seconds * 1000;
    await Promise.all(stores.flatMap((store, b) => Array.from({ length: options.producersPerBroker }, async (_, i) => {
      const partition = b * options.producersPerBroker + i;
      while (performance.now() < end) {
        const t0 = performance.now();
        const [outcome] = await store.append([{ topic: 'bench', partition, batch: batch() }]);
        if ('error' in outcome!) throw outcome.error;
        latencies.push(performance.now() - t0);
        records += RECORDS_PER_BATCH;
      }
    })));
    const seconds = (performance.now() - started) / 1000;
    const xactsDone = (await xacts()) - xactsBefore;
    const puts = stores.reduce((sum, s, i) => sum + s.stats.objectsPut - before[i]!.objectsPut, 0);
    const commits = stores.reduce((sum, s, i) => sum + s.stats.commits - before[i]!.commits, 0);
    const bytes = stores.reduce((sum, s, i) => sum + s.stats.bytesPut - before[i]!.bytesPut, 0);
    latencies.sort((a, b) => a - b);
    console.log(`${brokerCount} broker(s), ${partitions} partitions: ${fmt(records / seconds)} records/s, ${(bytes / seconds / 1e6).toFixed(1)} MB/s PUT; ` +
      `ack ${latencyLine(latencies)}; ${(puts / seconds).toFixed(1)} objects PUT/s (${(bytes / Math.max(puts, 1) / 1e6).toFixed(2)} MB each), ` +
      `${(commits / seconds).toFixed(1)} commits/s, ${(xactsDone / seconds).toFixed(1)} PostgreSQL transactions/s`);
  } finally {
    for (const s of stores) await s.close();
    for (const c of clients) c.close();
    await stats.end();
    await schema.drop();
  }
}

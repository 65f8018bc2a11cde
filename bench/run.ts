/**
 * `npm run bench`: onelog's benchmarks. Each prints its setup and its figures. Options:
 * `--only cli|client|storage|offsets|partitions|retries|monitoring|kafka-codec|kafka|peers|sweep|latency-modes`, `--partitions N` (partitions and monitoring benchmarks,
 * default 10,000), `--groups N` (monitoring benchmark, default 100),
 * `--edit-copies N` (retries benchmark: times the 39,244 Wikipedia edits are produced, default 5), `--records N` and `--record-bytes B` (client benchmark; defaults 1,000,000
 * and 100), `--scale X` (storage benchmark sizes, default 1), `--offset-keys N` (offset store benchmark,
 * default 10,000,000), `--kafka-records N` (Kafka listener benchmark, default 1,000,000; needs kcat).
 *
 * `--peers` (or `--only peers`): onelog beside Redis Streams and NATS JetStream instead (bench/peers/), with
 * `--peer-records N` (per throughput run, default 200,000), `--peer-record-sizes 100,1024`, `--peer-batch N`
 * (records per request/pipeline/ack batch, default 1,000), `--peer-in-flight K` (default 4), `--latency-rate R`
 * (records/s, default 10,000), `--latency-seconds S` (default 10), `--latency-warmup-seconds S` (default 1),
 * `--latency-sending tick|record` (one request per 1 ms tick, default, or one per record).
 *
 * `--only sweep` (not in the default run): latency at several rates and at the maximum sustainable rate, with
 * `--sweep-rates 1000,10000,50000,100000`, `--sweep-partitions 1,16,100`, `--sweep-producers 1,4`, `--sweep-seconds 3`;
 * writes bench/results/latency-sweep.json and .svg.
 *
 * `--only latency-modes` (not in the default run): latency of pull and push consumers for each flush policy beside
 * Redis Streams and JetStream in the same run, at `--latency-rates 1000,10000,50000` (default `--latency-rate`) on
 * `--latency-partitions 1,16` (default 1), the consumer in a process of its own or beside the producer
 * (`--latency-layouts separate,same`, default separate), `--no-latency-peers` for onelog alone (`--latency-seconds`,
 * `--latency-warmup-seconds`); then issue 37's targets per point. `--latency-observe DIR` records GC pauses, event-loop
 * delay and stalls in every process of the run and prints what overlapped each row's slowest records;
 * `--latency-cpu-prof DIR` writes a CPU profile of every process (open one in Chrome DevTools for its flame chart) and
 * prints each one's heaviest functions.
 *
 * `--only cluster` (not in the default run): the log store of cluster mode on s3rver and PostgreSQL with
 * `--cluster-brokers 1,2,3` brokers, `--cluster-producers N` (per broker, default 8), `--cluster-seconds S`
 * (default 10), `--flush-window-ms MS` (default 50): records/s, ack latency, objects PUT and transactions per second.
 *
 * `--only share`: share groups with 1, 4 and 16 members on one partition beside Redis Streams and JetStream consumers
 * (bench/share.ts); `--share-seconds S` measured each (default 5) after `--share-warmup-seconds W` uncounted (default 3), `--share-batch N` records per acquisition (default 10); then the
 * memory of 2,000 locked records per partition over `--share-partitions N` partitions (default 1,000; bench/share-memory.ts).
 * `--only cli`: the CLI's start-up per command against `node -e 0`, a new group's first record with 0, 2 and 5 retry
 * tiers, and `onelog produce` / `onelog consume` records/s of the S&P file (bench/cli.ts); `--cli-runs N` (default 7).
 *
 * `--only cluster-brokers` (not in the default run): the same with whole `onelog serve` brokers, producing through the
 * binary data path (bench/cluster-brokers.ts); takes `--cluster-brokers`, `--cluster-producers`, `--cluster-seconds`.
 *
 * `--only scale` (not in the default run): the limits at scale of issue 15 (bench/scale/), each a `onelog serve`
 * child; or one of them with `--only scale-partitions|scale-compaction|scale-offsets|scale-websockets|scale-restart`.
 * Options: `--scale-partitions N` (default 10,000), `--compaction-keys N` (default 20,000,000; the 2,000,000-key
 * baseline runs first), `--offset-groups N` x `--offset-partitions N` (default 1,000 x 1,000), `--offset-seconds S`
 * (default 30), `--websockets N` (default 1,000), `--restart-gb G` (default 10) and `--restart-dir DIR`
 * (default os.tmpdir()).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { clientThroughput } from './client-throughput.js';
import { offsetStoreBenchmark } from './offset-store.js';
import { partitionsBenchmark } from './partitions.js';
import { peersBenchmark } from './peers/index.js';
import { kafkaCodecBenchmark } from './kafka-codec.js';
import { kafkaThroughput } from './kafka-throughput.js';
import { monitoringBenchmark } from './monitoring.js';
import { retriesBenchmark } from './retries.js';
import { storageBenchmark } from './storage.js';
import { latencySweep } from './sweep.js';
import { latencyModes } from './latency-modes.js';
import type { Layout } from './latency-modes.js';
import { scaleBenchmarks } from './scale/index.js';
import { clusterBenchmark } from './cluster.js';
import { clusterBrokersBenchmark } from './cluster-brokers.js';
import { cliBenchmark } from './cli.js';
import { shareBenchmark } from './share.js';
import { shareMemoryBenchmark } from './share-memory.js';

const { values } = parseArgs({
  allowNegative: true,
  options: {
    only: { type: 'string' },
    records: { type: 'string', default: '1000000' },
    'record-bytes': { type: 'string', default: '100' },
    scale: { type: 'string', default: '1' },
    'offset-keys': { type: 'string', default: '10000000' },
    'kafka-records': { type: 'string', default: '1000000' },
    partitions: { type: 'string', default: '10000' },
    'edit-copies': { type: 'string', default: '5' },
    groups: { type: 'string', default: '100' },
    peers: { type: 'boolean', default: false },
    'peer-records': { type: 'string', default: '200000' },
    'peer-record-sizes': { type: 'string', default: '100,1024' },
    'peer-batch': { type: 'string', default: '1000' },
    'peer-in-flight': { type: 'string', default: '4' },
    'latency-rate': { type: 'string', default: '10000' },
    'latency-seconds': { type: 'string', default: '10' },
    'latency-warmup-seconds': { type: 'string', default: '1' },
    'latency-sending': { type: 'string', default: 'tick' },
    'latency-rates': { type: 'string' },
    'latency-partitions': { type: 'string', default: '1' },
    'latency-layouts': { type: 'string', default: 'separate' },
    'latency-peers': { type: 'boolean', default: true },
    'latency-observe': { type: 'string' },
    'latency-cpu-prof': { type: 'string' },
    'sweep-rates': { type: 'string', default: '1000,10000,50000,100000' },
    'sweep-partitions': { type: 'string', default: '1,16,100' },
    'sweep-producers': { type: 'string', default: '1,4' },
    'sweep-seconds': { type: 'string', default: '3' },
    'scale-partitions': { type: 'string', default: '10000' },
    'compaction-keys': { type: 'string', default: '20000000' },
    'offset-groups': { type: 'string', default: '1000' },
    'offset-partitions': { type: 'string', default: '1000' },
    'offset-seconds': { type: 'string', default: '30' },
    websockets: { type: 'string', default: '1000' },
    'restart-gb': { type: 'string', default: '10' },
    'restart-dir': { type: 'string' },
    'cluster-brokers': { type: 'string', default: '1,2,3' },
    'cluster-seconds': { type: 'string', default: '10' },
    'cluster-producers': { type: 'string', default: '8' },
    'flush-window-ms': { type: 'string', default: '50' },
    'cli-runs': { type: 'string', default: '7' },
    'share-seconds': { type: 'string', default: '5' },
    'share-warmup-seconds': { type: 'string', default: '3' },
    'share-batch': { type: 'string', default: '10' },
    'share-partitions': { type: 'string', default: '1000' },
  },
});

const only = values.peers ? 'peers' : values.only;
if (only === 'peers') {
  const sending = values['latency-sending'];
  if (sending !== 'tick' && sending !== 'record') throw new Error(`--latency-sending is tick or record, not ${sending}`);
  await peersBenchmark({
    records: Number(values['peer-records']),
    recordSizes: values['peer-record-sizes'].split(',').map(Number),
    batchRecords: Number(values['peer-batch']),
    inFlight: Number(values['peer-in-flight']),
    latencyRate: Number(values['latency-rate']),
    latencySeconds: Number(values['latency-seconds']),
    latencyWarmupSeconds: Number(values['latency-warmup-seconds']),
    latencyRecordBytes: 100,
    latencySending: sending,
  });
}

if (only === 'sweep') {
  await latencySweep({
    rates: values['sweep-rates'].split(',').map(Number),
    partitions: values['sweep-partitions'].split(',').map(Number),
    producers: values['sweep-producers'].split(',').map(Number),
    seconds: Number(values['sweep-seconds']),
  });
}
if (only === 'latency-modes') {
  const layouts = values['latency-layouts'].split(',');
  const wrong = layouts.find((l) => l !== 'same' && l !== 'separate');
  if (wrong !== undefined) throw new Error(`--latency-layouts takes same and separate, not ${wrong}`);
  await latencyModes({
    rates: (values['latency-rates'] ?? values['latency-rate']).split(',').map(Number),
    partitions: values['latency-partitions'].split(',').map(Number),
    seconds: Number(values['latency-seconds']),
    warmupSeconds: Number(values['latency-warmup-seconds']),
    layouts: layouts as Layout[],
    peers: values['latency-peers'],
    observe: values['latency-observe'],
    cpuProfiles: values['latency-cpu-prof'],
  });
}
if (only === 'scale' || only?.startsWith('scale-')) {
  await scaleBenchmarks(only === 'scale' ? 'all' : only.slice('scale-'.length), {
    partitions: Number(values['scale-partitions']),
    compactionKeys: Number(values['compaction-keys']),
    offsetGroups: Number(values['offset-groups']),
    offsetPartitions: Number(values['offset-partitions']),
    offsetSeconds: Number(values['offset-seconds']),
    websockets: Number(values.websockets),
    restartGigabytes: Number(values['restart-gb']),
    restartDir: values['restart-dir'],
  });
}
if (only === 'cluster-brokers') {
  await clusterBrokersBenchmark({
    brokers: values['cluster-brokers'].split(',').map(Number), seconds: Number(values['cluster-seconds']),
    producersPerBroker: Number(values['cluster-producers']), flushWindowMs: Number(values['flush-window-ms']),
  });
}
if (only === 'cluster') {
  await clusterBenchmark({
    brokers: values['cluster-brokers'].split(',').map(Number), seconds: Number(values['cluster-seconds']),
    producersPerBroker: Number(values['cluster-producers']), flushWindowMs: Number(values['flush-window-ms']),
  });
}
if (only === undefined || only === 'cli') await cliBenchmark({ runs: Number(values['cli-runs']) });
if (only === undefined || only === 'share') {
  await shareBenchmark({ seconds: Number(values['share-seconds']), warmupSeconds: Number(values['share-warmup-seconds']), batch: Number(values['share-batch']) });
  await shareMemoryBenchmark({ partitions: Number(values['share-partitions']), locked: 2000 });
}
if (only === undefined || only === 'storage') await storageBenchmark({ scale: Number(values.scale) });
if (only === undefined || only === 'offsets') await offsetStoreBenchmark({ keys: Number(values['offset-keys']) });
if (only === undefined || only === 'partitions') {
  await partitionsBenchmark({ partitions: Number(values.partitions), records: 200_000, recordBytes: 100, batchRecords: 100, fetches: 5_000 });
}
if (only === undefined || only === 'retries') await retriesBenchmark({ copies: Number(values['edit-copies']) });
if (only === undefined || only === 'monitoring') await monitoringBenchmark({ partitions: Number(values.partitions), groups: Number(values.groups) });
if (only === undefined || only === 'kafka-codec') await kafkaCodecBenchmark();
if (only === undefined || only === 'kafka') {
  await kafkaThroughput({ records: Number(values['kafka-records']), recordBytes: 100, partitions: 4, batchRecords: 1_000, inFlight: 4 });
}
if (only === undefined || only === 'client') {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'onelog-bench-'));
  try {
    await clientThroughput({
      records: Number(values.records),
      recordBytes: Number(values['record-bytes']),
      partitions: 4,
      batchRecords: 10_000,
      inFlight: 4,
      fetchRecords: 10_000,
      dataDir,
    });
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

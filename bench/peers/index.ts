/**
 * `npm run bench -- --peers`: onelog beside Redis Streams and NATS JetStream on this machine, from one run.
 * The same workload for each (produce throughput for each record size, consume throughput of what was
 * produced, end-to-end latency at a fixed rate), each row printed with its setup and durability, then one
 * side-by-side table per metric and the issue's targets judged from the figures.
 *
 * Rows: onelog with flush.policy=interval beside Redis appendfsync everysec, onelog flush.policy=always beside
 * Redis appendfsync always, and JetStream file storage (its server's sync setting, which no client can change).
 * Each peer has two rows: its best path (Redis: raw RESP pipelines; JetStream: a deep async-publish window and a
 * pulling consumer), against which the targets are judged, and a path driven as onelog's client is (ioredis
 * pipelines; batches of the same size and count in flight). The machine's load is printed before and after;
 * above 1.5 at the start, the targets are not judged.
 * A system that does not answer is skipped with the reason printed.
 */
import os from 'node:os';
import type { PeerWorkload } from './common.js';
import { FETCH_BYTES, loadAverage, machineLine, recordsPerFetch } from './common.js';
import { jetstreamAnswers, jetstreamBenchmark, NATS_SERVER } from './jetstream.js';
import type { LatencySending } from './latency.js';
import { onelogBenchmark, onelogClient } from './onelog.js';
import { describePersistence, readPersistence, redisAnswers, redisBenchmark, REDIS_URL, restorePersistence } from './redis-streams.js';
import type { PeerRows } from './table.js';
import { printTables, printTargets, rowsInOrder } from './table.js';

export interface PeersOptions extends PeerWorkload {
  latencySending: LatencySending;
}

export async function peersBenchmark(o: PeersOptions): Promise<void> {
  console.log('== peers: onelog beside Redis Streams and NATS JetStream, same workload, loopback ==');
  console.log(`setup: throughput: ${o.records.toLocaleString('en-US')} records per run for each of ${o.recordSizes.map((s) => `${s} B`).join(', ')} values, ` +
    `batches of ${o.batchRecords} records, ${o.inFlight} batches in flight, then the same records consumed ` +
    `${FETCH_BYTES / 1024 / 1024} MiB of values per fetch (Kafka's max.partition.fetch.bytes default; ${o.recordSizes.map((s) => `${recordsPerFetch(o, s).toLocaleString('en-US')} of ${s} B`).join(', ')}), acknowledged per fetch; ` +
    `latency: ${o.latencyRate.toLocaleString('en-US')} records/s of ${o.latencyRecordBytes} B for ${o.latencySeconds} s after a ${o.latencyWarmupSeconds} s warm-up, ` +
    `measured from each record's scheduled send time (carried in its first 8 bytes) to its receipt by a consumer, HdrHistogram; ` +
    `records due in a ~1 ms timer tick are sent ${o.latencySending === 'tick' ? 'as one request per tick' : 'one request each'}; ` +
    `the producer and consumers run in this process, the servers in their own`);
  console.log(`onelog client: ${onelogClient.name}`);
  console.log(machineLine());
  const loadAtStart = os.loadavg()[0]!;

  const redisDown = await redisAnswers();
  const natsDown = await jetstreamAnswers();
  if (redisDown) console.log(`Redis at ${REDIS_URL} does not answer (${redisDown}): its rows are skipped`);
  if (natsDown) console.log(`NATS JetStream at ${NATS_SERVER} does not answer (${natsDown}): its row is skipped`);

  const rows: PeerRows = { onelogInterval: null, onelogAlways: null, redisEverysec: null, redisAlways: null, jetstream: null };
  rows.onelogInterval = await onelogBenchmark(o, 'interval', o.latencySending);
  rows.onelogAlways = await onelogBenchmark(o, 'always', o.latencySending);
  if (!redisDown) {
    const persistence = await readPersistence();
    console.log(`redis: ${describePersistence(persistence)}; the run sets appendonly=yes and appendfsync per row, then restores these`);
    // An interrupted run still puts Redis's settings back.
    const onSignal = () => void restorePersistence(persistence).finally(() => process.exit(130));
    process.once('SIGINT', onSignal);
    try {
      rows.redisEverysec = await redisBenchmark(o, 'everysec', persistence, o.latencySending);
      if (persistence.configRefused === null) rows.redisAlways = await redisBenchmark(o, 'always', persistence, o.latencySending);
    } finally {
      await restorePersistence(persistence);
      process.off('SIGINT', onSignal);
    }
  }
  if (!natsDown) rows.jetstream = await jetstreamBenchmark(o, o.latencySending);

  printTables(rowsInOrder(rows), o.recordSizes, o.latencyRate, o.latencyRecordBytes);
  printTargets(rows, o.recordSizes, o.latencyRate, loadAtStart);
  console.log(`at the end: ${loadAverage()} (the machine is shared: other work running at the same time lowers every figure, unevenly)`);
}

/**
 * onelog's side of the peer benchmarks: a child `onelog serve` (fresh data directory, loopback), driven
 * through the TypeScript client. One partition per topic, as Redis and JetStream write one stream.
 *
 * The client is one value to swap ({@link onelogClient}): the binary data path by default.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Onelog } from '../../src/client/index.js';
import type { FlushPolicy } from '../../src/protocol/topic-config.js';
import { startServer } from '../../test/helpers/processes.js';
import type { PeerResult, PeerWorkload } from './common.js';
import { attempt, driveBatches, emptyResult, fillerValue, formatLatency, formatThroughput, loadAverage } from './common.js';
import type { LatencySending } from './latency.js';
import { measureLatency } from './latency.js';

/** How the benchmark reaches the server: a name for the printed setup, and a factory. */
export interface OnelogClientChoice {
  name: string;
  connect(url: string): Onelog;
}

/** The client under test: the binary data path (RecordBatch v2 in WebSocket binary frames). */
export const onelogClient: OnelogClientChoice = {
  name: 'TypeScript client, binary data path (RecordBatch v2 in WebSocket binary frames on GET /data; group operations over HTTP/JSON)',
  connect: (url) => new Onelog({ url, binary: true }),
};

/** Long-poll wait of the latency consumer's fetches, ms (a fetch answers as soon as a record arrives). */
const LATENCY_MAX_WAIT_MS = 20;
/** Byte budget per fetch: large enough that `batchRecords` records of the largest size fit. */
const FETCH_MAX_BYTES = 64 * 1024 * 1024;

export function onelogDurability(policy: FlushPolicy): string {
  return policy === 'always'
    ? 'flush.policy=always: a produce is acknowledged after fdatasync of the segment; commits synced (LMDB)'
    : 'flush.policy=interval: acknowledged once written, fdatasync within flush.ms=50 ms; commits synced (LMDB)';
}

export async function onelogBenchmark(w: PeerWorkload, policy: FlushPolicy, sending: LatencySending, client = onelogClient): Promise<PeerResult> {
  const result = emptyResult(`onelog ${policy}`, onelogDurability(policy));
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'onelog-bench-peers-'));
  console.log(`-- onelog, flush.policy=${policy} (${loadAverage()}) --`);
  console.log(`setup: child \`onelog serve\` on loopback, data dir ${dataDir}; ${client.name}; topics of 1 partition, ` +
    `created with config { flushPolicy: '${policy}' }; produce ${w.batchRecords} records/request, ${w.inFlight} requests in flight; ` +
    `consume: one consumer group member, startPolicy earliest, maxRecords ${w.batchRecords}, commit after each fetch`);
  console.log(`durability: ${result.durability}`);
  const server = await startServer(dataDir);
  try {
    const onelog = client.connect(server.url);
    const admin = onelog.admin();
    const producer = onelog.producer();
    for (const size of w.recordSizes) {
      const topic = `bench-${size}`;
      await attempt(result, `produce ${size} B`, async () => {
        await admin.createTopic({ topic, partitions: 1, config: { flushPolicy: policy } });
        const value = fillerValue(size);
        const messages = Array.from({ length: w.batchRecords }, () => ({ value }));
        const seconds = await driveBatches(w.records, w.batchRecords, w.inFlight, async (n) => {
          await producer.send({ topic, messages: n === messages.length ? messages : messages.slice(0, n) });
        });
        result.produce.set(size, { records: w.records, bytes: w.records * size, seconds });
        console.log(`  produce ${size} B: ${formatThroughput(result.produce.get(size)!)}`);
      });
      if (!result.produce.has(size)) continue;
      await attempt(result, `consume ${size} B`, async () => {
        const consumer = onelog.consumer({
          groupId: `bench-${size}`, startPolicy: 'earliest', maxRecords: w.batchRecords, maxBytes: FETCH_MAX_BYTES, maxWaitMs: 100,
        });
        consumer.subscribe({ topic });
        let received = 0;
        let bytes = 0;
        const started = performance.now();
        await consumer.run({
          eachMessage: ({ message }) => {
            received++;
            bytes += message.value?.length ?? 0;
            if (received === w.records) void consumer.stop();
          },
        });
        result.consume.set(size, { records: received, bytes, seconds: (performance.now() - started) / 1000 });
        console.log(`  consume ${size} B: ${formatThroughput(result.consume.get(size)!)} (group join, fetches and commits included)`);
      });
    }
    await attempt(result, 'latency', async () => {
      const topic = 'latency';
      await admin.createTopic({ topic, partitions: 1, config: { flushPolicy: policy } });
      result.latency = await measureLatency({
        send: (values) => producer.send({ topic, messages: values.map((value) => ({ value })) }),
        startConsumer: async (onValue) => {
          const consumer = onelog.consumer({ groupId: 'latency', startPolicy: 'earliest', maxRecords: w.batchRecords, maxWaitMs: LATENCY_MAX_WAIT_MS });
          consumer.subscribe({ topic });
          const running = consumer.run({ eachMessage: ({ message }) => onValue(message.value!) });
          running.catch(() => {});
          return async () => {
            await consumer.stop();
            await running;
          };
        },
      }, w, sending);
      console.log(`  latency at ${w.latencyRate.toLocaleString('en-US')} records/s (consumer maxWaitMs ${LATENCY_MAX_WAIT_MS}, ` +
        `sending per ${sending}): ${formatLatency(result.latency)}`);
    });
  } finally {
    await server.stop('SIGTERM');
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  return result;
}

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
import type { ConsumerOptions } from '../../src/member/consumer.js';
import type { FlushPolicy } from '../../src/protocol/topic-config.js';
import { startServer } from '../../test/helpers/processes.js';
import type { PeerResult, PeerWorkload } from './common.js';
import { attempt, driveBatches, emptyResult, fillerValue, formatLatency, formatThroughput, loadAverage, processCpuMs, recordsPerFetch } from './common.js';
import type { LatencySending, LatencyTarget } from './latency.js';
import { measureLatency } from './latency.js';

/** How the benchmark reaches the server: a name for the printed setup, and a factory. */
export interface OnelogClientChoice {
  name: string;
  connect(url: string): Onelog;
}

/** The client under test: the binary data path (RecordBatch v2 in WebSocket binary frames). */
export const onelogClient: OnelogClientChoice = {
  name: 'TypeScript client, binary data path (RecordBatch v2 in WebSocket binary frames on GET /data, commits on the same socket; group membership over HTTP/JSON)',
  connect: (url) => new Onelog({ url, binary: true }),
};

/** Long-poll wait of the latency consumer's fetches, ms (a fetch answers as soon as a record arrives). */
const LATENCY_MAX_WAIT_MS = 20;
/** Byte budget per fetch: large enough that a fetch is cut by its record count ({@link recordsPerFetch}), not by bytes. */
const FETCH_MAX_BYTES = 64 * 1024 * 1024;

/**
 * A latency run's consumer ({@link LatencyTarget.startConsumer}): a group member reading `topic` from the earliest
 * offset, handing each record's value on; the function it resolves with stops it. `push`: a WebSocket push member
 * instead, with `options.maxRecords` as its record credit.
 */
export function latencyConsumer(
  onelog: Onelog, topic: string, options: Omit<ConsumerOptions, 'startPolicy'>, delivery: 'pull' | 'push' = 'pull',
): LatencyTarget['startConsumer'] {
  return async (onValue) => {
    const consumer = delivery === 'pull'
      ? onelog.consumer({ ...options, startPolicy: 'earliest' })
      : onelog.pushConsumer({ groupId: options.groupId, startPolicy: 'earliest', creditRecords: options.maxRecords });
    consumer.subscribe({ topic });
    const running = consumer.run({ eachMessage: ({ message }) => onValue(message.value!) });
    running.catch(() => {});
    return async () => {
      await consumer.stop();
      await running;
    };
  };
}

/** Process `pid`'s CPU time since `beforeMs` per record, µs. */
function cpuPerRecordUs(pid: number | undefined, beforeMs: number | null, records: number): number | null {
  const after = processCpuMs(pid);
  return beforeMs === null || after === null ? null : ((after - beforeMs) * 1000) / records;
}

function cpuNote(cpuUs: number | null): string {
  return cpuUs === null ? '' : `; broker CPU ${cpuUs.toFixed(2)} µs per record`;
}

export function onelogDurability(policy: FlushPolicy): string {
  return policy === 'always'
    ? 'flush.policy=always: a produce is acknowledged after fdatasync of the segment; commits after LMDB\'s synced transaction'
    : 'flush.policy=interval: acknowledged once written, fdatasync within flush.ms=50 ms; commits once journaled (one write), synced by LMDB just after';
}

export async function onelogBenchmark(w: PeerWorkload, policy: FlushPolicy, sending: LatencySending, client = onelogClient): Promise<PeerResult> {
  const result = emptyResult(`onelog ${policy}`, onelogDurability(policy));
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'onelog-bench-peers-'));
  console.log(`-- onelog, flush.policy=${policy} (${loadAverage()}) --`);
  console.log(`setup: child \`onelog serve\` on loopback, data dir ${dataDir}; ${client.name}; topics of 1 partition, ` +
    `created with config { flushPolicy: '${policy}' }; produce ${w.batchRecords} records/request, ${w.inFlight} requests in flight; ` +
    'consume: one consumer group member, startPolicy earliest, maxRecords as the setup line says, commit after each fetch');
  console.log(`durability: ${result.durability}`);
  const server = await startServer(dataDir);
  try {
    const onelog = client.connect(server.url);
    const admin = onelog.admin();
    const producer = onelog.producer();
    for (const size of w.recordSizes) {
      const topic = `bench-${size}`;
      const value = fillerValue(size);
      const messages = Array.from({ length: w.batchRecords }, () => ({ value }));
      const produce = async (into: string) => {
        await admin.createTopic({ topic: into, partitions: 1, config: { flushPolicy: policy } });
        const cpuBefore = processCpuMs(server.proc.pid);
        const seconds = await driveBatches(w.records, w.batchRecords, w.inFlight, async (n) => {
          await producer.send({ topic: into, messages: n === messages.length ? messages : messages.slice(0, n) });
        });
        return { throughput: { records: w.records, bytes: w.records * size, seconds }, cpuUs: cpuPerRecordUs(server.proc.pid, cpuBefore, w.records) };
      };
      await attempt(result, `produce ${size} B`, async () => {
        // The first run of a size meets code the broker has not run yet (JIT, allocation); the second runs warm.
        const fresh = await produce(topic);
        result.produce.set(size, fresh.throughput);
        console.log(`  produce ${size} B: ${formatThroughput(fresh.throughput)}${cpuNote(fresh.cpuUs)}`);
        const warm = await produce(`${topic}-warm`);
        result.produceWarm.set(size, warm.throughput);
        if (warm.cpuUs !== null) result.serverCpu.produce.set(size, warm.cpuUs);
        console.log(`  produce ${size} B again, warm: ${formatThroughput(warm.throughput)}${cpuNote(warm.cpuUs)}`);
      });
      if (!result.produce.has(size)) continue;
      await attempt(result, `consume ${size} B`, async () => {
        const consumer = onelog.consumer({
          groupId: `bench-${size}`, startPolicy: 'earliest', maxRecords: recordsPerFetch(w, size), maxBytes: FETCH_MAX_BYTES, maxWaitMs: 100,
        });
        consumer.subscribe({ topic });
        let received = 0;
        let bytes = 0;
        const cpuBefore = processCpuMs(server.proc.pid);
        const started = performance.now();
        await consumer.run({
          eachMessage: ({ message }) => {
            received++;
            bytes += message.value?.length ?? 0;
            if (received === w.records) void consumer.stop();
          },
        });
        result.consume.set(size, { records: received, bytes, seconds: (performance.now() - started) / 1000 });
        const cpuUs = cpuPerRecordUs(server.proc.pid, cpuBefore, received);
        if (cpuUs !== null) result.serverCpu.consume.set(size, cpuUs);
        console.log(`  consume ${size} B: ${formatThroughput(result.consume.get(size)!)} (group join, fetches and commits included)${cpuNote(cpuUs)}`);
      });
    }
    await attempt(result, 'latency', async () => {
      const topic = 'latency';
      await admin.createTopic({ topic, partitions: 1, config: { flushPolicy: policy } });
      result.latency = await measureLatency({
        send: (values) => producer.send({ topic, messages: values.map((value) => ({ value })) }),
        startConsumer: latencyConsumer(onelog, topic, { groupId: 'latency', maxRecords: w.batchRecords, maxWaitMs: LATENCY_MAX_WAIT_MS }),
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

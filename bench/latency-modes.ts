/**
 * `npm run bench -- --only latency-modes`: onelog's end-to-end latency at one rate (default 10,000 records/s of
 * 100 B) by delivery and by process layout, for each flush policy: a pull consumer (group member on the binary
 * data path, commit beside each fetch) and a WebSocket push member (credit 1,000 records), each in the
 * harness's process beside the producer and in a process of its own (bench/latency/consumer-process.ts). The
 * producer sends the records due at each ~1 ms tick in one request; latency runs from each record's scheduled
 * send time to its receipt (bench/peers/latency.ts: no coordinated omission, the monotonic clock both processes read).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Onelog } from '../src/client/index.js';
import type { FlushPolicy } from '../src/protocol/topic-config.js';
import { startServer } from '../test/helpers/processes.js';
import type { Latency, PeerWorkload } from './peers/common.js';
import { formatLatency, loadAverage, machineLine } from './peers/common.js';
import type { LatencyTarget } from './peers/latency.js';
import { measureLatency } from './peers/latency.js';
import { latencyConsumer } from './peers/onelog.js';

/** What the run varies besides the flush policy. */
interface Mode {
  delivery: 'pull' | 'push';
  /** Where the consumer runs: beside the producer, or in a process of its own. */
  layout: 'same process' | 'separate processes';
}

const MODES: Mode[] = [
  { delivery: 'pull', layout: 'same process' },
  { delivery: 'push', layout: 'same process' },
  { delivery: 'pull', layout: 'separate processes' },
  { delivery: 'push', layout: 'separate processes' },
];
const POLICIES: FlushPolicy[] = ['interval', 'always'];
const CHILD = path.resolve(import.meta.dirname, 'latency/consumer-process.ts');

export interface LatencyModesOptions {
  rate: number;
  seconds: number;
  warmupSeconds: number;
}

export async function latencyModes(o: LatencyModesOptions): Promise<void> {
  console.log('== latency by delivery and process layout ==');
  console.log(`setup: child \`onelog serve\` on loopback; ${o.rate.toLocaleString('en-US')} records/s of 100 B for ${o.seconds} s after ` +
    `${o.warmupSeconds} s of warm-up, the records due in each ~1 ms tick sent as one request (binary data path); pull: a consumer ` +
    'group member (maxRecords 1,000, maxWaitMs 20, commit beside each fetch); push: a WebSocket push member (credit 1,000 records); ' +
    'the consumer beside the producer, or in its own process (its receipts reach the harness over IPC, timed where received)');
  console.log(machineLine());
  console.log(`load average at the start: ${loadAverage()}`);
  const workload: PeerWorkload = {
    records: 0, recordSizes: [], batchRecords: 1000, inFlight: 1,
    latencyRate: o.rate, latencySeconds: o.seconds, latencyWarmupSeconds: o.warmupSeconds, latencyRecordBytes: 100,
  };
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'onelog-bench-latency-'));
  const server = await startServer(dataDir);
  const rows: Array<{ policy: FlushPolicy; mode: Mode; latency: Latency | string }> = [];
  try {
    const onelog = new Onelog({ url: server.url, binary: true });
    const producer = onelog.producer();
    let run = 0;
    for (const policy of POLICIES) {
      for (const mode of MODES) {
        const topic = `latency-${run++}`;
        await onelog.admin().createTopic({ topic, partitions: 1, config: { flushPolicy: policy } });
        const target: LatencyTarget = {
          send: (values) => producer.send({ topic, messages: values.map((value) => ({ value })) }),
          startConsumer: mode.layout === 'separate processes'
            ? consumerProcess(server.url, topic, mode.delivery)
            : latencyConsumer(onelog, topic, { groupId: topic, maxRecords: 1000, maxWaitMs: 20 }, mode.delivery),
        };
        const latency = await measureLatency(target, workload, 'tick').catch((err: unknown) => (err as Error).message);
        rows.push({ policy, mode, latency });
        console.log(`  ${policy}, ${mode.delivery}, ${mode.layout}: ${typeof latency === 'string' ? `failed: ${latency}` : formatLatency(latency)}`);
      }
    }
    onelog.close();
  } finally {
    await server.stop('SIGTERM');
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  console.log(`load average at the end: ${loadAverage()}`);
  console.log('\n| flush policy | delivery | consumer | p50 ms | p99 ms | p99.9 ms | max ms | missing |');
  console.log('| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |');
  const ms = (us: number) => (us / 1000).toFixed(2);
  for (const { policy, mode, latency: l } of rows) {
    const figures = typeof l === 'string' ? '- | - | - | - | -' : `${ms(l.p50Us)} | ${ms(l.p99Us)} | ${ms(l.p999Us)} | ${ms(l.maxUs)} | ${l.missing}`;
    console.log(`| ${policy} | ${mode.delivery} | ${mode.layout} | ${figures} |`);
  }
}

/** A consumer in a child process (bench/latency/consumer-process.ts) whose receipts arrive over IPC. */
function consumerProcess(url: string, topic: string, delivery: Mode['delivery']): LatencyTarget['startConsumer'] {
  return async (onValue) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, JSON.stringify({ url, topic, groupId: topic, delivery })], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const scheduled = Buffer.alloc(8);
    await new Promise<void>((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`the consumer process exited (${code}) before it was ready`)));
      child.on('message', (message: 'ready' | number[]) => {
        if (message === 'ready') return resolve();
        for (let i = 0; i < message.length; i += 2) {
          scheduled.writeDoubleLE(message[i]!, 0);
          onValue(scheduled, message[i + 1]!);
        }
      });
    });
    return async () => {
      child.send('stop');
      await exited;
    };
  };
}

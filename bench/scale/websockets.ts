/**
 * 1,000 open WebSocket connections (issue 15, point 4): `connections` push consumers (`GET /groups/:group/stream`,
 * credit-based) against one `onelog serve` child, each the only member of its own group, all subscribed to one
 * topic, so every record produced goes out on every connection. Prints the child's resident memory before and
 * with all of them open, the time until every connection delivers, and then, for `records` records produced
 * one at a time at a steady pace, that every connection got every record, with the delivery latency (produce
 * sent to handler called, same process's clock) over all connections.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BinaryApi } from '../../src/client/binary-api.js';
import { PushConsumer } from '../../src/client/push-consumer.js';
import { fmt, latencyLine, mb, openDescriptors, openFilesLimitOf, residentMemory, spawnServer } from './common.js';
import type { TimedServer } from './common.js';
import { loadAverage, machineLine } from '../peers/common.js';

/** What the WebSocket benchmark opens and sends. */
export interface WebsocketsBenchmarkOptions {
  /** Push connections opened (one group each). */
  connections: number;
  /** Records produced once all are open. @default 200 */
  records?: number;
  /** Pace of those records, records/s. @default 40 */
  ratePerSecond?: number;
}

const TOPIC = 'fanout';
const PARTITIONS = 4;
/** Open files of the child: one socket per connection plus the store's files, with room to spare. */
const CHILD_OPEN_FILES = 8192;
const DELIVERY_TIMEOUT_MS = 120_000;

const now = () => performance.timeOrigin + performance.now();

/** Per connection: offsets received by partition, and latencies of the measured records, ms. */
interface Receiver {
  consumer: PushConsumer;
  offsets: Array<Set<number>>;
  running: Promise<void>;
}

/** Resolves once `done()` holds, checking every 20 ms; rejects after `timeoutMs` with `what`. */
async function until(done: () => boolean, timeoutMs: number, what: () => string): Promise<void> {
  const end = performance.now() + timeoutMs;
  while (!done()) {
    if (performance.now() > end) throw new Error(`timed out after ${timeoutMs} ms: ${what()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Runs the WebSocket benchmark and prints its setup and figures. */
export async function websocketsBenchmark(o: WebsocketsBenchmarkOptions): Promise<void> {
  const records = o.records ?? 200;
  const rate = o.ratePerSecond ?? 40;
  console.log(`== ${fmt(o.connections)} open WebSocket connections (push consumers) on one broker ==`);
  console.log(`setup: child \`onelog serve\` on loopback under ulimit -n ${CHILD_OPEN_FILES}; topic "${TOPIC}" of ${PARTITIONS} partitions; ` +
    `${fmt(o.connections)} push consumers in this process (credit 1,000 records, after-processing commits), each alone in its ` +
    `own group (start policy earliest), so each record goes out on every connection; one record per partition is there ` +
    `before they open, and "open" is until every connection delivered those; then ${fmt(records)} records of 8 B ` +
    `(the send time), one produce each, ${rate}/s, rotating over the partitions`);
  console.log(machineLine());
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'onelog-bench-websockets-'));
  let server: TimedServer | null = null;
  const receivers: Receiver[] = [];
  try {
    server = await spawnServer(dataDir, [], CHILD_OPEN_FILES);
    const pid = server.proc.pid!;
    const api = new BinaryApi(server.url);
    await api.createTopic({ topic: TOPIC, partitions: PARTITIONS });
    await api.produce({ topic: TOPIC, records: Array.from({ length: PARTITIONS }, (_, partition) => ({ key: null, value: Buffer.alloc(8), partition })) });
    const idle = residentMemory(pid).rssBytes;

    const latencies: number[] = [];
    let measuring = false;
    const opened = performance.now();
    for (let c = 0; c < o.connections; c++) {
      const consumer = new PushConsumer(server.url, { groupId: `ws-${c}`, startPolicy: 'earliest', clientId: `ws-${c}` });
      consumer.subscribe({ topic: TOPIC });
      const offsets = Array.from({ length: PARTITIONS }, () => new Set<number>());
      const running = consumer.run({
        eachMessage: ({ partition, message }) => {
          offsets[partition]!.add(message.offset);
          if (measuring && message.offset > 0) latencies.push(now() - message.value!.readDoubleBE(0));
        },
      });
      receivers.push({ consumer, offsets, running });
    }
    const failed: Error[] = [];
    for (const r of receivers) r.running.catch((err: Error) => failed.push(err));
    const got = (n: number) => receivers.filter((r) => r.offsets.every((s) => s.size >= n)).length;
    await until(() => got(1) === o.connections || failed.length > 0, DELIVERY_TIMEOUT_MS, () => `${got(1)} of ${o.connections} connections delivered`);
    if (failed.length > 0) throw failed[0]!;
    const openMs = performance.now() - opened;
    const open = residentMemory(pid).rssBytes;
    console.log(`opened ${fmt(o.connections)} connections, all delivering, in ${fmt(openMs)} ms; broker RSS ${mb(idle)} MB before, ${mb(open)} MB ` +
      `with all open (${fmt((open - idle) / o.connections / 1e3)} KB a connection); broker holds ${fmt(openDescriptors(pid))} descriptors ` +
      `(limit ${fmt(openFilesLimitOf(pid))})`);

    measuring = true;
    const started = performance.now();
    for (let i = 0; i < records; i++) {
      const wait = started + (i * 1000) / rate - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      const value = Buffer.alloc(8);
      value.writeDoubleBE(now(), 0);
      await api.produce({ topic: TOPIC, records: [{ key: null, value, partition: i % PARTITIONS }] });
    }
    const perPartition = 1 + records / PARTITIONS;
    await until(() => got(perPartition) === o.connections || failed.length > 0, DELIVERY_TIMEOUT_MS,
      () => `${got(perPartition)} of ${o.connections} connections got all ${records} records`);
    if (failed.length > 0) throw failed[0]!;
    const short = receivers.filter((r) => r.offsets.some((s) => s.size !== perPartition)).length;
    console.log(`delivery: every connection got all ${fmt(records)} records (${fmt(records * o.connections)} deliveries, ${short} connections with ` +
      `extra redeliveries); produce-to-handler latency ${latencyLine(latencies)}; broker RSS ${mb(residentMemory(pid).rssBytes)} MB, peak ` +
      `${mb(residentMemory(pid).peakRssBytes)} MB`);
    api.close();
    console.log(`(${loadAverage()} at the end; other work on the machine moves these figures)`);
  } finally {
    await Promise.all(receivers.map((r) => r.consumer.stop().catch(() => undefined)));
    await server?.stop('SIGTERM');
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

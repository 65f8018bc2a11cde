/**
 * Restart of a large log (issue 15, point 4): a `onelog serve` child gets `gigabytes` GB of records in one topic
 * of a few partitions through the binary client, is stopped cleanly (SIGTERM), and is timed from spawn until it
 * answers (it logs `onelog is listening`); then it is SIGKILLed while a producer writes to every partition, and
 * timed again. After the clean stop nothing needs reading but the index entries of each partition's active segment
 * and the batches after its last one; after the SIGKILL each partition's active segment (at most `segment.bytes`,
 * 1 GiB by default) is validated batch by batch, and nothing below the recovery point (the base offset of the
 * active segment) is read. Every record acknowledged before the SIGKILL must be there after it.
 *
 * Targets: under 1 s after a clean stop, under 10 s after a SIGKILL. Figures are with the page cache warm (a
 * process crash leaves it so); `coldCache` also times a SIGKILL restart after the segment files were dropped from
 * the page cache (`dd iflag=nocache`), as after a machine crash.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BinaryApi } from '../../src/client/binary-api.js';
import { fmt, residentMemory, spawnServer } from './common.js';
import type { TimedServer } from './common.js';
import { loadAverage, machineLine } from '../peers/common.js';

/** What the restart benchmark writes and times. */
export interface RestartBenchmarkOptions {
  /** GB (10^9 bytes) of record values written before the clean stop. */
  gigabytes: number;
  /** Partitions of the topic. */
  partitions: number;
  /** Clean restarts timed (the figure is their median). */
  cleanRestarts: number;
  /** Also time a SIGKILL restart with the segment files dropped from the page cache first. */
  coldCache: boolean;
  /** Where the data directory is made. @default os.tmpdir() */
  baseDir?: string;
}

const TOPIC = 'big';
const VALUE_BYTES = 1000;
/** Records per produce request, all to one partition: about 1 MB of values, one stored batch. */
const BATCH_RECORDS = 1000;
const IN_FLIGHT = 4;

/** One partition's high watermark, by partition. */
type Watermarks = number[];

/**
 * Produces until `bytes` bytes of values are written (Infinity: until a request fails), rotating over the partitions,
 * `IN_FLIGHT` requests at a time, and answers the bytes written. `acked[p]` is raised to the offset after the last
 * record acknowledged in partition p as each request is answered, so it holds what was acknowledged even when the
 * run ends in an error (the server killed).
 */
async function produce(api: BinaryApi, bytes: number, acked: Watermarks): Promise<number> {
  const value = Buffer.alloc(VALUE_BYTES, 'r');
  const partitions = acked.length;
  let written = 0;
  let next = 0;
  const worker = async () => {
    while (written < bytes) {
      const partition = next++ % partitions;
      written += VALUE_BYTES * BATCH_RECORDS;
      const records = Array.from({ length: BATCH_RECORDS }, () => ({ key: null, value, partition }));
      const result = await api.produce({ topic: TOPIC, records });
      const last = result.offsets.at(-1)!.offset + 1;
      if (last > acked[partition]!) acked[partition] = last;
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  return written;
}

async function highWatermarks(url: string): Promise<Watermarks> {
  const api = new BinaryApi(url);
  try {
    return (await api.describeTopic(TOPIC)).partitions.map((p) => p.highWatermark);
  } finally {
    api.close();
  }
}

/** Segment files of the data directory's partitions, with their sizes. */
function segmentFiles(dataDir: string): Array<{ file: string; bytes: number }> {
  const logDir = path.join(dataDir, 'log');
  return fs.readdirSync(logDir).filter((d) => d.startsWith(`${TOPIC}-`)).flatMap((d) =>
    fs.readdirSync(path.join(logDir, d)).filter((f) => f.endsWith('.log')).map((f) => {
      const file = path.join(logDir, d, f);
      return { file, bytes: fs.statSync(file).size };
    }));
}

function describeStart(s: TimedServer): string {
  const store = s.logStore;
  return `${fmt(s.startMs)} ms to listening (log store opened in ${fmt(Number(store.ms))} ms, ${fmt(Number(store.recovered))} of ` +
    `${fmt(Number(store.partitions))} partitions recovered)`;
}

/**
 * Produces to every partition on `server` and SIGKILLs it `afterMs` later, requests in flight; answers, per
 * partition, the offset after the last record acknowledged before the kill.
 */
async function killMidProduce(server: TimedServer, partitions: number, afterMs: number): Promise<Watermarks> {
  const api = new BinaryApi(server.url);
  const acked: Watermarks = new Array<number>(partitions).fill(0);
  const writing = produce(api, Infinity, acked).catch(() => undefined); // ends when the socket dies with the server
  await new Promise((resolve) => setTimeout(resolve, afterMs));
  await server.stop('SIGKILL');
  await writing;
  api.close();
  return acked;
}

/** Runs the restart benchmark and prints its setup and figures. */
export async function restartBenchmark(o: RestartBenchmarkOptions): Promise<void> {
  const totalBytes = o.gigabytes * 1e9;
  console.log(`== restart of a ${o.gigabytes} GB log: after a clean stop and after SIGKILL ==`);
  console.log(`setup: child \`onelog serve\` on loopback; topic "${TOPIC}" with ${o.partitions} partitions (segment.bytes 1 GiB, ` +
    `flush.policy interval, retention.ms -1); ${o.gigabytes} GB of ${VALUE_BYTES} B values written by the binary client in ` +
    `requests of ${BATCH_RECORDS} records to one partition (rotating), ${IN_FLIGHT} in flight; start-up timed from spawn to ` +
    '"onelog is listening" (node\'s own start included); page cache warm unless said');
  console.log(machineLine());
  const dataDir = fs.mkdtempSync(path.join(o.baseDir ?? os.tmpdir(), 'onelog-bench-restart-'));
  let server: TimedServer | null = null;
  try {
    server = await spawnServer(dataDir);
    const api = new BinaryApi(server.url);
    await api.createTopic({ topic: TOPIC, partitions: o.partitions, config: { retentionMs: -1 } });
    const started = performance.now();
    const written = { acked: new Array<number>(o.partitions).fill(0), bytes: 0 };
    written.bytes = await produce(api, totalBytes, written.acked);
    const writeSeconds = (performance.now() - started) / 1000;
    api.close();
    const segments = segmentFiles(dataDir);
    const onDisk = segments.reduce((sum, s) => sum + s.bytes, 0);
    console.log(`wrote ${fmt(written.bytes / 1e6)} MB of values (${fmt(onDisk / 1e6)} MB of segments in ${segments.length} files) in ` +
      `${writeSeconds.toFixed(1)} s: ${fmt(written.bytes / 1e6 / writeSeconds)} MB/s; broker RSS ${(residentMemory(server.proc.pid!).rssBytes / 1e6).toFixed(0)} MB`);

    const stopMs = await server.stop('SIGTERM');
    server = null;
    console.log(`clean stop (SIGTERM until exit): ${fmt(stopMs)} ms`);
    const clean: number[] = [];
    for (let i = 0; i < o.cleanRestarts; i++) {
      server = await spawnServer(dataDir);
      clean.push(server.startMs);
      console.log(`  clean restart ${i + 1}: ${describeStart(server)}`);
      const hw = await highWatermarks(server.url);
      const missing = hw.findIndex((h, p) => h < written.acked[p]!);
      if (missing >= 0) throw new Error(`partition ${missing} has high watermark ${hw[missing]} after a clean restart, below ${written.acked[missing]} acknowledged`);
      if (i < o.cleanRestarts - 1) {
        await server.stop('SIGTERM');
        server = null;
      }
    }
    const median = [...clean].sort((a, b) => a - b)[Math.floor(clean.length / 2)]!;
    console.log(`start-up after a clean stop: median ${fmt(median)} ms of ${clean.length} (target < 1,000 ms: ${median < 1000 ? 'met' : 'NOT MET'})`);

    const killed = await killMidProduce(server!, o.partitions, 2000);
    server = null;
    server = await spawnServer(dataDir);
    const killedMs = server.startMs;
    const hw = await highWatermarks(server.url);
    const lost = hw.reduce((sum, h, p) => sum + Math.max(0, killed[p]! - h), 0);
    console.log(`start-up after SIGKILL mid-produce: ${describeStart(server)}; acknowledged records missing: ${fmt(lost)} ` +
      `(target < 10,000 ms: ${killedMs < 10_000 ? 'met' : 'NOT MET'})`);
    if (lost > 0) throw new Error(`${lost} acknowledged records are missing after the SIGKILL`);

    if (o.coldCache) {
      await killMidProduce(server, o.partitions, 2000);
      server = null;
      let dropped = 0;
      for (const s of segmentFiles(dataDir)) {
        // posix_fadvise(DONTNEED) on this file only: its clean pages leave the page cache (others' files are untouched).
        execFileSync('dd', [`if=${s.file}`, 'iflag=nocache', 'count=0', 'status=none']);
        dropped += s.bytes;
      }
      server = await spawnServer(dataDir);
      console.log(`start-up after SIGKILL, ${fmt(dropped / 1e6)} MB of segments dropped from the page cache first: ${describeStart(server)} ` +
        `(target < 10,000 ms: ${server.startMs < 10_000 ? 'met' : 'NOT MET'})`);
    }
    await server.stop('SIGTERM');
    server = null;
    console.log(`(${loadAverage()} at the end; other work on the machine moves these figures)`);
  } finally {
    await server?.stop('SIGKILL');
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

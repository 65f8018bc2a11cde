/**
 * 10,000 partitions on one broker with bounded memory (issue 15, point 4): a `onelog serve` child under
 * `ulimit -n 1024` (so its log store keeps at most 768 files open and the rest go through its file-handle cache)
 * with one topic of `partitions` partitions. The binary client produces `records` records spread over every
 * partition (each request 1,000 records to 100 consecutive partitions, rotating), then reads every partition
 * back to its high watermark (each fetch 100 partitions). Prints produce and fetch throughput and the child's
 * resident memory idle, after producing, after fetching, and its peak.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BinaryApi } from '../../src/client/binary-api.js';
import { fmt, mb, openDescriptors, residentMemory, spawnServer } from './common.js';
import type { TimedServer } from './common.js';
import { loadAverage, machineLine } from '../peers/common.js';

/** What the many-partitions benchmark writes and reads. */
export interface ScalePartitionsOptions {
  /** Partitions of the topic. */
  partitions: number;
  /** Records produced, spread evenly. @default 2,000,000 */
  records?: number;
}

const TOPIC = 'wide';
const RECORD_BYTES = 100;
/** Partitions per produce and per fetch request. */
const PARTITIONS_PER_REQUEST = 100;
const RECORDS_PER_REQUEST = 1000;
const IN_FLIGHT = 4;
/** The child's open-files limit: the common default, so the file-handle cache is what bounds its descriptors. */
const CHILD_OPEN_FILES = 1024;

/** Produces `records` records, each request to PARTITIONS_PER_REQUEST consecutive partitions; answers records/s. */
async function produceSpread(api: BinaryApi, partitions: number, records: number): Promise<number> {
  const value = Buffer.alloc(RECORD_BYTES, 'x');
  const groups = Math.ceil(partitions / PARTITIONS_PER_REQUEST);
  let sent = 0;
  let request = 0;
  const started = performance.now();
  const worker = async () => {
    while (sent < records) {
      sent += RECORDS_PER_REQUEST;
      const first = (request++ % groups) * PARTITIONS_PER_REQUEST;
      const width = Math.min(PARTITIONS_PER_REQUEST, partitions - first);
      await api.produce({ topic: TOPIC, records: Array.from({ length: RECORDS_PER_REQUEST }, (_, i) => ({ key: null, value, partition: first + (i % width) })) });
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  return sent / ((performance.now() - started) / 1000);
}

/** Reads every partition from 0 to its high watermark, PARTITIONS_PER_REQUEST a fetch; answers records/s and the count. */
async function fetchAll(api: BinaryApi, highWatermarks: readonly number[]): Promise<{ perSecond: number; records: number }> {
  const next = highWatermarks.map(() => 0);
  let records = 0;
  let first = 0;
  const started = performance.now();
  const worker = async () => {
    for (;;) {
      const from = first;
      if (from >= highWatermarks.length) return;
      first += PARTITIONS_PER_REQUEST;
      const ids = Array.from({ length: Math.min(PARTITIONS_PER_REQUEST, highWatermarks.length - from) }, (_, k) => from + k);
      while (ids.some((p) => next[p]! < highWatermarks[p]!)) {
        const want = ids.filter((p) => next[p]! < highWatermarks[p]!);
        const result = await api.fetch({ topic: TOPIC, partitions: want.map((p) => ({ partition: p, offset: next[p]! })), maxRecords: 100_000, maxBytes: 8 * 1024 * 1024, maxWaitMs: 0 });
        for (const p of result.partitions) {
          records += p.records.length;
          next[p.partition] = p.nextOffset;
        }
      }
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  return { perSecond: records / ((performance.now() - started) / 1000), records };
}

/** Runs the many-partitions benchmark on a child and prints its setup and figures. */
export async function scalePartitionsBenchmark(o: ScalePartitionsOptions): Promise<void> {
  const records = o.records ?? 2_000_000;
  console.log(`== ${fmt(o.partitions)} partitions on one broker: memory and throughput, produce and fetch over all of them ==`);
  console.log(`setup: child \`onelog serve\` on loopback under ulimit -n ${CHILD_OPEN_FILES} (log store: at most 768 files open, the rest ` +
    `through its file-handle cache); topic "${TOPIC}" of ${fmt(o.partitions)} partitions; ${fmt(records)} records of ${RECORD_BYTES} B ` +
    `by the binary client, each request ${fmt(RECORDS_PER_REQUEST)} records over ${PARTITIONS_PER_REQUEST} consecutive partitions ` +
    `(rotating, so every partition gets ${fmt(records / o.partitions)}), ${IN_FLIGHT} in flight; then every partition read back to its ` +
    `high watermark, ${PARTITIONS_PER_REQUEST} partitions a fetch, ${IN_FLIGHT} in flight`);
  console.log(machineLine());
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'onelog-bench-scale-partitions-'));
  let server: TimedServer | null = null;
  try {
    server = await spawnServer(dataDir, [], CHILD_OPEN_FILES);
    const pid = server.proc.pid!;
    const api = new BinaryApi(server.url);
    const idle = residentMemory(pid).rssBytes;
    let started = performance.now();
    await api.createTopic({ topic: TOPIC, partitions: o.partitions, config: { retentionMs: -1 } });
    const created = residentMemory(pid).rssBytes;
    console.log(`created the topic in ${fmt(performance.now() - started)} ms; broker RSS ${mb(idle)} MB before, ${mb(created)} MB after`);
    const produced = await produceSpread(api, o.partitions, records);
    const afterProduce = residentMemory(pid).rssBytes;
    const hw = (await api.describeTopic(TOPIC)).partitions.map((p) => p.highWatermark);
    const empty = hw.filter((h) => h === 0).length;
    if (empty > 0) throw new Error(`${empty} partitions got no record`);
    started = performance.now();
    const fetched = await fetchAll(api, hw);
    const total = hw.reduce((a, b) => a + b, 0);
    if (fetched.records !== total) throw new Error(`fetched ${fetched.records} records of ${total}`);
    const end = residentMemory(pid);
    console.log(`produce: ${fmt(produced)} records/s (${mb(produced * RECORD_BYTES)} MB/s of values); fetch of all ${fmt(total)} records: ` +
      `${fmt(fetched.perSecond)} records/s`);
    console.log(`broker RSS: ${mb(afterProduce)} MB after producing, ${mb(end.rssBytes)} MB after fetching every partition, peak ` +
      `${mb(end.peakRssBytes)} MB; ${fmt(openDescriptors(pid))} descriptors open`);
    api.close();
    console.log(`(${loadAverage()} at the end; other work on the machine moves these figures)`);
  } finally {
    await server?.stop('SIGTERM');
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * Many partitions: the embedded broker with a topic of 10,000 partitions beside one of 4, under the file-handle
 * budget a 1,024 open-files limit gives (768), so that records spread over random partitions miss the cache.
 * Prints produce and fetch throughput for both, the cache's counters, and start-up time and heap with 10,000
 * partitions: after a clean shutdown and after a SIGKILL of a broker that had written every partition.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Broker } from '../src/broker/broker.js';
import { defaultMaxOpenFiles } from '../src/log/segments/open-files-limit.js';

/** What the benchmark runs. */
export interface PartitionsBenchmarkOptions {
  /** Partitions of the wide topic. */
  partitions: number;
  /** Records produced to each topic. */
  records: number;
  recordBytes: number;
  /** Records per produce request, all to one random partition. */
  batchRecords: number;
  /** Fetches of up to `batchRecords` records from a random partition and offset. */
  fetches: number;
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const MAX_OPEN_FILES = defaultMaxOpenFiles(1024);

/** Deterministic random numbers (LCG), so both topics see the same sequence of partitions. */
function random(seed: number): () => number {
  let s = seed;
  return () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

/** What the last {@link open} logged about opening the log store (partitions, recovered, ...). */
let lastStart: Record<string, unknown> = {};

async function open(dataDir: string): Promise<Broker> {
  const logger = { info: (obj: object, msg: string) => {
    if (msg === 'opened the log store') lastStart = obj as Record<string, unknown>;
  }, warn: () => {}, error: () => {} };
  return Broker.open({ dataDir, maxOpenFiles: MAX_OPEN_FILES, retentionCheckIntervalMs: 0, compactionIntervalMs: 0, logger });
}

/** Produces `o.records` records in requests of `o.batchRecords` to random partitions, 4 requests in flight; records/s. */
async function produce(broker: Broker, topic: string, partitions: number, o: PartitionsBenchmarkOptions): Promise<number> {
  const next = random(42);
  const value = Buffer.alloc(o.recordBytes, 'x');
  let sent = 0;
  const started = performance.now();
  const worker = async () => {
    while (sent < o.records) {
      sent += o.batchRecords;
      const partition = Math.floor(next() * partitions);
      await broker.produce({ topic, records: Array.from({ length: o.batchRecords }, () => ({ key: null, value, partition })) });
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
  return sent / ((performance.now() - started) / 1000);
}

/** `o.fetches` fetches of up to `o.batchRecords` records from a random partition at a random offset; fetches/s and records/s. */
async function fetch(broker: Broker, topic: string, partitions: number, o: PartitionsBenchmarkOptions): Promise<{ fetches: number; records: number }> {
  const next = random(7);
  const { partitions: ends } = await broker.describeTopic(topic);
  let records = 0;
  const started = performance.now();
  for (let i = 0; i < o.fetches; i++) {
    const partition = Math.floor(next() * partitions);
    const offset = Math.floor(next() * ends[partition]!.highWatermark);
    const { partitions: got } = await broker.fetch({ topic, partitions: [{ partition, offset }], maxRecords: o.batchRecords });
    records += got[0]!.records.length;
  }
  const s = (performance.now() - started) / 1000;
  return { fetches: o.fetches / s, records: records / s };
}

/** Opens the broker, timing it; answers the broker and the ms, and the heap it added (MB). */
async function timedOpen(dataDir: string): Promise<{ broker: Broker; ms: number; heapMb: number }> {
  global.gc?.();
  const heap = process.memoryUsage().heapUsed;
  const started = performance.now();
  const broker = await open(dataDir);
  const ms = performance.now() - started;
  global.gc?.();
  return { broker, ms, heapMb: (process.memoryUsage().heapUsed - heap) / 1e6 };
}

/** A child broker writes one record to every partition of `topic`, then is SIGKILLed. */
async function writeAllThenKill(dataDir: string, topic: string, partitions: number): Promise<void> {
  const broker = path.resolve(import.meta.dirname, '../dist/broker/index.js');
  const script = `
    const { Broker } = await import(${JSON.stringify(broker)});
    const b = await Broker.open({ dataDir: ${JSON.stringify(dataDir)}, maxOpenFiles: ${MAX_OPEN_FILES} });
    for (let p0 = 0; p0 < ${partitions}; p0 += 1000) {
      await b.produce({ topic: ${JSON.stringify(topic)}, records: Array.from({ length: Math.min(1000, ${partitions} - p0) },
        (_, k) => ({ key: null, value: Buffer.from('after-restart'), partition: p0 + k })) });
    }
    await new Promise((resolve) => setTimeout(resolve, 200)); // the broker runs on a moment before it dies
    process.stdout.write('written\\n');
    setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      if (d.toString().includes('written')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`the writer exited with ${code} before writing`)));
  });
  child.kill('SIGKILL');
  await new Promise((resolve) => child.once('close', resolve));
}

export async function partitionsBenchmark(o: PartitionsBenchmarkOptions): Promise<void> {
  console.log('== many partitions: 10,000 partitions beside 4, through the file-handle cache ==');
  console.log(`setup: embedded broker (in-process, no HTTP), maxOpenFiles ${MAX_OPEN_FILES} (the default under ulimit -n 1024); ` +
    `topics "wide" (${fmt(o.partitions)} partitions) and "narrow" (4); ${fmt(o.records)} records of ${o.recordBytes} B per topic ` +
    `in requests of ${o.batchRecords} records to one random partition, 4 in flight; ${fmt(o.fetches)} fetches of up to ` +
    `${o.batchRecords} records from a random partition and offset (a wide partition holds about ${fmt(o.records / o.partitions)} records, ` +
    'so its fetches return fewer); flush.policy=interval (default)');
  console.log(`machine: ${os.cpus().length} x ${os.cpus()[0]?.model ?? 'cpu'}, node ${process.version}${global.gc ? '' : ' (run with --expose-gc for steadier heap figures)'}`);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'onelog-bench-partitions-'));
  try {
    let broker = await open(dataDir);
    let started = performance.now();
    await broker.createTopic({ topic: 'wide', partitions: o.partitions, config: { retentionMs: -1 } });
    console.log(`create topic of ${fmt(o.partitions)} partitions: ${fmt(performance.now() - started)} ms`);
    await broker.createTopic({ topic: 'narrow', partitions: 4, config: { retentionMs: -1 } });

    started = performance.now();
    for (let p0 = 0; p0 < o.partitions; p0 += 1000) {
      await broker.produce({ topic: 'wide', records: Array.from({ length: Math.min(1000, o.partitions - p0) }, (_, k) => ({ key: null, value: Buffer.from('first'), partition: p0 + k })) });
    }
    console.log(`first record on every partition (each partition's first write of a session marks it for recovery): ${fmt(performance.now() - started)} ms`);

    const rows: string[][] = [];
    for (const [topic, partitions] of [['wide', o.partitions], ['narrow', 4]] as const) {
      const before = broker.fileCacheStats();
      const produced = await produce(broker, topic, partitions, o);
      const fetched = await fetch(broker, topic, partitions, o);
      const after = broker.fileCacheStats();
      const uses = after.hits + after.opens - before.hits - before.opens;
      rows.push([topic, fmt(partitions), fmt(produced), fmt(fetched.fetches), fmt(fetched.records),
        `${((after.opens - before.opens) / uses * 100).toFixed(1)} %`, fmt(after.evictions - before.evictions)]);
    }
    console.log('| topic | partitions | produce, records/s | fetches/s | fetch, records/s | file-cache misses | evictions |');
    console.log('| --- | --- | --- | --- | --- | --- | --- |');
    for (const r of rows) console.log(`| ${r.join(' | ')} |`);

    started = performance.now();
    await broker.close();
    console.log(`clean shutdown (${fmt(o.partitions + 4)} partitions loaded, each sealed; checkpointed the first time): ${fmt(performance.now() - started)} ms`);
    const clean = await timedOpen(dataDir);
    await clean.broker.close();
    await writeAllThenKill(dataDir, 'wide', o.partitions);
    const killed = await timedOpen(dataDir);
    const recovered = Number(lastStart.recovered);
    broker = killed.broker;
    const check = await broker.fetch({ topic: 'wide', partitions: [{ partition: o.partitions - 1, offset: 0 }], maxRecords: 100_000 });
    if (check.partitions[0]!.records.at(-1)?.value?.toString() !== 'after-restart') throw new Error('the last write before the SIGKILL is missing');
    await broker.close();
    console.log(`start-up with ${fmt(o.partitions + 4)} partitions: clean ${fmt(clean.ms)} ms (heap +${clean.heapMb.toFixed(1)} MB), ` +
      `after SIGKILL with every partition written ${fmt(killed.ms)} ms (heap +${killed.heapMb.toFixed(1)} MB, ${fmt(recovered)} partitions recovered)`);
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

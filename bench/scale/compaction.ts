/**
 * Compaction in bounded memory (issue 15, point 4): a `onelog serve` child with a compacted topic of one
 * partition holding `copies` records of each of `keys` distinct keys (written key 0 to N-1, then again, ...),
 * compacted through the admin API (`POST /topics/:topic/compact` with `wait`, what `onelog topics compact TOPIC
 * --wait` sends). Prints the child's resident memory before, its peak during the compaction (VmHWM, reset just
 * before) and the time it took, with the number of key-map passes the stats report; then reads the whole
 * partition back and checks that every key is there exactly once (records == distinct keys).
 *
 * The baseline the issue quotes (4,000,000 records of 2,000,000 keys took the broker from 114 MB to 464 MB
 * resident before the key map was bounded) runs first, then `keys` distinct keys.
 *
 * The broker's timer (every 15 s) compacts too, while the keys are produced: an on-demand compaction asked for
 * while such a pass runs waits for it, then makes its own pass, so the time measured includes what was left of
 * the background one. A compaction of tens of millions of keys takes minutes with no byte on the connection,
 * so the child's HTTP idle timeout and the client's wait for the answer are raised to {@link WAIT_MS}.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Agent, getGlobalDispatcher, setGlobalDispatcher } from 'undici';
import { BinaryApi } from '../../src/client/binary-api.js';
import { HttpApi } from '../../src/client/http-api.js';
import { fmt, mb, residentMemory, resetPeakRss, spawnServer } from './common.js';
import type { TimedServer } from './common.js';
import { loadAverage, machineLine } from '../peers/common.js';

/** What the compaction benchmark writes and compacts. */
export interface CompactionBenchmarkOptions {
  /** Distinct keys of the large run (the 2,000,000-key baseline runs first). */
  keys: number;
  /** Records per key. @default 2 */
  copies?: number;
}

const TOPIC = 'keyed';
/** Keys are `k` and 9 digits; values 8 bytes. */
const KEY_DIGITS = 9;
const VALUE_BYTES = 8;
const BATCH_RECORDS = 10_000;
const IN_FLIGHT = 4;
/** Closed segments are what compaction cleans: 64 MiB ones, so all but the last are. */
const SEGMENT_BYTES = 64 * 1024 * 1024;
const BASELINE_KEYS = 2_000_000;
/**
 * Longest wait for the compaction's answer, ms: one hour, above the broker's 60 s HTTP idle timeout (`serve
 * --idle-timeout-ms`, which also cuts a connection waiting for a slow answer) and undici's 300 s headers timeout.
 */
const WAIT_MS = 60 * 60 * 1000;

const keyOf = (k: number) => Buffer.from(`k${String(k).padStart(KEY_DIGITS, '0')}`);

/** Writes `copies` rounds of keys 0..keys-1 in requests of BATCH_RECORDS; answers the seconds it took. */
async function produceKeys(api: BinaryApi, keys: number, copies: number): Promise<number> {
  const value = Buffer.alloc(VALUE_BYTES, 'v');
  const total = keys * copies;
  let next = 0;
  const started = performance.now();
  // In flight requests may land out of order; within a round a key appears once, and rounds do not overlap by more
  // than IN_FLIGHT batches, so each key's latest record is still one of its last round's.
  const worker = async () => {
    while (next < total) {
      const from = next;
      next += BATCH_RECORDS;
      const records = [];
      for (let i = from; i < Math.min(from + BATCH_RECORDS, total); i++) records.push({ key: keyOf(i % keys), value, partition: 0 });
      await api.produce({ topic: TOPIC, records });
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  return (performance.now() - started) / 1000;
}

/** Reads partition 0 from offset 0 to the high watermark; throws unless every key 0..keys-1 is there exactly once. */
async function checkOnePerKey(api: BinaryApi, keys: number, highWatermark: number): Promise<number> {
  const seen = new Uint8Array(keys);
  let records = 0;
  let offset = 0;
  while (offset < highWatermark) {
    const result = await api.fetch({ topic: TOPIC, partitions: [{ partition: 0, offset }], maxRecords: 200_000, maxBytes: 16 * 1024 * 1024, maxWaitMs: 0 });
    const p = result.partitions[0]!;
    for (const r of p.records) {
      const k = Number(r.key!.subarray(1).toString());
      if (seen[k]) throw new Error(`key ${k} is there twice after compaction (offset ${r.offset})`);
      seen[k] = 1;
      records++;
    }
    if (p.nextOffset <= offset) throw new Error(`fetch at ${offset} did not move on`);
    offset = p.nextOffset;
  }
  if (records !== keys) throw new Error(`${fmt(records)} records after compaction, expected ${fmt(keys)} (one per key)`);
  return records;
}

async function run(keys: number, copies: number): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'onelog-bench-compaction-'));
  let server: TimedServer | null = null;
  try {
    server = await spawnServer(dataDir, ['--idle-timeout-ms', String(WAIT_MS)]);
    const pid = server.proc.pid!;
    const idle = residentMemory(pid).rssBytes;
    const api = new BinaryApi(server.url);
    await api.createTopic({ topic: TOPIC, partitions: 1, config: { cleanupPolicy: 'compact', segmentBytes: SEGMENT_BYTES, minCompactionLagMs: 0, retentionMs: -1 } });
    const produceSeconds = await produceKeys(api, keys, copies);
    const before = residentMemory(pid).rssBytes;
    console.log(`${fmt(keys)} keys x ${copies}: produced ${fmt(keys * copies)} records in ${produceSeconds.toFixed(1)} s ` +
      `(${fmt((keys * copies) / produceSeconds)} records/s); broker RSS ${mb(idle)} MB idle, ${mb(before)} MB after producing`);

    const admin = new HttpApi(server.url);
    const reset = resetPeakRss(pid);
    const started = performance.now();
    const result = await admin.compactTopic({ topic: TOPIC, wait: true });
    const seconds = (performance.now() - started) / 1000;
    const after = residentMemory(pid);
    const stats = result.partitions[0]!;
    console.log(`  compaction: ${seconds.toFixed(1)} s, ${stats.passes} passes, ${fmt(stats.recordsBefore)} -> ${fmt(stats.recordsAfter)} ` +
      `records in the ${stats.segments} rewritten segments (${mb(stats.bytesBefore)} -> ${mb(stats.bytesAfter)} MB); broker peak RSS ` +
      `${mb(after.peakRssBytes)} MB${reset ? '' : ' (peak since start: the kernel refused a reset)'} (${mb(after.peakRssBytes - before)} MB ` +
      `above the ${mb(before)} MB before), ${mb(after.rssBytes)} MB after`);
    const hw = (await api.describeTopic(TOPIC)).partitions[0]!.highWatermark;
    const checkStarted = performance.now();
    const records = await checkOnePerKey(api, keys, hw);
    console.log(`  read back: ${fmt(records)} records, every key exactly once (records == distinct keys), in ` +
      `${((performance.now() - checkStarted) / 1000).toFixed(1)} s`);
    api.close();
    admin.close();
  } finally {
    await server?.stop('SIGTERM');
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Runs the compaction benchmark (the 2,000,000-key baseline, then `o.keys` keys) and prints its setup and figures. */
export async function compactionBenchmark(o: CompactionBenchmarkOptions): Promise<void> {
  const copies = o.copies ?? 2;
  console.log(`== compaction in bounded memory: ${fmt(BASELINE_KEYS)} and ${fmt(o.keys)} distinct keys ==`);
  console.log(`setup: child \`onelog serve\` on loopback, default --cleaner-dedupe-buffer-bytes (64 MiB, about 2.5M keys a pass); ` +
    `topic "${TOPIC}" of 1 partition (cleanup.policy compact, segment.bytes ${SEGMENT_BYTES / 1024 / 1024} MiB, min.compaction.lag.ms 0); ` +
    `each key (${KEY_DIGITS + 1} B) written ${copies} times with an ${VALUE_BYTES} B value by the binary client in requests of ` +
    `${fmt(BATCH_RECORDS)}, ${IN_FLIGHT} in flight; compaction through POST /topics/${TOPIC}/compact {wait: true} (serve --idle-timeout-ms ${WAIT_MS}, so the connection ` +
    `lives until it answers), background compaction every 15 s (the default) meanwhile; peak RSS is the ` +
    'child\'s VmHWM, reset just before the compaction');
  console.log(machineLine());
  const dispatcher = getGlobalDispatcher(); // the HTTP client's, for the compaction's answer
  setGlobalDispatcher(new Agent({ headersTimeout: WAIT_MS, bodyTimeout: WAIT_MS }));
  try {
    await run(BASELINE_KEYS, copies);
    if (o.keys !== BASELINE_KEYS) await run(o.keys, copies);
  } finally {
    setGlobalDispatcher(dispatcher);
  }
  console.log(`(${loadAverage()} at the end; other work on the machine moves these figures)`);
}

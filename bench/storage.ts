/**
 * Storage-layer benchmark: the disk's raw sequential write bandwidth (write + fdatasync of 1 MiB blocks),
 * and beside it PartitionLog append throughput for 100 B and 1 KiB records in each flush policy, read
 * throughput, and compaction throughput. No network, no HTTP: the log engine alone.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { systemClock } from '../src/common/clock.js';
import { silentLogger } from '../src/common/logger.js';
import { encodeBatch } from '../src/protocol/record-batch.js';
import { DEFAULT_TOPIC_CONFIG } from '../src/protocol/topic-config.js';
import type { FlushPolicy, TopicConfig } from '../src/protocol/topic-config.js';
import { FileCache } from '../src/log/segments/file-cache.js';
import { PartitionLog } from '../src/log/segments/partition-log.js';

const MB = 1e6;

function openLog(dir: string, config: Partial<TopicConfig>): PartitionLog {
  return PartitionLog.open(dir, 'bench', 0, {
    config: { ...DEFAULT_TOPIC_CONFIG, ...config }, indexIntervalBytes: 4096, clock: systemClock, logger: silentLogger,
    files: new FileCache({ maxOpenFiles: 64 }),
  });
}

/** MB/s of a plain write + fdatasync loop of 1 MiB blocks. */
function rawDiskBandwidth(dir: string, totalBytes: number): number {
  const file = path.join(dir, 'raw.bin');
  const block = Buffer.alloc(1024 * 1024, 7);
  const fd = fs.openSync(file, 'w');
  const started = performance.now();
  for (let written = 0; written < totalBytes; written += block.length) {
    fs.writeSync(fd, block);
    fs.fdatasyncSync(fd);
  }
  const seconds = (performance.now() - started) / 1000;
  fs.closeSync(fd);
  fs.rmSync(file);
  return totalBytes / seconds / MB;
}

interface Row {
  what: string;
  records: number;
  bytes: number;
  seconds: number;
}

/** Appends `total` records of `recordBytes` as pre-encoded batches of `batchRecords`, `inFlight` at a time. */
async function appendThroughput(dir: string, policy: FlushPolicy, recordBytes: number, total: number, batchRecords: number, inFlight: number): Promise<Row> {
  const log = openLog(dir, { flushPolicy: policy });
  const records = Array.from({ length: batchRecords }, (_, i) => ({ key: null, value: Buffer.alloc(recordBytes, 97 + (i % 26)) }));
  const batch = encodeBatch(records, 0, Date.now());
  let appended = 0;
  const started = performance.now();
  const worker = async () => {
    while (appended < total) {
      appended += batchRecords;
      await log.appendBatch(batch);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  await log.flush();
  const seconds = (performance.now() - started) / 1000;
  await log.close();
  return { what: `append ${recordBytes} B, flush.policy=${policy}`, records: appended, bytes: appended * recordBytes, seconds };
}

function readThroughput(dir: string, recordBytes: number): Row {
  const log = openLog(dir, {});
  const started = performance.now();
  let records = 0;
  for (let offset = log.logStartOffset; offset < log.highWatermark; ) {
    const got = log.read(offset, { maxBytes: 4 * 1024 * 1024, maxRecords: 100_000 });
    records += got.length;
    offset = got[got.length - 1]!.offset + 1;
  }
  const seconds = (performance.now() - started) / 1000;
  void log.close();
  return { what: `read ${recordBytes} B (decode every record)`, records, bytes: records * recordBytes, seconds };
}

async function compactionThroughput(dir: string, total: number, keys: number): Promise<Row> {
  const log = openLog(dir, { cleanupPolicy: 'compact', flushPolicy: 'never', segmentBytes: 16 * 1024 * 1024 });
  for (let base = 0; base < total; base += 1000) {
    const records = Array.from({ length: 1000 }, (_, i) => ({ key: Buffer.from(`key-${(base + i) % keys}`), value: Buffer.alloc(100, 120) }));
    await log.append(records);
  }
  const started = performance.now();
  const stats = await log.compact(true);
  const seconds = (performance.now() - started) / 1000;
  await log.close();
  return { what: `compact ${total.toLocaleString('en-US')} x 100 B records, ${keys.toLocaleString('en-US')} keys -> ${stats!.recordsAfter.toLocaleString('en-US')}`, records: stats!.recordsBefore, bytes: stats!.bytesBefore, seconds };
}

export async function storageBenchmark(options: { scale: number }): Promise<void> {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'onelog-bench-storage-'));
  const fresh = (name: string) => {
    const dir = path.join(base, name);
    fs.mkdirSync(dir);
    return dir;
  };
  try {
    console.log('== storage layer: PartitionLog on local files, no network ==');
    console.log(`setup: ${os.cpus().length} x ${os.cpus()[0]?.model ?? 'cpu'}, node ${process.version}, dir ${base}; ` +
      'appends are pre-encoded batches (appendBatch), 1 MiB per batch, 4 appends in flight; 1 GiB segments');
    const raw = rawDiskBandwidth(base, 256 * 1024 * 1024 * options.scale);
    console.log(`raw disk: write + fdatasync of 1 MiB blocks: ${raw.toFixed(1)} MB/s`);
    const rows: Row[] = [];
    for (const recordBytes of [100, 1024]) {
      const batchRecords = Math.floor((1024 * 1024) / (recordBytes + 10));
      for (const policy of ['always', 'interval', 'never'] as const) {
        const total = Math.round((recordBytes === 100 ? 4_000_000 : 500_000) * options.scale);
        const dir = fresh(`${policy}-${recordBytes}`);
        rows.push(await appendThroughput(dir, policy, recordBytes, total, batchRecords, 4));
        if (policy === 'interval') rows.push(readThroughput(dir, recordBytes));
      }
    }
    rows.push(await compactionThroughput(fresh('compact'), Math.round(1_000_000 * options.scale), 10_000));
    const w = Math.max(...rows.map((r) => r.what.length));
    console.log(`${'operation'.padEnd(w)}  ${'records/s'.padStart(12)}  ${'MB/s'.padStart(8)}  ${'% of raw disk'.padStart(13)}`);
    for (const r of rows) {
      const mbs = r.bytes / r.seconds / MB;
      const pct = r.what.startsWith('append') ? `${((100 * mbs) / raw).toFixed(0)}%` : '';
      console.log(`${r.what.padEnd(w)}  ${Math.round(r.records / r.seconds).toLocaleString('en-US').padStart(12)}  ${mbs.toFixed(1).padStart(8)}  ${pct.padStart(13)}`);
    }
  } finally {
    fs.rmSync(base, { recursive: true, force: true });
  }
}

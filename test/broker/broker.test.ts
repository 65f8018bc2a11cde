import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { ManualClock } from '../../src/common/clock.js';
import type { CompressionCodec } from '../../src/protocol/compression.js';
import { partitionForKey } from '../../src/protocol/murmur2.js';
import { STICKY_BYTES } from '../../src/protocol/partitioner.js';
import { batchCompression, LOG_OVERHEAD, readBatchHeader } from '../../src/protocol/record-batch.js';
import type { CompressionType } from '../../src/protocol/topic-config.js';
import { tmpDir } from '../helpers/tmp.js';
import { brokerContract } from '../api/broker.contract.js';
import { asyncCodeOf } from '../helpers/errors.js';

const open: Broker[] = [];
async function broker(dataDir = tmpDir(), clock = new ManualClock(1_700_000_000_000)) {
  const b = await Broker.open({ dataDir, clock });
  open.push(b);
  return b;
}
afterEach(async () => {
  for (const b of open.splice(0)) await b.close();
});

const rec = (value: string, key: string | null = null, extra = {}) => ({
  key: key === null ? null : Buffer.from(key), value: Buffer.from(value), ...extra,
});

/** The codec of every batch in a partition's segment files, in log order, and the bytes they take. */
function storedBatches(dataDir: string, topic: string, partition = 0): { codecs: CompressionCodec[]; bytes: number } {
  const dir = path.join(dataDir, 'log', `${topic}-${partition}`);
  const codecs: CompressionCodec[] = [];
  let bytes = 0;
  for (const file of fs.readdirSync(dir).filter((f) => f.endsWith('.log')).sort()) {
    const data = fs.readFileSync(path.join(dir, file));
    for (let pos = 0; pos < data.length; pos += LOG_OVERHEAD + data.readInt32BE(pos + 8)) codecs.push(batchCompression(readBatchHeader(data, pos)));
    bytes += data.length;
  }
  return { codecs, bytes };
}

brokerContract('the embedded default (segment files, LMDB, SQLite)', () => {
  const dataDir = tmpDir();
  return { open: (clock) => Broker.open({ dataDir, clock }), dispose: async () => fs.rmSync(dataDir, { recursive: true, force: true }) };
});

describe('Broker', () => {
  it('creates, lists and describes topics with Kafka defaults', async () => {
    const b = await broker();
    await b.createTopic({ topic: 'edits', partitions: 3 });
    expect(await b.listTopics()).toEqual([{ topic: 'edits', partitions: 3 }]);
    const d = await b.describeTopic('edits');
    expect(d.partitions).toEqual([0, 1, 2].map((p) => ({ partition: p, logStartOffset: 0, highWatermark: 0, sizeBytes: 0 })));
    expect(d.config).toEqual({
      cleanupPolicy: 'delete', retentionMs: 604800000, retentionBytes: -1, segmentBytes: 1073741824, segmentMs: 604800000,
      deleteRetentionMs: 86400000, minCompactionLagMs: 0, flushPolicy: 'interval', flushMs: 50, flushMessages: -1,
      compressionType: 'producer',
    });
    expect(await asyncCodeOf(b.createTopic({ topic: 'edits', partitions: 1 }))).toBe('TOPIC_ALREADY_EXISTS');
    expect(await asyncCodeOf(b.createTopic({ topic: 'bad name', partitions: 1 }))).toBe('INVALID_TOPIC');
    expect(await asyncCodeOf(b.createTopic({ topic: 'x', partitions: 0 }))).toBe('INVALID_PARTITIONS');
    expect(await asyncCodeOf(b.createTopic({ topic: 'x', partitions: 1, config: { nope: 1 } as never }))).toBe('INVALID_CONFIG');
    expect(await asyncCodeOf(b.describeTopic('missing'))).toBe('UNKNOWN_TOPIC');
  });

  it('alters topic settings, keeping the others, and survives a reopen', async () => {
    const dir = tmpDir();
    let b = await broker(dir);
    await b.createTopic({ topic: 't', partitions: 1, config: { retentionMs: 1000 } });
    const altered = await b.alterTopic({ topic: 't', config: { flushPolicy: 'always', segmentBytes: 4096 } });
    expect(altered.config).toMatchObject({ retentionMs: 1000, flushPolicy: 'always', segmentBytes: 4096 });
    expect(await asyncCodeOf(b.alterTopic({ topic: 't', config: { flushPolicy: 'sometimes' } as never }))).toBe('INVALID_CONFIG');
    expect(await asyncCodeOf(b.alterTopic({ topic: 'nope', config: {} }))).toBe('UNKNOWN_TOPIC');
    await b.close();
    open.length = 0;
    b = await broker(dir);
    expect((await b.describeTopic('t')).config).toMatchObject({ retentionMs: 1000, flushPolicy: 'always', segmentBytes: 4096 });
  });

  it('partitions by explicit partition, by murmur2 of the key, and keeps null keys on a sticky partition that moves on', async () => {
    const b = await broker();
    await b.createTopic({ topic: 't', partitions: 4 });
    const r = await b.produce({
      topic: 't',
      records: [rec('a', null, { partition: 3 }), rec('b', 'kafka'), rec('c'), rec('d'), rec('e'), rec('f')],
    });
    expect(r.offsets[0]).toEqual({ partition: 3, offset: 0 });
    expect(r.offsets[1]!.partition).toBe(partitionForKey(Buffer.from('kafka'), 4));
    // The keyless records of a small request are one batch on one partition (KIP-480)...
    const sticky = r.offsets[2]!.partition;
    expect(r.offsets.slice(2).map((o) => o.partition)).toEqual([sticky, sticky, sticky, sticky]);
    // ... and the next STICKY_BYTES go to the next partition.
    const big = { key: null, value: Buffer.alloc(STICKY_BYTES) };
    const next = await b.produce({ topic: 't', records: [big, big, big] });
    expect(next.offsets.map((o) => o.partition)).toEqual([sticky, (sticky + 1) % 4, (sticky + 2) % 4]);
  });

  it('refuses a bad record without storing any record of the request', async () => {
    const b = await broker();
    await b.createTopic({ topic: 't', partitions: 2 });
    await b.produce({ topic: 't', records: [rec('kept', null, { partition: 0 })] });
    const big = { key: null, value: Buffer.alloc(2 * 1024 * 1024) };
    expect(await asyncCodeOf(b.produce({ topic: 't', records: [rec('x', null, { partition: 0 }), big] }))).toBe('RECORD_TOO_LARGE');
    expect(await asyncCodeOf(b.produce({ topic: 't', records: [rec('x', null, { partition: 0 }), rec('y', null, { partition: 9 })] }))).toBe('UNKNOWN_PARTITION');
    expect(await asyncCodeOf(b.produce({ topic: 't', records: [rec('x', null, { partition: -1 })] }))).toBe('INVALID_REQUEST');
    expect(await asyncCodeOf(b.produce({ topic: 'nope', records: [rec('x')] }))).toBe('UNKNOWN_TOPIC');
    const d = await b.describeTopic('t');
    expect(d.partitions.map((p) => p.highWatermark)).toEqual([1, 0]);
  });

  it('compresses produced batches with the topic\'s compression.type and serves them back', async () => {
    const dataDir = tmpDir();
    const b = await broker(dataDir);
    const records = Array.from({ length: 300 }, (_, i) => rec(`{"edit":${i},"page":"Talk:Oswald Tilghman","channel":"#en.wikipedia"}`, `k${i % 10}`, { partition: 0 }));
    const types: CompressionType[] = ['producer', 'none', 'gzip', 'snappy', 'lz4', 'zstd'];
    const bytes = new Map<CompressionType, number>();
    for (const compressionType of types) {
      const topic = `c-${compressionType}`;
      await b.createTopic({ topic, partitions: 1, config: { compressionType } });
      await b.produce({ topic, records });
      const stored = storedBatches(dataDir, topic);
      // producer: the JSON produce path carries no producer codec, so it stores batches uncompressed
      expect(stored.codecs).toEqual([compressionType === 'producer' ? 'none' : compressionType]);
      bytes.set(compressionType, stored.bytes);
      const fetched = await b.fetch({ topic, partitions: [{ partition: 0, offset: 0 }] });
      expect(fetched.partitions[0]!.records.map((r) => [r.offset, r.key!.toString(), r.value!.toString()]))
        .toEqual(records.map((r, i) => [i, r.key!.toString(), r.value.toString()]));
    }
    for (const codec of ['gzip', 'snappy', 'lz4', 'zstd'] as const) expect(bytes.get(codec)!).toBeLessThan(bytes.get('none')! / 3);
    // A changed compression.type applies from the next produce on; older batches keep their codec.
    await b.alterTopic({ topic: 'c-gzip', config: { compressionType: 'zstd' } });
    await b.produce({ topic: 'c-gzip', records: [rec('after', 'k', { partition: 0 })] });
    expect(storedBatches(dataDir, 'c-gzip').codecs).toEqual(['gzip', 'zstd']);
    const all = await b.fetch({ topic: 'c-gzip', partitions: [{ partition: 0, offset: 295 }] });
    expect(all.partitions[0]!.records.map((r) => r.offset)).toEqual([295, 296, 297, 298, 299, 300]);
  });

  it('compacts a gzip topic: the latest record per key survives, in gzip batches', async () => {
    const dataDir = tmpDir();
    const b = await broker(dataDir);
    await b.createTopic({ topic: 't', partitions: 1, config: { cleanupPolicy: 'compact', compressionType: 'gzip', segmentBytes: 2048 } });
    for (let round = 0; round < 20; round++) {
      await b.produce({ topic: 't', records: Array.from({ length: 8 }, (_, k) => rec(`value of k${k} in round ${round} `.repeat(4), `k${k}`)) });
    }
    const before = storedBatches(dataDir, 't');
    expect(before.codecs.length).toBe(20);
    expect(new Set(before.codecs)).toEqual(new Set(['gzip']));
    const result = await b.compactTopic({ topic: 't' });
    expect(result.partitions[0]).toMatchObject({ recordsBefore: 160, recordsAfter: 8 });
    const after = storedBatches(dataDir, 't');
    expect(after.codecs.length).toBeGreaterThan(0);
    expect(new Set(after.codecs)).toEqual(new Set(['gzip']));
    expect(after.bytes).toBeLessThan(before.bytes);
    const fetched = await b.fetch({ topic: 't', partitions: [{ partition: 0, offset: 0 }] });
    expect(fetched.partitions[0]!.records.map((r) => [r.offset, r.key!.toString(), r.value!.toString()]))
      .toEqual(Array.from({ length: 8 }, (_, k) => [152 + k, `k${k}`, `value of k${k} in round 19 `.repeat(4)]));
  });
});

describe('data directory lock', () => {
  it('refuses a second broker on a directory in use, and lets one in after close', async () => {
    const dir = tmpDir();
    const first = await broker(dir);
    await expect(Broker.open({ dataDir: dir })).rejects.toMatchObject({ code: 'DATA_DIR_LOCKED', context: { pid: process.pid } });
    await first.close();
    open.length = 0;
    await (await broker(dir)).close();
    open.length = 0;
  });

  it('takes over a lock held by a zombie (a killed broker its parent has not reaped yet)', async () => {
    const dir = tmpDir();
    const fs = await import('node:fs');
    const { spawn } = await import('node:child_process');
    // A forked child exits at once; its parent never waits for it: a zombie while the parent sleeps.
    const script = 'import os, time\npid = os.fork()\nif pid == 0:\n    os._exit(0)\nprint(pid, flush=True)\ntime.sleep(30)';
    const parent = spawn('python3', ['-c', script], { stdio: ['ignore', 'pipe', 'ignore'] });
    const pid = await new Promise<string>((resolve) => parent.stdout.once('data', (d: Buffer) => resolve(d.toString().trim())));
    try {
      for (let i = 0; i < 200 && !fs.readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z '); i++) await new Promise((r) => setTimeout(r, 5));
      expect(fs.readFileSync(`/proc/${pid}/stat`, 'utf8')).toContain(') Z ');
      fs.writeFileSync(`${dir}/broker.lock`, pid);
      const b = await broker(dir);
      expect(fs.readFileSync(`${dir}/broker.lock`, 'utf8')).toBe(String(process.pid));
      await b.close();
      open.length = 0;
    } finally {
      parent.kill('SIGKILL');
    }
  });

  it('takes over a lock left by a process that is gone', async () => {
    const dir = tmpDir();
    const fs = await import('node:fs');
    fs.writeFileSync(`${dir}/broker.lock`, '999999999');
    const b = await broker(dir);
    expect(fs.readFileSync(`${dir}/broker.lock`, 'utf8')).toBe(String(process.pid));
    await b.close();
    open.length = 0;
  });
});

/**
 * Crash test: a child process appends with flush.policy=always and is SIGKILLed at random moments, 50 times.
 * After every kill the log reopens (recovering a torn tail) with every acknowledged record present, exact,
 * at its offset, and offsets contiguous from 0. Needs the build (`npm run build`, done by `npm test`).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/common/clock.js';
import { silentLogger } from '../../src/common/logger.js';
import { DEFAULT_TOPIC_CONFIG } from '../../src/protocol/topic-config.js';
import type { FlushPolicy } from '../../src/protocol/topic-config.js';
import { FileCache } from '../../src/log/segments/file-cache.js';
import { PartitionLog } from '../../src/log/segments/partition-log.js';
import { tmpDir } from '../helpers/tmp.js';

const CHILD = path.resolve(import.meta.dirname, '../fixtures/append-child.mjs');
const COMPACT_CHILD = path.resolve(import.meta.dirname, '../fixtures/compact-child.mjs');
const KILLS = 50;

/** Runs the child until it has acknowledged something, then kills it after a random delay; returns its acks. */
function runAndKill(dir: string, run: number, killAfterMs: number, policy: FlushPolicy): Promise<Map<number, string>> {
  const child = spawn(process.execPath, [CHILD, dir, String(run), policy], { stdio: ['ignore', 'pipe', 'inherit'] });
  const acked = new Map<number, string>();
  const lines = readline.createInterface({ input: child.stdout! });
  let timer: NodeJS.Timeout | undefined;
  lines.on('line', (line) => {
    const [kind, base, ...values] = line.split(' ');
    if (kind === 'ack') values.forEach((v, i) => acked.set(Number(base) + i, v));
    if (kind === 'ack' && timer === undefined) timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code, signal) => {
      if (signal !== 'SIGKILL') reject(new Error(`child exited with ${code} ${signal}`));
      // Lines already read before the kill are all we count as acknowledged.
      lines.close();
      resolve(acked);
    });
  });
}

describe('crash safety of acknowledged appends', () => {
  // A process crash leaves the page cache to the kernel: whatever the flush policy, nothing acknowledged is lost.
  it.each([['always', KILLS], ['interval', KILLS / 2], ['never', KILLS / 2]] as const)('flush.policy=%s: keeps every acknowledged record through %i SIGKILLs at random moments', async (policy, kills) => {
    const dir = tmpDir();
    const expected = new Map<number, string>();
    let seed = 12345;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (let run = 0; run < kills; run++) {
      const acked = await runAndKill(dir, run, Math.floor(random() * 40), policy);
      expect(acked.size).toBeGreaterThan(0);
      for (const [offset, value] of acked) expected.set(offset, value);

      const log = PartitionLog.open(dir, 'crash', 0, {
        config: { ...DEFAULT_TOPIC_CONFIG, flushPolicy: policy, segmentBytes: 64 * 1024 },
        indexIntervalBytes: 1024, clock: systemClock, logger: silentLogger, files: new FileCache({ maxOpenFiles: 16 }),
      });
      try {
        const stored = new Map<number, string>();
        for (let offset = 0; offset < log.highWatermark; ) {
          const records = log.read(offset, { maxBytes: 1 << 20, maxRecords: 10_000 });
          for (const r of records) stored.set(r.offset, r.value!.toString());
          offset = records.at(-1)!.offset + 1;
        }
        expect([...stored.keys()]).toEqual(Array.from({ length: log.highWatermark }, (_, i) => i));
        for (const [offset, value] of expected) expect(stored.get(offset), `offset ${offset} after run ${run}`).toBe(value);
      } finally {
        await log.close();
      }
    }
    expect(expected.size).toBeGreaterThan(kills);
  });

  it('leaves a readable, correct log when a compaction is SIGKILLed at random moments', async () => {
    const dir = tmpDir();
    const open = () => PartitionLog.open(dir, 'crash', 0, {
      config: { ...DEFAULT_TOPIC_CONFIG, cleanupPolicy: 'compact', flushPolicy: 'always', segmentBytes: 16 * 1024 },
      indexIntervalBytes: 1024, clock: systemClock, logger: silentLogger, files: new FileCache({ maxOpenFiles: 16 }),
    });
    // 5,000 records over 50 keys: the latest value of each key is what compaction must never lose.
    const latest = new Map<string, { offset: number; value: string }>();
    let log = open();
    for (let i = 0; i < 5000; i += 100) {
      const batch = Array.from({ length: 100 }, (_, j) => ({ key: `k${(i + j) % 50}`, value: `v${i + j}-${'y'.repeat((i + j) % 90)}` }));
      const { baseOffset } = await log.append(batch.map((r) => ({ key: Buffer.from(r.key), value: Buffer.from(r.value) })));
      batch.forEach((r, j) => latest.set(r.key, { offset: baseOffset + j, value: r.value }));
    }
    await log.close();
    let seed = 777;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (let run = 0; run < 12; run++) {
      const child = spawn(process.execPath, [COMPACT_CHILD, dir], { stdio: ['ignore', 'pipe', 'inherit'] });
      const lines = readline.createInterface({ input: child.stdout! });
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      lines.on('line', (line) => {
        const [kind, offset, key, value] = line.split(' ');
        if (kind === 'ack') latest.set(key!, { offset: Number(offset), value: value! });
        if (kind === 'ready') setTimeout(() => child.kill('SIGKILL'), 5 + Math.floor(random() * 60));
      });
      await exited;
      lines.close();
      log = open();
      try {
        const byKey = new Map<string, { offset: number; value: string }>();
        let previous = -1;
        for (let offset = log.logStartOffset; offset < log.highWatermark; ) {
          const { records, nextOffset } = log.fetch(offset, { maxBytes: 1 << 20, maxRecords: 10_000 });
          for (const r of records) {
            expect(r.offset).toBeGreaterThan(previous);
            previous = r.offset;
            byKey.set(r.key!.toString(), { offset: r.offset, value: r.value!.toString() });
          }
          expect(nextOffset).toBeGreaterThan(offset);
          offset = nextOffset;
        }
        // Each key's latest acknowledged record is there, or a later one written just before the kill.
        for (const [key, want] of latest) {
          const got = byKey.get(key);
          expect(got, `${key} after run ${run}`).toBeDefined();
          if (got!.offset === want.offset) expect(got!.value).toBe(want.value);
          else expect(got!.offset, `${key} after run ${run}`).toBeGreaterThan(want.offset);
          latest.set(key, got!);
        }
      } finally {
        await log.close();
      }
    }
  });
});

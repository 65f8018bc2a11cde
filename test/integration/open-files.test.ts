/**
 * Many partitions on a small open-files limit, on real processes: `onelog serve` runs under `ulimit -n`, its
 * descriptors are read from /proc all along, it is SIGKILLed and restarted.
 * - ulimit 256: 20 topics x 100 partitions, 50,000 keyed records (the real Wikipedia edits, some twice)
 *   produced and read by a consumer group; after SIGKILL and restart a new group reads every record exactly
 *   once; the log store never holds more descriptors than its budget, nor the process more than the limit.
 * - ulimit 1024: a topic of 10,000 partitions (the documented maximum), written on every partition,
 *   restarted clean and after SIGKILL, every partition's records intact.
 * Needs the build (`npm run build`, done by `npm test`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpApi, Onelog, Producer } from '../../src/client/index.js';
import { startServer } from '../helpers/processes.js';
import type { ServerProcess } from '../helpers/processes.js';
import { tmpDir } from '../helpers/tmp.js';
import { readEdits } from '../helpers/wikiticker.js';

const running: ServerProcess[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop('SIGKILL');
});

/** Peaks of a process's open descriptors, sampled from /proc every few ms until stopped. */
function watchDescriptors(pid: number, logDir: string) {
  const peak = { total: 0, log: 0, samples: 0 };
  const sample = () => {
    let total = 0;
    let log = 0;
    let fds: string[];
    try {
      fds = fs.readdirSync(`/proc/${pid}/fd`);
    } catch {
      return; // the process is gone
    }
    for (const fd of fds) {
      total++;
      try {
        if (fs.readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith(logDir)) log++;
      } catch {
        // closed while we looked
      }
    }
    peak.total = Math.max(peak.total, total);
    peak.log = Math.max(peak.log, log);
    peak.samples++;
  };
  const timer = setInterval(sample, 5);
  return { peak, stop: () => clearInterval(timer), sample };
}

/** Starts the server under the limit, returning it with the budget it logged; `logs` gets every log line. */
async function serve(dataDir: string, openFilesLimit: number, logs: Record<string, unknown>[] = []) {
  let maxOpenFiles = 0;
  const server = await startServer(dataDir, {
    openFilesLimit,
    onLog: (e) => {
      logs.push(e);
      if (typeof e.maxOpenFiles === 'number') maxOpenFiles = e.maxOpenFiles;
    },
  });
  running.push(server);
  return { server, maxOpenFiles };
}

const edits = readEdits();

describe('any number of partitions on a small open-files limit', () => {
  it('ulimit -n 256: 2,000 partitions, 50,000 records, a group, SIGKILL, restart: every record once, descriptors within budget', async () => {
    const dataDir = tmpDir();
    const logDir = path.join(dataDir, 'log');
    const first = await serve(dataDir, 256);
    let server = first.server;
    const maxOpenFiles = first.maxOpenFiles;
    expect(maxOpenFiles).toBe(192); // the default: the limit less max(64, a quarter)
    let watch = watchDescriptors(server.proc.pid!, logDir);
    const api = new HttpApi(server.url);
    const topics = Array.from({ length: 20 }, (_, i) => `edits-${i}`);
    for (const topic of topics) await api.createTopic({ topic, partitions: 100, config: { retentionMs: -1 } });

    // Record i: edit i % 39,244 keyed channel|page, in topic i % 20, its id in a header.
    const producer = new Producer(api);
    const TOTAL = 50_000;
    for (const [t, topic] of topics.entries()) {
      const ids = Array.from({ length: TOTAL / 20 }, (_, k) => k * 20 + t);
      for (let k = 0; k < ids.length; k += 500) {
        await producer.send({
          topic,
          messages: ids.slice(k, k + 500).map((i) => {
            const e = edits[i % edits.length]!;
            return { key: e.key, value: e.value, timestamp: e.timestamp, headers: { id: String(i) } };
          }),
        });
      }
    }

    /** Reads everything with a new consumer group from earliest; answers each id's count. */
    const readAll = async (url: string, groupId: string) => {
      const onelog = new Onelog({ url });
      const consumer = onelog.consumer({ groupId, startPolicy: 'earliest', maxRecords: 2000, sessionTimeoutMs: 10_000 });
      for (const topic of topics) consumer.subscribe({ topic });
      const seen = new Map<number, number>();
      let n = 0;
      await new Promise<void>((resolve, reject) => {
        consumer.run({
          eachMessage: async ({ message }) => {
            const id = Number(message.headers.find((h) => h.key === 'id')!.value!.toString());
            seen.set(id, (seen.get(id) ?? 0) + 1);
            if (++n === TOTAL) resolve();
          },
        }).catch(reject);
      });
      await consumer.stop();
      return seen;
    };
    expect((await readAll(server.url, 'first')).size).toBe(TOTAL);

    server.proc.kill('SIGKILL');
    await new Promise((resolve) => server.proc.once('exit', resolve));
    watch.stop();
    watch.sample();
    const before = { ...watch.peak };

    ({ server } = await serve(dataDir, 256));
    watch = watchDescriptors(server.proc.pid!, logDir);
    const again = await readAll(server.url, 'second');
    watch.stop();
    expect(again.size).toBe(TOTAL);
    expect([...again.values()].every((count) => count === 1)).toBe(true);
    for (const peak of [before, watch.peak]) {
      expect(peak.samples).toBeGreaterThan(10);
      expect(peak.log).toBeGreaterThan(20); // it did hold files open
      expect(peak.log).toBeLessThanOrEqual(maxOpenFiles);
      expect(peak.total).toBeLessThan(256);
    }
  });

  it('ulimit -n 1024: a topic of 10,000 partitions, written on every partition, restarted clean and after SIGKILL', async () => {
    const dataDir = tmpDir();
    const logDir = path.join(dataDir, 'log');
    const watches: ReturnType<typeof watchDescriptors>[] = [];
    let maxOpenFiles = 0;
    const logs: Record<string, unknown>[] = [];
    /** Starts the server under the limit, its descriptors watched. */
    const start = async () => {
      logs.length = 0;
      const started = await serve(dataDir, 1024, logs);
      maxOpenFiles = started.maxOpenFiles;
      watches.push(watchDescriptors(started.server.proc.pid!, logDir));
      return { server: started.server, api: new HttpApi(started.server.url) };
    };
    let { server, api } = await start();
    const PARTITIONS = 10_000;
    await api.createTopic({ topic: 'wide', partitions: PARTITIONS, config: { retentionMs: -1 } });
    /** One record on every partition: edit (round * 10,000 + p), 1,000 partitions per request. */
    const writeRound = async (round: number) => {
      for (let p0 = 0; p0 < PARTITIONS; p0 += 1000) {
        await api.produce({
          topic: 'wide',
          records: Array.from({ length: 1000 }, (_, k) => {
            const e = edits[(round * PARTITIONS + p0 + k) % edits.length]!;
            return { key: Buffer.from(e.key), value: Buffer.from(e.value), partition: p0 + k };
          }),
        });
      }
    };
    /** Every partition holds exactly the records of rounds 0 to `rounds - 1`, in order. */
    const check = async (rounds: number) => {
      const d = await api.describeTopic('wide');
      expect(d.partitions.every((p) => p.logStartOffset === 0 && p.highWatermark === rounds)).toBe(true);
      for (let p0 = 0; p0 < PARTITIONS; p0 += 500) {
        const { partitions } = await api.fetch({
          topic: 'wide', maxRecords: 500 * rounds,
          partitions: Array.from({ length: 500 }, (_, k) => ({ partition: p0 + k, offset: 0 })),
        });
        for (const part of partitions) {
          const want = Array.from({ length: rounds }, (_, r) => edits[(r * PARTITIONS + part.partition) % edits.length]!.value);
          expect(part.records.map((r) => r.value!.toString())).toEqual(want);
        }
      }
    };
    const kill = async () => {
      server.proc.kill('SIGKILL');
      await new Promise((resolve) => server.proc.once('exit', resolve));
    };

    await writeRound(0);
    expect(await server.stop('SIGTERM')).toBe(0);
    running.splice(running.indexOf(server), 1);
    ({ server, api } = await start());
    await check(1);
    await writeRound(1);
    await kill();

    ({ server, api } = await start());
    // Every partition was written since the last clean start: all are recovered at start-up, within the budget.
    expect(logs.find((e) => e.msg === 'opened the log store')).toMatchObject({ partitions: PARTITIONS, recovered: PARTITIONS });
    await check(2);
    for (const w of watches) {
      w.stop();
      expect(w.peak.samples).toBeGreaterThan(10);
      expect(w.peak.log).toBeLessThanOrEqual(maxOpenFiles);
      expect(w.peak.total).toBeLessThan(1024);
    }
    expect(Math.max(...watches.map((w) => w.peak.log))).toBeGreaterThan(100);
  });
});

/**
 * Poison records and throughput: how fast a consumer group gets through the main partitions of a topic when 1%
 * of its records fail (each nacked to a retry tier, policy 1 s, 5 s, 3 attempts), against the same run with no
 * failures. Real data: the Wikipedia edits (39,244), produced `copies` times, keyed by channel|page, over 4
 * partitions; the failing records are every 100th. Both runs consume the same topic, through the embedded
 * broker in-process and through `onelog serve`'s HTTP API (the JSON client on loopback).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import type { AddressInfo } from 'node:net';
import { Broker } from '../src/broker/broker.js';
import { Onelog } from '../src/client/index.js';
import { createHttpServer } from '../src/server/http-server.js';

/** What the benchmark runs. */
export interface RetriesBenchmarkOptions {
  /** Times the 39,244 edits are produced. */
  copies: number;
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const EDITS = path.resolve(import.meta.dirname, '../examples/data/wikiticker-2015-09-12-sampled.json.gz');

/** Consumes the topic with group `groupId` until the main partitions' lag is 0; records/s of the main partitions. */
async function consume(broker: Broker, onelog: Onelog, groupId: string, total: number, failEvery: number | null): Promise<{ rate: number; nacked: number }> {
  await broker.subscribe({ groupId, topic: 'edits', startPolicy: 'earliest', retry: { delaysMs: [1000, 5000], maxAttempts: 3 } });
  const consumer = onelog.consumer({ groupId, maxRecords: 1000, maxWaitMs: 100 });
  consumer.subscribe({ topic: 'edits' });
  let main = 0;
  let nacked = 0;
  let done: () => void = () => {};
  const finished = new Promise<void>((resolve) => (done = resolve));
  const started = performance.now();
  const running = consumer.run({
    eachMessage: ({ message }) => {
      if (message.attempt > 1) return; // a retry: not part of the main partitions' throughput
      const index = Number(message.headers.find((h) => h.key === 'i')!.value!.toString());
      main++;
      if (main === total) done();
      if (failEvery !== null && index % failEvery === 0) {
        nacked++;
        throw new Error(`edit ${index} cannot be processed`);
      }
    },
  });
  await finished;
  const seconds = (performance.now() - started) / 1000;
  await consumer.stop();
  await running;
  return { rate: total / seconds, nacked };
}

export async function retriesBenchmark(o: RetriesBenchmarkOptions): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'onelog-bench-retries-'));
  const broker = await Broker.open({ dataDir, retentionCheckIntervalMs: 0, compactionIntervalMs: 0 });
  const app = createHttpServer(broker);
  try {
    await app.listen({ port: 0, host: '127.0.0.1' });
    const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    const lines = zlib.gunzipSync(fs.readFileSync(EDITS)).toString('utf8').split('\n').filter((l) => l.trim() !== '');
    await broker.createTopic({ topic: 'edits', partitions: 4, config: { retentionMs: -1 } });
    const embedded = new Onelog({ api: broker });
    const producer = embedded.producer();
    let i = 0;
    for (let copy = 0; copy < o.copies; copy++) {
      for (let from = 0; from < lines.length; from += 5000) {
        await producer.send({
          topic: 'edits',
          messages: lines.slice(from, from + 5000).map((line) => {
            const e = JSON.parse(line) as { channel: string; page: string };
            return { key: `${e.channel}|${e.page}`, value: line, headers: { i: String(i++) } };
          }),
        });
      }
    }
    console.log(`\nretries: ${fmt(i)} Wikipedia edits (${o.copies} x ${fmt(lines.length)}) in 4 partitions; policy 1s,5s x3; ` +
      'main-partition throughput until lag 0, with no failures and with 1% nacked (every 100th edit throws)');
    const http = new Onelog({ url });
    for (const [face, onelog] of [['embedded', embedded], ['http', http]] as const) {
      const clean = await consume(broker, onelog, `${face}-clean`, i, null);
      const failing = await consume(broker, onelog, `${face}-failing`, i, 100);
      console.log(`  ${face.padEnd(8)}  no failures: ${fmt(clean.rate)} records/s   1% nacked: ${fmt(failing.rate)} records/s ` +
        `(${fmt(failing.nacked)} nacks; ${(100 * failing.rate / clean.rate).toFixed(0)}% of the clean run)`);
    }
  } finally {
    await app.close();
    await broker.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * Client throughput: produce and consume N records of S bytes through the TypeScript client against a real
 * `onelog serve` child process (HTTP/JSON, loopback), one topic, P partitions, null keys (spread).
 */
import os from 'node:os';
import { Onelog } from '../src/client/index.js';
import { startServer } from '../test/helpers/processes.js';

/** What the benchmark measures. */
export interface ClientThroughputOptions {
  records: number;
  recordBytes: number;
  partitions: number;
  /** Records per produce request. */
  batchRecords: number;
  /** Produce requests in flight at once. */
  inFlight: number;
  /** Records per fetch. */
  fetchRecords: number;
  dataDir: string;
}

function rate(records: number, bytes: number, ms: number): string {
  const s = ms / 1000;
  return `${Math.round(records / s).toLocaleString('en-US')} records/s, ${(bytes / s / 1e6).toFixed(1)} MB/s (${s.toFixed(2)} s)`;
}

export async function clientThroughput(o: ClientThroughputOptions): Promise<void> {
  console.log('== client throughput: produce and consume through the TypeScript client over HTTP/JSON ==');
  console.log(`setup: ${o.records.toLocaleString('en-US')} records of ${o.recordBytes} B values, null keys, ` +
    `${o.partitions} partitions; produce ${o.batchRecords} records/request, ${o.inFlight} requests in flight; ` +
    `consume ${o.fetchRecords} records/fetch, one consumer, commit after each fetch`);
  console.log('durability: topic default flush.policy=interval (acknowledged once written, fdatasync within 50 ms); ' +
    'commits synced (LMDB)');
  console.log(`machine: ${os.cpus().length} x ${os.cpus()[0]?.model ?? 'cpu'}, node ${process.version}, data dir ${o.dataDir}`);

  const server = await startServer(o.dataDir);
  try {
    const onelog = new Onelog({ url: server.url });
    await onelog.admin().createTopic({ topic: 'bench', partitions: o.partitions });
    const value = Buffer.alloc(o.recordBytes, 'x');
    const messages = Array.from({ length: o.batchRecords }, () => ({ value }));
    const producer = onelog.producer();

    let sent = 0;
    const started = performance.now();
    const worker = async () => {
      while (sent < o.records) {
        const n = Math.min(o.batchRecords, o.records - sent);
        sent += n;
        await producer.send({ topic: 'bench', messages: n === messages.length ? messages : messages.slice(0, n) });
      }
    };
    await Promise.all(Array.from({ length: o.inFlight }, worker));
    const produceMs = performance.now() - started;
    console.log(`produce: ${rate(o.records, o.records * o.recordBytes, produceMs)}`);

    const consumer = onelog.consumer({ groupId: 'bench', startPolicy: 'earliest', maxRecords: o.fetchRecords, maxBytes: 16 * 1024 * 1024, maxWaitMs: 100 });
    consumer.subscribe({ topic: 'bench' });
    let received = 0;
    let bytes = 0;
    const consumeStarted = performance.now();
    await consumer.run({
      eachMessage: ({ message }) => {
        received++;
        bytes += message.value?.length ?? 0;
        if (received === o.records) void consumer.stop();
      },
    });
    const consumeMs = performance.now() - consumeStarted;
    console.log(`consume: ${rate(received, bytes, consumeMs)}`);
  } finally {
    await server.stop('SIGTERM');
  }
}

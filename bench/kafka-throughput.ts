/**
 * Throughput through the Kafka listener beside onelog's binary path, on one `onelog serve --kafka-port` child
 * process, in one run: N records of S bytes produced and consumed (from the earliest offset, to the end) by
 * kcat (librdkafka, batching as it does by default, 10,000 records per batch at most), by @platformatic/kafka
 * (batches of B records, K requests in flight) and by onelog's TypeScript client on the binary data path (the
 * same batches and window). Each client has its own topic of P partitions; null keys. kcat's figures include
 * its process start (tens of ms).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Consumer, MessagesStreamModes, Producer, stringSerializers } from '@platformatic/kafka';
import { Onelog } from '../src/client/index.js';
import { startServer } from '../test/helpers/processes.js';

/** What the benchmark measures. */
export interface KafkaThroughputOptions {
  records: number;
  recordBytes: number;
  partitions: number;
  /** Records per produce request (platformatic and onelog's client). */
  batchRecords: number;
  /** Produce requests in flight at once (platformatic and onelog's client). */
  inFlight: number;
}

function rate(records: number, bytes: number, ms: number): string {
  const s = ms / 1000;
  return `${Math.round(records / s).toLocaleString('en-US').padStart(10)} records/s ${(bytes / s / 1e6).toFixed(1).padStart(6)} MB/s (${s.toFixed(2)} s)`;
}

/** Runs kcat to the end; resolves with its wall time, ms. */
function kcat(args: string[], stdin?: string): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const proc = spawn('kcat', args, { stdio: [stdin === undefined ? 'ignore' : fs.openSync(stdin, 'r'), 'ignore', 'pipe'] });
    let err = '';
    proc.stderr!.on('data', (d: Buffer) => { err += d.toString(); });
    proc.on('error', reject);
    proc.on('exit', (code) => (code === 0 ? resolve(performance.now() - started) : reject(new Error(`kcat exited ${code}: ${err}`))));
  });
}

/** Runs `send` over `count` records in batches, `inFlight` batches at once; resolves with the time taken, ms. */
async function windowed(count: number, batch: number, inFlight: number, send: (n: number) => Promise<unknown>): Promise<number> {
  let sent = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: inFlight }, async () => {
    while (sent < count) {
      const n = Math.min(batch, count - sent);
      sent += n;
      await send(n);
    }
  }));
  return performance.now() - started;
}

export async function kafkaThroughput(o: KafkaThroughputOptions): Promise<void> {
  console.log('== Kafka listener throughput: kcat and @platformatic/kafka beside onelog\'s binary path ==');
  console.log(`setup: ${o.records.toLocaleString('en-US')} records of ${o.recordBytes} B values, null keys, ${o.partitions} partitions per client's topic; ` +
    `platformatic and onelog's client: ${o.batchRecords} records/request, ${o.inFlight} in flight; kcat: librdkafka's batching ` +
    '(linger.ms=5, batch.num.messages=10000); consumers read from the earliest offset to the end');
  console.log(`machine: ${os.cpus().length} x ${os.cpus()[0]?.model ?? 'cpu'}, load ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}, node ${process.version}`);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'onelog-bench-kafka-'));
  let kafkaAddress = '';
  const server = await startServer(dataDir, {
    args: ['--kafka-port', '0'],
    onLog: (entry) => { if (typeof entry.kafka === 'string') kafkaAddress = entry.kafka; },
  });
  const value = 'x'.repeat(o.recordBytes);
  const bytes = o.records * o.recordBytes;
  try {
    const onelog = new Onelog({ url: server.url, binary: true });
    const admin = new Onelog({ url: server.url }).admin();
    for (const topic of ['kcat', 'platformatic', 'onelog']) await admin.createTopic({ topic, partitions: o.partitions });

    // kcat
    const lines = path.join(dataDir, 'records.txt');
    fs.writeFileSync(lines, `${value}\n`.repeat(o.records));
    const kcatProduce = await kcat(['-b', kafkaAddress, '-P', '-t', 'kcat', '-l', '-X', 'linger.ms=5', '-X', 'batch.num.messages=10000'], lines);
    const kcatConsume = await kcat(['-b', kafkaAddress, '-C', '-t', 'kcat', '-o', 'beginning', '-e', '-q']);
    console.log(`kcat          produce: ${rate(o.records, bytes, kcatProduce)}   consume: ${rate(o.records, bytes, kcatConsume)}`);

    // @platformatic/kafka
    const bootstrapBrokers = [kafkaAddress];
    const producer = new Producer({ clientId: 'bench', bootstrapBrokers, serializers: stringSerializers, acks: 1 });
    const batch = Array.from({ length: o.batchRecords }, () => ({ topic: 'platformatic', value }));
    const pfProduce = await windowed(o.records, o.batchRecords, o.inFlight, (n) => producer.send({ messages: n === batch.length ? batch : batch.slice(0, n) }));
    await producer.close();
    const consumer = new Consumer({ groupId: 'bench', clientId: 'bench', bootstrapBrokers, maxBytes: 16 * 1024 * 1024, maxWaitTime: 100, highWaterMark: 16_384 });
    let pfReceived = 0;
    const consumeStarted = performance.now();
    const cpuBefore = process.cpuUsage();
    const stream = await consumer.consume({ topics: ['platformatic'], mode: MessagesStreamModes.EARLIEST, autocommit: false });
    for await (const message of stream) if (message.value !== undefined && ++pfReceived === o.records) break;
    const pfConsume = performance.now() - consumeStarted;
    const pfCpu = process.cpuUsage(cpuBefore);
    await stream.close();
    await consumer.close();
    console.log(`platformatic  produce: ${rate(o.records, bytes, pfProduce)}   consume: ${rate(pfReceived, bytes, pfConsume)}` +
      ` (consumer CPU ${((pfCpu.user + pfCpu.system) / 1e6).toFixed(2)} s in the bench process: at the wall time, the client is the limit)`);

    // onelog's client, binary data path
    const onelogProducer = onelog.producer();
    const messages = Array.from({ length: o.batchRecords }, () => ({ value: Buffer.from(value) }));
    const olProduce = await windowed(o.records, o.batchRecords, o.inFlight, (n) => onelogProducer.send({ topic: 'onelog', messages: n === messages.length ? messages : messages.slice(0, n) }));
    const onelogConsumer = onelog.consumer({ groupId: 'bench', startPolicy: 'earliest', maxRecords: 10_000, maxBytes: 16 * 1024 * 1024, maxWaitMs: 100 });
    onelogConsumer.subscribe({ topic: 'onelog' });
    let olReceived = 0;
    const olStarted = performance.now();
    await onelogConsumer.run({ eachMessage: () => { if (++olReceived === o.records) void onelogConsumer.stop(); } });
    const olConsume = performance.now() - olStarted;
    console.log(`onelog binary produce: ${rate(o.records, bytes, olProduce)}   consume: ${rate(olReceived, bytes, olConsume)}`);
  } finally {
    await server.stop('SIGTERM');
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

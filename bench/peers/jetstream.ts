/**
 * NATS JetStream's side of the peer benchmarks, on the nats-server at 127.0.0.1:4222 (nats.js v2): one stream
 * per run, file storage, one replica. Produce = async publishes with their acks batched (publish N, then await
 * the N acks; K batches in flight). An async publish here is JetStream's publish protocol as Go's PublishAsync
 * does it: a core publish with a reply subject under one inbox, the stream's PubAck counted on one wildcard
 * subscription ({@link AsyncPublisher}); nats.js's `js.publish()` (a request, a promise and a timer per
 * message) is several times slower on this machine and would measure the client more than the server, so
 * its rate is printed beside, for reference, on a tenth of the records. Consume = a durable pull consumer fetching N at a time (ack policy `all`,
 * the batch's last message acknowledged with ackAck: one confirmed ack per batch, like a commit), latency =
 * publishes per tick (or per record) and a pull consumer in `consume()` mode acknowledging each message.
 * The best path beside it: the same async publishes with {@link BEST_IN_FLIGHT_BATCHES} batches in flight, and a
 * pull consumer in `consume()` mode (the client keeps pulls of {@link BEST_PULL_MESSAGES} outstanding) acknowledging
 * each batch's last message without waiting.
 *
 * Durability: nats-server's file store does not fsync per message; it syncs on a timer (`sync_interval`,
 * default 2 minutes). A publish ack means the message was written to the server's files (the OS page cache).
 */
import { AckPolicy, connect, createInbox, StorageType } from 'nats';
import type { Consumer, JetStreamClient, JetStreamManager, NatsConnection, Subscription } from 'nats';
import type { PeerResult, PeerWorkload } from './common.js';
import { attempt, driveBatches, emptyResult, fillerValue, formatLatency, formatThroughput, loadAverage, recordsPerFetch } from './common.js';
import type { LatencySending, LatencyTarget } from './latency.js';
import { measureLatency } from './latency.js';

export const NATS_SERVER = '127.0.0.1:4222';
const STREAM_PREFIX = 'ONELOG_BENCH';
const SUBJECT_PREFIX = 'onelog-bench';

export const JETSTREAM_DURABILITY = 'file storage, 1 replica; no fsync per message: the file store syncs on sync_interval ' +
  '(nats-server default 2 min; a client cannot read the server\'s setting, and this run does not change it); an ack means written to the OS';

/** Creates stream `name` on `subject` anew (file storage, one replica). */
export async function createStream(jsm: JetStreamManager, name: string, subject: string): Promise<void> {
  await jsm.streams.delete(name).catch(() => false);
  await jsm.streams.add({ name, subjects: [subject], storage: StorageType.File, num_replicas: 1 });
}

/** nats.js's own publish: one request (promise, timer) per message. */
async function publishEach(js: JetStreamClient, subject: string, values: readonly Uint8Array[]): Promise<void> {
  await Promise.all(values.map((v) => js.publish(subject, v)));
}

/** How long a batch may wait for its acks before the run fails, ms. */
const ACK_TIMEOUT_MS = 10_000;

/**
 * Async publishing to one stream subject: each message is a core publish whose reply subject is
 * `<inbox>.<n>`; the server answers each with a PubAck (JSON, `error` when refused) on one wildcard
 * subscription. `publish(values)` resolves once as many acks arrived as messages were published up to the
 * end of its batch (one connection, one stream: acks come back in order).
 */
export class AsyncPublisher {
  private readonly inbox = createInbox();
  private readonly subscription: Subscription;
  private published = 0;
  private acked = 0;
  /** Batches waiting for their acks, in publish order. */
  private readonly waiting: Array<{ upTo: number; since: number; resolve: () => void; reject: (err: Error) => void }> = [];
  private readonly timer: NodeJS.Timeout;
  private readonly decoder = new TextDecoder();

  constructor(private readonly nc: NatsConnection, private readonly subject: string) {
    this.subscription = nc.subscribe(`${this.inbox}.*`, {
      callback: (err, m) => {
        if (err) return this.failAll(err);
        const ack = JSON.parse(this.decoder.decode(m.data)) as { error?: { description?: string } };
        if (ack.error) return this.failAll(new Error(`publish refused: ${ack.error.description ?? JSON.stringify(ack.error)}`));
        this.acked++;
        while (this.waiting.length && this.waiting[0]!.upTo <= this.acked) this.waiting.shift()!.resolve();
      },
    });
    this.timer = setInterval(() => {
      const oldest = this.waiting[0];
      if (oldest && performance.now() - oldest.since > ACK_TIMEOUT_MS) this.failAll(new Error(`no PubAck within ${ACK_TIMEOUT_MS} ms`));
    }, 1000);
  }

  publish(values: readonly Uint8Array[]): Promise<void> {
    for (const v of values) this.nc.publish(this.subject, v, { reply: `${this.inbox}.${this.published++}` });
    const upTo = this.published;
    return new Promise((resolve, reject) => this.waiting.push({ upTo, since: performance.now(), resolve, reject }));
  }

  private failAll(err: Error): void {
    for (const w of this.waiting.splice(0)) w.reject(err);
  }

  close(): void {
    clearInterval(this.timer);
    this.subscription.unsubscribe();
    this.failAll(new Error('publisher closed'));
  }
}

/**
 * A latency run's consumer: `consume()` of a durable consumer with up to `maxMessages` pulled ahead, each message
 * handed on and acknowledged. `consumer` is the durable itself, or where to find it (stream and durable name) for a
 * consumer in another process, which then gets a connection of its own, drained when it stops.
 */
export function jetstreamLatencyConsumer(consumer: Consumer | { stream: string; durable: string }, maxMessages: number): LatencyTarget['startConsumer'] {
  return async (onValue) => {
    const own = 'consume' in consumer ? null : await connect({ servers: NATS_SERVER, name: 'onelog-bench-consumer' });
    const found = 'consume' in consumer ? consumer : await own!.jetstream().consumers.get(consumer.stream, consumer.durable);
    const messages = await found.consume({
      max_messages: maxMessages,
      callback: (m) => {
        onValue(Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength));
        m.ack();
      },
    });
    return async () => {
      messages.stop();
      await messages.closed();
      if (own !== null) await own.drain().catch(() => own.close());
    };
  };
}

/** Batches in flight on the best path (the like-for-like path has the workload's `inFlight`). */
const BEST_IN_FLIGHT_BATCHES = 32;
/** Messages the best path's consumer keeps pulled ahead. */
const BEST_PULL_MESSAGES = 10_000;

/** JetStream's two rows: shaped as onelog's client is driven, and at its best. */
export interface JetStreamResults {
  client: PeerResult;
  best: PeerResult;
}

export async function jetstreamBenchmark(w: PeerWorkload, sending: LatencySending): Promise<JetStreamResults> {
  const result = emptyResult('JetStream file (as onelog is driven)', JETSTREAM_DURABILITY);
  const best = emptyResult('JetStream file (best path)', JETSTREAM_DURABILITY);
  const nc: NatsConnection = await connect({ servers: NATS_SERVER, name: 'onelog-bench' });
  console.log(`-- NATS JetStream (nats-server ${nc.info?.version ?? '?'}), file storage (${loadAverage()}) --`);
  console.log(`setup: ${NATS_SERVER} via nats.js; one stream per size (file storage, 1 replica, limits retention); ` +
    `produce: ${w.batchRecords} async publishes (reply inbox per message) then await their acks, ${w.inFlight} batches in flight; ` +
    'consume: durable pull consumer, fetch as many at a time as the setup line says, ack policy all, ackAck of each batch\'s last message; ' +
    `best path: ${BEST_IN_FLIGHT_BATCHES} batches in flight, and consume() with ${BEST_PULL_MESSAGES} messages pulled ahead, ` +
    'acking once per fetch\'s worth of messages (ack policy all) without waiting');
  console.log(`durability: ${JETSTREAM_DURABILITY}`);
  try {
    const jsm = await nc.jetstreamManager();
    const js = nc.jetstream();
    for (const size of w.recordSizes) {
      const stream = `${STREAM_PREFIX}_${size}`;
      const subject = `${SUBJECT_PREFIX}.${size}`;
      try {
        await attempt(result, `produce ${size} B`, async () => {
          await createStream(jsm, stream, subject);
          const value = fillerValue(size);
          const batch = Array.from({ length: w.batchRecords }, () => value);
          const slice = (n: number) => (n === batch.length ? batch : batch.slice(0, n));
          const publisher = new AsyncPublisher(nc, subject);
          try {
            const seconds = await driveBatches(w.records, w.batchRecords, w.inFlight, (n) => publisher.publish(slice(n)));
            result.produce.set(size, { records: w.records, bytes: w.records * size, seconds });
            console.log(`  produce ${size} B: ${formatThroughput(result.produce.get(size)!)}`);
          } finally {
            publisher.close();
          }
          // For reference: nats.js's js.publish() on a tenth of the records, into a stream of its own.
          const few = Math.max(w.batchRecords, Math.round(w.records / 10));
          const reference = `${stream}_REFERENCE`;
          try {
            await createStream(jsm, reference, `${subject}.reference`);
            const seconds = await driveBatches(few, w.batchRecords, w.inFlight, (n) => publishEach(js, `${subject}.reference`, slice(n)));
            console.log(`  (for reference, nats.js js.publish(), a promise per message: ${formatThroughput({ records: few, bytes: few * size, seconds })}; ` +
              'not in the tables)');
          } finally {
            await jsm.streams.delete(reference).catch(() => false);
          }
        });
        if (!result.produce.has(size)) continue;
        await attempt(result, `consume ${size} B`, async () => {
          let received = 0;
          let bytes = 0;
          const started = performance.now();
          const perFetch = recordsPerFetch(w, size);
          await jsm.consumers.add(stream, { durable_name: 'bench', ack_policy: AckPolicy.All, max_ack_pending: 10 * perFetch });
          const consumer = await js.consumers.get(stream, 'bench');
          while (received < w.records) {
            const messages = await consumer.fetch({ max_messages: Math.min(perFetch, w.records - received), expires: 2000 });
            let last = null;
            for await (const m of messages) {
              received++;
              bytes += m.data.length;
              last = m;
            }
            if (!last) throw new Error(`stalled after ${received} records`);
            await last.ackAck();
          }
          result.consume.set(size, { records: received, bytes, seconds: (performance.now() - started) / 1000 });
          console.log(`  consume ${size} B: ${formatThroughput(result.consume.get(size)!)}`);
        });
      } finally {
        await jsm.streams.delete(stream).catch(() => false);
      }
      try {
        await bestThroughput(nc, jsm, js, best, w, stream, subject, size);
      } finally {
        await jsm.streams.delete(stream).catch(() => false);
      }
    }
    const stream = `${STREAM_PREFIX}_LATENCY`;
    const subject = `${SUBJECT_PREFIX}.latency`;
    try {
      await attempt(result, 'latency', async () => {
        await createStream(jsm, stream, subject);
        await jsm.consumers.add(stream, { durable_name: 'latency', ack_policy: AckPolicy.Explicit, max_ack_pending: 100_000 });
        const consumer = await js.consumers.get(stream, 'latency');
        const publisher = new AsyncPublisher(nc, subject);
        result.latency = await measureLatency({
          send: (values) => publisher.publish(values),
          startConsumer: jetstreamLatencyConsumer(consumer, w.batchRecords),
        }, w, sending).finally(() => publisher.close());
        console.log(`  latency at ${w.latencyRate.toLocaleString('en-US')} records/s (consume() with max_messages ${w.batchRecords}, ` +
          `sending per ${sending}): ${formatLatency(result.latency)}`);
      });
    } finally {
      await jsm.streams.delete(stream).catch(() => false);
    }
  } finally {
    await nc.drain().catch(() => nc.close());
  }
  return { client: result, best };
}

/** Produce and consume of one size on the best path, into `best`. */
async function bestThroughput(
  nc: NatsConnection, jsm: JetStreamManager, js: JetStreamClient, best: PeerResult, w: PeerWorkload, stream: string, subject: string, size: number,
): Promise<void> {
  await attempt(best, `produce ${size} B`, async () => {
    await createStream(jsm, stream, subject);
    const value = fillerValue(size);
    const batch = Array.from({ length: w.batchRecords }, () => value);
    const publisher = new AsyncPublisher(nc, subject);
    try {
      const seconds = await driveBatches(w.records, w.batchRecords, BEST_IN_FLIGHT_BATCHES, (n) => publisher.publish(n === batch.length ? batch : batch.slice(0, n)));
      best.produce.set(size, { records: w.records, bytes: w.records * size, seconds });
      console.log(`  best path: produce ${size} B: ${formatThroughput(best.produce.get(size)!)}`);
    } finally {
      publisher.close();
    }
  });
  if (!best.produce.has(size)) return;
  await attempt(best, `consume ${size} B`, async () => {
    const perFetch = recordsPerFetch(w, size);
    const pulled = Math.max(BEST_PULL_MESSAGES, perFetch);
    await jsm.consumers.add(stream, { durable_name: 'best', ack_policy: AckPolicy.All, max_ack_pending: 2 * pulled });
    const consumer = await js.consumers.get(stream, 'best');
    let received = 0;
    let bytes = 0;
    const started = performance.now();
    const messages = await consumer.consume({ max_messages: pulled });
    const stalled = setTimeout(() => messages.stop(), 120_000);
    try {
      for await (const m of messages) {
        received++;
        bytes += m.data.length;
        if (received % perFetch === 0 || received === w.records) m.ack();
        if (received === w.records) break;
      }
    } finally {
      clearTimeout(stalled);
      messages.stop();
    }
    if (received < w.records) throw new Error(`stalled after ${received} records`);
    best.consume.set(size, { records: received, bytes, seconds: (performance.now() - started) / 1000 });
    console.log(`  best path: consume ${size} B: ${formatThroughput(best.consume.get(size)!)}`);
  });
}

/** Answers null when the NATS server accepts a connection with JetStream on, else why not. */
export async function jetstreamAnswers(): Promise<string | null> {
  try {
    const nc = await connect({ servers: NATS_SERVER, timeout: 2000, reconnect: false });
    try {
      await (await nc.jetstreamManager()).getAccountInfo();
      return null;
    } finally {
      await nc.close();
    }
  } catch (err) {
    return (err as Error).message;
  }
}

/**
 * The clients of the crash loop: producers and consumers that run through every broker crash and restart, and
 * record what they did and were told into a {@link History}. Each keeps going while the broker is away (a send
 * whose outcome is unknown is recorded so and not sent again; a consumer whose run() gave up is started again, as a
 * supervisor would) until its `stop()`.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { Onelog } from '../../src/client/index.js';
import type { Consumer, ConsumerOptions, Message } from '../../src/client/index.js';
import { PostgresOffsetStore } from '../../src/client/postgres/index.js';
import { HttpApi } from '../../src/client/http-api.js';
import { PushConsumer } from '../../src/client/push-consumer.js';
import type { PushConsumerOptions } from '../../src/client/push-consumer.js';
import type { PollOp } from '../history/checker.js';
import { recordingApi, refused } from '../history/recording-api.js';
import type { History } from '../history/recording-api.js';

/** A running client of the loop. */
export interface Workload {
  readonly name: string;
  /** Stops it and waits until it has: a producer finishes the send in hand; a consumer commits and leaves. */
  stop(): Promise<void>;
}

/** Retries and waits of the loop's clients, ms. */
const PAUSE_AFTER_ERROR_MS = 100;

/** Runs `step` until stopped, pausing after a failure (the broker is away); resolves once the step in hand ended. */
function loopUntilStopped(step: () => Promise<void>): { stop(): Promise<void> } {
  let stopping = false;
  const done = (async () => {
    while (!stopping) {
      try {
        await step();
      } catch {
        await sleep(PAUSE_AFTER_ERROR_MS);
      }
    }
  })();
  return { stop: async () => { stopping = true; await done; } };
}

/** What a producer workload sends. */
export interface ProducerWorkloadOptions {
  name: string;
  url: string;
  topic: string;
  history: History;
  /** Kafka's enable.idempotence: retries across a crash must store each send once. */
  idempotent?: boolean;
  /** Records per send. */
  batch: number;
  /** Each record gets one of this many keys (`key-N`); without, records have no key (the sticky partitioner). */
  keys?: number;
  /** Sends in flight at once (independent loops). @default 1 */
  concurrency?: number;
}

/** Sends numbered records (values `NAME-LOOP-SEQ`, unique) and records each send's outcome. */
export function producerWorkload(options: ProducerWorkloadOptions): Workload {
  const { name, url, topic, history, batch } = options;
  const producer = new Onelog({ url }).producer(options.idempotent ? { idempotent: true, retries: 50, retryBackoffMs: 50 } : {});
  const loops = Array.from({ length: options.concurrency ?? 1 }, (_, loop) => {
    let seq = 0;
    return loopUntilStopped(async () => {
      const messages: Array<Message & { value: string; key?: string }> = Array.from({ length: batch }, () => {
        const value = `${name}-${loop}-${seq++}`;
        return options.keys ? { key: `key-${seq % options.keys}`, value } : { value };
      });
      const start = history.now();
      const record = (outcome: (i: number) => { ok: true; partition: number; offset: number } | { ok: false; error: string } | { ok: null }) => {
        const end = history.now();
        messages.forEach((m, i) => history.add({
          type: 'send', start, end, process: `${name}-${loop}`, topic, value: m.value, ...(m.key ? { key: m.key } : {}), outcome: outcome(i),
        }));
      };
      try {
        const result = await producer.send({ topic, messages });
        record((i) => ({ ok: true, ...result.offsets[i]! }));
      } catch (err) {
        const ok = refused(err);
        record(() => (ok === null ? { ok: null } : { ok: false, error: String(err) }));
        throw err;
      }
    });
  });
  return { name, stop: async () => { await Promise.all(loops.map((l) => l.stop())); } };
}

/** Runs a consumer made by `make` until stopped, making a new one whenever run() gives up (the broker was away too long). */
function superviseConsumer(name: string, make: () => { run(): Promise<void>; stop(): Promise<void> }): Workload {
  let current: { stop(): Promise<void> } | null = null;
  const loop = loopUntilStopped(async () => {
    const consumer = make();
    current = consumer;
    try {
      await consumer.run();
    } finally {
      current = null;
    }
  });
  return {
    name,
    stop: async () => {
      const stopping = loop.stop();
      await (current as { stop(): Promise<void> } | null)?.stop();
      await stopping;
    },
  };
}

/** A pull consumer group member (HTTP), its fetches and commits recorded. */
export function pullWorkload(options: { name: string; url: string; topic: string; history: History; requestTimeoutMs?: number } & ConsumerOptions): Workload {
  const { name, url, topic, history, requestTimeoutMs, ...consumerOptions } = options;
  const api = recordingApi(new HttpApi(url, requestTimeoutMs === undefined ? {} : { requestTimeoutMs }), history, name);
  return superviseConsumer(name, () => {
    const consumer: Consumer = new Onelog({ api }).consumer({ ...consumerOptions, clientId: name });
    consumer.subscribe({ topic });
    return { run: () => consumer.run({ eachMessage: () => {}, onPartitionError: () => {} }), stop: () => consumer.stop() };
  });
}

/** `records` as one pushed delivery of a group, for the history. */
function delivery(history: History, start: number, process: string, group: string, topic: string, partition: number,
  records: PollOp['records']): PollOp {
  return { type: 'poll', start, end: history.now(), process, group, generation: null, topic, partition, records };
}

/** A push consumer (WebSocket with credits): each record its handler gets is recorded as a delivery. */
export function pushWorkload(options: { name: string; url: string; topic: string; history: History } & PushConsumerOptions): Workload {
  const { name, url, topic, history, ...consumerOptions } = options;
  return superviseConsumer(name, () => {
    const consumer = new PushConsumer(url, { ...consumerOptions, clientId: name });
    consumer.subscribe({ topic });
    return {
      run: () => consumer.run({
        eachMessage: ({ partition, message }) => {
          const start = history.now();
          history.add(delivery(history, start, name, options.groupId, topic, partition, [{ offset: message.offset, value: message.value?.toString() ?? '' }]));
        },
        onPartitionError: () => {},
      }),
      stop: () => consumer.stop(),
    };
  });
}

/**
 * A group with its offsets in PostgreSQL (exactly-once effect): each record's handler inserts one row into
 * `effectsTable` in the transaction that stores the offset. `effects()`, once stopped, reads the rows back
 * as deliveries and drops both tables.
 */
export async function exactlyOnceWorkload(options: {
  name: string; url: string; topic: string; history: History; pgUrl: string; groupId: string; offsetsTable: string; effectsTable: string;
  sessionTimeoutMs: number; maxRecords: number;
}): Promise<Workload & { effects(): Promise<PollOp[]> }> {
  const { name, url, topic, history, groupId, offsetsTable, effectsTable } = options;
  const pool = new pg.Pool({ connectionString: options.pgUrl, max: 2 });
  const offsetStore = new PostgresOffsetStore({ pool, table: offsetsTable });
  await pool.query(`DROP TABLE IF EXISTS "${offsetsTable}", "${effectsTable}"`);
  await offsetStore.setup();
  await pool.query(`CREATE TABLE "${effectsTable}" (topic text NOT NULL, partition int NOT NULL, "offset" bigint NOT NULL, value text NOT NULL)`);
  const api = recordingApi(new HttpApi(url), history, name);
  const workload = superviseConsumer(name, () => {
    const consumer = new Onelog({ api }).consumer<pg.PoolClient>({
      groupId, offsetStore, startPolicy: 'earliest', sessionTimeoutMs: options.sessionTimeoutMs, maxRecords: options.maxRecords, clientId: name,
    });
    consumer.subscribe({ topic });
    return {
      run: () => consumer.run({
        eachMessage: async ({ partition, message, tx }) => {
          await tx.query(`INSERT INTO "${effectsTable}" (topic, partition, "offset", value) VALUES ($1, $2, $3, $4)`,
            [topic, partition, message.offset, message.value?.toString() ?? '']);
        },
        onPartitionError: () => {},
      }),
      stop: () => consumer.stop(),
    };
  });
  return {
    name,
    stop: async () => {
      await workload.stop();
    },
    /** Every row as a delivery to `GROUP (effects)`: one poll per row, so a row written twice is a record delivered twice. */
    effects: async () => {
      const { rows } = await pool.query<{ partition: number; offset: string; value: string }>(
        `SELECT partition, "offset", value FROM "${effectsTable}" ORDER BY partition, "offset"`);
      await pool.query(`DROP TABLE "${offsetsTable}", "${effectsTable}"`);
      await pool.end();
      return rows.map((row) => delivery(history, 0, name, `${groupId} (effects)`, topic, row.partition, [{ offset: Number(row.offset), value: row.value }]));
    },
  };
}

/** A webhook endpoint: the broker POSTs a push subscription's batches here; each is recorded as a delivery and answered 200. */
export async function webhookEndpoint(history: History, groupId: string): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const start = history.now();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString()) as {
        subscription: { topic: string }; partition: number; records: Array<{ offset: number; value: string | null }>;
      };
      history.add(delivery(history, start, 'webhook', groupId, body.subscription.topic, body.partition,
        body.records.map((r) => ({ offset: r.offset, value: r.value === null ? '' : Buffer.from(r.value, 'base64').toString() }))));
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

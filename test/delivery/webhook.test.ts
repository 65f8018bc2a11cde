/**
 * Webhook delivery (push subscriptions with a pushEndpoint) on an embedded broker, against a real local HTTP
 * server: retries with backoff, commits only after a 2xx, maxInFlight with a failure in the middle, ack
 * timeouts, push and pull groups side by side, subscription changes and a restart; internal destinations refused by
 * default (the other tests allow them: their endpoints are on 127.0.0.1). Backoffs are a few ms
 * (injected), and every wait is bounded by a condition with a deadline, never a sleep for a timer.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import type { BrokerOptions } from '../../src/broker/options.js';
import { Onelog } from '../../src/client/index.js';
import type { Consumer } from '../../src/client/index.js';
import { resolveWebhookOptions } from '../../src/delivery/webhook.js';
import { backoffMs } from '../../src/delivery/webhook-partition.js';
import type { JsonRecord } from '../../src/protocol/json-records.js';
import { tmpDir } from '../helpers/tmp.js';

/** A POST the webhook server received. */
interface Post {
  partition: number;
  firstOffset: number;
  lastOffset: number;
  attempt: number;
  headers: http.IncomingHttpHeaders;
  body: { subscription: { groupId: string; topic: string }; partition: number; encoding: string; records: JsonRecord[] };
  /** The group's committed offset of the partition when the POST arrived (read with describeGroup). */
  committedAtArrival: number | null;
  /** POSTs of this partition in flight (unanswered, not aborted) when it arrived, itself included. */
  inFlightAtArrival: number;
  /** The status answered, or null while unanswered. */
  status: number | null;
  /** performance.now() when the request was read, and when it was answered. */
  receivedAt: number;
  answeredAt: number | null;
  /** The client closed the request before it was answered (an abort: timeout or go-back). */
  aborted: boolean;
  answer(status: number): void;
}

interface WebhookServer {
  url: string;
  posts: Post[];
  /** What happened, in order: `arrive <offset>#<attempt>` and `answer <offset>#<attempt> <status>`. */
  events: string[];
}

const servers: http.Server[] = [];
const brokers: Broker[] = [];
const consumers: Consumer[] = [];
let warnings: Array<{ obj: Record<string, unknown>; msg: string }> = [];

afterEach(async () => {
  await Promise.all(consumers.splice(0).map((c) => c.stop()));
  for (const b of brokers.splice(0)) await b.close();
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
  warnings = [];
});

const logger = { info: () => {}, error: () => {}, warn: (obj: object, msg: string) => void warnings.push({ obj: obj as Record<string, unknown>, msg }) };

async function openBroker(options: Partial<BrokerOptions> = {}): Promise<Broker> {
  const broker = await Broker.open({
    dataDir: tmpDir(), logger, sessionCheckIntervalMs: 100, retentionCheckIntervalMs: 0, compactionIntervalMs: 0,
    webhookAllowPrivate: true, // the endpoints are on 127.0.0.1
    ...options, webhooks: { minBackoffMs: 5, maxBackoffMs: 40, ...options.webhooks },
  });
  brokers.push(broker);
  return broker;
}

/**
 * A webhook endpoint on 127.0.0.1, port 0. Each POST is recorded with the group's committed offset at its
 * arrival (read from `broker`, or the broker the getter gives), then handed to `onPost`, which answers it
 * (now or later).
 */
async function webhookServer(broker: Broker | (() => Broker), groupId: string, onPost: (post: Post) => void | Promise<void>): Promise<WebhookServer> {
  const posts: Post[] = [];
  const events: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    let closedEarly = false;
    let post: Post | undefined;
    res.on('close', () => {
      if (res.writableEnded) return;
      closedEarly = true;
      if (post) post.aborted = true;
    });
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const receivedAt = performance.now();
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Post['body'];
      const partition = Number(req.headers['onelog-partition']);
      const open = posts.filter((p) => p.partition === partition && p.status === null && !p.aborted).length;
      const committedAtArrival = (await committedOffsets(typeof broker === 'function' ? broker() : broker, groupId))[partition] ?? null;
      post = {
        partition, firstOffset: Number(req.headers['onelog-first-offset']), lastOffset: Number(req.headers['onelog-last-offset']),
        attempt: Number(req.headers['onelog-attempt']), headers: req.headers, body, committedAtArrival,
        inFlightAtArrival: open + 1, status: null, aborted: closedEarly, receivedAt, answeredAt: null,
        answer(status) {
          this.status = status;
          this.answeredAt = performance.now();
          events.push(`answer ${this.firstOffset}#${this.attempt} ${status}`);
          res.writeHead(status, { 'content-type': 'text/plain' }).end(status < 300 ? 'ok' : 'no');
        },
      };
      posts.push(post);
      events.push(`arrive ${post.firstOffset}#${post.attempt}`);
      await onPost(post);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/push`, posts, events };
}

async function committedOffsets(broker: Broker, groupId: string, topic = 't'): Promise<Array<number | null>> {
  const d = await broker.describeGroup(groupId);
  return d.subscriptions.find((s) => s.topic === topic)?.partitions.map((p) => p.committedOffset) ?? [];
}

/** Resolves once `condition()` holds; fails after `timeoutMs` naming `what`. */
async function waitFor(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function waitForCommitted(broker: Broker, groupId: string, expected: number[]): Promise<void> {
  await waitFor(async () => JSON.stringify(await committedOffsets(broker, groupId)) === JSON.stringify(expected),
    `${groupId} committed ${JSON.stringify(expected)}`);
}

/** Creates `name` with `perPartition` records in each partition, values `p<partition>-<offset>`. */
async function produce(broker: Broker, name: string, partitions: number, perPartition: number, from = 0): Promise<void> {
  const records = [];
  for (let p = 0; p < partitions; p++) {
    for (let i = from; i < from + perPartition; i++) records.push({ key: null, value: Buffer.from(`p${p}-${i}`), partition: p });
  }
  await broker.produce({ topic: name, records });
}

const values = (post: Post) => post.body.records.map((r) => Buffer.from(r.value!, 'base64').toString('utf8'));
const offsetsOf = (posts: readonly Post[]) => posts.flatMap((p) => p.body.records.map((r) => `${p.partition}:${r.offset}`));

async function pushSubscription(broker: Broker, groupId: string, url: string | null, maxInFlight = 1): Promise<void> {
  await broker.subscribe({ groupId, topic: 't', deliveryMode: 'push', pushEndpoint: url, maxInFlight, startPolicy: 'earliest' });
}

describe('backoffMs', () => {
  it('doubles from minBackoffMs with each failure, up to maxBackoffMs (Pub/Sub\'s retry policy)', () => {
    const options = resolveWebhookOptions();
    expect([1, 2, 3, 4, 10, 11, 12, 1000].map((n) => backoffMs(n, options))).toEqual([100, 200, 400, 800, 51_200, 60_000, 60_000, 60_000]);
    expect(options).toEqual({
      ackTimeoutMs: 10_000, minBackoffMs: 100, maxBackoffMs: 60_000, maxRecords: 500, maxBytes: 1_048_576, maxWaitMs: 500, sessionTimeoutMs: 45_000,
      outbound: expect.objectContaining({ allowPrivate: false }), // internal destinations refused
    });
    expect(() => resolveWebhookOptions({ minBackoffMs: 500, maxBackoffMs: 100 })).toThrow(/maxBackoffMs must be an integer from 500/);
  });
});

describe('webhook delivery', () => {
  it('retries a batch its endpoint fails 3 times, in order per partition, committing only after the 2xx', async () => {
    const broker = await openBroker({ webhooks: { maxRecords: 2 } });
    await broker.createTopic({ topic: 't', partitions: 2 });
    await produce(broker, 't', 2, 5);
    const server = await webhookServer(broker, 'push', (post) => post.answer(post.attempt <= 3 ? 500 : 200));
    await pushSubscription(broker, 'push', server.url);
    await waitForCommitted(broker, 'push', [5, 5]);

    const d = await broker.describeGroup('push');
    expect(d.members.map((m) => m.clientId)).toEqual(['webhook']);
    expect(d.subscriptions[0]).toMatchObject({ deliveryMode: 'push', pushEndpoint: server.url, maxInFlight: 1 });
    for (const p of [0, 1]) {
      const posts = server.posts.filter((x) => x.partition === p);
      // Batches [0, 1], [2, 3], [4], each tried 4 times (3 failures, then the 2xx), one after the other.
      expect(posts.map((x) => `${x.firstOffset}-${x.lastOffset}#${x.attempt}:${x.status}`)).toEqual([0, 2, 4].flatMap((first) =>
        [1, 2, 3, 4].map((attempt) => `${first}-${Math.min(first + 1, 4)}#${attempt}:${attempt <= 3 ? 500 : 200}`)));
      // At every attempt, the committed offset is the batch's start: failures moved nothing, each 2xx moved it to the batch end.
      for (const x of posts) expect(x.committedAtArrival).toBe(x.firstOffset);
      expect(posts.filter((x) => x.status === 200).flatMap(values)).toEqual([0, 1, 2, 3, 4].map((i) => `p${p}-${i}`));
      expect(posts.every((x) => x.inFlightAtArrival === 1)).toBe(true);
      // Retries wait the backoff: 5, 10, 20 ms after the 1st, 2nd, 3rd failure (minBackoffMs 5, doubling).
      posts.forEach((x, i) => {
        if (x.attempt > 1) expect(x.receivedAt - posts[i - 1]!.answeredAt!).toBeGreaterThanOrEqual(5 * 2 ** (x.attempt - 2) - 1);
      });
    }
    const post = server.posts[0]!;
    expect(post.headers).toMatchObject({
      'content-type': 'application/json', 'onelog-group-id': 'push', 'onelog-topic': 't', 'onelog-partition': String(post.partition),
    });
    expect(post.body).toMatchObject({ subscription: { groupId: 'push', topic: 't' }, partition: post.partition, encoding: 'base64' });
    expect(post.body.records[0]).toEqual({ offset: 0, timestamp: expect.any(Number), key: null, value: expect.any(String), headers: {} });
    // Each failed attempt is logged with its status and attempt number.
    const failed = warnings.filter((w) => w.msg === 'webhook delivery failed');
    expect(failed).toHaveLength(18);
    expect(failed.every((w) => w.obj.status === 500)).toBe(true);
    expect(failed.filter((w) => w.obj.partition === 0 && w.obj.firstOffset === 2).map((w) => [w.obj.attempt, w.obj.retryInMs]))
      .toEqual([[1, 5], [2, 10], [3, 20]]);
  });

  it('maxInFlight 3: a failed middle batch is retried alone, then what follows it is re-sent; commits never pass it', async () => {
    const broker = await openBroker({ webhooks: { maxRecords: 1 } });
    await broker.createTopic({ topic: 't', partitions: 1 });
    await produce(broker, 't', 1, 9);
    let auto = false;
    const server = await webhookServer(broker, 'push', (post) => {
      if (auto) post.answer(200);
    });
    const open = (offset: number) => server.posts.find((p) => p.firstOffset === offset && p.status === null && !p.aborted);
    const answer = (offset: number, status: number) => open(offset)!.answer(status);
    await pushSubscription(broker, 'push', server.url, 3);

    // Three batches (one record each) in flight at once, none acknowledged.
    await waitFor(() => server.posts.length === 3, 'three POSTs in flight');
    expect(server.posts.map((p) => p.firstOffset).sort()).toEqual([0, 1, 2]);
    // Batch 2 acknowledged before 0 and 1: nothing past the unacknowledged batch 1 is committed.
    answer(2, 200);
    answer(0, 200);
    await waitForCommitted(broker, 'push', [1]);
    await waitFor(() => open(3) !== undefined, 'batch 3 sent once batch 0 left the window');
    // Batch 1 fails: 3 (in flight) is aborted, 2 (acknowledged) will be sent again after 1.
    answer(1, 500);
    await waitFor(() => open(1)?.attempt === 2, 'the retry of batch 1');
    expect(server.events.slice(server.events.indexOf('answer 1#1 500') + 1)).toEqual(['arrive 1#2']); // alone
    expect(open(1)!.committedAtArrival).toBe(1);
    await waitFor(() => server.posts.find((p) => p.firstOffset === 3)!.aborted, 'batch 3 aborted');
    auto = true;
    answer(1, 200);
    await waitForCommitted(broker, 'push', [9]);

    // Every record acknowledged; re-sent: the failed batch and the two after it in the window when it failed.
    const sends = new Map<number, number>();
    for (const p of server.posts) sends.set(p.firstOffset, (sends.get(p.firstOffset) ?? 0) + 1);
    expect([...sends].filter(([, n]) => n > 1).map(([offset]) => offset).sort()).toEqual([1, 2, 3]);
    expect([...sends.keys()].sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    expect(server.posts.filter((p) => p.status === 200).map((p) => p.firstOffset).sort()).toEqual([0, 1, 2, 2, 3, 4, 5, 6, 7, 8]);
    for (const p of server.posts) expect(p.committedAtArrival!).toBeLessThanOrEqual(p.firstOffset);
    const arrivals = server.posts.map((p) => p.committedAtArrival!);
    expect(arrivals).toEqual([...arrivals].sort((a, b) => a - b)); // the committed offset only moves forward
    expect(Math.max(...server.posts.map((p) => p.inFlightAtArrival))).toBe(3); // never more than maxInFlight at once
  });

  it('retries a POST that gets no answer within ackTimeoutMs', async () => {
    const broker = await openBroker({ webhooks: { ackTimeoutMs: 200 } });
    await broker.createTopic({ topic: 't', partitions: 1 });
    await produce(broker, 't', 1, 3);
    const server = await webhookServer(broker, 'push', (post) => {
      if (post.attempt > 1) post.answer(204); // the first attempt never gets an answer
    });
    await pushSubscription(broker, 'push', server.url);
    await waitForCommitted(broker, 'push', [3]);

    // Normally two attempts; a loaded machine may time out the second too before the test's server answers it.
    const [first, ...rest] = server.posts;
    const last = rest.at(-1)!;
    expect(server.posts.map((p) => `${p.firstOffset}-${p.lastOffset}#${p.attempt}`)).toEqual(server.posts.map((_, i) => `0-2#${i + 1}`));
    expect(first).toMatchObject({ status: null, aborted: true }); // the client gave up on it
    expect(last).toMatchObject({ status: 204, committedAtArrival: 0 });
    const failed = warnings.filter((w) => w.msg === 'webhook delivery failed').map((w) => w.obj);
    expect(failed).toHaveLength(server.posts.length - 1);
    expect(failed[0]).toMatchObject({ attempt: 1, err: 'no answer within ackTimeoutMs (200 ms)', firstOffset: 0, lastOffset: 2 });
  });

  it('without a retry policy, maxDeliveries bounds the POSTs of a record its endpoint never answers: dead-lettered, the partition goes on', async () => {
    const broker = await openBroker({ webhooks: { ackTimeoutMs: 150 } });
    await broker.createTopic({ topic: 't', partitions: 1 });
    await produce(broker, 't', 1, 5);
    const server = await webhookServer(broker, 'push', (post) => {
      if (!values(post).includes('p0-2')) post.answer(204); // record 2 is never answered: a poison record for this endpoint
    });
    await broker.subscribe({ groupId: 'push', topic: 't', deliveryMode: 'push', pushEndpoint: server.url, maxInFlight: 1, startPolicy: 'earliest', maxDeliveries: 2 });
    await waitForCommitted(broker, 'push', [5]);

    const dead = await broker.listDeadLetters({ groupId: 'push', topic: 't' });
    expect(dead.depth).toBe(1);
    expect(dead.records[0]).toMatchObject({ original: { topic: 't', partition: 0, offset: 2 }, attempts: 2 });
    expect(dead.records[0]!.reason).toContain('no answer within ackTimeoutMs (150 ms)');
    // The batch 0-4 was POSTed twice, then each record alone: record 2 twice more (its two deliveries), the others once.
    const alone = server.posts.filter((p) => p.firstOffset === p.lastOffset);
    expect(alone.filter((p) => p.firstOffset === 2)).toHaveLength(2);
    expect(alone.filter((p) => p.firstOffset !== 2 && p.status === 204).map((p) => p.firstOffset).sort()).toEqual([0, 1, 3, 4]);
  });

  it('a push group and a pull group on one topic each receive every record once, and stop cleanly', async () => {
    const broker = await openBroker();
    await broker.createTopic({ topic: 't', partitions: 3 });
    await produce(broker, 't', 3, 10);
    const server = await webhookServer(broker, 'push', (post) => post.answer(200));
    await pushSubscription(broker, 'push', server.url, 2);

    const pulled: string[] = [];
    const consumer = new Onelog({ api: broker }).consumer({ groupId: 'pull', startPolicy: 'earliest', sessionTimeoutMs: 3000, maxWaitMs: 20 });
    consumer.subscribe({ topic: 't' });
    consumers.push(consumer);
    await consumer.run({
      eachMessage: ({ partition, message }) => {
        pulled.push(`${partition}:${message.offset}`);
        if (pulled.length === 30) void consumer.stop();
      },
    });
    await waitForCommitted(broker, 'push', [10, 10, 10]);

    const every = [0, 1, 2].flatMap((p) => Array.from({ length: 10 }, (_, i) => `${p}:${i}`));
    expect(offsetsOf(server.posts).sort()).toEqual([...every].sort());
    expect([...pulled].sort()).toEqual([...every].sort());
    expect(await committedOffsets(broker, 'pull')).toEqual([10, 10, 10]);
    expect((await broker.describeGroup('pull')).subscriptions[0]!.deliveryMode).toBe('pull');

    // Shutdown: endWaits stops the dispatcher, which leaves its group while the broker still answers.
    expect((await broker.describeGroup('push')).members.map((m) => m.clientId)).toEqual(['webhook']);
    broker.endWaits();
    await waitFor(async () => (await broker.describeGroup('push')).members.length === 0, 'the webhook member left');
    await broker.close();
    expect(warnings).toEqual([]);
  });

  it('a dispatcher stopped while it joins its group starts no pusher: close() right after subscribe POSTs nothing', async () => {
    const broker = await openBroker();
    await broker.createTopic({ topic: 't', partitions: 1 });
    await produce(broker, 't', 1, 3);
    const arrived: string[] = [];
    const server = http.createServer((req) => arrived.push(`${req.method} ${req.url}`)); // never answered
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    // The dispatcher's join is held until the close asked it to stop (the stop's wake-up then finds no one waiting).
    let releaseJoin!: () => void;
    const joinHeld = new Promise<void>((resolve) => (releaseJoin = resolve));
    const join = broker.joinGroup.bind(broker);
    broker.joinGroup = async (request) => {
      await joinHeld;
      return join(request);
    };
    await pushSubscription(broker, 'push', `http://127.0.0.1:${(server.address() as AddressInfo).port}/push`);
    const closing = broker.close();
    setImmediate(releaseJoin);
    await closing;
    brokers.splice(brokers.indexOf(broker), 1);
    expect(arrived).toEqual([]);
  });

  it('a reopened broker resumes pushing from the committed offsets', async () => {
    const dataDir = tmpDir();
    let broker = await openBroker({ dataDir });
    await broker.createTopic({ topic: 't', partitions: 2 });
    await produce(broker, 't', 2, 4);
    const server = await webhookServer(() => broker, 'push', (post) => post.answer(200));
    await pushSubscription(broker, 'push', server.url);
    await waitForCommitted(broker, 'push', [4, 4]);
    await broker.close();
    brokers.splice(brokers.indexOf(broker), 1);

    const before = server.posts.length;
    broker = await openBroker({ dataDir });
    await produce(broker, 't', 2, 2, 4);
    await waitForCommitted(broker, 'push', [6, 6]);
    expect(offsetsOf(server.posts.slice(before)).sort()).toEqual(['0:4', '0:5', '1:4', '1:5']);
  });

  it('switching the subscription to pull stops the POSTs; a pull consumer of the group reads on from the last commit', async () => {
    const broker = await openBroker();
    await broker.createTopic({ topic: 't', partitions: 1 });
    await produce(broker, 't', 1, 5);
    const server = await webhookServer(broker, 'push', (post) => post.answer(200));
    await pushSubscription(broker, 'push', server.url);
    await waitForCommitted(broker, 'push', [5]);

    const { subscription } = await broker.subscribe({ groupId: 'push', topic: 't', deliveryMode: 'pull' });
    expect(subscription.deliveryMode).toBe('pull');
    expect((await broker.describeGroup('push')).members).toEqual([]); // the dispatcher left before subscribe answered
    await produce(broker, 't', 1, 5, 5);
    const pulled: number[] = [];
    const consumer = new Onelog({ api: broker }).consumer({ groupId: 'push', sessionTimeoutMs: 3000, maxWaitMs: 20 });
    consumer.subscribe({ topic: 't' });
    consumers.push(consumer);
    await consumer.run({
      eachMessage: ({ message }) => {
        pulled.push(message.offset);
        if (pulled.length === 5) void consumer.stop();
      },
    });
    expect(pulled).toEqual([5, 6, 7, 8, 9]);
    expect(offsetsOf(server.posts)).toEqual(['0:0', '0:1', '0:2', '0:3', '0:4']);
  });

  it('an offset reset revokes the dispatcher\'s partitions at a safe point, and it pushes again from the new offset', async () => {
    const broker = await openBroker();
    await broker.createTopic({ topic: 't', partitions: 2 });
    await produce(broker, 't', 2, 3);
    const server = await webhookServer(broker, 'push', (post) => post.answer(200));
    await pushSubscription(broker, 'push', server.url);
    await waitForCommitted(broker, 'push', [3, 3]);

    const before = server.posts.length;
    const reset = await broker.resetOffsets({ groupId: 'push', topic: 't', partition: 1, spec: { to: 'offset', offset: 1 }, execute: true });
    expect(reset.partitions).toEqual([{ partition: 1, currentOffset: 3, newOffset: 1 }]);
    await waitForCommitted(broker, 'push', [3, 3]);
    await waitFor(() => offsetsOf(server.posts.slice(before)).length === 2, 'the replay of partition 1');
    expect(offsetsOf(server.posts.slice(before))).toEqual(['1:1', '1:2']);
    expect((await broker.describeGroup('push')).members.map((m) => m.clientId)).toEqual(['webhook']);
  });

  it('a new endpoint takes over the POSTs from the last commit; pushEndpoint null stops them', async () => {
    const broker = await openBroker();
    await broker.createTopic({ topic: 't', partitions: 1 });
    await produce(broker, 't', 1, 3);
    const a = await webhookServer(broker, 'push', (post) => post.answer(200));
    const b = await webhookServer(broker, 'push', (post) => post.answer(200));
    await pushSubscription(broker, 'push', a.url);
    await waitForCommitted(broker, 'push', [3]);

    await pushSubscription(broker, 'push', b.url);
    await produce(broker, 't', 1, 3, 3);
    await waitForCommitted(broker, 'push', [6]);
    expect(offsetsOf(a.posts)).toEqual(['0:0', '0:1', '0:2']);
    expect(offsetsOf(b.posts)).toEqual(['0:3', '0:4', '0:5']);

    await pushSubscription(broker, 'push', null);
    const d = await broker.describeGroup('push');
    expect(d.members).toEqual([]);
    expect(d.subscriptions[0]).toMatchObject({ deliveryMode: 'push', pushEndpoint: null });
  });
});

describe('internal destinations (server-side request forgery)', () => {
  it('a default broker refuses an endpoint on 127.0.0.1 or localhost, and fails each POST to a name resolving to this machine', async () => {
    const broker = await openBroker({ webhookAllowPrivate: false });
    await broker.createTopic({ topic: 't', partitions: 1 });
    await produce(broker, 't', 1, 3);
    const server = await webhookServer(broker, 'push', (post) => post.answer(200));
    const port = new URL(server.url).port;
    for (const endpoint of [server.url, `http://localhost:${port}/push`, `http://[::ffff:127.0.0.1]:${port}/push`, `http://[64:ff9b::7f00:1]:${port}/push`]) {
      const err = await pushSubscription(broker, 'push', endpoint).then(() => null, (e: unknown) => e as { code: string; context: unknown });
      expect(err, endpoint).toMatchObject({ code: 'FORBIDDEN', context: { pushEndpoint: endpoint, reason: 'private-address' } });
    }
    expect(await broker.listGroups()).toEqual([]);

    // A name is accepted when given and checked when each POST connects: the machine's own name resolves to loopback
    // or to one of its own addresses.
    const byName = `http://${os.hostname()}:${port}/push`;
    await pushSubscription(broker, 'push', byName);
    await waitFor(() => warnings.filter((w) => w.msg === 'webhook delivery failed').length >= 2, 'two refused attempts');
    const failed = warnings.find((w) => w.msg === 'webhook delivery failed')!;
    expect(failed.obj).toMatchObject({ endpoint: byName, attempt: 1 });
    expect(failed.obj.err).toMatch(new RegExp(`webhook ${os.hostname()} is refused: ${os.hostname()} resolves to .*(loopback|this machine)`));
    expect(server.posts).toEqual([]);
    expect(await committedOffsets(broker, 'push')).toEqual([0]); // where it started: nothing acknowledged
  });

  it('with webhookAllowPrivate the broker delivers to 127.0.0.1 and to localhost', async () => {
    const broker = await openBroker({ webhookAllowPrivate: true });
    await broker.createTopic({ topic: 't', partitions: 1 });
    await produce(broker, 't', 1, 2);
    const server = await webhookServer(broker, 'push', (post) => post.answer(200));
    await pushSubscription(broker, 'push', server.url);
    await waitForCommitted(broker, 'push', [2]);
    await pushSubscription(broker, 'push', `http://localhost:${new URL(server.url).port}/push`);
    await produce(broker, 't', 1, 2, 2);
    await waitForCommitted(broker, 'push', [4]);
    expect(offsetsOf(server.posts)).toEqual(['0:0', '0:1', '0:2', '0:3']);
  });
});

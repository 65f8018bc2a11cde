/**
 * Poison records on real data: the Wikipedia edits (39,244) through a consumer group whose handler fails for
 * every edit of a page starting with "User talk:" (1,064 of them, counted from the file), with a policy of
 * 2 tiers and 3 attempts; the same through a pull consumer, a WebSocket push member and a webhook endpoint
 * that answers 500 for those edits. The main partitions flow on while retries wait; each failing edit is
 * tried exactly three times, no sooner than the tier delays, then dead-lettered; after a fixed handler and a
 * redrive each is processed once more and the depth alert resolves. An embedded broker with the system clock
 * (tier delays of a few hundred ms) behind a real HTTP server; every wait is a condition with a deadline.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import type { BrokerOptions } from '../../src/broker/options.js';
import { Onelog } from '../../src/client/index.js';
import type { Consumer, PushConsumer } from '../../src/client/index.js';
import type { JsonRecord } from '../../src/protocol/json-records.js';
import { deliveryInfo, headerText, RETRY_HEADERS } from '../../src/protocol/retry-policy.js';
import { createHttpServer } from '../../src/server/http-server.js';
import { tmpDir } from '../helpers/tmp.js';
import { readEdits } from '../helpers/wikiticker.js';

const DELAYS_MS = [300, 600];
const GROUP = 'indexer';
let broker: Broker | undefined;
let app: FastifyInstance | undefined;
let endpoint: http.Server | undefined;
afterEach(async () => {
  await app?.close();
  await broker?.close();
  endpoint?.closeAllConnections();
  endpoint?.close();
  app = undefined;
  broker = undefined;
  endpoint = undefined;
});

async function waitFor(what: string, probe: () => Promise<boolean> | boolean, timeoutMs = 180_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const isPoison = (value: string) => (JSON.parse(value) as { page: string }).page.startsWith('User talk:');

/** What the handler saw: original position -> times processed, and the failed attempts of each poison edit. */
interface Seen {
  processed: Map<string, number>;
  attempts: Map<string, Array<{ attempt: number; at: number }>>;
  /** Once set, the handler processes poison edits too. */
  fixed: boolean;
}

/**
 * The handler of every face: fails (returns false) for a poison edit until `seen.fixed`, else counts it processed.
 * @returns whether the record was processed
 */
function handle(seen: Seen, value: string, attempt: number, original: { partition: number; offset: number }): boolean {
  const where = `${original.partition}@${original.offset}`;
  if (isPoison(value) && !seen.fixed) {
    const list = seen.attempts.get(where) ?? [];
    list.push({ attempt, at: Date.now() });
    seen.attempts.set(where, list);
    return false;
  }
  seen.processed.set(where, (seen.processed.get(where) ?? 0) + 1);
  return true;
}

/** Opens a broker behind a real HTTP server, stores the edits in `partitions` partitions, subscribes the group with the policy. */
async function setUp(
  subscription: { deliveryMode?: 'push'; pushEndpoint?: string; webhookMaxAttempts?: number } = {}, options: Partial<BrokerOptions> = {}, partitions = 2,
) {
  broker = await Broker.open({ dataDir: tmpDir(), sessionCheckIntervalMs: 100, ...options });
  app = createHttpServer(broker);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const onelog = new Onelog({ url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}` });
  const edits = readEdits();
  await broker.createTopic({ topic: 'edits', partitions, config: { retentionMs: -1 } });
  const producer = new Onelog({ api: broker }).producer();
  for (let i = 0; i < edits.length; i += 2000) {
    await producer.send({ topic: 'edits', messages: edits.slice(i, i + 2000).map((e) => ({ key: e.key, value: e.value, timestamp: e.timestamp })) });
  }
  await broker.subscribe({
    groupId: GROUP, topic: 'edits', startPolicy: 'earliest', retry: { delaysMs: DELAYS_MS, maxAttempts: 3 }, ...subscription,
  });
  return { onelog, total: edits.length, poison: edits.filter((e) => isPoison(e.value)).length };
}

/** Everything the issue asks of a run, given what the handler saw; then redrives with the handler fixed. */
async function checkRun(seen: Seen, total: number, poison: number): Promise<void> {
  const group = () => broker!.describeGroup(GROUP);
  const mainLag = async () => (await group()).subscriptions[0]!.partitions.reduce((sum, p) => sum + (p.lag ?? Infinity), 0);
  // The main partitions reach lag 0 while retries still wait.
  await waitFor('main lag 0', async () => (await mainLag()) === 0);
  expect((await group()).subscriptions[0]!.deadLetter!.depth).toBeLessThan(poison);

  await waitFor('every poison edit dead-lettered', async () => (await group()).subscriptions[0]!.deadLetter!.depth === poison);
  expect(seen.processed.size).toBe(total - poison);
  expect([...seen.processed.values()].every((n) => n === 1)).toBe(true);
  expect(seen.attempts.size).toBe(poison);
  for (const [, tries] of seen.attempts) {
    expect(tries.map((s) => s.attempt)).toEqual([1, 2, 3]);
    expect(tries[1]!.at - tries[0]!.at).toBeGreaterThanOrEqual(DELAYS_MS[0]! - 5);
    expect(tries[2]!.at - tries[1]!.at).toBeGreaterThanOrEqual(DELAYS_MS[1]! - 5);
  }
  const d = await group();
  expect(d.alerts.filter((a) => a.kind === 'dead-letter-depth')).toHaveLength(1);
  const dlq = await broker!.listDeadLetters({ groupId: GROUP, topic: 'edits', limit: 10_000 });
  expect(dlq.records).toHaveLength(poison);
  expect(dlq.records.every((r) => r.attempts === 3)).toBe(true);
  expect(new Set(dlq.records.map((r) => `${r.original.partition}@${r.original.offset}`))).toEqual(new Set(seen.attempts.keys()));
  const [first] = (await broker!.fetch({ topic: dlq.deadLetterTopic, partitions: [{ partition: 0, offset: 0 }], maxRecords: 1 })).partitions[0]!.records;
  expect(headerText(first!.headers, RETRY_HEADERS.group)).toBe(GROUP);
  expect(headerText(first!.headers, RETRY_HEADERS.originalTopic)).toBe('edits');
  expect(isPoison(first!.value!.toString())).toBe(true);

  seen.fixed = true;
  const redrive = await broker!.redriveDeadLetters({ groupId: GROUP, topic: 'edits', all: true, execute: true, requestedBy: 'test' });
  expect(redrive.records).toHaveLength(poison);
  expect(redrive.depth).toBe(0);
  await waitFor('every edit processed', () => seen.processed.size === total);
  expect([...seen.processed.values()].every((n) => n === 1)).toBe(true);
  const after = await group();
  expect(after.subscriptions[0]!.deadLetter!.depth).toBe(0);
  expect(after.alerts.find((a) => a.kind === 'dead-letter-depth')!.resolvedAt).not.toBeNull();
}

const fresh = (): Seen => ({ processed: new Map(), attempts: new Map(), fixed: false });

/** Runs a member whose handler throws for the poison edits, checks the run, and stops it. */
async function consumeThrough(consumer: Consumer | PushConsumer, total: number, poison: number): Promise<void> {
  const seen = fresh();
  consumer.subscribe({ topic: 'edits' });
  const running = consumer.run({
    eachMessage: ({ message: m }) => {
      if (!handle(seen, m.value!.toString(), m.attempt, m.original)) throw new Error('cannot index a talk page');
    },
  });
  await checkRun(seen, total, poison);
  await consumer.stop();
  await running;
}

describe('poison records on the Wikipedia edits: 2 tiers, 3 attempts', () => {
  it('through a pull consumer whose handler throws', async () => {
    const { onelog, total, poison } = await setUp();
    expect(poison).toBe(1064);
    await consumeThrough(onelog.consumer({ groupId: GROUP, maxWaitMs: 50, sessionTimeoutMs: 10_000 }), total, poison);
  });

  it('through a WebSocket push member whose handler throws', async () => {
    const { onelog, total, poison } = await setUp({ deliveryMode: 'push' });
    await consumeThrough(onelog.pushConsumer({ groupId: GROUP, sessionTimeoutMs: 10_000 }), total, poison);
  });

  it('through a webhook endpoint that answers 500 for them (batches of 20; a failed batch goes again one record per POST)', async () => {
    const seen = fresh();
    endpoint = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { partition: number; records: JsonRecord[] };
        const topic = String(req.headers['onelog-topic']);
        const items = body.records.map((r) => {
          const headers = Object.entries(r.headers).map(([key, v]) => ({ key, value: v === null ? null : Buffer.from(v, 'base64') }));
          return { value: Buffer.from(r.value!, 'base64').toString('utf8'), info: deliveryInfo({ offset: r.offset, timestamp: r.timestamp, headers }, topic, body.partition, topic !== 'edits') };
        });
        // All or nothing, as an endpoint writing a batch in one transaction: a batch holding a talk page is refused
        // whole, and a talk page sent alone is a failed attempt of the handler.
        const refused = !seen.fixed && items.some((i) => isPoison(i.value));
        if (!refused) for (const i of items) handle(seen, i.value, i.info.attempt, i.info.original);
        else if (items.length === 1) handle(seen, items[0]!.value, items[0]!.info.attempt, items[0]!.info.original);
        res.writeHead(refused ? 500 : 200).end();
      });
    });
    await new Promise<void>((resolve) => endpoint!.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/index`;
    // webhookMaxAttempts 1: a failing batch is split at once, and a record failing alone is nacked at once, so
    // each delivery of a talk page is one POST and the endpoint counts attempts as a handler does.
    const { total, poison } = await setUp({ deliveryMode: 'push', pushEndpoint: url, webhookMaxAttempts: 1 }, {
      webhookAllowPrivate: true, // the endpoint is on 127.0.0.1
      webhooks: { maxRecords: 20, minBackoffMs: 1, maxBackoffMs: 2, maxWaitMs: 50 },
    }, 8);
    await checkRun(seen, total, poison);
  }, 420_000);
});

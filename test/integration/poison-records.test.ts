/**
 * Poison records on real data: the Wikipedia edits (39,244) through a consumer group whose handler fails for
 * every edit of a page starting with "User talk:" (1,064 of them, counted from the file), with a policy of
 * 2 tiers and 3 attempts. The main partitions flow on while retries wait; each failing edit is tried exactly
 * three times, no sooner than the tier delays, then dead-lettered; after a fixed handler and a redrive each is
 * processed once more and the depth alert resolves. An embedded broker with the system clock (tier delays of
 * a few hundred ms); every wait is a condition with a deadline.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker.js';
import { Onelog } from '../../src/client/index.js';
import type { ConsumedMessage } from '../../src/client/index.js';
import { headerText, RETRY_HEADERS } from '../../src/protocol/retry-policy.js';
import { tmpDir } from '../helpers/tmp.js';
import { readEdits } from '../helpers/wikiticker.js';

const DELAYS_MS = [300, 600];
let broker: Broker | undefined;
afterEach(async () => {
  await broker?.close();
  broker = undefined;
});

async function waitFor(what: string, probe: () => Promise<boolean> | boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const isPoison = (value: string) => (JSON.parse(value) as { page: string }).page.startsWith('User talk:');

describe('poison records on the Wikipedia edits', () => {
  it('retries each failing edit exactly 3 times through 2 tiers, dead-letters it, and a redrive processes it once', async () => {
    broker = await Broker.open({ dataDir: tmpDir(), sessionCheckIntervalMs: 100 });
    const onelog = new Onelog({ api: broker });
    const edits = readEdits();
    const poison = edits.filter((e) => isPoison(e.value)).length;
    expect(poison).toBe(1064);
    await broker.createTopic({ topic: 'edits', partitions: 2, config: { retentionMs: -1 } });
    const producer = onelog.producer();
    for (let i = 0; i < edits.length; i += 2000) {
      await producer.send({ topic: 'edits', messages: edits.slice(i, i + 2000).map((e) => ({ key: e.key, value: e.value, timestamp: e.timestamp })) });
    }
    await broker.subscribe({ groupId: 'indexer', topic: 'edits', startPolicy: 'earliest', retry: { delaysMs: DELAYS_MS, maxAttempts: 3 } });

    const processed = new Map<string, number>(); // original position -> times processed
    const attempts = new Map<string, Array<{ attempt: number; at: number }>>();
    let fixed = false;
    const consumer = onelog.consumer({ groupId: 'indexer', maxWaitMs: 50, sessionTimeoutMs: 10_000 });
    consumer.subscribe({ topic: 'edits' });
    const where = (m: ConsumedMessage) => `${m.original.partition}@${m.original.offset}`;
    const running = consumer.run({
      eachMessage: ({ message }) => {
        const value = message.value!.toString();
        if (isPoison(value) && !fixed) {
          const seen = attempts.get(where(message)) ?? [];
          seen.push({ attempt: message.attempt, at: Date.now() });
          attempts.set(where(message), seen);
          throw new Error(`cannot index ${(JSON.parse(value) as { page: string }).page}`);
        }
        processed.set(where(message), (processed.get(where(message)) ?? 0) + 1);
      },
    });
    const group = () => broker!.describeGroup('indexer');
    const mainLag = async () => (await group()).subscriptions[0]!.partitions.reduce((sum, p) => sum + (p.lag ?? Infinity), 0);

    // The main partitions reach lag 0 while retries still wait.
    await waitFor('main lag 0', async () => (await mainLag()) === 0);
    const early = (await group()).subscriptions[0]!;
    expect(early.deadLetter!.depth).toBeLessThan(poison);

    await waitFor('every poison edit dead-lettered', async () => (await group()).subscriptions[0]!.deadLetter!.depth === poison);
    expect(processed.size).toBe(edits.length - poison);
    expect([...processed.values()].every((n) => n === 1)).toBe(true);
    expect(attempts.size).toBe(poison);
    for (const [, seen] of attempts) {
      expect(seen.map((s) => s.attempt)).toEqual([1, 2, 3]);
      expect(seen[1]!.at - seen[0]!.at).toBeGreaterThanOrEqual(DELAYS_MS[0]! - 5);
      expect(seen[2]!.at - seen[1]!.at).toBeGreaterThanOrEqual(DELAYS_MS[1]! - 5);
    }
    const d = await group();
    expect(d.alerts.filter((a) => a.kind === 'dead-letter-depth')).toHaveLength(1);
    expect(d.subscriptions[0]!.retryTiers.map((t) => t.backlog)).toEqual([0, 0]);
    const dlq = await broker.listDeadLetters({ groupId: 'indexer', topic: 'edits', limit: 10_000 });
    expect(dlq.records).toHaveLength(poison);
    expect(dlq.records.every((r) => r.attempts === 3 && r.reason.startsWith('cannot index User talk:'))).toBe(true);
    const [first] = (await broker.fetch({ topic: dlq.deadLetterTopic, partitions: [{ partition: 0, offset: 0 }], maxRecords: 1 })).partitions[0]!.records;
    expect(headerText(first!.headers, RETRY_HEADERS.group)).toBe('indexer');
    expect(headerText(first!.headers, RETRY_HEADERS.originalTopic)).toBe('edits');
    expect(isPoison(first!.value!.toString())).toBe(true);

    fixed = true;
    const redrive = await broker.redriveDeadLetters({ groupId: 'indexer', topic: 'edits', all: true, execute: true, requestedBy: 'test' });
    expect(redrive.records).toHaveLength(poison);
    expect(redrive.depth).toBe(0);
    await waitFor('every edit processed', () => processed.size === edits.length);
    expect([...processed.values()].every((n) => n === 1)).toBe(true);
    const after = await group();
    expect(after.subscriptions[0]!.deadLetter!.depth).toBe(0);
    expect(after.alerts.find((a) => a.kind === 'dead-letter-depth')!.resolvedAt).not.toBeNull();
    await consumer.stop();
    await running;
  });
});

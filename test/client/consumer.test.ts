/** The consumer's commit semantics, on an embedded broker (the same client code runs over HTTP). */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker.js';
import { Onelog } from '../../src/client/index.js';
import { tmpDir } from '../helpers/tmp.js';

let broker: Broker;
let onelog: Onelog;

beforeEach(async () => {
  broker = await Broker.open({ dataDir: tmpDir() });
  onelog = new Onelog({ api: broker });
  await broker.createTopic({ topic: 't', partitions: 3 });
  await onelog.producer().send({
    topic: 't',
    messages: Array.from({ length: 30 }, (_, i) => ({ value: `v${i}`, partition: i % 3 })),
  });
});
afterEach(() => broker.close());

async function committed(groupId: string): Promise<Array<number | null>> {
  const d = await broker.describeGroup(groupId);
  return d.subscriptions[0]!.partitions.map((p) => p.committedOffset);
}

describe('Consumer (at-least-once)', () => {
  it('delivers every record once, in order per partition, and commits the next offset to read', async () => {
    const consumer = onelog.consumer({ groupId: 'g', startPolicy: 'earliest', maxRecords: 4, maxWaitMs: 0 });
    consumer.subscribe({ topic: 't' });
    const seen: string[] = [];
    await consumer.run({
      eachMessage: ({ partition, message }) => {
        seen.push(`${partition}:${message.offset}:${message.value}`);
        if (seen.length === 30) void consumer.stop();
      },
    });
    expect(seen).toHaveLength(30);
    for (let p = 0; p < 3; p++) {
      expect(seen.filter((s) => s.startsWith(`${p}:`))).toEqual(
        Array.from({ length: 10 }, (_, i) => `${p}:${i}:v${i * 3 + p}`),
      );
    }
    expect(await committed('g')).toEqual([10, 10, 10]);
  });

  it('never commits a record whose handler threw, and commits those processed before it', async () => {
    const consumer = onelog.consumer({ groupId: 'g', startPolicy: 'earliest', maxWaitMs: 0 });
    consumer.subscribe({ topic: 't' });
    const boom = new Error('handler failed');
    await expect(
      consumer.run({
        eachMessage: ({ partition, message }) => {
          if (partition === 0 && message.offset === 4) throw boom;
        },
      }),
    ).rejects.toBe(boom);
    const c = await committed('g');
    expect(c[0]).toBe(4);
    const again = onelog.consumer({ groupId: 'g', maxWaitMs: 0 });
    again.subscribe({ topic: 't' });
    let first: number | undefined;
    await again.run({
      eachMessage: ({ partition, message }) => {
        if (partition === 0 && first === undefined) {
          first = message.offset;
          void again.stop();
        }
      },
    });
    expect(first).toBe(4);
  });

  it('moves past offsets compaction emptied at the end of a partition, leaving no lag', async () => {
    await broker.createTopic({ topic: 'state', partitions: 1, config: { cleanupPolicy: 'compact', deleteRetentionMs: 0 } });
    await onelog.producer().send({ topic: 'state', messages: [{ key: 'a', value: '1' }, { key: 'b', value: '1' }, { key: 'b', value: null }] });
    await broker.compactTopic({ topic: 'state' });
    await broker.compactTopic({ topic: 'state' }); // the tombstone's horizon (now + 0) has passed: it goes
    const consumer = onelog.consumer({ groupId: 'g', startPolicy: 'earliest', maxWaitMs: 0 });
    consumer.subscribe({ topic: 'state' });
    const seen: string[] = [];
    await consumer.run({
      eachMessage: ({ message }) => {
        seen.push(`${message.key}=${message.value}`);
        void consumer.stop();
      },
    });
    expect(seen).toEqual(['a=1']);
    const partition = (await broker.describeGroup('g')).subscriptions.find((s) => s.topic === 'state')!.partitions[0]!;
    expect(partition).toMatchObject({ committedOffset: 3, highWatermark: 3, lag: 0 });
  });
});

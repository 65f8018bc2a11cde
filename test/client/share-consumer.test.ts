/**
 * The client's share consumer on an embedded broker with the Wikipedia edits: three members of one share group read
 * one partition side by side; a handler that throws releases its record (delivered again, counted), one that calls
 * reject sends it to the dead letters, and every other edit is handled and accepted once.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { Onelog } from '../../src/client/index.js';
import { readEdits } from '../helpers/wikiticker.js';
import { tmpDir } from '../helpers/tmp.js';

let broker: Broker;
beforeEach(async () => {
  broker = await Broker.open({ dataDir: tmpDir(), retentionCheckIntervalMs: 0, compactionIntervalMs: 0, monitoring: { alertCheckIntervalMs: 0 } });
});
afterEach(() => broker.close());

describe('share consumer', () => {
  it('three members share one partition: each edit accepted once, a throw redelivers, a reject dead-letters', async () => {
    const edits = readEdits().slice(0, 300);
    await broker.createTopic({ topic: 'edits', partitions: 1 });
    await broker.produce({ topic: 'edits', records: edits.map((e) => ({ key: Buffer.from(e.key), value: Buffer.from(e.value), timestamp: e.timestamp, partition: 0 })) });
    await broker.subscribe({ groupId: 'indexers', topic: 'edits', type: 'share', startPolicy: 'earliest' });
    const onelog = new Onelog({ api: broker });
    const accepted = new Map<number, string>();
    const deliveries = new Map<number, number[]>();
    const members = [0, 1, 2].map((i) => onelog.shareConsumer({ groupId: 'indexers', clientId: `m${i}`, maxRecords: 7, maxWaitMs: 50 }));
    const done = () => accepted.size === 299;
    const runs = members.map((consumer) => {
      consumer.subscribe({ topic: 'edits' });
      return consumer.run({
        eachMessage: async ({ message }) => {
          deliveries.set(message.offset, [...(deliveries.get(message.offset) ?? []), message.deliveryCount]);
          if (message.offset === 13) return message.reject('not indexable');
          if (message.offset % 50 === 7 && message.deliveryCount === 1) throw new Error('a transient failure');
          expect(accepted.has(message.offset)).toBe(false);
          accepted.set(message.offset, message.value!.toString());
          if (done()) await Promise.all(members.map((m) => m.stop()));
        },
      });
    });
    await Promise.all(runs);
    expect(accepted.size).toBe(299);
    expect([...accepted.keys()].sort((a, b) => a - b)).toEqual(edits.map((_, i) => i).filter((o) => o !== 13));
    for (const [offset, value] of accepted) expect(value).toBe(edits[offset]!.value);
    for (const o of [7, 57, 107, 157, 207, 257]) expect(deliveries.get(o)).toEqual([1, 2]); // released, then delivered again
    const dead = await broker.listDeadLetters({ groupId: 'indexers', topic: 'edits' });
    expect(dead).toMatchObject({ depth: 1, records: [{ original: { offset: 13 }, reason: 'not indexable' }] });
  });
});

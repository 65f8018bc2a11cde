/**
 * A Kafka Fetch holds to fetch.max.bytes and max.partition.fetch.bytes in whole batches, but for the answer's first
 * batch (librdkafka's 0082: 900 KiB records under a 1,000,000-byte limit were answered two batches, 1.8 MB, and the
 * client dropped the connection).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { fetch } from '../../src/kafka/apis/fetch.js';
import type { RequestContext } from '../../src/kafka/apis/api.js';
import { tmpDir } from '../helpers/tmp.js';

let broker: Broker;

beforeEach(async () => {
  broker = await Broker.open({ dataDir: tmpDir(), retentionCheckIntervalMs: 0, monitoring: { alertCheckIntervalMs: 0 } });
  await broker.createTopic({ topic: 'big', partitions: 2, config: { retentionMs: -1 } });
  await broker.createTopic({ topic: 'small', partitions: 1, config: { retentionMs: -1 } });
  for (const partition of [0, 1]) {
    for (let i = 0; i < 2; i++) await broker.produce({ topic: 'big', records: [{ key: null, value: Buffer.alloc(900 * 1024, 97 + i), partition }] });
  }
  for (let i = 0; i < 3; i++) await broker.produce({ topic: 'small', records: [{ key: null, value: Buffer.from(`small ${i}`), partition: 0 }] });
});
afterEach(() => broker.close());

/** The bytes each partition's records hold in a Fetch answer, by topic. */
async function fetched(topics: Array<{ topic: string; partitions: number[] }>, maxBytes: number, partitionMaxBytes = 1 << 20): Promise<Record<string, number[]>> {
  const request = {
    maxBytes, maxWaitMs: 0,
    topics: topics.map((t) => ({ topic: t.topic, partitions: t.partitions.map((partition) => ({ partition, fetchOffset: 0, partitionMaxBytes })) })),
  };
  const answer = await fetch.handle(request, { api: broker, header: { apiVersion: 12 } } as unknown as RequestContext) as { responses: Array<{ topic: string; partitions: Array<{ records: Buffer }> }> };
  return Object.fromEntries(answer.responses.map((t) => [t.topic, t.partitions.map((p) => p.records.length)]));
}

describe('Kafka Fetch limits', () => {
  it('answers only its first batch past fetch.max.bytes; later partitions and topics get what fits', async () => {
    const got = await fetched([{ topic: 'big', partitions: [0, 1] }, { topic: 'small', partitions: [0] }], 1_000_000);
    expect(got.big![0]).toBeGreaterThan(900 * 1024); // the first batch, whatever its size
    expect(got.big![0]).toBeLessThan(2 * 900 * 1024); // and not the second
    expect(got.big![1]).toBe(0);
    expect(got.small![0]).toBeGreaterThan(0); // its small batches fit in what is left
    expect(got.big![0]! + got.small![0]!).toBeLessThanOrEqual(1_000_000);
  });

  it('fills what is left with whole batches of the next partitions, and holds each to max.partition.fetch.bytes', async () => {
    const got = await fetched([{ topic: 'small', partitions: [0] }, { topic: 'big', partitions: [0, 1] }], 1_000_000, 200);
    // small's three batches of about 80 bytes: two fit its 200 bytes; big's first batch would pass both limits.
    expect(got.small![0]).toBeGreaterThan(0);
    expect(got.small![0]).toBeLessThanOrEqual(200);
    expect(got.big).toEqual([0, 0]);
    // With room, the next partition's whole batches go in.
    const roomy = await fetched([{ topic: 'small', partitions: [0] }, { topic: 'big', partitions: [0, 1] }], 4_000_000, 2_000_000);
    expect(roomy.big![0]).toBeGreaterThan(2 * 900 * 1024);
    expect(roomy.big![1]).toBeGreaterThan(2 * 900 * 1024);
  });
});

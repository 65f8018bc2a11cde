/** The idempotent producer, end to end on an embedded broker: retries are stored once, gaps refused. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { Onelog } from '../../src/client/index.js';
import type { OnelogApi } from '../../src/protocol/api.js';
import type { ProduceRequest, ProduceResult } from '../../src/protocol/produce.js';
import { OnelogError } from '../../src/protocol/errors.js';
import { asyncCodeOf } from '../helpers/errors.js';
import { tmpDir } from '../helpers/tmp.js';

let broker: Broker;
let dataDir: string;

beforeEach(async () => {
  dataDir = tmpDir();
  broker = await Broker.open({ dataDir });
  await broker.createTopic({ topic: 't', partitions: 3 });
});
afterEach(() => broker.close());

async function values(partition: number): Promise<string[]> {
  const fetched = await broker.fetch({ topic: 't', partitions: [{ partition, offset: 0 }], maxRecords: 10_000 });
  return fetched.partitions[0]!.records.map((r) => r.value!.toString());
}

/** An API whose produce stores the request on the broker, then loses the answer `failures` times. */
function losingAnswers(api: OnelogApi, failures: number): OnelogApi & { attempts: number } {
  let attempts = 0;
  const produce = async (request: ProduceRequest): Promise<ProduceResult> => {
    attempts++;
    const result = await api.produce(request);
    if (attempts <= failures) throw new OnelogError('NETWORK_ERROR', 'connection reset after the request was sent');
    return result;
  };
  // Every other call goes to the broker itself (bound, so it sees its own state).
  return new Proxy(api, {
    get: (target, name) => {
      if (name === 'produce') return produce;
      if (name === 'attempts') return attempts;
      const value = Reflect.get(target, name) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  }) as OnelogApi & { attempts: number };
}

describe('idempotent producer', () => {
  it('stores a send once when its answer is lost and the send retried, and answers the original offsets', async () => {
    const api = losingAnswers(broker, 2);
    const producer = new Onelog({ api }).producer({ idempotent: true, retryBackoffMs: 1 });
    await producer.send({ topic: 't', messages: [{ value: 'a', partition: 0 }, { value: 'b', partition: 0 }] });
    const second = await producer.send({ topic: 't', messages: [{ value: 'c', partition: 0 }, { value: 'd', partition: 1 }] });
    expect(api.attempts).toBe(4); // first send: 2 lost answers + 1; second: 1
    expect(second.offsets).toEqual([{ partition: 0, offset: 2 }, { partition: 1, offset: 0 }]);
    expect(await values(0)).toEqual(['a', 'b', 'c']);
    expect(await values(1)).toEqual(['d']);
  });

  it('keeps keyed messages on the broker partitioner\'s partition', async () => {
    const producer = new Onelog({ api: broker }).producer({ idempotent: true });
    const idempotent = await producer.send({ topic: 't', messages: [{ key: 'user-1', value: 'x' }, { key: 'user-2', value: 'y' }] });
    const plain = await new Onelog({ api: broker }).producer().send({ topic: 't', messages: [{ key: 'user-1', value: 'x' }, { key: 'user-2', value: 'y' }] });
    expect(idempotent.offsets.map((o) => o.partition)).toEqual(plain.offsets.map((o) => o.partition));
  });

  it('refuses a sequence gap with OUT_OF_ORDER_SEQUENCE and stores nothing of it', async () => {
    const { producerId, producerEpoch } = await broker.initProducerId();
    const send = (baseSequence: number, value: string) => broker.produce({
      topic: 't', records: [{ key: null, value: Buffer.from(value), partition: 0 }],
      idempotence: { producerId, producerEpoch, baseSequences: { 0: baseSequence } },
    });
    await send(0, 'first');
    expect(await asyncCodeOf(send(2, 'gap'))).toBe('OUT_OF_ORDER_SEQUENCE');
    await send(1, 'second');
    expect((await send(1, 'second')).offsets).toEqual([{ partition: 0, offset: 1 }]); // a retry
    expect(await values(0)).toEqual(['first', 'second']);
  });

  it('issues distinct producer ids that survive a restart', async () => {
    const a = await broker.initProducerId();
    await broker.close();
    broker = await Broker.open({ dataDir });
    const b = await broker.initProducerId();
    expect(b.producerId).toBeGreaterThan(a.producerId);
  });

  it('refuses an idempotent record without a partition, and a partition without a base sequence', async () => {
    const { producerId } = await broker.initProducerId();
    const idempotence = { producerId, producerEpoch: 0, baseSequences: { 0: 0 } };
    expect(await asyncCodeOf(broker.produce({ topic: 't', records: [{ key: null, value: null }], idempotence }))).toBe('INVALID_RECORD');
    expect(await asyncCodeOf(broker.produce({ topic: 't', records: [{ key: null, value: null, partition: 1 }], idempotence })))
      .toBe('INVALID_REQUEST');
    expect(await values(0)).toEqual([]);
  });

  it('refuses a request spanning partitions whole when one partition refuses its batch: nothing of it is stored', async () => {
    const { producerId, producerEpoch } = await broker.initProducerId();
    const send = (seq0: number, seq1: number, tag: string) => broker.produce({
      topic: 't',
      records: [{ key: null, value: Buffer.from(`${tag}-0`), partition: 0 }, { key: null, value: Buffer.from(`${tag}-1`), partition: 1 }],
      idempotence: { producerId, producerEpoch, baseSequences: { 0: seq0, 1: seq1 } },
    });
    await send(0, 0, 'first');
    expect(await asyncCodeOf(send(1, 5, 'gap'))).toBe('OUT_OF_ORDER_SEQUENCE');
    expect(await values(0)).toEqual(['first-0']);
    await send(1, 1, 'second');
    expect(await values(0)).toEqual(['first-0', 'second-0']);
    expect(await values(1)).toEqual(['first-1', 'second-1']);
  });

  it('refuses a producer id the broker never issued, so it cannot collide with one issued later', async () => {
    const { producerId } = await broker.initProducerId();
    const request = { topic: 't', records: [{ key: null, value: Buffer.from('x'), partition: 0 }] };
    expect(await asyncCodeOf(broker.produce({ ...request, idempotence: { producerId: producerId + 1, producerEpoch: 0, baseSequences: { 0: 0 } } })))
      .toBe('UNKNOWN_PRODUCER_ID');
    expect(await values(0)).toEqual([]);
  });

  it('starts over as a new producer when the broker forgot it after its records expired, storing the send once', async () => {
    const onelog = new Onelog({ api: broker });
    const producer = onelog.producer({ idempotent: true });
    await producer.send({ topic: 't', messages: [{ value: 'a', partition: 0 }, { value: 'b', partition: 1 }] });
    await broker.deleteRecords({ topic: 't', partition: 1, beforeOffset: 1 }); // partition 1 forgets the producer
    const result = await producer.send({ topic: 't', messages: [{ value: 'c', partition: 0 }, { value: 'd', partition: 1 }] });
    expect(result.offsets).toEqual([{ partition: 0, offset: 1 }, { partition: 1, offset: 1 }]);
    await producer.send({ topic: 't', messages: [{ value: 'e', partition: 0 }] });
    expect(await values(0)).toEqual(['a', 'c', 'e']);
    const fetched = await broker.fetch({ topic: 't', partitions: [{ partition: 1, offset: 1 }] });
    expect(fetched.partitions[0]!.records.map((r) => r.value!.toString())).toEqual(['d']);
  });
});

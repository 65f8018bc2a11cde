/**
 * A byte flipped in a partition's files after a clean stop (issue 31, point 7), through the embedded broker and its
 * HTTP API on a real data directory: nothing is cut, the high watermark stays, the fetch of the bad offset answers
 * CORRUPT_MESSAGE naming the file, byte and offset, the records before it are served, a produce gets the next
 * offset, and a `storage-corruption` alert names the topic, partition, file, byte and offset for each group reading
 * the topic, until delete-records moves the log start past the batch.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import type { BrokerOptions } from '../../src/broker/options.js';
import { ManualClock } from '../../src/common/clock.js';
import { createHttpServer } from '../../src/server/http-server.js';
import { tmpDir } from '../helpers/tmp.js';
import { batchSpans } from '../log/log-fixtures.js';

const T0 = Date.UTC(2026, 0, 1);

let broker: Broker | undefined;
let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  await broker?.close();
  app = broker = undefined;
});

async function start(dataDir: string): Promise<{ broker: Broker; app: FastifyInstance }> {
  const options: BrokerOptions = {
    dataDir, clock: new ManualClock(T0), sessionCheckIntervalMs: 0, retentionCheckIntervalMs: 0, compactionIntervalMs: 0,
    monitoring: { alertCheckIntervalMs: 0 },
  };
  broker = await Broker.open(options);
  app = createHttpServer(broker);
  return { broker, app };
}

const post = (url: string, payload: object) => app!.inject({ method: 'POST', url, payload });

describe('a corrupt batch in a partition\'s files', () => {
  it('after a clean stop: cuts nothing, keeps the high watermark, answers CORRUPT_MESSAGE for it, serves the rest, and raises a storage-corruption alert until the log start passes it', async () => {
    const dataDir = tmpDir();
    let { broker: b } = await start(dataDir);
    await b.createTopic({ topic: 't', partitions: 1 });
    await b.subscribe({ groupId: 'g', topic: 't', startPolicy: 'earliest' });
    for (let batch = 0; batch < 5; batch++) {
      await b.produce({ topic: 't', records: Array.from({ length: 10 }, (_, i) => ({ key: null, value: Buffer.from(`v${batch * 10 + i}`), partition: 0 })) });
    }
    await app!.close();
    await b.close(); // a clean stop
    const file = path.join(dataDir, 'log', 't-0', '00000000000000000000.log');
    const bad = batchSpans(file).at(-1)!;
    expect([bad.baseOffset, bad.lastOffset]).toEqual([40, 49]);
    const data = fs.readFileSync(file);
    data[data.length - 20]! ^= 0x01;
    fs.writeFileSync(file, data);

    ({ broker: b } = await start(dataDir));
    const fetched = await post('/topics/t/fetch', { partitions: [{ partition: 0, offset: 40 }] });
    expect(fetched.json()).toMatchObject({
      partitions: [{ partition: 0, records: [], error: { code: 'CORRUPT_MESSAGE', topic: 't', partition: 0, segment: file, position: bad.position, offset: 40 } }],
    });
    expect(fs.statSync(file).size).toBe(data.length);
    const before = (await post('/topics/t/fetch', { partitions: [{ partition: 0, offset: 30 }] })).json() as { partitions: { records: { offset: number }[] }[] };
    expect(before.partitions[0]!.records.map((r) => r.offset)).toEqual(Array.from({ length: 10 }, (_, i) => 30 + i));
    expect((await b.describeTopic('t')).partitions[0]).toMatchObject({ highWatermark: 50 });
    expect(await b.produce({ topic: 't', records: [{ key: null, value: Buffer.from('v50'), partition: 0 }] })).toMatchObject({ offsets: [{ partition: 0, offset: 50 }] });

    const listed = await app!.inject({ method: 'GET', url: '/alerts?active=true' });
    const alerts = (listed.json() as { alerts: { kind: string; groupId: string; topic: string; partition: number; message: string; context: object }[] }).alerts;
    expect(alerts).toMatchObject([{
      kind: 'storage-corruption', groupId: 'g', topic: 't', partition: 0,
      context: { file, position: bad.position, offset: 40, reason: expect.stringMatching(/CRC-32C/) as unknown },
    }]);
    expect(alerts[0]!.message).toContain(`t/0, which group g reads, holds a corrupt batch: the batch at byte ${bad.position} of ${file} (offsets from 40)`);

    // A restart forgets what was found; the alert stays, since the batch is still there.
    await app!.close();
    await b.close();
    ({ broker: b } = await start(dataDir));
    await b.evaluateAlerts();
    expect((await b.listAlerts({ active: true })).map((a) => a.kind)).toEqual(['storage-corruption']);
    // Deleting the records up to past it ends the episode (and the group, at offset 0, lost what was deleted).
    await b.deleteRecords({ topic: 't', partition: 0, beforeOffset: 50 });
    await b.evaluateAlerts();
    expect((await b.listAlerts({ groupId: 'g' })).map((a) => [a.kind, a.resolvedAt !== null])).toEqual([['data-lost', false], ['storage-corruption', true]]);
  });
});

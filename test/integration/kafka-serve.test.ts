/**
 * `onelog serve --kafka-port` as a user runs it: a kafkajs producer writes Wikipedia edits through the Kafka
 * listener of a real server, `onelog consume` reads them back, and a kafkajs group's commits show in
 * `groups describe --json`.
 */
import { Kafka, logLevel } from 'kafkajs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { GroupDescription } from '../../src/protocol/groups.js';
import { partitionForKey } from '../../src/protocol/murmur2.js';
import { runCli, startServer } from '../helpers/processes.js';
import type { ServerProcess } from '../helpers/processes.js';
import { tmpDir } from '../helpers/tmp.js';
import { readEdits } from '../helpers/wikiticker.js';

let server: ServerProcess | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

async function cli(args: string[]): Promise<string> {
  const r = await runCli(server!.url, args);
  if (r.code !== 0) throw new Error(`onelog ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return r.stdout;
}

describe('onelog serve --kafka-port', () => {
  it('serves Kafka clients beside the HTTP API, on the same broker', async () => {
    let kafkaAddress = '';
    server = await startServer(tmpDir(), {
      args: ['--kafka-port', '0'],
      onLog: (entry) => {
        if (typeof entry.kafka === 'string') kafkaAddress = entry.kafka;
      },
    });
    expect(kafkaAddress).toMatch(/^127\.0\.0\.1:\d+$/);
    await cli(['topics', 'create', 'edits', '--partitions', '2', '--config', 'retention.ms=-1']);
    const edits = readEdits().slice(0, 500);
    const kafka = new Kafka({ clientId: 'wiki', brokers: [kafkaAddress], logLevel: logLevel.NOTHING, retry: { retries: 5, initialRetryTime: 50 } });
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic: 'edits', messages: edits.map((e) => ({ key: e.key, value: e.value, timestamp: String(e.timestamp) })) });
    await producer.disconnect();

    const consumed = (await cli(['consume', 'edits', '--group', 'onelog-reader', '--from', 'earliest', '--max-records', '500']))
      .trim().split('\n').map((l) => JSON.parse(l) as { key: string; value: string; partition: number });
    expect(consumed).toHaveLength(500);
    expect(new Set(consumed.map((r) => r.value))).toEqual(new Set(edits.map((e) => e.value)));
    // Kafka's default partitioner (murmur2 of the key) is onelog's: each key lands where onelog would put it.
    for (const r of consumed) expect(r.partition, r.key).toBe(partitionForKey(Buffer.from(r.key), 2));
    expect(new Set(consumed.map((r) => r.partition))).toEqual(new Set([0, 1]));

    const consumer = kafka.consumer({ groupId: 'kafka-reader', sessionTimeout: 10_000, heartbeatInterval: 500 });
    await consumer.connect();
    await consumer.subscribe({ topic: 'edits', fromBeginning: true });
    let seen = 0;
    await consumer.run({ eachMessage: async () => void seen++ });
    await vi.waitFor(() => expect(seen).toBe(500), { timeout: 30_000, interval: 100 });
    await consumer.disconnect();
    const d = JSON.parse(await cli(['groups', 'describe', 'kafka-reader', '--json'])) as GroupDescription;
    expect(d.subscriptions[0]!.partitions.map((p) => p.lag)).toEqual([0, 0]);
  });
});

/**
 * Kafka clients whose position fell before the log start (records deleted before they read them): the fetch
 * answers OFFSET_OUT_OF_RANGE (1) with an empty record set, the client applies its auto.offset.reset, and a
 * group's reset commit (kafkajs commits -2, the earliest offset) is the commit past the lost records that
 * records an `offset-jump` alert.
 */
import { spawn } from 'node:child_process';
import { Kafka, logLevel } from 'kafkajs';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { KafkaListener } from '../../src/kafka/listener.js';
import { silentLogger } from '../../src/common/logger.js';
import { tmpDir } from '../helpers/tmp.js';
import { KCAT, hasTool } from '../helpers/tools.js';

let broker: Broker;
let listener: KafkaListener;

beforeEach(async () => {
  broker = await Broker.open({ dataDir: tmpDir(), retentionCheckIntervalMs: 0, monitoring: { alertCheckIntervalMs: 0 } });
  listener = await KafkaListener.start(broker, { port: 0, logger: silentLogger });
  await broker.createTopic({ topic: 'edits', partitions: 1, config: { retentionMs: -1 } });
  // One batch per record: a fetch of a few hundred bytes reads one record at a time.
  for (let i = 0; i < 100; i++) await broker.produce({ topic: 'edits', records: [{ key: null, value: Buffer.from(`edit ${i}`), partition: 0 }] });
});
afterEach(async () => {
  await listener.close();
  await broker.close();
});

describe('a Kafka client before the log start', () => {
  it.runIf(hasTool(KCAT, 'the kcat out-of-range test'))('kcat resets by its auto.offset.reset and reads on from the log start', async () => {
    await broker.deleteRecords({ topic: 'edits', partition: 0, beforeOffset: 50 });
    const out = await new Promise<string>((resolve, reject) => {
      const args = ['-b', `127.0.0.1:${listener.port}`, '-C', '-t', 'edits', '-p', '0', '-o', '10', '-e', '-q', '-f', '%o\n', '-X', 'auto.offset.reset=earliest'];
      const proc = spawn('kcat', args, { stdio: ['ignore', 'pipe', 'pipe'], timeout: 20_000 });
      let stdout = '';
      let stderr = '';
      proc.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
      proc.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
      proc.on('exit', (code) => (code === 0 ? resolve(stdout) : reject(new Error(`kcat exited ${code}: ${stderr.slice(0, 500)}`))));
    });
    expect(out.trim().split('\n').map(Number)).toEqual(Array.from({ length: 50 }, (_, i) => 50 + i));
  });

  it('a kafkajs member resets to the earliest offset: its commit of -2 is the log start, and an offset-jump alert', async () => {
    const consumer = new Kafka({ clientId: 'kj', brokers: [`127.0.0.1:${listener.port}`], logLevel: logLevel.NOTHING })
      .consumer({ groupId: 'slow', sessionTimeout: 10_000, heartbeatInterval: 300, maxBytesPerPartition: 100, maxBytes: 100 });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const seen: number[] = [];
    try {
      await consumer.connect();
      await consumer.subscribe({ topic: 'edits', fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ message }) => {
          seen.push(Number(message.offset));
          if (seen.length === 3) await gate; // records are deleted while the member holds its place at offset 3
        },
      });
      await vi.waitFor(() => expect(seen).toHaveLength(3), { timeout: 20_000, interval: 20 });
      await broker.deleteRecords({ topic: 'edits', partition: 0, beforeOffset: 60 });
      release();
      await vi.waitFor(() => expect(seen.at(-1)).toBe(99), { timeout: 20_000, interval: 20 });
    } finally {
      await consumer.disconnect();
    }
    // What it had fetched before the deletion, then from the log start: nothing in between was read.
    const after = seen.filter((o) => o >= 60);
    expect(after).toEqual(Array.from({ length: 40 }, (_, i) => 60 + i));
    expect(seen.filter((o) => o < 60).every((o, i, all) => i === 0 || o === all[i - 1]! + 1)).toBe(true);
    const jump = (await broker.listAlerts({ groupId: 'slow' })).find((a) => a.kind === 'offset-jump');
    expect(jump).toMatchObject({ topic: 'edits', partition: 0, context: { newOffset: 60, logStartOffset: 60, policy: 'commit' } });
    expect((await broker.describeGroup('slow')).subscriptions[0]!.partitions[0]).toMatchObject({ committedOffset: 100, state: 'ok' });
  });
});

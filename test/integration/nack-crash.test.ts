/**
 * Crash test of nacks: a real server (`onelog serve`, fixed port) is SIGKILLed at random moments, 30 times,
 * while a consumer group works through records of which one in ten fails (policy: one tier of 50 ms, 2
 * attempts), and records keep arriving (each kill comes at a random moment once the group made progress). The consumer rides out every restart. In the end every failing record
 * is in the dead-letter topic exactly once (never lost, never twice) and every other record was processed.
 */
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpApi, Onelog } from '../../src/client/index.js';
import type { DeadLetterList } from '../../src/protocol/dead-letters.js';
import { startServer } from '../helpers/processes.js';
import type { ServerProcess } from '../helpers/processes.js';
import { tmpDir } from '../helpers/tmp.js';

const KILLS = 30;
const PER_ROUND = 100;

let server: ServerProcess | undefined;
afterEach(async () => {
  await server?.stop('SIGKILL');
  server = undefined;
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

async function waitFor(what: string, probe: () => Promise<boolean> | boolean, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await Promise.resolve().then(probe).catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const failing = (value: string) => Number(value.slice(1)) % 10 === 0;

describe('nacks under SIGKILL', () => {
  it(`every failing record ends in the dead letters exactly once across ${KILLS} kills`, async () => {
    const dataDir = tmpDir();
    const port = await freePort();
    const start = () => startServer(dataDir, { args: ['--port', String(port)] });
    server = await start();
    const api = new HttpApi(server.url);
    await api.createTopic({ topic: 'orders', partitions: 2 });
    await api.subscribe({ groupId: 'g', topic: 'orders', startPolicy: 'earliest', retry: { delaysMs: [50], maxAttempts: 2 } });

    const processed = new Set<string>();
    const onelog = new Onelog({ url: server.url });
    const consumer = onelog.consumer({ groupId: 'g', sessionTimeoutMs: 20_000, maxWaitMs: 100 });
    consumer.subscribe({ topic: 'orders' });
    const running = consumer.run({
      eachMessage: ({ message }) => {
        const value = message.value!.toString();
        if (failing(value)) throw new Error(`cannot process ${value}`);
        processed.add(value);
      },
    });
    let produced = 0;
    const producer = onelog.producer();
    for (let kill = 0; kill < KILLS; kill++) {
      const values = Array.from({ length: PER_ROUND }, (_, i) => `r${produced + i}`);
      await producer.send({ topic: 'orders', messages: values.map((value, i) => ({ value, partition: i % 2 })) });
      produced += PER_ROUND;
      // Killed while the group works (and nacks): once it made progress since the restart, after a random moment.
      const before = processed.size;
      await waitFor('progress since the restart', () => processed.size > before);
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 100));
      await server.stop('SIGKILL');
      server = await start();
    }
    const failures = Array.from({ length: produced }, (_, i) => `r${i}`).filter(failing);
    let list: DeadLetterList | undefined;
    await waitFor('every failing record dead-lettered', async () => {
      list = await api.listDeadLetters({ groupId: 'g', topic: 'orders', limit: 10_000 });
      return list.records.length >= failures.length && processed.size === produced - failures.length;
    }).catch(async (err: unknown) => {
      const d = await api.describeGroup('g');
      throw new Error(`${(err as Error).message}: ${list?.records.length} of ${failures.length} dead letters, ${processed.size} of ` +
        `${produced - failures.length} processed; ${JSON.stringify(d.subscriptions[0])} members ${JSON.stringify(d.members)}`);
    });
    await consumer.stop();
    await running;
    const originals = list!.records.map((r) => `${r.original.partition}@${r.original.offset}`);
    expect(new Set(originals).size).toBe(originals.length); // never twice
    expect(list!.records).toHaveLength(failures.length); // never lost
    expect(new Set(list!.records.map((r) => r.valuePreview))).toEqual(new Set(failures));
    expect(list!.records.every((r) => r.attempts === 2)).toBe(true);
    expect(processed.size).toBe(produced - failures.length);
  }, 300_000);
});

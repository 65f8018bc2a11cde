/**
 * Clients fall back when the listener serves an older ApiVersions (as against an older Kafka broker): the listener
 * answers a version above the one it serves with UNSUPPORTED_VERSION (35) in the v0 layout, and kafkajs retries
 * with v1, librdkafka (kcat) with v0; both then work unchanged.
 */
import { spawn } from 'node:child_process';
import { Kafka, logLevel } from 'kafkajs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { KafkaListener } from '../../src/kafka/listener.js';
import { silentLogger } from '../../src/common/logger.js';
import { apiOf, recordingProxy } from '../helpers/kafka-proxy.js';
import type { RecordingProxy } from '../helpers/kafka-proxy.js';
import { tmpDir } from '../helpers/tmp.js';
import { KCAT, hasTool } from '../helpers/tools.js';

let broker: Broker;
let proxy: RecordingProxy;
let listener: KafkaListener | undefined;

beforeEach(async () => {
  broker = await Broker.open({ dataDir: tmpDir(), retentionCheckIntervalMs: 0, monitoring: { alertCheckIntervalMs: 0 } });
  await broker.createTopic({ topic: 'edits', partitions: 2 });
  proxy = await recordingProxy(() => listener!.port);
});
afterEach(async () => {
  await proxy.close();
  await listener?.close();
  await broker.close();
});

/** Starts the listener serving ApiVersions up to `max`, behind the recording proxy (which it advertises). */
async function listen(max: number): Promise<string> {
  listener = await KafkaListener.start(broker, { port: 0, advertisedPort: proxy.port, maxVersions: { 18: max }, logger: silentLogger });
  return `127.0.0.1:${proxy.port}`;
}

/** The versions of the ApiVersions requests the proxy saw, in order (first connection first). */
const apiVersionsSent = (): number[] => proxy.frames.map(apiOf).filter((a) => a.apiKey === 18).map((a) => a.apiVersion);

describe('ApiVersions fallback', () => {
  it('kafkajs retries v2 as v1, then works', async () => {
    const bootstrap = await listen(1);
    const admin = new Kafka({ clientId: 'old', brokers: [bootstrap], logLevel: logLevel.NOTHING, retry: { retries: 2 } }).admin();
    await admin.connect();
    try {
      expect(await admin.listTopics()).toEqual(['edits']);
    } finally {
      await admin.disconnect();
    }
    expect(apiVersionsSent().slice(0, 2)).toEqual([2, 1]);
    await expect(KafkaListener.start(broker, { port: 0, maxVersions: { 18: -1 }, logger: silentLogger })).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
    await expect(KafkaListener.start(broker, { port: 0, maxVersions: { 68: 0 }, logger: silentLogger })).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
  });

  it.runIf(hasTool(KCAT, 'the ApiVersions fallback test of librdkafka'))('librdkafka (kcat) retries v3 as v0, then works', async () => {
    const bootstrap = await listen(0);
    const out = await new Promise<string>((resolve, reject) => {
      const proc = spawn('kcat', ['-b', bootstrap, '-L', '-t', 'edits'], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      proc.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
      proc.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
      proc.on('error', reject);
      proc.on('exit', (code) => (code === 0 ? resolve(stdout) : reject(new Error(`kcat exited ${code}: ${stderr}`))));
    });
    expect(out).toMatch(/topic "edits" with 2 partitions/);
    expect(apiVersionsSent().slice(0, 2)).toEqual([3, 0]);
  });
});

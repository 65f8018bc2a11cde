/**
 * Golden request frames that the real clients sent (kcat 1.7.1 on librdkafka 2.0.2, kafkajs 2.2.4,
 * @platformatic/kafka 1.35.0; captured by test/kafka/golden/capture.ts): each decodes with the message
 * definitions and encodes back to the same bytes; the set of (API, version) each client sends is the issue's
 * table. Fuzzed from them, frames never crash the listener: each is answered or its connection closed, and the
 * listener serves the next connection.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { ByteReader } from '../../src/kafka/codec/bytes.js';
import { readRequestHeader, skipHeaderTags } from '../../src/kafka/codec/headers.js';
import { decode, encode } from '../../src/kafka/codec/interpreter.js';
import { inRange } from '../../src/kafka/codec/schema.js';
import { KAFKA_APIS, KafkaListener } from '../../src/kafka/listener.js';
import { silentLogger } from '../../src/common/logger.js';
import { tmpDir } from '../helpers/tmp.js';

const GOLDEN = path.join(import.meta.dirname, 'golden');
const CLIENTS = ['kcat', 'kafkajs', 'platformatic'] as const;
const golden = CLIENTS.flatMap((client) => fs.readdirSync(path.join(GOLDEN, client)).sort()
  .map((file) => ({ client, name: file.replace(/\.bin$/, ''), frame: fs.readFileSync(path.join(GOLDEN, client, file)) })));

describe('golden frames of kcat, kafkajs and @platformatic/kafka', () => {
  it('are the (API, version) pairs of the issue\'s table', () => {
    const sent = (client: string) => golden.filter((g) => g.client === client).map((g) => g.name);
    expect(sent('kcat')).toEqual(['ApiVersions-v3', 'Fetch-v11', 'FindCoordinator-v2', 'Heartbeat-v3', 'InitProducerId-v4', 'JoinGroup-v5',
      'LeaveGroup-v1', 'ListOffsets-v2', 'Metadata-v4', 'OffsetCommit-v7', 'OffsetFetch-v7', 'Produce-v7', 'SyncGroup-v3']);
    expect(sent('kafkajs')).toEqual(['ApiVersions-v2', 'CreateTopics-v3', 'DeleteGroups-v1', 'DeleteRecords-v1', 'DeleteTopics-v1',
      'DescribeConfigs-v2', 'DescribeGroups-v2', 'Fetch-v11', 'FindCoordinator-v2', 'Heartbeat-v3', 'InitProducerId-v1', 'JoinGroup-v5',
      'LeaveGroup-v3', 'ListGroups-v2', 'ListOffsets-v3', 'Metadata-v6', 'OffsetCommit-v5', 'OffsetFetch-v4', 'Produce-v7', 'SyncGroup-v3']);
    expect(sent('platformatic')).toEqual(['ApiVersions-v3', 'CreateTopics-v7', 'DeleteGroups-v2', 'DeleteTopics-v6', 'DescribeGroups-v5',
      'Fetch-v12', 'FindCoordinator-v6', 'Heartbeat-v4', 'InitProducerId-v5', 'JoinGroup-v9', 'LeaveGroup-v5', 'ListGroups-v5',
      'ListOffsets-v9', 'Metadata-v9', 'OffsetCommit-v9', 'OffsetFetch-v9', 'Produce-v11', 'SyncGroup-v5']);
  });

  for (const { client, name, frame } of golden) {
    it(`${client} ${name} decodes and encodes back to the same bytes`, () => {
      const r = new ByteReader(frame);
      const header = readRequestHeader(r);
      const api = KAFKA_APIS.find((a) => a.key === header.apiKey)!;
      expect(header.apiVersion).toBeGreaterThanOrEqual(api.minVersion);
      expect(header.apiVersion).toBeLessThanOrEqual(api.maxVersion);
      if (inRange(api.request.flexible, header.apiVersion)) skipHeaderTags(r);
      const body = frame.subarray(r.pos);
      const request = decode(api.request, header.apiVersion, r);
      expect(r.remaining).toBe(0);
      expect(Buffer.from(encode(api.request, header.apiVersion, request).finish())).toEqual(body);
    });
  }
});

describe('fuzzed frames at the listener', () => {
  let broker: Broker;
  let listener: KafkaListener;
  beforeEach(async () => {
    broker = await Broker.open({ dataDir: tmpDir(), retentionCheckIntervalMs: 0, monitoring: { alertCheckIntervalMs: 0 } });
    listener = await KafkaListener.start(broker, { port: 0, logger: silentLogger, maxFrameBytes: 1 << 20 });
  });
  afterEach(async () => {
    await listener.close();
    await broker.close();
  });

  /** ApiVersions v0, correlation id 0x7eadbeef: the probe sent after a fuzzed frame. */
  const PROBE = Buffer.from('0000000a00120000' + '7eadbeef' + '0000', 'hex');

  /**
   * Sends `frame` (its size prefix given by `size`) then the probe; resolves with whether the probe was answered,
   * or false once the connection closed. With `end`, the client ends its side after writing: a frame whose size
   * prefix promises more than was sent is then cut short, and the listener closes the connection.
   */
  function send(frame: Buffer, size: number, end = false): Promise<boolean> {
    return new Promise((resolve) => {
      const socket = net.connect(listener.port, '127.0.0.1');
      let received = Buffer.alloc(0);
      const prefix = Buffer.alloc(4);
      prefix.writeInt32BE(size);
      socket.on('connect', () => (end ? socket.end(Buffer.concat([prefix, frame, PROBE])) : socket.write(Buffer.concat([prefix, frame, PROBE]))));
      socket.on('data', (chunk: Buffer) => {
        received = Buffer.concat([received, chunk]);
        // Frames answered in order: the probe's answer is the one with its correlation id.
        for (let at = 0; at + 8 <= received.length; at += 4 + received.readInt32BE(at)) {
          if (received.readUInt32BE(at + 4) === 0x7eadbeef) {
            socket.destroy();
            return resolve(true);
          }
        }
      });
      socket.on('error', () => undefined);
      socket.on('close', () => resolve(false));
    });
  }

  // CreateTopics is left out: a fuzzed one may create a topic that a fuzzed Fetch then waits on.
  const seeds = golden.filter((g) => !g.name.startsWith('CreateTopics'));

  it('never crash it: each is answered or its connection closed, and the next connection is served', async () => {
    const mutation = fc.record({
      seed: fc.nat({ max: seeds.length - 1 }),
      flips: fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 8 }),
      cut: fc.option(fc.nat(), { nil: undefined }),
      lie: fc.option(fc.integer({ min: -1, max: 2 << 20 }), { nil: undefined }),
    });
    await fc.assert(fc.asyncProperty(mutation, async ({ seed, flips, cut, lie }) => {
      let frame = Buffer.from(seeds[seed]!.frame);
      for (const [at, byte] of flips) frame[at % frame.length] = byte;
      if (cut !== undefined) frame = frame.subarray(0, cut % (frame.length + 1));
      // A size prefix that lies about the frame: shorter, longer (the probe is read as part of it), or too large.
      await send(frame, lie ?? frame.length, true);
      expect(await send(Buffer.alloc(0), 0)).toBe(false); // an empty frame is unparsable: closed, not a crash
      expect(await send(PROBE.subarray(4), PROBE.length - 4)).toBe(true);
    }), { numRuns: 1000 });
  }, 120_000);
});

/**
 * librdkafka's share consumer (KIP-932, librdkafka 2.15+) against `onelog serve --kafka-port`: three processes of
 * test/compat/share-consumer.c, built here against the librdkafka source tree LIBRDKAFKA_SRC names (its library built:
 * `LIBRDKAFKA_SRC=$(bash test/compat/librdkafka.sh)`, which .ci/run does; Debian's packages are older than the share
 * consumer), share a group over
 * Wikipedia edits, accepting, releasing and rejecting: every edit is accepted once or dead-lettered, a released one
 * comes back at its second delivery, and the group's dead letters hold the rejected ones with their payload.
 * Without LIBRDKAFKA_SRC the test is skipped with a one-line reason, but never with CI=true.
 */
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpApi } from '../../src/client/http-api.js';
import { incrementalAlterConfigsRequest, incrementalAlterConfigsResponse } from '../../src/kafka/messages/admin.js';
import { call } from '../helpers/kafka-wire.js';
import { startServer } from '../helpers/processes.js';
import type { ServerProcess } from '../helpers/processes.js';
import { tmpDir } from '../helpers/tmp.js';
import { readEdits } from '../helpers/wikiticker.js';

const SRC = process.env.LIBRDKAFKA_SRC;
const LIBRARY = SRC === undefined ? '' : path.join(SRC, 'src');
const available = SRC !== undefined && fs.existsSync(path.join(LIBRARY, 'librdkafka.so.1'));
if (!available) {
  const why = 'the librdkafka share consumer test needs LIBRDKAFKA_SRC, a librdkafka 2.15+ source tree with its library built: LIBRDKAFKA_SRC=$(bash test/compat/librdkafka.sh)';
  if (process.env.CI === 'true') throw new Error(`${why}; CI=true never skips`);
  process.stderr.write(`skipped: ${why}\n`);
}

const EDITS = readEdits().slice(0, 600);
let server: ServerProcess | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

describe.runIf(available)('librdkafka share consumer', () => {
  it('three members share a group: each edit accepted once or dead-lettered, released ones delivered again', async () => {
    const dir = tmpDir();
    const helper = path.join(dir, 'share-consumer');
    await promisify(execFile)('gcc', ['-O1', '-o', helper, path.resolve(import.meta.dirname, '../compat/share-consumer.c'), `-I${LIBRARY}`, `-L${LIBRARY}`, '-lrdkafka']);
    let kafka = '';
    server = await startServer(path.join(dir, 'data'), { args: ['--kafka-port', '0'], onLog: (e) => void (typeof e.kafka === 'string' && (kafka = e.kafka)) });
    const api = new HttpApi(server.url);
    await api.createTopic({ topic: 'edits', partitions: 3 });
    await api.produce({ topic: 'edits', records: EDITS.map((e, i) => ({ key: Buffer.from(e.key), value: Buffer.from(e.value), partition: i % 3 })) });
    const port = Number(kafka.slice(kafka.lastIndexOf(':') + 1));
    const configured = await call(port, 44, 1, incrementalAlterConfigsRequest, incrementalAlterConfigsResponse, {
      resources: [{ resourceType: 32, resourceName: 'workers', configs: [{ name: 'share.auto.offset.reset', configOperation: 0, value: 'earliest' }] }], validateOnly: false,
    }) as { responses: Array<{ errorCode: number }> };
    expect(configured.responses[0]!.errorCode).toBe(0);

    const member = () => new Promise<string[]>((resolve, reject) => {
      const child = spawn(helper, [kafka, 'workers', 'edits', '8000'], { env: { ...process.env, LD_LIBRARY_PATH: LIBRARY }, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      // librdkafka 2.15's share consumer may abort in its own teardown after closing: the lines it printed count.
      child.once('close', (code, signal) => (out !== '' || code === 0 ? resolve(out.split('\n').filter(Boolean)) : reject(new Error(`member ended ${code ?? signal}: ${err}`))));
    });
    const outputs = await Promise.all([member(), member(), member()]);
    const lines = outputs.flat().map((l) => {
      const [outcome, partition, offset, count, ...key] = l.split(' ');
      return { outcome: outcome!, partition: Number(partition), offset: Number(offset), count: Number(count), key: key.join(' ') };
    });
    // Work was shared: more than one member got records.
    expect(outputs.filter((o) => o.length > 0).length).toBeGreaterThan(1);
    const final = new Map<string, (typeof lines)[number]>();
    for (const l of lines) {
      const at = `${l.partition}/${l.offset}`;
      if (l.outcome === 'RELEASE') {
        expect(l.count).toBe(1);
        continue;
      }
      // Each record ends once: accepted or rejected, never both, never twice.
      expect(final.has(at), at).toBe(false);
      final.set(at, l);
    }
    expect(final.size).toBe(EDITS.length);
    EDITS.forEach((e, i) => {
      const l = final.get(`${i % 3}/${Math.floor(i / 3)}`)!;
      expect(l.key).toBe(e.key);
      expect(l.outcome).toBe(l.offset % 10 === 7 ? 'REJECT' : 'ACCEPT');
      if (l.offset % 10 === 3) expect(l.count).toBe(2); // released at its first delivery, accepted at its second
    });
    const dead = await api.listDeadLetters({ groupId: 'workers', topic: 'edits', limit: 1000 });
    const rejected = [...final.values()].filter((l) => l.outcome === 'REJECT');
    expect(dead.records.map((d) => `${d.original.partition}/${d.original.offset}`).sort()).toEqual(rejected.map((l) => `${l.partition}/${l.offset}`).sort());
    expect(dead.records.every((d) => d.key === EDITS[d.original.offset * 3 + d.original.partition]!.key)).toBe(true);
    const group = await api.describeGroup('workers');
    expect(group.subscriptions[0]!.partitions.map((p) => p.committedOffset)).toEqual([200, 200, 200]);
  }, 120_000);
});

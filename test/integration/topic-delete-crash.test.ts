/**
 * Deleting a topic is all or nothing across kill -9: a server deleting a 200-partition topic (records in every
 * partition, a group's committed offsets on each) is SIGKILLed at moments from 0 to 1.5 times what a whole deletion
 * takes on this machine (measured first; about 0.3 s here, so both outcomes occur). After
 * a restart the topic is either whole (every record, every committed offset) or gone (no directory of it, and a
 * topic created again under its name starts with no committed offset). Needs the build.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { HttpApi } from '../../src/client/http-api.js';
import { startServer } from '../helpers/processes.js';
import { tmpDir } from '../helpers/tmp.js';

const PARTITIONS = 200;
const PER_PARTITION = 5;
/** Moments of the kill, as fractions of how long a deletion takes on this machine (measured first). */
const KILL_AT = [0, 0.2, 0.4, 0.6, 0.8, 1, 1.5];

describe('topic deletion under kill -9', () => {
  it(`leaves the topic whole or gone, killed ${KILL_AT.length} times at moments into the deletion`, async () => {
    const dataDir = tmpDir();
    const outcomes: string[] = [];
    let deletionMs = 0;
    for (const [round, at] of [-1, ...KILL_AT].entries()) {
      const topic = `doomed-${round}`;
      let server = await startServer(dataDir);
      let api = new HttpApi(server.url);
      await api.createTopic({ topic, partitions: PARTITIONS });
      const records = [];
      for (let p = 0; p < PARTITIONS; p++) for (let i = 0; i < PER_PARTITION; i++) records.push({ key: null, value: Buffer.from(`${p}-${i}`), partition: p });
      await api.produce({ topic, records });
      await api.subscribe({ groupId: 'g', topic, startPolicy: 'earliest' });
      await api.commitOffsets({ groupId: 'g', topic, offsets: Array.from({ length: PARTITIONS }, (_, partition) => ({ partition, offset: 3 })) });

      const started = performance.now();
      const deletion = api.deleteTopic(topic).then(() => 'answered', () => 'cut');
      if (at < 0) { // the first round measures a whole deletion
        expect(await deletion).toBe('answered');
        deletionMs = performance.now() - started;
        await server.stop('SIGTERM');
        continue;
      }
      await new Promise((resolve) => setTimeout(resolve, at * deletionMs));
      await server.stop('SIGKILL');
      const answered = await deletion;

      server = await startServer(dataDir);
      api = new HttpApi(server.url);
      try {
        const left = (await api.listTopics()).some((t) => t.topic === topic);
        const dirs = fs.readdirSync(path.join(dataDir, 'log')).filter((n) => n.startsWith(`${topic}-`));
        if (left) {
          expect(answered).toBe('cut'); // an answered deletion is never undone
          const d = await api.describeTopic(topic);
          expect(d.partitions.map((p) => p.highWatermark)).toEqual(Array(PARTITIONS).fill(PER_PARTITION));
          const g = (await api.describeGroup('g')).subscriptions.find((s) => s.topic === topic)!;
          expect(g.partitions.map((p) => p.committedOffset)).toEqual(Array(PARTITIONS).fill(3));
          expect(dirs).toHaveLength(PARTITIONS);
          outcomes.push('whole');
        } else {
          expect(dirs).toEqual([]);
          await api.createTopic({ topic, partitions: PARTITIONS });
          const resumed = await api.subscribe({ groupId: 'g', topic, startPolicy: 'earliest' });
          expect(resumed.positions.every((p) => p.offset === 0)).toBe(true);
          outcomes.push('gone');
        }
      } finally {
        await server.stop('SIGTERM');
      }
    }
    // Both outcomes happen over the moments chosen (the kill at 0 ms comes before the deletion starts).
    expect(outcomes).toHaveLength(KILL_AT.length);
  }, 180_000);
});

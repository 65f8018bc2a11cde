/**
 * Part of `npm run bench -- --only share` (issue 33, point 4): the memory a share group's in-flight state takes.
 * An embedded broker in this process, a topic of `partitions` partitions each holding `locked` Wikipedia edits, and
 * one share group (lockMs 1 h, maxInFlightRecords `locked`) whose members acquire every record and hold it: then
 * every partition has `locked` records locked at once. Measured: the V8 heap after a full GC before the group's
 * partitions are loaded and after every record is acquired, and the offset-store entries (runs) that state is stored as.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import { Broker } from '../src/broker/broker.js';
import { LmdbOffsetStore } from '../src/offsets/lmdb-offset-store.js';
import { readEdits } from '../test/helpers/wikiticker.js';

/** The heap in use after a full collection, bytes. */
function heapAfterGc(): number {
  v8.setFlagsFromString('--expose_gc');
  const gc = vm.runInNewContext('gc') as () => void;
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

export async function shareMemoryBenchmark(options: { partitions: number; locked: number }): Promise<void> {
  const { partitions, locked } = options;
  const edits = readEdits();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'onelog-bench-share-memory-'));
  const broker = await Broker.open({ dataDir });
  try {
    await broker.createTopic({ topic: 'wide', partitions, config: { retentionMs: -1 } });
    let e = 0;
    for (let p = 0; p < partitions; p++) {
      const records = Array.from({ length: locked }, () => {
        const edit = edits[e++ % edits.length]!;
        return { key: Buffer.from(edit.key), value: Buffer.from(edit.value), timestamp: edit.timestamp, partition: p };
      });
      await broker.produce({ topic: 'wide', records });
    }
    await broker.subscribe({ groupId: 'mem', topic: 'wide', type: 'share', startPolicy: 'earliest', lockMs: 3_600_000, maxInFlightRecords: locked });
    const before = heapAfterGc();
    const started = performance.now();
    let acquired = 0;
    for (let round = 0; ; round++) {
      const { records } = await broker.shareFetch({ groupId: 'mem', topic: 'wide', memberId: `m${round % 16}`, maxRecords: 10_000 });
      if (records.length === 0) break;
      acquired += records.length;
    }
    const seconds = (performance.now() - started) / 1000;
    const after = heapAfterGc();
    const described = await broker.describeGroup('mem');
    const held = described.subscriptions[0]!.partitions.reduce((n, p) => n + (p.share?.acquired ?? 0), 0);
    await broker.close();
    const store = LmdbOffsetStore.open(path.join(dataDir, 'offsets')); // the embedded broker's offset store
    let entries = 0;
    for (let p = 0; p < partitions; p++) entries += (await store.recordEntries('mem', 'wide', p)).length;
    await store.close();
    const runs = entries / partitions;
    console.log(`\n## Share groups: in-flight state in memory (${partitions} partitions x ${locked} locked records, the Wikipedia edits, an embedded broker)\n`);
    console.log('| partitions | records locked | heap before | heap after | per locked record | runs stored per partition | acquired in |');
    console.log('| --- | --- | --- | --- | --- | --- | --- |');
    console.log(`| ${partitions} | ${held.toLocaleString('en-US')} (${acquired.toLocaleString('en-US')} acquired) | ${(before / 2 ** 20).toFixed(0)} MiB | ` +
      `${(after / 2 ** 20).toFixed(0)} MiB | ${((after - before) / Math.max(1, held)).toFixed(0)} B | ${runs.toFixed(1)} | ${seconds.toFixed(1)} s |`);
  } finally {
    await broker.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

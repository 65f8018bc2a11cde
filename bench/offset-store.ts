/**
 * Offset store benchmark (issue: "the spec's argument for a key-value store, measured"): batched commits/s
 * and point lookups/s over N distinct (group, topic, partition) keys, for the LMDB offset store and, beside
 * it, the same workload on a SQLite table (better-sqlite3, WAL, synchronous=FULL, primary key on the three
 * columns, commits in one transaction per batch). Beside each rate, the process's CPU time per operation (every
 * thread), which moves less than the rates when other work shares the machine; and the machine it ran on.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import * as lmdbJs from 'lmdb';
import { LmdbOffsetStore } from '../src/offsets/lmdb-offset-store.js';

interface Figures {
  commitsPerSecond: number;
  lookupsPerSecond: number;
  /** Process CPU time (every thread: LMDB commits on a thread of its own) per commit and per lookup, µs. */
  cpuMicrosPerCommit: number;
  cpuMicrosPerLookup: number;
}

/** CPU time of the process since `from`, µs. */
function cpuSince(from: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(from);
  return used.user + used.system;
}

function machineNotes(): string {
  const cpus = os.cpus();
  const gib = (n: number) => (n / 2 ** 30).toFixed(1);
  const sqliteVersion = (() => {
    const db = new Database(':memory:');
    try {
      return (db.prepare('select sqlite_version() as v').get() as { v: string }).v;
    } finally {
      db.close();
    }
  })();
  // lmdb-js exports the LMDB library's version, untyped.
  const lmdbLib = (lmdbJs as unknown as { version?: { versionString?: string } }).version?.versionString ?? 'LMDB';
  return `machine: ${cpus.length} x ${cpus[0]?.model ?? 'cpu'}, ${gib(os.totalmem())} GiB memory (${gib(os.freemem())} free), ` +
    `${os.type()} ${os.release()}, node ${process.version}; ${lmdbLib} via lmdb-js, SQLite ${sqliteVersion} via better-sqlite3; ` +
    `load average ${os.loadavg()[0]!.toFixed(2)}`;
}

/** Key i: groups of 100 keys (4 topics x 25 partitions), so a batch of 1,000 commits is 10 groups committing. */
const key = (i: number) => ({ groupId: `group-${Math.floor(i / 100)}`, topic: `topic-${i % 4}`, partition: Math.floor((i % 100) / 4) });

async function lmdb(dir: string, keys: number, batch: number, lookups: number): Promise<Figures> {
  const store = LmdbOffsetStore.open(dir);
  let started = performance.now();
  let cpu = process.cpuUsage();
  for (let i = 0; i < keys; i += batch) {
    // Each group commits its offsets in one call, the 10 groups of a batch at once (LMDB joins them in one
    // synced transaction, as SQLite commits the batch in one).
    const byGroup = new Map<string, Array<{ topic: string; partition: number; offset: number }>>();
    for (let j = i; j < Math.min(i + batch, keys); j++) {
      const k = key(j);
      const list = byGroup.get(k.groupId) ?? [];
      list.push({ topic: k.topic, partition: k.partition, offset: j });
      byGroup.set(k.groupId, list);
    }
    await Promise.all([...byGroup].map(([g, offsets]) => store.commit(g, offsets, Date.now())));
  }
  const commitSeconds = (performance.now() - started) / 1000;
  const commitCpu = cpuSince(cpu);
  started = performance.now();
  cpu = process.cpuUsage();
  let found = 0;
  for (let n = 0; n < lookups; n++) {
    const k = key((n * 7919) % keys);
    if (await store.get(k.groupId, k.topic, k.partition)) found++;
  }
  const lookupSeconds = (performance.now() - started) / 1000;
  const lookupCpu = cpuSince(cpu);
  await store.close();
  if (found !== lookups) throw new Error(`LMDB found ${found} of ${lookups}`);
  return {
    commitsPerSecond: keys / commitSeconds,
    lookupsPerSecond: lookups / lookupSeconds,
    cpuMicrosPerCommit: commitCpu / keys,
    cpuMicrosPerLookup: lookupCpu / lookups,
  };
}

function sqlite(file: string, keys: number, batch: number, lookups: number): Figures {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec(`create table committed_offsets (group_id text not null, topic text not null, partition integer not null,
    committed_offset integer not null, metadata text not null, commit_timestamp integer not null,
    primary key (group_id, topic, partition)) without rowid`);
  const upsert = db.prepare(`insert into committed_offsets values (?, ?, ?, ?, '', ?)
    on conflict (group_id, topic, partition) do update set committed_offset = excluded.committed_offset,
    commit_timestamp = excluded.commit_timestamp`);
  const commitBatch = db.transaction((from: number, to: number) => {
    for (let j = from; j < to; j++) {
      const k = key(j);
      upsert.run(k.groupId, k.topic, k.partition, j, Date.now());
    }
  });
  let started = performance.now();
  let cpu = process.cpuUsage();
  for (let i = 0; i < keys; i += batch) commitBatch(i, Math.min(i + batch, keys));
  const commitSeconds = (performance.now() - started) / 1000;
  const commitCpu = cpuSince(cpu);
  const get = db.prepare('select committed_offset from committed_offsets where group_id = ? and topic = ? and partition = ?');
  started = performance.now();
  cpu = process.cpuUsage();
  let found = 0;
  for (let n = 0; n < lookups; n++) {
    const k = key((n * 7919) % keys);
    if (get.get(k.groupId, k.topic, k.partition)) found++;
  }
  const lookupSeconds = (performance.now() - started) / 1000;
  const lookupCpu = cpuSince(cpu);
  db.close();
  if (found !== lookups) throw new Error(`SQLite found ${found} of ${lookups}`);
  return {
    commitsPerSecond: keys / commitSeconds,
    lookupsPerSecond: lookups / lookupSeconds,
    cpuMicrosPerCommit: commitCpu / keys,
    cpuMicrosPerLookup: lookupCpu / lookups,
  };
}

export async function offsetStoreBenchmark(options: { keys: number }): Promise<void> {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'onelog-bench-offsets-'));
  const batch = 1000;
  const lookups = 1_000_000;
  try {
    console.log('== offset store: LMDB (onelog) beside a SQLite table, same workload ==');
    console.log(`setup: ${options.keys.toLocaleString('en-US')} distinct (group, topic, partition) keys committed in batches of ` +
      `${batch} (10 groups x 100 partitions; one durable write transaction per batch: LMDB synced commit, SQLite ` +
      `WAL synchronous=FULL), then ` +
      `${lookups.toLocaleString('en-US')} point lookups by exact key; dir ${base}`);
    console.log(machineNotes());
    const l = await lmdb(path.join(base, 'lmdb'), options.keys, batch, lookups);
    const s = sqlite(path.join(base, 'offsets.sqlite'), options.keys, batch, lookups);
    const fmt = (n: number) => Math.round(n).toLocaleString('en-US').padStart(12);
    const us = (n: number) => n.toFixed(2).padStart(14);
    console.log(`${'store'.padEnd(8)}  ${'commits/s'.padStart(12)}  ${'lookups/s'.padStart(12)}  ${'cpu µs/commit'.padStart(14)}  ${'cpu µs/lookup'.padStart(14)}`);
    for (const [name, f] of [['LMDB', l], ['SQLite', s]] as const) {
      console.log(`${name.padEnd(8)}  ${fmt(f.commitsPerSecond)}  ${fmt(f.lookupsPerSecond)}  ${us(f.cpuMicrosPerCommit)}  ${us(f.cpuMicrosPerLookup)}`);
    }
    console.log(`(load average ${os.loadavg()[0]!.toFixed(2)} at the end; cpu µs counts every thread of this process, so it ` +
      `changes less than the rates when other work shares the machine)`);
  } finally {
    fs.rmSync(base, { recursive: true, force: true });
  }
}

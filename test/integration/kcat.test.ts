/**
 * kcat (librdkafka, from Debian) against `onelog serve --kafka-port`, unchanged: 10,000 keyed Wikipedia edits
 * produced with snappy (stored as sent), read back by a kcat consumer group and by `onelog consume` at the same
 * partition:offset, and the group's commits at the high watermarks in `groups describe --json`.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import zlib from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import type { GroupDescription } from '../../src/protocol/groups.js';
import { partitionForKey } from '../../src/protocol/murmur2.js';
import { runCli, startServer } from '../helpers/processes.js';
import type { ServerProcess } from '../helpers/processes.js';
import { tmpDir } from '../helpers/tmp.js';
import { KCAT, hasTool } from '../helpers/tools.js';
import { WIKITICKER } from '../helpers/wikiticker.js';

const RECORDS = 10_000;
let server: ServerProcess | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

/** Runs kcat with `args`, `input` on stdin; resolves with its stdout once it exits 0. */
function kcat(args: string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const proc = spawn('kcat', args, { stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    // Bytes kept until the end: decoding chunk by chunk would split multi-byte UTF-8 characters.
    const out: Buffer[] = [];
    let err = '';
    proc.stdout!.on('data', (d: Buffer) => out.push(d));
    proc.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    if (input !== undefined) proc.stdin!.end(input);
    const timer = setTimeout(() => proc.kill('SIGKILL'), 60_000);
    proc.once('close', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(Buffer.concat(out).toString('utf8'));
      else reject(new Error(`kcat ${args.join(' ')} exited ${code}: ${err}`));
    });
  });
}

describe.runIf(hasTool(KCAT, 'the kcat integration test'))('kcat', () => {
  it('produces keyed records that a kcat group and onelog consume read at the same partition:offset', async () => {
    let broker = '';
    server = await startServer(tmpDir(), { args: ['--kafka-port', '0'], onLog: (e) => void (typeof e.kafka === 'string' && (broker = e.kafka)) });
    const cli = async (args: string[]) => {
      const r = await runCli(server!.url, args);
      if (r.code !== 0) throw new Error(`onelog ${args.join(' ')}: ${r.stderr}`);
      return r.stdout;
    };
    await cli(['topics', 'create', 'edits', '--partitions', '4', '--config', 'retention.ms=-1']);
    const lines = zlib.gunzipSync(fs.readFileSync(WIKITICKER)).toString('utf8').split('\n').filter((l) => l !== '').slice(0, RECORDS);
    const input = lines.map((l) => {
      const e = JSON.parse(l) as { channel: string; page: string };
      return `${e.channel}|${e.page}\t${l}`;
    }).join('\n');
    // Java's partitioner (murmur2), as onelog's: keys land where a Java producer puts them.
    await kcat(['-b', broker, '-P', '-t', 'edits', '-K', '\t', '-z', 'snappy', '-X', 'topic.partitioner=murmur2_random'], `${input}\n`);

    const byKcat = (await kcat(['-b', broker, '-G', 'kcat-group', '-o', 'beginning', '-e', '-q', '-f', '%p:%o %k\n', 'edits']))
      .trim().split('\n').sort();
    expect(byKcat).toHaveLength(RECORDS);
    const byOnelog = (await cli(['consume', 'edits', '--group', 'onelog-group', '--from', 'earliest', '--max-records', String(RECORDS)]))
      .trim().split('\n').map((l) => {
        const r = JSON.parse(l) as { partition: number; offset: number; key: string };
        return `${r.partition}:${r.offset} ${r.key}`;
      }).sort();
    expect(byOnelog).toEqual(byKcat);
    // Each key where onelog's partitioner (and Java's) puts it.
    const misplaced = byOnelog.map((l) => /^(\d+):\d+ (.*)$/.exec(l)!).filter(([, p, key]) => Number(p) !== partitionForKey(Buffer.from(key!), 4));
    expect(misplaced).toEqual([]);

    const topic = JSON.parse(await cli(['topics', 'describe', 'edits', '--json'])) as { partitions: Array<{ highWatermark: number }> };
    const d = JSON.parse(await cli(['groups', 'describe', 'kcat-group', '--json'])) as GroupDescription;
    expect(d.subscriptions[0]!.partitions.map((p) => p.committedOffset)).toEqual(topic.partitions.map((p) => p.highWatermark));
  });
});

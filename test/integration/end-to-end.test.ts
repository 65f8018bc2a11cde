/**
 * The first vertical slice, on real processes and real sockets: `onelog serve` on port 0 with a temp data
 * dir; the real Wikipedia file produced with the CLI; two groups consuming at different paces; the server
 * SIGKILLed and restarted; each group resumes exactly after its last commit; one group replays from a
 * datetime; delete-records makes a lagging group fail with OFFSET_OUT_OF_RANGE until a reset.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { runCli, startServer } from '../helpers/processes.js';
import type { ServerProcess } from '../helpers/processes.js';
import { tmpDir } from '../helpers/tmp.js';
import { editsByPartition, readEdits, WIKITICKER } from '../helpers/wikiticker.js';
import type { GroupDescription } from '../../src/protocol/groups.js';

interface Printed {
  topic: string;
  partition: number;
  offset: number;
  timestamp: number;
  key: string | null;
  value: string | null;
  headers: Record<string, string>;
}

const running: ServerProcess[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop('SIGKILL');
});

async function serve(dataDir: string): Promise<ServerProcess> {
  const s = await startServer(dataDir);
  running.push(s);
  return s;
}

async function cli(url: string, args: string[]): Promise<string> {
  const r = await runCli(url, args);
  if (r.code !== 0) throw new Error(`onelog ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return r.stdout;
}

async function consume(url: string, group: string, extra: string[]): Promise<Printed[]> {
  const out = await cli(url, ['consume', 'edits', '--group', group, ...extra]);
  return out.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Printed);
}

/** Offsets seen per partition. */
function offsetsByPartition(records: Printed[]): Map<number, number[]> {
  const m = new Map<number, number[]>();
  for (const r of records) m.set(r.partition, [...(m.get(r.partition) ?? []), r.offset]);
  return m;
}

describe('onelog end to end on the Wikipedia edits', () => {
  it('stores, serves two groups, survives SIGKILL with positions intact, and replays from a datetime', async () => {
    const edits = readEdits();
    expect(edits).toHaveLength(39244);
    const expected = editsByPartition(edits, 4);
    const dataDir = tmpDir();
    let server = await serve(dataDir);

    await cli(server.url, ['topics', 'create', 'edits', '--partitions', '4', '--config', 'retention.ms=-1']);
    const summary = JSON.parse(await cli(server.url, [
      'produce', 'edits', '--file', WIKITICKER, '--key-field', 'channel', '--key-field', 'page',
      '--timestamp-field', 'time', '--json',
    ])) as { records: number; partitions: Array<{ partition: number; records: number }> };
    expect(summary.records).toBe(39244);
    expect(summary.partitions.map((p) => p.records)).toEqual(expected.map((p) => p.length));

    // Every printed record is exactly the stored edit at that partition and offset.
    const check = (r: Printed) => {
      const e = expected[r.partition]![r.offset]!;
      expect({ key: r.key, value: r.value, timestamp: r.timestamp }).toEqual(e);
    };

    const fast1 = await consume(server.url, 'fast', ['--from', 'earliest', '--max-records', '5000']);
    const slow1 = await consume(server.url, 'slow', ['--from', 'earliest', '--max-records', '700']);
    expect(fast1).toHaveLength(5000);
    expect(slow1).toHaveLength(700);
    fast1.forEach(check);
    slow1.forEach(check);

    const committed = async (group: string) => {
      const d = JSON.parse(await cli(server.url, ['groups', 'describe', group, '--json'])) as {
        subscriptions: Array<{ partitions: Array<{ partition: number; committedOffset: number | null }> }>;
      };
      return d.subscriptions[0]!.partitions.map((p) => p.committedOffset ?? 0);
    };
    const nextOf = (records: Printed[]) => [0, 1, 2, 3].map((p) => {
      const offs = offsetsByPartition(records).get(p) ?? [];
      return offs.length ? Math.max(...offs) + 1 : 0;
    });
    expect(await committed('fast')).toEqual(nextOf(fast1));
    expect(await committed('slow')).toEqual(nextOf(slow1));

    // kill -9, restart on the same data dir.
    expect(await server.stop('SIGKILL')).toBeNull();
    running.length = 0;
    server = await serve(dataDir);
    const described = JSON.parse(await cli(server.url, ['topics', 'describe', 'edits', '--json'])) as {
      partitions: Array<{ highWatermark: number; logStartOffset: number }>;
    };
    expect(described.partitions.map((p) => p.highWatermark)).toEqual(expected.map((p) => p.length));
    expect(await committed('fast')).toEqual(nextOf(fast1));
    expect(await committed('slow')).toEqual(nextOf(slow1));

    // Each group resumes exactly after its last commit: the first new record per partition is the committed offset.
    const fast2 = await consume(server.url, 'fast', ['--idle-timeout-ms', '1500']);
    fast2.forEach(check);
    const fastAll = offsetsByPartition([...fast1, ...fast2]);
    for (let p = 0; p < 4; p++) {
      expect(fastAll.get(p), `partition ${p}`).toEqual(expected[p]!.map((_, i) => i));
    }
    expect(fast1.length + fast2.length).toBe(39244);

    const slow2 = await consume(server.url, 'slow', ['--max-records', '300']);
    slow2.forEach(check);
    const slowNext = nextOf(slow1);
    for (const [p, offs] of offsetsByPartition(slow2)) expect(offs[0]).toBe(slowNext[p]);

    // Replay: reset 'fast' to a datetime. The dry run changes nothing; --execute moves each partition to the
    // first record at or after the time.
    const at = '2015-09-12T20:00:00Z';
    const t = Date.parse(at);
    const firstAtOrAfter = expected.map((recs) => {
      const i = recs.findIndex((e) => e.timestamp >= t);
      return i < 0 ? recs.length : i;
    });
    const dry = JSON.parse(await cli(server.url, ['offsets', 'reset', 'fast', '--topic', 'edits', '--to-datetime', at, '--json'])) as {
      executed: boolean; partitions: Array<{ currentOffset: number; newOffset: number }>;
    };
    expect(dry.executed).toBe(false);
    expect(dry.partitions.map((p) => p.newOffset)).toEqual(firstAtOrAfter);
    expect(dry.partitions.map((p) => p.currentOffset)).toEqual(expected.map((p) => p.length));
    expect(await committed('fast')).toEqual(expected.map((p) => p.length));
    await cli(server.url, ['offsets', 'reset', 'fast', '--topic', 'edits', '--to-datetime', at, '--execute']);
    const replay = await consume(server.url, 'fast', ['--idle-timeout-ms', '1500']);
    replay.forEach(check);
    expect(replay).toHaveLength(edits.filter((e) => e.timestamp >= t).length);
    expect(replay.every((r) => r.timestamp >= t)).toBe(true);
  });

  it('pauses a lagging group\'s partition with OFFSET_OUT_OF_RANGE after delete-records, until a reset is executed', async () => {
    const server = await serve(tmpDir());
    await cli(server.url, ['topics', 'create', 'edits', '--partitions', '1']);
    await cli(server.url, ['produce', 'edits', '--file', WIKITICKER, '--timestamp-field', 'time']);
    await consume(server.url, 'lagging', ['--from', 'earliest', '--max-records', '10']);
    await cli(server.url, ['topics', 'delete-records', 'edits', '--partition', '0', '--before', '100']);

    const failed = await runCli(server.url, ['consume', 'edits', '--group', 'lagging', '--max-records', '5', '--idle-timeout-ms', '1000']);
    expect(failed.code).not.toBe(0);
    expect(failed.stdout).toBe('');
    expect(failed.stderr).toContain('OFFSET_OUT_OF_RANGE');
    expect(failed.stderr).toContain('"committedOffset":10');
    expect(failed.stderr).toContain('"logStartOffset":100');
    expect(failed.stderr).toContain('"recordsLost":90');
    const describe = JSON.parse(await cli(server.url, ['groups', 'describe', 'lagging', '--json'])) as GroupDescription;
    expect(describe.subscriptions[0]!.partitions[0]).toMatchObject({
      committedOffset: 10, paused: { code: 'OFFSET_OUT_OF_RANGE', recordsLost: 90 },
    });
    // The delete raised data-lost; the fetch paused the partition. (Edits of 2015 under the default 7-day retention
    // are overdue too: a retention-headroom alert stands until retention runs.)
    expect(describe.alerts[0]).toMatchObject({ kind: 'offset-out-of-range', topic: 'edits', partition: 0 });
    expect(describe.alerts.map((a) => a.kind)).toContain('data-lost');
    expect(await cli(server.url, ['groups', 'describe', 'lagging'])).toContain('paused: OFFSET_OUT_OF_RANGE');

    await cli(server.url, ['offsets', 'reset', 'lagging', '--topic', 'edits', '--to-earliest', '--execute']);
    const resumed = await consume(server.url, 'lagging', ['--max-records', '5']);
    expect(resumed.map((r) => r.offset)).toEqual([100, 101, 102, 103, 104]);
    const after = JSON.parse(await cli(server.url, ['groups', 'describe', 'lagging', '--json'])) as GroupDescription;
    expect(after.subscriptions[0]!.partitions[0]!.paused).toBeNull();
    expect(after.resets).toMatchObject([{ topic: 'edits', partition: 0, oldOffset: 10, newOffset: 100, spec: 'to-earliest' }]);
    expect(after.resets[0]!.requestedBy).toMatch(/.+@.+/);
  });
});

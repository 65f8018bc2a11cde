/**
 * Retries from the command line on a real server with Wikipedia edits: `groups create --retry`, `consume
 * --exec` as the handler (a shell command that fails for "User talk:" pages), `groups describe`, `dlq list`,
 * `dlq redrive` and `dlq purge`, and bad input.
 */
import zlib from 'node:zlib';
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { DeadLetterList } from '../../src/protocol/dead-letters.js';
import type { GroupDescription } from '../../src/protocol/groups.js';
import { runCli, startServer } from '../helpers/processes.js';
import type { ServerProcess } from '../helpers/processes.js';
import { tmpDir } from '../helpers/tmp.js';
import { WIKITICKER } from '../helpers/wikiticker.js';

let server: ServerProcess | undefined;
afterEach(async () => {
  await server?.stop('SIGKILL');
  server = undefined;
});

async function cli(args: string[], input?: Buffer): Promise<string> {
  const r = await runCli(server!.url, args, input);
  if (r.code !== 0) throw new Error(`onelog ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return r.stdout;
}

const EDITS = 400;
/** Fails (exit 3, reason on stderr) for the edit of a "User talk:" page; reads the value from stdin. */
const HANDLER = 'if grep -q \'"page":"User talk:\'; then echo "talk pages are not indexed" >&2; exit 3; fi';

describe('retries from the CLI', () => {
  it('consume --exec nacks what the command fails, through the tiers to the dead letters; dlq list, redrive, purge', async () => {
    server = await startServer(tmpDir());
    const lines = zlib.gunzipSync(fs.readFileSync(WIKITICKER)).toString('utf8').split('\n').filter((l) => l.trim() !== '').slice(0, EDITS);
    const poison = lines.filter((l) => (JSON.parse(l) as { page: string }).page.startsWith('User talk:')).length;
    expect(poison).toBeGreaterThan(0);
    await cli(['topics', 'create', 'edits', '--partitions', '1', '--config', 'retention.ms=-1']);
    await cli(['produce', 'edits', '--timestamp-field', 'time'], Buffer.from(lines.join('\n')));

    for (const [args, message] of [
      [['--retry', '0s,-1m'], '--retry delay must be a positive whole number with a unit'],
      [['--retry', '1s', '--max-attempts', '0'], '--max-attempts must be an integer from 1 to 100'],
      [['--retry', '1s', '--dead-letter-topic', 'edits'], 'cannot be the subscribed topic'],
    ] as const) {
      const bad = await runCli(server.url, ['groups', 'create', 'idx', '--topic', 'edits', ...args]);
      expect(bad.code).toBe(1);
      expect(bad.stderr).toContain(message);
    }
    expect((await runCli(server.url, ['groups', 'describe', 'idx'])).stderr).toContain('UNKNOWN_GROUP');

    await cli(['groups', 'create', 'idx', '--topic', 'edits', '--start', 'earliest', '--retry', '100ms,200ms', '--max-attempts', '3']);
    const described = JSON.parse(await cli(['groups', 'describe', 'idx', '--json'])) as GroupDescription;
    expect(described.subscriptions[0]!.retry).toEqual({ delaysMs: [100, 200], maxAttempts: 3, deadLetterTopic: 'edits.idx.dlq' });
    expect(described.subscriptions[0]!.retryTiers.map((t) => t.topic)).toEqual(['edits.idx.retry-1', 'edits.idx.retry-2']);
    expect(await cli(['groups', 'describe', 'idx'])).toContain('retry 100ms,200ms x3 -> edits.idx.dlq');

    const out = await cli(['consume', 'edits', '--group', 'idx', '--exec', HANDLER, '--max-records', String(EDITS + 2 * poison)]);
    const outcomes = out.trim().split('\n').map((l) => JSON.parse(l) as {
      outcome: string; attempt: number; original: { offset: number }; reason?: string; movedTo?: { topic: string; deadLettered: boolean };
    });
    expect(outcomes.filter((o) => o.outcome === 'processed')).toHaveLength(EDITS - poison);
    const nacked = outcomes.filter((o) => o.outcome === 'nacked');
    expect(nacked).toHaveLength(3 * poison);
    expect(nacked.every((o) => o.reason === 'talk pages are not indexed')).toBe(true);
    expect(nacked.filter((o) => o.attempt === 3).every((o) => o.movedTo!.deadLettered && o.movedTo!.topic === 'edits.idx.dlq')).toBe(true);

    const list = JSON.parse(await cli(['dlq', 'list', 'idx', '--topic', 'edits', '--limit', '5000', '--json'])) as DeadLetterList;
    expect(list).toMatchObject({ groupId: 'idx', topic: 'edits', deadLetterTopic: 'edits.idx.dlq', depth: poison });
    expect(list.records[0]).toMatchObject({ offset: 0, attempts: 3, reason: 'talk pages are not indexed' });
    expect(await cli(['dlq', 'list', 'idx', '--topic', 'edits'])).toContain(`${poison} dead letter(s) in edits.idx.dlq`);
    const alerts = (JSON.parse(await cli(['groups', 'describe', 'idx', '--json'])) as GroupDescription).alerts;
    expect(alerts.filter((a) => a.kind === 'dead-letter-depth')).toHaveLength(1);

    expect(await cli(['dlq', 'redrive', 'idx', '--topic', 'edits', '--offset', '0'])).toContain('would redrive (dry run');
    expect(await cli(['dlq', 'redrive', 'idx', '--topic', 'edits', '--offset', '0', '--execute'])).toContain(`redrove 1 dead letter(s)`);
    const redriven = await cli(['consume', 'edits', '--group', 'idx', '--exec', 'cat > /dev/null', '--max-records', '1']);
    expect(JSON.parse(redriven)).toMatchObject({ outcome: 'processed', attempt: 1, original: { offset: list.records[0]!.original.offset } });

    expect(await cli(['dlq', 'purge', 'idx', '--topic', 'edits', '--before', '2'])).toContain('would purge (dry run; add --execute) 1 dead letter(s)');
    expect(await cli(['dlq', 'purge', 'idx', '--topic', 'edits', '--before', '2', '--execute'])).toContain(`purged 1 dead letter(s) of group idx, topic edits; depth now ${poison - 2}`);
    // A selection, by offsets of the dead-letter topic.
    const selection = await cli(['dlq', 'redrive', 'idx', '--topic', 'edits', '--offsets', '3,2']);
    expect(selection).toContain('would redrive (dry run; add --execute) 2 dead letter(s)');
    expect(selection.split('\n').slice(2, 4).map((l) => l.split(/\s+/)[0])).toEqual(['2', '3']);
    expect((await runCli(server.url, ['dlq', 'redrive', 'idx', '--topic', 'edits', '--offsets', '2,x'])).stderr).toContain('--offsets (each) must be an integer >= 0, got "x"');
    const both = await runCli(server.url, ['dlq', 'redrive', 'idx', '--topic', 'edits']);
    expect(both.stderr).toContain('give one of --offset O, --offsets O1,O2,... or --all');
    const none = await runCli(server.url, ['dlq', 'list', 'nobody', '--topic', 'edits']);
    expect(none.stderr).toContain('UNKNOWN_GROUP');
  });

  it('a group with four retry tiers starts at once: an idle time-out shorter than its tiers once cost reads every record, pull and push', async () => {
    server = await startServer(tmpDir());
    const lines = zlib.gunzipSync(fs.readFileSync(WIKITICKER)).toString('utf8').split('\n').filter((l) => l.trim() !== '').slice(0, 200);
    await cli(['topics', 'create', 'edits', '--partitions', '2', '--config', 'retention.ms=-1']);
    await cli(['produce', 'edits', '--timestamp-field', 'time'], Buffer.from(lines.join('\n')));
    for (const delivery of ['pull', 'push']) {
      const group = `late-${delivery}`;
      await cli(['groups', 'create', group, '--topic', 'edits', '--start', 'earliest', '--delivery', delivery, '--retry', '1s,1s,8s,8s']);
      // Before: each empty tier held the first fetch a whole long-poll (twice over), 4 s before the first record, and
      // the idle time-out, counted from the process start, ended the run with nothing printed.
      const out = await cli(['consume', 'edits', '--group', group, '--idle-timeout-ms', '1500']);
      expect(out.trim().split('\n').filter((l) => l !== '')).toHaveLength(200);
    }
  });
});

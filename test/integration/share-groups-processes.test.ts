/**
 * A share group on real processes (docs/consumer-groups.md): `onelog consume` processes and a client member read
 * 2,000 Wikipedia edits of two partitions side by side; the first consume process is SIGKILLed mid-run (its records come back
 * once their locks end), then the broker is SIGKILLed mid-run and started again on its data directory, and new members
 * finish. Every edit is printed or handled at least once, none is lost, and the group has nothing left in flight.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import readline from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { Onelog } from '../../src/client/index.js';
import { BIN, runCli, startServer } from '../helpers/processes.js';
import type { ServerProcess } from '../helpers/processes.js';
import { tmpDir } from '../helpers/tmp.js';
import { readEdits } from '../helpers/wikiticker.js';

const EDITS = 2000;
let server: ServerProcess | undefined;
const consumers: ChildProcess[] = [];
afterEach(async () => {
  for (const c of consumers.splice(0)) c.kill('SIGKILL');
  await server?.stop('SIGKILL');
  server = undefined;
});

/** Starts `onelog consume edits --group Q` against `url`; every record it prints goes into `seen` as `partition/offset`. */
function consume(url: string, seen: Set<string>): { proc: ChildProcess; printed: () => number; exited: Promise<number | null> } {
  const proc = spawn(process.execPath, [BIN, 'consume', 'edits', '--group', 'Q', '--idle-timeout-ms', '2500', '--session-timeout-ms', '2000'], {
    env: { ...process.env, ONELOG_URL: url }, stdio: ['ignore', 'pipe', 'ignore'],
  });
  consumers.push(proc);
  let printed = 0;
  readline.createInterface({ input: proc.stdout! }).on('line', (line) => {
    const r = JSON.parse(line) as { partition: number; offset: number };
    seen.add(`${r.partition}/${r.offset}`);
    printed++;
  });
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  return { proc, printed: () => printed, exited };
}

/** Polls `check` every 20 ms until it holds; fails after `ms`. */
async function until(what: string, check: () => boolean, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('a share group on real processes', () => {
  it('loses no edit through a consumer and the broker killed mid-run', async () => {
    const dataDir = tmpDir();
    server = await startServer(dataDir);
    const edits = readEdits().slice(0, EDITS);
    const cli = async (args: string[], input?: Buffer) => {
      const r = await runCli(server!.url, args, input);
      if (r.code !== 0) throw new Error(`onelog ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
      return r.stdout;
    };
    await cli(['topics', 'create', 'edits', '--partitions', '2', '--config', 'retention.ms=-1']);
    await cli(['produce', 'edits', '--key-field', 'k'], Buffer.from(edits.map((e) => JSON.stringify({ k: e.key, v: e.value })).join('\n')));
    await cli(['groups', 'create', 'Q', '--topic', 'edits', '--type', 'share', '--start', 'earliest', '--lock-ms', '2000', '--max-deliveries', '10']);
    const seen = new Set<string>();

    // A consume process is killed once it printed some records (alone, so its peers cannot take them all first);
    // what it held comes back once its locks end. Two more consume processes and a client member go on.
    const first = consume(server.url, seen);
    await until('the first consumer to print', () => first.printed() > 50);
    first.proc.kill('SIGKILL');
    consume(server.url, seen);
    consume(server.url, seen);
    const client = new Onelog({ url: server.url });
    const member = client.shareConsumer({ groupId: 'Q', maxRecords: 20, maxWaitMs: 200 });
    member.subscribe({ topic: 'edits' });
    const memberRun = member.run({ eachMessage: ({ message }) => void seen.add(`${message.partition}/${message.offset}`) }).catch(() => undefined);
    await until('half the edits', () => seen.size >= EDITS / 2);

    // The broker dies mid-run; its members with it. Started again on its data directory, new members finish.
    await server.stop('SIGKILL');
    await member.stop();
    await memberRun;
    client.close();
    for (const c of consumers.splice(0)) c.kill('SIGKILL');
    server = await startServer(dataDir);
    const again = [consume(server.url, seen), consume(server.url, seen)];
    await Promise.all(again.map((c) => c.exited));

    const expected = new Set<string>();
    const offsets = JSON.parse(await cli(['topics', 'describe', 'edits', '--json'])) as { partitions: Array<{ partition: number; highWatermark: number }> };
    for (const p of offsets.partitions) for (let o = 0; o < p.highWatermark; o++) expected.add(`${p.partition}/${o}`);
    expect(expected.size).toBe(EDITS);
    expect([...expected].filter((k) => !seen.has(k))).toEqual([]); // none lost
    // Nothing left in flight: a new member acquires nothing.
    const last = new Onelog({ url: server.url });
    expect((await last.api.shareFetch({ groupId: 'Q', topic: 'edits', memberId: 'check' })).records).toEqual([]);
    last.close();
  });

  it('dead-letters only the record whose --exec command kills its consume process; a slow command loses nothing to its lock', async () => {
    server = await startServer(tmpDir());
    const cli = async (args: string[], input?: Buffer) => {
      const r = await runCli(server!.url, args, input);
      if (r.code !== 0) throw new Error(`onelog ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
      return r.stdout;
    };
    const edits = readEdits().slice(0, 20);
    await cli(['topics', 'create', 'edits', '--partitions', '1']);
    await cli(['produce', 'edits'], Buffer.from(edits.map((e) => e.value).join('\n')));
    await cli(['groups', 'create', 'Q', '--topic', 'edits', '--type', 'share', '--start', 'earliest', '--lock-ms', '1000', '--max-deliveries', '3']);
    const outcomes: Array<{ offset: number; outcome: string }> = [];
    for (let run = 0; run < 4; run++) {
      // Offset 6 kills the consume process; the others take 300 ms each, more than half the 1 s lock.
      const r = await runCli(server.url, ['consume', 'edits', '--group', 'Q', '--idle-timeout-ms', '2000', '--session-timeout-ms', '1000',
        '--exec', 'cat > /dev/null; if [ "$ONELOG_OFFSET" = 6 ]; then kill -9 $PPID; fi; sleep 0.3']);
      outcomes.push(...r.stdout.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as { offset: number; outcome: string }));
    }
    expect(outcomes.every((o) => o.outcome === 'accepted')).toBe(true);
    expect(outcomes.map((o) => o.offset).sort((a, b) => a - b)).toEqual(edits.map((_, i) => i).filter((o) => o !== 6));
    const dead = JSON.parse(await cli(['dlq', 'list', 'Q', '--topic', 'edits', '--json'])) as { depth: number; records: Array<{ original: { offset: number }; attempts: number }> };
    expect(dead).toMatchObject({ depth: 1, records: [{ original: { offset: 6 }, attempts: 3 }] });
  });
});

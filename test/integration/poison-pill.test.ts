/**
 * The poison pill on real processes (docs/retries.md, "A consumer that dies on a record"): the first of ten Wikipedia
 * edits makes its `onelog consume --exec` handler kill the consume process (as an out-of-memory kill would); a
 * supervisor starts the consumer again, at most 8 times. The broker counts each end with that record in hand: it is
 * handed out at most 3 times (`--max-attempts 3`; without a retry policy, `--max-deliveries`), lands in the dead
 * letters, and the 9 edits behind it are processed.
 */
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpApi } from '../../src/client/http-api.js';
import type { DeadLetterList } from '../../src/protocol/dead-letters.js';
import { runCli, startServer } from '../helpers/processes.js';
import type { ServerProcess } from '../helpers/processes.js';
import { tmpDir } from '../helpers/tmp.js';
import { WIKITICKER } from '../helpers/wikiticker.js';

let server: ServerProcess | undefined;
afterEach(async () => {
  await server?.stop('SIGKILL');
  server = undefined;
});

describe('a record that kills its consumer', () => {
  /** Ten Wikipedia edits in topic `edits`, group G created with `groupFlags`; returns the CLI runner. */
  async function setUp(groupFlags: string[]): Promise<(args: string[], input?: Buffer) => Promise<string>> {
    server = await startServer(tmpDir());
    const edits = zlib.gunzipSync(fs.readFileSync(WIKITICKER)).toString('utf8').split('\n').filter((l) => l.trim() !== '').slice(0, 10);
    const cli = async (args: string[], input?: Buffer) => {
      const r = await runCli(server!.url, args, input);
      if (r.code !== 0) throw new Error(`onelog ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
      return r.stdout;
    };
    await cli(['topics', 'create', 'edits', '--partitions', '1', '--config', 'retention.ms=-1']);
    await cli(['produce', 'edits'], Buffer.from(edits.join('\n')));
    await cli(['groups', 'create', 'G', '--topic', 'edits', '--start', 'earliest', ...groupFlags]);
    return cli;
  }

  /**
   * Runs `onelog consume` as a supervisor would, at most 8 times or until the 9 good edits are processed: the first
   * edit kills the consume process (the shell's parent). Returns the offsets handed to the handler and the exit codes.
   */
  async function superviseConsumers(): Promise<{ handed: number[]; processed: number[]; exits: Array<number | null> }> {
    const dir = tmpDir();
    const handed = path.join(dir, 'handed');
    const processed = path.join(dir, 'processed');
    const handler = `cat > /dev/null; if [ "$ONELOG_TOPIC/$ONELOG_OFFSET" = edits/0 ]; then echo "$ONELOG_OFFSET" >> ${handed}; kill -9 $PPID; ` +
      `else echo "$ONELOG_OFFSET" >> ${processed}; fi`;
    const lines = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter((l) => l !== '').map(Number) : []);
    const exits: Array<number | null> = [];
    for (let run = 0; run < 8 && lines(processed).length < 9; run++) {
      const r = await runCli(server!.url, ['consume', 'edits', '--group', 'G', '--session-timeout-ms', '1000', '--idle-timeout-ms', '3000', '--exec', handler]);
      exits.push(r.code);
    }
    return { handed: lines(handed), processed: lines(processed).sort((a, b) => a - b), exits };
  }

  it('is handed out at most maxAttempts times, then dead-lettered; the records behind it are processed', async () => {
    const cli = await setUp(['--retry', '1s', '--max-attempts', '3']);
    const { handed, processed, exits } = await superviseConsumers();
    expect(handed).toEqual([0, 0, 0]);
    expect(processed).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(exits.slice(0, 3).every((code) => code !== 0)).toBe(true); // killed
    expect(exits.at(-1)).toBe(0);
    const dead = JSON.parse(await cli(['dlq', 'list', 'G', '--topic', 'edits', '--json'])) as DeadLetterList;
    expect(dead.depth).toBe(1);
    expect(dead.records[0]).toMatchObject({ original: { topic: 'edits', partition: 0, offset: 0 }, attempts: 3 });
    expect(dead.records[0]!.reason).toContain('the consumer ended while processing it, 3 times');
  });

  it('without a retry policy, groups create --max-deliveries N bounds it the same way', async () => {
    const cli = await setUp(['--max-deliveries', '2']);
    expect(await cli(['groups', 'describe', 'G'])).toContain('edits: max deliveries x2 -> edits.G.dlq');
    const { handed, processed } = await superviseConsumers();
    expect(handed).toEqual([0, 0]);
    expect(processed).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const dead = JSON.parse(await cli(['dlq', 'list', 'G', '--topic', 'edits', '--json'])) as DeadLetterList;
    expect(dead).toMatchObject({ deadLetterTopic: 'edits.G.dlq', depth: 1, records: [{ original: { offset: 0 }, attempts: 2 }] });
  });

  it('counts the same over the HTTP JSON API: a member that fetched and died, twice, with --max-deliveries 2', async () => {
    await setUp(['--max-deliveries', '2']);
    const api = new HttpApi(server!.url);
    const holdAndDie = async (): Promise<number[]> => {
      let m = await api.joinGroup({ groupId: 'G', topics: ['edits'], sessionTimeoutMs: 1000 });
      let from = m.assignment.find((p) => p.topic === 'edits')?.offset;
      while (from === undefined) { // granted once the member before it expired
        await new Promise((resolve) => setTimeout(resolve, 100));
        m = await api.heartbeat({ groupId: 'G', memberId: m.memberId, generationId: m.generationId, owned: m.assignment });
        from = m.assignment.find((p) => p.topic === 'edits')?.offset;
      }
      const fetched = await api.fetch({ topic: 'edits', groupId: 'G', memberId: m.memberId, generationId: m.generationId, partitions: [{ partition: 0, offset: from }] });
      return fetched.partitions[0]!.records.map((r) => r.offset);
    };
    expect(await holdAndDie()).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(await holdAndDie()).toEqual([0]);
    expect(await holdAndDie()).toEqual([1]); // record 0 spent: dead-lettered, the group committed past it
    expect((await api.listDeadLetters({ groupId: 'G', topic: 'edits' })).depth).toBe(1);
  });
});

/**
 * `onelog offsets checkpoint save` / `offsets reset --to-checkpoint` and `onelog groups delete`, on a real
 * server with the Wikipedia edits.
 */
import { afterEach, describe, expect, it } from 'vitest';
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

async function cli(args: string[]): Promise<string> {
  const r = await runCli(server!.url, args);
  if (r.code !== 0) throw new Error(`onelog ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return r.stdout;
}

const describeGroup = async (group: string) => JSON.parse(await cli(['groups', 'describe', group, '--json'])) as GroupDescription;
const committed = (d: GroupDescription) => d.subscriptions.flatMap((s) => s.partitions.map((p) => p.committedOffset));

describe('offsets checkpoints and groups delete', () => {
  it('saves a checkpoint, resets back to it over every topic it holds, records the reset, then deletes the group', async () => {
    server = await startServer(tmpDir());
    await cli(['topics', 'create', 'edits', '--partitions', '2', '--config', 'retention.ms=-1']);
    await cli(['produce', 'edits', '--file', WIKITICKER, '--timestamp-field', 'time']);
    await cli(['consume', 'edits', '--group', 'indexer', '--from', 'earliest', '--max-records', '1200']);
    const saved = JSON.parse(await cli(['offsets', 'checkpoint', 'save', 'indexer', 'before-deploy', '--json'])) as {
      offsets: Array<{ topic: string; partition: number; offset: number }>;
    };
    const atCheckpoint = committed(await describeGroup('indexer'));
    expect(saved.offsets.map((o) => o.offset)).toEqual(atCheckpoint);
    await cli(['consume', 'edits', '--group', 'indexer', '--max-records', '700']);
    const moved = committed(await describeGroup('indexer'));
    expect(moved).not.toEqual(atCheckpoint);

    const dryRun = await cli(['offsets', 'reset', 'indexer', '--to-checkpoint', 'before-deploy']);
    expect(dryRun).toContain('dry run');
    expect(committed(await describeGroup('indexer'))).toEqual(moved);
    await cli(['offsets', 'reset', 'indexer', '--to-checkpoint', 'before-deploy', '--execute']);
    const after = await describeGroup('indexer');
    expect(committed(after)).toEqual(atCheckpoint);
    expect(after.resets.map((r) => ({ partition: r.partition, oldOffset: r.oldOffset, newOffset: r.newOffset, spec: r.spec }))
      .sort((a, b) => a.partition - b.partition)).toEqual([0, 1].map((p) => ({
      partition: p, oldOffset: moved[p], newOffset: atCheckpoint[p], spec: 'to-checkpoint before-deploy',
    })));
    expect(after.checkpoints).toMatchObject([{ name: 'before-deploy', topics: ['edits'] }]);

    const missing = await runCli(server.url, ['offsets', 'reset', 'indexer', '--to-checkpoint', 'nope', '--execute']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('UNKNOWN_CHECKPOINT');

    expect(await cli(['groups', 'delete', 'indexer'])).toContain('deleted group indexer');
    const gone = await runCli(server.url, ['groups', 'describe', 'indexer']);
    expect(gone.stderr).toContain('UNKNOWN_GROUP');
    // Deleted means gone: the group starts over from its start policy.
    const again = await cli(['consume', 'edits', '--group', 'indexer', '--from', 'earliest', '--max-records', '1']);
    expect(JSON.parse(again).offset).toBe(0);
  });
});

describe('groups create and alter', () => {
  it('creates a subscription with its delivery mode, refuses to create it twice, alters it, and shows it', async () => {
    server = await startServer(tmpDir(), { args: ['--webhook-allow-private'] }); // push endpoints on 127.0.0.1
    await cli(['topics', 'create', 'edits', '--partitions', '2']);
    const created = JSON.parse(await cli(['groups', 'create', 'live', '--topic', 'edits', '--delivery', 'push', '--start', 'earliest', '--json']));
    expect(created.subscription).toEqual({
      groupId: 'live', topic: 'edits', deliveryMode: 'push', startPolicy: 'earliest', onOutOfRange: 'pause', pushEndpoint: null, maxInFlight: 1,
      retry: null, maxDeliveries: null, deadLetterTopic: null, type: 'consumer', share: null, deadLetterAlertDepth: 1, webhookMaxAttempts: 5,
      headroomWarnRatio: 0.25, stallMs: 300_000,
    });
    await cli(['groups', 'create', 'batch', '--topic', 'edits', '--delivery', 'pull']);
    const twice = await runCli(server.url, ['groups', 'create', 'live', '--topic', 'edits', '--delivery', 'pull']);
    expect(twice.code).toBe(1);
    expect(twice.stderr).toContain('already subscribes to edits');
    const bad = await runCli(server.url, ['groups', 'create', 'x', '--topic', 'edits', '--delivery', 'stream']);
    expect(bad.stderr).toContain('--delivery must be pull | push');
    const badUrl = await runCli(server.url, ['groups', 'alter', 'live', '--topic', 'edits', '--push-endpoint', 'ftp://x']);
    expect(badUrl.stderr).toContain('pushEndpoint must be an absolute http:// or https:// URL');

    await cli(['groups', 'alter', 'live', '--topic', 'edits', '--push-endpoint', 'http://127.0.0.1:9/hook', '--max-in-flight', '4']);
    const live = await describeGroup('live');
    expect(live.subscriptions[0]).toMatchObject({ deliveryMode: 'push', pushEndpoint: 'http://127.0.0.1:9/hook', maxInFlight: 4, startPolicy: 'earliest' });
    await cli(['groups', 'alter', 'live', '--topic', 'edits', '--delivery', 'pull', '--push-endpoint', '']);
    expect((await describeGroup('live')).subscriptions[0]).toMatchObject({ deliveryMode: 'pull', pushEndpoint: null });
    expect((await describeGroup('batch')).subscriptions[0]).toMatchObject({ deliveryMode: 'pull' });
    const missing = await runCli(server.url, ['groups', 'alter', 'batch', '--topic', 'nope', '--delivery', 'push']);
    expect(missing.stderr).toContain('does not subscribe to nope');
  });
});

describe('consume follows the subscription\'s delivery mode', () => {
  it('receives a push group\'s records over the WebSocket stream and commits what it printed', async () => {
    server = await startServer(tmpDir(), { args: ['--webhook-allow-private'] }); // a push endpoint on 127.0.0.1
    await cli(['topics', 'create', 'edits', '--partitions', '1', '--config', 'retention.ms=-1']);
    await cli(['produce', 'edits', '--file', WIKITICKER, '--timestamp-field', 'time']);
    await cli(['groups', 'create', 'live', '--topic', 'edits', '--delivery', 'push', '--start', 'earliest']);
    const out = await cli(['consume', 'edits', '--group', 'live', '--max-records', '5']);
    expect(out.trim().split('\n').map((l) => (JSON.parse(l) as { offset: number }).offset)).toEqual([0, 1, 2, 3, 4]);
    const d = await describeGroup('live');
    expect(d.subscriptions[0]!.partitions[0]!.committedOffset).toBe(5);
    expect(d.members).toEqual([]);
    const next = await cli(['consume', 'edits', '--group', 'live', '--max-records', '2']);
    expect(next.trim().split('\n').map((l) => (JSON.parse(l) as { offset: number }).offset)).toEqual([5, 6]);

    await cli(['groups', 'alter', 'live', '--topic', 'edits', '--push-endpoint', 'http://127.0.0.1:9/hook']);
    const refused = await runCli(server.url, ['consume', 'edits', '--group', 'live', '--max-records', '1']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('delivers edits to the webhook');
  });
});

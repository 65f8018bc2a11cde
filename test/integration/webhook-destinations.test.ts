/**
 * Server-side request forgery through webhooks (issue 31, point 6), with real processes: a push subscription whose
 * endpoint is another broker on the same machine (`/topics/T/records`: a webhook's body is a valid produce body)
 * once wrote the subscription's records into it. A default `onelog serve` refuses such an endpoint when it is given
 * (FORBIDDEN) and fails every POST to a name that resolves to the machine; `--webhook-deny-private` (the default,
 * kept) does the same; `--webhook-allow-private` lets them through; both flags together refuse the start. Needs the build.
 */
import os from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import type { TopicDescription } from '../../src/protocol/topics.js';
import { runCli, startServer } from '../helpers/processes.js';
import type { ServerProcess } from '../helpers/processes.js';
import { tmpDir } from '../helpers/tmp.js';

const running: ServerProcess[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop('SIGKILL');
});

async function server(args: string[] = [], onLog?: (entry: Record<string, unknown>) => void): Promise<ServerProcess> {
  const s = await startServer(tmpDir(), { args, onLog });
  running.push(s);
  return s;
}

async function cli(url: string, args: string[], input?: Buffer): Promise<string> {
  const r = await runCli(url, args, input);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout;
}

const rows = (n: number) => Buffer.from(Array.from({ length: n }, (_, i) => `{"id":"order-${i}"}\n`).join(''));

/** Records in the victim's topic `stolen`. */
async function stolen(victim: ServerProcess): Promise<number> {
  const d = JSON.parse(await cli(victim.url, ['topics', 'describe', 'stolen', '--json'])) as TopicDescription;
  return d.partitions.reduce((sum, p) => sum + p.highWatermark, 0);
}

/** A broker with 20 records in `edits`, and the push subscription `hook` of them to `endpoint` attempted. */
async function pushTo(broker: ServerProcess, endpoint: string): Promise<{ code: number | null; stderr: string }> {
  await cli(broker.url, ['topics', 'create', 'edits', '--partitions', '1']);
  await cli(broker.url, ['produce', 'edits'], rows(20));
  return runCli(broker.url, ['groups', 'create', 'hook', '--topic', 'edits', '--delivery', 'push', '--start', 'earliest', '--push-endpoint', endpoint]);
}

describe('webhooks to this machine', () => {
  it('a default serve refuses an endpoint on another broker here, by address or by name; --webhook-allow-private lets it write there', async () => {
    const victim = await server();
    await cli(victim.url, ['topics', 'create', 'stolen', '--partitions', '1']);
    const port = new URL(victim.url).port;

    // By address: refused when given, with what to do.
    const broker = await server();
    const byAddress = await pushTo(broker, `http://127.0.0.1:${port}/topics/stolen/records`);
    expect(byAddress.code).toBe(1);
    expect(byAddress.stderr).toContain('FORBIDDEN');
    expect(byAddress.stderr).toContain('127.0.0.1 is a loopback address, and this broker sends webhooks to public addresses only (serve --webhook-allow-private');
    const nat64 = await runCli(broker.url, ['alerts', 'notify', '--webhook', `http://[64:ff9b::7f00:1]:${port}/`]);
    expect(nat64.stderr).toContain('64:ff9b::7f00:1 is the NAT64 form of 127.0.0.1, a loopback address');

    // By name: accepted, and every POST fails when it connects, logged.
    let refusedPost: (entry: Record<string, unknown>) => void = () => {};
    const logged = new Promise<Record<string, unknown>>((resolve) => (refusedPost = resolve));
    const named = await server([], (entry) => {
      if (entry.msg === 'webhook delivery failed') refusedPost(entry);
    });
    expect((await pushTo(named, `http://${os.hostname()}:${port}/topics/stolen/records`)).code).toBe(0);
    expect((await logged).err).toMatch(new RegExp(`webhook ${os.hostname()} is refused: ${os.hostname()} resolves to .*(loopback|this machine)`));

    // --webhook-deny-private, the default, kept.
    const compat = await server(['--webhook-deny-private']);
    expect((await pushTo(compat, `http://127.0.0.1:${port}/topics/stolen/records`)).stderr).toContain('FORBIDDEN');
    expect(await stolen(victim)).toBe(0);

    // Allowed: the other broker gets the records (what the default now refuses).
    const allowed = await server(['--webhook-allow-private']);
    expect((await pushTo(allowed, `http://127.0.0.1:${port}/topics/stolen/records`)).code).toBe(0);
    const deadline = Date.now() + 15_000;
    while ((await stolen(victim)) < 20 && Date.now() < deadline);
    expect(await stolen(victim)).toBe(20);
  });

  it('--webhook-allow-private with --webhook-deny-private refuses the start', async () => {
    const started = await startServer(tmpDir(), { args: ['--webhook-allow-private', '--webhook-deny-private'] })
      .then((s) => void running.push(s), (err: unknown) => err);
    expect((started as Error).message).toMatch(/INVALID_CONFIG: --webhook-allow-private and --webhook-deny-private .* contradict each other/);
  });
});

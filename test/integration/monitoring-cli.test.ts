/**
 * Watching consumers from the command line on a real server, as a user would: a topic with 2 partitions and
 * retention.ms=3000, a group behind on one partition; after retention runs, `groups describe` shows the
 * partition data-lost with the records lost beside the lag of what is still readable, and the alert is there
 * at once (`alerts list`), acknowledged with `alerts ack`, and POSTed to the webhook `alerts notify` added.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { HttpApi } from '../../src/client/http-api.js';
import type { GroupDescription } from '../../src/protocol/groups.js';
import type { AlertNotification, GroupAlert } from '../../src/protocol/monitoring-api.js';
import type { TopicDescription } from '../../src/protocol/topics.js';
import { runCli, startServer } from '../helpers/processes.js';
import type { ServerProcess } from '../helpers/processes.js';
import { tmpDir } from '../helpers/tmp.js';

let server: ServerProcess | undefined;
let receiver: http.Server | undefined;
afterEach(async () => {
  await server?.stop('SIGKILL');
  server = undefined;
  await new Promise((resolve) => (receiver ? receiver.close(resolve) : resolve(undefined)));
  receiver = undefined;
});

async function cli(args: string[]): Promise<string> {
  const r = await runCli(server!.url, args);
  if (r.code !== 0) throw new Error(`onelog ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return r.stdout;
}

/** A webhook receiver on loopback keeping what it is sent. */
async function startReceiver(): Promise<{ url: string; received: AlertNotification[] }> {
  const received: AlertNotification[] = [];
  receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received.push(JSON.parse(body) as AlertNotification);
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => receiver!.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`, received };
}

describe('watching consumers from the CLI', () => {
  it('shows records lost beside the readable lag after retention, alerts at once, acks and notifies', async () => {
    server = await startServer(tmpDir(), { args: ['--webhook-allow-private'] }); // the sink is on 127.0.0.1
    const api = new HttpApi(server.url);
    const hook = await startReceiver();
    expect(await cli(['alerts', 'notify', '--webhook', hook.url])).toContain(`alerts are POSTed to ${hook.url}`);
    expect(await cli(['alerts', 'notify', '--list'])).toContain(hook.url);

    await cli(['topics', 'create', 't', '--partitions', '2', '--config', 'retention.ms=3000']);
    for (const partition of [0, 1]) {
      await api.produce({ topic: 't', records: Array.from({ length: 100 }, (_, i) => ({ key: null, value: Buffer.from(`r${i}`), partition })) });
    }
    await cli(['groups', 'create', 'g', '--topic', 't', '--start', 'earliest', '--headroom-warn-ratio', '0.1']);
    await api.commitOffsets({ groupId: 'g', topic: 't', offsets: [{ partition: 0, offset: 40 }, { partition: 1, offset: 100 }] });
    // Records of 3 s retention expire after 3 s of real time: wait for the first record to be older than that.
    await vi.waitFor(async () => {
      const d = JSON.parse(await cli(['groups', 'describe', 'g', '--json'])) as GroupDescription;
      expect(d.subscriptions[0]!.partitions[0]!.headroomMs).toBeLessThan(0);
    }, { timeout: 10_000, interval: 200 });
    await cli(['topics', 'enforce-retention', 't']);

    // No fetch since: the alert is raised by the retention run itself.
    const active = JSON.parse(await cli(['alerts', 'list', '--active', '--json'])) as GroupAlert[];
    expect(active).toMatchObject([{ kind: 'data-lost', groupId: 'g', topic: 't', partition: 0, context: { lostRecords: 60 } }]);
    let d = JSON.parse(await cli(['groups', 'describe', 'g', '--json'])) as GroupDescription;
    expect(d.subscriptions[0]!.partitions.map((p) => [p.state, p.lag, p.lostRecords])).toEqual([['data-lost', 0, 60], ['ok', 0, 0]]);
    expect(d.subscriptions[0]).toMatchObject({ headroomWarnRatio: 0.1, stallMs: 300_000 });

    await api.produce({ topic: 't', records: Array.from({ length: 5 }, (_, i) => ({ key: null, value: Buffer.from(`n${i}`), partition: 0 })) });
    d = JSON.parse(await cli(['groups', 'describe', 'g', '--json'])) as GroupDescription;
    expect(d.subscriptions[0]!.partitions[0]).toMatchObject({ state: 'data-lost', lag: 5, unreadRecords: 5, lostRecords: 60 });
    const table = await cli(['groups', 'describe', 'g']);
    expect(table).toMatch(/^t\s+0\s+40\s+100\s+105\s+5\s+5\s+60\s+\S+\s+\S+\s+data-lost/m);
    // The group's totals lead: its lag in all and its worst partition (partition 1 is caught up).
    expect(d).toMatchObject({ totalLag: 5, maxLag: { topic: 't', partition: 0, lag: 5 }, maxTimeLag: { topic: 't', partition: 0 } });
    expect(table.split('\n')[1]).toMatch(/^lag 5 in all, most 5 at t\/0, time lag at most \S+ at t\/0$/);
    const topic = JSON.parse(await cli(['topics', 'describe', 't', '--groups', '--json'])) as TopicDescription;
    expect(topic.groups![0]!.partitions[0]).toMatchObject({ state: 'data-lost', lag: 5, lostRecords: 60 });
    expect(await cli(['topics', 'describe', 't', '--groups'])).toMatch(/^g\s+0\s+40\s+100\s+105\s+5/m);

    const id = active[0]!.id;
    expect(await cli(['alerts', 'ack', String(id), '--by', 'alice'])).toContain(`#${id}`);
    expect((JSON.parse(await cli(['alerts', 'list', '--group', 'g', '--json'])) as GroupAlert[]).find((a) => a.id === id)).toMatchObject({ acknowledgedBy: 'alice' });
    expect(await cli(['alerts', 'list'])).toContain('by alice');

    // A reset resolves it; the webhook got the raise and the resolve, in order.
    await cli(['offsets', 'reset', 'g', '--topic', 't', '--partition', '0', '--to-earliest', '--execute']);
    // (The 5 new records expire after 3 s too: on a slow machine a retention-headroom alert may stand by now.)
    expect((JSON.parse(await cli(['alerts', 'list', '--active', '--json'])) as GroupAlert[]).filter((a) => a.kind === 'data-lost')).toEqual([]);
    await vi.waitFor(() => expect(hook.received.filter((n) => n.alert.kind === 'data-lost').map((n) => `${n.event} ${n.alert.id}`))
      .toEqual([`raised ${id}`, `resolved ${id}`]), { timeout: 10_000, interval: 100 });

    for (const [args, message] of [
      [['groups', 'alter', 'g', '--topic', 't', '--headroom-warn-ratio', '1.5'], '--headroom-warn-ratio must be a number between 0 and 1'],
      [['groups', 'alter', 'g', '--topic', 't', '--stall-ms', '10'], '--stall-ms must be an integer from 1000'],
      [['alerts', 'ack', 'x'], 'alert id must be an integer'],
      [['alerts', 'ack', '999'], 'NOT_FOUND'],
      [['alerts', 'notify'], 'give one of --webhook URL, --list or --remove ID'],
      [['alerts', 'notify', '--webhook', 'ftp://example.com/x'], 'must be an absolute http:// or https:// URL'],
      [['alerts', 'list', '--limit', '0'], '--limit must be an integer from 1 to 10000'],
    ] as const) {
      const bad = await runCli(server.url, [...args]);
      expect(bad.code, args.join(' ')).toBe(1);
      expect(bad.stderr).toContain(message);
    }
    const sinks = JSON.parse(await cli(['alerts', 'notify', '--list', '--json'])) as Array<{ id: number }>;
    expect(await cli(['alerts', 'notify', '--remove', String(sinks[0]!.id)])).toContain('removed');
  });
});

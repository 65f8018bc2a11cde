/**
 * `onelog alerts ...`: list alerts (all, active, one group's), acknowledge one, and manage the webhooks
 * raised and resolved alerts are POSTed to (docs/monitoring.md).
 */
import os from 'node:os';
import type { Command } from 'commander';
import type { GroupAlert } from '../protocol/monitoring-api.js';
import { OnelogError } from '../protocol/errors.js';
import { action, apiFor, parseInteger, printTable } from './common.js';

/** One alert on one line: when, id, kind, where, message, and its resolution and acknowledgement. */
export function alertLine(a: GroupAlert): string {
  const resolved = a.resolvedAt === null ? '' : `  (resolved ${new Date(a.resolvedAt).toISOString()})`;
  const acked = a.acknowledgedAt === null ? '' : `  (acknowledged by ${a.acknowledgedBy} ${new Date(a.acknowledgedAt).toISOString()})`;
  return `${new Date(a.createdAt).toISOString()}  #${a.id}  ${a.kind}  ${a.topic}/${a.partition}  ${a.message}${resolved}${acked}`;
}

export function registerAlerts(program: Command): void {
  const alerts = program.command('alerts').description('list and acknowledge alerts; send them to a webhook');

  alerts
    .command('list')
    .description('alerts, most recent first: raised, resolved, acknowledged')
    .option('--active', 'only alerts whose condition still holds')
    .option('--group <group>', 'only this group\'s')
    .option('--limit <n>', 'at most this many (1 to 10000, default 100)', parseInteger('--limit', 1, 10_000))
    .option('--json', 'print JSON')
    .action(action(async (o: { active?: boolean; group?: string; limit?: number; json?: boolean }, cmd: Command) => {
      const list = await apiFor(cmd).listAlerts({
        active: o.active ?? false, ...(o.group !== undefined ? { groupId: o.group } : {}), ...(o.limit !== undefined ? { limit: o.limit } : {}),
      });
      if (o.json) {
        console.log(JSON.stringify(list));
        return;
      }
      printTable(['ID', 'RAISED', 'KIND', 'GROUP', 'PARTITION', 'RESOLVED', 'ACKNOWLEDGED'], list.map((a) => [
        a.id, new Date(a.createdAt).toISOString(), a.kind, a.groupId, `${a.topic}/${a.partition}`,
        a.resolvedAt === null ? 'active' : new Date(a.resolvedAt).toISOString(), a.acknowledgedBy === null ? null : `by ${a.acknowledgedBy}`,
      ]));
      for (const a of list) console.log(`\n#${a.id}: ${a.message}`);
    }));

  alerts
    .command('ack <id>')
    .description('record that you saw an alert (it stays active until its condition clears)')
    .option('--by <who>', 'who acknowledges (default user@host; once the broker has users, the authenticated user)')
    .option('--json', 'print the alert as JSON')
    .action(action(async (id: string, o: { by?: string; json?: boolean }, cmd: Command) => {
      const alert = await apiFor(cmd).acknowledgeAlert({ id: parseInteger('alert id', 1)(id), requestedBy: o.by ?? `${os.userInfo().username}@${os.hostname()}` });
      console.log(o.json ? JSON.stringify(alert) : `acknowledged ${alertLine(alert)}`);
    }));

  alerts
    .command('notify')
    .description('POST every raised and resolved alert as JSON to a webhook (retried with backoff); list or remove webhooks')
    .option('--webhook <url>', 'add this http(s) URL')
    .option('--list', 'list the webhooks')
    .option('--remove <id>', 'remove the webhook with this id', parseInteger('--remove', 1))
    .option('--json', 'print JSON')
    .action(action(async (o: { webhook?: string; list?: boolean; remove?: number; json?: boolean }, cmd: Command) => {
      const api = apiFor(cmd);
      const chosen = [o.webhook !== undefined, o.list === true, o.remove !== undefined].filter(Boolean).length;
      if (chosen !== 1) throw new OnelogError('INVALID_REQUEST', 'give one of --webhook URL, --list or --remove ID');
      if (o.webhook !== undefined) {
        const sink = await api.addAlertSink(o.webhook);
        console.log(o.json ? JSON.stringify(sink) : `alerts are POSTed to ${sink.url} (webhook #${sink.id})`);
      } else if (o.remove !== undefined) {
        await api.removeAlertSink(o.remove);
        console.log(`removed webhook #${o.remove}`);
      } else {
        const sinks = await api.listAlertSinks();
        if (o.json) console.log(JSON.stringify(sinks));
        else printTable(['ID', 'URL', 'ADDED'], sinks.map((s) => [s.id, s.url, new Date(s.createdAt).toISOString()]));
      }
    }));
}

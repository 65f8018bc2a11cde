/** `onelog groups ...`: list and describe consumer groups. */
import type { Command } from 'commander';
import { action, apiFor, printTable } from './common.js';

export function registerGroups(program: Command): void {
  const groups = program.command('groups').description('list and inspect consumer groups');

  groups
    .command('list')
    .description('list consumer groups and the topics they subscribe to')
    .option('--json', 'print JSON')
    .action(action(async (opts: { json?: boolean }, cmd: Command) => {
      const list = await apiFor(cmd).listGroups();
      if (opts.json) console.log(JSON.stringify(list));
      else printTable(['GROUP', 'TOPICS'], list.map((g) => [g.groupId, g.topics.join(',')]));
    }));

  groups
    .command('describe <group>')
    .description('per partition: committed offset, log start offset, high watermark and lag')
    .option('--json', 'print JSON')
    .action(action(async (groupId: string, opts: { json?: boolean }, cmd: Command) => {
      const d = await apiFor(cmd).describeGroup(groupId);
      if (opts.json) {
        console.log(JSON.stringify(d));
        return;
      }
      const rows = d.subscriptions.flatMap((s) =>
        s.partitions.map((p) => [s.topic, p.partition, p.committedOffset, p.logStartOffset, p.highWatermark, p.lag, s.deliveryMode, s.startPolicy]),
      );
      printTable(['TOPIC', 'PARTITION', 'COMMITTED-OFFSET', 'LOG-START-OFFSET', 'HIGH-WATERMARK', 'LAG', 'DELIVERY', 'START'], rows);
    }));
}

/** `onelog groups ...`: list, describe and delete consumer groups. */
import type { Command } from 'commander';
import type { GroupDescription } from '../protocol/api.js';
import { action, apiFor, printTable } from './common.js';

export function registerGroups(program: Command): void {
  const groups = program.command('groups').description('list, inspect and delete consumer groups');

  groups
    .command('list')
    .description('list consumer groups with their state, members and topics')
    .option('--json', 'print JSON')
    .action(action(async (opts: { json?: boolean }, cmd: Command) => {
      const list = await apiFor(cmd).listGroups();
      if (opts.json) console.log(JSON.stringify(list));
      else printTable(['GROUP', 'STATE', 'MEMBERS', 'TOPICS'], list.map((g) => [g.groupId, g.state, g.members, g.topics.join(',')]));
    }));

  groups
    .command('describe <group>')
    .description('state and members; per partition: committed offset, log start offset, high watermark, lag, member, pause')
    .option('--json', 'print JSON')
    .action(action(async (groupId: string, opts: { json?: boolean }, cmd: Command) => {
      const d = await apiFor(cmd).describeGroup(groupId);
      if (opts.json) console.log(JSON.stringify(d));
      else printDescription(d);
    }));

  groups
    .command('delete <group>')
    .description('delete a group with no live members: its committed offsets, subscriptions, pauses, checkpoints and history')
    .action(action(async (groupId: string, _opts: unknown, cmd: Command) => {
      await apiFor(cmd).deleteGroup(groupId);
      console.log(`deleted group ${groupId}`);
    }));
}

function printDescription(d: GroupDescription): void {
  console.log(`group ${d.groupId}: state ${d.state}, generation ${d.generationId}, assignor ${d.assignor ?? '-'}, ${d.members.length} members`);
  if (d.members.length > 0) {
    console.log();
    printTable(['MEMBER', 'CLIENT', 'COMMIT-MODE', 'GENERATION', 'PARTITIONS'], d.members.map((m) => [
      m.memberId, m.clientId, m.commitMode, m.generationId, m.assignment.map((a) => `${a.topic}/${a.partition}`).join(',') || '-',
    ]));
  }
  console.log();
  const rows = d.subscriptions.flatMap((s) =>
    s.partitions.map((p) => [
      s.topic, p.partition, p.committedOffset, p.logStartOffset, p.highWatermark, p.lag, p.memberId,
      p.paused ? `paused: ${p.paused.code}` : 'ok', s.deliveryMode, s.startPolicy, s.onOutOfRange,
    ]),
  );
  printTable(['TOPIC', 'PARTITION', 'COMMITTED-OFFSET', 'LOG-START-OFFSET', 'HIGH-WATERMARK', 'LAG', 'MEMBER', 'STATUS', 'DELIVERY', 'START', 'ON-OUT-OF-RANGE'], rows);
  for (const s of d.subscriptions) {
    for (const p of s.partitions) if (p.paused) console.log(`\n${s.topic}/${p.partition} is paused: ${p.paused.message}`);
  }
  if (d.alerts.length > 0) {
    console.log('\nalerts (most recent first):');
    for (const a of d.alerts) console.log(`  ${new Date(a.createdAt).toISOString()}  ${a.kind}  ${a.topic}/${a.partition}  ${a.message}`);
  }
  if (d.resets.length > 0) {
    console.log('\noffset resets (most recent first):');
    printTable(['EXECUTED-AT', 'BY', 'TOPIC', 'PARTITION', 'OLD-OFFSET', 'NEW-OFFSET', 'SPEC'], d.resets.map((r) => [
      new Date(r.executedAt).toISOString(), r.requestedBy, r.topic, r.partition, r.oldOffset, r.newOffset, r.spec,
    ]));
  }
  if (d.checkpoints.length > 0) {
    console.log('\ncheckpoints:');
    for (const c of d.checkpoints) console.log(`  ${c.name}  saved ${new Date(c.createdAt).toISOString()}  topics ${c.topics.join(',')}`);
  }
}

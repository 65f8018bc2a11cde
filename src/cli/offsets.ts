/**
 * `onelog offsets reset`: move a group's committed offsets (replay or skip); a dry run unless `--execute`.
 * With live members the reset waits for the coordinator to apply it at a safe point. Each executed reset is
 * recorded with who asked (`user@host`). `onelog offsets checkpoint save G NAME` names the group's offsets
 * for a later `--to-checkpoint NAME`.
 */
import os from 'node:os';
import type { Command } from 'commander';
import type { ResetOffsetsResult, ResetSpec } from '../protocol/offsets.js';
import { OnelogError } from '../protocol/errors.js';
import { parseTimestamp } from '../protocol/json-records.js';
import { action, apiFor, parseInteger, printTable } from './common.js';

interface ResetOptions {
  topic?: string;
  toCheckpoint?: string;
  partition?: number;
  toEarliest?: boolean;
  toLatest?: boolean;
  toOffset?: number;
  toDatetime?: string;
  shiftBy?: number;
  execute?: boolean;
  json?: boolean;
}

/** The one reset target the flags name. @throws OnelogError `INVALID_REQUEST` unless exactly one is given */
function resetSpec(o: ResetOptions): ResetSpec {
  const specs: ResetSpec[] = [];
  if (o.toEarliest) specs.push({ to: 'earliest' });
  if (o.toLatest) specs.push({ to: 'latest' });
  if (o.toOffset !== undefined) specs.push({ to: 'offset', offset: o.toOffset });
  if (o.toDatetime !== undefined) specs.push({ to: 'datetime', timestamp: parseTimestamp(o.toDatetime, '--to-datetime', 'INVALID_REQUEST') });
  if (o.shiftBy !== undefined) specs.push({ to: 'shift', shiftBy: o.shiftBy });
  if (o.toCheckpoint !== undefined) specs.push({ to: 'checkpoint', name: o.toCheckpoint });
  if (specs.length !== 1) {
    throw new OnelogError(
      'INVALID_REQUEST',
      'give exactly one of --to-earliest, --to-latest, --to-offset N, --to-datetime ISO, --shift-by N, --to-checkpoint NAME ' +
        `(got ${specs.length})`,
    );
  }
  return specs[0]!;
}

export function registerOffsets(program: Command): void {
  const offsets = program.command('offsets').description("move consumer groups' committed offsets");

  offsets
    .command('reset <group>')
    .description('plan (default) or --execute a reset of the group\'s committed offsets on a topic')
    .option('--topic <topic>', 'topic (required, except with --to-checkpoint: default every topic the checkpoint holds)')
    .option('--partition <p>', 'only this partition (default: all)', parseInteger('--partition', 0))
    .option('--to-earliest', 'to the log start offset')
    .option('--to-latest', 'to the high watermark')
    .option('--to-offset <n>', 'to this offset (clamped to the log)', parseInteger('--to-offset', 0))
    .option('--to-datetime <iso>', 'to the first record with timestamp >= this (ISO-8601 or epoch ms)')
    .option('--shift-by <n>', 'by N offsets (negative = back)', parseInteger('--shift-by'))
    .option('--to-checkpoint <name>', 'to the offsets saved by `offsets checkpoint save GROUP NAME`')
    .option('--execute', 'apply the plan (without it, nothing changes)')
    .option('--json', 'print JSON')
    .action(action(async (groupId: string, o: ResetOptions, cmd: Command) => {
      const spec = resetSpec(o);
      const api = apiFor(cmd);
      let topics: string[];
      if (o.topic !== undefined) topics = [o.topic];
      else if (spec.to === 'checkpoint') topics = await checkpointTopics(api, groupId, spec.name);
      else throw new OnelogError('INVALID_REQUEST', '--topic is required (except with --to-checkpoint)');
      const results: ResetOffsetsResult[] = [];
      for (const topic of topics) {
        results.push(await api.resetOffsets({
          groupId, topic, spec, execute: o.execute === true, requestedBy: `${os.userInfo().username}@${os.hostname()}`,
          ...(o.partition === undefined ? {} : { partition: o.partition }),
        }));
      }
      if (o.json) {
        console.log(JSON.stringify(o.topic !== undefined ? results[0] : results));
        return;
      }
      printTable(
        ['GROUP', 'TOPIC', 'PARTITION', 'CURRENT-OFFSET', 'NEW-OFFSET', 'NOTE'],
        results.flatMap((result) => result.partitions.map((p) => [groupId, result.topic, p.partition, p.currentOffset, p.newOffset,
          p.clamped ? `clamped to ${p.clamped}` : ''])),
      );
      console.log(o.execute ? 'executed: the group resumes from NEW-OFFSET' : 'dry run: nothing changed; add --execute to apply');
    }));

  const checkpoint = offsets.command('checkpoint').description('named snapshots of a group\'s committed offsets');
  checkpoint
    .command('save <group> <name>')
    .description('save the group\'s committed offsets (every topic) under NAME, replacing one of that name')
    .option('--json', 'print JSON')
    .action(action(async (groupId: string, name: string, o: { json?: boolean }, cmd: Command) => {
      const saved = await apiFor(cmd).saveCheckpoint({ groupId, name });
      if (o.json) {
        console.log(JSON.stringify(saved));
        return;
      }
      printTable(['GROUP', 'CHECKPOINT', 'TOPIC', 'PARTITION', 'OFFSET'], saved.offsets.map((x) => [groupId, name, x.topic, x.partition, x.offset]));
      console.log(`saved checkpoint ${name}: reset to it with 'onelog offsets reset ${groupId} --to-checkpoint ${name} --execute'`);
    }));
}

/** The topics a group's checkpoint holds. @throws OnelogError `UNKNOWN_CHECKPOINT` */
async function checkpointTopics(api: ReturnType<typeof apiFor>, groupId: string, name: string): Promise<string[]> {
  const found = (await api.describeGroup(groupId)).checkpoints.find((c) => c.name === name);
  if (!found) throw new OnelogError('UNKNOWN_CHECKPOINT', `group ${groupId} has no checkpoint named ${name}`, { groupId, name });
  return found.topics;
}

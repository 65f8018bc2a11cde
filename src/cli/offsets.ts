/** `onelog offsets reset`: move a group's committed offsets (replay or skip). Dry run unless `--execute`. */
import type { Command } from 'commander';
import type { ResetSpec } from '../protocol/api.js';
import { OnelogError } from '../protocol/errors.js';
import { parseTimestamp } from '../protocol/json-records.js';
import { action, apiFor, parseInteger, printTable } from './common.js';

interface ResetOptions {
  topic: string;
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
  if (specs.length !== 1) {
    throw new OnelogError(
      'INVALID_REQUEST',
      `give exactly one of --to-earliest, --to-latest, --to-offset N, --to-datetime ISO, --shift-by N (got ${specs.length})`,
    );
  }
  return specs[0]!;
}

export function registerOffsets(program: Command): void {
  const offsets = program.command('offsets').description("move consumer groups' committed offsets");

  offsets
    .command('reset <group>')
    .description('plan (default) or --execute a reset of the group\'s committed offsets on a topic')
    .requiredOption('--topic <topic>', 'topic')
    .option('--partition <p>', 'only this partition (default: all)', parseInteger('--partition', 0))
    .option('--to-earliest', 'to the log start offset')
    .option('--to-latest', 'to the high watermark')
    .option('--to-offset <n>', 'to this offset (clamped to the log)', parseInteger('--to-offset', 0))
    .option('--to-datetime <iso>', 'to the first record with timestamp >= this (ISO-8601 or epoch ms)')
    .option('--shift-by <n>', 'by N offsets (negative = back)', parseInteger('--shift-by'))
    .option('--execute', 'apply the plan (without it, nothing changes)')
    .option('--json', 'print JSON')
    .action(action(async (groupId: string, o: ResetOptions, cmd: Command) => {
      const result = await apiFor(cmd).resetOffsets({
        groupId, topic: o.topic, spec: resetSpec(o), execute: o.execute === true,
        ...(o.partition === undefined ? {} : { partition: o.partition }),
      });
      if (o.json) {
        console.log(JSON.stringify(result));
        return;
      }
      printTable(
        ['GROUP', 'TOPIC', 'PARTITION', 'CURRENT-OFFSET', 'NEW-OFFSET', 'NOTE'],
        result.partitions.map((p) => [groupId, result.topic, p.partition, p.currentOffset, p.newOffset,
          p.clamped ? `clamped to ${p.clamped}` : '']),
      );
      console.log(result.executed ? 'executed: the group resumes from NEW-OFFSET' : 'dry run: nothing changed; add --execute to apply');
    }));
}

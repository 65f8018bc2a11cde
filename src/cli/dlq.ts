/**
 * `onelog dlq ...`: a subscription's dead letters (docs/retries.md): list them with their depth, redrive them to
 * the group (dry run unless `--execute`), purge them (dry run unless `--execute`). Executed redrives and purges
 * are recorded with who asked (`user@host`), as offset resets are.
 */
import os from 'node:os';
import type { Command } from 'commander';
import { OnelogError } from '../protocol/errors.js';
import { action, apiFor, parseInteger, printTable } from './common.js';

interface DlqOptions {
  topic: string;
  json?: boolean;
  limit?: number;
  offset?: number;
  offsets?: number[];
  all?: boolean;
  before?: number;
  execute?: boolean;
}

const requestedBy = () => `${os.userInfo().username}@${os.hostname()}`;
const iso = (ms: number) => new Date(ms).toISOString();
/**
 * `--offsets 3,5,9`: offsets >= 0.
 * @throws OnelogError `INVALID_REQUEST` naming the flag and the value that is not one
 */
const parseOffsets = (value: string): number[] => value.split(',').map(parseInteger('--offsets (each)', 0));

export function registerDlq(program: Command): void {
  const dlq = program.command('dlq').description('list, redrive and purge the dead letters of a group\'s subscription');

  dlq
    .command('list <group>')
    .description('depth, then each dead letter: its offset, original position, attempts, reason, failure times, key and value preview')
    .requiredOption('--topic <topic>', 'the subscribed topic')
    .option('--limit <n>', 'most dead letters listed, oldest first (1 to 10000, default 100)', parseInteger('--limit', 1, 10_000))
    .option('--json', 'print JSON: { groupId, topic, deadLetterTopic, depth, records }')
    .action(action(async (groupId: string, o: DlqOptions, cmd: Command) => {
      const list = await apiFor(cmd).listDeadLetters({ groupId, topic: o.topic, ...(o.limit !== undefined ? { limit: o.limit } : {}) });
      if (o.json) {
        console.log(JSON.stringify(list));
        return;
      }
      console.log(`group ${groupId}, topic ${o.topic}: ${list.depth} dead letter(s) in ${list.deadLetterTopic}`);
      if (list.records.length === 0) return;
      console.log();
      printTable(['OFFSET', 'ORIGINAL', 'ATTEMPTS', 'FIRST-FAILURE', 'LAST-FAILURE', 'KEY', 'VALUE', 'REASON'], list.records.map((r) => [
        r.offset, `${r.original.topic}/${r.original.partition}@${r.original.offset}`, r.attempts, iso(r.firstFailureAt), iso(r.lastFailureAt),
        r.key, r.valuePreview === null ? null : oneLine(r.valuePreview, 60), oneLine(r.reason, 80),
      ]));
    }));

  dlq
    .command('redrive <group>')
    .description('send dead letters back to this group only, as attempt 1 (dry run unless --execute)')
    .requiredOption('--topic <topic>', 'the subscribed topic')
    .option('--offset <offset>', 'one dead letter, by its offset in the dead-letter topic', parseInteger('--offset', 0))
    .option('--offsets <list>', 'a selection of dead letters, by their offsets, comma-separated (1 to 10000)', parseOffsets)
    .option('--all', 'every waiting dead letter')
    .option('--execute', 'apply (default: print what would be redriven)')
    .option('--json', 'print JSON')
    .action(action(async (groupId: string, o: DlqOptions, cmd: Command) => {
      if ([o.offset !== undefined, o.offsets !== undefined, o.all === true].filter(Boolean).length !== 1) {
        throw new OnelogError('INVALID_REQUEST', 'give one of --offset O, --offsets O1,O2,... or --all');
      }
      const chosen = o.all ? { all: true } : o.offsets ? { offsets: o.offsets } : { offset: o.offset! };
      const result = await apiFor(cmd).redriveDeadLetters({
        groupId, topic: o.topic, ...chosen, execute: o.execute === true, requestedBy: requestedBy(),
      });
      if (o.json) {
        console.log(JSON.stringify(result));
        return;
      }
      const verb = result.executed ? 'redrove' : 'would redrive (dry run; add --execute)';
      console.log(`${verb} ${result.records.length} dead letter(s) of group ${groupId}, topic ${o.topic}; depth now ${result.depth}`);
      if (result.records.length > 0) {
        printTable(['OFFSET', 'ORIGINAL', 'ATTEMPTS'], result.records.map((r) =>
          [r.offset, `${r.original.topic}/${r.original.partition}@${r.original.offset}`, r.attempts]));
      }
    }));

  dlq
    .command('purge <group>')
    .description('discard the dead letters below an offset of the dead-letter topic (dry run unless --execute)')
    .requiredOption('--topic <topic>', 'the subscribed topic')
    .requiredOption('--before <offset>', 'discard dead letters with a lower offset', parseInteger('--before', 0))
    .option('--execute', 'apply (default: print what would be discarded)')
    .option('--json', 'print JSON')
    .action(action(async (groupId: string, o: DlqOptions, cmd: Command) => {
      const result = await apiFor(cmd).purgeDeadLetters({
        groupId, topic: o.topic, beforeOffset: o.before!, execute: o.execute === true, requestedBy: requestedBy(),
      });
      if (o.json) console.log(JSON.stringify(result));
      else {
        const verb = result.executed ? 'purged' : 'would purge (dry run; add --execute)';
        console.log(`${verb} ${result.records} dead letter(s) of group ${groupId}, topic ${o.topic}; depth now ${result.depth}`);
      }
    }));
}

/** Text on one line, cut to `max` characters. */
function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** `onelog topics ...`: create, list, describe, delete-records. */
import type { Command } from 'commander';
import type { TopicConfig } from '../protocol/api.js';
import { OnelogError } from '../protocol/errors.js';
import { action, apiFor, parseInteger, printTable } from './common.js';

/** Kafka's topic setting names and the API's camelCased ones. */
const CONFIG_NAMES: Record<string, keyof TopicConfig> = {
  'cleanup.policy': 'cleanupPolicy',
  'retention.ms': 'retentionMs',
  'retention.bytes': 'retentionBytes',
  'segment.bytes': 'segmentBytes',
};

/**
 * `NAME=VALUE` pairs with Kafka's names to a partial topic config.
 * @throws OnelogError `INVALID_CONFIG` for an unknown name or a malformed pair, listing the valid names
 */
export function parseConfig(pairs: string[]): Partial<TopicConfig> {
  const out: Record<string, string | number> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    const name = eq < 0 ? pair : pair.slice(0, eq);
    const key = CONFIG_NAMES[name];
    if (eq < 0 || key === undefined) {
      throw new OnelogError(
        'INVALID_CONFIG',
        `${eq < 0 ? `expected NAME=VALUE, got ${JSON.stringify(pair)}` : `unknown setting ${name}`}: valid names are ${Object.keys(CONFIG_NAMES).join(', ')}`,
        { setting: name },
      );
    }
    const value = pair.slice(eq + 1);
    out[key] = key === 'cleanupPolicy' ? value : /^-?\d+$/.test(value) ? Number(value) : value;
  }
  return out as Partial<TopicConfig>;
}

export function registerTopics(program: Command): void {
  const topics = program.command('topics').description('create, list and inspect topics');

  topics
    .command('create <topic>')
    .description('create a topic')
    .requiredOption('--partitions <n>', 'number of partitions (1 to 10000)', parseInteger('--partitions', 1))
    .option('--config <name=value>', `topic setting, repeatable: ${Object.keys(CONFIG_NAMES).join(', ')}`,
      (v: string, acc: string[]) => [...acc, v], [] as string[])
    .option('--json', 'print the topic as JSON')
    .action(action(async (topic: string, opts: { partitions: number; config: string[]; json?: boolean }, cmd: Command) => {
      const created = await apiFor(cmd).createTopic({ topic, partitions: opts.partitions, config: parseConfig(opts.config) });
      if (opts.json) console.log(JSON.stringify(created));
      else console.log(`created topic ${created.topic} with ${created.partitions.length} partitions`);
    }));

  topics
    .command('list')
    .description('list topics')
    .option('--json', 'print JSON')
    .action(action(async (opts: { json?: boolean }, cmd: Command) => {
      const list = await apiFor(cmd).listTopics();
      if (opts.json) console.log(JSON.stringify(list));
      else printTable(['TOPIC', 'PARTITIONS'], list.map((t) => [t.topic, t.partitions]));
    }));

  topics
    .command('describe <topic>')
    .description('show each partition\'s log start offset and high watermark, and the topic settings')
    .option('--json', 'print JSON')
    .action(action(async (topic: string, opts: { json?: boolean }, cmd: Command) => {
      const d = await apiFor(cmd).describeTopic(topic);
      if (opts.json) {
        console.log(JSON.stringify(d));
        return;
      }
      const c = d.config;
      console.log(`topic ${d.topic}: cleanup.policy=${c.cleanupPolicy} retention.ms=${c.retentionMs} ` +
        `retention.bytes=${c.retentionBytes} segment.bytes=${c.segmentBytes}`);
      printTable(
        ['PARTITION', 'LOG-START-OFFSET', 'HIGH-WATERMARK', 'RECORDS'],
        d.partitions.map((p) => [p.partition, p.logStartOffset, p.highWatermark, p.highWatermark - p.logStartOffset]),
      );
    }));

  topics
    .command('delete-records <topic>')
    .description('move a partition\'s log start offset forward: records before OFFSET are never served again')
    .requiredOption('--partition <p>', 'partition', parseInteger('--partition', 0))
    .requiredOption('--before <offset>', 'first offset to keep', parseInteger('--before', 0))
    .option('--json', 'print JSON')
    .action(action(async (topic: string, opts: { partition: number; before: number; json?: boolean }, cmd: Command) => {
      const r = await apiFor(cmd).deleteRecords({ topic, partition: opts.partition, beforeOffset: opts.before });
      if (opts.json) console.log(JSON.stringify(r));
      else console.log(`${r.topic}/${r.partition}: log start offset ${r.previousLogStartOffset} -> ${r.logStartOffset}`);
    }));
}

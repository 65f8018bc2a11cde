/** `onelog topics ...`: create, list, describe, delete-records. */
import type { Command } from 'commander';
import type { TopicDescription } from '../protocol/topics.js';
import { parseKafkaConfig, TOPIC_SETTINGS } from '../protocol/topic-config.js';
import { action, apiFor, parseInteger, printTable } from './common.js';
import { printHealthTable } from './health-table.js';

const SETTING_NAMES = TOPIC_SETTINGS.map((s) => s.kafkaName).join(', ');
const collect = (v: string, acc: string[]) => [...acc, v];

/** Prints a topic's settings with Kafka's names, then a table of its partitions. */
function printTopic(d: TopicDescription): void {
  const settings = TOPIC_SETTINGS.map((s) => `${s.kafkaName}=${String(d.config[s.name])}`);
  console.log(`topic ${d.topic}: ${settings.join(' ')}`);
  // A describe names each partition's leader (broker id, URL, lease epoch; `-` on the embedded default, `none` for a
  // partition nobody leads); an alter's answer does not.
  const leaders = d.partitions.some((p) => p.leader !== undefined);
  printTable(
    ['PARTITION', 'LOG-START-OFFSET', 'HIGH-WATERMARK', 'RECORDS', ...(leaders ? ['LEADER', 'LEADER-URL', 'LEADER-EPOCH'] : [])],
    d.partitions.map((p) => [p.partition, p.logStartOffset, p.highWatermark, p.highWatermark - p.logStartOffset, ...(!leaders ? [] : p.leader
      ? [p.leader.brokerId ?? '-', p.leader.url ?? '-', p.leader.epoch ?? '-'] : ['none', '-', '-'])]),
  );
}

export function registerTopics(program: Command): void {
  const topics = program.command('topics').description('create, list and inspect topics');

  topics
    .command('create <topic>')
    .description('create a topic')
    .requiredOption('--partitions <n>', 'number of partitions (1 to 10000)', parseInteger('--partitions', 1))
    .option('--config <name=value>', `topic setting, repeatable: ${SETTING_NAMES}`, collect, [] as string[])
    .option('--json', 'print the topic as JSON')
    .action(action(async (topic: string, opts: { partitions: number; config: string[]; json?: boolean }, cmd: Command) => {
      const created = await apiFor(cmd).createTopic({ topic, partitions: opts.partitions, config: parseKafkaConfig(opts.config) });
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
    .description('show each partition\'s log start offset and high watermark, and the topic settings; with --groups, every group\'s lag and health')
    .option('--groups', 'add every group subscribed to the topic, partition by partition (lag, time lag, headroom, state)')
    .option('--json', 'print JSON')
    .action(action(async (topic: string, opts: { groups?: boolean; json?: boolean }, cmd: Command) => {
      const d = await apiFor(cmd).describeTopic(topic, { groups: opts.groups ?? false });
      if (opts.json) {
        console.log(JSON.stringify(d));
        return;
      }
      printTopic(d);
      if (d.groups) {
        console.log();
        if (d.groups.length === 0) console.log(`no group subscribes to ${topic}`);
        else printHealthTable(['GROUP'], d.groups.flatMap((g) => g.partitions.map((partition) => ({ lead: [g.groupId], partition }))));
      }
    }));

  topics
    .command('alter <topic>')
    .description('change topic settings; the others keep their values')
    .requiredOption('--config <name=value>', `setting to change, repeatable: ${SETTING_NAMES}`, collect, [] as string[])
    .option('--json', 'print the topic as JSON')
    .action(action(async (topic: string, opts: { config: string[]; json?: boolean }, cmd: Command) => {
      const d = await apiFor(cmd).alterTopic({ topic, config: parseKafkaConfig(opts.config) });
      if (opts.json) console.log(JSON.stringify(d));
      else printTopic(d);
    }));

  topics
    .command('enforce-retention <topic>')
    .description('apply the topic\'s retention now: move each partition\'s log start offset past expired records')
    .option('--json', 'print JSON')
    .action(action(async (topic: string, opts: { json?: boolean }, cmd: Command) => {
      const r = await apiFor(cmd).enforceRetention(topic);
      if (opts.json) {
        console.log(JSON.stringify(r));
        return;
      }
      printTable(
        ['PARTITION', 'PREVIOUS-LOG-START-OFFSET', 'LOG-START-OFFSET', 'REASON'],
        r.partitions.map((p) => [p.partition, p.previousLogStartOffset, p.logStartOffset, p.reason ?? 'nothing expired']),
      );
    }));

  topics
    .command('compact <topic>')
    .description('compact a topic now (cleanup.policy compact): keep the latest record per key')
    .option('--wait', 'wait for the pass to finish and print what it did')
    .option('--json', 'print JSON')
    .action(action(async (topic: string, opts: { wait?: boolean; json?: boolean }, cmd: Command) => {
      const r = await apiFor(cmd).compactTopic({ topic, wait: opts.wait === true });
      if (opts.json) console.log(JSON.stringify(r));
      else if (!r.completed) console.log(`compaction of ${topic} started; add --wait to wait for it`);
      else {
        printTable(
          ['PARTITION', 'SEGMENTS', 'RECORDS-BEFORE', 'RECORDS-AFTER', 'TOMBSTONES-REMOVED', 'BYTES-BEFORE', 'BYTES-AFTER'],
          r.partitions.map((p) => [p.partition, p.segments, p.recordsBefore, p.recordsAfter, p.tombstonesRemoved, p.bytesBefore, p.bytesAfter]),
        );
      }
    }));

  topics
    .command('delete <topic>')
    .description('delete a topic: its records, and every group\'s subscription to it and committed offsets of it')
    .option('--json', 'print JSON')
    .action(action(async (topic: string, opts: { json?: boolean }, cmd: Command) => {
      const r = await apiFor(cmd).deleteTopic(topic);
      if (opts.json) console.log(JSON.stringify(r));
      else console.log(`deleted topic ${r.topic} (${r.partitions} partitions)${r.groups.length > 0 ? `; subscriptions of ${r.groups.join(', ')} removed` : ''}`);
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

/**
 * `onelog consume TOPIC --group G`: joins the group as a member (fetching and committing on the binary data
 * path, or receiving over a WebSocket
 * when the group's subscription says push) and prints one JSON object per record
 * `{topic, partition, offset, timestamp, key, value, headers, attempt, original}` (key, value and header values
 * as UTF-8 text; `attempt` and `original` say which delivery this is and where the record first was, for
 * records of retry tiers), committing after printing (at-least-once; `--commit-mode before-processing` for
 * at-most-once). Stops after `--max-records N`, after `--idle-timeout-ms MS` with nothing new (counted from the last
 * record, or from when the member was last granted partitions if later), or on
 * SIGINT/SIGTERM, committing what was printed. A partition that stops for the group (e.g.
 * `OFFSET_OUT_OF_RANGE`) is reported on stderr with its code and context while the other partitions keep
 * flowing; the exit code is then 1.
 *
 * With `--exec CMD` the CLI is the handler (docs/retries.md): CMD runs through `sh -c` once per record, in order
 * per partition, with the value on stdin and `ONELOG_TOPIC`, `ONELOG_PARTITION`, `ONELOG_OFFSET`, `ONELOG_KEY`,
 * `ONELOG_ATTEMPT`, `ONELOG_TIMESTAMP` and `ONELOG_ORIGINAL_TOPIC` / `_PARTITION` / `_OFFSET` set; exit 0
 * processes the record, any other exit nacks it with the last line of CMD's stderr as the reason (without a
 * retry policy, it stops with that error). CMD's output is not shown. One JSON line per outcome: `{topic, partition, offset, key, attempt, original, outcome: 'processed' | 'nacked', exitCode,
 * reason?, movedTo?}`.
 */
import type { Command } from 'commander';
import type { Consumer, ConsumedMessage } from '../member/consumer.js';
import type { HttpApi } from '../client/http-api.js';
import { COMMIT_MODES, START_POLICIES } from '../protocol/types.js';
import type { CommitMode, DeliveryMode, StartPolicy } from '../protocol/types.js';
import { OnelogError } from '../protocol/errors.js';
import { action, binaryApiFor, describeGroupIfAny, parseInteger, reportError } from './common.js';
import { RecordLines } from './record-lines.js';
import { stopTriggers } from './stop-triggers.js';

/** Most records and bytes per fetch of a pull consumer. */
const FETCH_RECORDS = 5000;
const FETCH_BYTES = 4 * 1024 * 1024;

interface ConsumeOptions {
  group: string;
  from?: string;
  maxRecords?: number;
  idleTimeoutMs?: number;
  commitMode: string;
  sessionTimeoutMs?: number;
  exec?: string;
  rejectExitCode?: number;
}

/** Writes to stdout, waiting when the pipe is full; rejects if the reader went away (EPIPE). */
function writeOut(text: string | Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    process.stdout.write(text, (err) => (err ? reject(err) : resolve()));
  });
}

/**
 * How the group consumes the topic: `share` (a share group: acquire and acknowledge), `push` (over a WebSocket) or
 * `pull` (also for a new group).
 * @throws OnelogError `INVALID_REQUEST` when the subscription pushes to a webhook: the broker delivers it
 */
async function deliveryMode(api: HttpApi, groupId: string, topic: string): Promise<DeliveryMode | 'share'> {
  const group = await describeGroupIfAny(api, groupId);
  // A group's type is its subscriptions' (a share group's other topics say so too).
  if (group?.subscriptions.some((s) => s.type === 'share')) return 'share';
  const subscription = group?.subscriptions.find((s) => s.topic === topic);
  if (subscription?.deliveryMode === 'push' && subscription.pushEndpoint) {
    throw new OnelogError('INVALID_REQUEST', `group ${groupId} delivers ${topic} to the webhook ${subscription.pushEndpoint}: the broker ` +
      `sends its records there. Consume with another group, or 'onelog groups alter ${groupId} --topic ${topic} --push-endpoint ""'`, {
      groupId, topic,
    });
  }
  return subscription?.deliveryMode ?? 'pull';
}

/**
 * Runs the `--exec` command on a record: exit 0 processes it; another exit nacks it (the reason: the last line
 * of its stderr) and answers where it went.
 * @throws OnelogError the command's failure, as `HANDLER_FAILED`-like `INVALID_REQUEST`, when there is no retry policy to nack to
 */
async function execute(command: string, m: ConsumedMessage, consumer: { nack: Consumer['nack'] }): Promise<Record<string, unknown>> {
  const where = { topic: m.topic, partition: m.partition, offset: m.offset, key: m.key?.toString('utf8') ?? null, attempt: m.attempt, original: m.original };
  const { runPerRecord } = await import('./exec.js');
  const { exitCode, reason } = await runPerRecord(command, m);
  if (exitCode === 0) return { ...where, outcome: 'processed', exitCode };
  try {
    const movedTo = await consumer.nack(m, reason);
    return { ...where, outcome: 'nacked', exitCode, reason, movedTo };
  } catch (err) {
    if ((err as OnelogError).code !== 'NO_RETRY_POLICY') throw err;
    throw new OnelogError('INVALID_REQUEST', `--exec command exited ${exitCode} on ${m.topic}/${m.partition}@${m.offset}: ${reason} ` +
      '(the group has no retry policy, so the consumer stops here; add one with onelog groups alter ... --retry)', { ...where, exitCode, reason });
  }
}

/** Set when stdout's reader went away (`onelog consume ... | head`): stop, committing what was printed. */
let stdoutClosed = false;

export function registerConsume(program: Command): void {
  program
    .command('consume <topic>')
    .description('read a topic as a consumer group, printing one JSON object per record and committing after printing')
    .requiredOption('--group <group>', 'consumer group id')
    .option('--from <policy>', 'where a new group starts: earliest | latest (default: the subscription\'s, else latest)')
    .option('--max-records <n>', 'exit after N records', parseInteger('--max-records', 1))
    .option('--idle-timeout-ms <ms>', 'exit after MS ms with no new record (counted from when the member holds its partitions)', parseInteger('--idle-timeout-ms', 0))
    .option('--commit-mode <mode>', 'after-processing (at-least-once) | before-processing (at-most-once)', 'after-processing')
    .option('--session-timeout-ms <ms>', 'leave the group after MS ms without a heartbeat (default 45000)', parseInteger('--session-timeout-ms', 1000, 3_600_000))
    .option('--exec <command>', 'run COMMAND (sh -c) per record, value on stdin: exit 0 processes it, any other exit nacks it (docs/retries.md); ' +
      'on a share group exit 0 accepts it, another exit releases it')
    .option('--reject-exit-code <n>', 'share group with --exec: this exit code rejects the record (to the dead letters at once)', parseInteger('--reject-exit-code', 1, 255))
    .action(action(async (topic: string, o: ConsumeOptions, cmd: Command) => {
      if (o.from !== undefined && !START_POLICIES.includes(o.from as StartPolicy)) {
        throw new OnelogError('INVALID_REQUEST', `--from must be earliest or latest, got ${JSON.stringify(o.from)}`);
      }
      if (!COMMIT_MODES.includes(o.commitMode as CommitMode)) {
        throw new OnelogError('INVALID_REQUEST', `--commit-mode must be ${COMMIT_MODES.join(' or ')}, got ${JSON.stringify(o.commitMode)}`);
      }
      const api = await binaryApiFor(cmd);
      const mode = await deliveryMode(api, o.group, topic);
      if (mode === 'share') {
        const { consumeShared } = await import('./consume-share.js');
        try {
          await consumeShared(api, topic, o, writeOut);
        } finally {
          api.close();
        }
        return;
      }
      // Loaded here: the other commands do not load the consumer.
      const [{ Consumer }, { PushConsumer }] = await Promise.all([import('../member/consumer.js'), import('../client/push-consumer.js')]);
      const common = {
        groupId: o.group,
        commitMode: o.commitMode as CommitMode,
        ...(o.sessionTimeoutMs ? { sessionTimeoutMs: o.sessionTimeoutMs } : {}),
        ...(o.from ? { startPolicy: o.from as StartPolicy } : {}),
      };
      // The subscription's delivery mode decides: pull (fetch) or push (a WebSocket stream with credit).
      const consumer = mode === 'push'
        ? new PushConsumer(api.url, { ...common, clientId: 'onelog-cli', creditRecords: Math.min(o.maxRecords ?? 1000, 1000) }, api.connection)
        : new Consumer(api, {
          ...common,
          clientId: 'onelog-cli',
          // Large fetches: the commit and the next fetch's round trip come once per 5,000 records, not per 500 (larger live
          // sets cost more in GC than the round trips they save).
          maxRecords: Math.min(o.maxRecords ?? FETCH_RECORDS, FETCH_RECORDS),
          maxBytes: FETCH_BYTES,
          maxWaitMs: Math.min(500, Math.max(o.idleTimeoutMs ?? 500, 10)),
        });
      consumer.subscribe({ topic });
      let printed = 0;
      // A pull consumer's lines are written a fetched batch at a time (one write, not one per record).
      const batched = consumer instanceof Consumer;
      const output = new RecordLines(writeOut);
      const triggers = stopTriggers(() => void consumer.stop(), o.idleTimeoutMs);
      const armIdle = triggers.arm;
      // A closed pipe ends consuming like a signal: the record whose line failed is not committed.
      process.stdout.on('error', (err: NodeJS.ErrnoException) => {
        if (err.code !== 'EPIPE') throw err;
        stdoutClosed = true;
        void consumer.stop();
      });
      let partitionErrors = 0;
      try {
        await consumer.run({
          // The idle time-out counts from when the member holds partitions too: joining (a rebalance, a group with
          // retry tiers) is not idle time.
          onPartitionsAssigned: armIdle,
          onPartitionError: (err) => {
            partitionErrors++;
            reportError(err);
          },
          eachMessage: ({ message: m }) => {
            armIdle();
            const counted = () => {
              printed++;
              if (o.maxRecords !== undefined && printed >= o.maxRecords) void consumer.stop();
            };
            if (o.exec !== undefined) return execute(o.exec, m, consumer).then((outcome) => writeOut(`${JSON.stringify(outcome)}\n`)).then(counted);
            counted();
            if (batched) return output.push(m);
            output.push(m);
            return output.flush();
          },
          // A fetched batch's lines are written before its commit.
          ...(batched ? { afterBatch: () => output.flush() } : {}),
        });
      } catch (err) {
        // The reader went away: the records being written are not committed; the ones before them are.
        if (!stdoutClosed && (err as NodeJS.ErrnoException).code !== 'EPIPE') throw err;
      } finally {
        triggers.dispose();
        api.close();
      }
      if (partitionErrors > 0) process.exitCode = 1;
    }));
}

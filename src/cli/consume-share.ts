/**
 * `onelog consume TOPIC --group G` on a share group (docs/consumer-groups.md): the CLI is one member among any
 * number, acquiring records of the topic's partitions. It prints one JSON object per record, as for a consumer group
 * (`attempt` is the record's delivery count), and accepts it once printed. With `--exec CMD` the command is the
 * handler, one record at a time: exit 0 accepts the record, `--reject-exit-code N` rejects it (to the dead letters at
 * once), any other exit releases it (delivered again, to this member or another); one JSON line per outcome once the
 * broker took it: `{topic, partition, offset, key, deliveryCount, outcome: 'accepted' | 'released' | 'rejected' |
 * 'refused', exitCode, reason?, error?}` (refused: its lock had ended first). Stops after `--max-records N`
 * outcomes, after `--idle-timeout-ms MS` with nothing acquired, or on SIGINT/SIGTERM; what it acquired and did not
 * handle is released.
 */
import type { ConsumedMessage } from '../member/consumer.js';
import type { HttpApi } from '../client/http-api.js';
import type { SharedMessage } from '../client/share-consumer.js';
import { RecordLines } from './record-lines.js';
import { stopTriggers } from './stop-triggers.js';

/** What `onelog consume` passes on to a share group's member. */
export interface ShareConsumeOptions {
  group: string;
  maxRecords?: number;
  idleTimeoutMs?: number;
  sessionTimeoutMs?: number;
  exec?: string;
  rejectExitCode?: number;
}

/** A shared record as the consume output and `--exec` see a record: its delivery count as `attempt`, itself as `original`. */
function asConsumed(m: SharedMessage): ConsumedMessage {
  return { ...m, attempt: m.deliveryCount, original: { topic: m.topic, partition: m.partition, offset: m.offset, timestamp: m.timestamp } };
}

/** Consumes `topic` as a member of the share group `o.group` until it stops (see the file's comment). */
export async function consumeShared(api: HttpApi, topic: string, o: ShareConsumeOptions, write: (text: string | Buffer) => Promise<void>): Promise<void> {
  const { ShareConsumer } = await import('../client/share-consumer.js');
  const exec = o.exec;
  const consumer = new ShareConsumer(api, {
    groupId: o.group, clientId: 'onelog-cli', maxWaitMs: Math.min(500, Math.max(o.idleTimeoutMs ?? 500, 10)),
    // A command per record holds one record at a time, its outcome sent as it ends: a command that kills this process
    // has only the record it was given in hand, so only that one is redelivered and counted.
    ...(exec === undefined ? { maxRecords: Math.min(o.maxRecords ?? 500, 500) } : { maxRecords: 1, maxUnacked: 1 }),
    ...(o.sessionTimeoutMs !== undefined ? { sessionTimeoutMs: o.sessionTimeoutMs } : {}),
  });
  consumer.subscribe({ topic });
  const output = new RecordLines(write);
  let handled = 0;
  const triggers = stopTriggers(() => void consumer.stop(), o.idleTimeoutMs);
  // A closed pipe ends consuming like a signal (`onelog consume ... | head`): what was not printed is not accepted.
  const onStdoutError = (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
    void consumer.stop();
  };
  process.stdout.on('error', onStdoutError);
  /** Each --exec outcome, printed once the broker took it: `{ exitCode, reason }` by offset. */
  const ran = new Map<string, { exitCode: number; reason: string; deliveryCount: number; key: string | null }>();
  try {
    await consumer.run({
      eachMessage: async ({ message }) => {
        triggers.arm();
        if (exec === undefined) {
          output.push(asConsumed(message));
          await output.flush(); // printed before it is accepted
        } else {
          const { runPerRecord } = await import('./exec.js');
          const { exitCode, reason } = await runPerRecord(exec, asConsumed(message));
          if (exitCode === o.rejectExitCode) message.reject(reason);
          else if (exitCode !== 0) message.release({ reason });
          ran.set(`${message.partition}/${message.offset}`, { exitCode, reason, deliveryCount: message.deliveryCount, key: message.key?.toString('utf8') ?? null });
        }
        if (o.maxRecords !== undefined && ++handled >= o.maxRecords) void consumer.stop();
      },
      onAcknowledged: async (outcomes) => {
        if (exec === undefined) return;
        for (const a of outcomes) {
          const r = ran.get(`${a.partition}/${a.offset}`);
          ran.delete(`${a.partition}/${a.offset}`);
          if (r === undefined) continue; // released unhandled at a stop
          const outcome = a.error !== undefined ? 'refused' : a.type === 'accept' ? 'accepted' : a.type === 'reject' ? 'rejected' : 'released';
          const line = {
            topic, partition: a.partition, offset: a.offset, key: r.key, deliveryCount: r.deliveryCount, outcome, exitCode: r.exitCode,
            ...(r.exitCode === 0 ? {} : { reason: r.reason }), ...(a.error !== undefined ? { error: (a.error as Error).message } : {}),
          };
          await write(`${JSON.stringify(line)}\n`);
        }
      },
    });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPIPE') throw err;
  } finally {
    triggers.dispose();
    process.stdout.off('error', onStdoutError);
  }
}

/**
 * `onelog consume TOPIC --group G` on a share group (docs/consumer-groups.md): the CLI is one member among any
 * number, acquiring records of the topic's partitions. It prints one JSON object per record, as for a consumer group
 * (`attempt` is the record's delivery count), and accepts it once printed. With `--exec CMD` the command is the
 * handler: exit 0 accepts the record, `--reject-exit-code N` rejects it (to the dead letters at once), any other exit
 * releases it (delivered again, to this member or another); one JSON line per outcome: `{topic, partition, offset,
 * key, deliveryCount, outcome: 'accepted' | 'released' | 'rejected', exitCode, reason?}`. Stops after `--max-records N`
 * outcomes, after `--idle-timeout-ms MS` with nothing acquired, or on SIGINT/SIGTERM; what it acquired and did not
 * handle is released.
 */
import type { ConsumedMessage } from '../client/consumer.js';
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
  const consumer = new ShareConsumer(api, {
    groupId: o.group, clientId: 'onelog-cli', maxRecords: Math.min(o.maxRecords ?? 500, 500), maxWaitMs: Math.min(500, Math.max(o.idleTimeoutMs ?? 500, 10)),
    ...(o.sessionTimeoutMs !== undefined ? { sessionTimeoutMs: o.sessionTimeoutMs } : {}),
  });
  consumer.subscribe({ topic });
  const output = new RecordLines(write);
  let handled = 0;
  const triggers = stopTriggers(() => void consumer.stop(), o.idleTimeoutMs);
  try {
    await consumer.run({
      eachMessage: async ({ message }) => {
        triggers.arm();
        if (o.exec === undefined) {
          output.push(asConsumed(message));
          await output.flush(); // printed before it is accepted
        } else {
          const { runPerRecord } = await import('./exec.js');
          const { exitCode, reason } = await runPerRecord(o.exec, asConsumed(message));
          const outcome = exitCode === 0 ? 'accepted' : exitCode === o.rejectExitCode ? 'rejected' : 'released';
          if (outcome === 'rejected') message.reject(reason);
          else if (outcome === 'released') message.release();
          const line = {
            topic, partition: message.partition, offset: message.offset, key: message.key?.toString('utf8') ?? null, deliveryCount: message.deliveryCount,
            outcome, exitCode, ...(exitCode === 0 ? {} : { reason }),
          };
          await write(`${JSON.stringify(line)}\n`);
        }
        if (o.maxRecords !== undefined && ++handled >= o.maxRecords) void consumer.stop();
      },
    });
  } finally {
    triggers.dispose();
  }
}

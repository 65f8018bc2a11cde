/**
 * The push consumer: a group member that receives records over a WebSocket (`GET /groups/:group/stream`)
 * instead of fetching them. Flow control is by credit: it grants a window of `creditRecords` records and
 * `creditBytes` bytes, and gives credit back as its handler finishes records, so the broker never sends more
 * than the window and the backlog stays in the log. After each frame's records are handled it acknowledges
 * the last one (the broker commits its offset + 1: at-least-once); with `commitMode: 'before-processing'`
 * the broker commits before sending (at-most-once). A handler that throws nacks its record when the
 * subscription has a retry policy (docs/retries.md). Records come in binary frames (one RecordBatch v2 each,
 * src/protocol/push-frames.ts: no JSON or base64 per record); from a broker that sends JSON frames, as JSON.
 * Protocol: docs/delivery.md.
 */
import WebSocket from 'ws';
import type { RawData } from 'ws';
import type { NackResult } from '../protocol/nacks.js';
import type { TopicPartition } from '../protocol/partitions.js';
import { OnelogError } from '../protocol/errors.js';
import { jsonToRecord } from '../protocol/json-records.js';
import { decodePushRecords } from '../protocol/push-frames.js';
import type { JsonRecord } from '../protocol/json-records.js';
import type { CommitMode, StartPolicy, StoredRecord } from '../protocol/types.js';
import { consumedMessage } from '../member/consumer.js';
import type { ConsumedMessage, RunOptions } from '../member/consumer.js';
import { connectionOf } from './connection.js';
import type { Connection } from './connection.js';

/** Push consumer settings; units in the names. */
export interface PushConsumerOptions {
  groupId: string;
  /** @default 'after-processing' */
  commitMode?: CommitMode;
  /** @default the subscription's, else 'latest' */
  startPolicy?: StartPolicy;
  /** @default 45000 */
  sessionTimeoutMs?: number;
  /** Records the broker may send ahead of the handler. @default 1000; >= 1 */
  creditRecords?: number;
  /** Bytes (keys and values) the broker may send ahead of the handler. @default 1048576; >= 1 */
  creditBytes?: number;
  /** @default 'push-consumer' */
  clientId?: string;
}

/** A records frame, decoded from either form. */
interface RecordsFrame {
  topic: string;
  partition: number;
  records: StoredRecord[];
}

export class PushConsumer {
  private readonly topics: string[] = [];
  private ws: WebSocket | null = null;
  /** Nacks sent and not yet answered, by `topic/partition/offset`. */
  private readonly nacks = new Map<string, { resolve: (r: NackResult) => void; reject: (err: Error) => void }>();
  private stopping = false;
  private handling = false;
  private running: Promise<void> | null = null;

  /** @param url the server's HTTP address, e.g. `http://127.0.0.1:7070` */
  constructor(
    private readonly url: string,
    private readonly options: PushConsumerOptions,
    /** The bearer token sent with the WebSocket upgrade and the TLS settings. @default from the environment, as HttpApi's */
    private readonly connection: Connection = connectionOf(),
  ) {}

  /** Adds a topic to receive. */
  subscribe(request: { topic: string }): void {
    if (!this.topics.includes(request.topic)) this.topics.push(request.topic);
  }

  /**
   * Receives until {@link stop}. Resolves once stopped (the group left); rejects with the broker's fatal
   * error, a handler's error (its record unacknowledged, as those after it), or `NETWORK_ERROR` when the
   * stream closes without a stop (the broker went away): records sent but not acknowledged are redelivered.
   * @throws OnelogError `INVALID_REQUEST` with `afterBatch`: each record is acknowledged as its handler resolves, so
   *   there is no batch to end (buffer nothing past a handler)
   */
  run(handlers: RunOptions): Promise<void> {
    if (this.running) throw new OnelogError('INVALID_REQUEST', 'this consumer is already running');
    if (handlers.afterBatch) {
      throw new OnelogError('INVALID_REQUEST', 'afterBatch is for pull consumers: a push consumer acknowledges each record as its handler resolves');
    }
    if (this.topics.length === 0) throw new OnelogError('INVALID_REQUEST', 'call subscribe({ topic }) before run()');
    this.stopping = false;
    this.running = this.loop(handlers).finally(() => (this.running = null));
    return this.running;
  }

  /**
   * Stops after the record in hand, acknowledges what was handled, and leaves the group (records sent but
   * not handled go to the partition's next owner). Called from a handler it returns at once.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.handling) return; // the frame in hand acknowledges, then closes
    this.ws?.close(1000, 'consumer stopped');
    await this.running?.catch(() => {});
  }

  /**
   * "I could not process this record" (docs/retries.md): the broker moves it to the subscription's next retry
   * tier (or its dead-letter topic); it then counts as handled and the next ack covers it. A handler that
   * throws is nacked the same way when the subscription has a retry policy.
   * @throws OnelogError `NO_RETRY_POLICY` without a retry policy; `INVALID_OFFSET` for a record not received;
   *   fencing errors; `NETWORK_ERROR` when the stream is not open
   */
  nack(message: Pick<ConsumedMessage, 'topic' | 'partition' | 'offset'>, reason: string): Promise<NackResult> {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) {
      return Promise.reject(new OnelogError('NETWORK_ERROR', 'nack() needs the push stream open (while run() runs)'));
    }
    const key = `${message.topic}/${message.partition}/${message.offset}`;
    return new Promise<NackResult>((resolve, reject) => {
      this.nacks.set(key, { resolve, reject });
      ws.send(JSON.stringify({ type: 'nack', topic: message.topic, partition: message.partition, offset: message.offset, reason }));
    });
  }

  /** Settles the nack an answer frame names; false when it names none. */
  private settleNack(frame: { type: string; topic?: unknown; partition?: unknown; offset?: unknown; movedTo?: unknown }): boolean {
    const key = `${String(frame.topic)}/${String(frame.partition)}/${String(frame.offset)}`;
    const pending = this.nacks.get(key);
    if (!pending) return false;
    this.nacks.delete(key);
    if (frame.type === 'nacked') pending.resolve(frame.movedTo as NackResult);
    else pending.reject(OnelogError.fromJSON(frame as { code?: unknown; message?: unknown }));
    return true;
  }

  private loop(handlers: RunOptions): Promise<void> {
    const creditRecords = this.options.creditRecords ?? 1000;
    const creditBytes = this.options.creditBytes ?? 1024 * 1024;
    const streamUrl = `${this.url.replace(/^http/, 'ws').replace(/\/+$/, '')}/groups/${encodeURIComponent(this.options.groupId)}/stream`;
    return new Promise<void>((resolve, reject) => {
      const ws = new WebSocket(streamUrl, { headers: this.connection.headers, ...this.connection.tls });
      this.ws = ws;
      let failure: unknown;
      let queue: Promise<void> = Promise.resolve();
      const send = (frame: unknown) => {
        if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(frame));
      };
      ws.on('open', () => {
        send({
          type: 'subscribe', topics: this.topics, clientId: this.options.clientId ?? 'push-consumer', frames: 'binary',
          ...(this.options.commitMode ? { commitMode: this.options.commitMode } : {}),
          ...(this.options.startPolicy ? { startPolicy: this.options.startPolicy } : {}),
          ...(this.options.sessionTimeoutMs ? { sessionTimeoutMs: this.options.sessionTimeoutMs } : {}),
          ...(handlers.onPartitionsAssigned ? { assignments: true } : {}),
        });
        send({ type: 'credit', records: creditRecords, bytes: creditBytes });
      });
      // Frames are handled one after another, in arrival order (the order of each partition).
      const enqueue = (frame: RecordsFrame) => {
        queue = queue.then(() => this.handle(frame, handlers, send)).catch((err: unknown) => {
          failure ??= err;
          ws.close(1000, 'handler failed');
        });
      };
      ws.on('message', (data: RawData, isBinary: boolean) => {
        if (isBinary) {
          try {
            enqueue(decodePushRecords(data as Buffer));
          } catch (err) {
            failure ??= err;
            ws.close(1000, 'bad frame');
          }
          return;
        }
        const frame = JSON.parse(data.toString()) as
          | { type: 'records'; topic: string; partition: number; records: JsonRecord[] }
          | { type: 'partition-error' | 'assigned' | 'error' | 'nacked'; [k: string]: unknown };
        if (frame.type === 'records') {
          const { topic, partition, records } = frame as { topic: string; partition: number; records: JsonRecord[] };
          enqueue({ topic, partition, records: records.map((r) => jsonToRecord(r, 'base64')) });
        } else if (frame.type === 'partition-error') {
          const error = OnelogError.fromJSON(frame.error as { code?: unknown; message?: unknown });
          const where = { topic: String(frame.topic), partition: Number(frame.partition) };
          if (handlers.onPartitionError) handlers.onPartitionError(error, where);
          else process.emitWarning(error.message, { code: error.code });
        } else if (frame.type === 'assigned') {
          handlers.onPartitionsAssigned?.(frame.partitions as TopicPartition[]);
        } else if (!this.settleNack(frame)) {
          failure ??= OnelogError.fromJSON(frame as { code?: unknown; message?: unknown });
        }
      });
      ws.on('error', (err) => {
        failure ??= new OnelogError('NETWORK_ERROR', `push stream ${streamUrl}: ${err.message}`, { url: streamUrl });
      });
      ws.on('close', (code, reason) => {
        this.ws = null;
        for (const pending of this.nacks.values()) pending.reject(new OnelogError('NETWORK_ERROR', `push stream ${streamUrl} closed before the nack was answered`));
        this.nacks.clear();
        // Closed by the broker or the network, not by stop(): the stream is gone, never a silent end.
        if (!this.stopping && failure === undefined) {
          failure = new OnelogError('NETWORK_ERROR', `push stream ${streamUrl} closed (${code}${reason.length ? `: ${reason.toString()}` : ''})`, {
            url: streamUrl, closeCode: code,
          });
        }
        void queue.then(() => (failure === undefined ? resolve() : reject(failure)));
      });
    });
  }

  /** Hands a frame's records to the handler, then acknowledges the last and gives the credit back. */
  private async handle(frame: RecordsFrame, handlers: RunOptions, send: (frame: unknown) => void): Promise<void> {
    let bytes = 0;
    let last: ConsumedMessage | undefined;
    this.handling = true;
    try {
      for (const record of frame.records) {
        if (this.stopping) break;
        const message = consumedMessage(record, frame.topic, frame.partition, !this.topics.includes(frame.topic));
        try {
          const done = handlers.eachMessage({ topic: frame.topic, partition: frame.partition, message, tx: undefined });
          if (done) await done;
        } catch (err) {
          // With a retry policy the record moves to a retry tier and counts as handled; without, it stops here.
          await this.nack(message, err instanceof Error ? err.message : String(err)).catch((nackErr: unknown) => {
            throw (nackErr as OnelogError).code === 'NO_RETRY_POLICY' ? err : nackErr;
          });
        }
        last = message;
        bytes += (record.key?.length ?? 0) + (record.value?.length ?? 0);
      }
    } finally {
      this.handling = false;
      if (last) {
        send({ type: 'ack', topic: frame.topic, partition: frame.partition, offset: last.offset });
        send({ type: 'credit', records: frame.records.length, bytes });
      }
      if (this.stopping) this.ws?.close(1000, 'consumer stopped');
    }
  }
}

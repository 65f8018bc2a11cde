/**
 * Push delivery to one connected member with credit-based flow control (as NATS JetStream's flow control or
 * Reactive Streams' request(n)): the member grants credits, in records and bytes; the broker sends records
 * only while both are positive and never beyond them, so a slow member holds at most its credit window and
 * the rest of the backlog stays in the log. The session is a real group member on the broker's side (the
 * {@link Consumer} of `src/client`, run over the broker's API in-process): assignment, rebalances, fencing
 * and `groups describe` apply. The member acknowledges records; an ack of a record commits its offset + 1
 * (after-processing); with `before-processing` the broker commits each frame's records as it sends them
 * (at-most-once). No record is committed that was not handed to the socket (docs/delivery.md).
 *
 * Transport-agnostic: `send` carries frames to the member (JSON text; a records frame binary when the member asked
 * for `frames: 'binary'`, src/protocol/push-frames.ts); the WebSocket face is `src/server/push-socket.ts`.
 */
import { Consumer } from '../member/consumer.js';
import type { ConsumedMessage } from '../member/consumer.js';
import type { OnelogApi } from '../protocol/api.js';
import type { NackResult } from '../protocol/nacks.js';
import { OnelogError } from '../protocol/errors.js';
import { recordToJson } from '../protocol/json-records.js';
import { encodePushRecords } from '../protocol/push-frames.js';
import type { StoredRecord } from '../protocol/types.js';
import type { CommitMode, StartPolicy } from '../protocol/types.js';

/** What a member asks for when it opens a push stream. */
export interface PushSubscribe {
  groupId: string;
  topics: string[];
  /** @default 'after-processing' */
  commitMode?: CommitMode;
  startPolicy?: StartPolicy;
  /** @default 45000 */
  sessionTimeoutMs?: number;
  /** @default 'push-member' */
  clientId?: string;
  /** Send an `assigned` frame each time the member is granted partitions (docs/delivery.md). @default false */
  assignments?: boolean;
  /**
   * How records frames are sent: `json` (text, bytes base64) or `binary` (one RecordBatch v2 per frame,
   * src/protocol/push-frames.ts); every other frame is JSON text. @default 'json'
   */
  frames?: PushFrames;
}

/** How a push stream sends its records frames ({@link PushSubscribe.frames}). */
export type PushFrames = 'json' | 'binary';
export const PUSH_FRAMES: readonly PushFrames[] = ['json', 'binary'];

/** Frames the broker sends as JSON text. Bytes are base64. */
export type PushFrame =
  | { type: 'records'; topic: string; partition: number; records: ReturnType<typeof recordToJson>[] }
  | { type: 'partition-error'; topic: string; partition: number; error: Record<string, unknown> }
  | { type: 'assigned'; partitions: Array<{ topic: string; partition: number }> }
  | { type: 'nacked'; topic: string; partition: number; offset: number; movedTo: NackResult }
  | { type: 'error'; code: string; message: string };

/** The session's own counters: what it holds and what is out with the member. */
export interface PushStats {
  /** Credit left, records and bytes. */
  creditRecords: number;
  creditBytes: number;
  /** Records (and their bytes) sent and not yet acknowledged. */
  unackedRecords: number;
  unackedBytes: number;
  /** Records gathered for the next frame, not yet sent (at most one fetch). */
  bufferedRecords: number;
  /** Records sent since the session opened. */
  sentRecords: number;
}

/** Most records per fetch while pushing: the most a session holds before credit lets it send. */
const PUSH_FETCH_RECORDS = 500;

export class PushSession {
  private readonly consumer: Consumer;
  private readonly running: Promise<void>;
  private creditRecords = 0;
  private creditBytes = 0;
  private readonly unacked = new Map<string, Map<number, number>>(); // `topic/partition` -> offset -> bytes
  private unackedBytes = 0;
  /** `topic/partition` -> the last offset sent: acks may not go past it. */
  private readonly lastSent = new Map<string, number>();
  private unackedRecords = 0;
  private sentRecords = 0;
  /** The frame being gathered: the records as the member's consumer decoded them (views of what it fetched). */
  private frame: { topic: string; partition: number; records: StoredRecord[]; bytes: number } | null = null;
  private creditWaiter: (() => void) | null = null;
  /** Frames being delivered, in order. */
  private sending: Promise<void> = Promise.resolve();
  private closed = false;

  /**
   * Joins the group and starts pushing as credit arrives.
   * @param send delivers one frame to the member (JSON text, or a binary records frame)
   * @param end closes the transport after a fatal error (the membership ended: e.g. an unknown topic)
   * @param isOpen whether the transport still carries frames to the member (false once it started closing)
   */
  constructor(
    api: OnelogApi,
    private readonly subscribe: PushSubscribe,
    private readonly send: (frame: string | Buffer) => void,
    private readonly end: (code: string) => void = () => {},
    private readonly isOpen: () => boolean = () => true,
  ) {
    this.consumer = new Consumer(api, {
      groupId: subscribe.groupId,
      commitMode: subscribe.commitMode ?? 'after-processing',
      // before-processing commits what each frame carries as it is sent (see deliver), never records still unsent.
      autoCommit: false,
      clientId: subscribe.clientId ?? 'push-member',
      maxRecords: PUSH_FETCH_RECORDS,
      maxWaitMs: 500,
      ...(subscribe.startPolicy ? { startPolicy: subscribe.startPolicy } : {}),
      ...(subscribe.sessionTimeoutMs ? { sessionTimeoutMs: subscribe.sessionTimeoutMs } : {}),
    });
    for (const topic of subscribe.topics) this.consumer.subscribe({ topic });
    this.running = this.consumer.run({
      eachMessage: ({ message }) => this.push(message),
      onPartitionError: (error, where) => this.emit({ type: 'partition-error', ...where, error: error.toJSON() }),
      ...(subscribe.assignments ? { onPartitionsAssigned: (partitions) => this.emit({ type: 'assigned', partitions }) } : {}),
    }).catch((err: unknown) => {
      const e = err instanceof OnelogError ? err : new OnelogError('INTERNAL_ERROR', (err as Error).message);
      if (this.closed) return;
      this.emit({ type: 'error', code: e.code, message: e.message });
      this.end(e.code);
    });
  }

  /** The member id of this session's member ('' until joined). */
  get memberId(): string {
    return this.consumer.memberId;
  }

  /**
   * Adds credit (records and bytes); sending resumes.
   * @throws OnelogError `INVALID_REQUEST` for counts that are not integers >= 0
   */
  grant(records: unknown, bytes: unknown): void {
    for (const [name, n] of [['records', records], ['bytes', bytes]] as const) {
      if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) {
        throw new OnelogError('INVALID_REQUEST', `credit ${name} must be an integer >= 0, got ${JSON.stringify(n)}`);
      }
    }
    this.creditRecords += records as number;
    this.creditBytes += bytes as number;
    this.flush();
    const waiter = this.creditWaiter;
    this.creditWaiter = null;
    waiter?.();
  }

  /**
   * Acknowledges a record: commits `offset + 1` for its partition (after-processing), covering every earlier
   * record of the partition that was sent (cumulative, as Kafka's commit). An ack for a partition no longer
   * assigned to this member is dropped.
   * @throws OnelogError `INVALID_OFFSET` for an offset this session did not send (acks never skip records)
   * @throws OnelogError as the commit does (`UNKNOWN_MEMBER_ID`, ... when the member was fenced)
   */
  async ack(topic: string, partition: number, offset: number): Promise<void> {
    this.checkSent('ack', topic, partition, offset);
    const sent = this.unacked.get(`${topic}/${partition}`);
    if (sent) {
      for (const [o, bytes] of sent) {
        if (o > offset) break;
        sent.delete(o);
        this.unackedRecords--;
        this.unackedBytes -= bytes;
      }
    }
    if (this.subscribe.commitMode === 'before-processing') return;
    // A late ack of a partition that moved on is dropped: its records are redelivered to the new owner.
    if (!this.consumer.assignment.some((tp) => tp.topic === topic && tp.partition === partition)) return;
    await this.consumer.commit({ topic, partition, offset });
  }

  /**
   * Nacks a record sent to this member: the broker moves it to the subscription's next retry tier (or its
   * dead-letter topic) through the member's consumer, fenced as a commit; then it counts as processed, and the
   * member's next ack covers it.
   * @throws OnelogError `INVALID_OFFSET` for an offset this session did not send; as {@link Consumer.nack}
   *   (`NO_RETRY_POLICY`, fencing errors)
   */
  async nack(topic: string, partition: number, offset: number, reason: unknown): Promise<NackResult> {
    this.checkSent('nack', topic, partition, offset);
    if (typeof reason !== 'string') throw new OnelogError('INVALID_REQUEST', 'a nack frame needs "reason": a string');
    return this.consumer.nack({ topic, partition, offset }, reason);
  }

  /** @throws OnelogError `INVALID_OFFSET` unless `offset` is of a record this session sent (acks and nacks never skip records) */
  private checkSent(what: 'ack' | 'nack', topic: string, partition: number, offset: number): void {
    const lastSent = this.lastSent.get(`${topic}/${partition}`);
    if (Number.isSafeInteger(offset) && lastSent !== undefined && offset >= 0 && offset <= lastSent) return;
    throw new OnelogError('INVALID_OFFSET', `${what} of ${topic}/${partition} offset ${JSON.stringify(offset)}: ` +
      (lastSent === undefined ? 'nothing of that partition was sent to this member' : `the last record sent of it is ${lastSent}`) +
      `; ${what} the offset of a record received`, { topic, partition, offset, lastSent: lastSent ?? null });
  }

  /** What the session holds now. */
  stats(): PushStats {
    return {
      creditRecords: this.creditRecords, creditBytes: this.creditBytes, unackedRecords: this.unackedRecords,
      unackedBytes: this.unackedBytes, bufferedRecords: this.frame?.records.length ?? 0, sentRecords: this.sentRecords,
    };
  }

  /**
   * Leaves the group; records sent but not acknowledged are redelivered to the partition's next owner. With
   * `abandoned` (the socket closed without a close frame: the client died), it leaves as a crashed member ends: the
   * broker counts the deliveries of the records it held unacknowledged (docs/retries.md).
   */
  async close(options: { abandoned?: boolean } = {}): Promise<void> {
    this.closed = true;
    const waiter = this.creditWaiter;
    this.creditWaiter = null;
    waiter?.();
    // A frame being delivered moves its commit back while the member still holds the partition.
    await this.sending;
    await this.consumer.stop({ abandoned: options.abandoned === true });
    await this.running;
  }

  /**
   * The consumer's handler: gathers a record into the frame being built when credit allows, else sends what
   * is gathered and waits for credit. Synchronous while credit lasts (no microtask per record).
   */
  private push(message: ConsumedMessage): Promise<void> | void {
    if (this.closed) return;
    const bytes = (message.key?.length ?? 0) + (message.value?.length ?? 0);
    if (this.creditRecords <= 0 || this.creditBytes < bytes) {
      this.flush();
      return new Promise<void>((resolve) => (this.creditWaiter = resolve)).then(() => this.push(message));
    }
    if (this.frame && (this.frame.topic !== message.topic || this.frame.partition !== message.partition)) this.flush();
    this.frame ??= { topic: message.topic, partition: message.partition, records: [], bytes: 0 };
    this.frame.records.push(message);
    this.frame.bytes += bytes;
    this.creditRecords--;
    this.creditBytes -= bytes;
    const key = `${message.topic}/${message.partition}`;
    let sent = this.unacked.get(key);
    if (!sent) this.unacked.set(key, (sent = new Map()));
    sent.set(message.offset, bytes);
    this.lastSent.set(key, message.offset);
    this.unackedRecords++;
    this.unackedBytes += bytes;
    if (this.frame.records.length === 1) setImmediate(() => this.flush());
  }

  /** Sends the frame being built, if any (after the frames before it). */
  private flush(): void {
    const frame = this.frame;
    if (!frame || this.closed) return;
    this.frame = null;
    this.sending = this.sending.then(() => this.deliver(frame));
  }

  /**
   * Sends a frame. With before-processing the broker commits its end first (at-most-once) and sends it only
   * if the member is still there; a member that left meanwhile gets the commit moved back to the frame's first
   * record, so no record is committed that was not handed to the socket.
   */
  private async deliver(frame: { topic: string; partition: number; records: StoredRecord[] }): Promise<void> {
    if (this.subscribe.commitMode === 'before-processing') {
      const first = frame.records[0]!.offset;
      const last = frame.records[frame.records.length - 1]!.offset;
      const committed = await this.consumer.commit({ topic: frame.topic, partition: frame.partition, offset: last }).then(() => true, () => false);
      if (!committed) return;
      if (this.closed || !this.isOpen()) {
        await this.consumer.commit({ topic: frame.topic, partition: frame.partition, offset: first - 1 }).catch(() => {});
        return;
      }
    }
    if (this.closed) return;
    this.sentRecords += frame.records.length;
    if (this.subscribe.frames === 'binary') this.send(encodePushRecords(frame.topic, frame.partition, frame.records));
    else this.emit({ type: 'records', topic: frame.topic, partition: frame.partition, records: frame.records.map((r) => recordToJson(r, 'base64')) });
  }

  private emit(frame: PushFrame): void {
    if (!this.closed) this.send(JSON.stringify(frame));
  }
}

/**
 * A share group's member (docs/consumer-groups.md): acquires records of its topics (each locked for it), hands each
 * to `eachMessage` in turn, and acknowledges it: accepted when the handler resolves, released (delivered again, to
 * this member or another) when it throws, unless the handler said otherwise with `message.accept()`,
 * `message.release({ delayMs })` or `message.reject(reason)` (to the dead letters at once); `message.renew()` holds a
 * record another lock period, for a slow handler. A fetched batch's outcomes go in one request once its handlers ran
 * (or every `maxUnacked` records); a batch whose handlers take half its lock period has what it handled so far
 * acknowledged and the rest of it renewed, so a slow batch does not lose its records to another member.
 *
 * ```ts
 * const consumer = onelog.shareConsumer({ groupId: 'indexers' });
 * consumer.subscribe({ topic: 'edits' });
 * await consumer.run({ eachMessage: async ({ message }) => { await index(message.value); } });
 * ```
 */
import { randomUUID } from 'node:crypto';
import type { OnelogApi } from '../protocol/api.js';
import type { ShareAckRequest, SharedRecord } from '../protocol/share-groups.js';
import { OnelogError } from '../protocol/errors.js';

/** Options of a {@link ShareConsumer}. */
export interface ShareConsumerOptions {
  /** The share group (created with `onelog groups create G --topic T --type share`). */
  groupId: string;
  /** The member's id, which its acknowledgements carry. @default `<clientId>-<random UUID>` */
  memberId?: string;
  /** Names the member in its default id. @default 'share-consumer' */
  clientId?: string;
  /** Most records per acquisition. @default 100; 1 to 10,000 */
  maxRecords?: number;
  /** How long an acquisition waits while none can be acquired, ms. @default 500; 0 to 30,000 */
  maxWaitMs?: number;
  /** The broker releases the member's records when it is not heard from for this long, ms. @default 45000 (the broker's) */
  sessionTimeoutMs?: number;
  /** Most outcomes held before they are sent, records; 1 sends each as its handler ends. @default maxRecords (one request per batch) */
  maxUnacked?: number;
}

/** A record acquired by the member, with what it may say of it. */
export interface SharedMessage extends SharedRecord {
  topic: string;
  /** Processed: done (the default once the handler resolves). */
  accept(): void;
  /** Deliver it again, not before `delayMs` (the default, with no delay, when the handler throws). */
  release(options?: { delayMs?: number; reason?: string }): void;
  /** To the dead letters at once, with `reason`. */
  reject(reason?: string): void;
  /** Holds it another lock period from now (a slow handler); resolves once the broker extended the lock. */
  renew(): Promise<void>;
}

/** What {@link ShareConsumer.run} calls. */
export interface ShareRunOptions {
  eachMessage(payload: { topic: string; partition: number; message: SharedMessage }): Promise<void> | void;
  /**
   * Told of a handler that threw (its record is released) and of a batch's outcomes the broker refused for a partition
   * (`INVALID_RECORD_STATE`: its lock had expired, and the record goes, or went, to another delivery). Must not throw.
   * @default nothing
   */
  onError?(err: unknown, record?: { topic: string; partition: number; offset: number }): void;
  /** Told of each request of outcomes once the broker answered it: each record's outcome, refused ones with `error`. */
  onAcknowledged?(outcomes: Array<ShareAckRequest['acks'][number] & { topic: string; error?: unknown }>): Promise<void> | void;
}

type Outcome = Omit<ShareAckRequest['acks'][number], 'partition' | 'offset'>;

export class ShareConsumer {
  readonly memberId: string;
  private readonly topics: string[] = [];
  private stopping = false;
  private running: Promise<void> | null = null;

  /** @throws OnelogError `INVALID_REQUEST` without a group id */
  constructor(private readonly api: Pick<OnelogApi, 'shareFetch' | 'shareAcknowledge'>, private readonly options: ShareConsumerOptions) {
    if (typeof options.groupId !== 'string' || options.groupId === '') throw new OnelogError('INVALID_REQUEST', 'a share consumer needs its groupId');
    this.memberId = options.memberId ?? `${options.clientId ?? 'share-consumer'}-${randomUUID()}`;
  }

  /** Adds a topic the member acquires records of. */
  subscribe({ topic }: { topic: string }): void {
    if (!this.topics.includes(topic)) this.topics.push(topic);
  }

  /**
   * Acquires and handles records until {@link stop}; resolves then, once the last batch's outcomes were sent (records
   * acquired and not handled are released).
   * @throws OnelogError what an acquisition or an acknowledgement fails with (not a handler's error: see onError)
   */
  run(handlers: ShareRunOptions): Promise<void> {
    if (this.running) throw new OnelogError('INVALID_REQUEST', 'this share consumer is already running');
    if (this.topics.length === 0) throw new OnelogError('INVALID_REQUEST', 'call subscribe({ topic }) before run()');
    this.stopping = false;
    this.running = this.loop(handlers).finally(() => (this.running = null));
    return this.running;
  }

  /** Stops after the record being handled; resolves once {@link run} has ended. Called from a handler, returns at once. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (!this.inHandler) await this.running?.catch(() => {});
  }

  private inHandler = false;

  private async loop(handlers: ShareRunOptions): Promise<void> {
    const { groupId } = this.options;
    const waitMs = Math.floor((this.options.maxWaitMs ?? 500) / this.topics.length);
    for (let round = 0; !this.stopping; round++) {
      const topic = this.topics[round % this.topics.length]!;
      const { records, lockMs } = await this.api.shareFetch({
        groupId, topic, memberId: this.memberId, maxRecords: this.options.maxRecords ?? 100, maxWaitMs: waitMs,
        ...(this.options.sessionTimeoutMs !== undefined ? { sessionTimeoutMs: this.options.sessionTimeoutMs } : {}),
      });
      const maxUnacked = this.options.maxUnacked ?? Infinity;
      let acks: ShareAckRequest['acks'] = [];
      let lockedAt = performance.now();
      for (let i = 0; i < records.length; i++) {
        const record = records[i]!;
        if (this.stopping) {
          acks.push({ partition: record.partition, offset: record.offset, type: 'release' });
          continue;
        }
        acks.push({ partition: record.partition, offset: record.offset, ...(await this.handle(topic, record, handlers)) });
        const slow = performance.now() - lockedAt > lockMs / 2;
        if (acks.length >= maxUnacked || slow) {
          await this.acknowledge(topic, acks, handlers);
          acks = [];
        }
        if (slow && i + 1 < records.length && !this.stopping) {
          const rest = records.slice(i + 1).map((r) => ({ partition: r.partition, offset: r.offset, type: 'renew' as const }));
          await this.acknowledge(topic, rest, handlers, false);
          lockedAt = performance.now();
        }
      }
      if (acks.length > 0) await this.acknowledge(topic, acks, handlers);
    }
    // Stopped: the member leaves, so what it may still hold elsewhere is released now, not at its session's end.
    await this.api.shareAcknowledge({ groupId, topic: this.topics[0]!, memberId: this.memberId, acks: [], leave: true });
  }

  /** Sends outcomes; tells `onAcknowledged` (unless `report` is false: renewals) and `onError` of refused partitions. */
  private async acknowledge(topic: string, acks: ShareAckRequest['acks'], handlers: ShareRunOptions, report = true): Promise<void> {
    const answer = await this.api.shareAcknowledge({ groupId: this.options.groupId, topic, memberId: this.memberId, acks });
    const refused = new Map<number, unknown>();
    for (const p of answer.partitions) {
      if (!p.error) continue;
      const err = OnelogError.fromJSON(p.error as unknown as Record<string, unknown>);
      refused.set(p.partition, err);
      handlers.onError?.(err, { topic, partition: p.partition, offset: Number((p.error as { offset?: number }).offset ?? -1) });
    }
    if (report) await handlers.onAcknowledged?.(acks.map((a) => ({ ...a, topic, ...(refused.has(a.partition) ? { error: refused.get(a.partition) } : {}) })));
  }

  /** Runs the handler on one record; its outcome: what the handler said, else accept (resolved) or release (threw). */
  private async handle(topic: string, record: SharedRecord, handlers: ShareRunOptions): Promise<Outcome> {
    let said: Outcome | undefined;
    const message: SharedMessage = {
      ...record, topic,
      accept: () => void (said ??= { type: 'accept' }),
      release: (o = {}) => void (said ??= {
        type: 'release', ...(o.delayMs !== undefined ? { delayMs: o.delayMs } : {}), ...(o.reason !== undefined ? { reason: o.reason } : {}),
      }),
      reject: (reason) => void (said ??= { type: 'reject', ...(reason !== undefined ? { reason } : {}) }),
      renew: async () => {
        await this.api.shareAcknowledge({ groupId: this.options.groupId, topic, memberId: this.memberId, acks: [{ partition: record.partition, offset: record.offset, type: 'renew' }] });
      },
    };
    this.inHandler = true;
    try {
      await handlers.eachMessage({ topic, partition: record.partition, message });
      return said ?? { type: 'accept' };
    } catch (err) {
      handlers.onError?.(err, { topic, partition: record.partition, offset: record.offset });
      return said ?? { type: 'release' };
    } finally {
      this.inHandler = false;
    }
  }
}

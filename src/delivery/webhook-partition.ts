/**
 * Webhook delivery of one partition (see {@link PartitionPusher}): fetch a batch, POST it, commit its end
 * after the 2xx, in order, with at most `maxInFlight` POSTs in flight and as many batches in memory. With a
 * retry policy, a batch that failed `webhookMaxAttempts` times is split into one POST per record, and a record
 * that fails as often alone is nacked (it moves to the retry tiers) and counts as acknowledged; without one, with
 * `maxDeliveries`, the same with that many POSTs, and the record goes to the dead letters.
 */
import type { FetchedPartition } from '../protocol/fetch.js';
import { backoffDelayMs } from '../common/backoff.js';
import { recordToJson } from '../protocol/json-records.js';
import type { StoredRecord } from '../protocol/types.js';
import type { Logger } from '../common/logger.js';
import { postBatch } from '../security/webhook-post.js';
import type { OutboundPolicy } from '../security/outbound.js';
import type { PostOutcome } from '../security/webhook-post.js';

/** Limits and timings of webhook delivery; every option has a default. */
export interface WebhookOptions {
  /** How long an endpoint has to answer a POST before the attempt counts as failed (Pub/Sub's ack deadline), ms. @default 10000; 1 to 600000 */
  ackTimeoutMs?: number;
  /** Delay before the first retry of a failed batch, ms; it doubles with each further failure (Pub/Sub's retry policy). @default 100; 1 to 600000 */
  minBackoffMs?: number;
  /** Longest delay between two attempts of a batch, ms. @default 60000; minBackoffMs to 3600000 */
  maxBackoffMs?: number;
  /** Most records per POST. @default 500; 1 to 100000 */
  maxRecords?: number;
  /**
   * Byte budget of a POST's keys and values, bytes (a stored batch larger than this is still sent whole;
   * the JSON body is about 4/3 of it, base64). @default 1048576 (1 MiB); 1 to 67108864
   */
  maxBytes?: number;
  /**
   * How long the dispatcher's fetch waits for new records, ms; also its heartbeat pace while the group
   * reconciles (as the client consumer's). A fetch that answered nothing new is followed by the next one no sooner
   * than this after it was sent, on a timer (with 0, at the next timer tick). @default 500; 0 to 30000
   */
  maxWaitMs?: number;
  /** Session timeout of the dispatcher's group membership, ms (it heartbeats on its own timer). @default 45000; 1000 to 3600000 */
  sessionTimeoutMs?: number;
  /** Where POSTs may go (`serve --webhook-allow-private`). @default public addresses only */
  outbound?: OutboundPolicy;
}

/** What a partition's pusher needs from its group member. */
export interface PartitionMember {
  readonly groupId: string;
  readonly endpoint: string;
  readonly maxInFlight: number;
  /**
   * POSTs of a batch before its records are nacked (with a retry policy its webhookMaxAttempts, else its maxDeliveries);
   * null: retried until acknowledged.
   */
  readonly nackAfterAttempts: number | null;
  /** Each failed POST of a record alone counts as a delivery of it (no retry policy; maxDeliveries bounds them). */
  readonly postsAreDeliveries: boolean;
  readonly options: Required<WebhookOptions>;
  readonly logger: Logger;
  /** A fetch of this member (member id and generation added); `assignmentChanged` is handled by the member. */
  fetch(topic: string, partition: number, offset: number): Promise<FetchedPartition>;
  /** Commits `offset` (the NEXT offset to read) for the partition, as this member. */
  commit(topic: string, partition: number, offset: number): Promise<void>;
  /**
   * Nacks records of the partition (they move to the next retry tier, or, without one, to the dead letters), as this
   * member; `deliveries`: the failed deliveries of each (NackRequest.deliveries).
   */
  nack(topic: string, partition: number, offsets: readonly number[], reason: string, deliveries?: number): Promise<void>;
  /** Whether `err` fenced the member (it then rejoins and stops every pusher); other errors are the pusher's. */
  fenced(err: unknown): boolean;
}

/** A fetched batch in the window, from fetch to acknowledgement. */
interface Batch {
  firstOffset: number;
  lastOffset: number;
  /** Committed once acknowledged: the fetch's nextOffset (past offsets compaction emptied). */
  nextOffset: number;
  body: string;
  /** Its records (to split it or nack them). */
  records: readonly StoredRecord[];
  /** `nacking`: out of attempts, its records are being moved to the retry tiers. */
  state: 'pending' | 'sending' | 'acked' | 'failed' | 'nacking';
  /** POSTs of this batch so far (1-based once sent). */
  attempt: number;
  /** Failed attempts; the retry delay doubles with each. */
  failures: number;
  /** The attempt in flight: an outcome from any other attempt is stale and ignored. */
  ctrl: AbortController | null;
  /** A failed batch is sent again once its backoff passed. */
  retryReady: boolean;
  retryTimer: NodeJS.Timeout | null;
}

/** The delay before the attempt after `failures` failed ones: min × 2^(failures−1), at most max (Pub/Sub's retry policy). */
export function backoffMs(failures: number, options: Required<WebhookOptions>): number {
  return backoffDelayMs(failures, { initialMs: options.minBackoffMs, maxMs: options.maxBackoffMs });
}

/**
 * Pushes one assigned partition. The window holds at most `maxInFlight` fetched batches, in offset order:
 *
 * - without failures, every batch in the window is in flight at once; acknowledged batches leave the window
 *   from its head, and the end of that contiguous acknowledged prefix is committed (never past a batch
 *   still unacknowledged);
 * - a failed batch goes back (as Pub/Sub's ordered delivery redelivers what follows a nacked message): every
 *   later batch's attempt is aborted and its acknowledgement, if any, forgotten. The failed batch is sent
 *   again alone after its backoff; the later ones follow only once it is acknowledged.
 *
 * So the endpoint receives a partition's records in order, except for the tail re-sent after a failure.
 */
export class PartitionPusher {
  private readonly window: Batch[] = [];
  private mode: 'running' | 'draining' | 'stopped' = 'running';
  private fetching = false;
  private fetchFailures = 0;
  private fetchTimer: NodeJS.Timeout | null = null;
  private paused = false;
  /** An offset whose commit failed (not by fencing): committed with the next, or retried. */
  private uncommitted: number | null = null;
  private dirty = false;
  private wake: (() => void) | null = null;
  private readonly done: Promise<void>;

  constructor(
    private readonly member: PartitionMember,
    readonly topic: string,
    readonly partition: number,
    /** The next offset to fetch. */
    private position: number,
  ) {
    this.done = this.run().catch((err: unknown) => this.warn({ err: (err as Error).message }, 'webhook partition stopped on an error'));
  }

  /** Stops at once: in-flight POSTs are aborted, nothing more is committed after the commit in progress. */
  async stop(): Promise<void> {
    this.mode = 'stopped';
    this.notify();
    await this.done;
  }

  /**
   * Stops after the POSTs in flight answered (or timed out), committing what they acknowledged: for a
   * revoked partition, so its next owner redelivers as little as possible.
   */
  async drain(): Promise<void> {
    if (this.mode === 'running') this.mode = 'draining';
    this.notify();
    await this.done;
  }

  private async run(): Promise<void> {
    while (true) {
      await this.commitAcknowledged();
      if (this.mode === 'stopped') break;
      if (this.mode === 'draining' && !this.window.some((b) => b.state === 'sending' || b.state === 'nacking')) break;
      if (this.mode === 'running') {
        this.sendReady();
        this.fetchMore();
      }
      await this.changed();
    }
    for (const b of this.window) this.cancel(b);
    if (this.fetchTimer) clearTimeout(this.fetchTimer);
  }

  /** Commits the end of the acknowledged prefix of the window (and drops it from memory). */
  private async commitAcknowledged(): Promise<void> {
    let end = this.uncommitted;
    while (this.window[0]?.state === 'acked') end = this.window.shift()!.nextOffset;
    if (end === null || this.mode === 'stopped') return;
    try {
      await this.member.commit(this.topic, this.partition, end);
      this.uncommitted = null;
    } catch (err) {
      // The mode may have changed while the commit was in flight.
      if (this.member.fenced(err) || this.stopped()) return;
      this.uncommitted = end;
      this.warn({ offset: end, err: (err as Error).message }, 'webhook commit failed; retried with the next');
      this.later(() => undefined, this.member.options.minBackoffMs);
    }
  }

  /** Sends what may go now: the head failed batch (after its backoff) alone, else pending batches, at most `maxInFlight` at once. */
  private sendReady(): void {
    const retrying = this.window.find((b) => b.failures > 0 && b.state !== 'acked');
    if (retrying) {
      if (retrying.state === 'pending' || (retrying.state === 'failed' && retrying.retryReady)) this.send(retrying);
      return;
    }
    let inFlight = this.window.filter((b) => b.state === 'sending').length;
    for (const b of this.window) {
      if (inFlight >= this.member.maxInFlight) break;
      if (b.state !== 'pending') continue;
      this.send(b);
      inFlight++;
    }
  }

  private send(b: Batch): void {
    const { groupId, endpoint, options } = this.member;
    const { topic } = this;
    b.state = 'sending';
    b.attempt++;
    b.retryReady = false;
    const ctrl = new AbortController();
    b.ctrl = ctrl;
    const headers = {
      'onelog-group-id': groupId, 'onelog-topic': topic, 'onelog-partition': String(this.partition),
      'onelog-first-offset': String(b.firstOffset), 'onelog-last-offset': String(b.lastOffset), 'onelog-attempt': String(b.attempt),
    };
    void postBatch(endpoint, b.body, headers, options.ackTimeoutMs, ctrl, options.outbound).then((outcome) => this.settled(b, ctrl, outcome));
  }

  private settled(b: Batch, ctrl: AbortController, outcome: PostOutcome): void {
    if (b.ctrl !== ctrl) return;
    b.ctrl = null;
    if (outcome.ok) {
      b.state = 'acked';
      if (b.failures > 0) this.member.logger.info(this.context(b, { attempt: b.attempt }), 'webhook delivered after retries');
    } else if (this.member.nackAfterAttempts !== null && b.failures + 1 >= this.member.nackAfterAttempts) {
      b.failures++;
      const reason = 'status' in outcome && outcome.status !== undefined ? `webhook ${this.member.endpoint} answered ${outcome.status}` :
        `webhook ${this.member.endpoint}: ${outcome.error ?? 'no answer'}`;
      if (b.records.length > 1) this.split(b, reason);
      else this.nackBatch(b, reason);
    } else {
      b.state = 'failed';
      b.failures++;
      const retryInMs = backoffMs(b.failures, this.member.options);
      this.warn(this.context(b, {
        attempt: b.attempt, ...('status' in outcome ? { status: outcome.status } : {}), ...(outcome.error ? { err: outcome.error } : {}), retryInMs,
      }), 'webhook delivery failed');
      // Go back: everything after the failed batch is sent again after it, in order.
      for (const later of this.window.slice(this.window.indexOf(b) + 1)) {
        this.cancel(later);
        later.state = 'pending';
      }
      b.retryTimer = this.later(() => (b.retryReady = true), retryInMs);
    }
    this.notify();
  }

  /**
   * A batch of several records failed on every attempt: which record the endpoint refuses is unknown, so its
   * records go again one per POST, each with its own attempts, and only those that fail alone are nacked.
   */
  private split(b: Batch, reason: string): void {
    this.warn(this.context(b, { attempt: b.attempt, reason, records: b.records.length }), 'webhook batch failed on every attempt; sending its records one by one');
    const singles = b.records.map((r, i) => this.batch([r], i === b.records.length - 1 ? b.nextOffset : r.offset + 1));
    this.window.splice(this.window.indexOf(b), 1, ...singles);
  }

  /**
   * Out of attempts: nacks the batch's records (they move to the next retry tier, or without one to the dead letters), then the
   * batch counts as acknowledged. A nack that fails (not by fencing) sends the batch again after a backoff.
   */
  private nackBatch(b: Batch, reason: string): void {
    b.state = 'nacking';
    this.warn(this.context(b, { attempt: b.attempt, reason }), 'webhook delivery failed on every attempt; nacking the batch\'s records');
    this.member.nack(this.topic, this.partition, b.records.map((r) => r.offset), reason, this.member.postsAreDeliveries ? b.failures : undefined).then(
      () => (b.state = 'acked'),
      (err: unknown) => {
        if (this.member.fenced(err) || this.stopped()) return;
        this.warn(this.context(b, { err: (err as Error).message }), 'webhook nack failed; sending the batch again');
        b.state = 'failed';
        b.retryTimer = this.later(() => (b.retryReady = true), backoffMs(b.failures, this.member.options));
      },
    ).finally(() => this.notify());
  }

  /** Aborts a batch's attempt and retry timer; an outcome still to come is ignored. */
  private cancel(b: Batch): void {
    b.ctrl?.abort();
    b.ctrl = null;
    if (b.retryTimer) clearTimeout(b.retryTimer);
    b.retryTimer = null;
    b.retryReady = false;
  }

  /** Starts a fetch when the window has room (one at a time; it long-polls, so new records wake it). */
  private fetchMore(): void {
    if (this.fetching || this.paused || this.fetchTimer || this.window.length >= this.member.maxInFlight) return;
    this.fetching = true;
    const sentAt = performance.now();
    this.member.fetch(this.topic, this.partition, this.position).then(
      (p) => this.fetched(p, sentAt),
      (err: unknown) => this.fetchFailed(err),
    ).finally(() => {
      this.fetching = false;
      this.notify();
    });
  }

  /** @param sentAt when the fetch was sent (performance.now()) */
  private fetched(p: FetchedPartition, sentAt: number): void {
    if (this.mode !== 'running') return;
    if (p.error) {
      if (p.error.code === 'OFFSET_OUT_OF_RANGE') {
        // The coordinator paused the partition for the group; an executed reset revokes and grants it again.
        this.paused = true;
        this.warn({ offset: this.position, error: p.error }, 'webhook partition paused');
      } else {
        this.fetchFailed(Object.assign(new Error(p.error.message), { code: p.error.code }));
      }
      return;
    }
    this.fetchFailures = 0;
    if (p.records.length > 0) {
      this.window.push(this.batch(p.records, p.nextOffset));
    } else if (p.nextOffset === this.position) {
      // Nothing new. The answer may have come without any wait (maxWaitMs 0, or a broker ending its long-polls to shut
      // down), all in promises when the broker is in-process: fetching again at once would be a loop that never yields
      // to the event loop (no timer, socket or stop would run again). The next fetch starts on a timer instead.
      this.fetchTimer = this.later(() => (this.fetchTimer = null), Math.max(0, this.member.options.maxWaitMs - (performance.now() - sentAt)));
    }
    this.position = p.nextOffset;
  }

  private fetchFailed(err: unknown): void {
    if (this.mode !== 'running' || this.member.fenced(err)) return;
    this.fetchFailures++;
    const retryInMs = backoffMs(this.fetchFailures, this.member.options);
    this.warn({ offset: this.position, err: (err as Error).message, retryInMs }, 'webhook fetch failed');
    this.fetchTimer = this.later(() => (this.fetchTimer = null), retryInMs);
  }

  private batch(records: readonly StoredRecord[], nextOffset: number): Batch {
    const { groupId } = this.member;
    const { topic } = this;
    const body = JSON.stringify({
      subscription: { groupId, topic }, partition: this.partition, encoding: 'base64',
      records: records.map((r) => recordToJson(r, 'base64')),
    });
    return {
      firstOffset: records[0]!.offset, lastOffset: records[records.length - 1]!.offset, nextOffset, body, records,
      state: 'pending', attempt: 0, failures: 0, ctrl: null, retryReady: false, retryTimer: null,
    };
  }

  /** Runs `fn` after `ms` and wakes the loop (an unref'd timer: it never holds the process open). */
  private later(fn: () => unknown, ms: number): NodeJS.Timeout {
    const timer = setTimeout(() => {
      fn();
      this.notify();
    }, ms);
    timer.unref();
    return timer;
  }

  private notify(): void {
    this.dirty = true;
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  /** Resolves at the next {@link notify} (at once if one came since the last call). */
  private changed(): Promise<void> {
    if (this.dirty) {
      this.dirty = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.wake = () => {
        this.dirty = false;
        resolve();
      };
    });
  }

  private stopped(): boolean {
    return this.mode === 'stopped';
  }

  private context(b: Batch, extra: object): object {
    return { firstOffset: b.firstOffset, lastOffset: b.lastOffset, ...extra };
  }

  private warn(obj: object, msg: string): void {
    const { groupId, endpoint } = this.member;
    this.member.logger.warn({ groupId, topic: this.topic, partition: this.partition, endpoint, ...obj }, msg);
  }
}

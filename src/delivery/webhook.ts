/**
 * Push to an HTTP endpoint (webhook), as Google Pub/Sub push subscriptions: for every subscription with
 * `deliveryMode: 'push'` and a `pushEndpoint`, the broker runs a dispatcher that POSTs the group's records
 * to the endpoint. A 2xx acknowledges a batch and commits its end; anything else, or no answer within
 * `ackTimeoutMs`, is retried with exponential backoff, in order per partition (docs/delivery.md).
 *
 * The dispatcher is a real member of the group ({@link WebhookMember}, clientId `webhook`), using the
 * broker's own API: it joins, heartbeats, fetches and commits with its member id and generation, so
 * assignment, fencing, resets and `groups describe` apply to it as to any consumer. Each assigned partition
 * is pushed by a {@link PartitionPusher}.
 */
import type { FetchedPartition, GroupState, MemberAssignment, OnelogApi, SubscriptionInfo } from '../protocol/api.js';
import { checkInteger } from '../protocol/validate.js';
import type { Logger } from '../storage/logger.js';
import { backoffMs, PartitionPusher } from './webhook-partition.js';
import type { PartitionMember, WebhookOptions } from './webhook-partition.js';

export type { WebhookOptions } from './webhook-partition.js';

/** The slice of the broker's API a dispatcher uses. */
export type WebhookApi = Pick<OnelogApi, 'joinGroup' | 'heartbeat' | 'fetch' | 'commitOffsets' | 'leaveGroup'>;

/** The clientId webhook dispatchers join their groups with (shown by `groups describe`). */
export const WEBHOOK_CLIENT_ID = 'webhook';

const FENCING = new Set(['UNKNOWN_MEMBER_ID', 'ILLEGAL_GENERATION', 'NOT_ASSIGNED']);

/**
 * The options with their defaults.
 * @throws OnelogError `INVALID_REQUEST` naming an option out of its bounds
 */
export function resolveWebhookOptions(o: WebhookOptions = {}): Required<WebhookOptions> {
  const minBackoffMs = checkInteger(o.minBackoffMs ?? 100, 'minBackoffMs', 1, 600_000);
  return {
    ackTimeoutMs: checkInteger(o.ackTimeoutMs ?? 10_000, 'ackTimeoutMs', 1, 600_000),
    minBackoffMs,
    maxBackoffMs: checkInteger(o.maxBackoffMs ?? Math.max(60_000, minBackoffMs), 'maxBackoffMs', minBackoffMs, 3_600_000),
    maxRecords: checkInteger(o.maxRecords ?? 500, 'maxRecords', 1, 100_000),
    maxBytes: checkInteger(o.maxBytes ?? 1024 * 1024, 'maxBytes', 1, 64 * 1024 * 1024),
    maxWaitMs: checkInteger(o.maxWaitMs ?? 500, 'maxWaitMs', 0, 30_000),
    sessionTimeoutMs: checkInteger(o.sessionTimeoutMs ?? 45_000, 'sessionTimeoutMs', 1000, 3_600_000),
  };
}

/** A webhook subscription's delivery settings. */
interface Target {
  groupId: string;
  topic: string;
  endpoint: string;
  maxInFlight: number;
}

/**
 * Runs one dispatcher per webhook subscription. {@link refresh} follows subscription changes (a new
 * endpoint or maxInFlight restarts the dispatcher; pull, or no endpoint, stops it); {@link stop} ends all.
 */
export class WebhookDispatcher {
  private readonly members = new Map<string, WebhookMember>();
  private readonly options: Required<WebhookOptions>;
  private queue: Promise<unknown> = Promise.resolve();
  private stopping: Promise<void> | null = null;

  /** @throws OnelogError `INVALID_REQUEST` for an option out of bounds */
  constructor(private readonly api: WebhookApi, private readonly logger: Logger, options: WebhookOptions = {}) {
    this.options = resolveWebhookOptions(options);
  }

  /** Starts a dispatcher for each subscription given (the catalog's webhook subscriptions, at open). */
  async start(subscriptions: readonly SubscriptionInfo[]): Promise<void> {
    for (const s of subscriptions) await this.refresh(s);
  }

  /**
   * Starts, restarts or stops the dispatcher of a subscription after it changed. Resolves once the old
   * dispatcher stopped (its POSTs aborted, the group left) and the new one, if any, started.
   */
  refresh(sub: SubscriptionInfo): Promise<void> {
    const run = async () => {
      const key = `${sub.groupId}\0${sub.topic}`;
      const current = this.members.get(key);
      const wanted: Target | null = sub.deliveryMode === 'push' && sub.pushEndpoint
        ? { groupId: sub.groupId, topic: sub.topic, endpoint: sub.pushEndpoint, maxInFlight: sub.maxInFlight }
        : null;
      if (current && wanted && current.endpoint === wanted.endpoint && current.maxInFlight === wanted.maxInFlight) return;
      if (current) {
        this.members.delete(key);
        await current.stop();
      }
      if (wanted && !this.stopping) this.members.set(key, new WebhookMember(this.api, wanted, this.options, this.logger));
    };
    const next = this.queue.then(run);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Stops every dispatcher: in-flight POSTs are aborted and each leaves its group. Idempotent; never rejects. */
  stop(): Promise<void> {
    this.stopping ??= this.queue.then(async () => {
      await Promise.all([...this.members.values()].map((m) => m.stop()));
      this.members.clear();
    });
    return this.stopping;
  }
}

/**
 * A webhook dispatcher's membership in its group: joins (clientId `webhook`), heartbeats on its own timer
 * (commits and heartbeats one at a time, so a commit carries the generation of the last answer), starts a
 * {@link PartitionPusher} per granted partition, drains and releases revoked ones, and rejoins after fencing.
 */
class WebhookMember implements PartitionMember {
  readonly groupId: string;
  readonly topic: string;
  readonly endpoint: string;
  readonly maxInFlight: number;
  private memberId = '';
  private generationId = -1;
  private heartbeatIntervalMs = 3000;
  /** The group's state in the last answer: while Reconciling, the member heartbeats at the fetch pace. */
  private state: GroupState = 'Empty';
  /** Held partitions: a pusher (null while paused for the group), and whether it is being released. */
  private readonly held = new Map<number, { pusher: PartitionPusher | null; releasing: boolean }>();
  private queue: Promise<unknown> = Promise.resolve();
  private stopping = false;
  private fencedBy: unknown = null;
  private wake: (() => void) | null = null;
  /** Set by a wake-up that came while not sleeping: the next sleep returns at once. */
  private woken = false;
  private readonly done: Promise<void>;

  constructor(private readonly api: WebhookApi, target: Target, readonly options: Required<WebhookOptions>, readonly logger: Logger) {
    ({ groupId: this.groupId, topic: this.topic, endpoint: this.endpoint, maxInFlight: this.maxInFlight } = target);
    this.done = this.run();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.wakeUp();
    await this.done;
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopping) {
      if (this.fencedBy) {
        this.logger.warn({ ...this.where(), err: (this.fencedBy as Error).message }, 'webhook dispatcher fenced; joining again');
        await this.dropAll();
        this.memberId = '';
        this.fencedBy = null;
      }
      try {
        if (!this.memberId) {
          await this.join();
        } else {
          // While the group reconciles, grants and revocations come sooner than the heartbeat timer (as the client's consumer).
          const reconciling = this.state === 'Reconciling';
          await this.sleep(reconciling ? Math.min(this.heartbeatIntervalMs, this.options.maxWaitMs || 100) : this.heartbeatIntervalMs);
          if (this.stopping || this.fencedBy) continue;
          await this.heartbeat();
        }
        failures = 0;
      } catch (err) {
        if (this.stopping || this.fenced(err)) continue;
        failures++;
        const retryInMs = backoffMs(failures, this.options);
        this.logger.warn({ ...this.where(), err: (err as Error).message, retryInMs }, 'webhook dispatcher: group request failed');
        await this.sleep(retryInMs);
      }
    }
    await this.dropAll();
    if (this.memberId) {
      const memberId = this.memberId;
      await this.serial(() => this.api.leaveGroup({ groupId: this.groupId, memberId })).catch((err: unknown) =>
        this.logger.warn({ ...this.where(), err: (err as Error).message }, 'webhook dispatcher could not leave its group'));
    }
  }

  private async join(): Promise<void> {
    const answer = await this.api.joinGroup({
      groupId: this.groupId, topics: [this.topic], clientId: WEBHOOK_CLIENT_ID, sessionTimeoutMs: this.options.sessionTimeoutMs,
    });
    this.memberId = answer.memberId;
    this.heartbeatIntervalMs = answer.heartbeatIntervalMs;
    this.logger.info({ ...this.where(), memberId: this.memberId, endpoint: this.endpoint }, 'webhook dispatcher joined');
    this.apply(answer);
  }

  private async heartbeat(): Promise<void> {
    await this.serial(async () => {
      const owned = [...this.held.keys()].map((partition) => ({ topic: this.topic, partition }));
      const answer = await this.api.heartbeat({ groupId: this.groupId, memberId: this.memberId, generationId: this.generationId, owned });
      this.apply(answer);
    });
  }

  /** Starts pushers for new partitions; drains revoked ones and releases them (the next heartbeat says so). */
  private apply(answer: MemberAssignment): void {
    this.generationId = answer.generationId;
    this.state = answer.state;
    const assigned = new Set<number>();
    for (const p of answer.assignment) {
      if (p.topic !== this.topic) continue;
      assigned.add(p.partition);
      if (this.held.has(p.partition)) continue;
      if (p.error || p.offset === undefined) {
        this.logger.warn({ ...this.where(), partition: p.partition, error: p.error }, 'webhook partition paused');
        this.held.set(p.partition, { pusher: null, releasing: false });
      } else {
        this.held.set(p.partition, { pusher: new PartitionPusher(this, p.partition, p.offset), releasing: false });
      }
    }
    for (const [partition, h] of this.held) {
      if (assigned.has(partition) || h.releasing) continue;
      h.releasing = true;
      void (h.pusher?.drain() ?? Promise.resolve()).then(() => {
        if (this.held.get(partition) === h) this.held.delete(partition);
        this.wakeUp();
      });
    }
  }

  /** Stops every pusher at once (in-flight POSTs aborted) and lets go of every partition. */
  private async dropAll(): Promise<void> {
    const pushers = [...this.held.values()].map((h) => h.pusher);
    this.held.clear();
    await Promise.all(pushers.map((p) => p?.stop()));
  }

  async fetch(partition: number, offset: number): Promise<FetchedPartition> {
    const answer = await this.api.fetch({
      topic: this.topic, groupId: this.groupId, memberId: this.memberId, generationId: this.generationId,
      partitions: [{ partition, offset }],
      maxRecords: this.options.maxRecords, maxBytes: this.options.maxBytes, maxWaitMs: this.options.maxWaitMs,
    });
    if (answer.assignmentChanged || (answer.generationId ?? -1) > this.generationId) this.wakeUp();
    return answer.partitions[0]!;
  }

  commit(partition: number, offset: number): Promise<void> {
    return this.serial(() => this.api.commitOffsets({
      groupId: this.groupId, topic: this.topic, memberId: this.memberId, generationId: this.generationId,
      offsets: [{ partition, offset }],
    }));
  }

  fenced(err: unknown): boolean {
    if (!FENCING.has((err as { code?: string }).code ?? '')) return false;
    this.fencedBy ??= err;
    this.wakeUp();
    return true;
  }

  /** Runs `task` after every earlier commit and heartbeat of this member. */
  private serial<T>(task: () => Promise<T>): Promise<T> {
    const next = this.queue.then(task, task);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Waits `ms`, or less when woken (a stop, a fencing, a released partition, a changed assignment). */
  private sleep(ms: number): Promise<void> {
    if (this.woken) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        if (this.wake === done) this.wake = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      timer.unref();
      this.wake = done;
    });
  }

  private wakeUp(): void {
    const wake = this.wake;
    this.wake = null;
    if (wake) wake();
    else this.woken = true;
  }

  private where(): { groupId: string; topic: string } {
    return { groupId: this.groupId, topic: this.topic };
  }
}

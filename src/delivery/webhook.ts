/**
 * Push to an HTTP endpoint (webhook), as Google Pub/Sub push subscriptions: for every subscription with
 * `deliveryMode: 'push'` and a `pushEndpoint`, the broker runs a dispatcher that POSTs the group's records
 * to the endpoint. A 2xx acknowledges a batch and commits its end; anything else, or no answer within
 * `ackTimeoutMs`, is retried with exponential backoff, in order per partition (docs/delivery.md). With a retry
 * policy, a batch that failed `webhookMaxAttempts` times is nacked: its records move to the retry tiers
 * (docs/retries.md), whose records are POSTed in turn, and the partition goes on. Without one, with `maxDeliveries`,
 * a record that failed that many POSTs alone goes to the dead letters (each such POST counts as a delivery).
 *
 * The dispatcher is a real member of the group ({@link WebhookMember}, clientId `webhook`), built on the
 * client's member code and the broker's own API: it joins, heartbeats, fetches, commits and nacks with its
 * member id and generation, so assignment, fencing, resets and `groups describe` apply to it as to any
 * consumer. Each assigned partition is pushed by a {@link PartitionPusher}.
 */
import { MemberSession } from '../member/member-session.js';
import { systemClock } from '../common/clock.js';
import { Turns } from '../common/turns.js';
import type { OnelogApi } from '../protocol/api.js';
import type { FetchedPartition } from '../protocol/fetch.js';
import type { SubscriptionInfo } from '../protocol/subscriptions.js';
import type { OnelogError } from '../protocol/errors.js';
import { checkInteger } from '../protocol/validate.js';
import type { Logger } from '../common/logger.js';
import { backoffMs, PartitionPusher } from './webhook-partition.js';
import type { PartitionMember, WebhookOptions } from './webhook-partition.js';

export type { WebhookOptions } from './webhook-partition.js';

/** The slice of the broker's API a dispatcher uses. */
export type WebhookApi = Pick<OnelogApi, 'joinGroup' | 'heartbeat' | 'fetch' | 'commitOffsets' | 'leaveGroup' | 'nack'>;

/** How often a dispatcher whose group another broker coordinates (cluster mode) asks again, ms. */
const STANDBY_RETRY_MS = 5000;

/** The clientId webhook dispatchers join their groups with (shown by `groups describe`). */
import { OutboundPolicy } from '../security/outbound.js';

export const WEBHOOK_CLIENT_ID = 'webhook';

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
    outbound: o.outbound ?? new OutboundPolicy(),
  };
}

/** A webhook subscription's delivery settings. */
interface Target {
  groupId: string;
  topic: string;
  endpoint: string;
  maxInFlight: number;
  /** With a retry policy: the subscription's webhookMaxAttempts; without one, its maxDeliveries; null without either. */
  nackAfterAttempts: number | null;
  /** Without a retry policy, with maxDeliveries: each failed POST of a record alone is a delivery of it (the nack says how many). */
  postsAreDeliveries: boolean;
}

/**
 * Runs one dispatcher per webhook subscription. {@link refresh} follows subscription changes (a new
 * endpoint or maxInFlight restarts the dispatcher; pull, or no endpoint, stops it); {@link stop} ends all.
 */
export class WebhookDispatcher {
  private readonly members = new Map<string, WebhookMember>();
  private readonly options: Required<WebhookOptions>;
  /** Refreshes, one at a time in order, then the stop. */
  private readonly turns = new Turns();
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
        ? {
          groupId: sub.groupId, topic: sub.topic, endpoint: sub.pushEndpoint, maxInFlight: sub.maxInFlight,
          nackAfterAttempts: sub.retry ? sub.webhookMaxAttempts : sub.maxDeliveries,
          postsAreDeliveries: !sub.retry && sub.maxDeliveries !== null,
        }
        : null;
      if (current && wanted && current.endpoint === wanted.endpoint && current.maxInFlight === wanted.maxInFlight &&
        current.nackAfterAttempts === wanted.nackAfterAttempts && current.postsAreDeliveries === wanted.postsAreDeliveries) return;
      if (current) {
        this.members.delete(key);
        await current.stop();
      }
      if (wanted && !this.stopping) this.members.set(key, new WebhookMember(this.api, wanted, this.options, this.logger));
    };
    return this.turns.run(run);
  }

  /** Stops every dispatcher: in-flight POSTs are aborted and each leaves its group. Idempotent; never rejects. */
  stop(): Promise<void> {
    this.stopping ??= this.turns.run(async () => {
      await Promise.all([...this.members.values()].map((m) => m.stop()));
      this.members.clear();
    });
    return this.stopping;
  }
}

/**
 * A webhook dispatcher's membership in its group, on the client's own member code ({@link MemberSession}:
 * join with clientId `webhook`, heartbeats on its timer, fencing, rejoin): it starts a
 * {@link PartitionPusher} per granted partition (the topic's and its retry tiers'), drains and releases revoked
 * ones, and after a fencing drops every pusher and joins again.
 */
class WebhookMember implements PartitionMember {
  readonly groupId: string;
  readonly topic: string;
  readonly endpoint: string;
  readonly maxInFlight: number;
  /** POSTs of a batch before its records are nacked (Target.nackAfterAttempts); null: retried forever. */
  readonly nackAfterAttempts: number | null;
  readonly postsAreDeliveries: boolean;
  private readonly session: MemberSession;
  /** Pushers of held partitions, by `topic/partition` (none while paused for the group). */
  private readonly pushers = new Map<string, PartitionPusher>();
  private readonly draining = new Set<string>();
  private stopping = false;
  /** Aborted by {@link stop}: ends a backoff wait at once. */
  private readonly stopped = new AbortController();
  private readonly done: Promise<void>;

  constructor(private readonly api: WebhookApi, target: Target, readonly options: Required<WebhookOptions>, readonly logger: Logger) {
    ({ groupId: this.groupId, topic: this.topic, endpoint: this.endpoint, maxInFlight: this.maxInFlight } = target);
    this.nackAfterAttempts = target.nackAfterAttempts;
    this.postsAreDeliveries = target.postsAreDeliveries;
    this.session = new MemberSession(api, {
      groupId: this.groupId, topics: [this.topic], clientId: WEBHOOK_CLIENT_ID, sessionTimeoutMs: options.sessionTimeoutMs,
    }, {
      onAssigned: async () => undefined,
      onPaused: (p, error) => this.logger.warn({ ...this.where(), partition: p.partition, error }, 'webhook partition paused'),
    });
    this.done = this.run();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.stopped.abort();
    this.session.wakeUp();
    await this.done;
  }

  private async run(): Promise<void> {
    let failures = 0;
    let standby = false;
    while (!this.stopping) {
      try {
        if (!this.session.memberId || this.session.fenced) {
          if (this.session.fenced) this.logger.warn({ ...this.where(), err: this.session.fenced.message }, 'webhook dispatcher fenced; joining again');
          await this.dropAll();
          await this.session.start();
          this.logger.info({ ...this.where(), memberId: this.session.memberId, endpoint: this.endpoint }, 'webhook dispatcher joined');
        }
        // Stopped while joining: no pusher starts. Checked with no await before the wait below, so a stop can only come
        // during that wait, whose wake-up it is (a wake-up with no one waiting is lost).
        if (this.stopping) break;
        failures = 0;
        standby = false;
        this.follow();
        // While the group reconciles, grants and revocations come sooner than the heartbeat timer (as the client's consumer).
        await this.session.waitForChange(this.session.state === 'Reconciling' ? this.options.maxWaitMs || 100 : 3000);
        if (!this.stopping && this.session.state === 'Reconciling' && !this.session.fenced) await this.session.heartbeat().catch(() => {});
      } catch (err) {
        if (this.stopping) break;
        if ((err as OnelogError).code === 'NOT_COORDINATOR') {
          // Cluster mode: another broker coordinates the group and pushes its records; this one stands by to take over.
          if (!standby) this.logger.info({ ...this.where(), err: (err as Error).message }, 'webhook dispatcher on standby');
          standby = true;
          await systemClock.sleep(STANDBY_RETRY_MS, this.stopped.signal);
          continue;
        }
        failures++;
        const retryInMs = backoffMs(failures, this.options);
        this.logger.warn({ ...this.where(), err: (err as Error).message, retryInMs }, 'webhook dispatcher: group request failed');
        await systemClock.sleep(retryInMs, this.stopped.signal);
      }
    }
    await this.dropAll();
    await this.session.leave().catch((err: unknown) =>
      this.logger.warn({ ...this.where(), err: (err as Error).message }, 'webhook dispatcher could not leave its group'));
  }

  /** Starts pushers for partitions granted and not paused; drains revoked ones, then releases them (the next heartbeat says so). */
  private follow(): void {
    for (const [key, held] of this.session.held) {
      if (held.revoked) {
        if (this.draining.has(key)) continue;
        this.draining.add(key);
        const pusher = this.pushers.get(key);
        void (pusher?.drain() ?? Promise.resolve()).then(() => {
          this.draining.delete(key);
          this.pushers.delete(key);
          if (this.session.held.get(key) === held) this.session.release(held);
          this.session.wakeUp();
          void this.session.heartbeat().catch(() => {});
        });
      } else if (!held.paused && !this.pushers.has(key)) {
        this.pushers.set(key, new PartitionPusher(this, held.topic, held.partition, held.position));
      }
    }
  }

  /** Stops every pusher at once (in-flight POSTs aborted). */
  private async dropAll(): Promise<void> {
    const pushers = [...this.pushers.values()];
    this.pushers.clear();
    this.draining.clear();
    await Promise.all(pushers.map((p) => p.stop()));
  }

  async fetch(topic: string, partition: number, offset: number): Promise<FetchedPartition> {
    const { session } = this;
    const answer = await this.api.fetch({
      topic, groupId: this.groupId, memberId: session.memberId, generationId: session.generationId,
      partitions: [{ partition, offset }],
      maxRecords: this.options.maxRecords, maxBytes: this.options.maxBytes, maxWaitMs: this.options.maxWaitMs,
    });
    if (answer.assignmentChanged || (answer.generationId ?? -1) > session.generationId) void session.heartbeat().catch(() => {});
    return answer.partitions[0]!;
  }

  commit(topic: string, partition: number, offset: number): Promise<void> {
    const { session } = this;
    return session.serial(() => this.api.commitOffsets({
      groupId: this.groupId, topic, memberId: session.memberId, generationId: session.generationId, offsets: [{ partition, offset }],
    }));
  }

  async nack(topic: string, partition: number, offsets: readonly number[], reason: string, deliveries?: number): Promise<void> {
    const { session } = this;
    for (const offset of offsets) {
      await session.serial(() => this.api.nack({
        groupId: this.groupId, topic, partition, offset, reason, memberId: session.memberId, generationId: session.generationId,
        ...(deliveries === undefined ? {} : { deliveries }),
      }));
    }
  }

  fenced(err: unknown): boolean {
    return this.session.noteFencing(err);
  }

  private where(): { groupId: string; topic: string } {
    return { groupId: this.groupId, topic: this.topic };
  }
}

/**
 * Group coordination in cluster mode (docs/cluster.md): a group is coordinated by the broker holding its lease
 * (`group:<groupId>` in {@link NamedLeases}), so its membership, generations and assignment live in one process,
 * as Kafka's live on the leader of the group's `__consumer_offsets` partition. A broker asked for a group takes
 * the lease when it is free or expired; otherwise it answers `NOT_COORDINATOR` naming the holder and its URL (from
 * the {@link BrokerRegistry}), and the client goes there.
 *
 * The holder renews its leases every third of their length. A lease it finds lost (it was paused past it: GC,
 * SIGSTOP) or gives up (the group idle, no request for `idleMs`) is reported to the coordinator, which forgets the
 * group's membership; the next coordinator numbers generations above the stored ones and fences below them, so
 * the old members' commits are refused by the offset store whatever the old coordinator still believes.
 *
 * Validity is judged by this process's monotonic clock against the database's expiry: a lease is used locally only
 * until `leaseMs - marginMs` after the request that took or renewed it was sent.
 */
import { performance } from 'node:perf_hooks';
import type { Logger } from '../common/logger.js';
import { OnelogError } from '../protocol/errors.js';
import type { GroupPlacement } from './group-placement.js';
import type { BrokerRegistry } from './brokers.js';
import type { NamedLeases } from './leases.js';

/** Options of {@link GroupLeases}. */
export interface GroupLeasesOptions {
  leases: NamedLeases;
  /** Where the holder of a lease answers (`coordinatorUrl`). */
  registry: BrokerRegistry;
  /** How long a group lease lasts past its last renewal, ms (the database's clock). @default 10000 */
  leaseMs?: number;
  /**
   * A group no request named for this long is given up, ms. Live members heartbeat at least every 3 s, so only
   * groups without live members go. @default 3 × leaseMs
   */
  idleMs?: number;
  logger: Logger;
}

interface HeldGroup {
  epoch: number;
  /** performance.now() until which the lease is used without asking PostgreSQL */
  validUntil: number;
  /** performance.now() of the last claim */
  usedAt: number;
}

export class GroupLeases implements GroupPlacement {
  private readonly held = new Map<string, HeldGroup>();
  /** Takes in flight, one per group, so concurrent requests share one round trip. */
  private readonly taking = new Map<string, Promise<number>>();
  private readonly listeners: Array<(groupId: string) => void> = [];
  /** How long a group lease lasts past its last renewal, ms (as partition leases: `serve --lease-ms`). */
  readonly leaseMs: number;
  private readonly idleMs: number;
  private readonly marginMs: number;
  private timer: NodeJS.Timeout | null = null;
  private renewing: Promise<void> = Promise.resolve();
  /** Draining (see {@link setDraining}): takes no group lease. */
  private draining = false;

  /** @throws OnelogError `INVALID_CONFIG` for a lease shorter than 100 ms */
  constructor(private readonly options: GroupLeasesOptions) {
    this.leaseMs = options.leaseMs ?? 10_000;
    if (!Number.isInteger(this.leaseMs) || this.leaseMs < 100) {
      throw new OnelogError('INVALID_CONFIG', `a group lease is an integer of at least 100 ms, got ${this.leaseMs}`, { leaseMs: this.leaseMs });
    }
    this.idleMs = options.idleMs ?? 3 * this.leaseMs;
    this.marginMs = Math.floor(this.leaseMs / 5);
  }

  /** Starts renewing the held leases every third of their length. */
  start(): void {
    this.timer ??= setInterval(() => {
      this.renewing = this.renewing.then(() => this.renew());
    }, Math.floor(this.leaseMs / 3));
    this.timer.unref();
  }

  /**
   * The broker holding the group's lease now (its expiry not passed by the database's clock), read from PostgreSQL
   * and taking nothing: where the group's requests go (Kafka's FindCoordinator). Null when nobody holds it: the
   * next broker asked for the group takes it.
   * @throws OnelogError `STORAGE_ERROR`
   */
  async holder(groupId: string): Promise<number | null> {
    return (await this.options.leases.holder(leaseName(groupId)))?.brokerId ?? null;
  }

  claim(groupId: string): Promise<number> {
    const now = performance.now();
    const held = this.held.get(groupId);
    if (held !== undefined) {
      held.usedAt = now;
      if (held.validUntil - this.marginMs > now) return Promise.resolve(held.epoch);
    }
    let taking = this.taking.get(groupId);
    if (taking === undefined) {
      taking = this.take(groupId).finally(() => this.taking.delete(groupId));
      this.taking.set(groupId, taking);
    }
    return taking;
  }

  onLost(listener: (groupId: string) => void): void {
    this.listeners.push(listener);
  }

  /** Takes or renews the group's lease. @returns its epoch */
  private async take(groupId: string): Promise<number> {
    if (this.draining) throw await this.elsewhere(groupId);
    for (let attempt = 0; attempt < 2; attempt++) {
      const sentAt = performance.now();
      const lease = await this.options.leases.acquire(leaseName(groupId), this.leaseMs);
      if (lease !== null) {
        const previous = this.held.get(groupId);
        this.held.set(groupId, { epoch: lease.epoch, validUntil: sentAt + this.leaseMs, usedAt: sentAt });
        if (previous?.epoch !== lease.epoch) this.options.logger.info({ groupId, epoch: lease.epoch }, 'coordinating the group (its lease taken)');
        return lease.epoch;
      }
      this.lose(groupId, 'another broker holds its lease');
      const holder = await this.options.leases.holder(leaseName(groupId));
      if (holder === null) continue; // expired or given up between the two reads: take it
      const url = (await this.options.registry.live()).find((b) => b.brokerId === holder.brokerId)?.url ?? null;
      throw new OnelogError('NOT_COORDINATOR', `broker ${this.options.leases.brokerId} does not coordinate group ${groupId}: broker ` +
        `${holder.brokerId}${url === null ? '' : ` at ${url}`} does; send the group's requests there`,
      { groupId, brokerId: this.options.leases.brokerId, coordinatorBrokerId: holder.brokerId, coordinatorUrl: url });
    }
    throw new OnelogError('NOT_COORDINATOR', `broker ${this.options.leases.brokerId} could not take group ${groupId}'s lease: ` +
      'brokers are taking it in turn; retry', { groupId, brokerId: this.options.leases.brokerId, coordinatorBrokerId: null, coordinatorUrl: null });
  }

  /**
   * Where a draining broker sends a group's requests: the holder of its lease, or when nobody holds it, a live broker
   * not draining (picked by the group id's hash, so every draining broker names the same one), which takes it.
   */
  private async elsewhere(groupId: string): Promise<OnelogError> {
    const { brokerId } = this.options.leases;
    const [holder, live] = await Promise.all([this.options.leases.holder(leaseName(groupId)), this.options.registry.live()]);
    const open = live.filter((b) => !b.draining && b.brokerId !== brokerId);
    const target = holder !== null && holder.brokerId !== brokerId ? live.find((b) => b.brokerId === holder.brokerId) ?? { brokerId: holder.brokerId, url: null }
      : open.length === 0 ? null : open[hashOf(groupId) % open.length]!;
    return new OnelogError('NOT_COORDINATOR', `broker ${brokerId} is draining and coordinates no group: ` +
      (target === null ? 'no live broker takes groups now; retry' : `send group ${groupId}'s requests to broker ${target.brokerId}${target.url === null ? '' : ` at ${target.url}`}`),
    { groupId, brokerId, coordinatorBrokerId: target?.brokerId ?? null, coordinatorUrl: target?.url ?? null });
  }

  /**
   * Draining (`onelog cluster drain`, docs/cluster.md) or not. Once draining, this broker takes no group lease (a group
   * request is answered `NOT_COORDINATOR` naming the holder, or a live broker not draining, which takes the group), and
   * gives every lease it holds up now, after the takes under way: each group is forgotten (its members rejoin at the
   * next coordinator, which fences above the stored generations).
   * @throws never: a release that fails is logged, and that lease expires
   */
  async setDraining(draining: boolean): Promise<void> {
    this.draining = draining;
    if (!draining) return;
    await Promise.all([...this.taking.values()].map((t) => t.catch(() => {})));
    for (const [groupId, held] of [...this.held]) {
      this.lose(groupId, 'this broker is draining');
      await this.options.leases.release(leaseName(groupId), held.epoch).catch((err: unknown) =>
        this.options.logger.warn({ groupId, err: (err as Error).message }, 'could not give a group lease up; another broker takes the group when it expires'));
    }
  }

  /** Renews every held lease; gives up idle groups; reports those lost. */
  private async renew(): Promise<void> {
    const now = performance.now();
    for (const [groupId, held] of [...this.held]) {
      if (this.taking.has(groupId)) continue;
      if (now - held.usedAt > this.idleMs) {
        this.lose(groupId, 'idle');
        await this.options.leases.release(leaseName(groupId), held.epoch).catch(() => {});
        continue;
      }
      const sentAt = performance.now();
      const lease = await this.options.leases.acquire(leaseName(groupId), this.leaseMs).catch((err: unknown) => {
        this.options.logger.warn({ groupId, err: (err as Error).message }, 'renewing a group lease failed');
        return undefined;
      });
      if (lease === undefined || this.held.get(groupId) !== held) continue;
      if (lease === null || lease.epoch !== held.epoch) {
        // Paused or cut off past the lease (GC, SIGSTOP): another broker may have coordinated the group meanwhile.
        this.options.logger.warn({ groupId, epoch: held.epoch, newEpoch: lease?.epoch ?? null },
          'the group\'s lease was lost while this broker was not renewing it (paused or cut off past the lease); it no longer coordinates the group');
        this.lose(groupId, 'its lease was lost');
      }
      else held.validUntil = sentAt + this.leaseMs;
    }
  }

  private lose(groupId: string, why: string): void {
    if (!this.held.delete(groupId)) return;
    this.options.logger.info({ groupId, why }, 'no longer coordinating the group');
    for (const listener of this.listeners) listener(groupId);
  }

  /** Stops renewing and gives every held lease up, so the next broker need not wait for their expiry. */
  async close(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.renewing;
    const held = [...this.held];
    this.held.clear();
    await Promise.all(held.map(([groupId, h]) => this.options.leases.release(leaseName(groupId), h.epoch).catch(() => {})));
  }
}

const leaseName = (groupId: string): string => `group:${groupId}`;

/** A stable 32-bit hash of a group id (FNV-1a over its UTF-16 units). */
function hashOf(groupId: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < groupId.length; i++) h = Math.imul(h ^ groupId.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

/**
 * This broker as a member of its cluster (docs/cluster.md): registered in PostgreSQL with the URLs it answers at
 * and a heartbeat ({@link BrokerRegistry}), and coordinating the groups whose lease it holds ({@link GroupLeases}).
 * The broker advertises itself once its listeners are up (`serve --advertised-url`); until then it coordinates
 * groups all the same, and a `NOT_COORDINATOR` naming it carries no URL.
 */
import type { Logger } from '../common/logger.js';
import type { OnelogError } from '../protocol/errors.js';
import type { BrokerInfo, BrokerRegistry } from './brokers.js';
import type { GroupLeases } from './group-leases.js';
import type { LeaseBalancer } from './lease-balance.js';

export class ClusterMembership {
  private timer: NodeJS.Timeout | null = null;
  private registered = false;
  private replaced = false;
  private readonly replacedListeners: Array<(err: OnelogError) => void> = [];

  /**
   * @param heartbeatIntervalMs how often the registry records this broker live, ms; a third of the registry's
   *   timeout (10 s by default) keeps it live through two missed beats
   */
  /**
   * @param balancer spreads the partition leases over the live brokers and follows this broker's draining mark
   *   (lease-balance.ts); started once this broker is registered, stopped first at {@link close}
   */
  constructor(
    readonly registry: BrokerRegistry,
    readonly groups: GroupLeases,
    private readonly logger: Logger,
    private readonly balancer: LeaseBalancer,
    private readonly heartbeatIntervalMs = 3000,
  ) {
    groups.start();
  }

  /** This broker's id in the cluster. */
  get brokerId(): number {
    return this.registry.brokerId;
  }

  /**
   * Registers this broker with the addresses clients reach it at, and heartbeats from now on.
   * @throws OnelogError `ALREADY_EXISTS` if a live broker has this broker id; `STORAGE_ERROR`
   */
  async advertise(addresses: { url: string; kafkaAddress?: string | null }): Promise<void> {
    await this.registry.register(addresses);
    this.registered = true;
    this.logger.info({ brokerId: this.brokerId, ...addresses }, 'registered in the cluster');
    this.balancer.start();
    let lastBeatAt = performance.now();
    this.timer ??= setInterval(() => {
      const now = performance.now();
      this.notePause(now - lastBeatAt - this.heartbeatIntervalMs);
      lastBeatAt = now;
      this.registry.heartbeat().catch((err: unknown) => {
        this.logger.error({ brokerId: this.brokerId, err: (err as Error).message }, 'cluster heartbeat failed');
        if ((err as OnelogError).code !== 'ALREADY_EXISTS' || this.replaced) return;
        // Another process registered as this broker while this one was not live: it must not write as this broker.
        this.replaced = true;
        for (const listener of this.replacedListeners) listener(err as OnelogError);
      });
    }, this.heartbeatIntervalMs);
    this.timer.unref();
  }

  /**
   * Says at warn that this broker did nothing for `stalledMs` (a heartbeat that came that late: the process was paused,
   * SIGSTOP or a long GC, or starved), when that is past the lease: its partitions' and groups' leases may have been
   * taken by other brokers at new epochs meanwhile (its commits under the old ones are refused, and a flush or a group
   * lease renewal that finds one taken says which, docs/cluster.md).
   */
  private notePause(stalledMs: number): void {
    if (stalledMs <= this.groups.leaseMs) return;
    this.logger.warn({ brokerId: this.brokerId, stalledMs: Math.round(stalledMs), leaseMs: this.groups.leaseMs },
      'this broker was paused past its leases: other brokers may have taken its partitions\' and groups\' leases at new epochs');
  }

  /**
   * Calls `listener` once if another process takes this broker's id over (this one was not live for the registry's
   * timeout: paused, cut off): the broker stops its writes (`Logs.stopWrites`).
   */
  onReplaced(listener: (err: OnelogError) => void): void {
    this.replacedListeners.push(listener);
  }

  /** The live brokers of the cluster, by id. @throws OnelogError `STORAGE_ERROR` */
  liveBrokers(): Promise<BrokerInfo[]> {
    return this.registry.live();
  }

  /**
   * Marks a live broker of the cluster draining (`onelog cluster drain BROKER`): see {@link BrokerRegistry.drain}.
   * @returns whether a live broker of that id was marked
   * @throws OnelogError `STORAGE_ERROR`
   */
  drain(brokerId: number): Promise<boolean> {
    return this.registry.drain(brokerId);
  }

  /** Gives the group leases up and leaves the live brokers at once (a clean shutdown). */
  async close(): Promise<void> {
    await this.balancer.close();
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.groups.close();
    if (this.registered) await this.registry.deregister().catch(() => {});
  }
}

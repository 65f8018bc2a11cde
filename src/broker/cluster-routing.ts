/**
 * Where a request is served in cluster mode (docs/cluster.md): bringing a topic up to date with what other brokers
 * did before a request reads it, naming the leader a refused write should go to, and the cluster as Kafka's
 * Metadata and FindCoordinator describe it. On the embedded default there is nothing to route: every call answers
 * at once, and this broker leads every partition and coordinates every group.
 */
import type { BrokerInfo } from '../cluster/brokers.js';
import type { ClusterMembership } from '../cluster/membership.js';
import type { Placement } from '../cluster/placement.js';
import type { Clock } from '../common/clock.js';
import type { ReadBroker } from '../protocol/fetch.js';
import { OnelogError } from '../protocol/errors.js';
import type { Logs } from '../log/logs.js';

/** How long {@link ClusterRouting.readBrokers} reuses what it read of a topic's leaders and the live brokers, ms. */
const READ_BROKERS_TTL_MS = 1000;

export class ClusterRouting {
  private addresses: { url: string; kafkaAddress: string | null } | null = null;
  /** Per topic, its partitions' read brokers as last read, and when (clock ms). */
  private readonly readBrokersRead = new Map<string, { at: number; brokers: Promise<Map<number, ReadBroker>> }>();

  constructor(
    private readonly logs: Logs, private readonly membership: ClusterMembership | null, private readonly placement: Placement | null,
    private readonly clock: Clock,
  ) {}

  /**
   * Resolves once `topic` is up to date with what other brokers did (see {@link Logs.refresh}): its layout, and the
   * positions of `partitions` (`'all'`: every one). Input not yet checked is left for the checks made after it. On
   * the local engine there is nothing to wait for. A request of a group passes this to the coordinator as what it
   * waits for in its turn, so it keeps its place in its group's order however long this takes.
   */
  async current(topic: unknown, partitions: readonly unknown[] | 'all'): Promise<void> {
    if (typeof topic !== 'string') return;
    const layout = this.logs.refresh(topic);
    if (layout === undefined) return; // the local engine: nothing to wait for, no partition list built on every fetch
    await layout;
    if (!this.logs.has(topic)) return;
    const wanted = partitions === 'all' ? [...Array(this.logs.partitionCount(topic)).keys()]
      : partitions.filter((p): p is number => typeof p === 'number');
    if (wanted.length > 0) await this.logs.refresh(topic, wanted);
  }

  /** As {@link current}, for the layouts of several topics (a join's). */
  async topicsCurrent(topics: readonly unknown[]): Promise<void> {
    await Promise.all(topics.map((topic) => this.current(topic, [])));
  }

  /** Runs `next` once `topic` is {@link current}: for a request in no group's order. */
  async whenCurrent<T>(topic: unknown, partitions: readonly unknown[] | 'all', next: () => T | Promise<T>): Promise<T> {
    await this.current(topic, partitions);
    return next();
  }

  /** Adds the leader's URL (`leaderUrl`, null if not live) to a `NOT_LEADER_OR_FOLLOWER` refusal: the client sends the write there. */
  async naming<T>(writing: Promise<T>): Promise<T> {
    try {
      return await writing;
    } catch (err) {
      const leader = (err as OnelogError).context?.leaderBrokerId;
      if (this.membership === null || (err as OnelogError).code !== 'NOT_LEADER_OR_FOLLOWER' || typeof leader !== 'number') throw err;
      const url = (await this.membership.liveBrokers().catch(() => [])).find((b) => b.brokerId === leader)?.url ?? null;
      const { code, message, context } = err as OnelogError;
      throw new OnelogError(code, url === null ? message : `${message} (${url})`, { ...context, leaderUrl: url });
    }
  }

  /** This broker's id in its cluster (`--broker-id`), or null on the embedded default. */
  get brokerId(): number | null {
    return this.membership?.brokerId ?? null;
  }

  /**
   * Registers this broker in the cluster with the addresses clients reach it at (its HTTP API, its Kafka listener);
   * heartbeats from then on. On the embedded default only remembered, for {@link advertised}.
   * @throws OnelogError `ALREADY_EXISTS` if a live broker has this broker id; `STORAGE_ERROR`
   */
  async advertise(addresses: { url: string; kafkaAddress?: string | null }): Promise<void> {
    await this.membership?.advertise(addresses);
    this.addresses = { url: addresses.url, kafkaAddress: addresses.kafkaAddress ?? null };
  }

  /** The addresses this broker advertised (on the embedded default too, for `describeCluster`), or null before it did. */
  get advertised(): { url: string; kafkaAddress: string | null } | null {
    return this.addresses;
  }

  /** The live brokers of the cluster, by id; null on the embedded default. @throws OnelogError `STORAGE_ERROR` */
  async liveBrokers(): Promise<BrokerInfo[] | null> {
    return this.membership === null ? null : this.membership.liveBrokers();
  }

  /**
   * Each partition's sequencer among `topics`, by topic then partition; null on the embedded default.
   * @throws OnelogError `STORAGE_ERROR`
   */
  async partitionLeaders(topics: readonly string[]): Promise<Map<string, Map<number, number>> | null> {
    return this.placement === null ? null : this.placement.partitionLeaders(topics);
  }

  /**
   * Marks a live broker draining (`onelog cluster drain`); null on the embedded default (no cluster).
   * @returns whether a live broker of that id was marked
   * @throws OnelogError `STORAGE_ERROR`
   */
  async drain(brokerId: number): Promise<boolean | null> {
    return this.membership === null ? null : this.membership.drain(brokerId);
  }

  /**
   * The brokers a group member may read `topic`'s partitions from besides its coordinator (docs/cluster.md, "The read
   * path"), by partition: each partition's leader (as Kafka's Metadata names it) when it is live, not draining and not
   * this broker; a partition nobody leads, or led here, has none. Read from PostgreSQL at most once a second per topic
   * (a leader moved since is still a broker that serves the read: any broker serves any fetch); empty on the embedded
   * default and when the read fails (the member then reads from its coordinator, as before).
   */
  async readBrokers(topic: string): Promise<Map<number, ReadBroker>> {
    if (this.membership === null || this.placement === null) return new Map();
    const now = this.clock.now();
    const cached = this.readBrokersRead.get(topic);
    if (cached !== undefined && now - cached.at < READ_BROKERS_TTL_MS) return cached.brokers;
    const { membership, placement } = this;
    const brokers = (async () => {
      const [leaders, live] = await Promise.all([placement.partitionLeaders([topic]), membership.liveBrokers()]);
      const urls = new Map(live.filter((b) => !b.draining && b.brokerId !== membership.brokerId).map((b) => [b.brokerId, b.url]));
      const byPartition = new Map<number, ReadBroker>();
      for (const [partition, brokerId] of leaders.get(topic) ?? []) {
        const url = urls.get(brokerId);
        if (url !== undefined) byPartition.set(partition, { brokerId, url });
      }
      return byPartition;
    })().catch(() => new Map<number, ReadBroker>());
    this.readBrokersRead.set(topic, { at: now, brokers });
    if (this.readBrokersRead.size > 10_000) this.readBrokersRead.delete(this.readBrokersRead.keys().next().value!);
    return brokers;
  }

  /** The holder of the group's lease `group:<groupId>`, or null (nobody, or the embedded default). @throws OnelogError `STORAGE_ERROR` */
  async groupCoordinator(groupId: string): Promise<number | null> {
    return (await this.membership?.groups.holder(groupId)) ?? null;
  }
}

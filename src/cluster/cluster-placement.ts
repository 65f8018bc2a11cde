/**
 * The {@link Placement} of cluster mode (docs/cluster.md): partition leaders as the log's sequencer records them
 * (its partition leases live beside the partitions' offsets), and the job leases (`job:<what>` in
 * {@link NamedLeases}) this broker takes at each scheduled pass it runs and gives up when it closes, so another
 * broker takes the jobs over at its next pass rather than once the leases expire.
 */
import type { Logger } from '../common/logger.js';
import type { NamedLeases } from './leases.js';
import type { HeldLease, JobGate, Placement } from './placement.js';

/** Options of {@link ClusterPlacement}. */
export interface ClusterPlacementOptions {
  /** The job leases: one broker at a time runs each job. */
  leases: NamedLeases;
  /** Who holds each partition's lease now (the log's sequencer: `Sequencer.leaders`). */
  leaders: Placement['partitionLeaders'];
  /** Every partition lease held now (the log's sequencer: `Sequencer.partitionLeases`). */
  partitionLeases: (topic?: string) => Promise<Array<{ topic: string; partition: number; brokerId: number; epoch: number; expiresAt: number }>>;
  logger: Logger;
}

export class ClusterPlacement implements Placement {
  /** The job leases this broker took, by name, at their epoch: given up by {@link close}. */
  private readonly held = new Map<string, number>();
  private closed = false;
  private draining = false;

  constructor(private readonly options: ClusterPlacementOptions) {}

  partitionLeaders(topics: readonly string[]): Promise<Map<string, Map<number, number>>> {
    return this.options.leaders(topics);
  }

  /** @see Placement.topicLeases */
  async topicLeases(topic: string): Promise<HeldLease[]> {
    return (await this.options.partitionLeases(topic))
      .map((p) => ({ kind: 'partition' as const, name: `${p.topic}/${p.partition}`, brokerId: p.brokerId, epoch: p.epoch, expiresAt: p.expiresAt }));
  }

  /** Jobs, then groups, then partitions, each by name. */
  async heldLeases(): Promise<HeldLease[]> {
    const [named, partitions] = await Promise.all([this.options.leases.heldNow(), this.options.partitionLeases()]);
    const kindOf = (name: string) => (name.startsWith('group:') ? 'group' as const : 'job' as const);
    return [
      ...named.map((l) => ({ kind: kindOf(l.name), name: kindOf(l.name) === 'group' ? l.name.slice('group:'.length) : l.name, brokerId: l.brokerId, epoch: l.epoch, expiresAt: l.expiresAt }))
        .sort((a, b) => (a.kind === b.kind ? 0 : a.kind === 'job' ? -1 : 1)),
      ...partitions.map((p) => ({ kind: 'partition' as const, name: `${p.topic}/${p.partition}`, brokerId: p.brokerId, epoch: p.epoch, expiresAt: p.expiresAt })),
    ];
  }

  /**
   * True when this broker holds or takes the job's lease, taken or renewed for three intervals at each call; false
   * while another broker holds it, once this one is closing, and while it is draining.
   */
  jobGate(name: string): JobGate {
    return (intervalMs) => this.holdJob(name, intervalMs);
  }

  /**
   * Draining (`onelog cluster drain`) or not: a draining broker gives the job leases it holds up now, and its gates
   * answer false until it is not draining any more, so other brokers run the jobs from their next pass. Never rejects.
   */
  async setDraining(draining: boolean): Promise<void> {
    this.draining = draining;
    if (draining) await this.releaseJobs();
  }

  /** Gives up the job leases this broker holds (a clean shutdown); later gates answer false. Never rejects. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.releaseJobs();
  }

  private async releaseJobs(): Promise<void> {
    await Promise.all([...this.held].map(([name, epoch]) => this.options.leases.release(name, epoch).catch((err: unknown) =>
      this.options.logger.warn({ lease: name, err: (err as Error).message }, 'could not give a job lease up; another broker takes the job when it expires'))));
    this.held.clear();
  }

  /** Takes or renews the job's lease for three intervals (whole ms); whether this broker holds it. */
  private async holdJob(name: string, intervalMs: number): Promise<boolean> {
    if (this.closed || this.draining) return false;
    const lease = await this.options.leases.acquire(name, Math.max(1, Math.ceil(3 * intervalMs)));
    if (lease !== null && (this.closed || this.draining)) {
      // Closed or drained while taking it: given up at once, as the others were.
      await this.options.leases.release(name, lease.epoch).catch(() => {});
      return false;
    }
    if (lease === null) this.held.delete(name);
    else this.held.set(name, lease.epoch);
    return lease !== null;
  }
}

/**
 * Capacity follows the brokers (docs/cluster.md, "Spreading the partitions"): the partition leases held in a cluster
 * are spread over its live brokers that are not draining, each leading at most its fair share, `ceil(leases held /
 * brokers)`, as Kafka's and Pulsar's balancers aim. A broker over its share hands the partitions it holds beyond it
 * to the broker leading fewest; a draining broker (`onelog cluster drain BROKER`) hands every partition it holds over.
 * Only the holder of a lease moves it, at the epoch it holds it (the sequencer raises the epoch at the hand-over, so
 * the old holder's late commits are refused).
 *
 * The plan ({@link planBalance}) is a pure function of what every broker reads from PostgreSQL, so every broker that
 * reads the same computes the same moves, and each carries out those from itself. Hysteresis: nothing moves while every
 * broker is at or under its share (4/4/2 of 10 partitions over 3 brokers stays, share 4), so a balanced cluster never
 * flaps; a broker under its share gets partitions only from one over it or from a draining one. Partitions nobody
 * holds are not placed here: the first broker a produce reaches takes them (docs/cluster.md, "Partition leases"), and
 * a share exceeded that way is handed back at the next pass.
 *
 * {@link LeaseBalancer} runs the plan periodically on each broker, with what it reads and does injected (the broker
 * registry, the sequencer's lease table, the object log's hand-over, the group leases), so this folder imports no log.
 */
import type { Logger } from '../common/logger.js';
import { OnelogError } from '../protocol/errors.js';

/** A partition lease held now (not expired), as the sequencer's lease table lists it. */
export interface HeldPartition {
  topic: string;
  partition: number;
  /** The broker holding it. */
  brokerId: number;
  /** The epoch it holds it at: a hand-over is conditional on it. */
  epoch: number;
}

/** A live broker as the balance sees it. */
export interface BalanceBroker {
  brokerId: number;
  /** Marked draining (`onelog cluster drain`): it leads nothing and hands over what it holds. */
  draining: boolean;
}

/** One partition to move: from its holder, at its epoch, to another broker. */
export interface LeaseMove {
  topic: string;
  partition: number;
  fromBrokerId: number;
  epoch: number;
  toBrokerId: number;
}

/**
 * The fair share of each broker: `ceil(leases / brokers)`; 0 without a broker to share with.
 * @param leases partition leases held now, >= 0
 * @param brokers live brokers that are not draining, >= 0
 */
export function fairShare(leases: number, brokers: number): number {
  return brokers <= 0 ? 0 : Math.ceil(leases / brokers);
}

/**
 * The moves that bring every live broker not draining to at most its {@link fairShare} and empty the draining ones.
 * Deterministic: brokers are taken by id, a broker's partitions by (partition, topic) order, and the ones it gives are
 * its last in that order; each partition given goes to the non-draining broker leading fewest at that point (ties: the
 * lowest id). A lease held by a broker not in `brokers` (not live, or not yet registered) counts in the share but is
 * not moved: it expires or its holder comes back. No moves without a non-draining broker to take them.
 * @param leases every partition lease held now
 * @param brokers the live brokers, each once
 */
export function planBalance(leases: readonly HeldPartition[], brokers: readonly BalanceBroker[]): LeaseMove[] {
  const active = brokers.filter((b) => !b.draining).map((b) => b.brokerId).sort((a, b) => a - b);
  if (active.length === 0) return [];
  const draining = new Set(brokers.filter((b) => b.draining).map((b) => b.brokerId));
  const share = fairShare(leases.length, active.length);
  const held = new Map<number, HeldPartition[]>(active.map((id) => [id, []]));
  const giving: HeldPartition[] = [];
  const order = (a: HeldPartition, b: HeldPartition) => a.partition - b.partition || (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : 0);
  for (const lease of [...leases].sort(order)) {
    if (draining.has(lease.brokerId)) giving.push(lease);
    else held.get(lease.brokerId)?.push(lease);
  }
  for (const id of active) {
    const mine = held.get(id)!;
    if (mine.length > share) giving.push(...mine.splice(share));
  }
  const counts = new Map(active.map((id) => [id, held.get(id)!.length]));
  const moves: LeaseMove[] = [];
  for (const lease of giving.sort(order)) {
    let to = active[0]!;
    for (const id of active) if (counts.get(id)! < counts.get(to)!) to = id;
    counts.set(to, counts.get(to)! + 1);
    moves.push({ topic: lease.topic, partition: lease.partition, fromBrokerId: lease.brokerId, epoch: lease.epoch, toBrokerId: to });
  }
  return moves;
}

/** What {@link LeaseBalancer} reads and does, injected by the broker's composition root (src/broker/store-engines.ts). */
export interface LeaseBalancerOptions {
  /** This broker's id. */
  brokerId: number;
  /** The live brokers with their draining mark (the broker registry, `BrokerRegistry.live`). */
  brokers: () => Promise<BalanceBroker[]>;
  /** Every partition lease held now (the sequencer's `partitionLeases`). */
  leases: () => Promise<HeldPartition[]>;
  /**
   * Hands partitions this broker holds over to other brokers, after the appends in flight to them are committed (the
   * object log's `handOver`); those it no longer holds at the epoch given are left as they are.
   */
  handOver: (moves: readonly LeaseMove[]) => Promise<void>;
  /**
   * Marks this broker draining or not: while draining it takes no partition nor group lease and gives up every
   * group lease it holds (the object log's and the group leases' `setDraining`).
   */
  setDraining: (draining: boolean) => Promise<void>;
  /** How often a pass runs, ms (> 0). The broker runs it every third of `--lease-ms`. */
  intervalMs: number;
  logger: Logger;
}

/**
 * Runs {@link planBalance} every `intervalMs` on one broker and carries out the moves from it; follows this broker's
 * draining mark. A pass that fails (PostgreSQL unreachable) is logged and the next one tries again; passes never
 * overlap (an interval that ends during a pass is skipped). A broker not yet in the registry (before it advertised) moves nothing.
 */
export class LeaseBalancer {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> = Promise.resolve();
  private busy = false;
  private closed = false;
  private draining = false;

  /** @throws OnelogError `INVALID_CONFIG` for an interval that is not a positive integer */
  constructor(private readonly options: LeaseBalancerOptions) {
    if (!Number.isInteger(options.intervalMs) || options.intervalMs < 1) {
      throw new OnelogError('INVALID_CONFIG', `the balance interval is a positive integer of ms, got ${options.intervalMs}`, { intervalMs: options.intervalMs });
    }
  }

  /** Starts the passes. */
  start(): void {
    if (this.closed) return;
    this.timer ??= setInterval(() => {
      if (this.busy) return; // a pass longer than the interval (a hand-over waiting for its flushes) is not queued behind
      this.busy = true;
      this.running = this.pass().finally(() => {
        this.busy = false;
      });
    }, this.options.intervalMs);
    this.timer.unref();
  }

  /** Stops the passes and waits for the one running. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  private async pass(): Promise<void> {
    if (this.closed) return;
    const { brokerId, logger } = this.options;
    try {
      const brokers = await this.options.brokers();
      const self = brokers.find((b) => b.brokerId === brokerId);
      if (self === undefined) return;
      if (self.draining !== this.draining) {
        await this.options.setDraining(self.draining);
        this.draining = self.draining;
        logger.info({ brokerId, draining: self.draining }, self.draining ? 'draining: handing every lease over, taking none' : 'no longer draining');
      }
      const moves = planBalance(await this.options.leases(), brokers).filter((m) => m.fromBrokerId === brokerId);
      if (moves.length === 0) return;
      await this.options.handOver(moves);
      logger.info({ brokerId, moves: moves.map((m) => `${m.topic}/${m.partition}->${m.toBrokerId}`) }, 'partition leases handed over');
    } catch (err) {
      logger.warn({ brokerId, err: (err as Error).message }, 'lease balance pass failed; the next one tries again');
    }
  }
}

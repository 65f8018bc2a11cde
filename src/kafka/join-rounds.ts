/**
 * The JoinGroup rounds of Kafka's classic group protocol, for the Kafka members of onelog's groups (apis/groups.ts):
 * a JoinGroup is answered once every Kafka member the group had has joined the round too (the others are told by
 * their Heartbeat, REBALANCE_IN_PROGRESS, and rejoin), or once the rebalance timeout passed (the members that did not
 * rejoin are then removed, as Kafka removes them). A round of a group with no Kafka member waits
 * `initialRebalanceDelayMs` first, each member joining meanwhile extending it up to the rebalance timeout (Kafka's
 * group.initial.rebalance.delay.ms), so consumers started together share the first assignment instead of the first
 * taking every partition and giving them up a round later. Each answer comes after the whole round, so the
 * coordinator assigns across all of them at once. Rounds live in memory, as the Kafka members do.
 */
import type { Clock } from '../common/clock.js';

interface Round {
  /** Members the round waits for (those the group had, and every one that joined it). */
  expected: Set<string>;
  joined: Set<string>;
  /** Each joiner's answer: resolved, with the members that never rejoined, when the round ends. */
  waiters: Array<(missing: string[]) => void>;
  /** While the group had no member: the round waits until this moment (ms since the epoch); 0 once not. */
  delayUntil: number;
  /** The round ends by this moment whoever has not rejoined (the first joiner's rebalance timeout). */
  deadline: number;
  stop: AbortController;
}

/** How often an open round looks again at members whose session ended, ms. */
const CHECK_EVERY_MS = 1000;

export class JoinRounds {
  private readonly rounds = new Map<string, Round>();

  /**
   * @param alive whether a member is still heard from within its session (one that is not no longer holds a round up)
   * @param initialRebalanceDelayMs how long a round of a group with no member waits for others, ms
   */
  constructor(private readonly clock: Clock, private readonly alive: (groupId: string, memberId: string) => boolean,
    private readonly initialRebalanceDelayMs: number) {}

  /** Whether `memberId` is asked to rejoin: a round of its group is open that it has not joined. */
  pending(groupId: string, memberId: string): boolean {
    const round = this.rounds.get(groupId);
    return round !== undefined && round.expected.has(memberId) && !round.joined.has(memberId);
  }

  /**
   * Joins `memberId` to its group's round, opening one (that waits for `others`) if none is open.
   * @param others the group's other Kafka members now
   * @param rebalanceTimeoutMs how long a round this join opens waits for the others, ms
   * @returns once the round ends: the members that never rejoined (to remove)
   */
  gather(groupId: string, memberId: string, others: readonly string[], rebalanceTimeoutMs: number): Promise<string[]> {
    const now = this.clock.now();
    let round = this.rounds.get(groupId);
    if (round === undefined) {
      round = {
        expected: new Set(others), joined: new Set(), waiters: [], deadline: now + rebalanceTimeoutMs, stop: new AbortController(),
        delayUntil: others.length === 0 && this.initialRebalanceDelayMs > 0 ? now + this.initialRebalanceDelayMs : 0,
      };
      this.rounds.set(groupId, round);
      void this.watch(groupId, round);
    } else if (round.delayUntil > 0) {
      round.delayUntil = Math.min(round.deadline, now + this.initialRebalanceDelayMs);
    }
    round.expected.add(memberId);
    round.joined.add(memberId);
    const ended = new Promise<string[]>((resolve) => round.waiters.push(resolve));
    this.check(groupId, round);
    return ended;
  }

  /** A member left its group: an open round no longer waits for it. */
  left(groupId: string, memberId: string): void {
    const round = this.rounds.get(groupId);
    if (round === undefined) return;
    round.expected.delete(memberId);
    this.check(groupId, round);
  }

  /** Ends the round if it waits for nobody (its delay over, every live member joined) or its deadline passed. */
  private check(groupId: string, round: Round): void {
    const now = this.clock.now();
    if (this.rounds.get(groupId) !== round || round.delayUntil > now) return;
    const missing = [...round.expected].filter((m) => !round.joined.has(m));
    if (now < round.deadline && missing.some((m) => this.alive(groupId, m))) return;
    this.rounds.delete(groupId);
    round.stop.abort();
    for (const resolve of round.waiters) resolve(missing);
  }

  /** Looks at the round again at its delay's end, at its deadline, and every {@link CHECK_EVERY_MS} between. */
  private async watch(groupId: string, round: Round): Promise<void> {
    while (this.rounds.get(groupId) === round) {
      const now = this.clock.now();
      const next = round.delayUntil > now ? round.delayUntil : round.deadline;
      await this.clock.sleep(Math.min(next - now, CHECK_EVERY_MS), round.stop.signal);
      this.check(groupId, round);
    }
  }
}

/**
 * A group member's membership, the one implementation for every kind of member (the consumer, a push session
 * through it, a webhook dispatcher): joins, heartbeats every `heartbeatIntervalMs` (on a timer, so a slow
 * handler does not cost the membership), tracks the assignment the coordinator answers, and sends commits
 * and heartbeats one at a time, so a commit always carries the generation of the last answer.
 *
 * One join at a time: every caller of {@link MemberSession.start} while a join is in flight shares it, and a fencing
 * answer (`UNKNOWN_MEMBER_ID`, ...) to a request sent as an earlier member id, or while the join is in flight, is
 * stale and starts nothing (after a coordinator's loss the member's fetch and its heartbeat both hear
 * `UNKNOWN_MEMBER_ID` from the new coordinator: acting on both joined twice, and the first member id held its
 * partitions unread until its session timed out; issue 38).
 *
 * Revocation (incremental rebalance): when an answer leaves out a partition the member holds, the
 * partition is marked `revoked`; the consumer stops it after the record in hand, commits what it
 * processed, then {@link release}s it, and the next heartbeat tells the coordinator it let go.
 */
import type { OnelogApi } from '../protocol/api.js';
import type { AssignedPartition, GroupState, JoinGroupRequest, MemberAssignment } from '../protocol/groups.js';
import type { PartitionError } from '../protocol/partitions.js';
import { OnelogError } from '../protocol/errors.js';
import { Turns } from '../common/turns.js';

/** A partition the member holds, and where it stands. */
export interface HeldPartition {
  topic: string;
  partition: number;
  /** The next offset to read. */
  position: number;
  /** Set when the coordinator paused it for the group: not fetched until a reset reassigns it. */
  paused: PartitionError | null;
  /** Set when the coordinator took it away: finish the record in hand, commit, release. */
  revoked: boolean;
}

/** Hooks the session calls when the assignment changes. */
export interface SessionHooks {
  /** A partition was granted; may replace its start position (e.g. from an external offset store). */
  onAssigned(p: AssignedPartition): Promise<number | undefined>;
  /** A granted partition is paused for the group. */
  onPaused(p: HeldPartition, error: PartitionError): void;
  /** An answer granted these partitions (called once per answer that granted any, after {@link onAssigned} of each). */
  onGranted?(granted: readonly HeldPartition[]): void;
}

const key = (topic: string, partition: number) => `${topic}/${partition}`;

export class MemberSession {
  memberId = '';
  generationId = -1;
  /** The group's state in the last answer. */
  state: GroupState = 'Empty';
  readonly held = new Map<string, HeldPartition>();
  private readonly turns = new Turns();
  private timer: NodeJS.Timeout | null = null;
  private wake: (() => void) | null = null;
  /** Set by a fencing error: the consumer must rejoin. */
  fenced: Error | null = null;
  /** When the coordinator last answered a join or heartbeat (ms since the epoch), and the last heartbeat failure since. */
  private lastContactAt = 0;
  private lastFailure: OnelogError | null = null;
  /** Retriable failures since the broker last answered (the backoff before the next try grows with them). */
  failures = 0;
  /** The join in flight, shared by every caller of {@link start}; null when none is. */
  private joining: Promise<void> | null = null;

  constructor(
    private readonly api: Pick<OnelogApi, 'joinGroup' | 'heartbeat' | 'leaveGroup'>,
    private readonly join: JoinGroupRequest,
    private readonly hooks: SessionHooks,
  ) {}

  /**
   * Joins the group (again, after fencing: as a new member, holding nothing) and starts heartbeating. A call while a
   * join is in flight gets that join's outcome: a member has one join in flight at a time, whoever asks for it.
   * @throws what the join throws (e.g. `NETWORK_ERROR`, `NOT_COORDINATOR` after the client's retries)
   */
  start(): Promise<void> {
    this.joining ??= this.joinOnce().finally(() => {
      this.joining = null;
    });
    return this.joining;
  }

  /** Whether a join is in flight. */
  get isJoining(): boolean {
    return this.joining !== null;
  }

  private async joinOnce(): Promise<void> {
    this.stopTimer();
    this.held.clear();
    this.fenced = null;
    const answer = await this.api.joinGroup(this.join);
    this.contact();
    this.memberId = answer.memberId;
    await this.apply(answer);
    this.timer = setInterval(() => void this.heartbeat().catch(() => {}), answer.heartbeatIntervalMs);
    this.timer.unref();
  }

  /** Runs `task` after every earlier commit and heartbeat of this member. */
  serial<T>(task: () => Promise<T>): Promise<T> {
    return this.turns.run(task);
  }

  /** Sends a heartbeat (queued) reporting what the member holds; applies the answer. */
  heartbeat(): Promise<void> {
    return this.serial(async () => {
      if (this.fenced || !this.memberId || this.joining) return;
      const sentAs = this.memberId;
      const owned = [...this.held.values()].map((p) => ({ topic: p.topic, partition: p.partition }));
      try {
        await this.apply(await this.api.heartbeat({
          groupId: this.join.groupId, memberId: this.memberId, generationId: this.generationId, owned,
        }));
        this.contact();
      } catch (err) {
        if (!this.noteFencing(err, sentAs)) this.noteFailure(err);
        throw err;
      }
    });
  }

  /** Records that the broker answered (a join, heartbeat, fetch or commit got through). */
  contact(): void {
    this.lastContactAt = Date.now();
    this.lastFailure = null;
    this.failures = 0;
  }

  /**
   * Records a retriable failure (the broker is unreachable or restarting: `NETWORK_ERROR`, `BROKER_CLOSED`,
   * ...): the consumer retries until {@link checkContact} says a whole session timeout passed.
   * @returns whether `err` was retriable
   */
  noteFailure(err: unknown): boolean {
    if (!(err instanceof OnelogError) || !err.retriable) return false;
    this.lastFailure = err;
    this.failures++;
    return true;
  }

  /**
   * @throws the last heartbeat failure (e.g. `NETWORK_ERROR`) once no heartbeat got through for a whole
   *   session timeout: the membership is gone, and a consumer that cannot reach the broker stops rather
   *   than wait forever
   */
  checkContact(sessionTimeoutMs: number): void {
    if (this.lastFailure && Date.now() - this.lastContactAt > sessionTimeoutMs) throw this.lastFailure;
  }

  /**
   * Records a fencing error (the member must rejoin); other errors pass. A fencing error is stale, and ignored, when
   * the request was sent as another member id than the session's now (`sentAs`: it rejoined since) or while a join
   * is in flight: the join under way already answers it.
   * @param sentAs the member id the failed request carried; default: the session's now
   * @returns whether `err` is a fencing error (stale or not)
   */
  noteFencing(err: unknown, sentAs: string = this.memberId): boolean {
    const code = (err as { code?: string }).code;
    if (code === 'UNKNOWN_MEMBER_ID' || code === 'ILLEGAL_GENERATION' || code === 'NOT_ASSIGNED') {
      if (this.joining !== null || sentAs !== this.memberId) return true;
      this.fenced = err as Error;
      this.stopTimer();
      this.wakeUp();
      return true;
    }
    return false;
  }

  private async apply(answer: MemberAssignment): Promise<void> {
    // The coordinator moved the member to this generation when it answered: requests sent from now on
    // (a commit queued by an assignment hook too) carry it.
    this.generationId = answer.generationId;
    this.state = answer.state;
    const assigned = new Set<string>();
    const granted: HeldPartition[] = [];
    for (const p of answer.assignment) {
      const k = key(p.topic, p.partition);
      assigned.add(k);
      if (this.held.has(k)) continue;
      const override = p.error ? undefined : await this.hooks.onAssigned(p);
      const held: HeldPartition = {
        topic: p.topic, partition: p.partition, position: override ?? p.offset ?? 0, paused: p.error ?? null, revoked: false,
      };
      this.held.set(k, held);
      if (p.error) this.hooks.onPaused(held, p.error);
      granted.push(held);
    }
    let changed = granted.length > 0;
    for (const [k, p] of this.held) {
      if (!assigned.has(k) && !p.revoked) {
        p.revoked = true;
        changed = true;
      }
    }
    if (granted.length > 0) this.hooks.onGranted?.(granted);
    if (changed) this.wakeUp();
  }

  /** Lets go of a revoked partition (after its progress was committed); the next heartbeat reports it. */
  release(p: HeldPartition): void {
    this.held.delete(key(p.topic, p.partition));
  }

  /** Partitions to fetch now: held, not paused, not revoked. */
  fetchable(): HeldPartition[] {
    return [...this.held.values()].filter((p) => !p.paused && !p.revoked);
  }

  /** Waits until the assignment changes or `ms` pass. */
  waitForChange(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }

  wakeUp(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  /**
   * Stops heartbeating and leaves the group (its partitions move at once); `abandoned`: as a crashed member ends (see
   * {@link LeaveGroupRequest.abandoned}).
   */
  async leave(abandoned = false): Promise<void> {
    this.stopTimer();
    if (!this.memberId || this.fenced) return;
    await this.serial(() => this.api.leaveGroup({ groupId: this.join.groupId, memberId: this.memberId, ...(abandoned ? { abandoned } : {}) }));
    this.memberId = '';
  }

  private stopTimer(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}

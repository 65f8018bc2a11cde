/**
 * One consumer group's membership, in memory: its members, generation, state and who owns which partition.
 * Synchronous and clock-driven; {@link GroupCoordinator} serialises calls per group and does the I/O.
 *
 * Rebalances are incremental (as Kafka's KIP-848 protocol): every change computes a target assignment and
 * bumps the generation; each member keeps the partitions it owns that stay with it and keeps consuming
 * them. A partition that moves is first revoked from its owner (left out of the owner's assignment), and
 * granted to its new owner only once the old owner has reported, in a heartbeat, that it let it go (after
 * committing what it processed). So no partition is ever consumed by two members at once.
 *
 * States (docs/consumer-groups.md draws them):
 * - `Empty`: no member. Joins are accepted (-> Reconciling); commits without a member id are accepted;
 *   resets apply at once; delete is accepted (-> Dead).
 * - `Reconciling`: some member owns a partition outside its target, or waits for one. Heartbeats answer
 *   revocations and grants; commits and fetches are checked against each member's assignment; a reset
 *   waits until its partitions are released. Moves to Stable when every member owns exactly its target,
 *   to Empty when the last member leaves or expires.
 * - `Stable`: every member owns exactly its target. Any join, leave, expiry or reset -> Reconciling.
 * - `Dead`: deleted; every request answers `UNKNOWN_GROUP` / `UNKNOWN_MEMBER_ID`. Final.
 */
import { randomUUID } from 'node:crypto';
import type { AssignorName, GroupState } from '../protocol/groups.js';
import type { TopicPartition } from '../protocol/partitions.js';
import { OnelogError } from '../protocol/errors.js';
import type { CommitMode } from '../protocol/types.js';
import type { Assignor } from './assignor.js';

/** `topic/partition`, the key partitions are tracked by. */
export type PartitionKey = string;

export const partitionKey = (tp: TopicPartition): PartitionKey => `${tp.topic}/${tp.partition}`;

export function parsePartitionKey(key: PartitionKey): TopicPartition {
  const slash = key.lastIndexOf('/');
  return { topic: key.slice(0, slash), partition: Number(key.slice(slash + 1)) };
}

/** A live member. */
export interface Member {
  readonly memberId: string;
  readonly clientId: string;
  /** What it consumes: the topics it joined with and their retry tier topics (changed when a subscription gains tiers). */
  topics: readonly string[];
  readonly sessionTimeoutMs: number;
  /** How long it may take to release a revoked partition, ms (Kafka's rebalance timeout). */
  readonly rebalanceTimeoutMs: number;
  readonly commitMode: CommitMode;
  /** Whether a partition never committed gets its start position committed when granted (not for Kafka members). */
  readonly commitsStart: boolean;
  /** ms since the epoch */
  lastHeartbeatAt: number;
  /** The generation of the last answer this member got; its requests must carry it. */
  generationId: number;
  /** The generation before that: a fetch sent just before the last answer still carries it. */
  previousGenerationId: number;
  /** What the assignor wants it to own. */
  target: Set<PartitionKey>;
  /** What it may consume now (told in its last answer). */
  assigned: Set<PartitionKey>;
  /** What it may still hold: `assigned` plus partitions revoked but not yet reported released. */
  owned: Set<PartitionKey>;
  /** When a revoked partition must be released by, ms since the epoch (its rebalance timeout after the revocation); null when none is pending. */
  releaseDeadline: number | null;
  /**
   * Per partition it holds, what its fetches were handed past what it committed: the first offset, and the end of
   * what it was handed (exclusive). What a member that ends without leaving had in hand (delivery-counts.ts).
   */
  readonly handedOut: Map<PartitionKey, { first: number; end: number }>;
}

/** Valid state changes, checked on every change. */
const TRANSITIONS: Record<GroupState, readonly GroupState[]> = {
  Empty: ['Reconciling', 'Dead'],
  Reconciling: ['Stable', 'Empty'],
  Stable: ['Reconciling', 'Empty'],
  Dead: [],
};

/** What a member joins with. */
export interface JoinOptions {
  clientId: string;
  topics: readonly string[];
  sessionTimeoutMs: number;
  /** How long it may take to release a revoked partition, ms. */
  rebalanceTimeoutMs: number;
  commitMode: CommitMode;
  assignor: Assignor;
  /** Whether a partition never committed gets its start position committed when granted. */
  commitsStart: boolean;
}

export class GroupMembership {
  private currentState: GroupState = 'Empty';
  private generation: number;
  /** The highest generation recorded in the offset store as handed out, kept by the coordinator. */
  storedGeneration: number;
  private assignor: Assignor | null = null;
  readonly members = new Map<string, Member>();
  /** Partitions withheld from every member until a pending offset reset is applied. */
  readonly withheld = new Set<PartitionKey>();

  /**
   * @param generationId the generation to go on from: the highest the offset store holds, so that generations
   *   never repeat across broker restarts and coordinators
   */
  constructor(
    readonly groupId: string,
    /** partition count of a topic */
    private readonly partitionCount: (topic: string) => number,
    generationId = 0,
  ) {
    this.generation = generationId;
    // The coordinator fenced at the next one when it took the group over: that one is recorded already.
    this.storedGeneration = generationId + 1;
  }

  get state(): GroupState {
    return this.currentState;
  }

  get generationId(): number {
    return this.generation;
  }

  get assignorName(): AssignorName | null {
    return this.assignor?.name ?? null;
  }

  /**
   * Adds a member and rebalances.
   * @throws OnelogError `INCONSISTENT_GROUP_PROTOCOL` if live members use another assignor
   */
  join(options: JoinOptions, now: number): Member {
    this.checkAlive();
    if (this.assignor && this.members.size > 0 && this.assignor.name !== options.assignor.name) {
      throw new OnelogError(
        'INCONSISTENT_GROUP_PROTOCOL',
        `group ${this.groupId} uses the ${this.assignor.name} assignor; this member asked for ${options.assignor.name}`,
        { groupId: this.groupId, assignor: options.assignor.name, groupAssignor: this.assignor.name },
      );
    }
    this.assignor = options.assignor;
    const member: Member = {
      memberId: `${options.clientId}-${randomUUID()}`,
      clientId: options.clientId,
      topics: [...new Set(options.topics)],
      sessionTimeoutMs: options.sessionTimeoutMs,
      rebalanceTimeoutMs: options.rebalanceTimeoutMs,
      commitMode: options.commitMode,
      commitsStart: options.commitsStart,
      lastHeartbeatAt: now,
      generationId: 0,
      previousGenerationId: 0,
      target: new Set(),
      assigned: new Set(),
      owned: new Set(),
      releaseDeadline: null,
      handedOut: new Map(),
    };
    this.members.set(member.memberId, member);
    this.rebalance();
    return member;
  }

  /**
   * The member a request comes from, checked against its generation.
   * @param acceptPrevious also accept the member's previous generation (for fetches, which a client sends
   *   concurrently with its heartbeats; commits and heartbeats are sent one at a time and must be current)
   * @throws OnelogError `UNKNOWN_MEMBER_ID`, `ILLEGAL_GENERATION`
   */
  member(memberId: string, generationId: number, acceptPrevious = false): Member {
    const member = this.members.get(memberId);
    if (!member) {
      throw new OnelogError(
        'UNKNOWN_MEMBER_ID',
        `group ${this.groupId} has no member ${memberId}: it left, missed its session timeout, or the broker restarted; join again`,
        { groupId: this.groupId, memberId },
      );
    }
    if (generationId !== member.generationId && !(acceptPrevious && generationId === member.previousGenerationId)) {
      throw new OnelogError(
        'ILLEGAL_GENERATION',
        `member ${memberId} of group ${this.groupId} sent generation ${generationId}, but its generation is ${member.generationId}; join again`,
        { groupId: this.groupId, memberId, generationId, currentGenerationId: member.generationId },
      );
    }
    return member;
  }

  /** Removes a member (leave, expiry) and rebalances; its partitions are free at once. */
  remove(memberId: string): boolean {
    if (!this.members.delete(memberId)) return false;
    if (this.members.size === 0) {
      this.generation++;
      this.setState('Empty');
    } else {
      this.rebalance();
    }
    return true;
  }

  /** Whether a heartbeat now would change the member's assignment: a partition waits to be granted or revoked. */
  assignmentChanged(member: Member): boolean {
    if (this.currentState === 'Stable') return false;
    for (const key of member.assigned) if (!member.target.has(key)) return true;
    return this.grantable(member).length > 0;
  }

  /** Members whose session timed out, or that held a revoked partition past their deadline, at `now`. */
  expired(now: number): Member[] {
    return [...this.members.values()].filter((m) =>
      now - m.lastHeartbeatAt > m.sessionTimeoutMs || (m.releaseDeadline !== null && now > m.releaseDeadline));
  }

  /**
   * Records a heartbeat: the member holds only `owned` of what it may hold, so revoked partitions it let go
   * are free for their new owners.
   */
  release(member: Member, owned: readonly TopicPartition[], now: number): void {
    member.lastHeartbeatAt = now;
    const reported = new Set(owned.map(partitionKey));
    for (const key of member.owned) {
      if (reported.has(key)) continue;
      member.owned.delete(key);
      member.handedOut.delete(key);
    }
  }

  /** A fetch handed the member records of a partition from `from` up to `end` (exclusive). */
  handOut(member: Member, key: PartitionKey, from: number, end: number): void {
    if (end <= from || !member.owned.has(key)) return;
    const held = member.handedOut.get(key);
    if (held === undefined) member.handedOut.set(key, { first: from, end });
    else held.end = Math.max(held.end, end);
  }

  /** The member committed `offset` of a partition: what it was handed below it is done with. */
  committed(member: Member, key: PartitionKey, offset: number): void {
    const held = member.handedOut.get(key);
    if (held === undefined) return;
    if (offset >= held.end) member.handedOut.delete(key);
    else held.first = Math.max(held.first, offset);
  }

  /**
   * Partitions in the member's target that nobody holds: the caller resolves where each starts, then
   * calls {@link grant}.
   */
  grantable(member: Member): TopicPartition[] {
    const held = new Set<PartitionKey>();
    for (const m of this.members.values()) if (m !== member) for (const key of m.owned) held.add(key);
    return [...member.target].filter((key) => !member.owned.has(key) && !held.has(key)).map(parsePartitionKey)
      .filter((tp) => tp.partition < this.partitionCount(tp.topic)); // not of a topic deleted since the target was set
  }

  /**
   * Completes a member's answer: `granted` joins what it owns; its assignment becomes what it owns of its
   * target (the rest is revoked, with a release deadline); it moves to the current generation.
   */
  grant(member: Member, granted: readonly TopicPartition[], now: number): void {
    for (const tp of granted) member.owned.add(partitionKey(tp));
    member.assigned = new Set([...member.owned].filter((key) => member.target.has(key)));
    const revoking = member.owned.size > member.assigned.size;
    if (!revoking) member.releaseDeadline = null;
    else member.releaseDeadline ??= now + member.rebalanceTimeoutMs;
    if (member.generationId !== this.generation) {
      member.previousGenerationId = member.generationId;
      member.generationId = this.generation;
    }
    this.settle();
  }

  /** Computes every member's target with the group's assignor (partitions withheld for resets excluded) and bumps the generation. */
  rebalance(): void {
    this.checkAlive();
    this.generation++;
    if (this.members.size === 0 || !this.assignor) return this.setState('Empty');
    const counts = new Map<string, number>();
    for (const m of this.members.values()) for (const t of m.topics) counts.set(t, this.partitionCount(t));
    const members = [...this.members.values()].map((m) => ({
      memberId: m.memberId, topics: m.topics, owned: [...m.target].map(parsePartitionKey),
    }));
    const targets = this.assignor.assign(members, counts);
    for (const m of this.members.values()) {
      m.target = new Set((targets.get(m.memberId) ?? []).map(partitionKey).filter((key) => !this.withheld.has(key)));
    }
    this.setState('Reconciling');
    this.settle();
  }

  /** The member holding a partition, if any. */
  holder(key: PartitionKey): Member | undefined {
    for (const m of this.members.values()) if (m.owned.has(key)) return m;
    return undefined;
  }

  /** Marks the group deleted. @throws OnelogError `NON_EMPTY_GROUP` while members are live */
  kill(): void {
    if (this.members.size > 0) {
      throw new OnelogError('NON_EMPTY_GROUP', `group ${this.groupId} has ${this.members.size} live members; stop them first`, {
        groupId: this.groupId, members: this.members.size,
      });
    }
    this.setState('Dead');
  }

  /** Stable once every member owns exactly its target and nothing is withheld. */
  private settle(): void {
    if (this.currentState !== 'Reconciling') return;
    const settled = this.withheld.size === 0 && [...this.members.values()].every((m) =>
      m.owned.size === m.target.size && m.assigned.size === m.target.size && [...m.target].every((k) => m.owned.has(k)));
    if (settled) this.setState('Stable');
  }

  private setState(next: GroupState): void {
    if (next === this.currentState) return;
    if (!TRANSITIONS[this.currentState].includes(next)) {
      throw new Error(`group ${this.groupId}: invalid state change ${this.currentState} -> ${next}`);
    }
    this.currentState = next;
  }

  private checkAlive(): void {
    if (this.currentState === 'Dead') {
      throw new OnelogError('UNKNOWN_GROUP', `group ${this.groupId} was deleted`, { groupId: this.groupId });
    }
  }
}

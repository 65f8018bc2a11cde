/**
 * Kafka's classic group protocol as an adapter onto onelog's one coordinator (as Kafka 4 serves classic members
 * of a consumer group): a Kafka member is an onelog member. The coordinator assigns (no client-side assignor:
 * JoinGroup answers no leader and no members); SyncGroup answers the member's assignment; Heartbeat answers
 * REBALANCE_IN_PROGRESS when the coordinator wants the member to release or take partitions, and the member
 * rejoins owning nothing (eager) or its OwnedPartitions (cooperative). What each Kafka member owns, and the
 * generation its last JoinGroup answered, are kept here, in memory (a restart makes members rejoin). A member not
 * heard from for twice its session timeout (the coordinator removed it after one) is forgotten, so clients that
 * vanish leave nothing behind.
 */
import type { Clock } from '../common/clock.js';
import type { AssignedPartition } from '../protocol/groups.js';
import type { TopicPartition } from '../protocol/partitions.js';
import { JoinRounds } from './join-rounds.js';

/** A Kafka member as the adapter knows it. */
export interface KafkaMember {
  groupId: string;
  memberId: string;
  /** The topics its subscription names (a rejoin naming others joins again: apis/groups.ts). */
  topics: string[];
  /** Its group.instance.id (a static member, KIP-345): a join under it with no member id is this member again; null for a dynamic member. */
  groupInstanceId: string | null;
  /**
   * The coordinator's member it is: its own id, or, for a static member that joined again under a new member id, the
   * id it had (its assignment kept). Handlers call the broker with this one.
   */
  coordinatorMemberId: string;
  /** A static member another process replaced under its group.instance.id: answered FENCED_INSTANCE_ID, never served. */
  fenced: boolean;
  /** The generation the last JoinGroup answered: the member's requests carry it until it rejoins. */
  kafkaGeneration: number;
  /** The coordinator's generation for the member now. */
  generation: number;
  /** What the member owns, as the coordinator sees it (paused partitions included). */
  owned: TopicPartition[];
  /** Partitions owned but paused for the group (never handed to the Kafka client). */
  paused: Set<string>;
  /** The protocol (assignor name) the member offered first: answered back, unused. */
  protocolName: string;
  /** From its JoinGroup, ms. */
  sessionTimeoutMs: number;
  /** When it was last heard from, ms since the epoch. */
  lastSeenAt: number;
}

const key = (tp: TopicPartition) => `${tp.topic}/${tp.partition}`;

export class KafkaMembers {
  private readonly members = new Map<string, KafkaMember>();
  /** The groups' JoinGroup rounds (join-rounds.ts). */
  readonly rounds: JoinRounds;

  /** @param initialRebalanceDelayMs see {@link JoinRounds} @default 3000 (Kafka's group.initial.rebalance.delay.ms) */
  constructor(readonly clock: Clock, initialRebalanceDelayMs = 3000) {
    this.rounds = new JoinRounds(clock, (groupId, memberId) => {
      const m = this.members.get(`${groupId}\0${memberId}`);
      return m !== undefined && this.clock.now() - m.lastSeenAt <= m.sessionTimeoutMs;
    }, initialRebalanceDelayMs);
  }

  /** The ids of the members of `groupId` remembered now. */
  inGroup(groupId: string): string[] {
    const out: string[] = [];
    for (const m of this.members.values()) if (m.groupId === groupId && !m.fenced && !this.gone(m)) out.push(m.memberId);
    return out;
  }

  /** The members remembered. */
  get size(): number {
    return this.members.size;
  }

  /** A member, marked as heard from now; undefined if unknown or forgotten. */
  get(groupId: string, memberId: string): KafkaMember | undefined {
    const member = this.members.get(`${groupId}\0${memberId}`);
    if (member === undefined || this.gone(member)) {
      this.members.delete(`${groupId}\0${memberId}`);
      return undefined;
    }
    member.lastSeenAt = this.clock.now();
    return member;
  }

  /** Remembers a member that just joined, and forgets those gone silent. @returns the member as remembered */
  set(member: Omit<KafkaMember, 'lastSeenAt'>): KafkaMember {
    for (const [k, m] of this.members) if (this.gone(m)) this.members.delete(k);
    const remembered = { ...member, lastSeenAt: this.clock.now() };
    this.members.set(`${member.groupId}\0${member.memberId}`, remembered);
    return remembered;
  }

  /** The static member of `groupId` known by `groupInstanceId` (not marked as heard from; a fenced one is not), if any. */
  byInstance(groupId: string, groupInstanceId: string): KafkaMember | undefined {
    for (const m of this.members.values()) if (m.groupId === groupId && m.groupInstanceId === groupInstanceId && !m.fenced && !this.gone(m)) return m;
    return undefined;
  }

  /** The Kafka member serving the coordinator's member `coordinatorMemberId` now (not marked as heard from), if any. */
  byCoordinatorId(groupId: string, coordinatorMemberId: string): KafkaMember | undefined {
    for (const m of this.members.values()) if (m.groupId === groupId && m.coordinatorMemberId === coordinatorMemberId && !m.fenced && !this.gone(m)) return m;
    return undefined;
  }

  /** A member as remembered, without marking it as heard from. */
  peek(groupId: string, memberId: string): KafkaMember | undefined {
    return this.members.get(`${groupId}\0${memberId}`);
  }

  /**
   * A static member's process replaced under its group.instance.id (KIP-345): the new one is the same coordinator member
   * under `memberId`, and the old one is fenced (it may still be running: it must not consume beside the new one).
   */
  replace(prior: KafkaMember, memberId: string): KafkaMember {
    prior.fenced = true;
    this.rounds.left(prior.groupId, prior.memberId);
    return this.set({ ...prior, memberId, owned: [...prior.owned], paused: new Set(prior.paused), fenced: false });
  }

  private gone(member: KafkaMember): boolean {
    return this.clock.now() - member.lastSeenAt > 2 * member.sessionTimeoutMs;
  }

  delete(groupId: string, memberId: string): void {
    this.members.delete(`${groupId}\0${memberId}`);
    this.rounds.left(groupId, memberId);
  }

  /**
   * Records the coordinator's answer as what the member owns; answers what the Kafka client gets: the answer
   * without paused partitions (a partition paused when granted stays out until a reset grants it again).
   */
  own(member: KafkaMember, assignment: readonly AssignedPartition[], generation: number): TopicPartition[] {
    for (const p of assignment) {
      if (p.error) member.paused.add(key(p));
      else if (p.offset !== undefined) member.paused.delete(key(p));
    }
    member.owned = assignment.map(({ topic, partition }) => ({ topic, partition }));
    member.generation = generation;
    return member.owned.filter((p) => !member.paused.has(key(p)));
  }

  /** Whether the coordinator's answer differs from what the member owns (it must rebalance). */
  static differs(member: KafkaMember, assignment: readonly AssignedPartition[]): boolean {
    const owned = new Set(member.owned.map(key));
    return assignment.length !== owned.size || assignment.some((p) => !owned.has(key(p)));
  }
}

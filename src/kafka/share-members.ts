/**
 * The Kafka members of share groups (KIP-932), as the listener knows them, in memory: each member's subscription,
 * member epoch and assignment (ShareGroupHeartbeat), and its share session (ShareFetch and ShareAcknowledge: the
 * partitions it fetches and the session epoch its next request must carry). The records' state is not kept here: it
 * is the broker's share group (src/coordinator/share-groups.ts), shared with onelog's own members, so a share group is
 * one group whichever protocol its members speak. A restart of the broker drops the members; their clients join
 * again (UNKNOWN_MEMBER_ID) and open new sessions (SHARE_SESSION_NOT_FOUND), as after a Kafka coordinator's failover.
 *
 * Assignment (share-assignor.ts) spreads the partitions of the topics over the members that subscribe to them. It is
 * recomputed from the members and topics known now whenever asked: a member learns a change at its next heartbeat,
 * and a ShareFetch acquires only from the partitions the member is assigned now, so a member that has not yet heard
 * of a newcomer does not take the records meant for it.
 */
import type { Clock } from '../common/clock.js';
import { assignShares } from './share-assignor.js';
import type { AssignableTopic, ShareAssignment } from './share-assignor.js';

/** A partition by topic id and index. */
export interface SharePartitionRef {
  topicId: string;
  partition: number;
}

/** A Kafka share member. */
export interface KafkaShareMember {
  groupId: string;
  memberId: string;
  /** Its member epoch: bumped when its assignment changes (0: not joined). */
  epoch: number;
  /** The epoch before, still accepted once (the answer that bumped it may have been lost, as Kafka allows). */
  previousEpoch: number;
  /** The topics it subscribes to. */
  topics: readonly string[];
  /** The assignment its last heartbeat answered. */
  assignment: ShareAssignment;
  rackId: string | null;
  clientId: string;
  clientHost: string;
  /** When its last heartbeat came, ms since the epoch. */
  lastSeenAt: number;
}

/**
 * A member's share session (KIP-932): the partitions its ShareFetch requests fetch, and the epoch its next ShareFetch
 * or ShareAcknowledge carries (0 opens one, -1 closes it, each request after the opening one adds 1).
 */
export interface ShareSession {
  epoch: number;
  /** When a request last used it, ms since the epoch: one unused for {@link SHARE_SESSION_TIMEOUT_MS} is closed. */
  usedAt: number;
  /** By `topicId:partition`. */
  partitions: Map<string, SharePartitionRef>;
}

/** How long a member lives without a heartbeat, ms (Kafka's group.share.session.timeout.ms). */
export const SHARE_SESSION_TIMEOUT_MS = 45_000;
/** The heartbeat interval told to members, ms (Kafka's group.share.heartbeat.interval.ms). */
export const SHARE_HEARTBEAT_INTERVAL_MS = 5_000;

const refKey = (p: SharePartitionRef) => `${p.topicId}:${p.partition}`;

export class KafkaShareMembers {
  private readonly members = new Map<string, KafkaShareMember>();
  /** group \0 member -> its share session (a session is the fetching client's, whether or not it heartbeats). */
  private readonly sessions = new Map<string, ShareSession>();
  /** `group \0 topic` pairs this listener subscribed as a share group (or found subscribed), so a heartbeat does not again. */
  private readonly subscriptions = new Set<string>();
  /** Topics members subscribe to, as last described: their ids and partitions. */
  private readonly topicsKnown = new Map<string, AssignableTopic>();
  /** group -> its epoch, bumped at every change of its members or their assignments (ShareGroupDescribe's group epoch). */
  private readonly groupEpochs = new Map<string, number>();
  /** group -> its lock period, ms, as its last acquisition told (a fetch that acquires nothing still answers it). */
  private readonly locks = new Map<string, number>();
  /** group -> when its first Kafka member joined (the group had none): its first assignment waits {@link initialDelayMs} from then. */
  private readonly formedAt = new Map<string, number>();

  /**
   * @param initialDelayMs how long a share group that gets its first Kafka member assigns nothing, so members started
   *   together split the partitions from their first fetch (as Kafka's group.initial.rebalance.delay.ms for classic
   *   groups; KafkaListenerOptions.initialRebalanceDelayMs, default 3000)
   */
  constructor(readonly clock: Clock, readonly initialDelayMs = 3000) {}

  /** How long the group still assigns nothing, ms (0 once its first assignment is made). */
  settling(groupId: string): number {
    const at = this.formedAt.get(groupId);
    return at === undefined ? 0 : Math.max(0, at + this.initialDelayMs - this.clock.now());
  }

  /** The member, if known and alive (one not heard from for its session timeout is gone: see {@link expired}). */
  get(groupId: string, memberId: string): KafkaShareMember | undefined {
    return this.members.get(`${groupId}\0${memberId}`);
  }

  /** Joins (or joins again) a member at a new epoch. */
  join(m: Omit<KafkaShareMember, 'epoch' | 'previousEpoch' | 'lastSeenAt' | 'assignment'>): KafkaShareMember {
    const old = this.get(m.groupId, m.memberId);
    if (this.inGroup(m.groupId).length === 0) this.formedAt.set(m.groupId, this.clock.now());
    const epoch = this.bumpGroup(m.groupId);
    const member: KafkaShareMember = { ...m, epoch, previousEpoch: old?.epoch ?? 0, lastSeenAt: this.clock.now(), assignment: [] };
    this.members.set(`${m.groupId}\0${m.memberId}`, member);
    return member;
  }

  /** Gives a member a new assignment at a new epoch, the one before still accepted once. */
  reassign(m: KafkaShareMember, assignment: ShareAssignment): void {
    m.previousEpoch = m.epoch;
    m.epoch = this.bumpGroup(m.groupId);
    m.assignment = assignment;
  }

  /**
   * Records a topic's id and partitions as just described (null: it does not exist). A topic deleted (or created
   * again: a new id) took its groups' subscriptions with it: they are made again at the next heartbeat.
   */
  learnTopic(topic: string, described: AssignableTopic | null): void {
    if (this.topicsKnown.get(topic)?.topicId !== described?.topicId) {
      for (const key of this.subscriptions) if (key.endsWith(`\0${topic}`)) this.subscriptions.delete(key);
    }
    if (described === null) this.topicsKnown.delete(topic);
    else this.topicsKnown.set(topic, described);
  }

  /** The member's assignment now, from the group's members and the topics known (empty for a member not known, and while the group settles). */
  assignmentNow(groupId: string, memberId: string): ShareAssignment {
    if (this.settling(groupId) > 0) return [];
    return assignShares(this.inGroup(groupId), this.topicsKnown).get(memberId) ?? [];
  }

  /** Marks the member heard from now. */
  seen(m: KafkaShareMember): void {
    m.lastSeenAt = this.clock.now();
  }

  /**
   * Forgets a member (it left, or its session ended), unless it joined again meanwhile (another object under its id);
   * its share session is closed apart (a client closes both). A group left with no member settles again at its next.
   */
  remove(m: KafkaShareMember): void {
    const key = `${m.groupId}\0${m.memberId}`;
    if (this.members.get(key) !== m) return;
    this.members.delete(key);
    this.bumpGroup(m.groupId);
    if (this.inGroup(m.groupId).length === 0) this.formedAt.delete(m.groupId);
  }

  /** Records the group's lock period, ms, as an acquisition told it. */
  rememberLock(groupId: string, lockMs: number): void {
    this.locks.set(groupId, lockMs);
  }

  /** The group's lock period as last told, ms, if any. */
  lockOf(groupId: string): number | undefined {
    return this.locks.get(groupId);
  }

  /** Forgets that the group subscribes to the topic (its subscription went): the next heartbeat subscribes it again. */
  forgetSubscription(groupId: string, topic: string): void {
    this.subscriptions.delete(`${groupId}\0${topic}`);
  }

  /** The group's members, alive or not yet swept. */
  inGroup(groupId: string): KafkaShareMember[] {
    return [...this.members.values()].filter((m) => m.groupId === groupId);
  }

  /** Members not heard from for {@link SHARE_SESSION_TIMEOUT_MS}: the caller makes them leave, then removes them. */
  expired(): KafkaShareMember[] {
    const now = this.clock.now();
    return [...this.members.values()].filter((m) => now - m.lastSeenAt > SHARE_SESSION_TIMEOUT_MS);
  }

  /** The group's epoch now (0 for a group with no Kafka member yet). */
  groupEpoch(groupId: string): number {
    return this.groupEpochs.get(groupId) ?? 0;
  }

  /** Whether this listener subscribed the group to the topic as a share group (or found it so). */
  subscribed(groupId: string, topic: string): boolean {
    return this.subscriptions.has(`${groupId}\0${topic}`);
  }

  /** Records that the group subscribes to the topic as a share group. */
  markSubscribed(groupId: string, topic: string): void {
    this.subscriptions.add(`${groupId}\0${topic}`);
  }

  /** Forgets what this listener knew of a group that was deleted: its members, their sessions, its subscriptions. */
  forgetGroup(groupId: string): void {
    this.groupEpochs.delete(groupId);
    this.formedAt.delete(groupId);
    this.locks.delete(groupId);
    for (const key of [...this.subscriptions, ...this.members.keys(), ...this.sessions.keys()]) {
      if (key.startsWith(`${groupId}\0`)) {
        this.subscriptions.delete(key);
        this.members.delete(key);
        this.sessions.delete(key);
      }
    }
  }

  /** The member's share session, if one is open. */
  session(groupId: string, memberId: string): ShareSession | undefined {
    return this.sessions.get(`${groupId}\0${memberId}`);
  }

  /** Opens the member's share session (a ShareFetch at epoch 0), replacing one it had: its next request carries epoch 1. */
  openSession(groupId: string, memberId: string): ShareSession {
    const session: ShareSession = { epoch: 0, usedAt: this.clock.now(), partitions: new Map() };
    this.sessions.set(`${groupId}\0${memberId}`, session);
    return session;
  }

  /** Sessions not used for {@link SHARE_SESSION_TIMEOUT_MS}, by group and member: the caller closes them. */
  staleSessions(): Array<{ groupId: string; memberId: string; session: ShareSession }> {
    const now = this.clock.now();
    return [...this.sessions].filter(([, s]) => now - s.usedAt > SHARE_SESSION_TIMEOUT_MS).map(([key, session]) => {
      const [groupId, memberId] = key.split('\0') as [string, string];
      return { groupId, memberId, session };
    });
  }

  /** Closes the member's share session (a request at epoch -1). */
  closeSession(groupId: string, memberId: string): void {
    this.sessions.delete(`${groupId}\0${memberId}`);
  }

  private bumpGroup(groupId: string): number {
    const next = this.groupEpoch(groupId) + 1;
    this.groupEpochs.set(groupId, next);
    return next;
  }
}

/** Adds partitions to a session (a ShareFetch's topics). */
export function addToSession(session: ShareSession, partitions: readonly SharePartitionRef[]): void {
  for (const p of partitions) session.partitions.set(refKey(p), p);
}

/** Removes partitions from a session (a ShareFetch's forgotten topics). */
export function forgetInSession(session: ShareSession, partitions: readonly SharePartitionRef[]): void {
  for (const p of partitions) session.partitions.delete(refKey(p));
}


/**
 * Consumer groups (docs/consumer-groups.md): membership (join, heartbeat, leave) and the assignment it answers, and
 * what `groups list` and `groups describe` show. Pure types: importing this loads nothing.
 */
import type { DeadLetterAction } from './dead-letters.js';
import type { GroupAlert, GroupLagTotals, PartitionHealth } from './monitoring-api.js';
import type { OffsetResetRecord } from './offsets.js';
import type { PartitionError, PartitionState, TopicPartition } from './partitions.js';
import type { SubscriptionInfo, SubscriptionSetting } from './subscriptions.js';
import type { CommitMode, GroupType, OutOfRangePolicy, StartPolicy } from './types.js';

/** Consumer group states, as Kafka's KIP-848 protocol (docs/consumer-groups.md: how each answers requests). */
export type GroupState = 'Empty' | 'Reconciling' | 'Stable' | 'Dead';

/** Partition assignors the coordinator offers (as Kafka's range, round-robin and sticky/uniform). */
export type AssignorName = 'range' | 'round-robin' | 'sticky';

export interface JoinGroupRequest {
  groupId: string;
  /** Topics the member consumes; each gets (or keeps) a subscription of the group. */
  topics: string[];
  /** A member that sends no heartbeat for this long is removed, ms. @default 45000 (Kafka's session.timeout.ms); 1000 to 3600000 */
  sessionTimeoutMs?: number;
  /**
   * How long the member may take to release partitions revoked from it before it is removed, ms (Kafka's rebalance
   * timeout, the consumer's max.poll.interval.ms: a member whose application is busy keeps heartbeating meanwhile).
   * @default its session timeout; 1000 to 3600000
   */
  rebalanceTimeoutMs?: number;
  /** Every live member must use the same one. @default 'sticky' */
  assignor?: AssignorName;
  /** Shown in `groups describe`. @default 'after-processing' */
  commitMode?: CommitMode;
  /** Free text naming the client, shown in `groups describe` and used as the member id's prefix. @default 'consumer' */
  clientId?: string;
  /** Start policy for subscriptions this join creates or changes. @default the stored one, else 'latest' */
  startPolicy?: StartPolicy;
  /** Out-of-range policy for subscriptions this join creates or changes. @default the stored one, else 'pause' */
  onOutOfRange?: OutOfRangePolicy;
  /**
   * Commit the start position of a partition never committed when it is first granted (so records deleted before
   * the group reads them pause it). false for Kafka members: nothing is committed, and the client's
   * auto.offset.reset decides where it starts, as in Kafka. @default true
   */
  commitStartPositions?: boolean;
}

/** The fields of a {@link JoinGroupRequest} (and a push stream's subscribe frame) that set a stored subscription setting. */
export const JOIN_SETTINGS = ['startPolicy', 'onOutOfRange'] as const satisfies ReadonlyArray<keyof JoinGroupRequest & SubscriptionSetting>;

/** A partition of a member's assignment. */
export interface AssignedPartition extends TopicPartition {
  /** Present when the partition is new to the member in this answer: where it starts reading. */
  offset?: number;
  /**
   * Present, instead of `offset`, when the partition is new to the member in this answer and paused for the
   * group (e.g. `OFFSET_OUT_OF_RANGE`): do not fetch it. Later answers list it without repeating the error;
   * an executed reset revokes it and grants it again with an offset.
   */
  error?: PartitionError;
}

/** What the coordinator tells a member after a join or heartbeat. */
export interface MemberAssignment {
  groupId: string;
  memberId: string;
  /** The generation the member now belongs to: send it with every fetch, commit and heartbeat. */
  generationId: number;
  /**
   * The partitions the member may consume now. A partition it held before and that is missing here is
   * revoked: stop it, commit what was processed, then heartbeat without it.
   */
  assignment: AssignedPartition[];
  /** Heartbeat at least this often, ms: a third of the session timeout, at most 3000 (Kafka's heartbeat.interval.ms). */
  heartbeatIntervalMs: number;
  state: GroupState;
}

export interface HeartbeatRequest {
  groupId: string;
  memberId: string;
  generationId: number;
  /** Every partition the member still holds (revoked partitions it finished with are left out). */
  owned: TopicPartition[];
}

export interface LeaveGroupRequest {
  groupId: string;
  memberId: string;
  /**
   * The member ends as a crashed one does (the broker's push stream whose client vanished): the deliveries of records
   * it held uncommitted are counted as if its session had timed out (docs/retries.md), but its partitions move at once.
   * @default false
   */
  abandoned?: boolean;
}

/** A live member as `groups describe` shows it. */
export interface MemberDescription {
  memberId: string;
  clientId: string;
  commitMode: CommitMode;
  generationId: number;
  sessionTimeoutMs: number;
  /** ms since the epoch */
  lastHeartbeatAt: number;
  /** Partitions it holds now (being revoked included). */
  assignment: TopicPartition[];
}

export interface GroupSummary {
  groupId: string;
  /** `share` for a share group (docs/consumer-groups.md), else `consumer` (a group with no subscription yet too). */
  type: GroupType;
  state: GroupState;
  members: number;
  topics: string[];
  /** ms since the epoch */
  createdAt: number;
}

/** A group's position in a partition and its health (docs/monitoring.md). */
export interface GroupPartition extends PartitionState, PartitionHealth {
  /** The next offset the group reads, or null if it never committed this partition. */
  committedOffset: number | null;
  /** ms since the epoch, or null */
  commitTimestamp: number | null;
  /** The member holding the partition, or null. */
  memberId: string | null;
  /** Set while the partition is paused for the group: why, and what to do. */
  paused: PartitionError | null;
  /**
   * A share group's records in flight in the partition: held by members (`acquired`) and waiting to be (`available`,
   * released or not yet handed out); the committed offset is its start offset, the time lag the oldest one's age.
   */
  share?: { acquired: number; available: number };
}

/** A group: its members, its subscriptions with their partitions, its lag totals over them, its history. */
/**
 * The broker coordinating a group (Kafka's group coordinator): in cluster mode the holder of its lease `group:<groupId>`
 * (docs/cluster.md); on the embedded default the one broker.
 */
export interface GroupCoordinatorBroker {
  /** Its `--broker-id`; null on the embedded default. */
  brokerId: number | null;
  /** The URL of its HTTP API, as it advertised it; null if it is not live in the registry (or, embedded, not served over HTTP). */
  url: string | null;
}

export interface GroupDescription extends GroupLagTotals {
  groupId: string;
  /**
   * Who coordinates the group now: set by the broker's `describeGroup` (and so `GET /groups/:groupId` and `onelog groups
   * describe`); null in cluster mode while nobody holds its lease (the next broker to serve one of its requests takes it).
   */
  coordinator?: GroupCoordinatorBroker | null;
  /** ms since the epoch */
  createdAt: number;
  state: GroupState;
  generationId: number;
  assignor: AssignorName | null;
  members: MemberDescription[];
  /** A share group's members, each with when it was last heard from (ms since the epoch); absent for a consumer group. */
  shareMembers?: Array<{ memberId: string; lastSeenAt: number }>;
  subscriptions: Array<SubscriptionInfo & {
    partitions: GroupPartition[];
    /** The subscription's retry tier topics (delivered to its members with the topic), with records not yet committed. */
    retryTiers: Array<{ topic: string; delayMs: number; backlog: number }>;
    /** Its dead-letter topic and the dead letters neither redriven nor purged; null without a retry policy. */
    deadLetter: { topic: string; depth: number } | null;
  }>;
  /** Most recent first, at most 20 (`onelog alerts list --group G` shows all). */
  alerts: GroupAlert[];
  /** Executed offset resets, most recent first, at most 20. */
  resets: OffsetResetRecord[];
  /** Executed dead-letter redrives and purges, most recent first, at most 20. */
  deadLetterActions: DeadLetterAction[];
  checkpoints: Array<{ name: string; createdAt: number; topics: string[] }>;
}

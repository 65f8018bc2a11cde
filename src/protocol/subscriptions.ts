/**
 * A group's subscription to a topic (docs/consumer-groups.md, docs/retries.md): the request that creates or changes it,
 * the settings it keeps, and where each partition resumes. Pure types: importing this loads nothing.
 */
import type { HealthSettings } from './monitoring-api.js';
import type { PartitionError } from './partitions.js';
import type { RetryPolicy, RetryPolicyInput } from './retry-policy.js';
import type { DeliveryMode, GroupType, OutOfRangePolicy, ShareOrdering, StartPolicy } from './types.js';

export interface SubscribeRequest {
  groupId: string;
  topic: string;
  /** Where a partition with no committed offset starts; stored on the subscription. @default the stored one, else 'latest' */
  startPolicy?: StartPolicy;
  /** @default the stored one, else 'pull' */
  deliveryMode?: DeliveryMode;
  /** What to do when the committed offset falls below the log start. @default the stored one, else 'pause' */
  onOutOfRange?: OutOfRangePolicy;
  /**
   * For push: the http(s) URL the broker POSTs batches to (as a Pub/Sub push subscription); null: records
   * are pushed to the group's WebSocket members. @default the stored one, else null
   */
  pushEndpoint?: string | null;
  /** For a webhook: most requests in flight per partition (order is kept). @default the stored one, else 1; 1 to 100 */
  maxInFlight?: number;
  /**
   * The retry policy (docs/retries.md): records a member nacks (or whose handler throws) move to delay tiers,
   * then to the dead-letter topic; null removes it (nacks are then refused; tier records still pending are
   * delivered). Setting it creates the tier topics and the dead-letter topic. @default the stored one, else none
   */
  retry?: RetryPolicyInput | null;
  /**
   * Without a retry policy: deliveries of a record before it goes to the dead-letter topic `<topic>.<group>.dlq`
   * (created), counting deliveries that ended with their consumer dying (docs/retries.md: a member that ended
   * holding it); null removes the bound. With a retry policy, its `maxAttempts` is the bound and this is refused.
   * @default the stored one, else none; 1 to 100
   */
  maxDeliveries?: number | null;
  /**
   * `share`: a share group (docs/consumer-groups.md): members read the same partitions side by side, each record
   * acquired by one member under a lock, delivered at most `maxDeliveries` times (default 5) before its dead letters.
   * A group's type is set when it is created and never changes. @default the stored one, else 'consumer'
   */
  type?: GroupType;
  /** A share group: how long a member holds an acquired record, ms, 1,000 to 3,600,000. @default the stored one, else 30000 */
  lockMs?: number;
  /** A share group: `key` hands out each key's records one at a time, in order. @default the stored one, else 'none' */
  ordering?: ShareOrdering;
  /** A share group: most records of a partition in flight, 1 to 100,000. @default the stored one, else 2000 */
  maxInFlightRecords?: number;
  /** Dead letters waiting (neither redriven nor purged) that raise a `dead-letter-depth` alert. @default the stored one, else 1; >= 1 */
  deadLetterAlertDepth?: number;
  /**
   * For a webhook with a retry policy: POSTs of a batch (its own backoff) before its records are nacked.
   * @default the stored one, else 5; 1 to 100
   */
  webhookMaxAttempts?: number;
  /** `at-risk` below this fraction of retention left (0 < ratio < 1). @default the stored one, else 0.25 */
  headroomWarnRatio?: number;
  /** `stalled` after unread records wait this long with no commit, ms (1,000 to 30 days). @default the stored one, else 300000 */
  stallMs?: number;
}

/**
 * The fields of a {@link SubscribeRequest} that set one of the subscription's stored settings (every field but its
 * group and topic). A request naming any of them, `null` included, writes it, so it needs `alter` on the group
 * (docs/security.md); the coordinator reads a request's settings through this list alone.
 */
export const SUBSCRIPTION_SETTINGS = [
  'startPolicy', 'deliveryMode', 'onOutOfRange', 'pushEndpoint', 'maxInFlight', 'retry', 'maxDeliveries', 'type', 'lockMs', 'ordering', 'maxInFlightRecords',
  'deadLetterAlertDepth', 'webhookMaxAttempts',
  'headroomWarnRatio', 'stallMs',
] as const satisfies ReadonlyArray<keyof SubscribeRequest>;

/** A stored subscription setting a request may set. */
export type SubscriptionSetting = (typeof SUBSCRIPTION_SETTINGS)[number];

/**
 * A share group's settings of one subscription (docs/consumer-groups.md); its delivery count limit is the
 * subscription's `maxDeliveries`.
 */
export interface ShareSettings {
  /** How long a member holds an acquired record before it is released, ms (Kafka's group.share.record.lock.duration.ms). */
  lockMs: number;
  /** `key`: each key's records one at a time, in order; `none`: in parallel. */
  ordering: ShareOrdering;
  /** Most records of a partition in flight (acquired or waiting to be), records (Kafka's group.share.partition.max.record.locks). */
  maxInFlightRecords: number;
}

/**
 * A subscription as the API shows it: the group, the topic and every setting it keeps (what a
 * {@link SubscribeRequest} set, or the defaults), with its health thresholds.
 */
export interface SubscriptionInfo extends HealthSettings {
  groupId: string;
  topic: string;
  deliveryMode: DeliveryMode;
  /** Where a partition with no committed offset starts. */
  startPolicy: StartPolicy;
  /** What a partition whose committed offset fell below the log start does. */
  onOutOfRange: OutOfRangePolicy;
  /** Push: the webhook URL the broker POSTs batches to; null: pushed over WebSocket (or pull). */
  pushEndpoint: string | null;
  /** Push to a webhook: most requests in flight per partition, 1 to 100. */
  maxInFlight: number;
  /** null: no retry policy (a nack is refused, a throwing handler stops its partition). */
  retry: RetryPolicy | null;
  /**
   * Without a retry policy: deliveries of a record before it is dead-lettered, those that ended with their consumer
   * dying counted (docs/retries.md); null: unbounded. With a policy its `maxAttempts` is the bound, and this is null.
   * A share group's delivery count limit.
   */
  maxDeliveries: number | null;
  /** Where dead letters go: the policy's, or `maxDeliveries`'s; kept after either is removed (its dead letters can still be listed and redriven). */
  deadLetterTopic: string | null;
  /** The group's type; a share group's subscription has its {@link share} settings. */
  type: GroupType;
  /** A share group's settings, null for a consumer group. */
  share: ShareSettings | null;
  /** Dead letters waiting (neither redriven nor purged) that raise a `dead-letter-depth` alert, >= 1. */
  deadLetterAlertDepth: number;
  /** Webhook POSTs of a batch before its records are nacked (with a retry policy), 1 to 100. */
  webhookMaxAttempts: number;
}

/** The subscription and the offset each partition resumes from. */
export interface SubscribeResult {
  subscription: SubscriptionInfo;
  /** Per partition: where to read from, or (paused for the group, e.g. `OFFSET_OUT_OF_RANGE`) the error instead. */
  positions: Array<{ partition: number; offset?: number; error?: PartitionError }>;
}

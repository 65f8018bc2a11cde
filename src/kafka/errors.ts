/**
 * The Kafka error code for each registry error (docs/kafka.md), one table: the registry's wire code where it is
 * Kafka's, the nearest Kafka error for onelog's own. Some depend on where they are answered: an invalid offset is
 * OFFSET_OUT_OF_RANGE (1) in a fetch and INVALID_REQUEST (42) elsewhere; a closed broker is NOT_LEADER (6) on the
 * data path and COORDINATOR_NOT_AVAILABLE (15) for groups, so clients retry elsewhere or later.
 */
import type { ErrorCode } from '../protocol/errors.js';
import { OnelogError } from '../protocol/errors.js';

/** Where an error is answered. */
export type KafkaErrorContext = 'data' | 'fetch' | 'group';

const KAFKA_CODES: Record<ErrorCode, number | Partial<Record<KafkaErrorContext, number>> & { other: number }> = {
  OFFSET_OUT_OF_RANGE: 1,
  CORRUPT_MESSAGE: 2,
  UNKNOWN_TOPIC: 3,
  UNKNOWN_PARTITION: 3,
  RECORD_TOO_LARGE: 10,
  REQUEST_TIMED_OUT: 7,
  TOPIC_ALREADY_EXISTS: 36,
  INVALID_PARTITIONS: 37,
  INVALID_TOPIC: 17,
  INVALID_CONFIG: 40,
  INVALID_REQUEST: 42,
  INVALID_RECORD: 87,
  INVALID_OFFSET: { fetch: 1, other: 42 },
  UNKNOWN_GROUP: 69,
  UNSUPPORTED_COMPRESSION: 76,
  STORAGE_ERROR: 56,
  RESOURCE_EXHAUSTED: 56,
  BROKER_CLOSED: { group: 15, other: 6 },
  NETWORK_ERROR: 13,
  REQUEST_TOO_LARGE: 10,
  NOT_FOUND: 42,
  DATA_DIR_LOCKED: -1,
  UNKNOWN_MEMBER_ID: 25,
  ILLEGAL_GENERATION: 22,
  NOT_ASSIGNED: 22,
  INCONSISTENT_GROUP_PROTOCOL: 23,
  NON_EMPTY_GROUP: 68,
  UNKNOWN_CHECKPOINT: 42,
  OUT_OF_ORDER_SEQUENCE: 45,
  INVALID_PRODUCER_EPOCH: 47,
  UNKNOWN_PRODUCER_ID: 59,
  NO_RETRY_POLICY: 42,
  TOPIC_IN_USE: 42,
  UNAUTHENTICATED: 58,
  FORBIDDEN: 31,
  ALREADY_EXISTS: 42,
  // THROTTLING_QUOTA_EXCEEDED
  RATE_LIMITED: 89,
  NOT_LEADER_OR_FOLLOWER: 6,
  NOT_COORDINATOR: 16,
  INVALID_RECORD_STATE: 121,
  INTERNAL_ERROR: -1,
};

/** Kafka error codes onelog answers by name, beside those of the table. */
export const KAFKA_ERROR = {
  NONE: 0,
  COORDINATOR_NOT_AVAILABLE: 15,
  REBALANCE_IN_PROGRESS: 27,
  UNSUPPORTED_VERSION: 35,
  INVALID_REPLICATION_FACTOR: 38,
  INVALID_REPLICA_ASSIGNMENT: 39,
  FENCED_INSTANCE_ID: 82,
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED: 53,
  UNKNOWN_TOPIC_ID: 100,
  FENCED_MEMBER_EPOCH: 110,
  SHARE_SESSION_NOT_FOUND: 122,
  INVALID_SHARE_SESSION_EPOCH: 123,
} as const;

/** The Kafka error code for `err` answered in `context` (-1, UNKNOWN_SERVER_ERROR, for anything not an OnelogError). */
export function kafkaErrorCode(err: unknown, context: KafkaErrorContext = 'data'): number {
  if (!(err instanceof OnelogError)) return -1;
  // An ACL's refusal names its resource: TOPIC_ (29) or GROUP_AUTHORIZATION_FAILED (30), else CLUSTER_ (31).
  if (err.code === 'FORBIDDEN' && err.context.resourceType === 'topic') return 29;
  if (err.code === 'FORBIDDEN' && err.context.resourceType === 'group') return 30;
  return kafkaCodeOf(err.code, context);
}

/** The Kafka error code for a registry code answered in `context` (-1 for a code not in the registry). */
export function kafkaCodeOf(code: string, context: KafkaErrorContext = 'data'): number {
  const kafka = KAFKA_CODES[code as ErrorCode] as (typeof KAFKA_CODES)[ErrorCode] | undefined;
  if (kafka === undefined) return -1;
  return typeof kafka === 'number' ? kafka : kafka[context] ?? kafka.other;
}

/**
 * Retry policies of subscriptions, and the records they move: what a policy is (delay tiers, `maxAttempts`,
 * a dead-letter topic) and how it is checked; the names of a subscription's tier topics and dead-letter
 * topic; the headers a moved record carries and how a consumer reads its attempt and original position
 * back from them. Pure: no I/O. docs/retries.md shows the flow.
 */
import { OnelogError } from './errors.js';
import type { RecordHeader, StoredRecord } from './types.js';

/** A subscription's retry policy (as SQS's redrive policy or Pub/Sub's dead-letter policy, with delay tiers). */
export interface RetryPolicy {
  /** Delay before each retry, ms: tier n holds the records whose attempt n + 1 waits `delaysMs[n − 1]`. 1 to 10 tiers, each 1 ms to 7 days. */
  delaysMs: number[];
  /** Deliveries of a record before it is dead-lettered, the first included; 1 to 100. */
  maxAttempts: number;
  /** Where records go after `maxAttempts`: a topic of one partition. */
  deadLetterTopic: string;
}

/** A retry policy as a request sets it. */
export interface RetryPolicyInput {
  /** Delay before each retry tier, ms (1 to 10 tiers, each 1 ms to 7 days). */
  delaysMs: number[];
  /** Deliveries before dead-lettering, the first included; 1 to 100. @default delaysMs.length + 1 */
  maxAttempts?: number;
  /** An existing topic of one partition, or a name to create. @default `<topic>.<group>.dlq` */
  deadLetterTopic?: string;
}

/** Bounds of a policy, as the errors name them. */
export const RETRY_LIMITS = { maxTiers: 10, maxDelayMs: 7 * 24 * 3600_000, maxAttempts: 100 } as const;

/** Header names of a record moved to a tier or the dead-letter topic (values are UTF-8 text; times in ms since the epoch). */
export const RETRY_HEADERS = {
  originalTopic: 'onelog.original.topic',
  originalPartition: 'onelog.original.partition',
  originalOffset: 'onelog.original.offset',
  originalTimestamp: 'onelog.original.timestamp',
  group: 'onelog.group',
  /** In a tier: the attempt its delivery will be (1-based); in the dead-letter topic: the attempts made. */
  attempt: 'onelog.attempt',
  reason: 'onelog.failure.reason',
  firstAt: 'onelog.failure.first-at',
  lastAt: 'onelog.failure.last-at',
  /** `topic/partition/offset` of the record whose nack (or redrive) wrote this one: makes the move idempotent. */
  source: 'onelog.source',
  /** Set on a redriven record: it is due at once, not after its tier's delay. */
  redrivenAt: 'onelog.redriven-at',
} as const;

const DURATION = /^(\d+)(ms|s|m|h)$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3600_000 };

/**
 * A duration such as `250ms`, `30s`, `5m`, `1h`.
 * @throws OnelogError `INVALID_REQUEST` naming the text and the units allowed
 */
export function parseDuration(text: string, what = 'a duration'): number {
  const match = DURATION.exec(text.trim());
  const ms = match ? Number(match[1]) * UNIT_MS[match[2]!]! : NaN;
  if (!match || !Number.isSafeInteger(ms) || ms < 1) {
    throw new OnelogError('INVALID_REQUEST', `${what} must be a positive whole number with a unit ms, s, m or h (e.g. 500ms, 30s, 5m, 1h), ` +
      `got ${JSON.stringify(text)}`, { value: text });
  }
  return ms;
}

/**
 * The delay tiers of `--retry`: durations separated by commas (`1s,30s,5m`), or `none` (no policy: null).
 * @throws OnelogError `INVALID_REQUEST`
 */
export function parseRetryTiers(text: string): number[] | null {
  if (text.trim() === 'none') return null;
  return text.split(',').map((part) => parseDuration(part, `each --retry delay`));
}

/** Formats ms as the shortest exact duration (`1s`, `90s`, `5m`, `250ms`). */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0ms';
  for (const unit of ['h', 'm', 's'] as const) if (ms % UNIT_MS[unit]! === 0) return `${ms / UNIT_MS[unit]!}${unit}`;
  return `${ms}ms`;
}

/**
 * Checks a policy's values.
 * @throws OnelogError `INVALID_REQUEST` naming the field and what is allowed (nothing is changed)
 */
export function checkRetryPolicy(p: { delaysMs?: unknown; maxAttempts?: unknown; deadLetterTopic?: unknown }): void {
  const delays = p.delaysMs;
  if (!Array.isArray(delays) || delays.length === 0 || delays.length > RETRY_LIMITS.maxTiers ||
    !delays.every((d) => Number.isSafeInteger(d) && (d as number) >= 1 && (d as number) <= RETRY_LIMITS.maxDelayMs)) {
    throw new OnelogError('INVALID_REQUEST', `retry.delaysMs must be 1 to ${RETRY_LIMITS.maxTiers} delays, each an integer number of ms ` +
      `from 1 to ${RETRY_LIMITS.maxDelayMs} (7 days), got ${JSON.stringify(delays)}`, { delaysMs: delays });
  }
  const max = p.maxAttempts;
  if (typeof max !== 'number' || !Number.isSafeInteger(max) || max < 1 || max > RETRY_LIMITS.maxAttempts) {
    throw new OnelogError('INVALID_REQUEST', `retry.maxAttempts must be an integer from 1 to ${RETRY_LIMITS.maxAttempts} ` +
      `(deliveries before dead-lettering, the first included), got ${JSON.stringify(max)}`, { maxAttempts: max });
  }
}

const UNSAFE_IN_TOPIC = /[^a-zA-Z0-9._-]/g;

/** A group id as it appears in topic names: characters a topic name may not hold become `_`. */
function groupPart(groupId: string): string {
  return groupId.replace(UNSAFE_IN_TOPIC, '_');
}

/** The topic of retry tier `tier` (1-based) of group `groupId`'s subscription to `topic`: `<topic>.<group>.retry-<tier>`. */
export function tierTopicName(topic: string, groupId: string, tier: number): string {
  return `${topic}.${groupPart(groupId)}.retry-${tier}`;
}

/** The default dead-letter topic of a subscription: `<topic>.<group>.dlq`. */
export function defaultDeadLetterTopic(topic: string, groupId: string): string {
  return `${topic}.${groupPart(groupId)}.dlq`;
}

/** The delay before a delivery from tier `tier` (1-based): tiers beyond the policy's reuse its last delay; none without a policy. */
export function tierDelayMs(policy: RetryPolicy | null, tier: number): number {
  if (!policy) return 0;
  return policy.delaysMs[Math.min(tier, policy.delaysMs.length) - 1]!;
}

/** Where a delivered record comes from: the attempt its delivery is, and the original record's position. */
export interface DeliveryInfo {
  /** 1 for the first delivery from the subscribed topic, 2 for the first retry, ... */
  attempt: number;
  /** The record as first appended to the subscribed topic. */
  original: { topic: string; partition: number; offset: number; timestamp: number };
}

/** The last value of a header as text, or undefined. */
export function headerText(headers: readonly RecordHeader[], key: string): string | undefined {
  for (let i = headers.length - 1; i >= 0; i--) if (headers[i]!.key === key) return headers[i]!.value?.toString('utf8');
  return undefined;
}

function headerNumber(headers: readonly RecordHeader[], key: string): number | undefined {
  const text = headerText(headers, key);
  const n = text === undefined ? NaN : Number(text);
  return Number.isSafeInteger(n) ? n : undefined;
}

/**
 * The attempt and original position of a record read from `topic`: a record of a subscribed topic is its
 * own original at attempt 1; a record of a retry tier says both in its headers.
 * @param fromTier whether `topic` is a retry tier (or dead-letter topic) rather than a subscribed topic
 */
export function deliveryInfo(record: Pick<StoredRecord, 'offset' | 'timestamp' | 'headers'>, topic: string, partition: number, fromTier: boolean): DeliveryInfo {
  const own = { attempt: 1, original: { topic, partition, offset: record.offset, timestamp: record.timestamp } };
  if (!fromTier) return own;
  const h = record.headers;
  const originalTopic = headerText(h, RETRY_HEADERS.originalTopic);
  const originalPartition = headerNumber(h, RETRY_HEADERS.originalPartition);
  const originalOffset = headerNumber(h, RETRY_HEADERS.originalOffset);
  if (originalTopic === undefined || originalPartition === undefined || originalOffset === undefined) return own;
  return {
    attempt: headerNumber(h, RETRY_HEADERS.attempt) ?? 1,
    original: { topic: originalTopic, partition: originalPartition, offset: originalOffset, timestamp: headerNumber(h, RETRY_HEADERS.originalTimestamp) ?? record.timestamp },
  };
}

/** What a failure adds to a record moved to a tier or the dead-letter topic. */
export interface FailureFacts {
  groupId: string;
  /** The attempt the moved record's delivery will be (tier), or the attempts made (dead-letter topic). */
  attempt: number;
  reason: string;
  /** ms since the epoch */
  now: number;
  /** Position of the record nacked (the source of the move). */
  source: { topic: string; partition: number; offset: number };
}

/**
 * The headers of a record moved out of `source`: the user's headers (onelog's own dropped), then the original
 * position (kept from a tier record, or the source itself), the group, attempt, reason and failure times.
 */
export function movedHeaders(record: StoredRecord, sourceIsTier: boolean, facts: FailureFacts): RecordHeader[] {
  const info = deliveryInfo(record, facts.source.topic, facts.source.partition, sourceIsTier);
  const firstAt = (sourceIsTier ? headerNumber(record.headers, RETRY_HEADERS.firstAt) : undefined) ?? facts.now;
  const text = (key: string, value: string | number): RecordHeader => ({ key, value: Buffer.from(String(value), 'utf8') });
  const { source } = facts;
  return [
    ...record.headers.filter((h) => !h.key.startsWith('onelog.')),
    text(RETRY_HEADERS.originalTopic, info.original.topic),
    text(RETRY_HEADERS.originalPartition, info.original.partition),
    text(RETRY_HEADERS.originalOffset, info.original.offset),
    text(RETRY_HEADERS.originalTimestamp, info.original.timestamp),
    text(RETRY_HEADERS.group, facts.groupId),
    text(RETRY_HEADERS.attempt, facts.attempt),
    // Bounded, so a huge error message cannot make the record too large to move.
    text(RETRY_HEADERS.reason, facts.reason.slice(0, 4096)),
    text(RETRY_HEADERS.firstAt, firstAt),
    text(RETRY_HEADERS.lastAt, facts.now),
    text(RETRY_HEADERS.source, `${source.topic}/${source.partition}/${source.offset}`),
  ];
}

/** The attempt a moved record's header names (1 when missing). */
export function movedAttempt(record: Pick<StoredRecord, 'headers'>): number {
  return headerNumber(record.headers, RETRY_HEADERS.attempt) ?? 1;
}

/** The source position a moved record names, as `topic/partition/offset`, or undefined. */
export function sourceOf(record: Pick<StoredRecord, 'headers'>): string | undefined {
  return headerText(record.headers, RETRY_HEADERS.source);
}

/** When a tier record may be delivered, ms since the epoch: its redrive time, else its last failure + the tier's delay. */
export function dueAt(record: Pick<StoredRecord, 'headers' | 'timestamp'>, delayMs: number): number {
  const redriven = headerNumber(record.headers, RETRY_HEADERS.redrivenAt);
  if (redriven !== undefined) return redriven;
  return (headerNumber(record.headers, RETRY_HEADERS.lastAt) ?? record.timestamp) + delayMs;
}

/**
 * Checks on names and numbers that every face (embedded, HTTP, CLI) applies the same way. Each failure is
 * an OnelogError naming the field, the value and what is allowed.
 */
import { OnelogError } from './errors.js';
import type { ErrorCode } from './errors.js';

const TOPIC_NAME = /^[a-zA-Z0-9._-]{1,249}$/;
/** Most partitions a topic may have. */
export const MAX_PARTITIONS = 10_000;

/**
 * A topic name: 1 to 249 of `[a-zA-Z0-9._-]`, not `.` or `..` (Kafka's rule).
 * @throws OnelogError `INVALID_TOPIC`
 */
export function checkTopicName(topic: unknown): string {
  if (typeof topic !== 'string' || !TOPIC_NAME.test(topic) || topic === '.' || topic === '..') {
    throw new OnelogError(
      'INVALID_TOPIC',
      `invalid topic name ${JSON.stringify(topic)}: use 1 to 249 characters of a-z, A-Z, 0-9, '.', '_' and '-'`,
      { topic },
    );
  }
  return topic;
}

/**
 * The error for a topic that does not exist: `INVALID_TOPIC` when its name could not be a topic's (so a Kafka client
 * fails its records at once, as Kafka's INVALID_TOPIC_EXCEPTION makes it, instead of waiting for the topic),
 * else `UNKNOWN_TOPIC`.
 */
export function unknownTopic(topic: string, context: Record<string, unknown> = {}): OnelogError {
  try {
    checkTopicName(topic);
  } catch (err) {
    return err as OnelogError;
  }
  return new OnelogError('UNKNOWN_TOPIC', `topic ${topic} does not exist`, { topic, ...context });
}

/**
 * A group id: 1 to 255 characters, no control characters.
 * @throws OnelogError `INVALID_REQUEST`
 */
export function checkGroupId(groupId: unknown): string {
  // eslint-disable-next-line no-control-regex
  if (typeof groupId !== 'string' || groupId.length === 0 || groupId.length > 255 || /[\x00-\x1f\x7f]/.test(groupId)) {
    throw new OnelogError(
      'INVALID_REQUEST',
      `invalid group id ${JSON.stringify(groupId)}: use 1 to 255 characters without control characters`,
      { groupId },
    );
  }
  return groupId;
}

/**
 * An integer within `[min, max]`.
 * @param field the name used in the message
 * @throws OnelogError with `code` (default `INVALID_REQUEST`)
 */
export function checkInteger(
  value: unknown,
  field: string,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
  code: ErrorCode = 'INVALID_REQUEST',
): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `an integer >= ${min}` : `an integer from ${min} to ${max}`;
    throw new OnelogError(code, `${field} must be ${range}, got ${JSON.stringify(value)}`, { [field]: value });
  }
  return value;
}

/**
 * One of `allowed`.
 * @throws OnelogError `INVALID_REQUEST` (or `code`)
 */
export function checkOneOf<T extends string>(
  value: unknown,
  field: string,
  allowed: readonly T[],
  code: ErrorCode = 'INVALID_REQUEST',
): T {
  if (typeof value !== 'string' || !allowed.includes(value as T)) {
    throw new OnelogError(code, `${field} must be one of ${allowed.join(', ')}, got ${JSON.stringify(value)}`, {
      [field]: value,
    });
  }
  return value as T;
}

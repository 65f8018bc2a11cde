/** The Kafka error code answered for each registry error: the table, context by context. */
import { describe, expect, it } from 'vitest';
import { kafkaCodeOf, kafkaErrorCode } from '../../src/kafka/errors.js';
import { ERRORS, OnelogError } from '../../src/protocol/errors.js';

describe('Kafka error codes', () => {
  it('are the table\'s, where they depend on the context too', () => {
    const table: Record<string, number> = {
      OFFSET_OUT_OF_RANGE: 1, CORRUPT_MESSAGE: 2, UNKNOWN_TOPIC: 3, UNKNOWN_PARTITION: 3, RECORD_TOO_LARGE: 10, REQUEST_TIMED_OUT: 7,
      TOPIC_ALREADY_EXISTS: 36, INVALID_PARTITIONS: 37, INVALID_TOPIC: 17, INVALID_CONFIG: 40, INVALID_REQUEST: 42, INVALID_RECORD: 87,
      UNKNOWN_GROUP: 69, UNSUPPORTED_COMPRESSION: 76, STORAGE_ERROR: 56, UNKNOWN_MEMBER_ID: 25, ILLEGAL_GENERATION: 22, NOT_ASSIGNED: 22,
      INCONSISTENT_GROUP_PROTOCOL: 23, NON_EMPTY_GROUP: 68, OUT_OF_ORDER_SEQUENCE: 45, INVALID_PRODUCER_EPOCH: 47, UNKNOWN_PRODUCER_ID: 59,
      INTERNAL_ERROR: -1,
    };
    for (const [code, kafka] of Object.entries(table)) expect([code, kafkaCodeOf(code)]).toEqual([code, kafka]);
    expect([kafkaCodeOf('INVALID_OFFSET', 'fetch'), kafkaCodeOf('INVALID_OFFSET', 'group'), kafkaCodeOf('INVALID_OFFSET')]).toEqual([1, 42, 42]);
    expect([kafkaCodeOf('BROKER_CLOSED', 'data'), kafkaCodeOf('BROKER_CLOSED', 'fetch'), kafkaCodeOf('BROKER_CLOSED', 'group')]).toEqual([6, 6, 15]);
  });

  it('name one for every registry error, and -1 for anything else', () => {
    for (const code of Object.keys(ERRORS)) expect(Number.isInteger(kafkaCodeOf(code))).toBe(true);
    expect(kafkaCodeOf('NO_SUCH_CODE')).toBe(-1);
    expect(kafkaErrorCode(new Error('boom'))).toBe(-1);
    expect(kafkaErrorCode(new OnelogError('UNKNOWN_TOPIC', 'x'))).toBe(3);
  });
});

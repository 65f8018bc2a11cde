/**
 * The error registry: every error onelog reports has a stable string code, a numeric wire code (Kafka's
 * where Kafka has the same error, 1000+ for onelog's own), an HTTP status and a `retriable` flag.
 * docs/errors.md describes each entry; a test keeps the two in line.
 */

/** One registry entry. */
export interface ErrorSpec {
  /** Numeric code for binary protocols; Kafka's number where Kafka has the error. */
  wireCode: number;
  /** HTTP status the server answers with. */
  httpStatus: number;
  /** Whether the same request may succeed if simply retried later. */
  retriable: boolean;
}

/** Every error code onelog reports. */
export const ERRORS = {
  OFFSET_OUT_OF_RANGE: { wireCode: 1, httpStatus: 409, retriable: false },
  CORRUPT_MESSAGE: { wireCode: 2, httpStatus: 400, retriable: false },
  UNKNOWN_TOPIC: { wireCode: 3, httpStatus: 404, retriable: false },
  UNKNOWN_PARTITION: { wireCode: 1003, httpStatus: 404, retriable: false },
  RECORD_TOO_LARGE: { wireCode: 10, httpStatus: 413, retriable: false },
  REQUEST_TIMED_OUT: { wireCode: 7, httpStatus: 504, retriable: true },
  TOPIC_ALREADY_EXISTS: { wireCode: 36, httpStatus: 409, retriable: false },
  INVALID_PARTITIONS: { wireCode: 37, httpStatus: 400, retriable: false },
  INVALID_TOPIC: { wireCode: 17, httpStatus: 400, retriable: false },
  INVALID_CONFIG: { wireCode: 40, httpStatus: 400, retriable: false },
  INVALID_REQUEST: { wireCode: 42, httpStatus: 400, retriable: false },
  INVALID_RECORD: { wireCode: 87, httpStatus: 400, retriable: false },
  INVALID_OFFSET: { wireCode: 1004, httpStatus: 400, retriable: false },
  UNKNOWN_GROUP: { wireCode: 69, httpStatus: 404, retriable: false },
  UNSUPPORTED_COMPRESSION: { wireCode: 76, httpStatus: 400, retriable: false },
  STORAGE_ERROR: { wireCode: 56, httpStatus: 500, retriable: true },
  RESOURCE_EXHAUSTED: { wireCode: 1010, httpStatus: 503, retriable: true },
  BROKER_CLOSED: { wireCode: 1001, httpStatus: 503, retriable: true },
  NETWORK_ERROR: { wireCode: 1002, httpStatus: 503, retriable: true },
  REQUEST_TOO_LARGE: { wireCode: 1005, httpStatus: 413, retriable: false },
  NOT_FOUND: { wireCode: 1006, httpStatus: 404, retriable: false },
  DATA_DIR_LOCKED: { wireCode: 1007, httpStatus: 503, retriable: false },
  UNKNOWN_MEMBER_ID: { wireCode: 25, httpStatus: 409, retriable: false },
  ILLEGAL_GENERATION: { wireCode: 22, httpStatus: 409, retriable: false },
  NOT_ASSIGNED: { wireCode: 1008, httpStatus: 409, retriable: false },
  INCONSISTENT_GROUP_PROTOCOL: { wireCode: 23, httpStatus: 409, retriable: false },
  NON_EMPTY_GROUP: { wireCode: 68, httpStatus: 409, retriable: false },
  UNKNOWN_CHECKPOINT: { wireCode: 1009, httpStatus: 404, retriable: false },
  OUT_OF_ORDER_SEQUENCE: { wireCode: 45, httpStatus: 409, retriable: false },
  INVALID_PRODUCER_EPOCH: { wireCode: 47, httpStatus: 409, retriable: false },
  UNKNOWN_PRODUCER_ID: { wireCode: 59, httpStatus: 409, retriable: false },
  NO_RETRY_POLICY: { wireCode: 1011, httpStatus: 409, retriable: false },
  TOPIC_IN_USE: { wireCode: 1012, httpStatus: 409, retriable: false },
  UNAUTHENTICATED: { wireCode: 1013, httpStatus: 401, retriable: false },
  FORBIDDEN: { wireCode: 1014, httpStatus: 403, retriable: false },
  ALREADY_EXISTS: { wireCode: 1015, httpStatus: 409, retriable: false },
  RATE_LIMITED: { wireCode: 1016, httpStatus: 429, retriable: true },
  NOT_LEADER_OR_FOLLOWER: { wireCode: 6, httpStatus: 503, retriable: true },
  NOT_COORDINATOR: { wireCode: 16, httpStatus: 503, retriable: true },
  INVALID_RECORD_STATE: { wireCode: 121, httpStatus: 409, retriable: false },
  INTERNAL_ERROR: { wireCode: -1, httpStatus: 500, retriable: false },
} as const satisfies Record<string, ErrorSpec>;

/** A stable error code, e.g. `OFFSET_OUT_OF_RANGE`. */
export type ErrorCode = keyof typeof ERRORS;

/** Typed context an error carries: what was wrong and where (topic, partition, offset, groupId, ...). */
export type ErrorContext = Record<string, unknown>;

/**
 * An error with a stable code and typed context. Serialised on the wire as `{ code, message, ...context }`.
 */
export class OnelogError extends Error {
  override readonly name = 'OnelogError';

  /**
   * @param code registry code
   * @param message what was wrong and what is allowed
   * @param context fields that locate the problem; serialised beside `code` and `message`
   */
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly context: ErrorContext = {},
  ) {
    super(message);
  }

  /** Whether retrying the same request may succeed. */
  get retriable(): boolean {
    return ERRORS[this.code].retriable;
  }

  /** HTTP status for this error. */
  get httpStatus(): number {
    return ERRORS[this.code].httpStatus;
  }

  /** The wire body: `{ code, message, ...context }`. */
  toJSON(): { code: ErrorCode; message: string } & ErrorContext {
    return { ...this.context, code: this.code, message: this.message };
  }

  /**
   * Rebuilds an error from its wire body. An unknown code becomes `INTERNAL_ERROR` with the original kept
   * in `context.remoteCode`.
   */
  static fromJSON(body: { code?: unknown; message?: unknown } & ErrorContext): OnelogError {
    const { code, message, ...context } = body;
    const text = typeof message === 'string' ? message : 'unknown error';
    if (typeof code === 'string' && code in ERRORS) return new OnelogError(code as ErrorCode, text, context);
    return new OnelogError('INTERNAL_ERROR', text, { ...context, remoteCode: code });
  }
}

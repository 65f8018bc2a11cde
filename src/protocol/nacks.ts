/**
 * Nacks (docs/retries.md): a member hands back records it could not process, and learns where each moved (a retry
 * tier or the dead-letter topic). Pure types: importing this loads nothing.
 */

/**
 * "I could not process this record" (docs/retries.md): the broker appends it, durably, to the next retry tier
 * of the subscription (or, after `maxAttempts`, to its dead-letter topic); then it counts as processed and the
 * member commits past it as usual. Fenced as a commit is.
 */
export interface NackRequest {
  groupId: string;
  /** The topic the record was delivered from: the subscribed topic or one of its retry tiers. */
  topic: string;
  partition: number;
  offset: number;
  /** Why, kept in the moved record's `onelog.failure.reason` header (at most 4096 characters kept). */
  reason: string;
  /** As for a commit: without them the nack is accepted only while the group has no live member. */
  memberId?: string;
  generationId?: number;
  /**
   * Deliveries of the record this member made that all failed, this one included (a webhook dispatcher's POSTs of it
   * alone), 1 to 100: counted against the subscription's `maxAttempts` (or `maxDeliveries`) with its earlier attempts
   * and crash deliveries. @default 1
   */
  deliveries?: number;
}

/** Nacks of several records of one partition in one request (the consumer sends a batch's nacks so): moved in order, sharing fdatasyncs. */
export interface NackBatchRequest extends Omit<NackRequest, 'offset' | 'reason'> {
  /** 1 to 10,000 records. */
  records: Array<{ offset: number; reason: string }>;
}

/** Where a nacked record went. */
export interface NackResult {
  /** The tier topic (or dead-letter topic), partition and offset of the moved record. */
  topic: string;
  partition: number;
  offset: number;
  /** The attempt its next delivery will be (tier), or the attempts made (dead-letter topic). */
  attempt: number;
  deadLettered: boolean;
  /** The record had been moved already (a retried nack): nothing was appended again. */
  duplicate: boolean;
}

/**
 * A subscription's dead letters (docs/retries.md): listing them, sending them back to the group (redrive), discarding
 * them (purge), and the record of each redrive and purge. Pure types and a limit: importing this loads nothing.
 */

/** A record in a dead-letter topic, as `dlq list` shows it. */
export interface DeadLetter {
  /** Its offset in the dead-letter topic. */
  offset: number;
  original: { topic: string; partition: number; offset: number; timestamp: number };
  /** Deliveries made before it was dead-lettered. */
  attempts: number;
  /** The last failure's reason. */
  reason: string;
  /** ms since the epoch */
  firstFailureAt: number;
  lastFailureAt: number;
  /** UTF-8 text, or null. */
  key: string | null;
  /** The first 200 characters of the value as UTF-8 text, or null. */
  valuePreview: string | null;
}

export interface DeadLetterListRequest {
  groupId: string;
  topic: string;
  /** Most records listed, oldest first. @default 100; 1 to 10000 */
  limit?: number;
}

export interface DeadLetterList {
  groupId: string;
  topic: string;
  deadLetterTopic: string;
  /** Dead letters neither redriven nor purged. */
  depth: number;
  records: DeadLetter[];
}

/** Most dead letters one redrive names by offset (`offsets`). */
export const MAX_REDRIVE_OFFSETS = 10_000;

/** Sends dead letters back to the group (only), as attempt 1, through its first retry tier, due at once. */
export interface RedriveRequest {
  groupId: string;
  topic: string;
  /** One dead letter, by its offset in the dead-letter topic. Exactly one of `offset`, `offsets` and `all` is given. */
  offset?: number;
  /**
   * A selection of dead letters, by their offsets in the dead-letter topic (1 to 10,000 offsets, each >= 0, in any
   * order; a repeated offset counts once): each must be waiting (neither redriven nor purged), else nothing is redriven.
   */
  offsets?: number[];
  /** Every waiting dead letter. */
  all?: boolean;
  /** Apply; without it the call is a dry run. @default false */
  execute?: boolean;
  /** Who asks, recorded with the redrive. @default 'unknown' */
  requestedBy?: string;
}

export interface RedriveResult {
  groupId: string;
  topic: string;
  executed: boolean;
  /** The dead letters redriven (or, dry run, that would be). */
  records: Array<Pick<DeadLetter, 'offset' | 'original' | 'attempts'>>;
  /** Depth after the redrive (dry run: now). */
  depth: number;
}

/** Discards dead letters below an offset of the dead-letter topic. */
export interface PurgeRequest {
  groupId: string;
  topic: string;
  beforeOffset: number;
  /** @default false (dry run) */
  execute?: boolean;
  /** @default 'unknown' */
  requestedBy?: string;
}

export interface PurgeResult {
  groupId: string;
  topic: string;
  executed: boolean;
  /** Dead letters discarded (dry run: that would be), not counting those already redriven. */
  records: number;
  depth: number;
}

/** An executed redrive or purge of a subscription's dead letters: offsets `[firstOffset, endOffset)` of its dead-letter topic. */
export interface DeadLetterAction {
  /** The subscribed topic whose dead letters they were. */
  topic: string;
  action: 'redrive' | 'purge';
  firstOffset: number;
  endOffset: number;
  /** Dead letters redriven or purged. */
  records: number;
  /** Who asked (free text the caller gave, e.g. `alice@host`). */
  requestedBy: string;
  /** ms since the epoch */
  executedAt: number;
}

/**
 * Dead letters of a subscription (docs/retries.md): records that failed `maxAttempts` times wait in its
 * dead-letter topic (one partition) until someone lists, redrives or purges them. Depth = the dead letters
 * neither redriven nor purged: the records between the topic's log start and high watermark, less the offsets
 * redriven (each redrive is recorded in the catalog with who asked, as a range of offsets; a purge moves the
 * log start and is recorded the same way). A depth at or above the subscription's `deadLetterAlertDepth`
 * raises one `dead-letter-depth` alert, resolved when the depth falls below again.
 */
import type { Catalog } from '../catalog/catalog.js';
import type { SubscriptionRecord } from '../catalog/subscriptions.js';
import type { Clock } from '../common/clock.js';
import { MAX_REDRIVE_OFFSETS } from '../protocol/dead-letters.js';
import type {
  DeadLetter, DeadLetterList, DeadLetterListRequest, PurgeRequest, PurgeResult, RedriveRequest, RedriveResult,
} from '../protocol/dead-letters.js';
import { OnelogError } from '../protocol/errors.js';
import { deliveryInfo, headerText, movedAttempt, RETRY_HEADERS } from '../protocol/retry-policy.js';
import type { StoredRecord } from '../protocol/types.js';
import { checkInteger } from '../protocol/validate.js';
import type { Logs } from '../log/logs.js';
import type { Logger } from '../common/logger.js';
import type { Alerts } from '../monitoring/alerts.js';
import type { Partition } from '../log/partition.js';
import type { Retries } from './retries.js';

/** Characters of a value shown by a listing. */
const VALUE_PREVIEW_CHARS = 200;

export class DeadLetters {
  constructor(
    private readonly logs: Logs,
    private readonly catalog: Catalog,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly alerts: Alerts,
  ) {}

  /** Dead letters of `sub` neither redriven nor purged (0 without a dead-letter topic). */
  async depth(sub: SubscriptionRecord): Promise<number> {
    const log = this.log(sub);
    if (!log) return 0;
    const redriven = await this.redrivenRanges(sub);
    return log.highWatermark - log.logStartOffset - covered(redriven, log.logStartOffset, log.highWatermark);
  }

  /**
   * The depth and the oldest waiting dead letters.
   * @throws OnelogError `INVALID_REQUEST` for a limit outside 1 to 10,000
   */
  async list(request: DeadLetterListRequest, sub: SubscriptionRecord): Promise<DeadLetterList> {
    const limit = checkInteger(request.limit ?? 100, 'limit', 1, 10_000);
    const log = this.requireLog(sub);
    const redriven = await this.redrivenRanges(sub);
    const records = (await this.waiting(log, redriven, log.logStartOffset, log.highWatermark, limit)).map((r) => describe(r, log));
    return {
      groupId: sub.groupId, topic: sub.topic, deadLetterTopic: log.topic,
      depth: log.highWatermark - log.logStartOffset - covered(redriven, log.logStartOffset, log.highWatermark), records,
    };
  }

  /**
   * Plans and, with `execute`, sends dead letters back to the group as attempt 1 (through tier 1, due at once),
   * recorded with who asked. A redrive interrupted by a crash can be run again: what was sent is not sent twice.
   * @param retries sends each record back (the retry tiers write to these dead letters, so they are built after them)
   * @throws OnelogError `INVALID_REQUEST` (not exactly one of `offset`, `offsets` and `all`; no offsets or more than
   *   {@link MAX_REDRIVE_OFFSETS}), `INVALID_OFFSET` (an offset that is not a waiting dead letter: nothing is redriven)
   */
  async redrive(request: RedriveRequest, sub: SubscriptionRecord, retries: Retries): Promise<RedriveResult> {
    const given = [request.offset !== undefined, request.offsets !== undefined, request.all === true].filter(Boolean).length;
    if (given !== 1) {
      throw new OnelogError('INVALID_REQUEST', 'redrive needs exactly one of offset (one dead letter), offsets (a selection) or all: true', {
        groupId: sub.groupId, topic: sub.topic,
      });
    }
    const log = this.requireLog(sub);
    const redriven = await this.redrivenRanges(sub);
    const chosen = request.all === true
      ? await this.waiting(log, redriven, log.logStartOffset, log.highWatermark, Infinity)
      : await this.selected(request.offsets ?? [request.offset], log, redriven, sub);
    const records = chosen.map((r) => {
      const d = describe(r, log);
      return { offset: d.offset, original: d.original, attempts: d.attempts };
    });
    if (request.execute !== true) return { groupId: sub.groupId, topic: sub.topic, executed: false, records, depth: await this.depth(sub) };
    if (sub.retryTiers === 0) {
      throw new OnelogError('NO_RETRY_POLICY', `group ${sub.groupId}'s dead letters of ${sub.topic} go back through its first retry tier, and ` +
        `it has none (its dead letters come from --max-deliveries): give it a retry policy first (onelog groups alter ${sub.groupId} ` +
        `--topic ${sub.topic} --retry 1s --max-attempts ${Math.max(2, sub.maxDeliveries ?? 2)})`, { groupId: sub.groupId, topic: sub.topic });
    }
    const requestedBy = request.requestedBy ?? 'unknown';
    for (const r of chosen) await retries.redrive(sub, { topic: log.topic, partition: 0, offset: r.offset }, r);
    const now = this.clock.now();
    for (const [firstOffset, endOffset] of ranges(chosen.map((r) => r.offset))) {
      await this.catalog.deadLetterActions.record(sub.groupId, sub.topic, { action: 'redrive', firstOffset, endOffset, records: endOffset - firstOffset, requestedBy, executedAt: now });
    }
    this.logger.info({ groupId: sub.groupId, topic: sub.topic, records: chosen.length, requestedBy }, 'dead letters redriven');
    return { groupId: sub.groupId, topic: sub.topic, executed: true, records, depth: await this.checkAlert(sub) };
  }

  /**
   * Plans and, with `execute`, discards the dead letters below `beforeOffset` (the dead-letter topic's log start
   * moves there), recorded with who asked.
   * @throws OnelogError `INVALID_OFFSET` for an offset outside the dead-letter topic
   */
  async purge(request: PurgeRequest, sub: SubscriptionRecord): Promise<PurgeResult> {
    const log = this.requireLog(sub);
    const before = checkInteger(request.beforeOffset, 'beforeOffset', 0, Number.MAX_SAFE_INTEGER, 'INVALID_OFFSET');
    if (before > log.highWatermark) {
      throw new OnelogError('INVALID_OFFSET', `beforeOffset ${before} is above the high watermark ${log.highWatermark} of ${log.topic}`, {
        groupId: sub.groupId, topic: sub.topic, beforeOffset: before, highWatermark: log.highWatermark,
      });
    }
    const from = log.logStartOffset;
    const end = Math.max(from, before);
    const records = end - from - covered(await this.redrivenRanges(sub), from, end);
    if (request.execute !== true || end === from) {
      return { groupId: sub.groupId, topic: sub.topic, executed: request.execute === true, records: request.execute === true ? 0 : records, depth: await this.depth(sub) };
    }
    log.deleteRecordsBefore(end, 'delete-records');
    const requestedBy = request.requestedBy ?? 'unknown';
    await this.catalog.deadLetterActions.record(sub.groupId, sub.topic, { action: 'purge', firstOffset: from, endOffset: end, records, requestedBy, executedAt: this.clock.now() });
    this.logger.info({ groupId: sub.groupId, topic: sub.topic, records, beforeOffset: end, requestedBy }, 'dead letters purged');
    return { groupId: sub.groupId, topic: sub.topic, executed: true, records, depth: await this.checkAlert(sub) };
  }

  /**
   * The waiting dead letters at `offsets` (a redrive's `offset` or `offsets`), oldest first, each once.
   * @throws OnelogError `INVALID_REQUEST` for no offsets, more than {@link MAX_REDRIVE_OFFSETS} or not an array, `INVALID_OFFSET` for an
   *   offset that is not an integer >= 0 or holds no waiting dead letter
   */
  private async selected(offsets: unknown, log: Partition, redriven: Array<[number, number]>, sub: SubscriptionRecord): Promise<StoredRecord[]> {
    if (!Array.isArray(offsets) || offsets.length === 0 || offsets.length > MAX_REDRIVE_OFFSETS) {
      const given = Array.isArray(offsets) ? `names ${offsets.length} dead letters` : 'is not an array';
      throw new OnelogError('INVALID_REQUEST', `offsets ${given}: give 1 to ${MAX_REDRIVE_OFFSETS} offsets of the dead-letter topic (or all: true)`, {
        groupId: sub.groupId, topic: sub.topic,
      });
    }
    const wanted = [...new Set(offsets.map((o) => checkInteger(o, 'offset', 0, Number.MAX_SAFE_INTEGER, 'INVALID_OFFSET')))].sort((a, b) => a - b);
    const chosen: StoredRecord[] = [];
    for (const offset of wanted) {
      const [record] = offset >= log.logStartOffset && offset < log.highWatermark ? await this.waiting(log, redriven, offset, offset + 1, 1) : [];
      if (!record) {
        throw new OnelogError('INVALID_OFFSET', `${log.topic} has no waiting dead letter at offset ${offset} (it holds offsets ` +
          `${log.logStartOffset} to ${log.highWatermark - 1}; redriven ones are not listed: onelog dlq list ${sub.groupId} --topic ${sub.topic})`, {
          groupId: sub.groupId, topic: sub.topic, offset,
        });
      }
      chosen.push(record);
    }
    return chosen;
  }

  /**
   * Raises the `dead-letter-depth` alert when the depth reached the subscription's alert depth and none is
   * open; resolves the open one when the depth fell below it.
   * @returns the depth
   */
  async checkAlert(sub: SubscriptionRecord): Promise<number> {
    const depth = await this.depth(sub);
    const subject = { groupId: sub.groupId, kind: 'dead-letter-depth' as const, topic: sub.topic, partition: 0 };
    if (depth >= sub.deadLetterAlertDepth) {
      const message = `group ${sub.groupId}'s dead letters of ${sub.topic} in ${sub.deadLetterTopic} reached ${depth} (alert at ${sub.deadLetterAlertDepth}): ` +
        `look at them with 'onelog dlq list ${sub.groupId} --topic ${sub.topic}', then redrive or purge them`;
      await this.alerts.raise({ ...subject, message, context: { deadLetterTopic: sub.deadLetterTopic, depth, deadLetterAlertDepth: sub.deadLetterAlertDepth } });
    } else {
      await this.alerts.resolve(subject);
    }
    return depth;
  }

  private async redrivenRanges(sub: SubscriptionRecord): Promise<Array<[number, number]>> {
    return (await this.catalog.deadLetterActions.list(sub.groupId, sub.topic))
      .filter((a) => a.action === 'redrive').map((a) => [a.firstOffset, a.endOffset]);
  }

  private log(sub: SubscriptionRecord): Partition | undefined {
    if (!sub.deadLetterTopic) return undefined;
    try {
      return this.logs.get(sub.deadLetterTopic, 0);
    } catch (err) {
      if ((err as OnelogError).code === 'UNKNOWN_TOPIC') return undefined;
      throw err;
    }
  }

  /** @throws OnelogError `NO_RETRY_POLICY` when the subscription never had a dead-letter topic */
  private requireLog(sub: SubscriptionRecord): Partition {
    const log = this.log(sub);
    if (log) return log;
    throw new OnelogError('NO_RETRY_POLICY', `group ${sub.groupId} has no dead-letter topic for ${sub.topic}: give it a retry policy ` +
      `(onelog groups alter ${sub.groupId} --topic ${sub.topic} --retry 1s,30s --max-attempts 3)`, { groupId: sub.groupId, topic: sub.topic });
  }

  /** Waiting (not redriven) dead letters with offsets in `[from, end)`, at most `limit`, oldest first. */
  private async waiting(log: Partition, redriven: Array<[number, number]>, from: number, end: number, limit: number): Promise<StoredRecord[]> {
    const out: StoredRecord[] = [];
    let offset = from;
    while (offset < end && out.length < limit) {
      const { records, nextOffset } = await log.fetch(offset, { maxRecords: 1000, maxBytes: 4 * 1024 * 1024 });
      for (const r of records) {
        if (r.offset >= end || out.length >= limit) break;
        if (!redriven.some(([a, b]) => r.offset >= a && r.offset < b)) out.push(r);
      }
      if (nextOffset <= offset) break;
      offset = nextOffset;
    }
    return out;
  }
}

/** A dead letter as listed. */
function describe(r: StoredRecord, log: Partition): DeadLetter {
  const info = deliveryInfo(r, log.topic, log.partition, true);
  const time = (key: string) => Number(headerText(r.headers, key) ?? r.timestamp);
  return {
    offset: r.offset, original: info.original, attempts: movedAttempt(r),
    reason: headerText(r.headers, RETRY_HEADERS.reason) ?? '',
    firstFailureAt: time(RETRY_HEADERS.firstAt), lastFailureAt: time(RETRY_HEADERS.lastAt),
    key: r.key?.toString('utf8') ?? null, valuePreview: r.value?.toString('utf8').slice(0, VALUE_PREVIEW_CHARS) ?? null,
  };
}

/** How many offsets of `[from, end)` the ranges cover (ranges never overlap: a dead letter is redriven once). */
function covered(ranges: ReadonlyArray<[number, number]>, from: number, end: number): number {
  let n = 0;
  for (const [a, b] of ranges) n += Math.max(0, Math.min(b, end) - Math.max(a, from));
  return n;
}

/** Sorted offsets as `[first, end)` runs of consecutive offsets. */
function ranges(offsets: readonly number[]): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  for (const o of offsets) {
    const last = out[out.length - 1];
    if (last && last[1] === o) last[1] = o + 1;
    else out.push([o, o + 1]);
  }
  return out;
}

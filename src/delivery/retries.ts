/**
 * Retry tiers on the broker (docs/retries.md): a nacked record is appended, durably and once, to the next
 * tier topic of its subscription (or, after `maxAttempts`, to the dead-letter topic) with headers naming its
 * original position, the group, the attempt its next delivery will be and the failure; only then does the nack
 * answer, so the member can commit past the record and its partition keeps flowing. A member's fetch of a tier
 * stops at the first record not yet due (its last failure + the tier's delay, by the broker's `Clock`), and
 * every fetch of the group skips records it already moved ({@link MovedRecords}).
 *
 * Tier topics have the subscribed topic's partition count (a record of partition p stays in partition p, so
 * the records of one original partition keep their order in every tier) and its retention; the dead-letter
 * topic has one partition and keeps its records until purged.
 */
import type { Catalog } from '../catalog/catalog.js';
import type { SubscriptionRecord } from '../catalog/subscriptions.js';
import type { Clock } from '../common/clock.js';
import { systemClock } from '../common/clock.js';
import type { CheckedNack } from '../coordinator/group-coordinator.js';
import type { RetryTopics } from '../coordinator/retry-topics.js';
import { deliveryBound } from '../coordinator/subscriptions.js';
import { checkInteger } from '../protocol/validate.js';
import type { OffsetStore } from '../offsets/offset-store.js';
import type { FetchedPartition } from '../protocol/fetch.js';
import type { NackBatchRequest, NackResult } from '../protocol/nacks.js';
import type { RetryPolicy, RetryPolicyInput } from '../protocol/retry-policy.js';
import type { CreateTopicRequest, TopicDescription } from '../protocol/topics.js';
import { OnelogError } from '../protocol/errors.js';
import { decodeRecordAt, encodeBatch, LOG_OVERHEAD, readBatchHeader } from '../protocol/record-batch.js';
import {
  checkRetryPolicy, defaultDeadLetterTopic, deliveryInfo, dueAt, movedHeaders, RETRY_HEADERS, tierDelayMs, tierTopicName,
} from '../protocol/retry-policy.js';
import { pickTopicConfig } from '../protocol/topic-config.js';
import type { RecordInput, StoredRecord } from '../protocol/types.js';
import { checkTopicName } from '../protocol/validate.js';
import type { Appended, Logs } from '../log/logs.js';
import type { Partition } from '../log/partition.js';
import type { BrokerPartition } from '../log/logs.js';
import { fetchPartitions } from './fetch.js';
import type { FetchLimits, FetchTarget } from './fetch.js';
import { MovedRecords } from './moved-records.js';
import type { MovedTo } from './moved-records.js';

/** What retries read and write. */
/** Creates a topic as the broker's createTopic does (the retry tier and dead-letter topics a policy needs). */
export type CreateTopic = (request: CreateTopicRequest) => Promise<TopicDescription>;

export interface RetriesDeps {
  logs: Logs;
  offsets: OffsetStore;
  catalog: Catalog;
  clock: Clock;
  retryTopics: RetryTopics;
  /** A group's subscription to a topic as stored (cached by the coordinator), or undefined. */
  findSubscription(groupId: string, topic: string): Promise<SubscriptionRecord | undefined>;
  /** Called after a record was dead-lettered (the depth alert is evaluated). */
  deadLettered(sub: SubscriptionRecord): Promise<void>;
  /** Told of each record the broker moved (to a tier or the dead letters, redriven), as of a client's produce. */
  appended: Appended;
}

/**
 * A nack's records: an array of 1 to 10,000 `{ offset, reason }`.
 * @throws OnelogError `INVALID_REQUEST`
 */
export function checkNackRecords(request: NackBatchRequest): void {
  if (!Array.isArray(request.records) || request.records.length === 0 || request.records.length > 10_000) {
    throw new OnelogError('INVALID_REQUEST', 'a nack needs 1 to 10,000 records { offset, reason }', {
      groupId: request.groupId, topic: request.topic, partition: request.partition,
    });
  }
  if (request.deliveries !== undefined) checkInteger(request.deliveries, 'deliveries', 1, 100);
}

/**
 * Moves of records this far below the group's committed offset stay in the index: a before-processing member
 * commits its batch before it nacks records of it (a batch holds far fewer records than this).
 */
const REMEMBERED_BELOW_COMMITTED = 10_000;

export class Retries {
  /** Per group, built on first use from its tier and dead-letter partitions. */
  private readonly indexes = new Map<string, Promise<MovedRecords>>();
  private readonly sources = new SourceReader();
  /** `groupId \0 topic/partition` of a tier -> the offset whose record is not due before `dueAt` (ms since the epoch). */
  private readonly notDue = new Map<string, { offset: number; dueAt: number }>();

  constructor(private readonly deps: RetriesDeps) {}

  /**
   * Checks a subscribe request's retry policy, fills in its defaults (`maxAttempts`: one more than the tiers;
   * the dead-letter topic `<topic>.<group>.dlq`) and creates the tier topics and the dead-letter topic that are
   * missing (with `createTopic`). Everything is checked before any topic is created.
   * @throws OnelogError `INVALID_REQUEST` for a bad policy, or an existing topic that cannot serve (wrong partition count)
   */
  async preparePolicy(groupId: string, topic: string, input: RetryPolicyInput | null | undefined, createTopic: CreateTopic): Promise<RetryPolicy | null | undefined> {
    if (input === undefined || input === null) return input;
    if (typeof input !== 'object') throw new OnelogError('INVALID_REQUEST', 'retry must be { delaysMs, maxAttempts?, deadLetterTopic? } or null');
    const delaysMs = input.delaysMs;
    const maxAttempts = input.maxAttempts ?? (Array.isArray(delaysMs) ? delaysMs.length + 1 : undefined);
    checkRetryPolicy({ delaysMs, maxAttempts });
    const deadLetterTopic = checkTopicName(input.deadLetterTopic ?? defaultDeadLetterTopic(topic, groupId));
    const { retentionMs } = pickTopicConfig((await this.deps.catalog.topics.get(topic))!);
    const longest = Math.max(...delaysMs);
    if (retentionMs > 0 && longest >= retentionMs) {
      throw new OnelogError('INVALID_REQUEST', `a retry delay of ${longest} ms is not shorter than ${topic}'s retention.ms (${retentionMs}): ` +
        'the tiers keep records as long as the topic does, so they would expire before their retry. Use shorter delays or a longer retention', {
        delaysMs, retentionMs,
      });
    }
    await this.prepareTopics(groupId, topic, delaysMs.map((_, i) => tierTopicName(topic, groupId, i + 1)), deadLetterTopic, createTopic);
    return { delaysMs: [...delaysMs], maxAttempts: maxAttempts!, deadLetterTopic };
  }

  /**
   * For a subscribe request's `maxDeliveries` without a retry policy: the subscription's dead-letter topic (the one it
   * has, else `<topic>.<group>.dlq`), created if missing. Undefined when the request sets no bound.
   * @throws OnelogError `INVALID_REQUEST` for an existing topic that cannot serve (as {@link preparePolicy})
   */
  async prepareMaxDeliveries(groupId: string, topic: string, maxDeliveries: number | null | undefined, createTopic: CreateTopic): Promise<string | undefined> {
    if (maxDeliveries === undefined || maxDeliveries === null) return undefined;
    const deadLetterTopic = (await this.deps.catalog.subscriptions.get(groupId, topic))?.deadLetterTopic ?? defaultDeadLetterTopic(topic, groupId);
    await this.prepareTopics(groupId, topic, [], deadLetterTopic, createTopic);
    return deadLetterTopic;
  }

  /**
   * Checks that the tier topics (`tiers`, the subscribed topic's partition count) and the dead-letter topic (one
   * partition, empty unless it is the subscription's already, no other subscription's) can serve, then creates those missing.
   * @throws OnelogError `INVALID_REQUEST` naming the topic that cannot
   */
  private async prepareTopics(groupId: string, topic: string, tiers: readonly string[], deadLetterTopic: string, createTopic: CreateTopic): Promise<void> {
    const { logs, catalog } = this.deps;
    const partitions = logs.partitionCount(topic);
    if (deadLetterTopic === topic || tiers.includes(deadLetterTopic) || this.deps.retryTopics.isTier(deadLetterTopic)) {
      throw new OnelogError('INVALID_REQUEST', `the dead-letter topic ${deadLetterTopic} cannot be the subscribed topic or a retry tier`, { deadLetterTopic });
    }
    const owner = (await catalog.subscriptions.listWithRetries()).find((s) => s.deadLetterTopic === deadLetterTopic && (s.groupId !== groupId || s.topic !== topic));
    if (owner) {
      throw new OnelogError('INVALID_REQUEST', `${deadLetterTopic} is already the dead-letter topic of group ${owner.groupId} for ${owner.topic}; ` +
        'each subscription needs its own', { deadLetterTopic });
    }
    const wanted = [...tiers.map((name) => ({ name, partitions })), { name: deadLetterTopic, partitions: 1 }];
    for (const { name, partitions: n } of wanted) {
      const existing = await catalog.topics.get(name);
      if (existing && existing.partitions !== n) {
        throw new OnelogError('INVALID_REQUEST', `topic ${name} exists with ${existing.partitions} partitions; as a ` +
          `${n === 1 && name === deadLetterTopic ? 'dead-letter topic it needs 1' : `retry tier of ${topic} it needs ${n}`}`, { topic: name });
      }
    }
    const current = await catalog.subscriptions.get(groupId, topic);
    if (current?.deadLetterTopic !== deadLetterTopic && (await catalog.topics.get(deadLetterTopic))) {
      const log = logs.get(deadLetterTopic, 0);
      if (log.highWatermark > log.logStartOffset) {
        throw new OnelogError('INVALID_REQUEST', `topic ${deadLetterTopic} already holds ${log.highWatermark - log.logStartOffset} records: ` +
          'a dead-letter topic holds only its subscription\'s dead letters; name a new or empty topic', { deadLetterTopic });
      }
    }
    const base = pickTopicConfig((await catalog.topics.get(topic))!);
    for (const { name, partitions: n } of wanted) {
      if (await catalog.topics.get(name)) continue;
      // Moves are synced by the nack itself; a dead letter waits for a person, so it never expires.
      const retention = name === deadLetterTopic ? { retentionMs: -1, retentionBytes: -1 } : {};
      await createTopic({
        topic: name, partitions: n,
        config: { ...base, cleanupPolicy: 'delete', compressionType: 'producer', flushPolicy: 'always', ...retention },
      }).catch((err: unknown) => {
        if ((err as OnelogError).code !== 'TOPIC_ALREADY_EXISTS') throw err; // created meanwhile by a concurrent request
      });
    }
  }

  /**
   * Moves nacked records of one partition to the next tier or the dead-letter topic, each once (a repeated nack
   * answers the first move, `duplicate: true`), in the order given: their appends share fdatasyncs, and each
   * resolves once on disk. Every record is checked before any is moved (the array's size by {@link checkNackRecords}, first).
   * @param checked what {@link GroupCoordinator.checkNack} answered (the nack is fenced already)
   * @returns where each went, in request order
   * @throws OnelogError `INVALID_OFFSET`, `OFFSET_OUT_OF_RANGE` (at or above the high watermark, or below the
   *   log start), `INVALID_REQUEST` (reason), as an append does (`RESOURCE_EXHAUSTED`, `STORAGE_ERROR`)
   */
  async nack(request: NackBatchRequest, checked: CheckedNack): Promise<NackResult[]> {
    const { groupId, topic, partition } = request;
    const log = this.deps.logs.get(topic, partition);
    for (const { offset, reason } of request.records) {
      if (typeof reason !== 'string') throw new OnelogError('INVALID_REQUEST', 'reason must be a string (why the record could not be processed)');
      if (!Number.isSafeInteger(offset) || offset < 0) {
        throw new OnelogError('INVALID_OFFSET', `offset must be an integer >= 0, got ${JSON.stringify(offset)}`, { groupId, topic, partition, offset });
      }
      if (offset >= log.highWatermark || offset < log.logStartOffset) {
        const holds = log.highWatermark > log.logStartOffset ? `holds offsets ${log.logStartOffset} to ${log.highWatermark - 1}` : `holds no record (next offset ${log.highWatermark})`;
        throw new OnelogError('OFFSET_OUT_OF_RANGE', `cannot nack offset ${offset} of ${topic}/${partition}: the partition ${holds}`, {
          groupId, topic, partition, offset, logStartOffset: log.logStartOffset, highWatermark: log.highWatermark,
        });
      }
    }
    const index = await this.index(groupId);
    await this.recall(index, request, checked.subscription);
    // Started in order with no await in between, so the appends keep the order of the request.
    const moves = request.records.map(({ offset, reason }) => index.once({ topic, partition, offset }, () => this.move(log, offset, reason, request, checked, 'nack')));
    const moved = await Promise.all(moves);
    if (moved.some(({ to, duplicate }) => to.deadLettered && !duplicate)) await this.deps.deadLettered(checked.subscription);
    return moved.map(({ to, duplicate }) => ({ ...to, duplicate }));
  }

  /**
   * The index forgets moves of records the group committed well past ({@link REMEMBERED_BELOW_COMMITTED}); a
   * nack of such a record (a member nacking late) looks for an earlier move of it in the tier and dead-letter
   * partitions, so it is still moved once.
   */
  private async recall(index: MovedRecords, request: NackBatchRequest, sub: SubscriptionRecord): Promise<void> {
    const { groupId, topic, partition } = request;
    const remembered = ((await this.deps.offsets.get(groupId, topic, partition))?.offset ?? 0) - REMEMBERED_BELOW_COMMITTED;
    const wanted = new Set(request.records.map((r) => r.offset).filter((o) => o < remembered && !index.get(topic, partition, o)));
    if (wanted.size === 0) return;
    const { logs, retryTopics } = this.deps;
    const targets = retryTopics.tiersOf(groupId, sub.topic).map((t) => ({ log: logs.get(t, partition % logs.partitionCount(t)), dead: false }));
    if (sub.deadLetterTopic && (await this.deps.catalog.topics.get(sub.deadLetterTopic))) targets.push({ log: logs.get(sub.deadLetterTopic, 0), dead: true });
    for (const { log, dead } of targets) await index.scan(log, dead, (t, p, o) => t === topic && p === partition && wanted.has(o));
  }

  /**
   * Dead-letters the record at `offset` of a group's partition (the subscribed topic or a tier) if its deliveries are
   * spent: its attempts through the retry path before this delivery, and `crashes` deliveries that ended with their
   * member ending (coordinator/delivery-counts.ts), reach the subscription's `maxAttempts` (without a retry policy,
   * its `maxDeliveries`). Moved once, as a nack is; resolves once it is on disk.
   * @returns whether it was dead-lettered: false without a bound, or with deliveries left
   */
  async deadLetterIfSpent(groupId: string, topic: string, partition: number, offset: number, crashes: number): Promise<boolean> {
    const tier = this.deps.retryTopics.tierOf(groupId, topic);
    const subscription = await this.deps.findSubscription(groupId, tier?.topic ?? topic);
    const policy = deliveryBound(subscription); // a crash never goes to a tier: only the bound and the dead letters matter
    if (!subscription || !policy) return false;
    const log = this.deps.logs.get(topic, partition);
    if (offset < log.logStartOffset || offset >= log.highWatermark) return false;
    const record = await this.sources.read(log, offset);
    if (deliveryInfo(record, topic, partition, tier !== undefined).attempt - 1 + crashes < policy.maxAttempts) return false;
    const reason = `the consumer ended while processing it, ${crashes} time${crashes === 1 ? '' : 's'} (its session timed out or it was killed)`;
    return (await this.moveOnce(log, offset, reason, { subscription, policy, tier, crashes: () => crashes }, groupId)).deadLettered;
  }

  /**
   * Moves a share group's record to the subscription's dead letters, once (a repeat after a crash finds it moved):
   * it was rejected, or its deliveries reached maxDeliveries. Resolves once it is on disk.
   * @param deliveries its deliveries so far (the attempts the dead letter records)
   * @throws OnelogError `NO_RETRY_POLICY` when the subscription has no dead-letter topic
   */
  async deadLetterShared(sub: SubscriptionRecord, partition: number, offset: number, deliveries: number, reason: string): Promise<void> {
    const policy = deliveryBound(sub);
    if (!policy) throw new OnelogError('NO_RETRY_POLICY', `group ${sub.groupId} has no dead-letter topic for ${sub.topic}`, { groupId: sub.groupId, topic: sub.topic });
    const log = this.deps.logs.get(sub.topic, partition);
    // Dead-lettered whatever the limit says: the share-partition decided.
    await this.moveOnce(log, offset, reason, { subscription: sub, policy: { ...policy, maxAttempts: 1 }, tier: undefined, crashes: () => deliveries }, sub.groupId);
  }

  /** {@link move} of one record of `log` after a crash (its last delivery among `crashes`), once per group and record. */
  private async moveOnce(log: Partition, offset: number, reason: string, checked: CheckedNack, groupId: string): Promise<MovedTo> {
    const index = await this.index(groupId);
    const source = { topic: log.topic, partition: log.partition, offset };
    const { to, duplicate } = await index.once(source, () => this.move(log, offset, reason, { groupId, ...source }, checked, 'crash'));
    if (to.deadLettered && !duplicate) await this.deps.deadLettered(checked.subscription);
    return to;
  }

  /**
   * Appends one record to its next tier or the dead-letter topic; resolves once it is on disk. Its deliveries are
   * its attempt through the retry path plus those that ended with their member ending; a nack's failure is one
   * more than those, a crash's is the last of them.
   */
  private async move(log: Partition, offset: number, reason: string, request: { groupId: string; topic: string; partition: number; deliveries?: number },
    { subscription, policy, tier, crashes }: CheckedNack, failure: 'nack' | 'crash'): Promise<MovedTo> {
    const { groupId, topic, partition } = request;
    const source = { topic, partition, offset };
    const record = await this.sources.read(log, offset);
    const info = deliveryInfo(record, topic, partition, tier !== undefined);
    const deliveries = info.attempt + crashes(offset) - (failure === 'crash' ? 1 : 0) + (failure === 'nack' ? (request.deliveries ?? 1) - 1 : 0);
    // Without retry tiers (only maxDeliveries) a nacked record has nowhere to wait for another delivery: dead-lettered.
    const deadLettered = deliveries >= policy.maxAttempts || policy.delaysMs.length === 0;
    const attempt = deadLettered ? deliveries : deliveries + 1;
    const target = deadLettered
      ? this.deps.logs.get(policy.deadLetterTopic, 0)
      : this.tierLog(subscription.topic, groupId, Math.min(deliveries, policy.delaysMs.length), info.original.partition);
    const now = this.deps.clock.now();
    const headers = movedHeaders(record, tier !== undefined, { groupId, attempt, reason, now, source });
    const stored = await this.appendDurably(target, { key: record.key, value: record.value, headers, timestamp: now });
    return { topic: target.topic, partition: target.partition, offset: stored, attempt, deadLettered };
  }

  /**
   * Appends a record moved from `source` (a dead letter redriven) to tier 1 of the subscription, once.
   * @returns where it went, and whether it had been moved before
   */
  async redrive(sub: SubscriptionRecord, source: { topic: string; partition: number; offset: number }, record: StoredRecord): Promise<{ to: MovedTo; duplicate: boolean }> {
    const index = await this.index(sub.groupId);
    return index.once(source, async () => {
      const info = deliveryInfo(record, source.topic, source.partition, true);
      const target = this.tierLog(sub.topic, sub.groupId, 1, info.original.partition);
      const now = this.deps.clock.now();
      const text = (key: string, value: string | number) => ({ key, value: Buffer.from(String(value), 'utf8') });
      const headers = [
        ...record.headers.filter((h) => h.key !== RETRY_HEADERS.attempt && h.key !== RETRY_HEADERS.source && h.key !== RETRY_HEADERS.redrivenAt),
        text(RETRY_HEADERS.attempt, 1), text(RETRY_HEADERS.source, `${source.topic}/${source.partition}/${source.offset}`), text(RETRY_HEADERS.redrivenAt, now),
      ];
      const stored = await this.appendDurably(target, { key: record.key, value: record.value, headers, timestamp: now });
      return { topic: target.topic, partition: target.partition, offset: stored, attempt: 1, deadLettered: false };
    });
  }

  /** The partition of tier `tier` that records of original partition `partition` go to. */
  private tierLog(topic: string, groupId: string, tier: number, partition: number): BrokerPartition {
    const name = tierTopicName(topic, groupId, tier);
    return this.deps.logs.get(name, partition % this.deps.logs.partitionCount(name));
  }

  /** Appends one record and waits until it is on disk, whatever the topic's flush policy. */
  private async appendDurably(log: BrokerPartition, record: RecordInput): Promise<number> {
    const batch = encodeBatch([record], 0, this.deps.clock.now());
    const [stored] = await this.deps.logs.appendAll([{ log, batch }]);
    this.deps.appended(log.topic, 1, batch.length);
    await log.flush(stored!.lastOffset + 1); // at once when the topic's flush policy synced it already
    return stored!.baseOffset;
  }

  /** Whether a fetch of `topic` by `groupId` needs {@link fetch}: the topic is a tier of the group, or has tiers (records may have moved). */
  filters(groupId: string, topic: string): boolean {
    const { retryTopics } = this.deps;
    return retryTopics.tierOf(groupId, topic) !== undefined || retryTopics.tiersOf(groupId, topic).length > 0;
  }

  /**
   * A member's fetch of a topic that {@link filters} says needs it: as {@link fetchPartitions}, but without the
   * records the group moved already, and, for a tier, stopping at the first record not yet due. When nothing
   * can be delivered it waits (up to `maxWaitMs`) for new records or the next due time, by the clock.
   */
  async fetch(groupId: string, topic: string, targets: readonly FetchTarget[], limits: FetchLimits): Promise<FetchedPartition[]> {
    const index = await this.index(groupId);
    const tier = this.deps.retryTopics.tierOf(groupId, topic);
    const delayMs = tier ? tierDelayMs((await this.deps.findSubscription(groupId, tier.topic))?.retry ?? null, tier.tier) : null;
    const key = (t: FetchTarget) => `${groupId}\0${topic}/${t.log.partition}`;
    const started = Date.now();
    for (;;) {
      const remaining = Math.max(0, limits.maxWaitMs - (Date.now() - started));
      // A tier partition whose next record is known not to be due yet is not read again until it is.
      const before = this.deps.clock.now();
      const waiting = new Map(targets.flatMap((t) => {
        const w = this.notDue.get(key(t));
        return w !== undefined && w.offset === t.offset && w.dueAt > before ? [[t, w] as const] : [];
      }));
      const reads = targets.filter((t) => !waiting.has(t));
      // Read without waiting: the wait is below, for new records and for the next due time alike (a read that
      // long-polled too waited twice: a fetch of an empty tier took 2 x maxWaitMs).
      const read = reads.length > 0 ? await fetchPartitions(reads, { ...limits, maxWaitMs: 0 }) : [];
      const now = this.deps.clock.now();
      let nextDue = Infinity;
      const parts = targets.map((t): FetchedPartition => {
        const w = waiting.get(t);
        if (w) {
          nextDue = Math.min(nextDue, w.dueAt);
          return { partition: t.log.partition, logStartOffset: t.log.logStartOffset, highWatermark: t.log.highWatermark, records: [], nextOffset: t.offset };
        }
        return read[reads.indexOf(t)]!;
      });
      parts.forEach((p, i) => {
        const moved = index.movedOf(topic, p.partition);
        if (!moved && delayMs === null) return;
        const kept: StoredRecord[] = [];
        for (const r of p.records) {
          if (moved?.has(r.offset)) continue;
          const due = delayMs === null ? now : dueAt(r, delayMs);
          if (due > now) {
            nextDue = Math.min(nextDue, due);
            p.nextOffset = r.offset;
            this.notDue.set(key(targets[i]!), { offset: r.offset, dueAt: due });
            break;
          }
          kept.push(r);
        }
        p.records = kept;
      });
      const progressed = parts.some((p, i) => p.records.length > 0 || p.error || p.nextOffset !== targets[i]!.offset);
      if (progressed || remaining <= 0) return parts;
      const stop = new AbortController();
      await Promise.race([
        nextDue === Infinity ? new Promise<void>(() => {}) : this.deps.clock.sleep(nextDue - now, stop.signal),
        systemClock.sleep(remaining, stop.signal),
        ...targets.filter((t) => t.offset === t.log.highWatermark).map((t) => t.log.waitForData(t.offset, remaining)),
      ]);
      stop.abort();
    }
  }

  /** The group committed offsets of `topic`: moves of records well below them need not be remembered. */
  committed(groupId: string, topic: string, offsets: ReadonlyArray<{ partition: number; offset: number }>): void {
    void this.indexes.get(groupId)?.then((index) => {
      for (const o of offsets) index.forgetBelow(topic, o.partition, o.offset - REMEMBERED_BELOW_COMMITTED);
    }, () => {});
  }

  /** An executed reset of `topic`: the group reads it again, records moved before included. */
  forget(groupId: string, topic: string): void {
    void this.indexes.get(groupId)?.then((index) => index.forgetTopic(topic), () => {});
  }

  /** Forgets a group's index (the group was deleted). */
  deleteGroup(groupId: string): void {
    this.indexes.delete(groupId);
    for (const key of [...this.notDue.keys()]) if (key.startsWith(`${groupId}\0`)) this.notDue.delete(key);
  }

  /** The group's index of moved records, built on first use from its tier and dead-letter partitions. */
  private index(groupId: string): Promise<MovedRecords> {
    let index = this.indexes.get(groupId);
    if (!index) {
      index = this.build(groupId);
      this.indexes.set(groupId, index);
      index.catch(() => this.indexes.delete(groupId)); // built again on the next use
    }
    return index;
  }

  private async build(groupId: string): Promise<MovedRecords> {
    const { catalog, offsets, logs, retryTopics } = this.deps;
    const index = new MovedRecords();
    const committed = new Map((await offsets.list(groupId)).map((o) => [`${o.topic}/${o.partition}`, o.offset]));
    // A source committed well past is not delivered again, and a nack of it finds its move by a scan (recall).
    const counts = (topic: string, partition: number, offset: number) =>
      offset >= (committed.get(`${topic}/${partition}`) ?? 0) - REMEMBERED_BELOW_COMMITTED;
    for (const sub of await catalog.subscriptions.list(groupId)) {
      const targets = [...retryTopics.tiersOf(groupId, sub.topic).map((t) => ({ topic: t, dead: false }))];
      if (sub.deadLetterTopic && (await catalog.topics.get(sub.deadLetterTopic))) targets.push({ topic: sub.deadLetterTopic, dead: true });
      for (const { topic, dead } of targets) {
        for (const log of logs.partitions(topic)) await index.scan(log, dead, counts);
      }
    }
    return index;
  }
}

/** Source batches kept for nacks (each at most a batch, about 1 MiB): records failing near each other share a read. */
const SOURCE_BATCHES_KEPT = 16;

/**
 * Reads nacked records. A member nacks the records of a batch it just fetched, often several of one stored
 * batch: the last batches read are kept (least recently used first out), so those records cost one read.
 */
class SourceReader {
  private readonly batches = new Map<string, { log: Partition; baseOffset: number; lastOffset: number; buf: Buffer }>();

  /**
   * The record at `offset` of `log`.
   * @throws OnelogError `INVALID_OFFSET` when no record has that offset (compaction removed it)
   */
  async read(log: Partition, offset: number): Promise<StoredRecord> {
    const key = `${log.topic}/${log.partition}`;
    let kept = this.batches.get(key);
    if (!kept || kept.log !== log || offset < kept.baseOffset || offset > kept.lastOffset) {
      // The stored batch holding `offset` (whole), of which only that record is decoded.
      const { batches } = await log.readBatches(offset, 1, 1);
      const h = batches.length > 0 ? readBatchHeader(batches) : undefined;
      kept = h && { log, baseOffset: h.baseOffset, lastOffset: h.baseOffset + h.lastOffsetDelta, buf: batches.subarray(0, LOG_OVERHEAD + h.batchLength) };
    }
    this.batches.delete(key);
    if (kept) {
      this.batches.set(key, kept);
      if (this.batches.size > SOURCE_BATCHES_KEPT) this.batches.delete(this.batches.keys().next().value!);
    }
    const record = kept && offset >= kept.baseOffset ? decodeRecordAt(kept.buf, 0, offset) : undefined;
    if (!record) {
      throw new OnelogError('INVALID_OFFSET', `${log.topic}/${log.partition} has no record at offset ${offset} (compaction removed it)`, {
        topic: log.topic, partition: log.partition, offset,
      });
    }
    return record;
  }
}

/**
 * A filtered partition's records as one RecordBatch v2 (their offsets, gaps included, and timestamps kept), for
 * the binary data path; empty when no record is left.
 */
export function recordsAsBatches(records: readonly StoredRecord[]): Buffer {
  if (records.length === 0) return Buffer.alloc(0);
  const base = records[0]!.offset;
  const offsetDeltas = records.map((r) => r.offset - base);
  return encodeBatch(records, base, 0, undefined, { layout: { offsetDeltas, lastOffsetDelta: offsetDeltas[offsetDeltas.length - 1]! } });
}

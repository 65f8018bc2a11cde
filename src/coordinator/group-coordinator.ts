/**
 * Consumer groups' positions: subscriptions (catalog), committed offsets (offset store) and where a group
 * resumes in each partition's log. Resolves start policies, refuses positions outside the log (never a
 * silent jump), validates commits, plans and applies offset resets, and describes lag.
 */
import type { Clock } from '../clock.js';
import type { Catalog } from '../catalog/catalog.js';
import type {
  CommitRequest, GroupDescription, GroupSummary, ResetOffsetsRequest, ResetOffsetsResult, ResetSpec,
  SubscribeRequest, SubscribeResult, SubscriptionInfo,
} from '../protocol/api.js';
import { OnelogError } from '../protocol/errors.js';
import type { StartPolicy } from '../protocol/types.js';
import type { CommittedOffset, OffsetStore } from '../offsets/offset-store.js';
import type { LogManager } from '../storage/log-manager.js';
import type { PartitionLog } from '../storage/partition-log.js';
import { offsetOutOfRange } from './out-of-range.js';

const DEFAULT_START_POLICY: StartPolicy = 'latest';

export class GroupCoordinator {
  /** `groupId \0 topic` of subscriptions known to exist, so commits skip the catalog. */
  private readonly knownSubscriptions = new Set<string>();

  constructor(
    private readonly catalog: Catalog,
    private readonly offsets: OffsetStore,
    private readonly logs: LogManager,
    private readonly clock: Clock,
  ) {}

  /**
   * Creates or updates the group's subscription and returns where each partition resumes: the committed
   * offset, or for a partition never committed, the start policy. A `latest` start is committed at once,
   * so the group's starting point is fixed when it subscribes (as a Pub/Sub subscription's is).
   * @throws OnelogError `OFFSET_OUT_OF_RANGE` if a committed offset lies outside the log: nothing is
   *   delivered and no offset moves until a reset is executed
   */
  async subscribe(request: SubscribeRequest): Promise<SubscribeResult> {
    const { groupId, topic } = request;
    const logs = this.logs.partitions(topic);
    const existing = await this.catalog.getSubscription(groupId, topic);
    const wanted = {
      startPolicy: request.startPolicy ?? existing?.startPolicy ?? DEFAULT_START_POLICY,
      deliveryMode: request.deliveryMode ?? existing?.deliveryMode ?? 'pull',
    };
    const subscription =
      existing && existing.startPolicy === wanted.startPolicy && existing.deliveryMode === wanted.deliveryMode
        ? existing
        : await this.catalog.upsertSubscription({ groupId, topic, ...wanted, createdAt: this.clock.now() });
    this.knownSubscriptions.add(`${groupId}\0${topic}`);

    const committed = await this.committedByPartition(groupId, topic);
    const positions: SubscribeResult['positions'] = [];
    const fresh: Array<{ topic: string; partition: number; offset: number }> = [];
    for (const log of logs) {
      const c = committed.get(log.partition);
      if (c !== undefined) {
        if (c.offset < log.logStartOffset || c.offset > log.highWatermark) {
          throw offsetOutOfRange({
            groupId, topic, partition: log.partition, committedOffset: c.offset,
            logStartOffset: log.logStartOffset, highWatermark: log.highWatermark,
          });
        }
        positions.push({ partition: log.partition, offset: c.offset });
      } else if (subscription.startPolicy === 'latest') {
        positions.push({ partition: log.partition, offset: log.highWatermark });
        fresh.push({ topic, partition: log.partition, offset: log.highWatermark });
      } else {
        positions.push({ partition: log.partition, offset: log.logStartOffset });
      }
    }
    if (fresh.length > 0) await this.offsets.commit(groupId, fresh, this.clock.now());
    return { subscription: info(subscription), positions };
  }

  /**
   * Commits offsets (each the NEXT offset to read) in one durable write.
   * @throws OnelogError `INVALID_OFFSET` for a negative offset, `OFFSET_OUT_OF_RANGE` above the high watermark,
   *   `UNKNOWN_TOPIC` / `UNKNOWN_PARTITION`; nothing is committed if any entry is refused
   */
  async commit(request: CommitRequest): Promise<void> {
    const { groupId, topic } = request;
    for (const o of request.offsets) {
      const log = this.logs.get(topic, o.partition);
      if (!Number.isSafeInteger(o.offset) || o.offset < 0) {
        throw new OnelogError('INVALID_OFFSET', `offset must be an integer >= 0, got ${JSON.stringify(o.offset)}`, {
          groupId, topic, partition: o.partition, offset: o.offset,
        });
      }
      if (o.offset > log.highWatermark) {
        throw new OnelogError(
          'OFFSET_OUT_OF_RANGE',
          `cannot commit offset ${o.offset} for ${topic}/${o.partition}: it is above the high watermark ${log.highWatermark}`,
          { groupId, topic, partition: o.partition, offset: o.offset, highWatermark: log.highWatermark },
        );
      }
    }
    await this.ensureSubscription(groupId, topic);
    await this.offsets.commit(groupId, request.offsets.map((o) => ({ topic, ...o })), this.clock.now());
  }

  private async ensureSubscription(groupId: string, topic: string): Promise<void> {
    const key = `${groupId}\0${topic}`;
    if (this.knownSubscriptions.has(key)) return;
    if (!(await this.catalog.getSubscription(groupId, topic))) {
      await this.catalog.upsertSubscription({
        groupId, topic, startPolicy: DEFAULT_START_POLICY, deliveryMode: 'pull', createdAt: this.clock.now(),
      });
    }
    this.knownSubscriptions.add(key);
  }

  /** Every group with the topics it subscribes to. */
  async listGroups(): Promise<GroupSummary[]> {
    const groups = await this.catalog.listGroups();
    return Promise.all(
      groups.map(async (g) => ({
        groupId: g.groupId,
        createdAt: g.createdAt,
        topics: (await this.catalog.listSubscriptions(g.groupId)).map((s) => s.topic),
      })),
    );
  }

  /**
   * Per subscribed topic and partition: committed offset, log start offset, high watermark and lag.
   * @throws OnelogError `UNKNOWN_GROUP`
   */
  async describeGroup(groupId: string): Promise<GroupDescription> {
    const group = await this.catalog.getGroup(groupId);
    if (!group) throw new OnelogError('UNKNOWN_GROUP', `group ${groupId} does not exist`, { groupId });
    const committed = await this.offsets.list(groupId);
    const subscriptions = (await this.catalog.listSubscriptions(groupId)).map((s) => ({
      ...info(s),
      partitions: this.logs.partitions(s.topic).map((log) => {
        const c = committed.find((o) => o.topic === s.topic && o.partition === log.partition);
        return {
          partition: log.partition,
          committedOffset: c?.offset ?? null,
          logStartOffset: log.logStartOffset,
          highWatermark: log.highWatermark,
          lag: c === undefined ? null : log.highWatermark - c.offset,
          commitTimestamp: c?.commitTimestamp ?? null,
        };
      }),
    }));
    return { groupId, createdAt: group.createdAt, subscriptions };
  }

  /**
   * Plans an offset reset and, with `execute`, applies it (Kafka's `kafka-consumer-groups --reset-offsets`).
   * Targets outside `[logStartOffset, highWatermark]` are clamped to it and marked. Executing creates the
   * group's subscription if it has none.
   * @throws OnelogError `UNKNOWN_TOPIC`, `UNKNOWN_PARTITION`, `INVALID_REQUEST`
   */
  async resetOffsets(request: ResetOffsetsRequest): Promise<ResetOffsetsResult> {
    const { groupId, topic } = request;
    const logs = request.partition === undefined ? this.logs.partitions(topic) : [this.logs.get(topic, request.partition)];
    const committed = await this.committedByPartition(groupId, topic);
    const partitions = logs.map((log): ResetOffsetsResult['partitions'][number] => {
      const currentOffset = committed.get(log.partition)?.offset ?? null;
      const target = resetTarget(request.spec, log, currentOffset);
      const newOffset = Math.min(Math.max(target, log.logStartOffset), log.highWatermark);
      const row = { partition: log.partition, currentOffset, newOffset };
      if (target < log.logStartOffset) return { ...row, clamped: 'logStartOffset' };
      if (target > log.highWatermark) return { ...row, clamped: 'highWatermark' };
      return row;
    });
    const execute = request.execute === true;
    if (execute) {
      await this.ensureSubscription(groupId, topic);
      await this.offsets.commit(groupId, partitions.map((p) => ({ topic, partition: p.partition, offset: p.newOffset })), this.clock.now());
    }
    return { groupId, topic, executed: execute, partitions };
  }

  private async committedByPartition(groupId: string, topic: string): Promise<Map<number, CommittedOffset>> {
    const all = await this.offsets.list(groupId);
    return new Map(all.filter((o) => o.topic === topic).map((o) => [o.partition, o]));
  }
}

/** The unclamped offset a reset spec points at in one partition. */
function resetTarget(spec: ResetSpec, log: PartitionLog, currentOffset: number | null): number {
  switch (spec.to) {
    case 'earliest':
      return log.logStartOffset;
    case 'latest':
      return log.highWatermark;
    case 'offset':
      return spec.offset;
    case 'datetime':
      return log.offsetForTimestamp(spec.timestamp);
    case 'shift':
      // Without a committed offset, shift from where the group would start: the log start.
      return (currentOffset ?? log.logStartOffset) + spec.shiftBy;
  }
}

function info(s: SubscriptionInfo): SubscriptionInfo {
  return { groupId: s.groupId, topic: s.topic, deliveryMode: s.deliveryMode, startPolicy: s.startPolicy };
}

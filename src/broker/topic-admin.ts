/**
 * Topics for the broker: creation (all or nothing), settings, listing, descriptions (with every subscribed
 * group's health, on request), and the operations that move a log start offset (delete-records, retention on
 * demand) or compact on demand. Moving a log start re-evaluates the alerts of the groups reading the topic
 * before it answers, so a group that lost records is alerted at once.
 */
import { isCompacted } from '../protocol/types.js';
import type { Catalog } from '../catalog/catalog.js';
import type { SubscriptionRecord } from '../catalog/subscriptions.js';
import type { Clock } from '../common/clock.js';
import type { GroupCoordinator } from '../coordinator/group-coordinator.js';
import type { Logger } from '../common/logger.js';
import type { Monitor } from '../monitoring/monitor.js';
import type {
  AlterTopicRequest, CompactionResult, CompactTopicRequest, CreateTopicRequest, DeleteRecordsRequest, DeleteRecordsResult, DeleteTopicResult,
  DescribeTopicOptions, RetentionResult, TopicDescription, TopicSummary,
} from '../protocol/topics.js';
import { OnelogError } from '../protocol/errors.js';
import { pickTopicConfig, resolveTopicConfig } from '../protocol/topic-config.js';
import { checkInteger, checkTopicName, MAX_PARTITIONS, unknownTopic } from '../protocol/validate.js';
import type { OffsetStore } from '../offsets/offset-store.js';
import type { Logs } from '../log/logs.js';

/** The `beforeOffset` of a delete-records that stands for the high watermark (Kafka's DeleteRecords, -1). */
const HIGH_WATERMARK = -1;

export class TopicAdmin {
  /** Topics being created now: a second creation of the same name is refused before it touches any file. */
  private readonly creating = new Set<string>();
  /** Topics being deleted now: refused for creation (their files may still be there) and for a second deletion. */
  private readonly deleting = new Set<string>();

  constructor(
    private readonly catalog: Catalog,
    private readonly logs: Logs,
    private readonly offsets: OffsetStore,
    private readonly groups: GroupCoordinator,
    private readonly monitor: Monitor,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  /**
   * Compacts every partition of a topic now, sealing each active segment first so everything appended so
   * far is eligible (background compaction leaves active segments alone).
   * @param request `wait: false` starts the pass and answers at once (`completed: false`)
   * @throws OnelogError `UNKNOWN_TOPIC`, `INVALID_CONFIG` if the topic's cleanup policy lacks `compact`
   */
  async compact(request: CompactTopicRequest): Promise<CompactionResult> {
    const { topic } = request;
    const { cleanupPolicy } = this.logs.config(topic);
    if (!isCompacted(cleanupPolicy)) {
      throw new OnelogError('INVALID_CONFIG', `topic ${topic} has cleanup.policy=${cleanupPolicy}; ` +
        `compaction needs compact or compact,delete (onelog topics alter ${topic} --config cleanup.policy=compact)`, { topic });
    }
    const logs = this.logs.partitions(topic);
    const passes = logs.map((log) => log.compact(true));
    if (request.wait === false) {
      void Promise.all(passes).catch((err: unknown) => this.logger.warn({ topic, err: (err as Error).message }, 'compaction failed'));
      return { topic, completed: false, partitions: [] };
    }
    const stats = await Promise.all(passes);
    return { topic, completed: true, partitions: stats.map((s, i) => ({ partition: logs[i]!.partition, ...s! })) };
  }

  /**
   * Applies the topic's retention now (also run every `retentionCheckIntervalMs`): on each partition, the
   * log start offset moves past every expired record and fully expired segments are deleted.
   * @throws OnelogError `UNKNOWN_TOPIC`
   */
  async enforceRetention(topic: string): Promise<RetentionResult> {
    const partitions = await Promise.all(this.logs.partitions(topic).map(async (log) => {
      const unchanged = { previousLogStartOffset: log.logStartOffset, logStartOffset: log.logStartOffset, reason: null };
      return { partition: log.partition, ...((await log.enforceRetention()) ?? unchanged) };
    }));
    // Groups that lost records are alerted before this answers, not when they next fetch.
    if (partitions.some((p) => p.reason !== null)) await this.monitor.evaluate({ topic });
    return { topic, partitions };
  }

  /**
   * Creates a topic and its partitions, all or nothing: every partition's directory, then the catalog row; a
   * failure of either removes what was made, so the topic does not exist and the same request can be retried.
   * @throws OnelogError `INVALID_TOPIC`, `INVALID_PARTITIONS`, `INVALID_CONFIG`, `TOPIC_ALREADY_EXISTS`,
   *   `RESOURCE_EXHAUSTED` (disk), `STORAGE_ERROR`
   */
  async create(request: CreateTopicRequest): Promise<TopicDescription> {
    const topic = checkTopicName(request.topic);
    const partitions = checkInteger(request.partitions, 'partitions', 1, MAX_PARTITIONS, 'INVALID_PARTITIONS');
    const config = resolveTopicConfig(request.config ?? {});
    const existing = await this.catalog.topics.get(topic);
    if (existing || this.creating.has(topic)) { // checked and marked with no await between
      throw new OnelogError('TOPIC_ALREADY_EXISTS', `topic ${topic} already exists`, { topic, partitions: existing?.partitions });
    }
    if (this.deleting.has(topic)) {
      throw new OnelogError('TOPIC_ALREADY_EXISTS', `topic ${topic} is being deleted; create it again once the deletion is done`, { topic });
    }
    this.creating.add(topic);
    try {
      this.logs.createTopicLogs(topic, partitions);
      try {
        await this.catalog.topics.create({ name: topic, partitions, ...config, createdAt: this.clock.now() });
      } catch (err) {
        this.logs.deleteTopicLogs(topic, partitions);
        throw err;
      }
      this.logs.addTopic(topic, partitions, config, true);
    } finally {
      this.creating.delete(topic);
    }
    return this.describe(topic);
  }

  /**
   * Deletes a topic, as Kafka's DeleteTopics: its records, every group's committed offsets of it and
   * subscription to it, its partitions' pauses and their offsets in checkpoints; groups consuming it rebalance
   * without it; its open alerts resolve. The same name can then be created again, empty, with no committed
   * offsets. All or nothing across a crash: the logs close (nothing on disk changes), then one catalog transaction
   * deletes the topic and records the deletion as pending (the point of no return), then the committed offsets and
   * the partition directories go and the pending deletion is marked done; a crash after the catalog transaction
   * leaves the rest to the next start ({@link finishTopicDeletions}), a crash before it leaves the topic whole.
   * @returns the topic's partition count and the subscriptions deleted with it (their webhooks must stop)
   * @throws OnelogError `UNKNOWN_TOPIC`; `TOPIC_IN_USE` if it is a retry tier or dead-letter topic of a
   *   subscription, or a subscription to it has a retry policy (delete that group first); `INVALID_TOPIC`;
   *   `STORAGE_ERROR` (what is pending is finished at the next start)
   */
  async delete(topic: string): Promise<DeleteTopicResult & { subscriptions: SubscriptionRecord[] }> {
    checkTopicName(topic);
    const t = await this.catalog.topics.get(topic);
    if (!t || this.deleting.has(topic)) throw unknownTopic(topic);
    await this.checkUnused(topic);
    const subscriptions = await this.catalog.subscriptions.listByTopic(topic);
    this.deleting.add(topic); // checked and marked with no await between
    await this.logs.retireTopic(topic);
    try {
      await this.catalog.topics.delete(topic, t.partitions, this.clock.now());
    } catch (err) {
      this.logs.addTopic(topic, t.partitions, pickTopicConfig(t)); // not deleted: back in service
      this.deleting.delete(topic);
      throw err;
    }
    // Deleted; a failure from here on leaves the name refused for creation until a restart finishes the deletion.
    await finishTopicDeletion(this.catalog, this.offsets, this.logs, topic, t.partitions);
    this.deleting.delete(topic);
    await this.groups.topicDeleted(topic);
    await this.monitor.deleteTopic(topic);
    const groups = subscriptions.map((s) => s.groupId);
    this.logger.info({ topic, partitions: t.partitions, groups }, 'topic deleted');
    return { topic, partitions: t.partitions, groups, subscriptions };
  }

  /** @throws OnelogError `TOPIC_IN_USE` if a subscription's retry policy uses the topic or is on it, or it dead-letters records to it */
  private async checkUnused(topic: string): Promise<void> {
    for (const sub of await this.catalog.subscriptions.listWithRetries()) {
      const tiers = this.groups.retryTopics.tiersOf(sub.groupId, sub.topic);
      const role = sub.topic === topic && (sub.retry !== null || sub.retryTiers > 0) ? 'has retry tier or dead-letter topics (from a retry policy, now or before)'
        : tiers.includes(topic) ? 'retries records through it (a retry tier topic)'
          : sub.deadLetterTopic === topic ? 'dead-letters records to it' : null;
      if (role === null) continue;
      throw new OnelogError('TOPIC_IN_USE', `cannot delete topic ${topic}: group ${sub.groupId}'s subscription to ${sub.topic} ${role}; ` +
        `delete that group first (onelog groups delete ${sub.groupId})`, { topic, groupId: sub.groupId, subscriptionTopic: sub.topic });
    }
  }

  /**
   * Changes settings of a topic; the others keep their values. Takes effect at once on every partition.
   * @throws OnelogError `UNKNOWN_TOPIC`, `INVALID_CONFIG`
   */
  async alter(request: AlterTopicRequest): Promise<TopicDescription> {
    const current = await this.catalog.topics.get(request.topic);
    if (!current) throw unknownTopic(request.topic);
    const config = resolveTopicConfig(request.config ?? {}, pickTopicConfig(current));
    await this.catalog.topics.updateConfig(request.topic, config);
    this.logs.setConfig(request.topic, config);
    return this.describe(request.topic);
  }

  async list(): Promise<TopicSummary[]> {
    return (await this.catalog.topics.list()).map((t) => ({ topic: t.name, partitions: t.partitions }));
  }

  /**
   * A topic's settings and partitions; with `groups`, every subscribed group's position and health per partition.
   * @throws OnelogError `UNKNOWN_TOPIC`
   */
  async describe(topic: string, options: DescribeTopicOptions = {}): Promise<TopicDescription> {
    const t = await this.catalog.topics.get(topic);
    if (!t) throw unknownTopic(topic);
    return {
      topic,
      // A partition never appended to holds no bytes (and is not opened for it).
      partitions: (await this.logs.offsets(topic)).map((p) => ({ ...p, sizeBytes: p.highWatermark === 0 ? 0 : this.logs.get(topic, p.partition).sizeBytes })),
      config: pickTopicConfig(t),
      createdAt: t.createdAt,
      ...(options.groups ? { groups: await this.groups.describeTopicGroups(topic) } : {}),
    };
  }

  /**
   * Moves a partition's log start offset forward: records below `beforeOffset` are never served again. -1 stands for
   * the high watermark (as Kafka's DeleteRecords); an offset below the log start or above the high watermark, or
   * any other negative one (Kafka's unset -1001 among them), deletes nothing and is refused.
   * @throws OnelogError `OFFSET_OUT_OF_RANGE` naming the offsets allowed; `INVALID_OFFSET` for a value that is not an integer
   */
  async deleteRecords(request: DeleteRecordsRequest): Promise<DeleteRecordsResult> {
    const log = this.logs.get(request.topic, request.partition);
    const requested = checkInteger(request.beforeOffset, 'beforeOffset', Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, 'INVALID_OFFSET');
    const beforeOffset = requested === HIGH_WATERMARK ? log.highWatermark : requested;
    if (beforeOffset < log.logStartOffset || beforeOffset > log.highWatermark) {
      throw new OnelogError('OFFSET_OUT_OF_RANGE', `cannot delete records before ${requested} in ${request.topic}/${log.partition}: beforeOffset must be ` +
        `from the log start offset ${log.logStartOffset} to the high watermark ${log.highWatermark}, or -1 for the high watermark`,
      { topic: request.topic, partition: log.partition, offset: requested, logStartOffset: log.logStartOffset, highWatermark: log.highWatermark });
    }
    const previousLogStartOffset = log.logStartOffset;
    const logStartOffset = await log.deleteRecordsBefore(beforeOffset, 'delete-records');
    if (logStartOffset > previousLogStartOffset) await this.monitor.evaluate({ topic: request.topic });
    return { topic: request.topic, partition: log.partition, previousLogStartOffset, logStartOffset };
  }
}

/** Removes a deleted topic's committed offsets and partition directories, then marks its deletion done. */
async function finishTopicDeletion(catalog: Catalog, offsets: OffsetStore, logs: Logs, topic: string, partitions: number): Promise<void> {
  await offsets.deleteTopic(topic);
  logs.deleteTopicLogs(topic, partitions);
  await catalog.topics.finishDeletion(topic);
}

/**
 * Finishes the topic deletions a crash cut short (the catalog deleted the topic, its files or committed offsets
 * may remain): run at start, before the log store opens.
 */
export async function finishTopicDeletions(catalog: Catalog, offsets: OffsetStore, logs: Logs, logger: Logger): Promise<void> {
  for (const { name, partitions } of await catalog.topics.listDeletions()) {
    await finishTopicDeletion(catalog, offsets, logs, name, partitions);
    logger.warn({ topic: name, partitions }, 'finished deleting a topic whose deletion a crash cut short');
  }
}

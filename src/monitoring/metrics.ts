/**
 * Prometheus metrics (prom-client, served at `GET /metrics`; docs/monitoring.md lists each). Counters move as
 * the broker works (records and bytes produced and fetched per topic, HTTP request durations per route); the
 * state of logs and groups is read at each scrape: per partition (log start offset, high watermark, size), per
 * group and partition (committed offset, lag, unread records, records lost, time lag, retention headroom), per
 * group and topic (the same, summed or at their worst), dead-letter depth, share groups' records in flight and
 * members, active alerts by kind, and the process's own metrics.
 *
 * Cardinality is bounded: labels are `topic`, `partition`, `group` and `kind` only; per-partition series stop
 * after `maxPartitionSeries` partitions and `maxGroupPartitionSeries` group partitions per scrape (the
 * group-topic series still cover every partition), and `onelog_metrics_series_omitted` counts what was left out.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Catalog } from '../catalog/catalog.js';
import type { SubscriptionRecord } from '../catalog/subscriptions.js';
import type { Logs } from '../log/logs.js';
import type { ClusterMetrics } from './cluster-metrics.js';
import { LagTotals } from './group-lag-totals.js';
import type { Monitor } from './monitor.js';

/** Bounds of the per-partition series. */
export interface MetricsOptions {
  /** Partitions (over every topic) with their own `onelog_partition_*` series. @default 20000 */
  maxPartitionSeries?: number;
  /** Group partitions (over every group) with their own `onelog_group_*` series. @default 20000 */
  maxGroupPartitionSeries?: number;
}

/** A share-partition this broker serves, as a scrape reads it. */
export interface SharePartitionLoad {
  groupId: string;
  topic: string;
  partition: number;
  /** Records held by a member under a lock. */
  acquired: number;
  /** Records in the window waiting to be acquired (a release's delay included). */
  available: number;
}

/** What a scrape reads. */
export interface MetricsSources {
  catalog: Catalog;
  logs: Logs;
  monitor: Monitor;
  /** Dead letters of a subscription neither redriven nor purged. */
  deadLetterDepth(sub: SubscriptionRecord): Promise<number>;
}

/** The share-partitions this broker serves, and each share group's members (see {@link BrokerMetrics.gaugeShareGroups}). */
export type ShareGroupGauges = () => Promise<{ partitions: SharePartitionLoad[]; members: Array<{ groupId: string; members: number }> }>;

/** What the Kafka listener reports of its receive buffers (src/kafka/receive-budget.ts). */
export interface KafkaListenerLoad {
  /** Bytes received on every connection and not yet handled. */
  readonly bufferedBytes: number;
  /** Connections not reading until those bytes fall below their bound. */
  readonly pausedConnections: number;
}

type GroupPartitionLabels = 'group' | 'topic' | 'partition';
type GroupTopicLabels = 'group' | 'topic';

export class BrokerMetrics {
  readonly registry = new Registry();
  private readonly producedRecords: Counter<'topic'>;
  private readonly producedBytes: Counter<'topic'>;
  private readonly fetchedRecords: Counter<'topic'>;
  private readonly fetchedBytes: Counter<'topic'>;
  private readonly fetchRequests: Counter<'member' | 'served'>;
  readonly httpRequestDuration: Histogram<'method' | 'route' | 'status_code'>;
  private readonly gauges: Array<Gauge<string>> = [];
  private readonly options: Required<MetricsOptions>;
  private readonly partition: Record<'logStart' | 'highWatermark' | 'size', Gauge<'topic' | 'partition'>>;
  private readonly group: Record<'committed' | 'lag' | 'unread' | 'lost' | 'timeLag' | 'headroom' | 'headroomBytes', Gauge<GroupPartitionLabels>>;
  private readonly groupTopic: Record<'lag' | 'lost' | 'timeLag' | 'headroom', Gauge<GroupTopicLabels>>;
  /** Per group: its total lag, and its worst partitions by lag and by time lag. */
  private readonly groupLag: { total: Gauge<'group'>; max: Gauge<GroupPartitionLabels>; maxTime: Gauge<GroupPartitionLabels> };
  private readonly deadLetterDepth: Gauge<GroupTopicLabels>;
  private readonly share: { acquired: Gauge<GroupPartitionLabels>; available: Gauge<GroupPartitionLabels>; members: Gauge<'group'> };
  private readonly shareDeliveries: Counter<'group' | 'topic' | 'kind'>;
  private readonly shareAcknowledgements: Counter<'group' | 'topic' | 'kind'>;
  private readonly activeAlerts: Gauge<'kind'>;
  private readonly omitted: Gauge<'series'>;
  private readonly readFailed: Gauge<'part'>;
  /** The Kafka listener served, once {@link watchKafka} was called. */
  private kafka: KafkaListenerLoad | null = null;

  private shareGroups: ShareGroupGauges | null = null;

  constructor(private readonly sources: MetricsSources, options: MetricsOptions = {}) {
    this.options = { maxPartitionSeries: 20_000, maxGroupPartitionSeries: 20_000, ...options };
    const registers = [this.registry];
    const counter = (name: string, help: string) => new Counter({ name, help, labelNames: ['topic'] as const, registers });
    this.producedRecords = counter('onelog_produced_records_total', 'Records appended, by topic');
    this.producedBytes = counter('onelog_produced_bytes_total', 'Bytes of record batches appended, by topic');
    this.fetchedRecords = counter('onelog_fetched_records_total', 'Records answered to fetches (pull, push and webhooks), by topic');
    this.fetchedBytes = counter('onelog_fetched_bytes_total', 'Bytes of record batches answered to fetches, by topic');
    this.fetchRequests = new Counter({
      name: 'onelog_fetch_requests_total', registers, labelNames: ['member', 'served'] as const,
      help: 'Pull fetches served (JSON, binary and Kafka paths), by whether a group member sent it (member: true, false) and how it was served '
        + '(served: coordinator, a member\'s fetch checked by its group\'s coordinator; any, served by the broker asked without the group)',
    });
    this.httpRequestDuration = new Histogram({
      name: 'onelog_http_request_duration_seconds', help: 'HTTP request durations, by route (the route pattern, not the path)',
      labelNames: ['method', 'route', 'status_code'] as const, buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    const gauge = <L extends string>(name: string, help: string, labelNames: readonly L[]): Gauge<L> => {
      const g = new Gauge<L>({ name, help, labelNames, registers });
      this.gauges.push(g as Gauge<string>);
      return g;
    };
    const tp = ['topic', 'partition'] as const;
    this.partition = {
      logStart: gauge('onelog_partition_log_start_offset', 'First readable offset of the partition', tp),
      highWatermark: gauge('onelog_partition_high_watermark', 'Offset the next record will get (records below it are readable)', tp),
      size: gauge('onelog_partition_size_bytes', 'Bytes of the partition\'s log on disk', tp),
    };
    const gtp = ['group', 'topic', 'partition'] as const;
    this.group = {
      committed: gauge('onelog_group_committed_offset', 'Next offset the group reads', gtp),
      lag: gauge('onelog_group_lag_records', 'Readable offsets the group has not read (high watermark - max(committed, log start))', gtp),
      unread: gauge('onelog_group_unread_records', 'Records among them (fewer than the lag where compaction left gaps)', gtp),
      lost: gauge('onelog_group_lost_records', 'Offsets deleted before the group read them (committed below the log start)', gtp),
      timeLag: gauge('onelog_group_time_lag_seconds', 'Age of the first unread record; 0 when caught up', gtp),
      headroom: gauge('onelog_group_retention_headroom_seconds', 'Time until time retention deletes the first unread record (negative: overdue); absent without time retention', gtp),
      headroomBytes: gauge('onelog_group_retention_headroom_bytes', 'Bytes that can be appended before size retention deletes the first unread record; absent without size retention', gtp),
    };
    const gt = ['group', 'topic'] as const;
    this.groupTopic = {
      lag: gauge('onelog_group_topic_lag_records', 'Lag summed over the topic\'s partitions', gt),
      lost: gauge('onelog_group_topic_lost_records', 'Records lost summed over the topic\'s partitions', gt),
      timeLag: gauge('onelog_group_topic_max_time_lag_seconds', 'Largest time lag over the topic\'s partitions', gt),
      headroom: gauge('onelog_group_topic_min_retention_headroom_seconds', 'Smallest time retention headroom over the topic\'s partitions', gt),
    };
    this.groupLag = {
      total: gauge('onelog_group_total_lag_records', 'Lag summed over every partition of the group\'s subscriptions (groups describe: totalLag)', ['group'] as const),
      max: gauge('onelog_group_max_lag_records', 'The largest lag of a partition of the group, labelled with that partition (groups describe: maxLag)', gtp),
      maxTime: gauge('onelog_group_max_time_lag_seconds', 'The largest time lag of a partition of the group, labelled with that partition (groups describe: maxTimeLag)', gtp),
    };
    this.deadLetterDepth = gauge('onelog_dead_letter_depth', 'Dead letters of the group\'s subscription neither redriven nor purged', gt);
    this.share = {
      acquired: gauge('onelog_share_records_acquired', 'A share group\'s records of the partition held by a member under a lock', gtp),
      available: gauge('onelog_share_records_available', 'A share group\'s records of the partition taken from the log and waiting to be acquired (delayed releases included)', gtp),
      members: gauge('onelog_share_members', 'Members of a share group heard from within their session timeout', ['group'] as const),
    };
    const groupCounter = (name: string, help: string) => new Counter({ name, help, labelNames: ['group', 'topic', 'kind'] as const, registers });
    this.shareDeliveries = groupCounter('onelog_share_deliveries_total', 'Records a share group\'s members acquired, by kind: first (a first delivery) or redelivery');
    this.shareAcknowledgements = groupCounter('onelog_share_acknowledgements_total', 'Outcomes share group members reported and the broker took, by kind: accept, release, reject or renew');
    this.activeAlerts = gauge('onelog_alerts_active', 'Unresolved alerts, by kind', ['kind'] as const);
    this.omitted = gauge('onelog_metrics_series_omitted', 'Per-partition series left out of this scrape by the cardinality bounds', ['series'] as const);
    this.readFailed = gauge('onelog_metrics_read_failed', 'Whether a part of this scrape could not be read (1: a store failed, e.g. the object ' +
      'store in cluster mode; its series are absent or partial) or was (0): part="logs", "groups", "share_groups"', ['part'] as const);
    const kafka = () => this.kafka;
    new Gauge({
      name: 'onelog_kafka_buffered_bytes', help: 'Bytes the Kafka listener received and has not yet handled, over every connection (0 without a Kafka listener)',
      registers, collect() { this.set(kafka()?.bufferedBytes ?? 0); },
    });
    new Gauge({
      name: 'onelog_kafka_connections_paused', help: 'Kafka connections not read until the buffered bytes fall below serve --kafka-max-buffered-bytes',
      registers, collect() { this.set(kafka()?.pausedConnections ?? 0); },
    });
    collectDefaultMetrics({ register: this.registry, prefix: 'onelog_' });
  }

  /** Counts records (and their batches' bytes) appended to `topic`, here and in the topic's rates (TopicRates). */
  produced(topic: string, records: number, bytes: number): void {
    if (records === 0) return;
    this.producedRecords.inc({ topic }, records);
    this.producedBytes.inc({ topic }, bytes);
    this.sources.monitor.rates.produced(topic, records, bytes);
  }

  /**
   * Counts records answered to a fetch of `topic`, and their bytes (batch bytes on the binary path; keys and values on
   * the JSON path), here and in the topic's rates (TopicRates).
   */
  fetched(topic: string, records: number, bytes: number): void {
    if (records === 0) return;
    this.fetchedRecords.inc({ topic }, records);
    this.fetchedBytes.inc({ topic }, bytes);
    this.sources.monitor.rates.fetched(topic, records, bytes);
  }

  /**
   * Counts a pull fetch served: `member`, whether a group member sent it; `served`, `'coordinator'` when its group's
   * coordinator checked it (a member's fetch), `'any'` when the broker asked served it without the group (a fetch
   * naming no member, or a member's `readAnywhere` fetch: docs/cluster.md, "The read path").
   */
  fetchServed(member: boolean, served: 'coordinator' | 'any'): void {
    this.fetchRequests.inc({ member: String(member), served });
  }

  /** Counts a share group's acquisition: its first deliveries and its redeliveries. */
  shareDelivered(group: string, topic: string, first: number, redeliveries: number): void {
    if (first > 0) this.shareDeliveries.inc({ group, topic, kind: 'first' }, first);
    if (redeliveries > 0) this.shareDeliveries.inc({ group, topic, kind: 'redelivery' }, redeliveries);
  }

  /** Counts outcomes a share group's member reported that the broker took, by kind (accept, release, reject, renew). */
  shareAcknowledged(group: string, topic: string, kind: string, records: number): void {
    if (records > 0) this.shareAcknowledgements.inc({ group, topic, kind }, records);
  }

  /** Drops a deleted topic's series (a topic created again under the name counts from zero, as Kafka's do). */
  deleteTopic(topic: string): void {
    for (const counter of [this.producedRecords, this.producedBytes, this.fetchedRecords, this.fetchedBytes]) counter.remove({ topic });
  }

  /** Adds cluster mode's series (cluster-metrics.ts: brokers, leases, object storage, commits, PostgreSQL, dependencies). */
  watchCluster(cluster: ClusterMetrics): void {
    cluster.register(this.registry);
  }

  /** Reports `listener`'s receive buffers at each scrape (`onelog_kafka_buffered_bytes`, `onelog_kafka_connections_paused`). */
  watchKafka(listener: KafkaListenerLoad): void {
    this.kafka = listener;
  }

  /** The content type of {@link scrape}'s answer. */
  get contentType(): string {
    return this.registry.contentType;
  }

  /**
   * Reads the state of logs and groups, and answers every metric in Prometheus's text format. A part that cannot be
   * read (a store failing) leaves its series out and sets `onelog_metrics_read_failed{part}`: the others, the cluster's
   * and the process's among them, are answered still.
   */
  async scrape(): Promise<string> {
    for (const g of this.gauges) g.reset();
    for (const [part, read] of [['logs', () => this.readLogs()], ['groups', () => this.readGroups()], ['share_groups', () => this.readShareGroups()]] as const) {
      this.readFailed.set({ part }, await read().then(() => 0, () => 1));
    }
    for (const alert of this.sources.monitor.alerts.active()) this.activeAlerts.inc({ kind: alert.kind });
    return this.registry.metrics();
  }

  private async readLogs(): Promise<void> {
    const { catalog, logs } = this.sources;
    let series = 0;
    let omitted = 0;
    for (const t of await catalog.topics.list()) {
      for (const log of logs.partitions(t.name)) {
        if (series++ >= this.options.maxPartitionSeries) {
          omitted++;
          continue;
        }
        const labels = { topic: t.name, partition: String(log.partition) };
        this.partition.logStart.set(labels, log.logStartOffset);
        this.partition.highWatermark.set(labels, log.highWatermark);
        this.partition.size.set(labels, log.sizeBytes);
      }
    }
    this.omitted.set({ series: 'partition' }, omitted);
  }

  /** Group partitions never committed have no position: they count in no series. */
  private async readGroups(): Promise<void> {
    let series = 0;
    let omitted = 0;
    const totals = new Map<string, { labels: Record<'group' | 'topic', string>; lag: number; lost: number; timeLag: number; headroom: number }>();
    const groupTotals = new Map<string, LagTotals>();
    for await (const partitions of this.sources.monitor.health.walk()) {
      for (const { groupId, sub, offsets: p, committed, assessment: { health: h } } of partitions) {
        const key = `${groupId}\0${sub.topic}`;
        let total = totals.get(key);
        if (total === undefined) {
          total = { labels: { group: groupId, topic: sub.topic }, lag: 0, lost: 0, timeLag: 0, headroom: Infinity };
          totals.set(key, total);
          if (sub.deadLetterTopic !== null) this.deadLetterDepth.set(total.labels, await this.sources.deadLetterDepth(sub));
        }
        if (committed === undefined) continue;
        let lags = groupTotals.get(groupId);
        if (lags === undefined) groupTotals.set(groupId, (lags = new LagTotals()));
        lags.add(sub.topic, p.partition, h);
        total.lag += h.lag ?? 0;
        total.lost += h.lostRecords;
        total.timeLag = Math.max(total.timeLag, (h.timeLagMs ?? 0) / 1000);
        if (h.headroomMs !== null) total.headroom = Math.min(total.headroom, h.headroomMs / 1000);
        if (series++ >= this.options.maxGroupPartitionSeries) {
          omitted++;
          continue;
        }
        const labels = { group: groupId, topic: sub.topic, partition: String(p.partition) };
        this.group.committed.set(labels, committed.offset);
        this.group.lag.set(labels, h.lag ?? 0);
        this.group.unread.set(labels, h.unreadRecords ?? 0);
        this.group.lost.set(labels, h.lostRecords);
        this.group.timeLag.set(labels, (h.timeLagMs ?? 0) / 1000);
        if (h.headroomMs !== null) this.group.headroom.set(labels, h.headroomMs / 1000);
        if (h.headroomBytes !== null) this.group.headroomBytes.set(labels, h.headroomBytes);
      }
      await nextTurn(); // a scrape of many groups' partitions lets requests run between slices
    }
    for (const t of totals.values()) {
      this.groupTopic.lag.set(t.labels, t.lag);
      this.groupTopic.lost.set(t.labels, t.lost);
      this.groupTopic.timeLag.set(t.labels, t.timeLag);
      if (t.headroom !== Infinity) this.groupTopic.headroom.set(t.labels, t.headroom);
    }
    for (const [group, lags] of groupTotals) {
      const { totalLag, maxLag, maxTimeLag } = lags.value;
      this.groupLag.total.set({ group }, totalLag);
      if (maxLag) this.groupLag.max.set({ group, topic: maxLag.topic, partition: String(maxLag.partition) }, maxLag.lag);
      if (maxTimeLag) this.groupLag.maxTime.set({ group, topic: maxTimeLag.topic, partition: String(maxTimeLag.partition) }, maxTimeLag.timeLagMs / 1000);
    }
    this.omitted.set({ series: 'group_partition' }, omitted);
  }

  /**
   * Reads the share groups' gauges at each scrape from now on (none before: the share groups are built after the
   * metrics, which count every append from the start).
   */
  gaugeShareGroups(read: ShareGroupGauges): void {
    this.shareGroups = read;
  }

  /** Share groups' records in flight per partition (bounded as the group series are) and members per group. */
  private async readShareGroups(): Promise<void> {
    if (this.shareGroups === null) return;
    const { partitions, members } = await this.shareGroups();
    for (const p of partitions.slice(0, this.options.maxGroupPartitionSeries)) {
      const labels = { group: p.groupId, topic: p.topic, partition: String(p.partition) };
      this.share.acquired.set(labels, p.acquired);
      this.share.available.set(labels, p.available);
    }
    for (const m of members) this.share.members.set({ group: m.groupId }, m.members);
  }
}

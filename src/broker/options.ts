/**
 * The options of the embedded broker ({@link BrokerOptions}), as `Broker.open` and `onelog serve` take them.
 */
import type { DependencyChecksOptions } from './health.js';
import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import type { WebhookOptions } from '../delivery/webhook.js';
import type { MetricsOptions } from '../monitoring/metrics.js';
import type { MonitorOptions } from '../monitoring/monitor.js';
import type { StoreEngines } from './store-engines.js';

/**
 * Options of the embedded broker. `catalog` and `offsets` ({@link StoreEngines}) move those two stores to
 * PostgreSQL and Redis (cluster mode, docs/cluster.md); by default they live in the data directory.
 */
export interface BrokerOptions extends StoreEngines {
  /** Directory holding the log, and the offset store and the catalog unless `catalog` / `offsets` name servers; created if missing. */
  dataDir: string;
  /** @default the system clock */
  clock?: Clock;
  /** @default no logging */
  logger?: Logger;
  /** Largest record accepted (key + value + headers), bytes. @default 1048576 (1 MiB, as Kafka's max.message.bytes) */
  maxRecordBytes?: number;
  /** Produce splits a partition's records into batches of about this size, bytes. @default 1048576 */
  maxBatchBytes?: number;
  /** Most records one produce request may carry (`REQUEST_TOO_LARGE` beyond). @default 100000 */
  maxRecordsPerRequest?: number;
  /**
   * How often retention runs over every topic, ms; 0 = never on a schedule (only on demand).
   * @default 300000 (Kafka's log.retention.check.interval.ms)
   */
  retentionCheckIntervalMs?: number;
  /** How often compacted topics are compacted in the background, ms; 0 = only on demand. @default 15000 */
  compactionIntervalMs?: number;
  /** How often members past their session timeout are removed, ms; 0 = only when their group is next used. @default 500 */
  sessionCheckIntervalMs?: number;
  /** Webhook delivery (push subscriptions with a pushEndpoint): ack deadline, retry backoff, batch limits. @default see WebhookOptions */
  webhooks?: WebhookOptions;
  /**
   * File descriptors the log store may hold open at once (segments, indexes, checkpoints; see
   * log/segments/file-cache.ts); at least 8. Files are opened on demand and closed least-recently-used beyond it.
   * @default {@link defaultMaxOpenFiles}: the process's soft open-files limit less room for connections,
   *   LMDB and SQLite
   */
  maxOpenFiles?: number;
  /**
   * Most bytes of compaction's key map, shared by every partition (Kafka's `log.cleaner.dedupe.buffer.size`;
   * `serve --cleaner-dedupe-buffer-bytes`): 24 bytes a key, so the default maps about 2.5 million keys per
   * pass; a partition with more keys is compacted in several passes. Partitions compact one at a time, each
   * holding only as much as its log can need; none is held between compactions. From 48 to 2147483648 (2 GiB).
   * @default 67108864 (64 MiB, {@link DEFAULT_DEDUPE_BUFFER_BYTES})
   */
  cleanerDedupeBufferBytes?: number;
  /**
   * How often the log store closes files unused since the check before, ms, so that at rest its descriptors go
   * back to connections; 0 = never. @default 30000 (a file closes after 30 to 60 s unused)
   */
  fileIdleCheckIntervalMs?: number;
  /** Alert evaluation (its interval), notification delivery and the health history. @default see MonitorOptions */
  monitoring?: MonitorOptions;
  /** Bounds of the per-partition metric series. @default see MetricsOptions */
  metrics?: MetricsOptions;
  /** How the dependencies are probed for `GET /health` (timeout, interval). @default see DependencyChecksOptions */
  health?: DependencyChecksOptions;
  /** Answer clients not on loopback while no user exists (protected mode off; `serve --insecure`). @default false */
  insecure?: boolean;
  /**
   * Allow webhooks (push endpoints, alert sinks) to internal destinations: loopback, private, link-local and the other
   * addresses that are not globally reachable, and the machine's own addresses (`serve --webhook-allow-private`;
   * docs/security.md). @default false: they are refused, `FORBIDDEN` (`reason: private-address`) for a URL naming one,
   * a failed POST for a host name resolving to one
   */
  webhookAllowPrivate?: boolean;
  /**
   * Refuse webhooks to internal destinations (`serve --webhook-deny-private`): the default, kept for compatibility.
   * @default true unless webhookAllowPrivate; both true is `INVALID_CONFIG`
   */
  webhookDenyPrivate?: boolean;
  /**
   * Start even though the offset store holds none of the committed offsets of groups the catalog says committed (a
   * lost or restored `offsets/data.mdb`, a flushed Redis; `serve --allow-missing-offsets`, docs/guarantees.md). Their
   * partitions are then paused for those groups with `OFFSET_OUT_OF_RANGE` and an `offset-out-of-range` alert, never
   * started at their start policy, until `onelog offsets reset ... --execute` decides where each resumes.
   * @default false: such a start is refused with `STORAGE_ERROR` naming the offset store
   */
  allowMissingOffsets?: boolean;
}

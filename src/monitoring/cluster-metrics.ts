/**
 * The cluster's metrics (cluster mode only, docs/monitoring.md "Cluster mode"): the brokers live and the leases this
 * broker holds, read at each scrape; object storage's request latency and errors, and the sequencer's commit latency,
 * as they happen; PostgreSQL's errors in this process; whether each dependency answered its last health probe. Made
 * before the log in object storage opens (its object store and sequencer report here), then registered with the
 * broker's other metrics ({@link BrokerMetrics.watchCluster}).
 */
import { Counter, Gauge, Histogram } from 'prom-client';
import type { Registry } from 'prom-client';
import { postgresFailures } from '../common/postgres.js';

/** What the scrape-time gauges read. */
export interface ClusterGaugeSources {
  /** The brokers live in the registry now (heartbeat within 10 s). @throws OnelogError `STORAGE_ERROR` */
  liveBrokers(): Promise<number>;
  /** The leases this broker holds now, by kind. @throws OnelogError `STORAGE_ERROR` */
  heldLeases(): Promise<Record<'partition' | 'group' | 'job', number>>;
  /** Each dependency's state at its last health probe (1 up, 0 down), by name: `catalog`, `offsets`, `log`. */
  dependencies(): ReadonlyMap<string, boolean>;
}

/** Latency buckets of object storage requests and commits, seconds: a local server answers in about 1 ms, AWS S3 in 20-100 ms. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export class ClusterMetrics {
  private readonly objectStoreDuration = new Histogram({
    name: 'onelog_object_store_request_duration_seconds', help: 'Object storage requests by action (put: an object of a flush; get, list, ' +
      'delete), seconds, the SDK\'s retries included; failed ones too', labelNames: ['action'] as const, buckets: LATENCY_BUCKETS, registers: [],
  });
  private readonly objectStoreErrors = new Counter({
    name: 'onelog_object_store_errors_total', help: 'Object storage requests that failed (after the SDK\'s retries), by action; a missing object is none',
    labelNames: ['action'] as const, registers: [],
  });
  private readonly commitDuration = new Histogram({
    name: 'onelog_sequencer_commit_duration_seconds', help: 'Commit transactions in PostgreSQL that indexed a flush\'s object and assigned its ' +
      'offsets, seconds (a produce is acknowledged after its PUT and this)', buckets: LATENCY_BUCKETS, registers: [],
  });
  private sources: ClusterGaugeSources | null = null;

  /** The object store's observer (`S3ObjectStore`'s `observe`). */
  readonly objectStoreRequest = (action: 'put' | 'get' | 'list' | 'delete', seconds: number, failed: boolean): void => {
    this.objectStoreDuration.observe({ action }, seconds);
    if (failed) this.objectStoreErrors.inc({ action });
  };

  /** The sequencer's observer (`PostgresSequencer`'s `onCommit`). */
  readonly committed = (seconds: number): void => {
    this.commitDuration.observe(seconds);
  };

  /** Reads the scrape-time gauges from `sources` from now on (before, they are absent). */
  watch(sources: ClusterGaugeSources): void {
    this.sources = sources;
  }

  /** Adds every cluster series to `registry`. */
  register(registry: Registry): void {
    const source = () => this.sources;
    for (const metric of [this.objectStoreDuration, this.objectStoreErrors, this.commitDuration]) registry.registerMetric(metric);
    new Counter({
      name: 'onelog_postgres_errors_total', help: 'PostgreSQL statements, transactions and connections that failed (server or network), in this process',
      registers: [registry], collect() {
        this.reset();
        this.inc(postgresFailures());
      },
    });
    new Gauge({
      name: 'onelog_cluster_brokers_live', help: 'Brokers of the cluster live in the registry (heartbeat within 10 s), as this broker reads it',
      registers: [registry], async collect() {
        this.reset();
        const s = source();
        // PostgreSQL failing: the series is left out of this scrape (the failure counts in onelog_postgres_errors_total).
        const live = await s?.liveBrokers().catch(() => null);
        if (live !== undefined && live !== null) this.set(live);
      },
    });
    new Gauge({
      name: 'onelog_cluster_leases_held', help: 'Leases this broker holds now, by kind: partition (it sequences its produces), group (it coordinates it), job',
      labelNames: ['kind'] as const, registers: [registry], async collect() {
        this.reset();
        const held = await source()?.heldLeases().catch(() => null);
        for (const [kind, count] of Object.entries(held ?? {})) this.set({ kind }, count);
      },
    });
    new Gauge({
      name: 'onelog_dependency_up', help: 'Whether each dependency answered its last health probe (1) or not (0): catalog, offsets, log (GET /health)',
      labelNames: ['dependency'] as const, registers: [registry], collect() {
        const s = source();
        if (s === null) return;
        for (const [dependency, up] of s.dependencies()) this.set({ dependency }, up ? 1 : 0);
      },
    });
  }
}

import { defineConfig } from 'vitest/config';

/**
 * The unit tier: pure code, no services, no child processes (test/helpers/unit-tier.ts refuses both), under 60 s:
 * `npm run test:unit`, no build needed.
 */
const UNIT = [
  'test/unit-tier.test.ts',
  'test/architecture.test.ts',
  'test/common/backoff.test.ts',
  'test/broker/broker-limits.test.ts',
  'test/common/buffer-pool.test.ts',
  'test/catalog/sqlite-catalog.test.ts',
  'test/client/consumer.test.ts',
  'test/client/producer.test.ts',
  'test/client/share-consumer.test.ts',
  'test/coordinator/assignors.test.ts',
  'test/coordinator/delivery-counts.test.ts',
  'test/coordinator/share-groups.test.ts',
  'test/coordinator/share-partition.test.ts',
  'test/coordinator/share-read-ahead.test.ts',
  'test/coordinator/group-coordinator.test.ts',
  'test/coordinator/group-membership.test.ts',
  'test/delivery/retries.test.ts',
  'test/external-tools.test.ts',
  'test/common/guard.test.ts',
  'test/common/turns.test.ts',
  'test/history/checker.test.ts',
  'test/kafka/admin.test.ts',
  'test/kafka/codec.test.ts',
  'test/kafka/share-assignor.test.ts',
  'test/kafka/suite-tool.test.ts',
  'test/kafka/errors.test.ts',
  'test/kafka/frames.test.ts',
  'test/kafka/golden.test.ts',
  'test/kafka/listener.test.ts',
  'test/kafka/platformatic.test.ts',
  'test/monitoring/alert-notifications.test.ts',
  'test/monitoring/consumer-health.test.ts',
  'test/monitoring/evaluation-queue.test.ts',
  'test/monitoring/evaluation-slices.test.ts',
  'test/monitoring/metrics.test.ts',
  'test/monitoring/storage-corruption.test.ts',
  'test/protocol/batch-validator.test.ts',
  'test/protocol/compression.test.ts',
  'test/protocol/crc32c.test.ts',
  'test/protocol/errors.test.ts',
  'test/protocol/murmur2.test.ts',
  'test/protocol/partitioner.test.ts',
  'test/protocol/record-batch.test.ts',
  'test/protocol/topic-config.test.ts',
  'test/security/kafka-memory.test.ts',
  'test/security/malformed-batches.test.ts',
  'test/security/outbound.test.ts',
  'test/security/serial-reloads.test.ts',
  'test/server/http-server.test.ts',
  'test/log/corruption.test.ts',
  'test/log/file-cache.test.ts',
  'test/log/flush-policy.test.ts',
  'test/log/log-cleaner.passes.test.ts',
  'test/log/log-cleaner.property.test.ts',
  'test/log/log-cleaner.test.ts',
  'test/log/log-manager.fuzz.test.ts',
  'test/log/log-manager.test.ts',
  'test/log/logs-contract.test.ts',
  'test/log/offset-index.test.ts',
  'test/log/offset-map.test.ts',
  'test/log/partition-log.fuzz.test.ts',
  'test/log/partition-log.test.ts',
  'test/log/producer-state.test.ts',
  'test/log/recovery-point.test.ts',
  'test/log/retention.test.ts',
  'test/log/segment.test.ts',
  'test/log/sequencer-contract.test.ts',
  'test/log/storage-errors.test.ts',
  'test/log/time-index.test.ts',
  'test/log/unread-range.test.ts',
  'test/broker/topic-delete.test.ts',
];

/** The system tier: Chromium, kcat, chaos, `npm pack`: `npm run test:system`. */
const SYSTEM = [
  'test/integration/console.test.ts',
  'test/integration/kcat.test.ts',
  'test/chaos/chaos.test.ts',
  'test/cluster/cluster-chaos.test.ts',
  'test/integration/package.test.ts',
];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // The JSON report lets .ci/run print a plain "N passed, N failed" closing line.
    reporters: ['default', ['json', { outputFile: '.vitest-report.json' }]],
    // Three tiers, each runnable alone (`vitest run --project NAME`); `npm test` runs them all, in this order (groupOrder):
    // the unit tier two files at a time, the others one at a time.
    projects: [
      { extends: true, test: { name: 'unit', include: UNIT, setupFiles: ['test/helpers/unit-tier.ts'], maxWorkers: 2, sequence: { groupOrder: 0 } } },
      // Everything else: PostgreSQL, Redis, s3rver, real processes: `npm run test:services`.
      { extends: true, test: { name: 'services', include: ['test/**/*.test.ts'], exclude: [...UNIT, ...SYSTEM], sequence: { groupOrder: 1 } } },
      { extends: true, test: { name: 'system', include: SYSTEM, sequence: { groupOrder: 2 } } },
    ],
  },
});

/**
 * The object engine as the broker composes it (src/broker/store-engines.ts): {@link ClusterLogs} over an
 * {@link ObjectLogStore}, on any sequencer and object store (PostgreSQL and S3 in the services tier, in memory in
 * the unit tier), with a catalog of its own (SQLite in a temporary directory) that the logs contract records topics in.
 */
import path from 'node:path';
import { openSqliteCatalog } from '../../src/catalog/sqlite.js';
import type { Catalog } from '../../src/catalog/catalog.js';
import { systemClock } from '../../src/common/clock.js';
import { silentLogger } from '../../src/common/logger.js';
import { ClusterLogs } from '../../src/log/objects/cluster-logs.js';
import { ObjectLogStore } from '../../src/log/objects/object-log.js';
import type { ObjectStore } from '../../src/log/objects/object-store.js';
import type { Sequencer } from '../../src/log/objects/sequencer.js';
import type { LogsFixture } from '../log/logs.contract.js';
import { tmpDir } from './tmp.js';

/** What one broker's object engine runs on. */
export interface ObjectEngineParts {
  sequencer: Sequencer;
  objects: ObjectStore;
}

/** A fixture of the logs contract: each open is a broker (its sequencer and object store from `parts`) over the same log. */
export async function objectLogsFixture(parts: () => Promise<ObjectEngineParts>, dispose: () => Promise<void>): Promise<LogsFixture> {
  const catalog: Catalog = await openSqliteCatalog(path.join(tmpDir(), 'catalog.sqlite'));
  return {
    async open(topics) {
      const { sequencer, objects } = await parts();
      const store = await ObjectLogStore.open({ sequencer, objects, flushWindowMs: 5 });
      const logs = await ClusterLogs.open({ store, sequencer, objects, catalog, clock: systemClock, logger: silentLogger, compactionIntervalMs: 0 });
      await logs.start(topics);
      return logs;
    },
    async recordTopic(topic) {
      await catalog.topics.create({ ...topic.config, name: topic.name, partitions: topic.partitions, createdAt: Date.now() });
    },
    async dispose() {
      await catalog.close();
      await dispose();
    },
  };
}

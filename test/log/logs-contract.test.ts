/**
 * The logs contract in the unit tier, on both engines: the segment files ({@link LogManager}) and the object engine
 * ({@link ClusterLogs}) over the in-memory sequencer and object store. (On PostgreSQL and S3: test/cluster/object-log.test.ts.)
 */
import { LogManager } from '../../src/log/segments/log-manager.js';
import { MemoryObjectStore } from '../helpers/memory-object-store.js';
import { MemorySequencer, MemorySequencerTables } from '../helpers/memory-sequencer.js';
import { objectLogsFixture } from '../helpers/object-logs.js';
import { tmpDir } from '../helpers/tmp.js';
import { logOptions } from './log-fixtures.js';
import { logsContract } from './logs.contract.js';

logsContract('local segment files', async () => {
  const dir = tmpDir();
  return {
    async open(topics) {
      const logs = new LogManager(dir, logOptions());
      logs.start(topics);
      return logs;
    },
    recordTopic: async () => {},
    dispose: async () => {},
  };
});

logsContract('objects, indexed by a sequencer (both in memory)', () => {
  const tables = new MemorySequencerTables();
  const objects = new MemoryObjectStore();
  return objectLogsFixture(async () => ({ sequencer: new MemorySequencer(tables, { brokerId: 1 }), objects }), async () => {});
});

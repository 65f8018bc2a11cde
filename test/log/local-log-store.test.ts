/** The log store contract on local segment files (the LogManager, the embedded default). */
import { LogManager } from '../../src/log/segments/log-manager.js';
import type { TopicLayout } from '../../src/log/segments/log-manager.js';
import { LocalLogStore } from '../../src/log/segments/local-log-store.js';
import { tmpDir } from '../helpers/tmp.js';
import { logOptions } from './log-fixtures.js';
import { logStoreContract } from './log-store.contract.js';

logStoreContract('local segment files', async () => {
  const dir = tmpDir();
  // The topics a reopened store registers: the catalog's part in the broker.
  const topics: TopicLayout[] = [];
  return {
    async open() {
      const logs = new LogManager(dir, logOptions());
      logs.start(topics);
      const store = new LocalLogStore(logs);
      const create = store.createTopic.bind(store);
      store.createTopic = async (name, partitions, config) => {
        await create(name, partitions, config);
        topics.push({ name, partitions, config });
      };
      return store;
    },
    dispose: async () => {},
  };
});

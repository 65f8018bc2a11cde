/** The sequencer's contract on the one in memory (test/helpers/memory-sequencer.ts), in the unit tier. */
import { MemorySequencer, MemorySequencerTables } from '../helpers/memory-sequencer.js';
import { sequencerContract } from './sequencer.contract.js';

sequencerContract('in memory', async () => {
  const tables = new MemorySequencerTables();
  return {
    async brokers(n, leaseMs) {
      return Array.from({ length: n }, (_, i) => new MemorySequencer(tables, { brokerId: i + 1, leaseMs }));
    },
    async expire(topic, partition) {
      const row = tables.row(topic, partition);
      if (row?.leaseExpiresAt !== null && row?.leaseExpiresAt !== undefined) row.leaseExpiresAt = tables.clock.now() - 1000;
    },
    async objectKeys() {
      return [...tables.objects.keys()].sort();
    },
    dispose: async () => {},
  };
});

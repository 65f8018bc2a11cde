/**
 * The offset store contract on the machine's PostgreSQL, each fixture in a schema of its own; and what is
 * particular to it: two stores (two brokers) racing an advance against a stale commit, and a bad table prefix.
 */
import { describe, expect, it } from 'vitest';
import { PostgresKvOffsetStore } from '../../src/offsets/postgres-kv-offset-store.js';
import { pgSchema } from '../helpers/services.js';
import { offsetStoreContract } from './offset-store.contract.js';

offsetStoreContract('PostgreSQL', async () => {
  const schema = await pgSchema('offsets');
  return { open: () => PostgresKvOffsetStore.open({ pool: schema.pool() }), dispose: () => schema.drop() };
});

describe('PostgreSQL offset store', () => {
  it('two brokers\' stores: once one raised the fence, the other\'s commits below it are refused', async () => {
    const schema = await pgSchema('offsets');
    try {
      const a = await PostgresKvOffsetStore.open({ pool: schema.pool() });
      const b = await PostgresKvOffsetStore.open({ pool: schema.pool() });
      await a.advanceGeneration('g', 1, { fence: true });
      await b.commit('g', [{ topic: 't', partition: 0, offset: 10 }], 1, { generationId: 1 });
      // b's group coordinator is paused; a takes the group over and starts generation 2.
      const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) =>
        i === 10 ? a.advanceGeneration('g', 2, { fence: true }) : b.commit('g', [{ topic: 't', partition: 0, offset: 10 + i }], 2 + i, { generationId: 1 })));
      // The advance and the commits serialise on the generation row: every commit after it is refused.
      const accepted = results.flatMap((r, i) => (i !== 10 && r.status === 'fulfilled' ? [i] : []));
      const lastAccepted = accepted.length === 0 ? -1 : accepted[accepted.length - 1]!;
      const offset = (await a.get('g', 't', 0))!.offset;
      expect(offset).toBe(lastAccepted === -1 ? 10 : 10 + lastAccepted);
      for (const [i, r] of results.entries()) {
        if (i !== 10 && r.status === 'rejected') expect(r.reason).toMatchObject({ code: 'ILLEGAL_GENERATION' });
      }
      await expect(b.commit('g', [{ topic: 't', partition: 0, offset: 99 }], 30, { generationId: 1 })).rejects.toMatchObject({ code: 'ILLEGAL_GENERATION' });
      expect((await a.get('g', 't', 0))!.offset).toBe(offset);
      await a.close();
      await b.close();
    } finally {
      await schema.drop();
    }
  });

  it('a table prefix that is not a plain identifier is INVALID_CONFIG', async () => {
    const schema = await pgSchema('offsets');
    try {
      await expect(PostgresKvOffsetStore.open({ pool: schema.pool(), tablePrefix: 'x; drop table y' })).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
    } finally {
      await schema.drop();
    }
  });
});

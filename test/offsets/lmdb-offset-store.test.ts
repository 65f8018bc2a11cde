import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { LmdbOffsetStore } from '../../src/offsets/lmdb-offset-store.js';
import { tmpDir } from '../helpers/tmp.js';
import { offsetStoreContract } from './offset-store.contract.js';

offsetStoreContract('LMDB', () => {
  const dir = tmpDir('onelog-lmdb-');
  return { open: async () => LmdbOffsetStore.open(dir) };
});

describe('LmdbOffsetStore', () => {
  it('keeps its data in the directory it is given', async () => {
    const dir = tmpDir('onelog-lmdb-');
    const store = LmdbOffsetStore.open(dir);
    await store.commit('g', [{ topic: 't', partition: 0, offset: 1 }], 0);
    await store.close();
    expect(fs.readdirSync(dir).sort()).toEqual(['data.mdb', 'lock.mdb']);
  });
});

/**
 * The offset store contract on the machine's Redis, each fixture under a key prefix of its own; and what is
 * particular to Redis: the durability it reports, and an unreachable server answered as STORAGE_ERROR.
 */
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { RedisOffsetStore } from '../../src/offsets/redis-offset-store.js';
import { REDIS_URL, redisPrefix } from '../helpers/services.js';
import { offsetStoreContract } from './offset-store.contract.js';

offsetStoreContract('Redis', () => {
  const place = redisPrefix();
  return { open: () => RedisOffsetStore.open({ url: REDIS_URL, keyPrefix: place.prefix }), dispose: () => place.drop() };
});

describe('Redis offset store', () => {
  it('reports what a commit survives, from the server\'s persistence setting', async () => {
    const place = redisPrefix();
    const store = await RedisOffsetStore.open({ url: REDIS_URL, keyPrefix: place.prefix });
    const redis = new Redis(REDIS_URL);
    try {
      const answer = await redis.config('GET', 'appendonly') as string[];
      expect(store.durability).toMatch(answer[1] === 'yes' ? /^appendonly yes/ : /^appendonly no: .*loses them/);
    } finally {
      await redis.quit();
      await store.close();
    }
  });

  it('a Redis that cannot be reached is STORAGE_ERROR naming Redis and the connection\'s own error', async () => {
    // Port 1 on loopback: nothing listens there.
    await expect(RedisOffsetStore.open({ url: 'redis://127.0.0.1:1/0' })).rejects.toMatchObject({
      code: 'STORAGE_ERROR', message: expect.stringMatching(/Redis.*ECONNREFUSED 127\.0\.0\.1:1/) as unknown,
    });
  });

  it('a database the server has not is INVALID_CONFIG naming the ones it has (ioredis alone goes on in database 0)', async () => {
    const url = new URL(REDIS_URL);
    url.pathname = '/99';
    await expect(RedisOffsetStore.open({ url: url.toString() })).rejects.toMatchObject({
      code: 'INVALID_CONFIG', message: expect.stringMatching(/database 99, which the server has not: it has databases 0 to \d+/) as unknown,
    });
    url.pathname = '/1';
    const place = redisPrefix();
    const store = await RedisOffsetStore.open({ url: url.toString(), keyPrefix: place.prefix });
    const db1 = new Redis(url.toString());
    try {
      await store.commit('g', [{ topic: 't', partition: 0, offset: 3 }], 1);
      expect(await db1.exists(`${place.prefix}offsets:g`)).toBe(1);
    } finally {
      await db1.del(`${place.prefix}offsets:g`, `${place.prefix}topic-groups:t`);
      await db1.quit();
      await store.close();
    }
  });
});

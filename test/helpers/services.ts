/**
 * The machine's PostgreSQL and Redis as tests reach them (override with ONELOG_TEST_PG_URL and
 * ONELOG_TEST_REDIS_URL), and throwaway places in them: a PostgreSQL schema, a Redis key prefix.
 */
import pg from 'pg';
import type { Pool } from 'pg';
import { Redis } from 'ioredis';

export const PG_URL = process.env.ONELOG_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const REDIS_URL = process.env.ONELOG_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/0';

let places = 0;

/** A name no other test of any process uses now. */
export function uniqueName(kind: string): string {
  return `onelog_test_${kind}_${process.pid}_${Date.now().toString(36)}_${++places}`;
}

/** A fresh PostgreSQL schema, pools whose search_path is that schema, and its removal. */
export interface PgSchema {
  name: string;
  /** A connection string whose sessions use the schema (`options=-c search_path=...`). */
  url: string;
  /** A new pool on the schema, ended by {@link drop}. */
  pool(max?: number): Pool;
  /** Ends the pools and drops the schema with everything in it. */
  drop(): Promise<void>;
}

/** Creates a fresh schema in the test database. */
export async function pgSchema(kind = 'schema'): Promise<PgSchema> {
  const name = uniqueName(kind);
  const admin = new pg.Pool({ connectionString: PG_URL, max: 1 });
  await admin.query(`CREATE SCHEMA ${name}`);
  const pools: Pool[] = [];
  const url = `${PG_URL}${PG_URL.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${name}`)}`;
  return {
    name,
    url,
    pool(max = 4) {
      const pool = new pg.Pool({ connectionString: url, max });
      pools.push(pool);
      return pool;
    },
    async drop() {
      for (const p of pools.splice(0)) await p.end();
      await admin.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`);
      await admin.end();
    },
  };
}

/** A fresh Redis key prefix and the removal of every key under it. */
export function redisPrefix(): { prefix: string; drop(): Promise<void> } {
  const prefix = `${uniqueName('redis')}:`;
  return {
    prefix,
    async drop() {
      const redis = new Redis(REDIS_URL);
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
        if (keys.length > 0) await redis.del(...keys);
        cursor = next;
      } while (cursor !== '0');
      await redis.quit();
    },
  };
}

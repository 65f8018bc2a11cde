/**
 * The dedupe helpers: key builders, the in-memory engine (bounded, one process) and the PostgreSQL engine
 * against the real server (127.0.0.1:5432, database `test`, or ONELOG_TEST_PG_URL), where the mark commits
 * or rolls back with the caller's transaction.
 */
import pg from 'pg';
import type { Pool, PoolClient } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryDedupe, PostgresDedupe, PostgresOffsetStore, recordIdKey, recordKey } from '../../src/client/postgres/index.js';
import type { Dedupe } from '../../src/client/postgres/index.js';
import { OnelogError } from '../../src/protocol/errors.js';

const URL = process.env.ONELOG_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const RUN = `t${process.pid}_${Date.now()}`;
const DEDUPE = `onelog_dedupe_${RUN}`;
const EFFECTS = `onelog_dedupe_effects_${RUN}`;
const OFFSETS = `onelog_dedupe_offsets_${RUN}`;

describe('record keys', () => {
  it('recordKey is topic/partition/offset and takes a consumer payload as is', () => {
    const payload = { topic: 'payments', partition: 3, message: { offset: 1042, timestamp: 0, key: null, value: null, headers: [] } };
    expect(recordKey(payload)).toBe('payments/3/1042');
    expect(recordKey({ topic: 'a.b', partition: 0, message: { offset: 0 } })).toBe('a.b/0/0');
  });

  it('recordIdKey reads the first header of that name as UTF-8', () => {
    const message = {
      offset: 7,
      headers: [
        { key: 'other', value: Buffer.from('x') },
        { key: 'message-id', value: Buffer.from('évènement-1') },
        { key: 'message-id', value: Buffer.from('second') },
      ],
    };
    expect(recordIdKey(message, 'message-id')).toBe('évènement-1');
  });

  it('recordIdKey throws INVALID_RECORD when the header is missing, null or empty', () => {
    for (const headers of [[], [{ key: 'message-id', value: null }], [{ key: 'message-id', value: Buffer.alloc(0) }]]) {
      let error: unknown;
      try {
        recordIdKey({ offset: 9, headers }, 'message-id');
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(OnelogError);
      expect((error as OnelogError).code).toBe('INVALID_RECORD');
      expect((error as OnelogError).context).toEqual({ offset: 9, header: 'message-id' });
    }
  });
});

describe('MemoryDedupe', () => {
  it('once runs fn once for a repeated key and claim reports first sightings', async () => {
    const d = new MemoryDedupe();
    let runs = 0;
    expect(await d.once(null, 'k', () => ++runs)).toEqual({ ran: true, value: 1 });
    expect(await d.once(null, 'k', () => ++runs)).toEqual({ ran: false });
    expect(runs).toBe(1);
    expect(await d.claim(null, 'k')).toBe(false);
    expect(await d.claim(null, 'j')).toBe(true);
    expect(await d.claim(null, 'j')).toBe(false);
    expect(await d.once(null, 'j', () => ++runs)).toEqual({ ran: false });
    d.forget('j');
    expect(await d.claim(null, 'j')).toBe(true);
  });

  it('a failing fn leaves no mark, so the redelivery runs it again', async () => {
    const d = new MemoryDedupe();
    await expect(d.once(null, 'k', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(
      d.once(null, 'k', () => {
        throw new Error('sync boom');
      }),
    ).rejects.toThrow('sync boom');
    expect(d.has('k')).toBe(false);
    expect(await d.once(null, 'k', async () => 'ok')).toEqual({ ran: true, value: 'ok' });
  });

  it('a concurrent once on the same key waits for the first: skips if it succeeded, runs if it failed', async () => {
    const d = new MemoryDedupe();
    let release!: () => void;
    const first = d.once(null, 'k', () => new Promise<string>((resolve) => (release = () => resolve('first'))));
    const second = d.once(null, 'k', () => 'second');
    expect(await d.claim(null, 'k')).toBe(false); // in flight counts as marked
    await Promise.resolve();
    release();
    expect(await first).toEqual({ ran: true, value: 'first' });
    expect(await second).toEqual({ ran: false });

    let fail!: (err: Error) => void;
    const failing = d.once(null, 'f', () => new Promise<string>((_, reject) => (fail = reject)));
    const retry = d.once(null, 'f', () => 'retried');
    await Promise.resolve();
    fail(new Error('first failed'));
    await expect(failing).rejects.toThrow('first failed');
    expect(await retry).toEqual({ ran: true, value: 'retried' });
  });

  it('keeps at most maxKeys keys, evicting the least recently used', async () => {
    const d = new MemoryDedupe({ maxKeys: 3 });
    expect(d.maxKeys).toBe(3);
    for (const k of ['a', 'b', 'c']) expect(await d.claim(null, k)).toBe(true);
    expect(await d.claim(null, 'a')).toBe(false); // a is now the most recent
    expect(await d.claim(null, 'd')).toBe(true); // evicts b, the least recent
    expect(d.size).toBe(3);
    expect(d.has('b')).toBe(false);
    expect(d.has('a') && d.has('c') && d.has('d')).toBe(true);
    // The bound holds however many keys go through.
    for (let i = 0; i < 1000; i++) await d.once(null, `k${i}`, () => i);
    expect(d.size).toBe(3);
    expect(['k997', 'k998', 'k999'].every((k) => d.has(k))).toBe(true);
    // An evicted key is processed again: the documented limit of the memory engine.
    expect(await d.once(null, 'a', () => 'again')).toEqual({ ran: true, value: 'again' });
    d.clear();
    expect(d.size).toBe(0);
  });

  it('rejects a maxKeys that is not a positive integer, and defaults to 100000', () => {
    for (const maxKeys of [0, -1, 1.5, Number.NaN]) expect(() => new MemoryDedupe({ maxKeys })).toThrow(OnelogError);
    expect(new MemoryDedupe().maxKeys).toBe(100_000);
  });

  it('stands in wherever a transactional Dedupe is expected', async () => {
    const engine: Dedupe<PoolClient> = new MemoryDedupe();
    expect(await engine.claim(undefined as unknown as PoolClient, 'k')).toBe(true);
  });
});

describe('PostgresDedupe', () => {
  let pool: Pool;
  let dedupe: PostgresDedupe;

  beforeAll(async () => {
    pool = new pg.Pool({ connectionString: URL, max: 4 });
    dedupe = new PostgresDedupe({ pool, table: DEDUPE });
    await dedupe.setup();
    await dedupe.setup();
    await pool.query(`CREATE TABLE ${EFFECTS} (note text)`);
  });

  afterAll(async () => {
    await pool?.query(`DROP TABLE IF EXISTS "${DEDUPE}"`);
    await pool?.query(`DROP TABLE IF EXISTS ${EFFECTS}`);
    await pool?.query(`DROP TABLE IF EXISTS "${OFFSETS}"`);
    await pool?.end();
  });

  /** Runs `work` in BEGIN..COMMIT, or ROLLBACK when it throws. */
  async function inTransaction<T>(work: (tx: PoolClient) => Promise<T>): Promise<T> {
    const tx = await pool.connect();
    try {
      await tx.query('BEGIN');
      try {
        const value = await work(tx);
        await tx.query('COMMIT');
        return value;
      } catch (err) {
        await tx.query('ROLLBACK');
        throw err;
      }
    } finally {
      tx.release();
    }
  }

  /** Waits until a statement on `table` is blocked on a lock (polls; no timer). */
  async function untilLockWait(table: string): Promise<void> {
    for (let i = 0; i < 2000; i++) {
      const { rows } = await pool.query(
        `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND position($1 in query) > 0`,
        [table],
      );
      if (rows.length > 0) return;
      await new Promise((resolve) => setImmediate(resolve));
    }
    throw new Error('no statement ever waited on a lock');
  }

  async function effects(): Promise<string[]> {
    const { rows } = await pool.query<{ note: string }>(`SELECT note FROM ${EFFECTS} ORDER BY note`);
    return rows.map((r) => r.note);
  }

  const effect = (tx: PoolClient, note: string) => async () => {
    await tx.query(`INSERT INTO ${EFFECTS} (note) VALUES ($1)`, [note]);
    return note;
  };

  it('validates the table name', () => {
    expect(() => new PostgresDedupe({ pool, table: 'x"; drop' })).toThrow(OnelogError);
    expect(new PostgresDedupe({ pool }).table).toBe('"onelog_dedupe"');
  });

  it('once runs fn once for a repeated key across transactions', async () => {
    const first = await inTransaction((tx) => dedupe.once(tx, 'once/0/1', effect(tx, 'once-1')));
    const again = await inTransaction((tx) => dedupe.once(tx, 'once/0/1', effect(tx, 'once-2')));
    expect(first).toEqual({ ran: true, value: 'once-1' });
    expect(again).toEqual({ ran: false });
    expect((await effects()).filter((n) => n.startsWith('once'))).toEqual(['once-1']);
    expect(await inTransaction((tx) => dedupe.claim(tx, 'once/0/1'))).toBe(false);
    expect(await inTransaction((tx) => dedupe.claim(tx, 'once/0/2'))).toBe(true);
  });

  it('the mark rolls back with the transaction, so the redelivery runs fn again', async () => {
    await expect(
      inTransaction(async (tx) => {
        await dedupe.once(tx, 'rb', effect(tx, 'rb-1'));
        throw new Error('later failure in the same transaction');
      }),
    ).rejects.toThrow('later failure');
    await expect(
      inTransaction((tx) =>
        dedupe.once(tx, 'rb', async () => {
          await effect(tx, 'rb-2')();
          throw new Error('fn failed');
        }),
      ),
    ).rejects.toThrow('fn failed');
    const { rows } = await pool.query(`SELECT count(*)::int AS n FROM "${DEDUPE}" WHERE key = 'rb'`);
    expect(rows[0].n).toBe(0);
    expect(await inTransaction((tx) => dedupe.once(tx, 'rb', effect(tx, 'rb-3')))).toEqual({ ran: true, value: 'rb-3' });
    expect((await effects()).filter((n) => n.startsWith('rb'))).toEqual(['rb-3']);
  });

  it('a second transaction marking the same key waits for the first and follows its outcome', async () => {
    for (const outcome of ['commit', 'rollback'] as const) {
      const key = `wait-${outcome}`;
      const first = await pool.connect();
      const second = await pool.connect();
      try {
        await first.query('BEGIN');
        await second.query('BEGIN');
        expect(await dedupe.claim(first, key)).toBe(true);
        const pending = dedupe.claim(second, key);
        await untilLockWait(DEDUPE);
        await first.query(outcome === 'commit' ? 'COMMIT' : 'ROLLBACK');
        expect(await pending).toBe(outcome === 'rollback');
        await second.query('COMMIT');
      } finally {
        first.release();
        second.release();
      }
    }
  });

  it('with PostgresOffsetStore and a record id: a producer-retry duplicate at a new offset is skipped', async () => {
    const offsets = new PostgresOffsetStore({ pool, table: OFFSETS });
    await offsets.setup();
    await offsets.claim('g', 'm', 'orders', 0);
    const messages = [0, 1, 2].map((offset) => ({
      offset,
      timestamp: 0,
      key: null,
      value: null,
      headers: [{ key: 'id', value: Buffer.from(offset === 2 ? 'order-0' : `order-${offset}`) }],
    }));
    const results = [];
    for (const message of messages) {
      results.push(
        await offsets.transaction('g', 'm', { topic: 'orders', partition: 0, offset: message.offset + 1 }, (tx) =>
          dedupe.once(tx, `orders/${recordIdKey(message, 'id')}`, effect(tx, `order-at-${message.offset}`)),
        ),
      );
    }
    expect(results.map((r) => r.ran)).toEqual([true, true, false]);
    expect((await effects()).filter((n) => n.startsWith('order'))).toEqual(['order-at-0', 'order-at-1']);
    expect(await new PostgresOffsetStore({ pool, table: OFFSETS }).claim('g', 'other', 'orders', 0)).toBe(3);
  });

  it('pruneOlderThan deletes old marks only', async () => {
    await pool.query(`INSERT INTO "${DEDUPE}" (key, seen_at) VALUES ('old-1', now() - interval '2 hours'), ('old-2', now() - interval '2 hours')`);
    await inTransaction((tx) => dedupe.claim(tx, 'fresh'));
    expect(await dedupe.pruneOlderThan(60 * 60 * 1000)).toBe(2);
    expect(await inTransaction((tx) => dedupe.claim(tx, 'old-1'))).toBe(true);
    expect(await inTransaction((tx) => dedupe.claim(tx, 'fresh'))).toBe(false);
    await expect(dedupe.pruneOlderThan(-1)).rejects.toThrow(OnelogError);
  });
});

/**
 * The PostgreSQL engine of {@link Dedupe}: handled keys kept in a table of the user's database, marked in
 * the same transaction as the handler's writes. See `../dedupe.ts` for when to use which tool.
 */
import type { ClientBase, Pool } from 'pg';
import { OnelogError } from '../../protocol/errors.js';
import type { Dedupe, OnceResult } from '../dedupe.js';
import { quoteTableName } from './postgres-offset-store.js';

/** Options of {@link PostgresDedupe}. */
export interface PostgresDedupeOptions {
  /** The user's pool, used by {@link PostgresDedupe.setup} and {@link PostgresDedupe.pruneOlderThan} only. */
  pool: Pool;
  /**
   * Table of handled keys: a PostgreSQL identifier (`[A-Za-z_][A-Za-z0-9_]*`, at most 63 characters),
   * optionally schema-qualified. Used quoted, so it is case-sensitive. Give each consumer group its own
   * table, or put the group in the keys.
   * @default 'onelog_dedupe'
   */
  table?: string;
}

/**
 * Handled keys in PostgreSQL, table `(key text primary key, seen_at timestamptz not null default now())`.
 * {@link claim} and {@link once} insert the key with `INSERT ... ON CONFLICT DO NOTHING` on the caller's
 * client, inside the caller's transaction: the mark commits with the handler's writes or rolls back with
 * them, so a record whose effect committed is skipped forever after, and one whose transaction failed is
 * processed again. A second transaction marking the same key meanwhile waits for the first to end, then
 * sees the key as taken (first committed) or takes it (first rolled back).
 *
 * `tx` must be a client inside `BEGIN` (for instance the one `PostgresOffsetStore.transaction` hands to its
 * work): on a client in autocommit mode the mark commits at once, alone, and the guarantee is gone.
 * Keys stay until {@link pruneOlderThan} removes them.
 *
 * ```ts
 * await offsets.transaction(groupId, memberId, { topic, partition, offset: message.offset + 1 }, (tx) =>
 *   dedupe.once(tx, recordIdKey(message, 'message-id'), () => tx.query('insert into ledger ...')));
 * ```
 */
export class PostgresDedupe implements Dedupe<ClientBase> {
  /** The quoted table name used in SQL. */
  readonly table: string;
  private readonly pool: Pool;

  /** @throws OnelogError `INVALID_CONFIG` when `table` is not a valid identifier */
  constructor(options: PostgresDedupeOptions) {
    this.pool = options.pool;
    this.table = quoteTableName(options.table ?? 'onelog_dedupe');
  }

  /**
   * Creates the table, and an index on `seen_at` for {@link pruneOlderThan}, if missing. Idempotent.
   */
  async setup(): Promise<void> {
    await this.pool.query(`CREATE TABLE IF NOT EXISTS ${this.table} (key text PRIMARY KEY, seen_at timestamptz NOT NULL DEFAULT now())`);
    const index = `"${this.table.replace(/"/g, '').replace('.', '_').slice(0, 50)}_seen_at_idx"`;
    await this.pool.query(`CREATE INDEX IF NOT EXISTS ${index} ON ${this.table} (seen_at)`);
  }

  /**
   * Marks `key` inside the caller's transaction `tx`.
   * @returns true when this transaction marked it (go ahead with the effect, in the same transaction), false
   *   when it was marked by a committed transaction before (skip)
   * @throws `pg`'s errors (the transaction is then aborted: roll it back)
   */
  async claim(tx: ClientBase, key: string): Promise<boolean> {
    const result = await tx.query(`INSERT INTO ${this.table} (key, seen_at) VALUES ($1, now()) ON CONFLICT (key) DO NOTHING`, [key]);
    return result.rowCount === 1;
  }

  /**
   * Runs `fn` (which should write with `tx`) unless `key` was handled, marking it in `tx`. When `fn` throws,
   * the error goes through, and the caller must roll `tx` back, which undoes the mark with the effect.
   */
  async once<T>(tx: ClientBase, key: string, fn: () => Promise<T> | T): Promise<OnceResult<T>> {
    if (!(await this.claim(tx, key))) return { ran: false };
    return { ran: true, value: await fn() };
  }

  /**
   * Deletes keys marked more than `ms` milliseconds ago (by the database's clock, `now()`). A duplicate that
   * arrives after its key was pruned is processed again: keep keys longer than duplicates can arrive (at
   * least the topic's retention when replays from the start are possible).
   * @returns how many keys were deleted
   * @throws OnelogError `INVALID_CONFIG` when `ms` is not a non-negative finite number
   */
  async pruneOlderThan(ms: number): Promise<number> {
    if (!Number.isFinite(ms) || ms < 0) {
      throw new OnelogError('INVALID_CONFIG', `pruneOlderThan(${ms}): ms must be a non-negative finite number`, { ms });
    }
    const result = await this.pool.query(`DELETE FROM ${this.table} WHERE seen_at < now() - $1 * interval '1 millisecond'`, [ms]);
    return result.rowCount ?? 0;
  }
}

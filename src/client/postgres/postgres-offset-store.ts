/**
 * Exactly-once effect, way (a) of DESIGN.md "Delivery semantics": a consumer's positions kept in the user's
 * own PostgreSQL, stored in the same transaction as the handler's writes.
 *
 * Only `pg`'s types are imported here: the caller brings the `pg.Pool`, so this module loads nothing at run
 * time beyond onelog's error registry.
 */
import type { Pool, PoolClient } from 'pg';
import { OnelogError } from '../../protocol/errors.js';
import type { ExternalOffsetStore, ExternalPosition } from '../../member/external-offsets.js';

/** Options of {@link PostgresOffsetStore}. */
export interface PostgresOffsetStoreOptions {
  /**
   * The user's pool. The store takes one client from it per {@link PostgresOffsetStore.transaction} (held
   * for the whole transaction) and runs {@link PostgresOffsetStore.claim} and `setup()` as single
   * statements on the pool. The store never ends the pool.
   */
  pool: Pool;
  /**
   * Table holding the positions: a PostgreSQL identifier (`[A-Za-z_][A-Za-z0-9_]*`, at most 63 characters),
   * optionally schema-qualified (`schema.table`). Used quoted, so it is case-sensitive.
   * @default 'onelog_offsets'
   */
  table?: string;
}

/** One partition's ownership as this store instance took it. */
interface Claim {
  memberId: string;
  /** `owner_epoch` after this instance's claim; a decimal string, as `pg` returns `bigint`. */
  epoch: string;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/**
 * Checks a table name (optionally `schema.table`) and quotes it for SQL.
 * @internal shared with the PostgreSQL dedupe engine; not part of the public API
 * @throws OnelogError `INVALID_CONFIG` when a part is not a plain identifier
 */
export function quoteTableName(table: string): string {
  const parts = typeof table === 'string' ? table.split('.') : [];
  if (parts.length < 1 || parts.length > 2 || !parts.every((p) => IDENTIFIER.test(p))) {
    throw new OnelogError(
      'INVALID_CONFIG',
      `invalid table name ${JSON.stringify(table)}: use an identifier of [A-Za-z_][A-Za-z0-9_]* (at most 63 characters), optionally as schema.table`,
      { table },
    );
  }
  return parts.map((p) => `"${p}"`).join('.');
}

/**
 * Positions of consumer groups kept in the user's PostgreSQL, one row per (group, topic, partition), for an
 * exactly-once effect on writes into that same database: the handler's writes and the partition's next
 * offset commit in one transaction, so after a crash the consumer resumes exactly after the last record
 * whose effect committed.
 *
 * Table (made by {@link setup}):
 * `(group_id text, topic text, partition int, next_offset bigint, owner_member_id text,
 *   owner_epoch bigint not null default 0, updated_at timestamptz, primary key (group_id, topic, partition))`.
 * `next_offset` is the NEXT offset to read, and is null while the group has claimed the partition but never
 * stored a position (that is how {@link claim} tells "never stored" apart from offset 0). `updated_at` is
 * when the position was last stored.
 *
 * **Fencing.** Each {@link claim} bumps `owner_epoch` and names the new owner; this instance remembers the
 * epoch it got. {@link transaction} stores the position with
 * `UPDATE ... WHERE (group_id, topic, partition) = (...) AND owner_member_id = $member AND owner_epoch = $epoch`,
 * as the last statement of the transaction, and commits only if that updated one row. Under PostgreSQL's
 * default READ COMMITTED isolation this fences a zombie (a member that lost the partition but does not know
 * yet) whichever way the race goes:
 * - the new owner's claim commits first: the zombie's UPDATE sees the committed row (READ COMMITTED
 *   re-checks the WHERE clause against the newest committed version, waiting for the claim's row lock if
 *   needed), its epoch no longer matches, 0 rows: the zombie rolls back, its writes included, and gets
 *   `NOT_ASSIGNED`;
 * - the zombie's UPDATE runs first: it holds the row lock until it commits, the claim's upsert waits for
 *   that lock and then reads the committed row, so the new owner starts from the zombie's stored position
 *   and never re-applies what the zombie committed.
 * Either way no record's effect is lost or applied twice. (The fencing holds at REPEATABLE READ or
 * SERIALIZABLE too: there the zombie's UPDATE fails with a serialization error instead, and rolls back.)
 *
 * Use this when the handler's effect is writes into this same database. Effects elsewhere (HTTP calls,
 * e-mail, another database) are not covered: for those make the handler idempotent (see `Dedupe`).
 *
 * ```ts
 * const store = new PostgresOffsetStore({ pool });
 * await store.setup();
 * const from = await store.claim('billing', memberId, 'payments', 0); // null: start at onelog's position
 * await store.transaction('billing', memberId, { topic: 'payments', partition: 0, offset: message.offset + 1 },
 *   (tx) => tx.query('insert into ledger ...'));
 * ```
 */
export class PostgresOffsetStore implements ExternalOffsetStore<PoolClient> {
  /** The quoted table name used in SQL. */
  readonly table: string;
  private readonly pool: Pool;
  /** (groupId, topic, partition) -> this instance's claim. One entry per claimed partition. */
  private readonly claims = new Map<string, Claim>();

  /** @throws OnelogError `INVALID_CONFIG` when `table` is not a valid identifier */
  constructor(options: PostgresOffsetStoreOptions) {
    this.pool = options.pool;
    this.table = quoteTableName(options.table ?? 'onelog_offsets');
  }

  /** Creates the table if it is missing. Idempotent; safe to run from every process at start-up. */
  async setup(): Promise<void> {
    await this.pool.query(
      `CREATE TABLE IF NOT EXISTS ${this.table} (
        group_id text NOT NULL,
        topic text NOT NULL,
        partition int NOT NULL,
        next_offset bigint,
        owner_member_id text,
        owner_epoch bigint NOT NULL DEFAULT 0,
        updated_at timestamptz,
        PRIMARY KEY (group_id, topic, partition)
      )`,
    );
  }

  /**
   * Takes ownership of a partition for `memberId`, in one statement: upserts the row, names `memberId` the
   * owner and bumps `owner_epoch`, fencing every earlier owner (their later {@link transaction}s fail with
   * `NOT_ASSIGNED` and roll back). If an earlier owner's transaction holds the row, this waits for it to end
   * and returns the position it committed. Call it on every assignment, before reading the partition.
   * @returns the stored next offset to read, or null when the group never stored one for the partition
   *   (then start from onelog's position)
   * @throws OnelogError `INVALID_REQUEST` for an empty id or a partition outside 0..2^31-1; `pg`'s errors
   *   when the database fails
   */
  async claim(groupId: string, memberId: string, topic: string, partition: number): Promise<number | null> {
    checkKey(groupId, memberId, topic, partition);
    const { rows } = await this.pool.query<{ next_offset: string | null; owner_epoch: string }>(
      `INSERT INTO ${this.table} AS o (group_id, topic, partition, next_offset, owner_member_id, owner_epoch)
       VALUES ($1, $2, $3, NULL, $4, 1)
       ON CONFLICT (group_id, topic, partition)
       DO UPDATE SET owner_member_id = EXCLUDED.owner_member_id, owner_epoch = o.owner_epoch + 1
       RETURNING next_offset, owner_epoch`,
      [groupId, topic, partition, memberId],
    );
    const row = rows[0]!;
    this.claims.set(claimKey(groupId, topic, partition), { memberId, epoch: row.owner_epoch });
    return row.next_offset === null ? null : toOffset(row.next_offset, { groupId, topic, partition });
  }

  /**
   * Runs `work` inside one transaction (`BEGIN` on a client of the pool), then stores `position` with an
   * UPDATE fenced by this instance's claim, and commits. `work` gets the client to write with; it must not
   * end the transaction itself, and it must let errors through (a statement error it swallows leaves the
   * transaction aborted, and the store's UPDATE then fails and rolls everything back). The client goes
   * back to the pool in every case.
   * @param position the partition and its NEXT offset to read (last processed + 1)
   * @returns what `work` returned, once committed
   * @throws OnelogError `NOT_ASSIGNED` (nothing written, the database not touched) when this instance never
   *   claimed the partition for `memberId`; `NOT_ASSIGNED` (rolled back) when another member claimed it since;
   *   `INVALID_OFFSET` for an offset that is not an integer in 0..2^53-1; whatever `work` throws (rolled back);
   *   `pg`'s errors when the database fails (rolled back, or unknown if the connection broke during COMMIT)
   */
  async transaction<T>(
    groupId: string,
    memberId: string,
    position: ExternalPosition,
    work: (tx: PoolClient) => Promise<T>,
  ): Promise<T> {
    const { topic, partition, offset } = position;
    const where = { groupId, memberId, topic, partition };
    if (!Number.isSafeInteger(offset) || offset < 0) {
      throw new OnelogError('INVALID_OFFSET', `offset ${offset} is not an integer in 0..2^53-1`, { ...where, offset });
    }
    const key = claimKey(groupId, topic, partition);
    const claim = this.claims.get(key);
    if (!claim || claim.memberId !== memberId) {
      throw new OnelogError(
        'NOT_ASSIGNED',
        `partition ${topic}/${partition} of group ${groupId} was not claimed for member ${memberId} by this store: call claim() on assignment`,
        where,
      );
    }

    const client = await this.pool.connect();
    // Set when the connection may be unusable or still inside a transaction: the pool then destroys it.
    let discard: Error | undefined;
    try {
      try {
        await client.query('BEGIN');
      } catch (err) {
        discard = asError(err);
        throw err;
      }
      try {
        const result = await work(client);
        const updated = await client.query(
          `UPDATE ${this.table} SET next_offset = $1, updated_at = now()
           WHERE group_id = $2 AND topic = $3 AND partition = $4 AND owner_member_id = $5 AND owner_epoch = $6`,
          [offset, groupId, topic, partition, memberId, claim.epoch],
        );
        if (updated.rowCount !== 1) {
          // Fenced for good: forget the claim (unless this instance re-claimed meanwhile).
          if (this.claims.get(key) === claim) this.claims.delete(key);
          throw new OnelogError(
            'NOT_ASSIGNED',
            `partition ${topic}/${partition} of group ${groupId} was claimed by another member since ${memberId} claimed it: transaction rolled back`,
            where,
          );
        }
        await client.query('COMMIT');
        return result;
      } catch (err) {
        try {
          await client.query('ROLLBACK');
        } catch (rollbackError) {
          discard = asError(rollbackError);
        }
        throw err;
      }
    } finally {
      client.release(discard);
    }
  }
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

function claimKey(groupId: string, topic: string, partition: number): string {
  return `${groupId}\u0000${topic}\u0000${partition}`;
}

function checkKey(groupId: string, memberId: string, topic: string, partition: number): void {
  for (const [name, value] of [['groupId', groupId], ['memberId', memberId], ['topic', topic]] as const) {
    if (typeof value !== 'string' || value.length === 0) {
      throw new OnelogError('INVALID_REQUEST', `${name} must be a non-empty string`, { groupId, memberId, topic, partition });
    }
  }
  if (!Number.isInteger(partition) || partition < 0 || partition > 0x7fffffff) {
    throw new OnelogError('INVALID_REQUEST', `partition ${partition} is not an integer in 0..2^31-1`, { groupId, memberId, topic, partition });
  }
}

function toOffset(text: string, context: Record<string, unknown>): number {
  const offset = Number(text);
  if (!Number.isSafeInteger(offset) || offset < 0) {
    throw new OnelogError('INVALID_OFFSET', `stored next_offset ${text} is not an integer in 0..2^53-1`, { ...context, offset: text });
  }
  return offset;
}

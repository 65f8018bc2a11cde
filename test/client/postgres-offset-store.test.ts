/**
 * PostgresOffsetStore against the real PostgreSQL (127.0.0.1:5432, database `test`, or ONELOG_TEST_PG_URL):
 * claims, the position stored atomically with the handler's write, and fencing of a zombie owner, in
 * sequence and in the two orders a race can take.
 */
import pg from 'pg';
import type { Pool, PoolClient } from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PostgresOffsetStore } from '../../src/client/postgres/index.js';
import { OnelogError } from '../../src/protocol/errors.js';

const URL = process.env.ONELOG_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const RUN = `t${process.pid}_${Date.now()}`;
const OFFSETS = `onelog_offsets_${RUN}`;
const EFFECTS = `onelog_effects_${RUN}`;

let pool: Pool;
/** A second pool, as another process would have. */
let otherPool: Pool;
let groupSeq = 0;
let groupId = '';

beforeAll(async () => {
  pool = new pg.Pool({ connectionString: URL, max: 4 });
  otherPool = new pg.Pool({ connectionString: URL, max: 4 });
  await new PostgresOffsetStore({ pool, table: OFFSETS }).setup();
  await pool.query(`CREATE TABLE ${EFFECTS} (group_id text, note text)`);
});

afterAll(async () => {
  await pool?.query(`DROP TABLE IF EXISTS "${OFFSETS}"`);
  await pool?.query(`DROP TABLE IF EXISTS ${EFFECTS}`);
  await pool?.end();
  await otherPool?.end();
});

beforeEach(() => {
  groupId = `g${++groupSeq}`;
});

function store(p: Pool = pool): PostgresOffsetStore {
  return new PostgresOffsetStore({ pool: p, table: OFFSETS });
}

async function effects(): Promise<string[]> {
  const { rows } = await pool.query<{ note: string }>(`SELECT note FROM ${EFFECTS} WHERE group_id = $1 ORDER BY note`, [groupId]);
  return rows.map((r) => r.note);
}

function write(note: string) {
  return async (tx: PoolClient) => {
    await tx.query(`INSERT INTO ${EFFECTS} (group_id, note) VALUES ($1, $2)`, [groupId, note]);
    return note;
  };
}

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
    return undefined;
  } catch (err) {
    if (err instanceof OnelogError) return err.code;
    throw err;
  }
}

function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

/** Waits until a statement on this run's table is blocked on a lock (no sleeping on a timer: polls). */
async function untilLockWait(): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    const { rows } = await pool.query(
      `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND position($1 in query) > 0`,
      [OFFSETS],
    );
    if (rows.length > 0) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error('no backend ever waited on a lock');
}

describe('PostgresOffsetStore', () => {
  it('setup is idempotent and the table name is validated', async () => {
    await store().setup();
    expect(() => new PostgresOffsetStore({ pool, table: 'bad name; drop table x' })).toThrow(OnelogError);
    expect(() => new PostgresOffsetStore({ pool, table: 'a.b.c' })).toThrow(/invalid table name/);
    expect(new PostgresOffsetStore({ pool }).table).toBe('"onelog_offsets"');
    expect(new PostgresOffsetStore({ pool, table: 'app.offsets' }).table).toBe('"app"."offsets"');
  });

  it('claim returns null for a partition never stored, then the stored next offset', async () => {
    const s = store();
    expect(await s.claim(groupId, 'A', 'payments', 0)).toBeNull();
    // A claim that never stored leaves "never stored", not offset 0, for the next owner.
    expect(await store().claim(groupId, 'B', 'payments', 0)).toBeNull();
    expect(await s.claim(groupId, 'A', 'payments', 0)).toBeNull();
    await s.transaction(groupId, 'A', { topic: 'payments', partition: 0, offset: 0 }, async () => undefined);
    expect(await store().claim(groupId, 'B', 'payments', 0)).toBe(0);
    const s2 = store();
    expect(await s2.claim(groupId, 'C', 'payments', 0)).toBe(0);
    await s2.transaction(groupId, 'C', { topic: 'payments', partition: 0, offset: 42 }, async () => undefined);
    expect(await store().claim(groupId, 'D', 'payments', 0)).toBe(42);
    // Other partitions and groups are separate rows.
    expect(await store().claim(groupId, 'D', 'payments', 1)).toBeNull();
    expect(await store().claim(`${groupId}x`, 'D', 'payments', 0)).toBeNull();
  });

  it('transaction stores the offset together with the handler write and returns its value', async () => {
    const s = store();
    await s.claim(groupId, 'A', 'payments', 0);
    expect(await s.transaction(groupId, 'A', { topic: 'payments', partition: 0, offset: 1 }, write('r0'))).toBe('r0');
    expect(await s.transaction(groupId, 'A', { topic: 'payments', partition: 0, offset: 2 }, write('r1'))).toBe('r1');
    expect(await effects()).toEqual(['r0', 'r1']);
    expect(await store().claim(groupId, 'B', 'payments', 0)).toBe(2);
    const { rows } = await pool.query(`SELECT updated_at FROM "${OFFSETS}" WHERE group_id = $1`, [groupId]);
    expect(rows[0].updated_at).toBeInstanceOf(Date);
  });

  it('a handler that throws leaves neither its write nor the offset', async () => {
    const s = store();
    await s.claim(groupId, 'A', 'payments', 0);
    await s.transaction(groupId, 'A', { topic: 'payments', partition: 0, offset: 5 }, write('kept'));
    const boom = new Error('handler failed');
    await expect(
      s.transaction(groupId, 'A', { topic: 'payments', partition: 0, offset: 6 }, async (tx) => {
        await write('lost')(tx);
        throw boom;
      }),
    ).rejects.toBe(boom);
    // A failing statement inside the handler: the database error comes through, all rolled back.
    await expect(
      s.transaction(groupId, 'A', { topic: 'payments', partition: 0, offset: 6 }, async (tx) => {
        await write('lost too')(tx);
        await tx.query('SELECT * FROM no_such_table_onelog');
      }),
    ).rejects.toThrow(/no_such_table_onelog/);
    expect(await effects()).toEqual(['kept']);
    expect(await store().claim(groupId, 'B', 'payments', 0)).toBe(5);
  });

  it('releases its client in every outcome (a pool of one keeps working)', async () => {
    const single = new pg.Pool({ connectionString: URL, max: 1 });
    try {
      const s = store(single);
      await s.claim(groupId, 'A', 'payments', 0);
      await s.transaction(groupId, 'A', { topic: 'payments', partition: 0, offset: 1 }, async () => 1);
      await expect(s.transaction(groupId, 'A', { topic: 'payments', partition: 0, offset: 2 }, async () => Promise.reject(new Error('x')))).rejects.toThrow('x');
      await store().claim(groupId, 'B', 'payments', 0);
      expect(await codeOf(s.transaction(groupId, 'A', { topic: 'payments', partition: 0, offset: 3 }, async () => 1))).toBe('NOT_ASSIGNED');
      expect(single.idleCount + single.waitingCount).toBe(1);
      expect((await single.query('SELECT 1 AS one')).rows[0].one).toBe(1);
    } finally {
      await single.end();
    }
  });

  it('fencing: after B claims, A\'s transaction fails with NOT_ASSIGNED and its write is rolled back', async () => {
    const a = store(pool);
    const b = store(otherPool);
    expect(await a.claim(groupId, 'A', 'payments', 0)).toBeNull();
    await a.transaction(groupId, 'A', { topic: 'payments', partition: 0, offset: 10 }, write('a1'));
    expect(await b.claim(groupId, 'B', 'payments', 0)).toBe(10);

    let error: unknown;
    try {
      await a.transaction(groupId, 'A', { topic: 'payments', partition: 0, offset: 11 }, write('a2'));
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(OnelogError);
    expect((error as OnelogError).code).toBe('NOT_ASSIGNED');
    expect((error as OnelogError).context).toEqual({ groupId, memberId: 'A', topic: 'payments', partition: 0 });
    expect(await effects()).toEqual(['a1']);

    await b.transaction(groupId, 'B', { topic: 'payments', partition: 0, offset: 11 }, write('b1'));
    expect(await effects()).toEqual(['a1', 'b1']);
    // A stays fenced until it claims again; claiming again fences B in turn.
    expect(await codeOf(a.transaction(groupId, 'A', { topic: 'payments', partition: 0, offset: 12 }, write('a3')))).toBe('NOT_ASSIGNED');
    expect(await a.claim(groupId, 'A', 'payments', 0)).toBe(11);
    expect(await codeOf(b.transaction(groupId, 'B', { topic: 'payments', partition: 0, offset: 12 }, write('b2')))).toBe('NOT_ASSIGNED');
    expect(await effects()).toEqual(['a1', 'b1']);
  });

  it('the same member reclaiming (a new epoch) fences its own earlier claim held by another store instance', async () => {
    const old = store();
    await old.claim(groupId, 'A', 'payments', 0);
    await store().claim(groupId, 'A', 'payments', 0);
    expect(await codeOf(old.transaction(groupId, 'A', { topic: 'payments', partition: 0, offset: 1 }, write('stale')))).toBe('NOT_ASSIGNED');
    expect(await effects()).toEqual([]);
  });

  it('a partition never claimed by this instance is NOT_ASSIGNED without touching the database', async () => {
    let touched = 0;
    const untouchable = {
      connect: async () => {
        touched++;
        throw new Error('connect must not be called');
      },
      query: async () => {
        touched++;
        throw new Error('query must not be called');
      },
    } as unknown as Pool;
    const s = new PostgresOffsetStore({ pool: untouchable });
    expect(await codeOf(s.transaction(groupId, 'A', { topic: 'payments', partition: 0, offset: 1 }, async () => 1))).toBe('NOT_ASSIGNED');
    expect(touched).toBe(0);

    // Claimed for another member of the same group: also refused locally.
    const real = store();
    await real.claim(groupId, 'A', 'payments', 0);
    expect(await codeOf(real.transaction(groupId, 'B', { topic: 'payments', partition: 0, offset: 1 }, write('x')))).toBe('NOT_ASSIGNED');
    expect(await effects()).toEqual([]);
  });

  it('checks offsets, partitions and ids', async () => {
    const s = store();
    await s.claim(groupId, 'A', 'payments', 0);
    for (const offset of [-1, 1.5, Number.NaN, 2 ** 53]) {
      expect(await codeOf(s.transaction(groupId, 'A', { topic: 'payments', partition: 0, offset }, async () => 1))).toBe('INVALID_OFFSET');
    }
    expect(await codeOf(s.claim(groupId, 'A', 'payments', -1))).toBe('INVALID_REQUEST');
    expect(await codeOf(s.claim('', 'A', 'payments', 0))).toBe('INVALID_REQUEST');
    expect(await codeOf(s.claim(groupId, '', 'payments', 0))).toBe('INVALID_REQUEST');
  });

  describe('races between a zombie A and a new owner B', () => {
    it('B claims while A\'s transaction is open, before its UPDATE: A ends fenced, B starts from the last committed offset', async () => {
      const a = store(pool);
      const b = store(otherPool);
      await a.claim(groupId, 'A', 'payments', 0);
      await a.transaction(groupId, 'A', { topic: 'payments', partition: 0, offset: 3 }, write('a-committed'));

      const inWork = gate();
      const proceed = gate();
      const zombie = a.transaction(groupId, 'A', { topic: 'payments', partition: 0, offset: 4 }, async (tx) => {
        await write('a-zombie')(tx);
        inWork.open();
        await proceed.wait;
      });
      await inWork.wait;
      expect(await b.claim(groupId, 'B', 'payments', 0)).toBe(3);
      proceed.open();
      expect(await codeOf(zombie)).toBe('NOT_ASSIGNED');
      expect(await effects()).toEqual(['a-committed']);
      // B redoes offset 3 exactly once.
      await b.transaction(groupId, 'B', { topic: 'payments', partition: 0, offset: 4 }, write('b-redo'));
      expect(await effects()).toEqual(['a-committed', 'b-redo']);
    });

    it('A has stored its offset and holds the row lock when B claims: B waits and sees A\'s committed offset', async () => {
      // A pool whose clients hold COMMIT until the gate opens: A's UPDATE has run, its transaction is open.
      const commitGate = gate();
      const reachedCommit = gate();
      const gated = {
        query: pool.query.bind(pool),
        connect: async () => {
          const client = await pool.connect();
          const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
          const patched = async (...args: unknown[]) => {
            if (args[0] === 'COMMIT') {
              reachedCommit.open();
              await commitGate.wait;
            }
            return query(...args);
          };
          return Object.assign(client, { query: patched });
        },
      } as unknown as Pool;

      const a = store(gated);
      const b = store(otherPool);
      await a.claim(groupId, 'A', 'payments', 0);
      const pending = a.transaction(groupId, 'A', { topic: 'payments', partition: 0, offset: 8 }, write('a8'));
      await reachedCommit.wait;
      let bSaw: number | null | undefined;
      const claimed = b.claim(groupId, 'B', 'payments', 0).then((v) => (bSaw = v));
      await untilLockWait();
      expect(bSaw).toBeUndefined(); // B is blocked on A's row lock
      commitGate.open();
      expect(await pending).toBe('a8');
      await claimed;
      expect(bSaw).toBe(8);
      expect(await effects()).toEqual(['a8']);
      // Now A is fenced, and B continues after A's record.
      expect(await codeOf(a.transaction(groupId, 'A', { topic: 'payments', partition: 0, offset: 9 }, write('a9')))).toBe('NOT_ASSIGNED');
      await b.transaction(groupId, 'B', { topic: 'payments', partition: 0, offset: 9 }, write('b8'));
      expect(await effects()).toEqual(['a8', 'b8']);
    });

    it('unsynchronised races: every record is applied exactly once, whoever wins', async () => {
      for (let round = 0; round < 30; round++) {
        groupId = `race${groupSeq}_${round}`;
        const a = store(pool);
        const b = store(otherPool);
        await a.claim(groupId, 'A', 'payments', 0);
        await a.transaction(groupId, 'A', { topic: 'payments', partition: 0, offset: 1 }, write('0'));
        // A processes record 1 while B takes over; B then processes from where it claimed, up to record 2.
        const zombie = a
          .transaction(groupId, 'A', { topic: 'payments', partition: 0, offset: 2 }, async (tx) => {
            for (let i = 0; i < round % 4; i++) await tx.query('SELECT 1');
            return write('1')(tx);
          })
          .then(
            () => 'committed',
            (err: unknown) => {
              if (err instanceof OnelogError && err.code === 'NOT_ASSIGNED') return 'fenced';
              throw err;
            },
          );
        const bFrom = (await b.claim(groupId, 'B', 'payments', 0))!;
        for (let offset = bFrom; offset <= 2; offset++) {
          await b.transaction(groupId, 'B', { topic: 'payments', partition: 0, offset: offset + 1 }, write(String(offset)));
        }
        const outcome = await zombie;
        expect(bFrom === 2 ? 'committed' : 'fenced', `round ${round}`).toBe(outcome);
        expect(await effects(), `round ${round}`).toEqual(['0', '1', '2']);
      }
    });
  });
});

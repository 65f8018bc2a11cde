/**
 * Named leases in PostgreSQL, for what one broker of a cluster at a time may do (docs/cluster.md): a group's
 * coordination (`group:<groupId>`) and each background job (`job:merge`, `job:sweep`, ...). A lease has a
 * holder, an epoch raised at every change of holder (the fencing token of what the holder writes) and an
 * expiry by the database's clock; its holder renews it at the same epoch. Partition leases live beside the
 * partition's offsets instead (postgres-sequencer.ts), so that the commit checks them in the same row.
 */
import type { Pool } from 'pg';
import { checkTablePrefix, createTables, query } from '../common/postgres.js';
import { OnelogError } from '../protocol/errors.js';

/** Options of {@link NamedLeases.open}. */
export interface NamedLeasesOptions {
  pool: Pool;
  /** This broker's id: who holds what it acquires. */
  brokerId: number;
  /** @default 'onelog_' */
  tablePrefix?: string;
}

/** A lease as its holder has it. */
export interface NamedLease {
  name: string;
  brokerId: number;
  epoch: number;
  /** ms since the epoch, database time */
  expiresAt: number;
}

interface LeaseRow {
  name: string;
  holder_broker_id: number;
  epoch: string;
  expires_ms: string;
}

const toLease = (r: LeaseRow): NamedLease => ({ name: r.name, brokerId: r.holder_broker_id, epoch: Number(r.epoch), expiresAt: Number(r.expires_ms) });

export class NamedLeases {
  private readonly table: string;

  private constructor(private readonly pool: Pool, readonly brokerId: number, prefix: string) {
    this.table = `${prefix}leases`;
  }

  /** Creates the table if missing. @throws OnelogError `INVALID_CONFIG`, `STORAGE_ERROR` */
  static async open(options: NamedLeasesOptions): Promise<NamedLeases> {
    const leases = new NamedLeases(options.pool, options.brokerId, checkTablePrefix(options.tablePrefix ?? 'onelog_'));
    await createTables(options.pool, `leases ${leases.table}`, [`CREATE TABLE IF NOT EXISTS ${leases.table} (
      name text COLLATE "C" PRIMARY KEY, holder_broker_id integer, epoch bigint NOT NULL, expires_at timestamptz)`]);
    return leases;
  }

  /**
   * Takes the lease if nobody holds it or its lease expired (at a new epoch), or renews it if this broker holds
   * it (same epoch), for `durationMs` from now by the database's clock.
   * @returns the lease, or null when another broker holds it
   * @throws OnelogError `INVALID_REQUEST` for a duration below 1 ms; `STORAGE_ERROR`
   */
  async acquire(name: string, durationMs: number): Promise<NamedLease | null> {
    if (!Number.isInteger(durationMs) || durationMs < 1) {
      throw new OnelogError('INVALID_REQUEST', `a lease lasts a whole number of ms, at least 1, got ${durationMs}`, { name });
    }
    const { rows: [row] } = await this.query<LeaseRow>('acquire', `INSERT INTO ${this.table} AS l (name, holder_broker_id, epoch, expires_at)
        VALUES ($1, $2, 1, clock_timestamp() + $3::int * interval '1 millisecond')
      ON CONFLICT (name) DO UPDATE SET
        epoch = CASE WHEN l.holder_broker_id = $2 AND l.expires_at > clock_timestamp() THEN l.epoch ELSE l.epoch + 1 END,
        holder_broker_id = $2, expires_at = excluded.expires_at
        WHERE l.holder_broker_id IS NULL OR l.holder_broker_id = $2 OR l.expires_at <= clock_timestamp()
      RETURNING name, holder_broker_id, epoch, (extract(epoch from expires_at) * 1000)::bigint AS expires_ms`, [name, this.brokerId, durationMs]);
    return row === undefined ? null : toLease(row);
  }

  /** Who holds the lease now (its expiry not passed by the database's clock), or null. */
  async holder(name: string): Promise<NamedLease | null> {
    const { rows: [row] } = await this.query<LeaseRow>('holder', `SELECT name, holder_broker_id, epoch, (extract(epoch from expires_at) * 1000)::bigint AS expires_ms
      FROM ${this.table} WHERE name = $1 AND holder_broker_id IS NOT NULL AND expires_at > clock_timestamp()`, [name]);
    return row === undefined ? null : toLease(row);
  }

  /** Every lease held now (its expiry not passed by the database's clock), by name. @throws OnelogError `STORAGE_ERROR` */
  async heldNow(): Promise<NamedLease[]> {
    const { rows } = await this.query<LeaseRow>('held', `SELECT name, holder_broker_id, epoch, (extract(epoch from expires_at) * 1000)::bigint AS expires_ms
      FROM ${this.table} WHERE holder_broker_id IS NOT NULL AND expires_at > clock_timestamp() ORDER BY name`, []);
    return rows.map(toLease);
  }

  /** Gives the lease up if this broker still holds it at `epoch` (the next holder need not wait for its expiry). */
  async release(name: string, epoch: number): Promise<void> {
    await this.query('release', `UPDATE ${this.table} SET holder_broker_id = NULL, expires_at = NULL
      WHERE name = $1 AND holder_broker_id = $2 AND epoch = $3`, [name, this.brokerId, epoch]);
  }

  private query<R extends object>(action: string, text: string, params: unknown[]): Promise<{ rows: R[] }> {
    return query<R>(this.pool, `leases: ${action}`, text, params);
  }
}

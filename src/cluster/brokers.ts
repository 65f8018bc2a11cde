/**
 * The brokers of a cluster, registered in PostgreSQL (docs/cluster.md): each one's id, the URLs it serves and
 * its heartbeat by the database's clock. A broker whose heartbeat is older than the timeout is not live: it is
 * left out of Metadata answers and of the addresses clients are sent to. Two processes started with the same
 * `--broker-id` are refused: the second finds the first live.
 */
import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import { checkTablePrefix, createTables, query } from '../common/postgres.js';
import { OnelogError } from '../protocol/errors.js';

/** Options of {@link BrokerRegistry.open}. */
export interface BrokerRegistryOptions {
  pool: Pool;
  brokerId: number;
  /** A broker whose last heartbeat is older than this is not live, ms. @default 10000 */
  heartbeatTimeoutMs?: number;
  /** @default 'onelog_' */
  tablePrefix?: string;
}

/** A live broker and where it answers. */
export interface BrokerInfo {
  brokerId: number;
  /** Its HTTP API, e.g. `http://10.0.0.5:7070`. */
  url: string;
  /** `host:port` of its Kafka listener, or null without one. */
  kafkaAddress: string | null;
  /** ms since the epoch, database time */
  startedAt: number;
  heartbeatAt: number;
  /** ms from its last heartbeat to the read, by the database's clock */
  heartbeatAgeMs: number;
  /**
   * Marked draining (`onelog cluster drain`, {@link BrokerRegistry.drain}): it hands its leases over and takes
   * none. Cleared when a process registers as this broker id again (a restart takes its share back).
   */
  draining: boolean;
}

interface BrokerRow {
  broker_id: number;
  url: string;
  kafka_address: string | null;
  started_ms: string;
  heartbeat_ms: string;
  age_ms: string;
  draining: boolean;
}

export class BrokerRegistry {
  private readonly table: string;
  /** This process, told apart from another started with the same broker id. */
  private readonly instance = randomUUID();

  private constructor(private readonly pool: Pool, readonly brokerId: number, private readonly timeoutMs: number, prefix: string) {
    this.table = `${prefix}brokers`;
  }

  /** Creates the table if missing. @throws OnelogError `INVALID_CONFIG`, `STORAGE_ERROR` */
  static async open(options: BrokerRegistryOptions): Promise<BrokerRegistry> {
    const timeoutMs = options.heartbeatTimeoutMs ?? 10_000;
    if (!Number.isInteger(timeoutMs) || timeoutMs < 100) {
      throw new OnelogError('INVALID_CONFIG', `the heartbeat timeout is a whole number of ms, at least 100, got ${timeoutMs}`, { heartbeatTimeoutMs: timeoutMs });
    }
    const registry = new BrokerRegistry(options.pool, options.brokerId, timeoutMs, checkTablePrefix(options.tablePrefix ?? 'onelog_'));
    await createTables(options.pool, `broker registry ${registry.table}`, [`CREATE TABLE IF NOT EXISTS ${registry.table} (
      broker_id integer PRIMARY KEY, instance uuid NOT NULL, url text NOT NULL, kafka_address text,
      started_at timestamptz NOT NULL, heartbeat_at timestamptz NOT NULL)`,
    `ALTER TABLE ${registry.table} ADD COLUMN IF NOT EXISTS draining boolean NOT NULL DEFAULT false`]);
    return registry;
  }

  /**
   * Registers this process as its broker id, with its addresses. A registration of the id at the same URL is taken
   * over at once, live or not: this process listens there now, so the one that registered it has ended (a restart
   * after kill -9 need not wait for the heartbeat timeout).
   * @throws OnelogError `ALREADY_EXISTS` if another live process holds the id at another URL
   */
  async register(addresses: { url: string; kafkaAddress?: string | null }): Promise<void> {
    const { rows } = await this.query<{ broker_id: number }>('register', `INSERT INTO ${this.table} AS b VALUES ($1, $2, $3, $4, clock_timestamp(), clock_timestamp())
      ON CONFLICT (broker_id) DO UPDATE SET instance = excluded.instance, url = excluded.url, kafka_address = excluded.kafka_address,
        started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at, draining = false
        WHERE b.instance = excluded.instance OR b.url = excluded.url OR b.heartbeat_at <= clock_timestamp() - $5::int * interval '1 millisecond'
      RETURNING broker_id`, [this.brokerId, this.instance, addresses.url, addresses.kafkaAddress ?? null, this.timeoutMs]);
    if (rows.length === 0) {
      const other = (await this.live()).find((b) => b.brokerId === this.brokerId);
      throw new OnelogError('ALREADY_EXISTS', `broker id ${this.brokerId} is live at ${other?.url ?? 'another address'}: give every broker ` +
        `of a cluster its own --broker-id (a process of this id that ended without a clean stop stays live ${this.timeoutMs} ms ` +
        'after its last heartbeat)', { brokerId: this.brokerId, url: other?.url });
    }
  }

  /**
   * Records this broker as live now.
   * @throws OnelogError `ALREADY_EXISTS` if another process took the id over (this one was not live for the timeout)
   */
  async heartbeat(): Promise<void> {
    const { rows } = await this.query('heartbeat', `UPDATE ${this.table} SET heartbeat_at = clock_timestamp() WHERE broker_id = $1 AND instance = $2
      RETURNING broker_id`, [this.brokerId, this.instance]);
    if (rows.length === 0) {
      throw new OnelogError('ALREADY_EXISTS', `broker id ${this.brokerId} was taken over by another process while this one was not live`, { brokerId: this.brokerId });
    }
  }

  /** The live brokers, by id. */
  async live(): Promise<BrokerInfo[]> {
    const { rows } = await this.query<BrokerRow>('live brokers', `SELECT broker_id, url, kafka_address,
        (extract(epoch from started_at) * 1000)::bigint AS started_ms, (extract(epoch from heartbeat_at) * 1000)::bigint AS heartbeat_ms,
        (extract(epoch from clock_timestamp() - heartbeat_at) * 1000)::bigint AS age_ms, draining
      FROM ${this.table} WHERE heartbeat_at > clock_timestamp() - $1::int * interval '1 millisecond' ORDER BY broker_id`, [this.timeoutMs]);
    return rows.map((r) => ({
      brokerId: r.broker_id, url: r.url, kafkaAddress: r.kafka_address, startedAt: Number(r.started_ms), heartbeatAt: Number(r.heartbeat_ms),
      heartbeatAgeMs: Number(r.age_ms), draining: r.draining,
    }));
  }

  /**
   * Marks a live broker draining (`onelog cluster drain BROKER`, docs/cluster.md): every broker reads the mark at its
   * next lease balance pass; the one drained hands its partition leases over and gives its group leases up, and takes
   * none until a process registers as it again.
   * @returns whether a live broker of that id was marked
   * @throws OnelogError `STORAGE_ERROR`
   */
  async drain(brokerId: number): Promise<boolean> {
    const { rows } = await this.query('drain', `UPDATE ${this.table} SET draining = true
      WHERE broker_id = $1 AND heartbeat_at > clock_timestamp() - $2::int * interval '1 millisecond' RETURNING broker_id`, [brokerId, this.timeoutMs]);
    return rows.length > 0;
  }

  /** Takes this broker out of the live ones at once (a clean shutdown). */
  async deregister(): Promise<void> {
    await this.query('deregister', `DELETE FROM ${this.table} WHERE broker_id = $1 AND instance = $2`, [this.brokerId, this.instance]);
  }

  private query<R extends object>(action: string, text: string, params: unknown[]): Promise<{ rows: R[] }> {
    return query<R>(this.pool, `broker registry: ${action}`, text, params);
  }
}

/**
 * Shared PostgreSQL helpers of the engines that keep their own tables there (the offset store's key-value
 * table, the cluster's sequencer, leases and broker registry, the catalog): a transaction on a pool's client, the
 * table-name prefix check, a failure of the server reported as `STORAGE_ERROR` (retriable) naming what failed, and a
 * connection that LISTENs to a channel and comes back when it is lost.
 */
import os from 'node:os';
import pg from 'pg';
import type { Pool, PoolClient } from 'pg';
import { backoff } from './backoff.js';
import type { BackoffPolicy } from './backoff.js';
import type { Clock } from './clock.js';
import type { Logger } from './logger.js';
import { OnelogError } from '../protocol/errors.js';

/** Timeouts of every pool {@link openPool} makes, ms. */
export const POSTGRES_TIMEOUTS = {
  /** Waiting for a connection (a server that accepts and never answers, a full pool). */
  connectMs: 10_000,
  /** One statement, on the server (`statement_timeout`) and in the client (`query_timeout`). */
  statementMs: 30_000,
};

/** Options of {@link openPool}. */
export interface PoolOptions {
  /**
   * The server ends a session left idle inside a transaction this long, ms (`idle_in_transaction_session_timeout`),
   * rolling it back and releasing its locks: a process paused between two statements of a transaction (a long GC,
   * SIGSTOP) then holds no row past it. Cluster mode sets its lease, so a paused broker's locks go with its leases.
   * @default none (the server's setting)
   */
  idleInTransactionMs?: number;
}

/**
 * `url` with a user name when it names none, as libpq (psql) defaults it: env `PGUSER`, else the operating system's
 * user name (`os.userInfo()`). The pg driver would take env `USER`, unset under a service manager or in a container,
 * and fail with "no PostgreSQL user name specified in startup packet". A URL that is not a URL is left as it is.
 */
export function withDefaultUser(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url;
  }
  if (parsed.username !== '') return url;
  const user = process.env.PGUSER || os.userInfo().username;
  parsed.username = encodeURIComponent(user);
  return parsed.toString();
}

/**
 * A pool on `url` (its user defaulted by {@link withDefaultUser}) whose failures reach the caller of the failing query, never the process: a connection lost
 * while a client is checked out (the server restarted, a proxy reset it, the server ended a session idle in a
 * transaction) is an 'error' event on that client, which would end the process unhandled; the query in flight
 * fails with it anyway. Connects and statements are bounded by {@link POSTGRES_TIMEOUTS}.
 */
export function openPool(url: string, max: number, options: PoolOptions = {}): Pool {
  const pool = new pg.Pool({
    connectionString: withDefaultUser(url), max, connectionTimeoutMillis: POSTGRES_TIMEOUTS.connectMs,
    query_timeout: POSTGRES_TIMEOUTS.statementMs, statement_timeout: POSTGRES_TIMEOUTS.statementMs,
    ...(options.idleInTransactionMs === undefined ? {} : { idle_in_transaction_session_timeout: options.idleInTransactionMs }),
  });
  pool.on('error', () => {}); // an idle client's lost connection: the pool drops it
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

/**
 * Checks a prefix of table names: lower-case letters, digits and `_`, at most 41 (PostgreSQL's identifiers
 * are 63 bytes; the longest name added to it is 22).
 * @throws OnelogError `INVALID_CONFIG`
 */
export function checkTablePrefix(prefix: string): string {
  if (!/^[a-z_][a-z0-9_]{0,40}$/.test(prefix)) {
    throw new OnelogError('INVALID_CONFIG', `table prefix ${JSON.stringify(prefix)}: lower-case letters, digits and _ only, at most 41`, { tablePrefix: prefix });
  }
  return prefix;
}

/** Failures of PostgreSQL this process has seen, in every pool ({@link postgresFailures}). */
let failures = 0;

/**
 * How many PostgreSQL failures this process has turned into `STORAGE_ERROR` (by {@link postgresFailure}: a statement,
 * a transaction or a connection the server or the network failed, in any engine's pool) since it started: the
 * broker's `onelog_postgres_errors_total`. One process serves one broker (`onelog serve`).
 */
export function postgresFailures(): number {
  return failures;
}

/**
 * `err` as the error its caller sees: a typed error or a refused argument as it is, else `STORAGE_ERROR` naming `what`
 * (counted in {@link postgresFailures}).
 */
export function postgresFailure(err: unknown, what: string): Error {
  if (err instanceof OnelogError || err instanceof RangeError) return err;
  failures++;
  const message = err instanceof Error ? err.message : String(err);
  return new OnelogError('STORAGE_ERROR', `${what} (PostgreSQL) failed: ${message}`, { store: 'postgres', action: what });
}

/** Runs one statement on `pool`. @throws {@link postgresFailure} of the server's error, naming `what` */
export async function query<R extends object>(pool: Pool, what: string, text: string, params: unknown[]): Promise<{ rows: R[]; rowCount: number | null }> {
  try {
    return await pool.query<R>(text, params);
  } catch (err) {
    throw postgresFailure(err, what);
  }
}

/**
 * Runs `work` in one transaction on a client of `pool`: committed if it resolves, rolled back if it throws.
 * @throws what `work` threw, or {@link postgresFailure} of the server's error
 */
export async function inTransaction<T>(pool: Pool, what: string, work: (client: PoolClient) => Promise<T>): Promise<T> {
  let client: PoolClient | undefined;
  try {
    client = await pool.connect();
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client?.query('ROLLBACK').catch(() => {});
    throw postgresFailure(err, what);
  } finally {
    client?.release();
  }
}

/**
 * Creates an engine's tables with `statements` (each `CREATE ... IF NOT EXISTS`) in one transaction under an
 * advisory lock named by `name`, so brokers starting together do not collide.
 */
export function createTables(pool: Pool, name: string, statements: readonly string[]): Promise<void> {
  return inTransaction(pool, `creating the tables of the ${name}`, async (client) => {
    await client.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`onelog ${name}`]);
    for (const statement of statements) await client.query(statement);
  });
}

/** How {@link listen} waits between attempts to connect again: 100 ms, doubling up to 5 s. */
export const LISTEN_RECONNECT: BackoffPolicy = { initialMs: 100, maxMs: 5000 };

/** A LISTEN connection idle this long is probed by TCP keep-alive (then the OS's probes decide), ms. */
export const LISTEN_KEEPALIVE_MS = 10_000;

/** Options of {@link listen}. */
export interface ListenOptions {
  /** The database, as `pg` reads it (the pool's URL). */
  url: string;
  /** The channel (lower-case letters, digits and `_`, as the prefixes' names are). */
  channel: string;
  /** Called with each notification's payload (`''` for none). */
  onNotification(payload: string): void;
  /**
   * Called each time the connection came back after it was lost (its LISTEN in place again): the notifications sent
   * while it was down are lost, so the caller reads again what they would have told it.
   */
  onReconnect(): void;
  /** The waits between attempts to connect again ({@link LISTEN_RECONNECT}) are taken on it. */
  clock: Clock;
  logger: Logger;
}

/** A connection LISTENing to a channel ({@link listen}). */
export interface PostgresListener {
  /** Stops listening and connecting again. */
  close(): Promise<void>;
}

/**
 * Opens a connection that LISTENs to `options.channel`, as long as it is not closed: lost (the server restarted,
 * the network cut it, an operator ended its session), it connects again after {@link LISTEN_RECONNECT}'s backoff,
 * logging each failed attempt, and calls `onReconnect` once its LISTEN is in place again. A connection cut without
 * a reset is found by TCP keep-alive ({@link LISTEN_KEEPALIVE_MS}, then the operating system's probes).
 * @throws OnelogError `STORAGE_ERROR` naming the channel if the first connection or its LISTEN fails
 */
export async function listen(options: ListenOptions): Promise<PostgresListener> {
  const stop = new AbortController();
  let client: pg.Client | null = null;
  const connect = async (): Promise<pg.Client> => {
    const c = new pg.Client({
      connectionString: withDefaultUser(options.url), connectionTimeoutMillis: POSTGRES_TIMEOUTS.connectMs, query_timeout: POSTGRES_TIMEOUTS.statementMs,
      keepAlive: true, keepAliveInitialDelayMillis: LISTEN_KEEPALIVE_MS,
    });
    c.on('error', () => {}); // the connection lost: 'end' follows
    try {
      await c.connect();
      await c.query(`LISTEN ${options.channel}`);
    } catch (err) {
      await c.end().catch(() => {});
      throw postgresFailure(err, `listening to ${options.channel}`);
    }
    c.on('notification', (n) => options.onNotification(n.payload ?? ''));
    c.once('end', () => {
      if (stop.signal.aborted) return;
      options.logger.warn({ channel: options.channel }, 'lost the connection listening to PostgreSQL; connecting again');
      void reconnect();
    });
    return c;
  };
  const reconnect = async (): Promise<void> => {
    client = null;
    for (let failures = 0; ; failures++) {
      await backoff(options.clock, failures, LISTEN_RECONNECT, stop.signal);
      if (stop.signal.aborted) return;
      try {
        const c = await connect();
        if (stop.signal.aborted) {
          await c.end().catch(() => {});
          return;
        }
        client = c;
        options.logger.info({ channel: options.channel, failures }, 'listening again');
        options.onReconnect();
        return;
      } catch (err) {
        options.logger.warn({ channel: options.channel, err: (err as Error).message }, 'could not listen again; trying on');
      }
    }
  };
  client = await connect();
  return {
    close: async () => {
      stop.abort();
      await client?.end().catch(() => {});
      client = null;
    },
  };
}

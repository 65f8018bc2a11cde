/**
 * `GET /health` (docs/http-api.md, docs/monitoring.md "Health of the dependencies"): whether the broker and each store
 * it depends on answer. Pure types.
 */

/** The stores a broker depends on: the catalog (SQLite or PostgreSQL), the offsets (LMDB, Redis or PostgreSQL), the log. */
export type DependencyName = 'catalog' | 'offsets' | 'log';

/**
 * A dependency's state at its last probe: `ok` answered; `down` failed (refused, unreachable, an error); `blocked` did
 * not answer within the probe's timeout (a lock held on what produces write, a server that accepts and never answers).
 */
export type DependencyStatus = 'ok' | 'down' | 'blocked';

/**
 * One dependency as `/health` reports it. On a broker with users, a request without a valid token gets `status` and
 * `since` only: the engine's address, the probe and its error are for signed-in callers.
 */
export interface DependencyHealth {
  status: DependencyStatus;
  /** What it is, credentials cut: `sqlite`, `lmdb`, `segment files`, `postgres://***@host:5432/db`, `redis://host:6379`, `s3://bucket/prefix`. */
  engine?: string;
  /** What was checked: e.g. `SELECT 1 FROM onelog_partitions (lock_timeout 2000 ms)`, `PING`, `ListObjectsV2 MaxKeys=1`; `none` for a local file. */
  probe?: string;
  /** How long the last probe took, ms (the timeout when it did not answer). */
  latencyMs?: number;
  /** Why it is not ok: the probe's error; absent when ok. */
  error?: string;
  /** Since when it has been in this status, ms since the epoch. */
  since: number;
}

/** The answer of `GET /health`: HTTP 200 when `status` is `ok`, 503 otherwise. */
export interface HealthReport {
  /** `ok` when every dependency is; else `down`. */
  status: 'ok' | 'down';
  /** The dependencies not ok, by name (empty when ok). */
  down: DependencyName[];
  dependencies: Partial<Record<DependencyName, DependencyHealth>>;
}

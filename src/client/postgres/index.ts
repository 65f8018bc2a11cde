/**
 * `onelog/postgres`: exactly-once-effect helpers on the user's own PostgreSQL (DESIGN.md "Delivery
 * semantics"), kept out of the main client entry so that `onelog` loads no database driver.
 *
 * - {@link PostgresOffsetStore}: the consumer's positions stored in the same transaction as the handler's
 *   writes, fenced per partition owner. Exactly-once effect for writes into that same database.
 * - {@link PostgresDedupe}: handled keys marked in the handler's transaction. Keyed by a record id
 *   ({@link recordIdKey}) it also removes duplicates from producer retries and replays; keyed by offset
 *   ({@link recordKey}) only redeliveries.
 * - {@link MemoryDedupe}: the same interface in memory, for one process's lifetime only.
 *
 * The caller brings `pg` (`new pg.Pool(...)`); this module imports only its types.
 */
export { PostgresOffsetStore } from './postgres-offset-store.js';
export type { PostgresOffsetStoreOptions } from './postgres-offset-store.js';
export { PostgresDedupe } from './dedupe.js';
export type { PostgresDedupeOptions } from './dedupe.js';
export { MemoryDedupe, recordKey, recordIdKey } from '../dedupe.js';
export type { Dedupe, MemoryDedupeOptions, OnceResult } from '../dedupe.js';
export type { ExternalOffsetStore, ExternalPosition } from '../../member/external-offsets.js';

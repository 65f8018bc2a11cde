/**
 * The announcements of changes to users and ACLs, for the brokers sharing one catalog: the feed an engine provides
 * ({@link CatalogChanges}) and the transaction a change runs in ({@link AnnouncedChange}, the catalog's).
 */
import type { Transaction } from 'kysely';
import type { CatalogSchema } from './schema.js';

/**
 * How the brokers sharing one catalog (PostgreSQL, cluster mode) learn of the changes to users and ACLs made through
 * any of them: each change announces itself inside its own transaction (so it is heard once committed, never
 * before, never if rolled back), and each broker hears every announcement, and is told to read everything again
 * when it may have missed some. The embedded SQLite catalog has none: one broker per data directory.
 */
export interface CatalogChanges {
  /** Announces, in `tx`, that users or ACLs changed. */
  announce(tx: Transaction<CatalogSchema>): Promise<void>;
  /** Starts hearing: `changed` is called for each announcement, and whenever some may have been missed. */
  listen(changed: () => void): Promise<void>;
  /** Stops hearing. */
  close(): Promise<void>;
}

/** Runs `change` to users or ACLs in one transaction that also announces it to the other brokers ({@link CatalogChanges.announce}). */
export type AnnouncedChange = <T>(change: (tx: Transaction<CatalogSchema>) => Promise<T>) => Promise<T>;

/**
 * The catalog's users: principals and their bearer tokens (docs/security.md). Every change is announced to the brokers
 * sharing the catalog.
 */
import { PostgresAdapter, sql } from 'kysely';
import type { Kysely, Selectable } from 'kysely';
import { OnelogError } from '../protocol/errors.js';
import type { AnnouncedChange } from './changes.js';
import type { CatalogSchema, UsersTable } from './schema.js';

/** A user as the catalog keeps it: its token only as an id, a salt and a hash. Times are ms since the epoch. */
export interface UserRecord {
  name: string;
  admin: boolean;
  tokenId: string;
  tokenSalt: string;
  tokenHash: string;
  /** The token's SCRAM-SHA-256 credential (security/scram.ts); null for a user made before SCRAM was served. */
  tokenScram: string | null;
  createdAt: number;
  rotatedAt: number | null;
}

function toUser(row: Selectable<UsersTable>): UserRecord {
  return {
    name: row.name, admin: row.admin === 1, tokenId: row.token_id, tokenSalt: row.token_salt, tokenHash: row.token_hash, tokenScram: row.token_scram,
    createdAt: Number(row.created_at), rotatedAt: row.rotated_at === null ? null : Number(row.rotated_at),
  };
}

export class UserRepository {
  constructor(private readonly db: Kysely<CatalogSchema>, private readonly announced: AnnouncedChange) {}

  /**
   * Adds a user; the first one is an admin whatever `admin` says (one transaction decides).
   * @throws OnelogError `ALREADY_EXISTS` if the name is taken
   */
  async create(user: Omit<UserRecord, 'admin' | 'rotatedAt'> & { admin: boolean }): Promise<UserRecord> {
    return this.announced(async (tx) => {
      // SQLite runs one transaction at a time; PostgreSQL's concurrent ones would each see no user yet: the lock
      // (self-conflicting, reads go on) makes them take turns, on every broker of a cluster.
      if (tx.getExecutor().adapter instanceof PostgresAdapter) await sql`lock table users in share row exclusive mode`.execute(tx);
      const first = (await tx.selectFrom('users').select('name').limit(1).execute()).length === 0;
      const inserted = await tx.insertInto('users').values({
        name: user.name, admin: user.admin || first ? 1 : 0, token_id: user.tokenId, token_salt: user.tokenSalt, token_hash: user.tokenHash,
        token_scram: user.tokenScram, created_at: user.createdAt, rotated_at: null,
      }).onConflict((oc) => oc.column('name').doNothing()).executeTakeFirst();
      if (inserted.numInsertedOrUpdatedRows === 0n) throw new OnelogError('ALREADY_EXISTS', `user ${user.name} already exists`, { user: user.name });
      return { ...user, admin: user.admin || first, rotatedAt: null };
    });
  }

  /** Every user, by name. */
  async list(): Promise<UserRecord[]> {
    return (await this.db.selectFrom('users').selectAll().orderBy('name').execute()).map(toUser);
  }

  /** Deletes a user and the ACLs naming it. @returns whether the user existed */
  async delete(name: string): Promise<boolean> {
    return this.announced(async (tx) => {
      await tx.deleteFrom('acls').where('principal', '=', name).execute();
      return (await tx.deleteFrom('users').where('name', '=', name).executeTakeFirst()).numDeletedRows > 0n;
    });
  }

  /** Replaces a user's token. @returns the user, or undefined if there is none of that name */
  async replaceToken(name: string, token: Pick<UserRecord, 'tokenId' | 'tokenSalt' | 'tokenHash' | 'tokenScram'>, at: number): Promise<UserRecord | undefined> {
    const row = await this.announced(async (tx) => {
      await tx.updateTable('users').set({ token_id: token.tokenId, token_salt: token.tokenSalt, token_hash: token.tokenHash, token_scram: token.tokenScram, rotated_at: at })
        .where('name', '=', name).execute();
      return tx.selectFrom('users').selectAll().where('name', '=', name).executeTakeFirst();
    });
    return row && toUser(row);
  }
}

/** The catalog's producer ids: issued once each, never reused (idempotent producers). */
import type { Kysely } from 'kysely';
import type { CatalogSchema } from './schema.js';

export class ProducerIdRepository {
  constructor(private readonly db: Kysely<CatalogSchema>) {}

  /** The highest producer id issued so far, 0 if none. */
  async last(): Promise<number> {
    const row = await this.db.selectFrom('producer_ids').select((eb) => eb.fn.max('producer_id').as('last')).executeTakeFirst();
    return Number(row?.last ?? 0);
  }

  /** Issues a new producer id (never reused). */
  async issue(createdAt: number): Promise<number> {
    const row = await this.db.insertInto('producer_ids').values({ created_at: createdAt }).returning('producer_id').executeTakeFirstOrThrow();
    return Number(row.producer_id);
  }
}

/** Which log the catalog describes: the first to claim it (a data directory's, or one in object storage) keeps it. */
import type { Kysely } from 'kysely';
import type { CatalogSchema } from './schema.js';

export class LogOwnerRepository {
  constructor(private readonly db: Kysely<CatalogSchema>) {}

  /**
   * Claims the catalog for the log `dataDirId` (a data directory's id, or `s3://BUCKET/PREFIX` for a log in object
   * storage) if no log has it yet (one statement: of two claims at once, one wins).
   * @returns the id of the log that has it now
   */
  async claim(dataDirId: string): Promise<string> {
    await this.db.insertInto('log_owner').values({ singleton: 1, data_dir_id: dataDirId }).onConflict((oc) => oc.column('singleton').doNothing()).execute();
    return (await this.db.selectFrom('log_owner').select('data_dir_id').executeTakeFirstOrThrow()).data_dir_id;
  }
}

/** The catalog's audit log: the operations done, and by whom (docs/security.md). */
import type { Kysely } from 'kysely';
import type { AuditEntry } from '../protocol/security.js';
import type { CatalogSchema } from './schema.js';

export class AuditRepository {
  constructor(private readonly db: Kysely<CatalogSchema>) {}

  /** Records an operation and who did it. */
  async add(entry: Omit<AuditEntry, 'id'>): Promise<void> {
    await this.db.insertInto('audit_log').values({ ...entry, details: JSON.stringify(entry.details) }).execute();
  }

  /** The most recent audit entries, newest first. */
  async list(limit: number): Promise<AuditEntry[]> {
    const rows = await this.db.selectFrom('audit_log').selectAll().orderBy('id', 'desc').limit(limit).execute();
    return rows.map((r) => ({
      id: Number(r.id), at: Number(r.at), principal: r.principal, action: r.action, target: r.target, outcome: r.outcome === 'refused' ? 'refused' : 'done',
      details: JSON.parse(r.details) as Record<string, unknown>,
    }));
  }
}

/**
 * The catalog's ACLs: who may do what on which resource (docs/security.md). Every change is announced to the brokers
 * sharing the catalog.
 */
import type { Kysely } from 'kysely';
import type { AclBinding } from '../protocol/security.js';
import { OnelogError } from '../protocol/errors.js';
import type { AnnouncedChange } from './changes.js';
import type { AclsTable, CatalogSchema } from './schema.js';

function aclRow(acl: AclBinding): AclsTable {
  return {
    principal: acl.principal, resource_type: acl.resourceType, resource_name: acl.resourceName, pattern_type: acl.patternType,
    operation: acl.operation, permission: acl.permission,
  };
}

export class AclRepository {
  constructor(private readonly db: Kysely<CatalogSchema>, private readonly announced: AnnouncedChange) {}

  /** Adds an ACL. @throws OnelogError `ALREADY_EXISTS` if the same ACL exists */
  async add(acl: AclBinding): Promise<void> {
    const inserted = await this.announced((tx) => tx.insertInto('acls').values(aclRow(acl)).onConflict((oc) => oc.doNothing()).executeTakeFirst());
    if (inserted.numInsertedOrUpdatedRows === 0n) throw new OnelogError('ALREADY_EXISTS', 'this ACL already exists; onelog acls list shows them', { ...acl });
  }

  /** Every ACL, by principal, resource and operation. */
  async list(): Promise<AclBinding[]> {
    const rows = await this.db.selectFrom('acls').selectAll()
      .orderBy('principal').orderBy('resource_type').orderBy('resource_name').orderBy('operation').orderBy('permission').execute();
    return rows.map((r) => ({
      principal: r.principal, resourceType: r.resource_type as AclBinding['resourceType'], resourceName: r.resource_name,
      patternType: r.pattern_type as AclBinding['patternType'], operation: r.operation as AclBinding['operation'], permission: r.permission as AclBinding['permission'],
    }));
  }

  /** Removes one ACL. @returns whether it existed */
  async remove(acl: AclBinding): Promise<boolean> {
    const row = aclRow(acl);
    const deleted = await this.announced((tx) => tx.deleteFrom('acls').where('principal', '=', row.principal).where('resource_type', '=', row.resource_type)
      .where('resource_name', '=', row.resource_name).where('pattern_type', '=', row.pattern_type).where('operation', '=', row.operation)
      .where('permission', '=', row.permission).executeTakeFirst());
    return deleted.numDeletedRows > 0n;
  }
}

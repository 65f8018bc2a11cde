/**
 * ACLs (docs/security.md): who may do which operation on which topic, group or the cluster, kept in the catalog
 * and cached here so that authorizing a request reads no catalog. The model is Kafka's: an ACL names a principal
 * (or `*`), a resource by literal name (`*`: every one) or prefix, an operation and allow or deny; deny wins; without an ACL that
 * allows it an operation is refused; `read`, `write`, `delete`, `alter` and `reset` imply `describe`, `all`
 * matches every operation; admins (Kafka's super.users) and protected mode's loopback client are never refused.
 */
import type { Catalog } from '../catalog/catalog.js';
import type { Logger } from '../common/logger.js';
import { ACL_OPERATIONS } from '../protocol/security.js';
import type { AclBinding, AclOperation, AclResourceType } from '../protocol/security.js';
import { OnelogError } from '../protocol/errors.js';
import type { Principal } from './principal.js';
import { serialReloads } from './serial-reloads.js';

const RESOURCE_TYPES: readonly AclResourceType[] = ['topic', 'group', 'cluster'];
/** Operations that, allowed, also allow `describe` (as Kafka's implied DESCRIBE). */
const IMPLY_DESCRIBE: ReadonlySet<AclOperation> = new Set(['read', 'write', 'delete', 'alter', 'reset', 'all']);
const PRINCIPAL = /^(\*|[A-Za-z0-9._@-]{1,100})$/;

export class Acls {
  private acls: AclBinding[] = [];

  private constructor(private readonly catalog: Catalog, private readonly logger: Logger) {}

  static async open(catalog: Catalog, logger: Logger): Promise<Acls> {
    const acls = new Acls(catalog, logger);
    await acls.reload();
    return acls;
  }

  /** Whether `principal` may do `operation` on the resource (for the cluster, `name` is ignored). */
  allows(principal: Principal, resourceType: AclResourceType, name: string, operation: Exclude<AclOperation, 'all'>): boolean {
    return this.decide(principal, resourceType, name, operation) === 'allowed';
  }

  /**
   * What the ACLs say: allowed, denied by a deny ACL, or allowed by none. `create` on the cluster allows creating any
   * topic that no ACL denies (as Kafka's CreateTopics: CREATE on the cluster or on the topic).
   */
  private decide(principal: Principal, resourceType: AclResourceType, name: string, operation: Exclude<AclOperation, 'all'>): 'allowed' | 'denied' | 'no-acl' {
    if (principal.admin || principal.user === null) return 'allowed';
    if (resourceType === 'topic' && operation === 'create') {
      const onTopic = this.decideOn(principal, resourceType, name, operation);
      return onTopic === 'no-acl' && this.decideOn(principal, 'cluster', '', 'create') === 'allowed' ? 'allowed' : onTopic;
    }
    return this.decideOn(principal, resourceType, name, operation);
  }

  /** What the ACLs of this one resource say. */
  private decideOn(principal: Principal, resourceType: AclResourceType, name: string, operation: Exclude<AclOperation, 'all'>): 'allowed' | 'denied' | 'no-acl' {
    const matching = this.acls.filter((a) => a.resourceType === resourceType && (a.principal === '*' || a.principal === principal.user) &&
      (resourceType === 'cluster' || (a.patternType === 'literal' ? a.resourceName === name || a.resourceName === '*' : name.startsWith(a.resourceName))));
    if (matching.some((a) => a.permission === 'deny' && (a.operation === operation || a.operation === 'all'))) return 'denied';
    return matching.some((a) => a.permission === 'allow' &&
      (a.operation === operation || a.operation === 'all' || (operation === 'describe' && IMPLY_DESCRIBE.has(a.operation)))) ? 'allowed' : 'no-acl';
  }

  /**
   * Refuses what {@link allows} refuses.
   * @throws OnelogError `FORBIDDEN` naming the user, the operation and the resource, and the command that would allow it
   */
  authorize(principal: Principal, resourceType: AclResourceType, name: string, operation: Exclude<AclOperation, 'all'>): void {
    const decision = this.decide(principal, resourceType, name, operation);
    if (decision === 'allowed') return;
    const what = resourceType === 'cluster' ? 'the cluster' : `${resourceType} ${JSON.stringify(name)}`;
    const flag = resourceType === 'cluster' ? '--cluster' : `--${resourceType} ${name}`;
    const why = decision === 'denied'
      ? 'an ACL denies it (onelog acls list shows it; a deny wins over any allow)'
      : `no ACL allows it (an admin can run onelog acls add --principal ${principal.user} ${flag} --operation ${operation}` +
        `${operation === 'describe' ? ', or grant read, write, delete, alter or reset, which imply describe' : ''})`;
    throw new OnelogError('FORBIDDEN', `user ${principal.user} may not ${operation} ${what}: ${why}`,
      { user: principal.user, operation, resourceType, ...(resourceType === 'cluster' ? {} : { resourceName: name }), reason: decision });
  }

  /** Every ACL, or those of one principal. @throws OnelogError `FORBIDDEN` unless `by` may describe the cluster */
  list(by: Principal, principal?: string): AclBinding[] {
    this.authorize(by, 'cluster', '', 'describe');
    return principal === undefined ? [...this.acls] : this.acls.filter((a) => a.principal === principal);
  }

  /**
   * Adds an ACL.
   * @throws OnelogError `FORBIDDEN` unless `by` may alter the cluster, `INVALID_REQUEST` for a malformed ACL, `ALREADY_EXISTS`
   */
  async add(acl: AclBinding, by: Principal): Promise<AclBinding> {
    this.authorize(by, 'cluster', '', 'alter');
    const checked = checkAcl(acl);
    await this.catalog.acls.add(checked);
    await this.reload();
    this.logger.info({ acl: checked, by: by.user }, 'ACL added');
    return checked;
  }

  /** Removes an ACL. @throws OnelogError `FORBIDDEN` unless `by` may alter the cluster, `INVALID_REQUEST`, `NOT_FOUND` */
  async remove(acl: AclBinding, by: Principal): Promise<void> {
    this.authorize(by, 'cluster', '', 'alter');
    const checked = checkAcl(acl);
    if (!(await this.catalog.acls.remove(checked))) throw new OnelogError('NOT_FOUND', 'there is no such ACL; onelog acls list shows them', { ...checked });
    await this.reload();
    this.logger.info({ acl: checked, by: by.user }, 'ACL removed');
  }

  /**
   * Re-reads the catalog (after a change through this broker, a user's deletion, or another broker's change),
   * one read at a time (see {@link serialReloads}).
   */
  readonly reload = serialReloads(async () => {
    this.acls = await this.catalog.acls.list();
  });
}

/** `acl` checked field by field, the cluster's name normalized to `""`. @throws OnelogError `INVALID_REQUEST` naming the field */
export function checkAcl(acl: AclBinding): AclBinding {
  const bad = (field: string, allowed: string) =>
    new OnelogError('INVALID_REQUEST', `invalid ACL ${field} ${JSON.stringify((acl as unknown as Record<string, unknown>)[field])}: ${allowed}`, { field });
  if (typeof acl.principal !== 'string' || !PRINCIPAL.test(acl.principal)) throw bad('principal', 'a user name, or * for every user');
  if (!RESOURCE_TYPES.includes(acl.resourceType)) throw bad('resourceType', `one of ${RESOURCE_TYPES.join(', ')}`);
  if (!(ACL_OPERATIONS as readonly string[]).includes(acl.operation)) throw bad('operation', `one of ${ACL_OPERATIONS.join(', ')}`);
  if (acl.operation === 'reset' && acl.resourceType !== 'group') throw bad('operation', 'reset applies to groups only');
  if (acl.patternType !== 'literal' && acl.patternType !== 'prefix') throw bad('patternType', 'literal or prefix');
  if (acl.permission !== 'allow' && acl.permission !== 'deny') throw bad('permission', 'allow or deny');
  if (acl.resourceType === 'cluster') return { ...acl, resourceName: '', patternType: 'literal' };
  if (typeof acl.resourceName !== 'string' || acl.resourceName.length === 0 || acl.resourceName.length > 1000) {
    throw bad('resourceName', 'the topic or group name (or prefix), 1 to 1000 characters');
  }
  return acl;
}

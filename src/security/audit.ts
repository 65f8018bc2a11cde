/**
 * The audit (docs/security.md): every executed offset reset, dead-letter redrive and purge, delete-records, topic
 * and group deletion, and user change, with the authenticated principal who did it. Recorded by the HTTP server
 * once the operation succeeded (a dry run is not recorded); the `requestedBy` these operations record is the
 * authenticated principal, not what the client claims (without users, the claim stays).
 */
import type { Catalog } from '../catalog/catalog.js';
import type { AuditEntry } from '../protocol/api.js';
import type { Clock } from '../clock.js';
import { OnelogError } from '../protocol/errors.js';
import { checkInteger } from '../protocol/validate.js';
import { principalName } from './principal.js';
import type { Principal } from './principal.js';

/** A request's path parameters, query and body, merged. */
type Fields = Record<string, unknown>;

/** An audited operation: its action name, what it targets, and whether the request did it (not a dry run). */
interface Audited {
  action: string;
  target(fields: Fields): string;
  done?(fields: Fields): boolean;
  /** The request names its target in the query (validated strictly); other routes' queries are never read. */
  fromQuery?: true;
}

/** Routes whose body names who asked (`requestedBy`, recorded with what they did): an authenticated user's name replaces it. */
export const CLAIMS_REQUESTER: ReadonlySet<string> = new Set([
  'POST /groups/:groupId/offsets/reset', 'POST /groups/:groupId/dead-letters/redrive', 'POST /groups/:groupId/dead-letters/purge', 'POST /alerts/:id/ack',
]);

const executed = (f: Fields) => f.execute === true;
const group = (f: Fields) => `group:${String(f.groupId)}`;
const topic = (f: Fields) => `topic:${String(f.topic)}`;
const user = (f: Fields) => `user:${String(f.user ?? f.name)}`;
const acl = (f: Fields) => f.resourceType === 'cluster' ? 'cluster' : `${String(f.resourceType)}:${String(f.resourceName)}`;

/** The audited operations, by `METHOD /route`. */
export const AUDITED: Readonly<Record<string, Audited>> = {
  'POST /groups/:groupId/offsets/reset': { action: 'offsets-reset', target: group, done: executed },
  'POST /groups/:groupId/dead-letters/redrive': { action: 'dead-letters-redrive', target: group, done: executed },
  'POST /groups/:groupId/dead-letters/purge': { action: 'dead-letters-purge', target: group, done: executed },
  'POST /topics/:topic/delete-records': { action: 'delete-records', target: topic },
  'DELETE /topics/:topic': { action: 'topic-delete', target: topic },
  'DELETE /groups/:groupId': { action: 'group-delete', target: group },
  'POST /users': { action: 'user-create', target: user },
  'DELETE /users/:name': { action: 'user-delete', target: user },
  'POST /users/:name/rotate': { action: 'user-rotate', target: user },
  'POST /acls': { action: 'acl-add', target: acl },
  'DELETE /acls': { action: 'acl-remove', target: acl, fromQuery: true },
  // The same operations through the Kafka listener (DeleteTopics, DeleteGroups, DeleteRecords).
  'KAFKA deleteTopic': { action: 'topic-delete', target: topic },
  'KAFKA deleteGroup': { action: 'group-delete', target: group },
  'KAFKA deleteRecords': { action: 'delete-records', target: topic },
};

/** `value` if it is an object (a request's params, query or body), else `{}`. */
export const objectOf = (value: unknown): Fields => (value !== null && typeof value === 'object' ? value as Fields : {});

export class Audit {
  constructor(private readonly catalog: Catalog, private readonly clock: Clock) {}

  /**
   * Records `route`'s operation if it is audited and this request did it. The path parameters win over the body,
   * and the query is read only where the route names its target there.
   */
  async record(route: string, principal: Principal, request: { params?: unknown; query?: unknown; body?: unknown }): Promise<void> {
    const audited = AUDITED[route];
    const fields: Fields = { ...objectOf(request.body), ...(audited?.fromQuery ? objectOf(request.query) : {}), ...objectOf(request.params) };
    if (audited === undefined || (audited.done && !audited.done(fields))) return;
    const details = { ...fields };
    delete details.requestedBy;
    await this.catalog.addAudit({ at: this.clock.now(), principal: principalName(principal), action: audited.action, target: audited.target(details), details });
  }

  /**
   * The most recent entries, newest first.
   * @throws OnelogError `FORBIDDEN` unless `by` is an admin, `INVALID_REQUEST` for a limit outside 1 to 10,000
   */
  async list(by: Principal, limit = 100): Promise<AuditEntry[]> {
    if (!by.admin) throw new OnelogError('FORBIDDEN', `only an admin may read the audit; ${by.user} is not one`, { user: by.user });
    return this.catalog.listAudit(checkInteger(limit, 'limit', 1, 10_000));
  }
}

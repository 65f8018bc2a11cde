/**
 * The audit (docs/security.md): every executed offset reset, dead-letter redrive and purge, delete-records, topic
 * and group deletion, and user change, with the authenticated principal who did it. Recorded by the HTTP server
 * once the operation succeeded (a dry run is not recorded); the `requestedBy` these operations record is the
 * authenticated principal, not what the client claims (without users, the claim stays). And every refused attempt
 * at an operation that changes something, over HTTP, the WebSocket frames and Kafka alike, as Kafka's authorizer
 * logs denials: a few per principal at once, then at a bounded rate, the rest counted.
 */
import type { Catalog } from '../catalog/catalog.js';
import type { AuditEntry } from '../protocol/security.js';
import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import { OnelogError } from '../protocol/errors.js';
import { checkInteger } from '../protocol/validate.js';
import type { Acls } from './acls.js';
import { authorize, mutates } from './permissions.js';
import type { RequestParts } from './permissions.js';
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

/** Refusals of one principal recorded at once before the rate applies (a token bucket's size). */
const REFUSAL_BURST = 10;
/** Then one refusal per principal recorded every this many ms (the bucket's refill). */
const REFUSAL_REFILL_MS = 6_000;

/** A principal's refusal budget: refusals it may still have recorded, when last counted (ms), and those left out since. */
interface RefusalBudget {
  tokens: number;
  at: number;
  suppressed: number;
}

export class Audit {
  private readonly refusals = new Map<string, RefusalBudget>();

  constructor(private readonly catalog: Catalog, private readonly clock: Clock, private readonly logger: Logger) {}

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
    await this.catalog.audit.add({ at: this.clock.now(), principal: principalName(principal), action: audited.action, target: audited.target(details), outcome: 'done', details });
  }

  /**
   * Records that `principal` was refused `key` (a route, frame or Kafka broker method of the permission table) if
   * the operation changes something ({@link mutates}) and the refusal is an authorization's (`FORBIDDEN`): with the
   * operation and resource the error names, and why. Per principal, {@link REFUSAL_BURST} at once, then one every
   * {@link REFUSAL_REFILL_MS} ms; those left out are counted in the next one recorded (`details.suppressed`), so a
   * client hammering what it may not do cannot fill the catalog. Never rejects: an entry that cannot be written is logged.
   */
  async refused(key: string, principal: Principal, error: unknown, request: RequestParts = {}): Promise<void> {
    if (!(error instanceof OnelogError) || error.code !== 'FORBIDDEN' || !mutates(key)) return;
    const name = principalName(principal);
    const suppressed = this.takeRefusal(name);
    if (suppressed === null) return;
    const { operation, resourceType, resourceName } = error.context as { operation?: string; resourceType?: string; resourceName?: string };
    const fields: Fields = { ...objectOf(request.body), ...objectOf(request.params) };
    const target = resourceType === 'cluster' ? 'cluster'
      : resourceType !== undefined ? `${resourceType}:${String(resourceName)}`
        : AUDITED[key]?.target(fields) ?? 'cluster';
    await this.catalog.audit.add({
      at: this.clock.now(), principal: name, action: AUDITED[key]?.action ?? key, target, outcome: 'refused',
      details: {
        request: key, operation: operation ?? 'admin', code: error.code, reason: error.message, suppressed,
        ...(AUDITED[key]?.done && !AUDITED[key].done(fields) ? { dryRun: true } : {}),
      },
    }).catch((err: unknown) => this.logger.error({ err: (err as Error).message, request: key, principal: name }, 'could not record a refused operation'));
  }

  /** Takes one of the principal's refusal records: the refusals left out before it, or null when none is left now. */
  private takeRefusal(name: string): number | null {
    const now = this.clock.now();
    const budget = this.refusals.get(name) ?? { tokens: REFUSAL_BURST, at: now, suppressed: 0 };
    this.refusals.set(name, budget);
    budget.tokens = Math.min(REFUSAL_BURST, budget.tokens + Math.max(0, now - budget.at) / REFUSAL_REFILL_MS);
    budget.at = now;
    if (budget.tokens < 1) {
      budget.suppressed++;
      return null;
    }
    budget.tokens--;
    const suppressed = budget.suppressed;
    budget.suppressed = 0;
    return suppressed;
  }

  /**
   * The most recent entries, newest first.
   * @throws OnelogError `FORBIDDEN` unless `by` is an admin, `INVALID_REQUEST` for a limit outside 1 to 10,000
   */
  async list(by: Principal, limit = 100): Promise<AuditEntry[]> {
    if (!by.admin) throw new OnelogError('FORBIDDEN', `only an admin may read the audit; ${by.user} is not one`, { user: by.user });
    return this.catalog.audit.list(checkInteger(limit, 'limit', 1, 10_000));
  }
}

/**
 * {@link authorize}, a refusal first recorded in `audit` ({@link Audit.refused}): how the WebSocket frames and the Kafka
 * listener check what the HTTP server's hooks check for routes.
 * @throws what {@link authorize} throws
 */
export async function authorizeAudited(acls: Acls, audit: Audit | undefined, principal: Principal, key: string, parts: RequestParts): Promise<void> {
  try {
    authorize(acls, principal, key, parts);
  } catch (err) {
    await audit?.refused(key, principal, err, parts);
    throw err;
  }
}

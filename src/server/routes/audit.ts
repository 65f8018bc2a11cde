/**
 * The audit (docs/security.md): audited operations are recorded once they succeeded, with the request's
 * principal, which also replaces the `requestedBy` an authenticated client claims; `GET /audit` lists them (admins only).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AUDITED } from '../../security/audit.js';
import type { Audit } from '../../security/audit.js';
import type { Principal } from '../../security/users.js';

const routeOf = (request: FastifyRequest) => `${request.method} ${request.routeOptions.url}`;
/** A server without users answers everyone as protected mode's anonymous admin. */
const principalOf = (request: FastifyRequest): Principal => request.principal ?? { user: null, admin: true };

export function registerAuditRoutes(app: FastifyInstance, audit: Audit): void {
  app.addHook('preHandler', async (request) => {
    // Without users (protected mode) there is no principal: the client's claim is all there is to record.
    const body = request.body as Record<string, unknown> | undefined;
    const { user } = principalOf(request);
    if (user !== null && AUDITED[routeOf(request)]?.claimsRequester && body !== null && typeof body === 'object') body.requestedBy = user;
  });
  app.addHook('onResponse', async (request, reply) => {
    if (reply.statusCode >= 300 || AUDITED[routeOf(request)] === undefined) return;
    await audit.record(routeOf(request), principalOf(request), request.params as Record<string, string>, request.body as Record<string, unknown> | undefined)
      .catch((err: unknown) => request.log.error({ err, route: routeOf(request) }, 'could not record an audited operation'));
  });
  app.get<{ Querystring: { limit?: string } }>(
    '/audit',
    { schema: { querystring: { type: 'object', additionalProperties: false, properties: { limit: { type: 'string', pattern: '^[0-9]{1,6}$' } } } } },
    async (request) => ({ entries: await audit.list(principalOf(request), request.query.limit === undefined ? 100 : Number(request.query.limit)) }),
  );
}

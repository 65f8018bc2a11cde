/**
 * The audit (docs/security.md): audited operations are recorded once they succeeded, with the request's
 * principal, which also replaces the `requestedBy` an authenticated client claims; `GET /audit` lists them (admins only).
 */
import type { FastifyInstance } from 'fastify';
import { AUDITED, CLAIMS_REQUESTER } from '../../security/audit.js';
import type { Audit } from '../../security/audit.js';
import { principalOf, routeKey } from '../access.js';

const objectOf = (value: unknown) => (value !== null && typeof value === 'object' ? value : {});

export function registerAuditRoutes(app: FastifyInstance, audit: Audit): void {
  app.addHook('preHandler', async (request) => {
    // Without users (protected mode) there is no principal: the client's claim is all there is to record.
    const { user } = principalOf(request);
    if (user !== null && CLAIMS_REQUESTER.has(routeKey(request) ?? '')) request.body = { ...objectOf(request.body), requestedBy: user };
  });
  app.addHook('onResponse', async (request, reply) => {
    const route = routeKey(request) ?? '';
    if (reply.statusCode >= 300 || AUDITED[route] === undefined) return;
    await audit.record(route, principalOf(request), { ...objectOf(request.body), ...objectOf(request.query), ...objectOf(request.params) })
      .catch((err: unknown) => request.log.error({ err, route }, 'could not record an audited operation'));
  });
  app.get<{ Querystring: { limit?: string } }>(
    '/audit',
    { schema: { querystring: { type: 'object', additionalProperties: false, properties: { limit: { type: 'string', pattern: '^[0-9]{1,6}$' } } } } },
    async (request) => ({ entries: await audit.list(principalOf(request), request.query.limit === undefined ? 100 : Number(request.query.limit)) }),
  );
}

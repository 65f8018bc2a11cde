/**
 * The audit (docs/security.md): audited operations are recorded once they succeeded, with the request's
 * principal, which also replaces the `requestedBy` an authenticated client claims; a refused request that would have
 * changed something is recorded before its error is answered; `GET /audit` lists them (admins only).
 */
import type { FastifyInstance } from 'fastify';
import { AUDITED, CLAIMS_REQUESTER, objectOf } from '../../security/audit.js';
import type { Audit } from '../../security/audit.js';
import { principalOf, routeKey } from '../access.js';

export function registerAuditRoutes(app: FastifyInstance, audit: Audit): void {
  app.addHook('preHandler', async (request) => {
    // Without users (protected mode) there is no principal: the client's claim is all there is to record.
    const { user } = principalOf(request);
    if (user !== null && CLAIMS_REQUESTER.has(routeKey(request) ?? '')) request.body = { ...objectOf(request.body), requestedBy: user };
  });
  // A refusal, by the permission table's check or by the route itself (a user rotating another's token).
  app.addHook('onError', async (request, _reply, error) => {
    const key = routeKey(request);
    if (key !== undefined && request.principal !== undefined) await audit.refused(key, request.principal, error, request);
  });
  // Recorded as the handler succeeds, before the answer is written: a client that hangs up cannot skip it.
  app.addHook('onRoute', (route) => {
    const key = `${String(route.method)} ${route.url}`;
    if (AUDITED[key] === undefined) return;
    const handler = route.handler;
    route.handler = async function audited(this: FastifyInstance, request, reply) {
      const answer: unknown = await handler.call(this, request, reply);
      await audit.record(key, principalOf(request), request)
        .catch((err: unknown) => request.log.error({ err, route: key }, 'could not record an audited operation'));
      return answer;
    };
  });
  app.get<{ Querystring: { limit?: string } }>(
    '/audit',
    { schema: { querystring: { type: 'object', additionalProperties: false, properties: { limit: { type: 'string', pattern: '^[0-9]{1,6}$' } } } } },
    async (request) => ({ entries: await audit.list(principalOf(request), request.query.limit === undefined ? 100 : Number(request.query.limit)) }),
  );
}

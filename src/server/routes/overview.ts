/** The broker's health at a glance (docs/monitoring.md, "Console: overview"): `GET /overview[?limit=N]`. */
import type { FastifyInstance } from 'fastify';
import type { OnelogApi } from '../../protocol/api.js';

/** Query values are text (types are not coerced): the broker checks the limit's range. */
const overviewQuery = { type: 'object', additionalProperties: false, properties: { limit: { type: 'string', pattern: '^[0-9]{1,6}$' } } } as const;

export function registerOverviewRoutes(app: FastifyInstance, api: OnelogApi): void {
  app.get<{ Querystring: { limit?: string } }>('/overview', { schema: { querystring: overviewQuery } },
    async (request) => api.overview(request.query.limit === undefined ? {} : { limit: Number(request.query.limit) }));
}

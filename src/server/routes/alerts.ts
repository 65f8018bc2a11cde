/**
 * Alerts (docs/monitoring.md): the list with filters, acknowledgement, and the webhooks raised and resolved
 * alerts are POSTed to.
 */
import type { FastifyInstance } from 'fastify';
import type { OnelogApi } from '../../protocol/api.js';

/** Query values are text (types are not coerced): the broker checks the limit's range. */
const alertQuery = {
  type: 'object', additionalProperties: false,
  properties: { active: { type: 'string', enum: ['true', 'false'] }, group: { type: 'string' }, limit: { type: 'string', pattern: '^[0-9]{1,6}$' } },
} as const;
const idParams = { type: 'object', required: ['id'], properties: { id: { type: 'string', pattern: '^[0-9]{1,15}$' } } } as const;

export function registerAlertRoutes(app: FastifyInstance, api: OnelogApi): void {
  app.get<{ Querystring: { active?: string; group?: string; limit?: string } }>(
    '/alerts',
    { schema: { querystring: alertQuery } },
    async (request) => ({
      alerts: await api.listAlerts({
        active: request.query.active === 'true',
        ...(request.query.group !== undefined ? { groupId: request.query.group } : {}),
        ...(request.query.limit !== undefined ? { limit: Number(request.query.limit) } : {}),
      }),
    }),
  );
  app.post<{ Params: { id: string }; Body: { requestedBy?: string } | undefined }>(
    '/alerts/:id/ack',
    {
      schema: {
        params: idParams,
        body: { type: 'object', additionalProperties: false, properties: { requestedBy: { type: 'string', minLength: 1, maxLength: 200 } } },
      },
    },
    async (request) => api.acknowledgeAlert({ id: Number(request.params.id), requestedBy: request.body?.requestedBy ?? `http ${request.ip}` }),
  );
  app.get('/alerts/sinks', async () => ({ sinks: await api.listAlertSinks() }));
  app.post<{ Body: { url: string } }>(
    '/alerts/sinks',
    { schema: { body: { type: 'object', required: ['url'], additionalProperties: false, properties: { url: { type: 'string', maxLength: 2000 } } } } },
    async (request, reply) => reply.status(201).send(await api.addAlertSink(request.body.url)),
  );
  app.delete<{ Params: { id: string } }>('/alerts/sinks/:id', { schema: { params: idParams } }, async (request, reply) => {
    await api.removeAlertSink(Number(request.params.id));
    return reply.status(204).send();
  });
}

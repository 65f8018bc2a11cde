/**
 * `GET /metrics`: Prometheus's text format (docs/monitoring.md), and the request durations it reports, timed
 * per route pattern (so paths with group or topic names do not multiply series).
 */
import type { FastifyInstance } from 'fastify';
import type { BrokerMetrics } from '../../monitoring/metrics.js';

export function registerMetricsRoutes(app: FastifyInstance, metrics: BrokerMetrics): void {
  app.addHook('onResponse', async (request, reply) => {
    metrics.httpRequestDuration.observe(
      { method: request.method, route: request.routeOptions.url ?? 'unmatched', status_code: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
  });
  app.get('/metrics', async (_request, reply) => reply.type(metrics.contentType).send(await metrics.scrape()));
}

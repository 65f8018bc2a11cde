/** The cluster (docs/cluster.md): `GET /cluster`, what `onelog cluster describe` shows. */
import type { FastifyInstance } from 'fastify';
import type { OnelogApi } from '../../protocol/api.js';

export function registerClusterRoutes(app: FastifyInstance, api: OnelogApi): void {
  app.get('/cluster', async () => api.describeCluster());
}

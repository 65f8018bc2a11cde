/**
 * The cluster (docs/cluster.md): `GET /cluster`, what `onelog cluster describe` shows; `POST /cluster/brokers/:brokerId/drain`,
 * what `onelog cluster drain BROKER` starts (admin rights: alter on the cluster).
 */
import type { FastifyInstance } from 'fastify';
import type { OnelogApi } from '../../protocol/api.js';

export function registerClusterRoutes(app: FastifyInstance, api: OnelogApi): void {
  app.get('/cluster', async () => api.describeCluster());
  app.post<{ Params: { brokerId: string } }>('/cluster/brokers/:brokerId/drain', async (req) =>
    api.drainBroker(/^\d{1,10}$/.test(req.params.brokerId) ? Number(req.params.brokerId) : Number.NaN)); // NaN: refused INVALID_REQUEST
}

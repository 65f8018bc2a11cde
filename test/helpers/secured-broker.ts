/**
 * A broker and its HTTP server as `onelog serve` builds them (users, ACLs, audit, metrics), in process, on a loopback
 * port: for tests of who may do what. Stopped after the test.
 */
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterEach } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import type { BrokerOptions } from '../../src/broker/options.js';
import { createHttpServer } from '../../src/server/http-server.js';
import type { HttpServerOptions } from '../../src/server/http-server.js';
import { tmpDir } from './tmp.js';

export interface SecuredBroker {
  broker: Broker;
  app: FastifyInstance;
  url: string;
  dataDir: string;
  /** Stops the server and the broker now (to restart on the same data directory). */
  stop(): Promise<void>;
}

const running = new Set<SecuredBroker>();

/**
 * Opens a broker on `dataDir` (default: a fresh one) and serves it. `insecure`: as `serve --insecure`; `broker` and
 * `server`: more options of each (limits, quotas, a clock).
 */
export async function serveSecured(options: {
  dataDir?: string; insecure?: boolean; broker?: Partial<BrokerOptions>; server?: HttpServerOptions;
} = {}): Promise<SecuredBroker> {
  const dataDir = options.dataDir ?? tmpDir();
  const broker = await Broker.open({ ...options.broker, dataDir, insecure: options.insecure ?? false });
  const app = createHttpServer(broker, {
    access: { users: broker.users, acls: broker.acls }, audit: broker.audit, metrics: broker.metrics, ...options.server,
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const served: SecuredBroker = {
    broker, app, dataDir, url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`,
    stop: async () => {
      running.delete(served);
      await app.close();
      await broker.close();
    },
  };
  running.add(served);
  return served;
}

afterEach(async () => {
  for (const served of [...running]) await served.stop();
});

/**
 * A fresh cluster's stores for in-process brokers in cluster mode: a PostgreSQL schema (catalog, sequencer,
 * leases, registry), a Redis key prefix (offsets) and a prefix in an s3rver bucket (the log); each broker its own
 * data directory. Started by the caller's s3rver (test/helpers/s3.ts).
 */
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import { Broker } from '../../src/broker/broker.js';
import type { BrokerOptions } from '../../src/broker/options.js';
import { createHttpServer } from '../../src/server/http-server.js';
import type { S3Server } from './s3.js';
import { pgSchema, REDIS_URL, redisPrefix, uniqueName } from './services.js';
import { tmpDir } from './tmp.js';

export interface TestCluster {
  /** The schema's URL: the catalog's, the sequencer's and the leases' database. */
  pgUrl: string;
  /** Options of broker `brokerId` of this cluster, with `extra` over the defaults (flush window 5 ms). */
  options(brokerId: number, extra?: Partial<BrokerOptions>): BrokerOptions;
  /** Drops the schema and the Redis keys, removes the data directories. */
  dispose(): Promise<void>;
}

export async function testCluster(s3: S3Server, kind = 'cluster'): Promise<TestCluster> {
  const schema = await pgSchema(kind);
  const redis = redisPrefix();
  const prefix = uniqueName('log');
  const dirs: string[] = [];
  return {
    pgUrl: schema.url,
    options: (brokerId, extra = {}) => {
      const dataDir = tmpDir();
      dirs.push(dataDir);
      return {
        dataDir, catalog: schema.url, offsets: `${REDIS_URL}?keyPrefix=${redis.prefix}`,
        log: `s3://${s3.bucket}/${prefix}?endpoint=${encodeURIComponent(s3.endpoint)}`, brokerId, flushWindowMs: 5, ...extra,
      };
    },
    dispose: async () => {
      await schema.drop();
      await redis.drop();
      for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The stores of a cluster of `onelog serve` processes: a PostgreSQL schema, a Redis key prefix, a prefix in an s3rver bucket. */
export interface ServeCluster {
  schema: Awaited<ReturnType<typeof pgSchema>>;
  redis: ReturnType<typeof redisPrefix>;
  /** `--log`'s URL. */
  logUrl: string;
  /** The `serve` flags of broker `brokerId` on these stores (a flush window of 20 ms), `catalogUrl` for `--catalog`. */
  serveArgs(brokerId: number, catalogUrl?: string): string[];
}

/** Fresh stores for a cluster of `onelog serve` processes (the caller drops `schema` and `redis` at the end). */
export async function serveCluster(s3: S3Server, kind: string): Promise<ServeCluster> {
  const schema = await pgSchema(kind);
  const redis = redisPrefix();
  const logUrl = `s3://${s3.bucket}/${uniqueName('log')}?endpoint=${encodeURIComponent(s3.endpoint)}`;
  return {
    schema, redis, logUrl,
    serveArgs: (brokerId, catalogUrl = schema.url) => [
      '--catalog', catalogUrl, '--offsets', `${REDIS_URL}?keyPrefix=${redis.prefix}`, '--log', logUrl, '--broker-id', String(brokerId), '--flush-window-ms', '20',
    ],
  };
}

/** Brokers of one test cluster, each behind its HTTP server on a loopback port and advertised at it. */
export interface ServedBrokers {
  brokers: Broker[];
  /** Each broker's HTTP server. */
  servers: Array<ReturnType<typeof createHttpServer>>;
  /** Each broker's URL, as advertised. */
  urls: string[];
  /** Closes the servers and the brokers, then disposes of the cluster's stores. */
  close(): Promise<void>;
}

/** Opens brokers 1..`count` of `cluster` (with `extra` options), each served on `127.0.0.1:0` and advertised there. */
export async function servedBrokers(cluster: TestCluster, count: number, extra: Partial<BrokerOptions> = {}): Promise<ServedBrokers> {
  const brokers: Broker[] = [];
  const apps: Array<ReturnType<typeof createHttpServer>> = [];
  const urls: string[] = [];
  for (let id = 1; id <= count; id++) {
    const broker = await Broker.open(cluster.options(id, extra));
    const app = createHttpServer(broker);
    brokers.push(broker);
    apps.push(app);
    await app.listen({ port: 0, host: '127.0.0.1' });
    urls.push(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}`);
    await broker.advertise({ url: urls[id - 1]! });
  }
  return {
    brokers, urls, servers: apps,
    close: async () => {
      for (const app of apps) await app.close();
      for (const broker of brokers) await broker.close();
      await cluster.dispose();
    },
  };
}

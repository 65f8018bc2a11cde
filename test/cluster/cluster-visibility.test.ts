/**
 * Issue 38, points 4 and 6, on three real `onelog serve` processes of one cluster (PostgreSQL, Redis, an s3rver):
 * `topics describe` names each partition's leader (broker id, URL, lease epoch) and `groups describe` the group's
 * coordinator, in text and JSON; `/metrics` has the cluster's series (brokers live, leases held, PUT and commit
 * latency, object store and PostgreSQL errors), answered still while the object store is down; broker 1 listens on 0.0.0.0 with `--kafka-advertised-address`, which
 * Kafka's Metadata (from itself and from another broker) and the cluster registry name; `/health` reports each
 * dependency, answers 503 naming the catalog while a transaction holds `LOCK TABLE` on the partitions table (which
 * every commit updates: a produce waits meanwhile, and its slow commit is logged), and ok again once it is released,
 * logging both changes; then names the log once the object store is stopped. Besides: the embedded default names
 * itself as leader and coordinator; a malformed `--kafka-advertised-address` and a `search_path` naming a schema that
 * does not exist are refused with what to do.
 */
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { HttpApi } from '../../src/client/http-api.js';
import { metadataRequest, metadataResponse } from '../../src/kafka/messages/metadata.js';
import type { ClusterDescription } from '../../src/protocol/cluster.js';
import type { GroupDescription } from '../../src/protocol/groups.js';
import type { HealthReport } from '../../src/protocol/health.js';
import type { TopicDescription } from '../../src/protocol/topics.js';
import { waitFor } from '../helpers/children.js';
import { call } from '../helpers/kafka-wire.js';
import { runCli, startServer } from '../helpers/processes.js';
import type { ServerProcess } from '../helpers/processes.js';
import { s3ForFile } from '../helpers/s3-suite.js';
import { PG_URL, uniqueName } from '../helpers/services.js';
import { serveCluster } from '../helpers/cluster.js';
import { tmpDir } from '../helpers/tmp.js';

const s3 = s3ForFile();

/** A TCP port free now on loopback (the kernel's pick, released for the broker to take). */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** `GET /health` of `url`: its status code and answer. */
async function health(url: string): Promise<{ code: number; body: HealthReport }> {
  const res = await fetch(`${url}/health`);
  return { code: res.status, body: await res.json() as HealthReport };
}

/** The value of the series `name{labels}` in Prometheus text `text` (labels as written, e.g. `kind="partition"`), or undefined. */
function sample(text: string, name: string, labels = ''): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(labels === '' ? `${name} ` : `${name}{${labels}} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

interface Metadata {
  brokers: Array<{ nodeId: number; host: string; port: number }>;
}

describe('seeing the cluster: three onelog serve processes', () => {
  it('names leaders and coordinators, exports cluster metrics, advertises the Kafka address given, and says which dependency is down', async () => {
    const { schema, redis, serveArgs } = await serveCluster(s3(), 'visibility');
    const brokers: ServerProcess[] = [];
    const logs: Array<Array<Record<string, unknown>>> = [[], [], []];
    const locker = schema.pool(1);
    try {
      const [httpPort, kafkaPort] = [await freePort(), await freePort()];
      for (const id of [1, 2, 3]) {
        const own = id === 1
          // Broker 1 as docs/cluster.md starts one: on every interface, advertising addresses clients can reach.
          ? ['--host', '0.0.0.0', '--insecure', '--port', String(httpPort), '--advertised-url', `http://127.0.0.1:${httpPort}`,
            '--kafka-port', String(kafkaPort), '--kafka-advertised-address', `localhost:${kafkaPort}`]
          : ['--kafka-port', '0'];
        brokers.push(await startServer(tmpDir(), {
          args: [...serveArgs(id), ...own],
          onLog: (entry) => logs[id - 1]!.push(entry),
        }));
      }
      const urls = [`http://127.0.0.1:${httpPort}`, brokers[1]!.url, brokers[2]!.url];

      // (a) Each broker leads the partition it produced to first; broker 2 coordinates the group it subscribed.
      await new HttpApi(urls[0]!).createTopic({ topic: 'edits', partitions: 3 });
      for (const i of [0, 1, 2]) {
        await new HttpApi(urls[i]!).produce({ topic: 'edits', records: [{ key: null, value: Buffer.from(`from ${i + 1}`), partition: i }] });
      }
      await new HttpApi(urls[1]!).subscribe({ groupId: 'indexer', topic: 'edits', startPolicy: 'earliest' });

      const topicJson = await runCli(urls[2]!, ['topics', 'describe', 'edits', '--json']);
      expect(topicJson.code, topicJson.stderr).toBe(0);
      const topic = JSON.parse(topicJson.stdout) as TopicDescription;
      expect(topic.partitions.map((p) => [p.partition, p.highWatermark, p.leader?.brokerId, p.leader?.url])).toEqual([
        [0, 1, 1, urls[0]], [1, 1, 2, urls[1]], [2, 1, 3, urls[2]],
      ]);
      for (const p of topic.partitions) expect(p.leader!.epoch).toBeGreaterThanOrEqual(1);
      const topicText = await runCli(urls[0]!, ['topics', 'describe', 'edits']);
      expect(topicText.stdout).toMatch(/PARTITION\s+LOG-START-OFFSET\s+HIGH-WATERMARK\s+RECORDS\s+LEADER\s+LEADER-URL\s+LEADER-EPOCH/);
      expect(topicText.stdout).toMatch(new RegExp(`\\n1\\s+0\\s+1\\s+1\\s+2\\s+${urls[1]!.replace(/[.]/g, '\\.')}\\s+${topic.partitions[1]!.leader!.epoch}\\n`));

      const groupJson = await runCli(urls[0]!, ['groups', 'describe', 'indexer', '--json']);
      expect(groupJson.code, groupJson.stderr).toBe(0);
      expect((JSON.parse(groupJson.stdout) as GroupDescription).coordinator).toEqual({ brokerId: 2, url: urls[1] });
      // Broker 3 does not coordinate the group: the console's header has it answered by the coordinator.
      const groupHttp = await (await fetch(`${urls[2]}/groups/indexer`, { headers: { 'x-onelog-forward': 'coordinator' } })).json() as GroupDescription;
      expect(groupHttp.coordinator).toEqual({ brokerId: 2, url: urls[1] });
      expect((await runCli(urls[2]!, ['groups', 'describe', 'indexer'])).stdout).toContain(`coordinator: broker 2 ${urls[1]}`);

      // (b) The cluster's series, as broker 2 sees them.
      const metrics = await (await fetch(`${urls[1]}/metrics`)).text();
      expect(sample(metrics, 'onelog_cluster_brokers_live')).toBe(3);
      expect(sample(metrics, 'onelog_cluster_leases_held', 'kind="partition"')).toBe(1);
      expect(sample(metrics, 'onelog_cluster_leases_held', 'kind="group"')).toBe(1);
      expect(sample(metrics, 'onelog_object_store_request_duration_seconds_count', 'action="put"')).toBeGreaterThanOrEqual(1);
      expect(sample(metrics, 'onelog_sequencer_commit_duration_seconds_count')).toBeGreaterThanOrEqual(1);
      expect(sample(metrics, 'onelog_postgres_errors_total')).toEqual(expect.any(Number));
      expect(metrics).toContain('onelog_object_store_errors_total');
      expect(sample(metrics, 'onelog_dependency_up', 'dependency="log"')).toBe(1);

      // (d) Broker 1 listens on 0.0.0.0 and is advertised, to Kafka clients and in the registry, at the address given.
      for (const port of [kafkaPort, Number((logs[1]!.find((e) => e.msg === 'onelog is listening')!.kafka as string).split(':')[1])]) {
        const m = await call(port, 3, 9, metadataRequest, metadataResponse, { topics: [], allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false }) as unknown as Metadata;
        expect(m.brokers.find((b) => b.nodeId === 1)).toMatchObject({ nodeId: 1, host: 'localhost', port: kafkaPort });
      }
      const cluster = JSON.parse((await runCli(urls[2]!, ['cluster', 'describe', '--json'])).stdout) as ClusterDescription;
      expect(cluster.brokers.find((b) => b.brokerId === 1)!.kafkaAddress).toBe(`localhost:${kafkaPort}`);
      expect(logs[0]!.some((e) => e.level === 40 && /Kafka clients will be told/.test(String(e.msg)))).toBe(false);

      // (c) Every dependency answers.
      const ok = await health(urls[0]!);
      expect(ok.code).toBe(200);
      expect(ok.body.status).toBe('ok');
      expect(ok.body.down).toEqual([]);
      expect(Object.fromEntries(Object.entries(ok.body.dependencies).map(([name, d]) => [name, d.status]))).toEqual({ catalog: 'ok', offsets: 'ok', log: 'ok' });
      expect(ok.body.dependencies.offsets!.probe).toBe('PING');

      // A lock on the partitions table, as a migration or an operator's LOCK TABLE takes it: commits wait, /health says so.
      const lock = await locker.connect();
      await lock.query('BEGIN');
      await lock.query('LOCK TABLE onelog_partitions IN ACCESS EXCLUSIVE MODE');
      const stalled = new HttpApi(urls[0]!).produce({ topic: 'edits', records: [{ key: null, value: Buffer.from('during the lock'), partition: 0 }] });
      let blocked: { code: number; body: HealthReport };
      try {
        blocked = await health(urls[0]!);
      } finally {
        await lock.query('ROLLBACK');
        lock.release();
      }
      expect(blocked.code).toBe(503);
      expect(blocked.body.status).toBe('down');
      expect(blocked.body.down).toEqual(['catalog']);
      expect(blocked.body.dependencies.catalog).toMatchObject({ status: 'blocked', error: expect.stringContaining('a lock on onelog_partitions') });
      expect(blocked.body.dependencies.log!.status).toBe('ok');
      expect((await stalled).offsets).toEqual([{ partition: 0, offset: 1 }]);
      const back = await health(urls[0]!);
      expect([back.code, back.body.down]).toEqual([200, []]);
      // The broker's log lines arrive on its stdout after the answers: waited for, each.
      const logged = (i: number, what: string, match: (e: Record<string, unknown>) => boolean) => waitFor(what, () => logs[i]!.find(match));
      expect(await logged(0, 'the warning that the catalog is blocked', (e) => e.level === 40 && e.dependency === 'catalog'))
        .toMatchObject({ status: 'blocked', msg: expect.stringContaining('catalog is blocked') });
      expect(await logged(0, 'the news that the catalog is back', (e) => e.level === 30 && e.dependency === 'catalog'))
        .toMatchObject({ status: 'ok', was: 'blocked', msg: expect.stringContaining('catalog is back') });
      await logged(0, 'the warning of the slow commit', (e) => e.level === 40 && /a commit \(PostgreSQL\) took over a second/.test(String(e.msg)));

      // The object store stopped: /health names the log, the probe's failure counts as an object store error.
      await s3().close();
      const down = await health(urls[1]!);
      expect(down.code).toBe(503);
      expect(down.body.down).toEqual(['log']);
      expect(down.body.dependencies.log).toMatchObject({ status: 'down', probe: 'ListObjectsV2 MaxKeys=1' });
      expect(down.body.dependencies.catalog!.status).toBe('ok');
      await logged(1, 'the warning that the log is down', (e) => e.level === 40 && e.dependency === 'log' && e.status === 'down');
      const after = await (await fetch(`${urls[1]}/metrics`)).text();
      expect(sample(after, 'onelog_object_store_errors_total', 'action="list"')).toBeGreaterThanOrEqual(1);
      expect(sample(after, 'onelog_dependency_up', 'dependency="log"')).toBe(0);
      expect(sample(after, 'onelog_cluster_brokers_live')).toBe(3);
      // The scrape is answered: the parts that read records (lost with the object store) say they failed.
      expect(Math.max(...['logs', 'groups', 'share_groups'].map((part) => sample(after, 'onelog_metrics_read_failed', `part="${part}"`)!))).toBe(1);
    } finally {
      for (const b of brokers) await b.stop();
      await redis.drop();
      await schema.drop();
    }
  });
});

describe('the embedded default and refused starts', () => {
  it('names the one broker as every partition\'s leader and the group\'s coordinator, and reports its dependencies', async () => {
    const server = await startServer(tmpDir());
    try {
      const api = new HttpApi(server.url);
      await api.createTopic({ topic: 't', partitions: 2 });
      await api.subscribe({ groupId: 'g', topic: 't', startPolicy: 'earliest' });
      const topic = JSON.parse((await runCli(server.url, ['topics', 'describe', 't', '--json'])).stdout) as TopicDescription;
      expect(topic.partitions.map((p) => p.leader)).toEqual([0, 1].map(() => ({ brokerId: null, url: server.url, epoch: null })));
      const group = JSON.parse((await runCli(server.url, ['groups', 'describe', 'g', '--json'])).stdout) as GroupDescription;
      expect(group.coordinator).toEqual({ brokerId: null, url: server.url });
      expect((await runCli(server.url, ['groups', 'describe', 'g'])).stdout).toContain(`coordinator: this broker ${server.url}`);
      const ok = await health(server.url);
      expect(ok.code).toBe(200);
      expect(ok.body).toMatchObject({ status: 'ok', down: [], dependencies: {
        catalog: { status: 'ok', engine: 'sqlite', probe: 'none' }, offsets: { status: 'ok', engine: 'lmdb' }, log: { status: 'ok', engine: 'segment files' },
      } });
    } finally {
      await server.stop();
    }
  });

  it('refuses a --kafka-advertised-address that is not HOST:PORT, and a search_path naming no schema that exists', async () => {
    for (const address of ['0.0.0.0:9092', 'broker1', 'broker1:0', 'broker1:9092x']) {
      await expect(startServer(tmpDir(), { args: ['--kafka-port', '0', '--kafka-advertised-address', address] }))
        .rejects.toThrow(/INVALID_CONFIG.*--kafka-advertised-address is the HOST:PORT Kafka clients connect to/);
    }
    await expect(startServer(tmpDir(), { args: ['--kafka-advertised-address', 'localhost:9092'] })).rejects.toThrow(/give --kafka-port too/);
    const missing = uniqueName('missing');
    await expect(startServer(tmpDir(), { args: ['--catalog', `${PG_URL}?options=-csearch_path%3D${missing}`] }))
      .rejects.toThrow(new RegExp(`INVALID_CONFIG.*the schema ${missing} named by search_path does not exist: create it first \\(psql: CREATE SCHEMA ${missing};\\)`));
  });
});

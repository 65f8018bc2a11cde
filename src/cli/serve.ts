/**
 * `onelog serve`: the broker on a data directory, behind the HTTP/JSON API. Logs are human-readable lines on a
 * terminal (pino-pretty) and JSON lines otherwise (or with `--log-format json`), one object per line as pino
 * writes them.
 */
import type { Command } from 'commander';
import type { Logger as PinoLogger } from 'pino';
import { OnelogError } from '../protocol/errors.js';
import { redactUrl } from '../protocol/urls.js';
import { DEFAULT_SERVER_LIMITS } from '../security/limits.js';
import { MAX_PARTITIONS } from '../protocol/validate.js';
import { DEFAULT_LEASE_MS } from '../protocol/cluster.js';
import { action, parseInteger } from './common.js';
import { parseServerUrls } from '../client/http-api.js';

interface ServeOptions {
  dataDir: string;
  catalog?: string;
  offsets?: string;
  log?: string;
  brokerId?: number;
  flushWindowMs?: number;
  leaseMs?: number;
  advertisedUrl?: string;
  port: number;
  host: string;
  logLevel: string;
  logFormat?: string;
  maxOpenFiles?: number;
  cleanerDedupeBufferBytes?: number;
  alertCheckIntervalMs: number;
  kafkaPort?: number;
  kafkaAdvertisedAddress?: string;
  kafkaMaxBufferedBytes?: number;
  autoCreateTopics?: boolean;
  defaultPartitions?: number;
  insecure?: boolean;
  tlsCert?: string;
  tlsKey?: string;
  tlsCa?: string;
  maxBodyBytes: number;
  maxRecordBytes: number;
  maxRecordsPerRequest: number;
  maxFrameBytes: number;
  maxConnections: number;
  maxInFlightPerConnection: number;
  idleTimeoutMs: number;
  requestTimeoutMs: number;
  quotaRequestsPerSec: number;
  quotaProduceBytesPerSec: number;
  webhookAllowPrivate?: boolean;
  webhookDenyPrivate?: boolean;
  allowMissingOffsets?: boolean;
}

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('run the broker: HTTP/JSON API over a data directory (embedded default: no other server needed)')
    .option('--data-dir <dir>', 'directory for the log, offsets and catalog', './data')
    .option('--catalog <url>', 'keep the catalog in PostgreSQL (postgres://HOST:PORT/DB) instead of the data directory\'s SQLite (docs/cluster.md)')
    .option('--offsets <url>', 'keep committed offsets in Redis (redis://HOST:PORT/DB), in the catalog\'s PostgreSQL (postgres) or in ' +
      'another one (postgres://HOST:PORT/DB) instead of the data directory\'s LMDB (docs/cluster.md)')
    .option('--log <url>', 'keep the log as objects in S3-compatible storage (s3://BUCKET?endpoint=URL; credentials from AWS_ACCESS_KEY_ID and ' +
      'AWS_SECRET_ACCESS_KEY), indexed in the --catalog PostgreSQL: cluster mode, with --offsets and --broker-id (docs/cluster.md)')
    .option('--broker-id <n>', 'this broker\'s id in the cluster, unique among its brokers (with --log)', parseInteger('--broker-id', 0, 0x7fffffff))
    .option('--flush-window-ms <ms>', 'how long produced batches wait to share one object, ms (with --log; default 50)', parseInteger('--flush-window-ms', 0, 10_000))
    .option('--lease-ms <ms>', 'how long a partition\'s or group\'s lease outlives its holder\'s last renewal, ms: how soon another broker ' +
      'takes over from a lost one (with --log; default 10000)', parseInteger('--lease-ms', 100, 3_600_000))
    .option('--advertised-url <url>', 'the URL clients reach this broker at, given to them by the others (with --log; default: ' +
      'http(s)://HOST:PORT as it listens)')
    .option('--port <n>', 'TCP port (0 = any free port)', parseInteger('--port', 0), 7070)
    .option('--host <address>', 'address to listen on', '127.0.0.1')
    .option('--log-level <level>', 'log level: fatal, error, warn, info, debug, trace, silent', 'info')
    .option('--log-format <format>', 'pretty (human-readable lines) | json (one JSON object per line); default: pretty on a terminal, else json')
    .option('--max-open-files <n>', 'file descriptors the log store may hold open at once (default: the open-files ' +
      'limit less max(64, a quarter of it), for connections, LMDB and SQLite)', parseInteger('--max-open-files'))
    .option('--cleaner-dedupe-buffer-bytes <n>', 'most memory of compaction\'s key map, bytes, shared by all partitions (Kafka\'s ' +
      'log.cleaner.dedupe.buffer.size): 24 bytes a key; a partition with more keys compacts in several passes ' +
      '(default 67108864, 64 MiB; 48 to 2147483648)', parseInteger('--cleaner-dedupe-buffer-bytes'))
    .option('--alert-check-interval-ms <ms>', 'how often every group is evaluated for alerts and sampled for the console\'s charts ' +
      '(0 = only on commits, retention runs, deletes and resets)', parseInteger('--alert-check-interval-ms', 0), 30_000)
    .option('--insecure', 'answer clients not on loopback while no user exists (protected mode off; docs/security.md)')
    .option('--tls-cert <file>', 'serve every listener over TLS with this certificate (PEM; with --tls-key; docs/security.md)')
    .option('--tls-key <file>', 'the private key (PEM) of --tls-cert')
    .option('--tls-ca <file>', 'ask every client for a certificate signed by this CA (PEM), and refuse those without one')
    .option('--max-body-bytes <n>', 'largest HTTP request body, bytes', parseInteger('--max-body-bytes', 1024), DEFAULT_SERVER_LIMITS.maxBodyBytes)
    .option('--max-record-bytes <n>', 'largest record (key + value + headers) or produced batch, bytes', parseInteger('--max-record-bytes', 1024), 1024 * 1024)
    .option('--max-records-per-request <n>', 'most records one produce request may carry', parseInteger('--max-records-per-request', 1), 100_000)
    .option('--max-frame-bytes <n>', 'largest WebSocket frame a client may send, bytes', parseInteger('--max-frame-bytes', 1024), DEFAULT_SERVER_LIMITS.maxFrameBytes)
    .option('--max-connections <n>', 'connections open at once, per listener', parseInteger('--max-connections', 1), DEFAULT_SERVER_LIMITS.maxConnections)
    .option('--max-in-flight-per-connection <n>', 'requests a data socket or Kafka connection has unanswered before reading pauses',
      parseInteger('--max-in-flight-per-connection', 1), DEFAULT_SERVER_LIMITS.maxInFlightPerConnection)
    .option('--idle-timeout-ms <ms>', 'an HTTP connection silent this long is closed (WebSockets are not)', parseInteger('--idle-timeout-ms', 1000),
      DEFAULT_SERVER_LIMITS.idleTimeoutMs)
    .option('--request-timeout-ms <ms>', 'a request not received whole this long after it began is answered 408 (slow clients)',
      parseInteger('--request-timeout-ms', 1000), DEFAULT_SERVER_LIMITS.requestTimeoutMs)
    .option('--quota-requests-per-sec <n>', 'requests per second per principal (token bucket; 0 = unlimited)', parseInteger('--quota-requests-per-sec', 0), 0)
    .option('--quota-produce-bytes-per-sec <n>', 'produced bytes per second per principal (token bucket; 0 = unlimited)',
      parseInteger('--quota-produce-bytes-per-sec', 0), 0)
    .option('--webhook-allow-private', 'allow webhooks (push endpoints, alert sinks) to internal destinations: loopback, private, link-local ' +
      'and other addresses that are not globally reachable, and this machine\'s own addresses (refused by default; docs/security.md)')
    .option('--webhook-deny-private', 'refuse webhooks to internal destinations: the default, kept for compatibility (not with --webhook-allow-private)')
    .option('--kafka-port <n>', 'also serve the Kafka protocol on this port, on --host (docs/kafka.md; 0 = any free port)', parseInteger('--kafka-port', 0, 65_535))
    .option('--kafka-advertised-address <host:port>', 'the HOST:PORT Kafka clients are told to connect to (Metadata, FindCoordinator), ' +
      'as Kafka\'s advertised.listeners; needed behind --host 0.0.0.0, a proxy or NAT (with --kafka-port; default: --host and the Kafka ' +
      'listener\'s port)')
    .option('--kafka-max-buffered-bytes <n>', 'bytes the Kafka listener holds of requests received and not yet handled, over all ' +
      'connections, before it stops reading until answers free some (as Kafka\'s queued.max.request.bytes; default 268435456, 256 MiB)',
    parseInteger('--kafka-max-buffered-bytes', 1024))
    .option('--auto-create-topics', 'create a topic a Kafka client names that does not exist, at a Metadata request that allows it and ' +
      'at a Produce (Kafka\'s auto.create.topics.enable; off by default; with ACLs it needs create on the topic or the cluster)')
    .option('--default-partitions <n>', 'partitions of a topic --auto-create-topics creates (Kafka\'s num.partitions; default 1)',
      parseInteger('--default-partitions', 1, MAX_PARTITIONS))
    .option('--allow-missing-offsets', 'start although the offset store lost the committed offsets of groups that committed (the start is ' +
      'refused otherwise): their partitions stay paused until onelog offsets reset ... --execute (docs/guarantees.md)')
    .addHelpText('after', SERVE_REFUSALS)
    .action(action(serve));
}

/** What `serve --help` says after the flags: the starts it refuses (docs/security.md, operator mistakes). */
const SERVE_REFUSALS = `
Refused starts (exit code 1; the broker closed, the data directory's lock released):
  a listener that cannot open (--port, --kafka-port in use): INVALID_CONFIG naming HOST:PORT and EADDRINUSE
  a log directory missing, or an offset store (offsets/data.mdb, Redis, PostgreSQL) missing the offsets of groups
  the catalog says committed: STORAGE_ERROR; --allow-missing-offsets starts with those groups' partitions paused
  --webhook-allow-private with --webhook-deny-private: INVALID_CONFIG
  --auto-create-topics without --kafka-port, --default-partitions without --auto-create-topics: INVALID_CONFIG
  --kafka-advertised-address without --kafka-port, or not HOST:PORT (an IPv6 host in brackets): INVALID_CONFIG

Refused webhooks (unless --webhook-allow-private): a push endpoint or alert sink naming localhost or an address that
is not globally reachable (127.0.0.0/8, ::1, 10/8, 172.16/12, 192.168/16, 100.64/10, 169.254/16, fe80::/10,
fc00::/7, 0.0.0.0, ::, multicast, reserved), an IPv6 form carrying one (::ffff:127.0.0.1, NAT64 64:ff9b::/96, 6to4
2002::/16), or an address of this machine: FORBIDDEN when given; a host name resolving to one fails each POST`;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const LOG_FORMATS = ['pretty', 'json'];

/**
 * The server's logger: pretty lines (time, level, message, then the fields) or JSON lines on stdout.
 * @param format `pretty` | `json`; default: pretty when stdout is a terminal
 */
async function serverLogger(level: string, format = process.stdout.isTTY ? 'pretty' : 'json'): Promise<PinoLogger> {
  const { pino } = await import('pino');
  if (format === 'json') return pino({ level });
  const { default: pretty } = await import('pino-pretty');
  return pino({ level }, pretty({ colorize: process.stdout.isTTY, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', sync: true }));
}

async function serve(options: ServeOptions): Promise<void> {
  if (!LOG_LEVELS.includes(options.logLevel)) {
    throw new OnelogError('INVALID_REQUEST', `--log-level must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(options.logLevel)}`);
  }
  if (options.logFormat !== undefined && !LOG_FORMATS.includes(options.logFormat)) {
    throw new OnelogError('INVALID_REQUEST', `--log-format must be one of ${LOG_FORMATS.join(', ')}, got ${JSON.stringify(options.logFormat)}`);
  }
  if (options.autoCreateTopics && options.kafkaPort === undefined) {
    throw new OnelogError('INVALID_CONFIG', '--auto-create-topics creates the topics Kafka clients name: give --kafka-port too, or leave it out', { option: 'auto-create-topics' });
  }
  const kafkaAdvertised = options.kafkaAdvertisedAddress === undefined ? null : checkKafkaAdvertisedAddress(options.kafkaAdvertisedAddress, options.kafkaPort);
  if (options.defaultPartitions !== undefined && !options.autoCreateTopics) {
    throw new OnelogError('INVALID_CONFIG', '--default-partitions is the partition count of topics --auto-create-topics creates: give that too, or leave it out', { option: 'default-partitions' });
  }
  if (options.advertisedUrl !== undefined) {
    if (options.log === undefined) {
      throw new OnelogError('INVALID_CONFIG', '--advertised-url is what the other brokers of a cluster send clients to: give --log s3://... too, or leave it out', { option: 'advertised-url' });
    }
    let urls: string[] = [];
    try {
      urls = parseServerUrls(options.advertisedUrl);
    } catch {
      // Named below.
    }
    if (urls.length !== 1) {
      throw new OnelogError('INVALID_CONFIG', `--advertised-url is the one http(s)://HOST:PORT URL clients reach this broker at, got ` +
        `${JSON.stringify(redactUrl(options.advertisedUrl))}`, { option: 'advertised-url' });
    }
    options.advertisedUrl = urls[0];
  }
  // Loaded here, not at the top: other commands must not load the storage engine, the logger, the security modules.
  const { Broker } = await import('../broker/broker.js');
  const { loadServerTls } = await import('../security/tls.js');
  const { Quotas } = await import('../security/quotas.js');
  const { systemClock } = await import('../common/clock.js');
  const { createHttpServer } = await import('../server/http-server.js');
  const { KafkaListener } = await import('../kafka/listener.js');
  const { defaultMaxOpenFiles, openFilesLimit } = await import('../log/segments/open-files-limit.js');
  const { MIN_OPEN_FILES } = await import('../log/segments/file-cache.js');
  if (options.maxOpenFiles !== undefined && options.maxOpenFiles < MIN_OPEN_FILES) {
    throw new OnelogError('INVALID_REQUEST', `--max-open-files must be at least ${MIN_OPEN_FILES} (a segment roll holds ` +
      `two segment files and a checkpoint at once), got ${options.maxOpenFiles}`);
  }
  const { checkOffsetMapBytes } = await import('../log/offset-map.js');
  if (options.cleanerDedupeBufferBytes !== undefined) checkOffsetMapBytes(options.cleanerDedupeBufferBytes, '--cleaner-dedupe-buffer-bytes');
  const tls = loadServerTls({ cert: options.tlsCert, key: options.tlsKey, ca: options.tlsCa });
  const limits = {
    maxBodyBytes: options.maxBodyBytes, maxFrameBytes: options.maxFrameBytes, maxConnections: options.maxConnections,
    maxInFlightPerConnection: options.maxInFlightPerConnection, idleTimeoutMs: options.idleTimeoutMs,
    requestTimeoutMs: options.requestTimeoutMs,
  };
  const logger = await serverLogger(options.logLevel, options.logFormat);
  const limit = openFilesLimit();
  const maxOpenFiles = options.maxOpenFiles ?? defaultMaxOpenFiles(limit);
  logger.info({ openFilesLimit: limit, maxOpenFiles }, 'open files: the log store keeps at most maxOpenFiles open, the rest of the limit is left to connections, LMDB and SQLite');
  if (maxOpenFiles > limit - 32) {
    logger.warn({ openFilesLimit: limit, maxOpenFiles }, '--max-open-files leaves fewer than 32 descriptors of the open-files limit to connections; they may be refused');
  }
  const broker = await Broker.open({
    dataDir: options.dataDir, catalog: options.catalog, offsets: options.offsets, log: options.log, brokerId: options.brokerId,
    flushWindowMs: options.flushWindowMs, leaseMs: options.leaseMs, logger, maxOpenFiles, cleanerDedupeBufferBytes: options.cleanerDedupeBufferBytes, monitoring: { alertCheckIntervalMs: options.alertCheckIntervalMs }, insecure: options.insecure ?? false,
    maxRecordBytes: options.maxRecordBytes, maxRecordsPerRequest: options.maxRecordsPerRequest, webhookAllowPrivate: options.webhookAllowPrivate ?? false,
    webhookDenyPrivate: options.webhookDenyPrivate ?? false,
    allowMissingOffsets: options.allowMissingOffsets ?? false,
  });
  if (!broker.users.any && !options.insecure && !isLoopbackHost(options.host)) {
    await broker.close();
    throw new OnelogError('FORBIDDEN', `refusing to listen on ${options.host}: no user exists, so anyone who reaches it could do anything. ` +
      'Start on 127.0.0.1, create the first user (onelog users create NAME; it is an admin) and start again, or pass --insecure', { host: options.host });
  }
  const quotas = new Quotas(systemClock, { requestsPerSec: options.quotaRequestsPerSec, produceBytesPerSec: options.quotaProduceBytesPerSec });
  if (options.insecure && !broker.users.any && !isLoopbackHost(options.host)) {
    logger.warn({ host: options.host }, 'protected mode is off (--insecure) and no user exists: anyone who reaches this address may do anything; ' +
      'create a user (onelog users create NAME) to require tokens');
  }
  const app = createHttpServer(broker, { logger: logger.child({ component: 'http' }), metrics: broker.metrics, access: { users: broker.users, acls: broker.acls }, audit: broker.audit,
    ...(tls ? { tls } : {}), limits, quotas, ...(options.log === undefined ? {} : { leaseMs: options.leaseMs ?? DEFAULT_LEASE_MS }),
  });
  // A listener that cannot open ends serve: the broker closes (releasing the data directory's lock) and the error names the port.
  let address: string;
  let kafka: Awaited<ReturnType<typeof KafkaListener.start>> | null = null;
  let kafkaAddress: string | null = null;
  try {
    address = await listening(app.listen({ port: options.port, host: options.host }), { listener: 'the HTTP API', flag: '--port', host: options.host, port: options.port });
    kafka = options.kafkaPort === undefined ? null : await listening(KafkaListener.start(broker, {
      host: options.host, port: options.kafkaPort, ...(kafkaAdvertised ? { advertisedHost: kafkaAdvertised.host, advertisedPort: kafkaAdvertised.port } : {}),
      logger: logger.child({ component: 'kafka' }), users: broker.users, acls: broker.acls, audit: broker.audit, ...(tls ? { tls } : {}),
      maxConnections: limits.maxConnections, maxInFlightPerConnection: limits.maxInFlightPerConnection, quotas,
      ...(options.kafkaMaxBufferedBytes === undefined ? {} : { maxBufferedBytes: options.kafkaMaxBufferedBytes }),
      autoCreateTopics: options.autoCreateTopics ? { partitions: options.defaultPartitions ?? 1 } : null,
    }), { listener: 'the Kafka listener', flag: '--kafka-port', host: options.host, port: options.kafkaPort });
    if (kafka) broker.metrics.watchKafka(kafka);
    kafkaAddress = kafka === null ? null : options.kafkaAdvertisedAddress ?? `${options.host}:${kafka.port}`;
    if (kafka !== null && options.kafkaAdvertisedAddress === undefined && (options.host === '0.0.0.0' || options.host === '::')) {
      logger.warn({ kafka: kafkaAddress }, `Kafka clients will be told to connect to ${kafkaAddress}, which they cannot reach: ` +
        'give --kafka-advertised-address HOST:PORT (docs/kafka.md)');
    }
    await broker.advertise({ url: options.advertisedUrl ?? address, kafkaAddress });
  } catch (err) {
    await kafka?.close();
    await app.close();
    await broker.close();
    throw err;
  }
  const engines = {
    catalog: options.catalog === undefined ? 'sqlite' : redactUrl(options.catalog),
    offsets: options.offsets === undefined ? 'lmdb' : redactUrl(options.offsets),
    log: options.log === undefined ? 'segment files' : options.log,
    ...(options.brokerId === undefined ? {} : { brokerId: options.brokerId }),
  };
  logger.info({ url: address, dataDir: options.dataDir, ...engines, ...(kafka ? { kafka: `${options.host}:${kafka.port}`, kafkaAdvertised: kafkaAddress } : {}) }, 'onelog is listening');

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    const draining = app.close();
    await kafka?.close();
    broker.endWaits();
    await draining;
    await broker.close();
    logger.info('stopped');
    logger.flush();
  };
  await new Promise<void>((resolve) => {
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void stop(signal).then(resolve));
  });
}

/** Why a port cannot be listened on, by the system's error code. */
const LISTEN_FAILURES: Record<string, string> = {
  EADDRINUSE: 'the address is in use (another onelog, or another program, listens there)',
  EACCES: 'permission denied (ports below 1024 need privileges)',
  EADDRNOTAVAIL: 'the address is not one of this machine\'s (--host)',
};

/**
 * Waits for a listener to open.
 * @throws OnelogError `INVALID_CONFIG` naming the listener, the address and port, the flag and the system's code
 *   (`errno`, e.g. `EADDRINUSE`) when it cannot
 */
async function listening<T>(opening: Promise<T>, where: { listener: string; flag: string; host: string; port: number }): Promise<T> {
  try {
    return await opening;
  } catch (err) {
    const errno = (err as NodeJS.ErrnoException).code;
    if (typeof errno !== 'string' || !errno.startsWith('E')) throw err;
    const why = LISTEN_FAILURES[errno] ?? (err as Error).message;
    throw new OnelogError('INVALID_CONFIG', `${where.listener} cannot listen on ${where.host}:${where.port} (${where.flag}): ${why} [${errno}]. ` +
      `Stop what holds it or give another ${where.flag} (0 = any free port); the broker was closed`,
    { option: where.flag.slice(2), host: where.host, port: where.port, errno });
  }
}

/**
 * Checks `--kafka-advertised-address`: `HOST:PORT` (an IPv6 host in brackets, `[::1]:9092`), port 1 to 65535, as Kafka's
 * advertised.listeners names an address. The host is not resolved: it is what clients will resolve.
 * @returns the host (without brackets) and port
 * @throws OnelogError `INVALID_CONFIG` without `--kafka-port`, or for anything else than HOST:PORT
 */
function checkKafkaAdvertisedAddress(address: string, kafkaPort: number | undefined): { host: string; port: number } {
  if (kafkaPort === undefined) {
    throw new OnelogError('INVALID_CONFIG', '--kafka-advertised-address is the address of the Kafka listener: give --kafka-port too, or leave it out',
      { option: 'kafka-advertised-address' });
  }
  const m = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})$/.exec(address);
  const port = m ? Number(m[2]) : 0;
  if (m === null || port < 1 || port > 65_535 || m[1] === '0.0.0.0' || m[1] === '[::]') {
    throw new OnelogError('INVALID_CONFIG', `--kafka-advertised-address is the HOST:PORT Kafka clients connect to (e.g. broker1.example.com:9092, ` +
      `10.0.0.5:9092 or [2001:db8::5]:9092; port 1 to 65535, not a wildcard address), got ${JSON.stringify(address)}`,
    { option: 'kafka-advertised-address' });
  }
  const host = m[1]!;
  return { host: host.startsWith('[') ? host.slice(1, -1) : host, port };
}

/** Whether `--host` is a loopback address (or localhost). */
function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || /^127\./.test(host) || host === '::1';
}

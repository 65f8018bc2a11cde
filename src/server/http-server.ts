/**
 * The HTTP/JSON face of a broker (fastify). Routes map one to one onto {@link OnelogApi}; docs/http-api.md
 * lists them. Errors answer `{ code, message, ...context }` with the registry's HTTP status; fastify's own
 * failures (malformed JSON, schema violations, oversized bodies, unknown routes, a malformed percent-escape in the
 * path) and node's (bytes that are not HTTP, headers too large, a request not received in time) are mapped to
 * registry codes too, so every error a client sees has a stable code, never one of fastify's (`FST_ERR_...`).
 */
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import Fastify, { LogController } from 'fastify';
import type { FastifyBaseLogger, FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { BinaryDataApi, OnelogApi } from '../protocol/api.js';
import { OnelogError } from '../protocol/errors.js';
import { guarded } from '../common/guard.js';
import { silentLogger } from '../common/logger.js';
import { httpErrorResponse, refuseHttpConnection, refuseUpgrade } from './socket-answers.js';
import { forwardToCoordinator } from './coordinator-forward.js';
import { resourceExhausted } from '../common/resource-exhausted.js';
import { dataSockets } from './data-socket.js';
import { pushSockets } from './push-socket.js';
import { registerAlertRoutes } from './routes/alerts.js';
import { registerDeadLetterRoutes } from './routes/dead-letters.js';
import { registerShareGroupRoutes } from './routes/share-groups.js';
import { registerGroupRoutes } from './routes/groups.js';
import { registerTopicRoutes } from './routes/topics.js';
import { registerRecordRoutes } from './routes/records.js';
import { registerMetricsRoutes } from './routes/metrics.js';
import { consoleRoutes } from './routes/console.js';
import { registerUserRoutes } from './routes/users.js';
import { registerAclRoutes } from './routes/acls.js';
import { registerClusterRoutes } from './routes/cluster.js';
import { registerEventRoutes } from './routes/events.js';
import type { EventStreamOptions } from './routes/events.js';
import { registerOverviewRoutes } from './routes/overview.js';
import type { ChangeSource } from '../protocol/changes.js';
import type { HealthReport } from '../protocol/health.js';
import { LEASE_MS_HEADER } from '../protocol/cluster.js';
import { authenticateUpgrade, registerAccessControl, registerQuotas } from './access.js';
import { LOOPBACK_ADMIN } from '../security/principal.js';
import type { Access } from './access.js';
import type { ServerTls } from '../security/tls.js';
import type { Quotas } from '../security/quotas.js';
import { DEFAULT_SERVER_LIMITS, limitConnections } from '../security/limits.js';
import type { ServerLimits } from '../security/limits.js';
import type { Audit } from '../security/audit.js';
import { registerAuditRoutes } from './routes/audit.js';
import { registerAccessRightsRoutes } from './routes/access-rights.js';
import type { BrokerMetrics } from '../monitoring/metrics.js';

/** Options of the HTTP server. */
export interface HttpServerOptions {
  /** Body, frame, connection and in-flight limits. @default {@link DEFAULT_SERVER_LIMITS} */
  limits?: Partial<ServerLimits>;
  /** Per-principal rates every request and data-path frame is held to. @default none: unlimited */
  quotas?: Quotas;
  /**
   * A pino logger: failed requests at warn/error, and every request at debug (`request completed` with its
   * status and time; as Kafka's request log, off at the default level: a line per request costs as much as
   * the request). @default none (no request logging)
   */
  logger?: FastifyBaseLogger;
  /** The broker's metrics, served at `GET /metrics`. @default none (no /metrics route) */
  metrics?: BrokerMetrics;
  /**
   * The users every request and WebSocket upgrade is authenticated against and the ACLs every request and frame
   * is authorized against (the permission table, src/security/permissions.ts), with the `/users` and `/acls`
   * routes (docs/security.md). @default none: no access control (an embedded server in a test or a process of its own)
   */
  access?: Access;
  /** Serve HTTPS (and WSS) with these settings (`serve --tls-cert --tls-key [--tls-ca]`). @default none: plain HTTP */
  tls?: ServerTls;
  /** Where audited operations are recorded, and `GET /audit` (docs/security.md). @default none: nothing recorded */
  audit?: Audit;
  /**
   * Bounds and pace of `GET /events`, served when the API tells its changes (the embedded broker does).
   * @default see {@link EventStreamOptions}
   */
  events?: EventStreamOptions;
  /**
   * Cluster mode's lease length, ms (`serve --lease-ms`): every answer carries it in the `x-onelog-lease-ms` header,
   * from which the clients bound how long they wait for this broker before trying another (a broker paused or cut
   * off past its leases has lost them to another; docs/cluster.md). @default none: no header (the embedded default)
   */
  leaseMs?: number;
}

/** Fastify's per-request lines (`incoming request`, `request completed`) at debug instead of info; errors as fastify logs them. */
class DebugRequestLogs extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) super.requestCompleted(error, request, reply);
    else reply.log.debug({ res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }
}

/**
 * Builds the fastify app over `api` (not yet listening): `await app.listen({ port, host })` to serve,
 * `app.inject()` to test.
 */
export function createHttpServer(api: OnelogApi, options: HttpServerOptions = {}): FastifyInstance {
  const limits = { ...DEFAULT_SERVER_LIMITS, ...options.limits };
  const app = Fastify({
    ...(options.tls ? { https: options.tls } : {}),
    ...(options.logger ? { loggerInstance: options.logger } : { logger: false }),
    logController: new DebugRequestLogs(),
    bodyLimit: limits.maxBodyBytes,
    connectionTimeout: limits.idleTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    // Names travel in the path: topic names up to 249 characters (Kafka's limit), group ids longer, percent-encoded.
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    ajv: { customOptions: { coerceTypes: false, allErrors: false, allowUnionTypes: true, removeAdditional: false } },
    // Errors of routing, before any route or hook runs (a malformed percent-escape, a parameter too long): fastify
    // would answer them with its own codes (FST_ERR_BAD_URL).
    frameworkErrors: (err: FastifyError, _request: FastifyRequest, reply: FastifyReply) => {
      const e = toOnelogError(err);
      void reply.status(e.httpStatus).send(e.toJSON());
    },
    clientErrorHandler: answerClientError,
    // A request that reaches a closing server (on a kept-alive connection) is answered by the onRequest hook below, in
    // onelog's terms: fastify's own answer (503 `Service Unavailable`, no code) reached the clients as INTERNAL_ERROR,
    // which they do not retry (issue 38).
    return503OnClosing: false,
  });
  let closing = false;
  app.addHook('onRequest', async (_request, reply) => {
    if (closing) {
      // The connection ends with the answer: a closing server waits for its connections, and the client reconnects elsewhere.
      void reply.header('connection', 'close');
      throw new OnelogError('BROKER_CLOSED', 'the broker is shutting down; nothing of the request was done: send it to another broker');
    }
  });
  if (options.leaseMs !== undefined) {
    const leaseMs = String(options.leaseMs);
    app.addHook('onRequest', async (_request, reply) => {
      void reply.header(LEASE_MS_HEADER, leaseMs);
    });
  }

  app.setErrorHandler(async (err: FastifyError | OnelogError, request, reply) => {
    const e = toOnelogError(err);
    // A group another broker coordinates: its answer, so one broker's URL (the console's) reaches every group.
    if (await forwardToCoordinator(request, reply, e, limits.requestTimeoutMs)) return reply;
    // Running out of a resource is expected under load and answered for each request: one short line, no stack.
    if (e.code === 'RESOURCE_EXHAUSTED') request.log.warn({ code: e.code, resource: e.context.resource }, e.message);
    // Cluster mode's routing answers (docs/cluster.md): the client goes to the broker named; nothing went wrong here.
    else if (e.code === 'NOT_COORDINATOR' || e.code === 'NOT_LEADER_OR_FOLLOWER') request.log.debug({ code: e.code, ...e.context }, e.message);
    else if (e.httpStatus >= 500) request.log.error({ err }, 'request failed');
    return reply.status(e.httpStatus).send(e.toJSON());
  });
  app.setNotFoundHandler((request, reply) => {
    const e = new OnelogError('NOT_FOUND', `no route ${request.method} ${request.url}; see docs/http-api.md`);
    void reply.status(e.httpStatus).send(e.toJSON());
  });

  limitConnections(app.server, limits.maxConnections, refuseHttpConnection(limits.maxConnections));
  app.server.headersTimeout = Math.min(10_000, limits.requestTimeoutMs);
  // Deep nesting costs every later step (validation, serializing a record value, the audit) stack: refused first.
  app.addHook('preValidation', async (request) => {
    if (depthOf(request.body) > MAX_JSON_DEPTH) {
      throw new OnelogError('INVALID_REQUEST', `the JSON body is nested deeper than ${MAX_JSON_DEPTH} levels`, { maxDepth: MAX_JSON_DEPTH });
    }
  });
  // Hooks first (they apply to the routes registered after them): access control, quotas, the audit.
  if (options.access) registerAccessControl(app, options.access);
  if (options.quotas?.limited) registerQuotas(app, options.quotas);
  if (options.audit) registerAuditRoutes(app, options.audit);
  if (options.access) {
    registerUserRoutes(app, options.access.users);
    registerAclRoutes(app, options.access.acls);
  }
  // The idle timeout is for connections with no request under way: one waiting for its answer (a long poll, a
  // compaction with wait: true) is not idle, so the timeout is off from the handler's start to the response.
  // (app.inject() requests have a socket without timeouts.)
  app.addHook('preHandler', async (request) => {
    request.raw.socket?.setTimeout?.(0);
  });
  app.addHook('onResponse', async (request) => {
    request.raw.socket?.setTimeout?.(limits.idleTimeoutMs);
  });
  // Without dependency checks (an OnelogApi that is not a Broker) the process answering is all /health says. The route
  // needs no token: with access control, a request without a valid one learns only which dependency is down, not the
  // engines' addresses and errors.
  app.get('/health', async (request, reply) => {
    if (!isHealthSource(api)) return { status: 'ok' };
    const report = await api.health();
    const detailed = options.access === undefined || signedIn(options.access, request.headers.authorization, request.socket.remoteAddress);
    return reply.code(report.status === 'ok' ? 200 : 503).send(detailed ? report : statusesOnly(report));
  });

  registerTopicRoutes(app, api);
  registerRecordRoutes(app, api);
  registerGroupRoutes(app, api);
  registerDeadLetterRoutes(app, api);
  registerShareGroupRoutes(app, api);
  registerAlertRoutes(app, api);
  registerAccessRightsRoutes(app, options.access?.acls);
  registerOverviewRoutes(app, api);
  registerClusterRoutes(app, api);
  const events = isChangeSource(api) ? registerEventRoutes(app, api, options.access?.acls, options.events) : null;
  if (options.metrics) registerMetricsRoutes(app, options.metrics);
  void app.register(consoleRoutes, {});

  // WebSockets: push streams (and their counters: what each session holds) and the binary data path
  // (docs/delivery.md). Any other upgrade is answered 404.
  const logger = options.logger ?? silentLogger;
  const sockets = { acls: options.access?.acls, audit: options.audit, users: options.access?.users, quotas: options.quotas, limits, logger };
  const push = pushSockets(api, sockets);
  const data = isBinaryDataApi(api) ? dataSockets(api, sockets) : null;
  // Outside fastify's request lifecycle: whatever the upgrade throws (no token, a malformed path) is answered as an
  // HTTP error with onelog's error body, and the socket destroyed.
  app.server.on('upgrade', guarded((request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const principal = options.access ? authenticateUpgrade(options.access.users, request) : LOOPBACK_ADMIN;
    if (push.upgrade(request, socket, head, principal) || data?.upgrade(request, socket, head, principal)) return;
    throw new OnelogError('NOT_FOUND', `no WebSocket at ${request.url ?? ''}: upgrade GET /groups/:group/stream (push) or GET /data; see docs/delivery.md`);
  }, {
    what: 'websocket upgrade refused', logger, fields: (request) => ({ remote: request.socket.remoteAddress, url: request.url }),
    answer: (error, _request, socket) => refuseUpgrade(socket, error),
  }));
  // preClose: before the server waits for its connections, which an open WebSocket or event stream would hold forever.
  app.addHook('preClose', async () => {
    closing = true;
    events?.close();
    data?.close();
    await push.close();
  });
  app.get('/push-streams', async () => ({ streams: push.stats() }));

  return app;
}

/** Longest name (a path parameter, as written, percent-escapes and all) a route takes, characters. */
const MAX_PARAM_LENGTH = 4096;

/**
 * Answers what node's HTTP parser refuses before fastify sees a request, in onelog's error body, and closes the
 * connection (fastify's default answers `{ error, message, statusCode }`, no code): a request not received whole in
 * time is `REQUEST_TIMED_OUT` with HTTP 408, headers above node's limit (16 KiB) `REQUEST_TOO_LARGE` with 431,
 * anything else that is not HTTP/1.1 `INVALID_REQUEST` (400). A reset connection is left as it is.
 */
function answerClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  let answer: { error: OnelogError; status: number };
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    answer = { status: 408, error: new OnelogError('REQUEST_TIMED_OUT', 'the request was not received whole in time (serve --request-timeout-ms; ' +
      'headers within 10 s): send it at once') };
  } else if (err.code === 'HPE_HEADER_OVERFLOW') {
    answer = { status: 431, error: new OnelogError('REQUEST_TOO_LARGE', 'the request\'s headers are larger than 16 KiB, node\'s limit') };
  } else {
    answer = { status: 400, error: new OnelogError('INVALID_REQUEST', `not an HTTP/1.1 request onelog can read: ${err.message}`, { reason: err.code }) };
  }
  socket.on('error', () => socket.destroy());
  if (socket.writable) socket.end(httpErrorResponse(answer.error, answer.status), () => socket.destroy());
  else socket.destroy();
}

/** Deepest nesting of arrays and objects a JSON body may have. */
const MAX_JSON_DEPTH = 100;

/** How deeply `value` nests arrays and objects (walked without recursion, so any depth is measured safely). */
function depthOf(value: unknown): number {
  let deepest = 0;
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    deepest = Math.max(deepest, depth);
    if (deepest > MAX_JSON_DEPTH) return deepest;
    for (const child of Object.values(v)) stack.push([child, depth + 1]);
  }
  return deepest;
}

function isHealthSource(api: OnelogApi): api is OnelogApi & { health(): Promise<HealthReport> } {
  return typeof (api as { health?: unknown }).health === 'function';
}

function isChangeSource(api: OnelogApi): api is OnelogApi & ChangeSource {
  return typeof (api as Partial<ChangeSource>).watchChanges === 'function';
}

function isBinaryDataApi(api: OnelogApi): api is OnelogApi & BinaryDataApi {
  return typeof (api as Partial<BinaryDataApi>).produceBatches === 'function' && typeof (api as Partial<BinaryDataApi>).fetchBatches === 'function';
}

/** Maps any error a route can meet to a registry error. */
function toOnelogError(err: FastifyError | OnelogError): OnelogError {
  if (err instanceof OnelogError) return err;
  if (err.validation) {
    const where = err.validationContext ?? 'request';
    const unknown = err.validation.find((v) => v.keyword === 'additionalProperties');
    if (unknown) {
      const field = (unknown.params as { additionalProperty?: string }).additionalProperty;
      return new OnelogError('INVALID_REQUEST', `unknown field ${JSON.stringify(field)} in the ${where}; see docs/http-api.md for the fields allowed`, { field });
    }
    return new OnelogError('INVALID_REQUEST', `invalid ${where}: ${err.message}`);
  }
  switch (err.code) {
    case 'FST_ERR_BAD_URL':
      return new OnelogError('INVALID_REQUEST', `malformed percent-escape in the path ${err.message.replace(/ is not a valid url component$/, '')}: ` +
        'encode each byte of a name as %XX (two hex digits) of its UTF-8 (encodeURIComponent)');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new OnelogError('INVALID_REQUEST', `a name in the path is longer than ${MAX_PARAM_LENGTH} characters (percent-escapes counted as written)`,
        { maxLength: MAX_PARAM_LENGTH });
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new OnelogError('INVALID_REQUEST', `malformed JSON body: ${err.message}`);
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new OnelogError('REQUEST_TOO_LARGE', `request body is larger than the server's limit: ${err.message}`);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new OnelogError('INVALID_REQUEST', `send JSON with content-type application/json: ${err.message}`);
  }
  // Any other refusal of fastify's (a content-length that does not match the body, an unknown content type, ...).
  if (err instanceof SyntaxError || (err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500)) {
    return new OnelogError('INVALID_REQUEST', `malformed request: ${err.message}`);
  }
  return resourceExhausted(err, 'the request') ?? new OnelogError('INTERNAL_ERROR', err.message);
}

/** Whether `authorization` names a user of `access` (a public route authenticates nobody on its own). */
function signedIn(access: Access, authorization: string | undefined, address: string | undefined): boolean {
  try {
    access.users.authenticate(authorization, address);
    return true;
  } catch {
    return false;
  }
}

/** A health report with each dependency's status only: what a caller without a token may see. */
function statusesOnly(report: HealthReport): HealthReport {
  const dependencies = Object.fromEntries(Object.entries(report.dependencies).map(([name, d]) => [name, { status: d.status, since: d.since }]));
  return { ...report, dependencies };
}

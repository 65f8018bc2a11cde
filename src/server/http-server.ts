/**
 * The HTTP/JSON face of a broker (fastify). Routes map one to one onto {@link OnelogApi}; docs/http-api.md
 * lists them. Errors answer `{ code, message, ...context }` with the registry's HTTP status; fastify's own
 * failures (malformed JSON, schema violations, oversized bodies, unknown routes) are mapped to registry
 * codes too, so every error a client sees has a stable code.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import Fastify from 'fastify';
import type { FastifyBaseLogger, FastifyError, FastifyInstance } from 'fastify';
import type {
  BinaryDataApi, CommitRequest, HeartbeatRequest, JoinGroupRequest, OnelogApi, SubscribeRequest, ProduceRecord, ProducerIdempotence, ResetSpec,
  NackBatchRequest, NackRequest, PurgeRequest, RedriveRequest,
} from '../protocol/api.js';
import { OnelogError } from '../protocol/errors.js';
import { resourceExhausted } from '../storage/storage-errors.js';
import {
  BYTES_ENCODINGS, jsonToBytes, jsonToHeaders, parseTimestamp, recordToJson,
} from '../protocol/json-records.js';
import type { BytesEncoding, JsonProduceRecord } from '../protocol/json-records.js';
import { dataSockets } from './data-socket.js';
import { pushSockets } from './push-socket.js';
import { registerAlertRoutes } from './routes/alerts.js';
import { registerMetricsRoutes } from './routes/metrics.js';
import { consoleRoutes } from './routes/console.js';
import { authenticateUpgrade, registerUserRoutes } from './routes/users.js';
import type { Users } from '../security/users.js';
import type { Audit } from '../security/audit.js';
import { registerAuditRoutes } from './routes/audit.js';
import type { BrokerMetrics } from '../monitoring/metrics.js';

/** Options of the HTTP server. */
export interface HttpServerOptions {
  /** Largest request body, bytes. @default 67108864 (64 MiB) */
  bodyLimitBytes?: number;
  /** A pino logger for request logs. @default none (no request logging) */
  logger?: FastifyBaseLogger;
  /** The broker's metrics, served at `GET /metrics`. @default none (no /metrics route) */
  metrics?: BrokerMetrics;
  /**
   * The users every request and WebSocket upgrade is authenticated against, and the `/users` routes
   * (docs/security.md). @default none: no authentication (an embedded server in a test or a process of its own)
   */
  users?: Users;
  /** Where audited operations are recorded, and `GET /audit` (docs/security.md). @default none: nothing recorded */
  audit?: Audit;
}

const encodingSchema = { type: 'string', enum: BYTES_ENCODINGS } as const;
const nonNegInt = { type: 'integer', minimum: 0 } as const;
const partitionOffsets = {
  type: 'array',
  items: {
    type: 'object',
    required: ['partition', 'offset'],
    properties: { partition: nonNegInt, offset: nonNegInt, metadata: { type: 'string' } },
  },
} as const;

/**
 * Builds the fastify app over `api` (not yet listening): `await app.listen({ port, host })` to serve,
 * `app.inject()` to test.
 */
export function createHttpServer(api: OnelogApi, options: HttpServerOptions = {}): FastifyInstance {
  const app = Fastify({
    ...(options.logger ? { loggerInstance: options.logger } : { logger: false }),
    bodyLimit: options.bodyLimitBytes ?? 64 * 1024 * 1024,
    // Names travel in the path: topic names up to 249 characters (Kafka's limit), group ids longer, percent-encoded.
    maxParamLength: 4096,
    ajv: { customOptions: { coerceTypes: false, allErrors: false, allowUnionTypes: true, removeAdditional: false } },
  });

  app.setErrorHandler((err: FastifyError | OnelogError, request, reply) => {
    const e = toOnelogError(err);
    // Running out of a resource is expected under load and answered for each request: one short line, no stack.
    if (e.code === 'RESOURCE_EXHAUSTED') request.log.warn({ code: e.code, resource: e.context.resource }, e.message);
    else if (e.httpStatus >= 500) request.log.error({ err }, 'request failed');
    void reply.status(e.httpStatus).send(e.toJSON());
  });
  app.setNotFoundHandler((request, reply) => {
    const e = new OnelogError('NOT_FOUND', `no route ${request.method} ${request.url}; see docs/http-api.md`);
    void reply.status(e.httpStatus).send(e.toJSON());
  });

  if (options.users) registerUserRoutes(app, options.users);
  if (options.audit) registerAuditRoutes(app, options.audit);
  app.get('/health', async () => ({ status: 'ok' }));

  app.post<{ Body: { topic: string; partitions: number; config?: Record<string, unknown> } }>(
    '/topics',
    { schema: { body: { type: 'object', required: ['topic', 'partitions'], properties: { config: { type: 'object' } } } } },
    async (request, reply) => {
      const created = await api.createTopic(request.body);
      return reply.status(201).send(created);
    },
  );
  app.get('/topics', async () => ({ topics: await api.listTopics() }));
  app.get<{ Params: { topic: string }; Querystring: { groups?: string } }>(
    '/topics/:topic',
    { schema: { querystring: { type: 'object', additionalProperties: false, properties: { groups: { type: 'string', enum: ['true', 'false'] } } } } },
    async (request) => api.describeTopic(request.params.topic, { groups: request.query.groups === 'true' }),
  );

  app.delete<{ Params: { topic: string } }>('/topics/:topic', async (request) => api.deleteTopic(request.params.topic));

  app.post<{ Params: { topic: string }; Body: { config: Record<string, unknown> } }>(
    '/topics/:topic/config',
    { schema: { body: { type: 'object', required: ['config'], properties: { config: { type: 'object' } } } } },
    async (request) => api.alterTopic({ topic: request.params.topic, config: request.body.config }),
  );

  app.post<{ Params: { topic: string }; Body: { wait?: boolean } }>(
    '/topics/:topic/compact',
    { schema: { body: { type: 'object', properties: { wait: { type: 'boolean' } } } } },
    async (request) => api.compactTopic({ topic: request.params.topic, wait: request.body?.wait ?? true }),
  );

  app.post<{ Params: { topic: string } }>('/topics/:topic/enforce-retention', async (request) =>
    api.enforceRetention(request.params.topic));

  app.post<{ Params: { topic: string }; Body: { partition: number; beforeOffset: number } }>(
    '/topics/:topic/delete-records',
    { schema: { body: { type: 'object', required: ['partition', 'beforeOffset'], properties: { partition: nonNegInt, beforeOffset: nonNegInt } } } },
    async (request) => api.deleteRecords({ topic: request.params.topic, ...request.body }),
  );

  app.post<{ Params: { topic: string }; Body: { records: JsonProduceRecord[]; encoding?: BytesEncoding; idempotence?: ProducerIdempotence } }>(
    '/topics/:topic/records',
    {
      schema: {
        body: {
          type: 'object',
          required: ['records'],
          properties: {
            encoding: encodingSchema,
            idempotence: {
              type: 'object',
              required: ['producerId', 'producerEpoch', 'baseSequences'],
              properties: { producerId: nonNegInt, producerEpoch: nonNegInt, baseSequences: { type: 'object', additionalProperties: nonNegInt } },
            },
            records: {
              type: 'array',
              minItems: 1,
              items: {
                type: 'object',
                properties: {
                  key: { type: ['string', 'null'] },
                  headers: { type: 'object', additionalProperties: { type: ['string', 'null'] } },
                  timestamp: { type: ['integer', 'string'] },
                  partition: nonNegInt,
                },
              },
            },
          },
        },
      },
    },
    async (request) => {
      const encoding = request.body.encoding ?? 'utf8';
      const records = request.body.records.map((r, i) => produceRecord(r, i, encoding));
      const { idempotence } = request.body;
      return api.produce({ topic: request.params.topic, records, ...(idempotence ? { idempotence } : {}) });
    },
  );

  app.post<{
    Params: { topic: string };
    Body: {
      groupId?: string; memberId?: string; generationId?: number; partitions: Array<{ partition: number; offset: number }>; maxRecords?: number;
      maxBytes?: number; maxWaitMs?: number; encoding?: BytesEncoding;
    };
  }>(
    '/topics/:topic/fetch',
    {
      schema: {
        body: {
          type: 'object',
          required: ['partitions'],
          properties: {
            groupId: { type: 'string' }, memberId: { type: 'string' }, generationId: { type: 'integer' },
            partitions: partitionOffsets, maxRecords: { type: 'integer', minimum: 1 },
            maxBytes: { type: 'integer', minimum: 1 }, maxWaitMs: nonNegInt, encoding: encodingSchema,
          },
        },
      },
    },
    async (request) => {
      const { encoding = 'utf8', ...rest } = request.body;
      const result = await api.fetch({ topic: request.params.topic, ...rest });
      return {
        ...result,
        partitions: result.partitions.map((p) => ({ ...p, records: p.records.map((r) => recordToJson(r, encoding)) })),
      };
    },
  );

  app.get('/groups', async () => ({ groups: await api.listGroups() }));
  app.get<{ Params: { groupId: string } }>('/groups/:groupId', async (request) => api.describeGroup(request.params.groupId));
  app.get<{ Params: { groupId: string } }>('/groups/:groupId/history', async (request) => api.groupHistory(request.params.groupId));

  app.post<{ Params: { groupId: string }; Body: Omit<SubscribeRequest, 'groupId'> }>(
    '/groups/:groupId/subscriptions',
    {
      schema: {
        body: {
          type: 'object',
          required: ['topic'],
          additionalProperties: false,
          properties: {
            topic: { type: 'string' }, startPolicy: { type: 'string' }, deliveryMode: { type: 'string' }, onOutOfRange: { type: 'string' },
            pushEndpoint: { type: ['string', 'null'] }, maxInFlight: { type: 'integer' },
            retry: {
              type: ['object', 'null'],
              required: ['delaysMs'],
              additionalProperties: false,
              properties: { delaysMs: { type: 'array', items: { type: 'integer' } }, maxAttempts: { type: 'integer' }, deadLetterTopic: { type: 'string' } },
            },
            deadLetterAlertDepth: { type: 'integer', minimum: 1 }, webhookMaxAttempts: { type: 'integer', minimum: 1, maximum: 100 },
            headroomWarnRatio: { type: 'number' }, stallMs: { type: 'integer' },
          },
        },
      },
    },
    async (request) => api.subscribe({ groupId: request.params.groupId, ...request.body }),
  );

  app.post<{ Params: { groupId: string }; Body: Omit<CommitRequest, 'groupId'> }>(
    '/groups/:groupId/offsets',
    {
      schema: {
        body: {
          type: 'object',
          required: ['topic', 'offsets'],
          additionalProperties: false,
          properties: { topic: { type: 'string' }, offsets: partitionOffsets, memberId: { type: 'string' }, generationId: { type: 'integer' } },
        },
      },
    },
    async (request, reply) => {
      await api.commitOffsets({ groupId: request.params.groupId, ...request.body });
      return reply.status(204).send();
    },
  );

  app.post<{ Params: { groupId: string }; Body: { topic: string; partition?: number; spec: ResetSpec; execute?: boolean; requestedBy?: string } }>(
    '/groups/:groupId/offsets/reset',
    {
      schema: {
        body: {
          type: 'object',
          required: ['topic', 'spec'],
          additionalProperties: false,
          properties: {
            topic: { type: 'string' }, partition: nonNegInt, spec: { type: 'object', required: ['to'] }, execute: { type: 'boolean' },
            requestedBy: { type: 'string', maxLength: 200 },
          },
        },
      },
    },
    async (request) => api.resetOffsets({
      groupId: request.params.groupId, ...request.body, requestedBy: request.body.requestedBy ?? `http ${request.ip}`,
    }),
  );

  registerRetryRoutes(app, api);
  registerAlertRoutes(app, api);
  if (options.metrics) registerMetricsRoutes(app, options.metrics);
  void app.register(consoleRoutes, {});

  app.delete<{ Params: { groupId: string } }>('/groups/:groupId', async (request, reply) => {
    await api.deleteGroup(request.params.groupId);
    return reply.status(204).send();
  });

  app.post<{ Params: { groupId: string }; Body: { name: string } }>(
    '/groups/:groupId/checkpoints',
    { schema: { body: { type: 'object', required: ['name'], additionalProperties: false, properties: { name: { type: 'string' } } } } },
    async (request) => api.saveCheckpoint({ groupId: request.params.groupId, name: request.body.name }),
  );

  app.post<{ Params: { groupId: string }; Body: Omit<JoinGroupRequest, 'groupId'> }>(
    '/groups/:groupId/members',
    {
      schema: {
        body: {
          type: 'object',
          required: ['topics'],
          additionalProperties: false,
          properties: {
            topics: { type: 'array', items: { type: 'string' } }, sessionTimeoutMs: { type: 'integer' }, assignor: { type: 'string' },
            commitMode: { type: 'string' }, clientId: { type: 'string' }, startPolicy: { type: 'string' }, onOutOfRange: { type: 'string' },
          },
        },
      },
    },
    async (request) => api.joinGroup({ groupId: request.params.groupId, ...request.body }),
  );

  app.post<{ Params: { groupId: string; memberId: string }; Body: Omit<HeartbeatRequest, 'groupId' | 'memberId'> }>(
    '/groups/:groupId/members/:memberId/heartbeat',
    {
      schema: {
        body: {
          type: 'object',
          required: ['generationId', 'owned'],
          additionalProperties: false,
          properties: {
            generationId: { type: 'integer' },
            owned: {
              type: 'array',
              items: { type: 'object', required: ['topic', 'partition'], properties: { topic: { type: 'string' }, partition: nonNegInt } },
            },
          },
        },
      },
    },
    async (request) => api.heartbeat({ ...request.params, ...request.body }),
  );

  app.delete<{ Params: { groupId: string; memberId: string } }>('/groups/:groupId/members/:memberId', async (request, reply) => {
    await api.leaveGroup(request.params);
    return reply.status(204).send();
  });

  app.post('/producers', async () => api.initProducerId());

  // WebSockets: push streams (and their counters: what each session holds) and the binary data path
  // (docs/delivery.md). Any other upgrade is answered 404.
  const push = pushSockets(api);
  const data = isBinaryDataApi(api) ? dataSockets(api) : null;
  app.server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (options.users && !authenticateUpgrade(options.users, request, socket)) return;
    if (push.upgrade(request, socket, head) || data?.upgrade(request, socket, head)) return;
    socket.end('HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n');
  });
  // preClose: before the server waits for its connections, which an open WebSocket would hold forever.
  app.addHook('preClose', async () => {
    data?.close();
    await push.close();
  });
  app.get('/push-streams', async () => ({ streams: push.stats() }));

  return app;
}

/** Nacks and dead letters (docs/retries.md). */
function registerRetryRoutes(app: FastifyInstance, api: OnelogApi): void {
  /** What a nack names besides its records: the partition, and the member (fenced as a commit). */
  const nackOf = { topic: { type: 'string' }, partition: nonNegInt, memberId: { type: 'string' }, generationId: { type: 'integer' } } as const;
  app.post<{ Params: { groupId: string }; Body: Omit<NackRequest, 'groupId'> }>(
    '/groups/:groupId/nacks',
    {
      schema: {
        body: {
          type: 'object',
          required: ['topic', 'partition', 'offset', 'reason'],
          additionalProperties: false,
          properties: { ...nackOf, offset: nonNegInt, reason: { type: 'string' } },
        },
      },
    },
    async (request) => api.nack({ groupId: request.params.groupId, ...request.body }),
  );
  app.post<{ Params: { groupId: string }; Body: Omit<NackBatchRequest, 'groupId'> }>(
    '/groups/:groupId/nacks/batch',
    {
      schema: {
        body: {
          type: 'object',
          required: ['topic', 'partition', 'records'],
          additionalProperties: false,
          properties: {
            ...nackOf,
            records: {
              type: 'array', minItems: 1, maxItems: 10_000,
              items: { type: 'object', required: ['offset', 'reason'], additionalProperties: false, properties: { offset: nonNegInt, reason: { type: 'string' } } },
            },
          },
        },
      },
    },
    async (request) => ({ results: await api.nackBatch({ groupId: request.params.groupId, ...request.body }) }),
  );
  app.get<{ Params: { groupId: string }; Querystring: { topic: string; limit?: string } }>(
    '/groups/:groupId/dead-letters',
    {
      schema: {
        querystring: {
          type: 'object', required: ['topic'], additionalProperties: false,
          // Query values are text (types are not coerced): the broker checks the limit's range.
          properties: { topic: { type: 'string' }, limit: { type: 'string', pattern: '^[0-9]{1,6}$' } },
        },
      },
    },
    async (request) => api.listDeadLetters({
      groupId: request.params.groupId, topic: request.query.topic, ...(request.query.limit !== undefined ? { limit: Number(request.query.limit) } : {}),
    }),
  );
  const who = { type: 'string', maxLength: 200 } as const;
  app.post<{ Params: { groupId: string }; Body: Omit<RedriveRequest, 'groupId'> }>(
    '/groups/:groupId/dead-letters/redrive',
    {
      schema: {
        body: {
          type: 'object', required: ['topic'], additionalProperties: false,
          properties: { topic: { type: 'string' }, offset: nonNegInt, all: { type: 'boolean' }, execute: { type: 'boolean' }, requestedBy: who },
        },
      },
    },
    async (request) => api.redriveDeadLetters({
      groupId: request.params.groupId, ...request.body, requestedBy: request.body.requestedBy ?? `http ${request.ip}`,
    }),
  );
  app.post<{ Params: { groupId: string }; Body: Omit<PurgeRequest, 'groupId'> }>(
    '/groups/:groupId/dead-letters/purge',
    {
      schema: {
        body: {
          type: 'object', required: ['topic', 'beforeOffset'], additionalProperties: false,
          properties: { topic: { type: 'string' }, beforeOffset: nonNegInt, execute: { type: 'boolean' }, requestedBy: who },
        },
      },
    },
    async (request) => api.purgeDeadLetters({
      groupId: request.params.groupId, ...request.body, requestedBy: request.body.requestedBy ?? `http ${request.ip}`,
    }),
  );
}

function isBinaryDataApi(api: OnelogApi): api is OnelogApi & BinaryDataApi {
  return typeof (api as Partial<BinaryDataApi>).produceBatches === 'function' && typeof (api as Partial<BinaryDataApi>).fetchBatches === 'function';
}

function produceRecord(r: JsonProduceRecord, i: number, encoding: BytesEncoding): ProduceRecord {
  const out: ProduceRecord = {
    key: jsonToBytes(r.key, encoding, `records[${i}].key`),
    value: jsonToBytes(r.value, encoding, `records[${i}].value`, true),
    headers: jsonToHeaders(r.headers, encoding, `records[${i}].headers`),
  };
  if (r.timestamp !== undefined) out.timestamp = parseTimestamp(r.timestamp, `records[${i}].timestamp`);
  if (r.partition !== undefined) out.partition = r.partition;
  return out;
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
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new OnelogError('INVALID_REQUEST', `malformed JSON body: ${err.message}`);
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new OnelogError('REQUEST_TOO_LARGE', `request body is larger than the server's limit: ${err.message}`);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new OnelogError('INVALID_REQUEST', `send JSON with content-type application/json: ${err.message}`);
  }
  if (err instanceof SyntaxError || err.statusCode === 400) {
    return new OnelogError('INVALID_REQUEST', `malformed request: ${err.message}`);
  }
  return resourceExhausted(err, 'the request') ?? new OnelogError('INTERNAL_ERROR', err.message);
}

/**
 * Topics (docs/http-api.md): create, list, describe, their rates' history, alter, compact, enforce retention, delete records, delete;
 * producing JSON records, fetching them, and idempotent producer ids.
 */
import type { FastifyInstance } from 'fastify';
import type { OnelogApi } from '../../protocol/api.js';
import type { ProduceRecord, ProducerIdempotence } from '../../protocol/produce.js';
import { jsonToBytes, jsonToHeaders, parseTimestamp, recordToJson } from '../../protocol/json-records.js';
import type { BytesEncoding, JsonProduceRecord } from '../../protocol/json-records.js';
import { encodingSchema, historyQuery, historyRange, nonNegInt, partitionOffsets } from './schemas.js';

export function registerTopicRoutes(app: FastifyInstance, api: OnelogApi): void {
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
    async (request) => api.describeTopic(request.params.topic, { groups: request.query.groups === 'true', leaders: true }),
  );

  app.delete<{ Params: { topic: string } }>('/topics/:topic', async (request) => api.deleteTopic(request.params.topic));
  app.get<{ Params: { topic: string }; Querystring: { hours?: string } }>(
    '/topics/:topic/history',
    { schema: { querystring: historyQuery } },
    async (request) => api.topicHistory(request.params.topic, historyRange(request.query)),
  );

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
    { schema: { body: { type: 'object', required: ['partition', 'beforeOffset'], additionalProperties: false, properties: { partition: nonNegInt, beforeOffset: { type: 'integer' } } } } },
    async (request) => api.deleteRecords({ ...request.body, topic: request.params.topic }),
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
      maxBytes?: number; maxWaitMs?: number; ahead?: boolean; readAnywhere?: boolean; encoding?: BytesEncoding;
    };
  }>(
    '/topics/:topic/fetch',
    {
      schema: {
        body: {
          type: 'object',
          required: ['partitions'],
          additionalProperties: false,
          properties: {
            groupId: { type: 'string' }, memberId: { type: 'string' }, generationId: { type: 'integer' },
            partitions: partitionOffsets, maxRecords: { type: 'integer', minimum: 1 },
            maxBytes: { type: 'integer', minimum: 1 }, maxWaitMs: nonNegInt, ahead: { type: 'boolean' }, readAnywhere: { type: 'boolean' }, encoding: encodingSchema,
          },
        },
      },
    },
    async (request) => {
      const { encoding = 'utf8', ...rest } = request.body;
      const result = await api.fetch({ ...rest, topic: request.params.topic });
      return {
        ...result,
        partitions: result.partitions.map((p) => ({ ...p, records: p.records.map((r) => recordToJson(r, encoding)) })),
      };
    },
  );

  app.post('/producers', async () => api.initProducerId());
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

/** Nacks and dead letters (docs/retries.md): moving records a consumer cannot process, listing, redriving and purging them. */
import type { FastifyInstance } from 'fastify';
import type { OnelogApi } from '../../protocol/api.js';
import type { PurgeRequest, RedriveRequest } from '../../protocol/dead-letters.js';
import type { NackBatchRequest, NackRequest } from '../../protocol/nacks.js';
import { MAX_REDRIVE_OFFSETS } from '../../protocol/dead-letters.js';
import { nonNegInt } from './schemas.js';

/** Nacks and dead letters (docs/retries.md). */
export function registerDeadLetterRoutes(app: FastifyInstance, api: OnelogApi): void {
  /** What a nack names besides its records: the partition, and the member (fenced as a commit). */
  const nackOf = {
    topic: { type: 'string' }, partition: nonNegInt, memberId: { type: 'string' }, generationId: { type: 'integer' }, deliveries: { type: 'integer' },
  } as const;
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
    async (request) => api.nack({ ...request.body, groupId: request.params.groupId }),
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
    async (request) => ({ results: await api.nackBatch({ ...request.body, groupId: request.params.groupId }) }),
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
          properties: {
            topic: { type: 'string' }, offset: nonNegInt, offsets: { type: 'array', items: nonNegInt, minItems: 1, maxItems: MAX_REDRIVE_OFFSETS },
            all: { type: 'boolean' }, execute: { type: 'boolean' }, requestedBy: who,
          },
        },
      },
    },
    async (request) => api.redriveDeadLetters({
      ...request.body, groupId: request.params.groupId, requestedBy: request.body.requestedBy ?? `http ${request.ip}`,
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
      ...request.body, groupId: request.params.groupId, requestedBy: request.body.requestedBy ?? `http ${request.ip}`,
    }),
  );
}

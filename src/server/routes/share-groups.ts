/** Share groups (docs/consumer-groups.md): a member acquires records, each locked for it, and acknowledges them. */
import type { FastifyInstance } from 'fastify';
import type { OnelogApi } from '../../protocol/api.js';
import type { ShareAckRequest, ShareFetchRequest } from '../../protocol/share-groups.js';
import { recordToJson } from '../../protocol/json-records.js';
import type { BytesEncoding } from '../../protocol/json-records.js';
import { encodingSchema, nonNegInt } from './schemas.js';

export function registerShareGroupRoutes(app: FastifyInstance, api: OnelogApi): void {
  app.post<{ Params: { groupId: string }; Body: Omit<ShareFetchRequest, 'groupId'> & { encoding?: BytesEncoding } }>(
    '/groups/:groupId/share-fetch',
    {
      schema: {
        body: {
          type: 'object',
          required: ['topic', 'memberId'],
          additionalProperties: false,
          properties: {
            topic: { type: 'string' }, memberId: { type: 'string' }, maxRecords: { type: 'integer', minimum: 1 }, maxBytes: { type: 'integer', minimum: 1 }, maxWaitMs: nonNegInt,
            sessionTimeoutMs: { type: 'integer' }, partitions: { type: 'array', items: nonNegInt }, encoding: encodingSchema,
          },
        },
      },
    },
    async (request) => {
      const { encoding = 'utf8', ...rest } = request.body;
      const result = await api.shareFetch({ ...rest, groupId: request.params.groupId });
      return { ...result, records: result.records.map((r) => ({ ...recordToJson(r, encoding), partition: r.partition, deliveryCount: r.deliveryCount })) };
    },
  );
  app.post<{ Params: { groupId: string }; Body: Omit<ShareAckRequest, 'groupId'> }>(
    '/groups/:groupId/share-acks',
    {
      schema: {
        body: {
          type: 'object',
          required: ['topic', 'memberId', 'acks'],
          additionalProperties: false,
          properties: {
            topic: { type: 'string' }, memberId: { type: 'string' },
            leave: { type: 'boolean' },
            acks: {
              type: 'array', minItems: 0, maxItems: 10_000,
              items: {
                type: 'object', required: ['partition', 'offset', 'type'], additionalProperties: false,
                properties: {
                  partition: nonNegInt, offset: nonNegInt, type: { type: 'string', enum: ['accept', 'release', 'reject', 'renew'] },
                  delayMs: nonNegInt, reason: { type: 'string' },
                },
              },
            },
          },
        },
      },
    },
    async (request) => api.shareAcknowledge({ ...request.body, groupId: request.params.groupId }),
  );
}

/**
 * Consumer groups (docs/http-api.md): list, describe, history, subscriptions, commits, offset resets,
 * checkpoints, members joining, heartbeating and leaving, and deletion.
 */
import type { FastifyInstance } from 'fastify';
import type { OnelogApi } from '../../protocol/api.js';
import type { HeartbeatRequest, JoinGroupRequest } from '../../protocol/groups.js';
import type { CommitRequest, ResetSpec } from '../../protocol/offsets.js';
import type { SubscribeRequest } from '../../protocol/subscriptions.js';
import { historyQuery, historyRange, nonNegInt, partitionOffsets } from './schemas.js';

export function registerGroupRoutes(app: FastifyInstance, api: OnelogApi): void {
  app.get('/groups', async () => ({ groups: await api.listGroups() }));
  app.get<{ Params: { groupId: string } }>('/groups/:groupId', async (request) => api.describeGroup(request.params.groupId));
  app.get<{ Params: { groupId: string }; Querystring: { hours?: string } }>(
    '/groups/:groupId/history',
    { schema: { querystring: historyQuery } },
    async (request) => api.groupHistory(request.params.groupId, historyRange(request.query)),
  );

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
            maxDeliveries: { type: ['integer', 'null'] }, type: { type: 'string' }, lockMs: { type: 'integer' }, ordering: { type: 'string' },
            maxInFlightRecords: { type: 'integer' }, deadLetterAlertDepth: { type: 'integer', minimum: 1 }, webhookMaxAttempts: { type: 'integer', minimum: 1, maximum: 100 },
            headroomWarnRatio: { type: 'number' }, stallMs: { type: 'integer' },
          },
        },
      },
    },
    async (request) => api.subscribe({ ...request.body, groupId: request.params.groupId }),
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
      await api.commitOffsets({ ...request.body, groupId: request.params.groupId });
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
      ...request.body, groupId: request.params.groupId, requestedBy: request.body.requestedBy ?? `http ${request.ip}`,
    }),
  );

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
            topics: { type: 'array', items: { type: 'string' } }, sessionTimeoutMs: { type: 'integer' }, rebalanceTimeoutMs: { type: 'integer' }, assignor: { type: 'string' },
            commitMode: { type: 'string' }, clientId: { type: 'string' }, startPolicy: { type: 'string' }, onOutOfRange: { type: 'string' },
          },
        },
      },
    },
    async (request) => api.joinGroup({ ...request.body, groupId: request.params.groupId }),
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
    async (request) => api.heartbeat({ ...request.body, ...request.params }),
  );

  app.delete<{ Params: { groupId: string; memberId: string } }>('/groups/:groupId/members/:memberId', async (request, reply) => {
    await api.leaveGroup(request.params);
    return reply.status(204).send();
  });
}

/** Users and their tokens (docs/security.md): create, list, delete, rotate. */
import type { FastifyInstance } from 'fastify';
import type { Users } from '../../security/users.js';
import { principalOf } from '../access.js';

const nameParams = { type: 'object', required: ['name'], properties: { name: { type: 'string' } } } as const;

export function registerUserRoutes(app: FastifyInstance, users: Users): void {
  app.post<{ Body: { user: string; admin?: boolean } }>(
    '/users',
    { schema: { body: { type: 'object', required: ['user'], additionalProperties: false, properties: { user: { type: 'string' }, admin: { type: 'boolean' } } } } },
    async (request, reply) => {
      const created = await users.create(request.body.user, principalOf(request), request.body.admin ?? false);
      request.body.admin = created.admin; // the audit records what was done: the first user is an admin whatever was asked
      return reply.status(201).send(created);
    },
  );
  app.get('/users', async (request) => ({ users: await users.list(principalOf(request)) }));
  app.delete<{ Params: { name: string } }>('/users/:name', { schema: { params: nameParams } }, async (request, reply) => {
    await users.delete(request.params.name, principalOf(request));
    return reply.status(204).send();
  });
  app.post<{ Params: { name: string } }>('/users/:name/rotate', { schema: { params: nameParams } }, async (request) =>
    users.rotate(request.params.name, principalOf(request)));
}

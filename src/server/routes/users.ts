/**
 * Authentication of every request and WebSocket upgrade, and the users routes (docs/security.md). Every request
 * is authenticated before its route runs ({@link Users.authenticate}): it gets the principal, or the typed
 * `UNAUTHENTICATED` / `FORBIDDEN` error every other error looks like.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { OnelogError } from '../../protocol/errors.js';
import type { Principal, Users } from '../../security/users.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who sent the request (set before its route runs, when the server has users). */
    principal?: Principal;
  }
}

const nameParams = { type: 'object', required: ['name'], properties: { name: { type: 'string' } } } as const;

/** The request's principal (a server without users to check answers as protected mode's loopback admin). */
function principalOf(request: FastifyRequest): Principal {
  return request.principal ?? { user: null, admin: true };
}

export function registerUserRoutes(app: FastifyInstance, users: Users): void {
  app.addHook('onRequest', async (request) => {
    request.principal = users.authenticate(request.headers.authorization, request.socket.remoteAddress);
  });
  app.post<{ Body: { user: string; admin?: boolean } }>(
    '/users',
    { schema: { body: { type: 'object', required: ['user'], additionalProperties: false, properties: { user: { type: 'string' }, admin: { type: 'boolean' } } } } },
    async (request, reply) => reply.status(201).send(await users.create(request.body.user, principalOf(request), request.body.admin ?? false)),
  );
  app.get('/users', async (request) => ({ users: await users.list(principalOf(request)) }));
  app.delete<{ Params: { name: string } }>('/users/:name', { schema: { params: nameParams } }, async (request, reply) => {
    await users.delete(request.params.name, principalOf(request));
    return reply.status(204).send();
  });
  app.post<{ Params: { name: string } }>('/users/:name/rotate', { schema: { params: nameParams } }, async (request) =>
    users.rotate(request.params.name, principalOf(request)));
}

/**
 * Authenticates a WebSocket upgrade as {@link registerUserRoutes} does a request.
 * @returns whether it may go on; if not, the socket was answered 401/403 with the error as JSON and closed
 */
export function authenticateUpgrade(users: Users, request: IncomingMessage, socket: Duplex): boolean {
  try {
    users.authenticate(request.headers.authorization, request.socket.remoteAddress);
    return true;
  } catch (err) {
    if (!(err instanceof OnelogError)) throw err;
    const body = JSON.stringify(err.toJSON());
    socket.end(`HTTP/1.1 ${err.httpStatus} ${err.httpStatus === 401 ? 'Unauthorized' : 'Forbidden'}\r\ncontent-type: application/json\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    return false;
  }
}

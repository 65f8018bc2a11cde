/**
 * Access control of the HTTP server (docs/security.md): every request is authenticated before its route runs
 * (unless the permission table says the route is public), authorized from the permission table once its body is
 * parsed, and a list answer keeps only what the principal may describe. WebSocket upgrades are authenticated here
 * too; their frames are authorized by the sockets with {@link authorize}.
 */
import type { IncomingMessage } from 'node:http';
import { Transform } from 'node:stream';
import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify';
import type { Acls } from '../security/acls.js';
import type { Quotas } from '../security/quotas.js';
import { authorize, filterAnswer, PERMISSIONS } from '../security/permissions.js';
import { LOOPBACK_ADMIN, principalName } from '../security/principal.js';
import type { Principal } from '../security/principal.js';
import type { Users } from '../security/users.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who sent the request (set before its route runs, when the server checks access). */
    principal?: Principal;
  }
  interface FastifyContextConfig {
    /** The route serves one of the console's files (a public route of the permission table). */
    consoleFile?: boolean;
  }
}

/** The users and ACLs a server checks requests against. */
export interface Access {
  users: Users;
  acls: Acls;
}

/** The request's principal ({@link LOOPBACK_ADMIN} on a server without access control). */
export function principalOf(request: FastifyRequest): Principal {
  return request.principal ?? LOOPBACK_ADMIN;
}

/** The permission table's key of a request's route (`GET /topics/:topic`); HEAD is its GET. Undefined when no route matched. */
export function routeKey(request: FastifyRequest): string | undefined {
  const { url, config } = request.routeOptions;
  return url === undefined ? undefined : keyOf(request.method, url, config.consoleFile);
}

function keyOf(method: string, url: string, consoleFile: boolean | undefined): string {
  return consoleFile ? 'GET /(console files)' : `${method === 'HEAD' ? 'GET' : method} ${url}`;
}

/**
 * Authenticates, authorizes and filters every request of `app` (register before its routes).
 * @throws Error from `app.ready()` when a route has no entry in the permission table: such a route is never served
 */
export function registerAccessControl(app: FastifyInstance, { users, acls }: Access): void {
  const routes: RouteOptions[] = [];
  app.addHook('onRoute', (route) => {
    routes.push(route);
  });
  app.addHook('onReady', async () => {
    const keys = routes.flatMap((r) => (Array.isArray(r.method) ? r.method : [r.method])
      .map((m) => keyOf(m, r.url, r.config?.consoleFile)));
    const unlisted = keys.filter((key) => PERMISSIONS[key] === undefined);
    if (unlisted.length > 0) throw new Error(`routes without an entry in the permission table (src/security/permissions.ts): ${unlisted.join(', ')}`);
  });
  app.addHook('onRequest', async (request) => {
    const key = routeKey(request);
    if (key !== undefined && PERMISSIONS[key]?.needs === 'public') return;
    request.principal = users.authenticate(request.headers.authorization, request.socket.remoteAddress);
  });
  app.addHook('preHandler', async (request) => {
    const key = routeKey(request);
    if (key !== undefined) authorize(acls, principalOf(request), key, request);
  });
  app.addHook('preSerialization', async (request, _reply, payload: unknown) => {
    const key = routeKey(request);
    return key === undefined ? payload : filterAnswer(acls, principalOf(request), key, payload);
  });
}

const PRODUCE_ROUTE = 'POST /topics/:topic/records';

/**
 * Holds every request but the public ones to its principal's request rate as it arrives, and a produce's body, as
 * counted while it is read (whatever its framing), to the produced-bytes rate before it runs (register after
 * {@link registerAccessControl}).
 */
export function registerQuotas(app: FastifyInstance, quotas: Quotas): void {
  const bodyBytes = new WeakMap<FastifyRequest, { bytes: number }>();
  app.addHook('onRequest', async (request) => {
    const key = routeKey(request);
    if (key !== undefined && PERMISSIONS[key]?.needs === 'public') return;
    quotas.take(principalName(principalOf(request)));
  });
  app.addHook('preParsing', async (request, _reply, payload) => {
    if (routeKey(request) !== PRODUCE_ROUTE) return payload;
    const counted = { bytes: 0 };
    bodyBytes.set(request, counted);
    const counting = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        counted.bytes += chunk.length;
        // What fastify checks against content-length and its body limit.
        (counting as Transform & { receivedEncodedLength: number }).receivedEncodedLength = counted.bytes;
        done(null, chunk);
      },
    });
    payload.on('error', (err) => counting.destroy(err));
    return payload.pipe(counting);
  });
  app.addHook('preHandler', async (request) => {
    const counted = bodyBytes.get(request);
    if (counted !== undefined) quotas.take(principalName(principalOf(request)), counted.bytes, false);
  });
}

/**
 * Authenticates a WebSocket upgrade as {@link registerAccessControl} does a request.
 * @throws OnelogError `UNAUTHENTICATED` (401), `FORBIDDEN` (403, protected mode): the upgrade's guard answers it as
 *   an HTTP error with the error as JSON and closes the socket
 */
export function authenticateUpgrade(users: Users, request: IncomingMessage): Principal {
  return users.authenticate(request.headers.authorization, request.socket.remoteAddress);
}

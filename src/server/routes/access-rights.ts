/**
 * `GET /access?group=G&topic=T` (docs/http-api.md): what the request's principal may do with the group's subscription
 * to the topic, computed from the permission table and the ACLs the routes themselves use (src/security/access-rights.ts):
 * the console shows only the buttons the API would serve.
 */
import type { FastifyInstance } from 'fastify';
import type { Acls } from '../../security/acls.js';
import { accessRights } from '../../security/access-rights.js';
import { principalOf } from '../access.js';

/** Registers `GET /access`; without `acls` (a server that checks no one) every action is allowed. */
export function registerAccessRightsRoutes(app: FastifyInstance, acls: Acls | undefined): void {
  app.get<{ Querystring: { group: string; topic: string } }>(
    '/access',
    {
      schema: {
        querystring: {
          type: 'object', required: ['group', 'topic'], additionalProperties: false,
          properties: { group: { type: 'string', minLength: 1 }, topic: { type: 'string', minLength: 1 } },
        },
      },
    },
    async (request) => accessRights(acls, principalOf(request), request.query.group, request.query.topic),
  );
}

/** ACLs (docs/security.md): add, list (optionally of one principal), remove. */
import type { FastifyInstance } from 'fastify';
import { ACL_OPERATIONS } from '../../protocol/security.js';
import type { AclBinding } from '../../protocol/security.js';
import type { Acls } from '../../security/acls.js';
import { principalOf } from '../access.js';

/** An ACL as a body or a query: every field text; the resource name may be left out for the cluster. */
const aclSchema = {
  type: 'object',
  required: ['principal', 'resourceType', 'operation'],
  additionalProperties: false,
  properties: {
    principal: { type: 'string' }, resourceType: { type: 'string', enum: ['topic', 'group', 'cluster'] }, resourceName: { type: 'string' },
    patternType: { type: 'string', enum: ['literal', 'prefix'] }, operation: { type: 'string', enum: ACL_OPERATIONS },
    permission: { type: 'string', enum: ['allow', 'deny'] },
  },
} as const;

type AclInput = Omit<AclBinding, 'resourceName' | 'patternType' | 'permission'> & Partial<Pick<AclBinding, 'resourceName' | 'patternType' | 'permission'>>;

const withDefaults = (acl: AclInput): AclBinding => ({ resourceName: '', patternType: 'literal', permission: 'allow', ...acl });

export function registerAclRoutes(app: FastifyInstance, acls: Acls): void {
  app.post<{ Body: AclInput }>('/acls', { schema: { body: aclSchema } }, async (request, reply) =>
    reply.status(201).send(await acls.add(withDefaults(request.body), principalOf(request))));
  app.get<{ Querystring: { principal?: string } }>(
    '/acls',
    { schema: { querystring: { type: 'object', additionalProperties: false, properties: { principal: { type: 'string' } } } } },
    async (request) => ({ acls: acls.list(principalOf(request), request.query.principal) }),
  );
  app.delete<{ Querystring: AclInput }>('/acls', { schema: { querystring: aclSchema } }, async (request, reply) => {
    await acls.remove(withDefaults(request.query), principalOf(request));
    return reply.status(204).send();
  });
}

/**
 * The broker as one Kafka connection's principal may use it (docs/security.md): every broker method the Kafka
 * handlers call is authorized from the permission table's `KAFKA method` entries before it runs, lists are cut to
 * what the principal may describe, and audited operations (topic, group and record deletions) are recorded with
 * the principal, as are refusals of those that change something. A refusal is the `FORBIDDEN` error the handlers answer per topic or group (TOPIC_ / GROUP_ /
 * CLUSTER_AUTHORIZATION_FAILED). A method without an entry fails closed.
 */
import { OnelogError } from '../protocol/errors.js';
import type { Acls } from '../security/acls.js';
import { authorizeAudited } from '../security/audit.js';
import type { Audit } from '../security/audit.js';
import type { Principal } from '../security/principal.js';
import { filterAnswer, PERMISSIONS } from '../security/permissions.js';
import type { KafkaDataApi } from './apis/api.js';

/** Methods whose first argument is a name, not a request: the field the permission table reads it as. */
const NAME_ARGUMENT: Readonly<Record<string, string>> = {
  describeTopic: 'topic', deleteTopic: 'topic', offsetForTimestamp: 'topic', describeGroup: 'groupId', deleteGroup: 'groupId', committedOffsets: 'groupId', groupConfigs: 'groupId', setGroupConfigs: 'groupId', authorizeGroup: 'groupId',
};

/** `api` for `principal`, checked against `acls` and recorded in `audit` (either may be absent: no checks, no records). */
export function authorizedApi(api: KafkaDataApi, principal: Principal, { acls, audit }: { acls?: Acls | undefined; audit?: Audit | undefined }): KafkaDataApi {
  if ((acls === undefined || principal.admin) && audit === undefined) return api;
  return new Proxy(api, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== 'function' || typeof property !== 'string') return value;
      const key = `KAFKA ${property}`;
      if (PERMISSIONS[key] === undefined) {
        return () => Promise.reject(new OnelogError('INTERNAL_ERROR', `${key} has no entry in the permission table (src/security/permissions.ts)`));
      }
      return async (...args: unknown[]) => {
        const field = NAME_ARGUMENT[property];
        const body = field === undefined ? args[0] : { [field]: args[0] };
        if (acls) await authorizeAudited(acls, audit, principal, key, { body });
        const answer = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        await audit?.record(key, principal, { body });
        return acls ? filterAnswer(acls, principal, key, answer) : answer;
      };
    },
  });
}

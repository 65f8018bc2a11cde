/**
 * What a principal may do with a group's subscription to a topic (docs/security.md, `GET /access`): each action the
 * console offers, answered by authorizing its route of the permission table ({@link authorize}) with the group and
 * topic as that route's request would name them. So a button the console shows is one the API serves, and the rules
 * are written once, in the table.
 */
import type { AccessRights, GroupAction } from '../protocol/security.js';
import { GROUP_ACTIONS } from '../protocol/security.js';
import { OnelogError } from '../protocol/errors.js';
import type { Acls } from './acls.js';
import { authorize } from './permissions.js';
import type { Principal } from './principal.js';

/** The permission table's route behind each action. */
const ROUTES: Readonly<Record<GroupAction, string>> = {
  describeGroup: 'GET /groups/:groupId',
  listDeadLetters: 'GET /groups/:groupId/dead-letters',
  redriveDeadLetters: 'POST /groups/:groupId/dead-letters/redrive',
  purgeDeadLetters: 'POST /groups/:groupId/dead-letters/purge',
  resetOffsets: 'POST /groups/:groupId/offsets/reset',
  saveCheckpoint: 'POST /groups/:groupId/checkpoints',
  fetch: 'POST /topics/:topic/fetch',
};

/**
 * Which of {@link GROUP_ACTIONS} `principal` may take on `groupId` and `topic`. Without `acls` (a server that checks
 * no one) every action is allowed.
 * @throws OnelogError `INVALID_REQUEST` for an empty group or topic name
 */
export function accessRights(acls: Acls | undefined, principal: Principal, groupId: string, topic: string): AccessRights {
  if (groupId === '' || topic === '') throw new OnelogError('INVALID_REQUEST', 'access rights need a group and a topic (?group=G&topic=T)', { groupId, topic });
  const names = { groupId, topic };
  // A request of each route names the group in its path and the topic in its path, query or body (a fetch without a group).
  const parts = { params: names, query: { topic }, body: { topic } };
  const allowed = (action: GroupAction): boolean => {
    if (acls === undefined) return true;
    try {
      authorize(acls, principal, ROUTES[action], parts);
      return true;
    } catch (err) {
      if (err instanceof OnelogError && err.code === 'FORBIDDEN') return false;
      throw err;
    }
  };
  return {
    groupId, topic, user: principal.user, admin: principal.admin,
    actions: Object.fromEntries(GROUP_ACTIONS.map((a) => [a, allowed(a)])) as Record<GroupAction, boolean>,
  };
}

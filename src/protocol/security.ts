/**
 * Who may do what (docs/security.md): users and their tokens, ACLs, and the audit of what was done or refused.
 * Pure: importing this loads nothing.
 */

/** A user just created or given a new token: the token is shown this once. */
export interface CreatedUser {
  user: string;
  admin: boolean;
  /** `onelog_<id>_<secret>`: send as `Authorization: Bearer TOKEN`. */
  token: string;
}

/** A user as listed (never its token). Times are ms since the epoch. */
export interface UserSummary {
  user: string;
  admin: boolean;
  createdAt: number;
  rotatedAt: number | null;
}

/** What an ACL names: a topic, a consumer group, or the cluster (as Kafka's resource types). */
export type AclResourceType = 'topic' | 'group' | 'cluster';
/** The operations an ACL allows or denies (Kafka's, plus `reset` for groups; `all` matches every one). */
export const ACL_OPERATIONS = ['read', 'write', 'create', 'delete', 'alter', 'describe', 'reset', 'all'] as const;
export type AclOperation = (typeof ACL_OPERATIONS)[number];

/**
 * One ACL (docs/security.md): `principal` (a user name, or `*` for every user) may (`allow`) or may not (`deny`)
 * do `operation` on the resources of `resourceType` named `resourceName` (`literal`; `*` names every one) or
 * starting with it (`prefix`). A cluster ACL names no resource (`resourceName` is `""`). Deny wins over allow; with no ACL that
 * allows it, an operation is refused (admins are never refused, as Kafka's super.users).
 */
export interface AclBinding {
  principal: string;
  resourceType: AclResourceType;
  resourceName: string;
  patternType: 'literal' | 'prefix';
  operation: AclOperation;
  permission: 'allow' | 'deny';
}

/** An audited operation and who did it (docs/security.md). `at`: ms since the epoch. */
export interface AuditEntry {
  id: number;
  at: number;
  /** The authenticated user, or `anonymous` (no user existed: protected mode's loopback client, or an `--insecure` broker). */
  principal: string;
  action: string;
  /** What it was done to: `group:G`, `topic:T`, `user:U`, `cluster`. */
  target: string;
  /**
   * `done`: the operation succeeded. `refused`: the principal was not allowed (FORBIDDEN); `details` then holds the
   * `request` refused (a route, frame or Kafka broker method of the permission table), the ACL `operation` it needed
   * (`admin` for an admin's), the `code` and the `reason`, and `suppressed`: refusals of the principal left out before it.
   */
  outcome: 'done' | 'refused';
  details: Record<string, unknown>;
}

/**
 * What a principal may do with a group's subscription to a topic (`GET /access?group=G&topic=T`), each action named as
 * the API method that does it: describe the group, list, redrive and purge its dead letters, reset its offsets, save a
 * checkpoint, read the topic's records (`fetch`, without a group).
 */
export const GROUP_ACTIONS = [
  'describeGroup', 'listDeadLetters', 'redriveDeadLetters', 'purgeDeadLetters', 'resetOffsets', 'saveCheckpoint', 'fetch',
] as const;
export type GroupAction = (typeof GROUP_ACTIONS)[number];

/** The answer of `GET /access`: who asks, and which {@link GROUP_ACTIONS} the API would serve it on that group and topic. */
export interface AccessRights {
  groupId: string;
  topic: string;
  /** The authenticated user; null without users (protected mode's loopback client, or no access control). */
  user: string | null;
  /** An admin is never refused. */
  admin: boolean;
  /** Each action: true when the API would serve it to this principal (the permission table and the ACLs decide). */
  actions: Record<GroupAction, boolean>;
}

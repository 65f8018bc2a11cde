/**
 * The permission table (docs/security.md): every HTTP route, WebSocket frame and CLI command, and what it needs.
 * The server authorizes every request and frame from this table alone ({@link authorize}); a test walks the
 * server's routes, the socket frames and the CLI's commands and fails on any not listed here, and docs/security.md
 * shows {@link permissionsMarkdown}'s rendering of it.
 *
 * What an entry needs: `public` (no authentication: health checks, the console's files), `user` (any
 * authenticated principal; the answer may be filtered to what it may describe), `admin`, or a list of checks,
 * all of which must pass: an operation on a topic, a group or the cluster, the name taken from the request
 * (`param.X` a path parameter, `body.X` a field of the JSON body or frame, `query.X` a query parameter; `[]`: each
 * name of an array; `?`: checked only when present); a check with `when` applies only to a request that has one of
 * those fields, `null` included (a null removes a setting: it changes it as much as a value does).
 */
import { JOIN_SETTINGS } from '../protocol/groups.js';
import { SUBSCRIPTION_SETTINGS } from '../protocol/subscriptions.js';
import type { AclOperation, AclResourceType } from '../protocol/security.js';
import { OnelogError } from '../protocol/errors.js';
import type { Acls } from './acls.js';
import type { Principal } from './principal.js';

/**
 * One check: `operation` on the `resource` named by `from` (none for the cluster); with `when`, only if the request
 * has one of those fields (`body.retry`), whatever its value, `null` included.
 */
export interface Check {
  operation: Exclude<AclOperation, 'all'>;
  resource: AclResourceType;
  from?: string;
  when?: readonly string[];
}

/**
 * Of a list in an answer, keep only the items naming a `resource` the principal may describe: the list at `field`
 * (a dotted path; `x[].y`: the `y` of each item of the array `x`; none: the answer is the list), each item's name
 * its `key` (none: the item is the name).
 */
export interface AnswerFilter {
  field?: string;
  resource: 'topic' | 'group';
  key?: string;
}

export interface Permission {
  needs: 'public' | 'user' | 'admin' | readonly Check[];
  /** The CLI commands (`topics create`) that use this route or frame. */
  cli?: readonly string[];
  /** The Kafka APIs (`Produce`) whose handlers call this broker method (`KAFKA method` entries). */
  kafka?: readonly string[];
  /** A list answer keeps only the items the principal may describe, applied in order. */
  filter?: readonly AnswerFilter[];
  /** Changes nothing (a fetch, a describe): a refusal is not audited. GET routes change nothing without it. */
  readOnly?: true;
}

/** What a request carries names in. For a WebSocket frame, `params` are the upgrade path's and `body` is the frame. */
export interface RequestParts {
  params?: unknown;
  query?: unknown;
  body?: unknown;
}

/** CLI commands that talk to no server. */
export const LOCAL_COMMANDS: readonly string[] = ['serve'];
/** Kafka APIs that reach no broker method: versions, SASL itself, where the coordinator is. */
export const KAFKA_UNCHECKED: readonly string[] = ['ApiVersions', 'SaslHandshake', 'SaslAuthenticate', 'FindCoordinator'];

const topic = (operation: Check['operation'], from = 'param.topic'): Check => ({ resource: 'topic', operation, from });
const group = (operation: Check['operation'], from = 'param.groupId'): Check => ({ resource: 'group', operation, from });
const cluster = (operation: Check['operation']): Check => ({ resource: 'cluster', operation });
const consuming = [group('read'), topic('read', 'body.topic')];
/**
 * Changing a group's stored subscription settings is altering the group (a retry policy creates its tier and
 * dead-letter topics; a push endpoint sends its records elsewhere): `alter` on it when the request names any of
 * `fields`, null included, even a value equal to the stored one (a request naming a setting writes it). Joining
 * with the settings as they are needs `read` only.
 */
const altersSettings = (fields: readonly string[], from = 'param.groupId'): Check => ({ ...group('alter', from), when: fields.map((f) => `body.${f}`) });
/** What a group's description shows of its topics: only those the principal may describe. */
const groupTopics: readonly AnswerFilter[] = [
  { field: 'subscriptions', resource: 'topic', key: 'topic' }, { field: 'members[].assignment', resource: 'topic', key: 'topic' },
  { field: 'alerts', resource: 'topic', key: 'topic' }, { field: 'resets', resource: 'topic', key: 'topic' },
  { field: 'deadLetterActions', resource: 'topic', key: 'topic' }, { field: 'checkpoints[].topics', resource: 'topic' },
];

/** Every route (`METHOD /path`), WebSocket frame (`WS /path type`) and what it needs. */
export const PERMISSIONS: Readonly<Record<string, Permission>> = {
  'GET /health': { needs: 'public' },
  'GET /(console files)': { needs: 'public' },
  'GET /metrics': { needs: [cluster('describe')] },
  'GET /push-streams': { needs: [cluster('describe')] },
  'GET /cluster': { needs: [cluster('describe')], cli: ['cluster describe'] },
  'POST /cluster/brokers/:brokerId/drain': { needs: [cluster('alter')], cli: ['cluster drain'] },
  // The console's first page and its live reloads: only what the principal may describe (each change of /events too;
  // the counts of /overview are of everything).
  'GET /overview': {
    needs: 'user',
    filter: [
      { field: 'topics', resource: 'topic', key: 'topic' }, { field: 'groups', resource: 'group', key: 'groupId' }, { field: 'groups[].topics', resource: 'topic' },
      { field: 'alerts', resource: 'group', key: 'groupId' }, { field: 'alerts', resource: 'topic', key: 'topic' },
    ],
  },
  'GET /events': { needs: 'user' },

  'POST /users': { needs: 'admin', cli: ['users create'] },
  'GET /users': { needs: 'admin', cli: ['users list'] },
  'DELETE /users/:name': { needs: 'admin', cli: ['users delete'] },
  // A user may rotate its own token; the route checks.
  'POST /users/:name/rotate': { needs: 'user', cli: ['users rotate'] },
  'GET /audit': { needs: 'admin', cli: ['audit list'] },
  'POST /acls': { needs: [cluster('alter')], cli: ['acls add'] },
  'GET /acls': { needs: [cluster('describe')], cli: ['acls list'] },
  'DELETE /acls': { needs: [cluster('alter')], cli: ['acls remove'] },

  'POST /topics': { needs: [topic('create', 'body.topic')], cli: ['topics create'] },
  'GET /topics': { needs: 'user', filter: [{ field: 'topics', resource: 'topic', key: 'topic' }], cli: ['topics list'] },
  'GET /topics/:topic': { needs: [topic('describe')], filter: [{ field: 'groups', resource: 'group', key: 'groupId' }], cli: ['topics describe'] },
  'DELETE /topics/:topic': { needs: [topic('delete')], cli: ['topics delete'] },
  'GET /topics/:topic/history': { needs: [topic('describe')] },
  'POST /topics/:topic/config': { needs: [topic('alter')], cli: ['topics alter'] },
  'POST /topics/:topic/compact': { needs: [topic('alter')], cli: ['topics compact'] },
  'POST /topics/:topic/enforce-retention': { needs: [topic('alter')], cli: ['topics enforce-retention'] },
  'POST /topics/:topic/delete-records': { needs: [topic('delete')], cli: ['topics delete-records'] },
  'POST /topics/:topic/records': { needs: [topic('write')], cli: ['produce'] },
  // The console's record browser: reading records, as a fetch.
  'GET /topics/:topic/records': { needs: [topic('read')] },
  'POST /topics/:topic/fetch': { needs: [topic('read'), group('read', 'body.groupId?')], cli: ['consume'], readOnly: true },
  // A producer id alone writes nothing: producing with it needs write on the topic.
  'POST /producers': { needs: 'user' },

  'GET /groups': {
    needs: 'user', filter: [{ field: 'groups', resource: 'group', key: 'groupId' }, { field: 'groups[].topics', resource: 'topic' }], cli: ['groups list'],
  },
  'GET /groups/:groupId': { needs: [group('describe')], filter: groupTopics, cli: ['groups describe'] },
  'GET /groups/:groupId/history': { needs: [group('describe')], filter: [{ field: 'partitions', resource: 'topic', key: 'topic' }] },
  // Any setting named alters the group. A dead-letter topic named by the subscriber is read (listed, redriven) and
  // deleted from (purged) through the group: all three on it.
  'POST /groups/:groupId/subscriptions': {
    needs: [
      ...consuming, altersSettings(SUBSCRIPTION_SETTINGS),
      topic('read', 'body.retry.deadLetterTopic?'), topic('write', 'body.retry.deadLetterTopic?'), topic('delete', 'body.retry.deadLetterTopic?'),
    ],
    cli: ['groups create', 'groups alter'],
  },
  'POST /groups/:groupId/offsets': { needs: consuming, cli: ['consume'] },
  'POST /groups/:groupId/offsets/reset': { needs: [group('reset'), topic('read', 'body.topic')], cli: ['offsets reset'] },
  'POST /groups/:groupId/checkpoints': { needs: [group('reset')], cli: ['offsets checkpoint save'] },
  'DELETE /groups/:groupId': { needs: [group('delete')], cli: ['groups delete'] },
  'POST /groups/:groupId/members': { needs: [group('read'), topic('read', 'body.topics[]'), altersSettings(JOIN_SETTINGS)], cli: ['consume'] },
  'POST /groups/:groupId/members/:memberId/heartbeat': { needs: [group('read')], cli: ['consume'] },
  'DELETE /groups/:groupId/members/:memberId': { needs: [group('read')], cli: ['consume'] },
  'POST /groups/:groupId/nacks': { needs: consuming },
  'POST /groups/:groupId/nacks/batch': { needs: consuming },
  // Share groups (docs/consumer-groups.md): acquiring is reading; acknowledging moves the group's progress, as a commit.
  'POST /groups/:groupId/share-fetch': { needs: consuming, readOnly: true },
  'POST /groups/:groupId/share-acks': { needs: consuming },
  'GET /groups/:groupId/dead-letters': { needs: [group('read'), topic('read', 'query.topic')], cli: ['dlq list'] },
  'POST /groups/:groupId/dead-letters/redrive': { needs: [group('reset'), topic('read', 'body.topic')], cli: ['dlq redrive'] },
  'POST /groups/:groupId/dead-letters/purge': { needs: [group('reset'), topic('read', 'body.topic')], cli: ['dlq purge'] },
  // What the principal itself may do on a group and topic (the console's buttons): answered from this table.
  'GET /access': { needs: 'user' },

  'GET /alerts': {
    needs: 'user', filter: [{ field: 'alerts', resource: 'group', key: 'groupId' }, { field: 'alerts', resource: 'topic', key: 'topic' }], cli: ['alerts list'],
  },
  'POST /alerts/:id/ack': { needs: [cluster('alter')], cli: ['alerts ack'] },
  'GET /alerts/sinks': { needs: [cluster('describe')], cli: ['alerts notify'] },
  'POST /alerts/sinks': { needs: [cluster('alter')], cli: ['alerts notify'] },
  'DELETE /alerts/sinks/:id': { needs: [cluster('alter')], cli: ['alerts notify'] },

  // Push streams (docs/delivery.md): the upgrade authenticates; each frame is authorized.
  'WS /groups/:groupId/stream subscribe': { needs: [group('read'), topic('read', 'body.topics[]'), altersSettings(JOIN_SETTINGS)], cli: ['consume'] },
  'WS /groups/:groupId/stream credit': { needs: 'user', cli: ['consume'] },
  'WS /groups/:groupId/stream ack': { needs: consuming, cli: ['consume'] },
  'WS /groups/:groupId/stream nack': { needs: consuming },
  // The binary data path (docs/delivery.md).
  'WS /data produce': { needs: [topic('write', 'body.topic')] },
  'WS /data fetch': { needs: [topic('read', 'body.topic'), group('read', 'body.groupId?')], readOnly: true },
  'WS /data commit': { needs: [group('read', 'body.groupId'), topic('read', 'body.topic')] },
  'WS /data share-fetch': { needs: [group('read', 'body.groupId'), topic('read', 'body.topic')], readOnly: true },
  'WS /data share-ack': { needs: [group('read', 'body.groupId'), topic('read', 'body.topic')] },

  // The Kafka listener (docs/kafka.md): once SASL names the principal, every broker method its handlers call.
  'KAFKA produceBatches': { needs: [topic('write', 'body.topic')], kafka: ['Produce'] },
  'KAFKA fetchBatches': { needs: [topic('read', 'body.topic'), group('read', 'body.groupId?')], kafka: ['Fetch'], readOnly: true },
  'KAFKA fetch': { needs: [topic('read', 'body.topic')], kafka: ['ListOffsets'], readOnly: true },
  'KAFKA listTopics': { needs: 'user', filter: [{ resource: 'topic', key: 'topic' }], kafka: ['Metadata', 'Fetch', 'ShareFetch', 'ShareAcknowledge'], readOnly: true },
  'KAFKA describeTopic': {
    needs: [topic('describe', 'body.topic')],
    kafka: [
      'Metadata', 'ListOffsets', 'Fetch', 'OffsetForLeaderEpoch', 'DescribeConfigs', 'DeleteRecords', 'IncrementalAlterConfigs',
      'ShareGroupHeartbeat', 'ShareGroupDescribe', 'ShareFetch', 'ShareAcknowledge', 'DescribeShareGroupOffsets', 'AlterShareGroupOffsets',
    ],
    readOnly: true,
  },
  'KAFKA offsetForTimestamp': { needs: [topic('describe', 'body.topic')], kafka: ['ListOffsets'], readOnly: true },
  'KAFKA createTopic': { needs: [topic('create', 'body.topic')], kafka: ['CreateTopics', 'Metadata', 'Produce'] },
  'KAFKA alterTopic': { needs: [topic('alter', 'body.topic')], kafka: ['IncrementalAlterConfigs'] },
  'KAFKA deleteTopic': { needs: [topic('delete', 'body.topic')], kafka: ['DeleteTopics'] },
  'KAFKA deleteRecords': { needs: [topic('delete', 'body.topic')], kafka: ['DeleteRecords'] },
  'KAFKA initProducerId': { needs: 'user', kafka: ['InitProducerId'] },
  'KAFKA joinGroup': { needs: [group('read', 'body.groupId'), topic('read', 'body.topics[]'), altersSettings(JOIN_SETTINGS, 'body.groupId')], kafka: ['JoinGroup'] },
  'KAFKA heartbeat': { needs: [group('read', 'body.groupId')], kafka: ['JoinGroup', 'SyncGroup', 'Heartbeat'] },
  'KAFKA leaveGroup': { needs: [group('read', 'body.groupId')], kafka: ['LeaveGroup'] },
  'KAFKA commitOffsets': { needs: [group('read', 'body.groupId'), topic('read', 'body.topic')], kafka: ['OffsetCommit'] },
  'KAFKA committedOffsets': { needs: [group('describe', 'body.groupId')], filter: [{ resource: 'topic', key: 'topic' }], kafka: ['OffsetFetch'], readOnly: true },
  'KAFKA describeGroup': {
    needs: [group('describe', 'body.groupId')], filter: groupTopics,
    kafka: ['DescribeGroups', 'ShareGroupHeartbeat', 'ShareGroupDescribe', 'ShareFetch', 'ShareAcknowledge', 'DescribeShareGroupOffsets', 'IncrementalAlterConfigs'], readOnly: true,
  },
  'KAFKA listGroups': { needs: 'user', filter: [{ resource: 'group', key: 'groupId' }], kafka: ['ListGroups'], readOnly: true },
  'KAFKA deleteGroup': { needs: [group('delete', 'body.groupId')], kafka: ['DeleteGroups'] },
  // Share groups (src/kafka/apis/share-groups.ts): a member's ShareGroupHeartbeat subscribes the group to its topics
  // as a share group, with no setting but those of the group's configs (which only a principal with alter on the
  // group sets: setGroupConfigs).
  'KAFKA subscribe': { needs: [group('read', 'body.groupId'), topic('read', 'body.topic')], kafka: ['ShareGroupHeartbeat', 'IncrementalAlterConfigs'] },
  'KAFKA shareFetchSections': { needs: [group('read', 'body.groupId'), topic('read', 'body.topic')], kafka: ['ShareFetch'], readOnly: true },
  'KAFKA shareAcknowledge': { needs: [group('read', 'body.groupId'), topic('read', 'body.topic')], kafka: ['ShareFetch', 'ShareAcknowledge', 'ShareGroupHeartbeat'] },
  'KAFKA resetOffsets': { needs: [group('reset', 'body.groupId'), topic('read', 'body.topic')], kafka: ['AlterShareGroupOffsets'] },
  'KAFKA authorizeGroup': { needs: [group('read', 'body.groupId')], kafka: ['ShareGroupHeartbeat', 'ShareFetch', 'ShareAcknowledge'], readOnly: true },
  'KAFKA groupConfigs': { needs: [group('describe', 'body.groupId')], kafka: ['DescribeConfigs', 'ShareGroupHeartbeat'], readOnly: true },
  'KAFKA setGroupConfigs': { needs: [group('alter', 'body.groupId')], kafka: ['IncrementalAlterConfigs'] },
};

/** Whether `key` changes something, so that a refusal of it is audited: every entry but GET routes and those `readOnly`. */
export function mutates(key: string): boolean {
  return !key.startsWith('GET ') && PERMISSIONS[key]?.readOnly !== true;
}

/**
 * Authorizes `principal` for the route or frame `key` with the names `parts` carries.
 * @throws OnelogError `FORBIDDEN` naming what is missing, `INVALID_REQUEST` when a name the check needs is absent or
 *   not text, `INTERNAL_ERROR` for a key the table does not list (a route added without its permission)
 */
export function authorize(acls: Acls, principal: Principal, key: string, parts: RequestParts): void {
  const permission = PERMISSIONS[key];
  if (permission === undefined) throw new OnelogError('INTERNAL_ERROR', `${key} has no entry in the permission table (src/security/permissions.ts)`);
  const { needs } = permission;
  if (needs === 'public' || needs === 'user') return;
  if (needs === 'admin') {
    if (!principal.admin) throw new OnelogError('FORBIDDEN', `only an admin may ${key}; ${principal.user} is not one`, { user: principal.user });
    return;
  }
  for (const check of needs) {
    const named = check.when?.filter((field) => valueAt(field, parts) !== undefined);
    if (named?.length === 0) continue;
    for (const name of check.from === undefined ? [''] : namesAt(check.from, parts)) {
      try {
        acls.authorize(principal, check.resource, name, check.operation);
      } catch (err) {
        throw named === undefined || !(err instanceof OnelogError) ? err : new OnelogError(err.code,
          `${err.message}; it is needed because the request sets ${named.map((f) => f.replace(/^body\./, '')).join(', ')}: leave ${named.length === 1 ? 'it' : 'them'} out to keep the stored settings`,
          { ...err.context, fields: named.map((f) => f.replace(/^body\./, '')) });
      }
    }
  }
}

/** The names at `from` (`body.retry.deadLetterTopic?`, `body.topics[]`) in `parts`. @throws OnelogError `INVALID_REQUEST` */
export function namesAt(from: string, parts: RequestParts): string[] {
  const optional = from.endsWith('?');
  const many = from.endsWith('[]');
  const path = from.replace(/(\?|\[\])$/, '').split('.');
  const value = valueAt(path.join('.'), parts);
  if (value == null && optional) return [];
  const names = many && Array.isArray(value) ? value : [value];
  if (!names.every((n): n is string => typeof n === 'string')) {
    throw new OnelogError('INVALID_REQUEST', `the request needs ${path.slice(1).join('.')}: ${many ? 'an array of names' : 'a name'}`, { field: path.slice(1).join('.') });
  }
  return names;
}

/** The value at `path` (`body.retry.deadLetterTopic`; `param.X` is a path parameter) in `parts`, or undefined. */
function valueAt(path: string, parts: RequestParts): unknown {
  const [first, ...rest] = path.split('.');
  let value: unknown = parts;
  for (const step of [`${first!}${first === 'param' ? 's' : ''}`, ...rest]) {
    value = value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[step] : undefined;
  }
  return value;
}

/** For a list answer: `payload` with only the items `principal` may describe (unchanged for other routes). */
export function filterAnswer(acls: Acls, principal: Principal, key: string, payload: unknown): unknown {
  return (PERMISSIONS[key]?.filter ?? []).reduce((answer, filter) => {
    const describable = (item: unknown) => {
      const name = filter.key === undefined ? item : (item as Record<string, unknown> | null)?.[filter.key];
      return acls.allows(principal, filter.resource, String(name), 'describe');
    };
    return keepAt(answer, filter.field === undefined ? [] : filter.field.split('.'), describable);
  }, payload);
}

/** `value` with the array at `path` (steps of `x[]` go into each item of the array `x`) holding only the items `keep` keeps. */
function keepAt(value: unknown, path: readonly string[], keep: (item: unknown) => boolean): unknown {
  if (path.length === 0) return Array.isArray(value) ? value.filter(keep) : value;
  if (value === null || typeof value !== 'object') return value;
  const [step, ...rest] = path as [string, ...string[]];
  const each = step.endsWith('[]');
  const field = each ? step.slice(0, -2) : step;
  const inner = (value as Record<string, unknown>)[field];
  if (inner === undefined) return value;
  const kept = each ? (Array.isArray(inner) ? inner.map((item) => keepAt(item, rest, keep)) : inner) : keepAt(inner, rest, keep);
  return { ...value, [field]: kept };
}

/** The table as docs/security.md shows it (a test keeps the two equal). */
export function permissionsMarkdown(): string {
  const only = (p: Permission) => [...new Set((p.filter ?? []).map((f) => `${f.resource}s`))].join(' and ');
  const when = (c: Check) => (c.when === undefined ? '' : c.when.length === 1 ? ` if ${c.when[0]!} is present (null too)` : ` if any of ${c.when.join(', ')} is present (null too)`);
  const needs = (p: Permission) => {
    if (typeof p.needs === 'string') return p.needs === 'user' ? `any user${p.filter ? `; lists only the ${only(p)} it may describe` : ''}` : p.needs;
    const checks = p.needs.map((c) => `${c.operation} ${c.resource}${c.from ? ` (${c.from})` : ''}${when(c)}`).join(', ');
    return `${checks}${p.filter ? `; shows only the ${only(p)} it may describe` : ''}`;
  };
  const used = (p: Permission) => [...(p.cli ?? []).map((c) => `\`onelog ${c}\``), ...(p.kafka ?? []).map((a) => `Kafka ${a}`)].join(', ');
  const rows = Object.entries(PERMISSIONS).map(([key, p]) => `| \`${key}\` | ${needs(p)} | ${mutates(key) ? 'yes' : 'no'} | ${used(p)} |`);
  return ['| route, frame or broker method | needs | refusal audited | used by |', '| --- | --- | --- | --- |', ...rows].join('\n');
}

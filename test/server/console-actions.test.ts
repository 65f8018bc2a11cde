/**
 * What the console's dead-letter and replay pages ask of the HTTP API, on a broker with users, over real sockets and
 * the Wikipedia edits: `GET /access` answers what the signed-in user may do from the permission table and its ACLs; a
 * redrive of a selection (`offsets`) is planned by a dry run that moves nothing and executed as planned, all or
 * nothing; executed redrives, purges and resets are audited with the user, whatever name the client claims.
 */
import { describe, expect, it } from 'vitest';
import { HttpApi } from '../../src/client/http-api.js';
import type { AclBinding } from '../../src/protocol/security.js';
import { asyncCodeOf } from '../helpers/errors.js';
import { serveSecured } from '../helpers/secured-broker.js';
import { readEdits } from '../helpers/wikiticker.js';

const GROUP = 'indexer';
const TOPIC = 'edits';
const allow = (principal: string, resourceType: AclBinding['resourceType'], resourceName: string, operation: AclBinding['operation']): AclBinding =>
  ({ principal, resourceType, resourceName, operation, patternType: 'literal', permission: 'allow' });

/** A broker with an admin (`ops`) holding 40 edits in `edits`, the first five dead-lettered by `indexer`. */
async function withDeadLetters(): Promise<{ url: string; ops: HttpApi; user(name: string, acls: Array<[AclBinding['resourceType'], string, AclBinding['operation']]>): Promise<HttpApi> }> {
  const { url } = await serveSecured();
  const ops = new HttpApi(url, { token: (await new HttpApi(url, { token: '' }).createUser('ops')).token });
  await ops.createTopic({ topic: TOPIC, partitions: 1 });
  await ops.produce({ topic: TOPIC, records: readEdits().slice(0, 40).map((e) => ({ key: Buffer.from(e.key), value: Buffer.from(e.value), timestamp: e.timestamp })) });
  await ops.subscribe({ groupId: GROUP, topic: TOPIC, startPolicy: 'earliest', retry: { delaysMs: [1000], maxAttempts: 1 } });
  for (const offset of [0, 1, 2, 3, 4]) await ops.nack({ groupId: GROUP, topic: TOPIC, partition: 0, offset, reason: `edit ${offset} cannot be indexed` });
  return {
    url, ops,
    user: async (name, acls) => {
      const api = new HttpApi(url, { token: (await ops.createUser(name)).token });
      for (const [type, resource, operation] of acls) await ops.addAcl(allow(name, type, resource, operation));
      return api;
    },
  };
}

describe('GET /access', () => {
  it('answers what the signed-in user may do on a group and topic, as the routes decide', async () => {
    const { url, ops, user } = await withDeadLetters();
    const reader = await user('reader', [['group', GROUP, 'read'], ['topic', TOPIC, 'read']]);
    const operator = await user('operator', [['group', GROUP, 'reset'], ['topic', TOPIC, 'read']]);
    const stranger = await user('stranger', []);

    expect(await reader.accessRights(GROUP, TOPIC)).toEqual({
      groupId: GROUP, topic: TOPIC, user: 'reader', admin: false,
      actions: {
        describeGroup: true, listDeadLetters: true, redriveDeadLetters: false, purgeDeadLetters: false, resetOffsets: false, saveCheckpoint: false, fetch: true,
      },
    });
    // reset implies describe, not read: operator redrives, purges and resets, but does not list dead letters nor consume.
    expect((await operator.accessRights(GROUP, TOPIC)).actions).toEqual({
      describeGroup: true, listDeadLetters: false, redriveDeadLetters: true, purgeDeadLetters: true, resetOffsets: true, saveCheckpoint: true, fetch: true,
    });
    expect(Object.values((await stranger.accessRights(GROUP, TOPIC)).actions)).toEqual(Array(7).fill(false));
    expect((await ops.accessRights(GROUP, TOPIC))).toMatchObject({ user: 'ops', admin: true, actions: { redriveDeadLetters: true, resetOffsets: true } });
    // Each answer is what the API does: the reader is refused what it was told it may not do.
    expect(await asyncCodeOf(reader.redriveDeadLetters({ groupId: GROUP, topic: TOPIC, offsets: [0] }))).toBe('FORBIDDEN');
    expect(await asyncCodeOf(reader.resetOffsets({ groupId: GROUP, topic: TOPIC, spec: { to: 'earliest' } }))).toBe('FORBIDDEN');
    expect((await reader.listDeadLetters({ groupId: GROUP, topic: TOPIC })).depth).toBe(5);
    // Another topic is another answer: the ACLs name edits only.
    expect((await operator.accessRights(GROUP, 'other')).actions.resetOffsets).toBe(false);
    expect(await asyncCodeOf(new HttpApi(url, { token: 'onelog_0000000000000000_wrong' }).accessRights(GROUP, TOPIC))).toBe('UNAUTHENTICATED');
  });

  it('allows everything on a server that checks no one, and needs a group and a topic', async () => {
    const { url } = await serveSecured({ insecure: true });
    const api = new HttpApi(url);
    expect(await api.accessRights('g', 't')).toMatchObject({ user: null, admin: true, actions: { redriveDeadLetters: true, resetOffsets: true, fetch: true } });
    const res = await fetch(`${url}/access?group=g`);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { code: string }).code).toBe('INVALID_REQUEST');
  });
});

describe('redriving a selection', () => {
  it('a dry run shows exactly what would move and moves nothing; executing moves that selection alone, audited with the user', async () => {
    const { ops, user } = await withDeadLetters();
    const operator = await user('operator', [['group', GROUP, 'reset'], ['topic', TOPIC, 'read']]);
    const auditedRedrives = async () => (await ops.listAudit()).filter((e) => e.action === 'dead-letters-redrive' && e.outcome === 'done');

    const dry = await operator.redriveDeadLetters({ groupId: GROUP, topic: TOPIC, offsets: [3, 1, 3] });
    expect(dry).toMatchObject({ executed: false, depth: 5 });
    expect(dry.records.map((r) => [r.offset, `${r.original.topic}/${r.original.partition}@${r.original.offset}`, r.attempts])).toEqual([
      [1, 'edits/0@1', 1], [3, 'edits/0@3', 1],
    ]);
    expect((await ops.listDeadLetters({ groupId: GROUP, topic: TOPIC })).depth).toBe(5);
    expect(await auditedRedrives()).toEqual([]);

    const done = await operator.redriveDeadLetters({ groupId: GROUP, topic: TOPIC, offsets: [3, 1], execute: true, requestedBy: 'somebody-else' });
    expect(done).toMatchObject({ executed: true, depth: 3 });
    expect(done.records.map((r) => r.offset)).toEqual(dry.records.map((r) => r.offset));
    expect((await ops.listDeadLetters({ groupId: GROUP, topic: TOPIC })).records.map((r) => r.offset)).toEqual([0, 2, 4]);
    const [entry] = await auditedRedrives();
    expect(entry).toMatchObject({ principal: 'operator', target: `group:${GROUP}`, details: { topic: TOPIC, offsets: [3, 1], execute: true } });
    const described = await ops.describeGroup(GROUP);
    expect(described.deadLetterActions.map((a) => [a.action, a.firstOffset, a.endOffset, a.requestedBy])).toEqual([
      ['redrive', 3, 4, 'operator'], ['redrive', 1, 2, 'operator'],
    ]);
    expect(described.subscriptions[0]!.deadLetter).toEqual({ topic: 'edits.indexer.dlq', depth: 3 });

    // All or nothing: a selection naming one dead letter no longer waiting moves none of it.
    expect(await asyncCodeOf(operator.redriveDeadLetters({ groupId: GROUP, topic: TOPIC, offsets: [0, 1], execute: true }))).toBe('INVALID_OFFSET');
    expect(await asyncCodeOf(operator.redriveDeadLetters({ groupId: GROUP, topic: TOPIC, offsets: [0, 99], execute: true }))).toBe('INVALID_OFFSET');
    expect((await ops.listDeadLetters({ groupId: GROUP, topic: TOPIC })).depth).toBe(3);
    // Exactly one of offset, offsets and all.
    expect(await asyncCodeOf(operator.redriveDeadLetters({ groupId: GROUP, topic: TOPIC, offset: 0, offsets: [2] }))).toBe('INVALID_REQUEST');
    expect(await asyncCodeOf(operator.redriveDeadLetters({ groupId: GROUP, topic: TOPIC, offsets: [] }))).toBe('INVALID_REQUEST');
    expect(await asyncCodeOf(operator.redriveDeadLetters({ groupId: GROUP, topic: TOPIC }))).toBe('INVALID_REQUEST');

    // A purge and a reset, planned then executed, are audited with the user too; the plans are not.
    expect(await operator.purgeDeadLetters({ groupId: GROUP, topic: TOPIC, beforeOffset: 3 })).toMatchObject({ executed: false, records: 2, depth: 3 });
    expect(await operator.purgeDeadLetters({ groupId: GROUP, topic: TOPIC, beforeOffset: 3, execute: true, requestedBy: 'x' }))
      .toMatchObject({ executed: true, records: 2, depth: 1 });
    await operator.resetOffsets({ groupId: GROUP, topic: TOPIC, spec: { to: 'offset', offset: 10 } });
    await operator.resetOffsets({ groupId: GROUP, topic: TOPIC, spec: { to: 'offset', offset: 10 }, execute: true, requestedBy: 'x' });
    const audit = (await ops.listAudit()).filter((e) => e.outcome === 'done' && e.principal === 'operator').map((e) => e.action);
    expect(audit).toEqual(['offsets-reset', 'dead-letters-purge', 'dead-letters-redrive']);
    expect((await ops.describeGroup(GROUP)).resets[0]).toMatchObject({ requestedBy: 'operator', newOffset: 10 });
  });
});

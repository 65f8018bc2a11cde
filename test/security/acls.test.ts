/**
 * Permissions (docs/security.md): the permission table covers every route, frame and CLI command, and ACLs
 * decide, through a real broker's HTTP server, push streams and data sockets, who may do what: literal and prefix
 * names, `*`, implied describe, deny wins, admins never refused, a refused request changing nothing.
 */
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import WebSocket from 'ws';
import { describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { openSqliteCatalog } from '../../src/catalog/sqlite.js';
import { buildProgram } from '../../src/cli/program.js';
import type { Command } from 'commander';
import { BinaryApi } from '../../src/client/binary-api.js';
import { HttpApi } from '../../src/client/http-api.js';
import { silentLogger } from '../../src/common/logger.js';
import { SUBSCRIPTION_SETTINGS } from '../../src/protocol/subscriptions.js';
import type { AclBinding } from '../../src/protocol/security.js';
import type { SubscribeRequest } from '../../src/protocol/subscriptions.js';
import { Acls } from '../../src/security/acls.js';
import { authorize, KAFKA_UNCHECKED, LOCAL_COMMANDS, PERMISSIONS, permissionsMarkdown } from '../../src/security/permissions.js';
import { KAFKA_APIS } from '../../src/kafka/listener.js';
import { DATA_REQUEST_FRAMES } from '../../src/server/data-socket.js';
import { createHttpServer } from '../../src/server/http-server.js';
import { PUSH_FRAME_TYPES } from '../../src/server/push-socket.js';
import { asyncCodeOf } from '../helpers/errors.js';
import { serveSecured } from '../helpers/secured-broker.js';
import { tmpDir } from '../helpers/tmp.js';

async function serve(): Promise<{ url: string; ops: HttpApi; user(name: string): Promise<HttpApi> }> {
  const { url } = await serveSecured();
  const ops = new HttpApi(url, { token: (await new HttpApi(url, { token: '' }).createUser('ops')).token });
  return { url, ops, user: async (name) => new HttpApi(url, { token: (await ops.createUser(name)).token }) };
}

const acl = (principal: string, resourceType: AclBinding['resourceType'], resourceName: string, operation: AclBinding['operation'],
  more: Partial<AclBinding> = {}): AclBinding => ({ principal, resourceType, resourceName, operation, patternType: 'literal', permission: 'allow', ...more });
const one = (value: string) => ({ key: null, value: Buffer.from(value) });

/** The leaf commands of the CLI (`topics create`, `produce`). */
function leafCommands(command: Command, prefix = ''): string[] {
  return command.commands.flatMap((c) => {
    const name = `${prefix}${c.name()}`;
    return c.commands.length === 0 ? [name] : leafCommands(c, `${name} `);
  });
}

describe('the permission table', () => {
  it('lists every route of the server, every socket frame and every CLI command, and nothing else', async () => {
    const { app } = await serveSecured(); // listening: no route lacks an entry
    const http = Object.keys(PERMISSIONS).filter((k) => !/^(WS|KAFKA) /.test(k) && k !== 'GET /(console files)');
    for (const key of http) {
      const [method, url] = key.split(' ') as [string, string];
      expect(app.hasRoute({ method, url }), key).toBe(true);
    }
    const frames = [
      ...PUSH_FRAME_TYPES.map((t) => `WS /groups/:groupId/stream ${t}`),
      ...Object.keys(DATA_REQUEST_FRAMES).map((k) => `WS /data ${k}`),
    ];
    expect(Object.keys(PERMISSIONS).filter((k) => k.startsWith('WS ')).sort()).toEqual(frames.sort());

    // Every Kafka API reaches the broker through methods the table lists, or through none.
    const kafkaUses = new Set(Object.values(PERMISSIONS).flatMap((p) => p.kafka ?? []));
    const apiNames = KAFKA_APIS.map((a) => a.name);
    expect(apiNames.filter((n) => !kafkaUses.has(n) && !KAFKA_UNCHECKED.includes(n))).toEqual([]);
    expect([...kafkaUses, ...KAFKA_UNCHECKED].filter((n) => !apiNames.includes(n))).toEqual([]);
    const { broker } = await serveSecured();
    const methods = Object.keys(PERMISSIONS).filter((k) => k.startsWith('KAFKA ')).map((k) => k.slice(6));
    expect(methods.filter((m) => typeof (broker as unknown as Record<string, unknown>)[m] !== 'function')).toEqual([]);

    const commands = leafCommands(buildProgram());
    const mapped = new Set(Object.values(PERMISSIONS).flatMap((p) => p.cli ?? []));
    expect(commands.filter((c) => !mapped.has(c) && !LOCAL_COMMANDS.includes(c))).toEqual([]);
    expect([...mapped].filter((c) => !commands.includes(c))).toEqual([]);
  });

  it('refuses to serve a route that has no entry', async () => {
    const broker = await Broker.open({ dataDir: tmpDir() });
    const app = createHttpServer(broker, { access: { users: broker.users, acls: broker.acls } });
    app.get('/unlisted', async () => ({}));
    await expect(app.ready()).rejects.toThrow(/GET \/unlisted/);
    await broker.close();
  });

  it('a check on a setting applies when the request names it, null included, and only then', async () => {
    const catalog = await openSqliteCatalog(path.join(tmpDir(), 'catalog.sqlite'));
    for (const [type, name] of [['group', 'g'], ['topic', 't']] as const) await catalog.acls.add(acl('alice', type, name, 'read'));
    const acls = await Acls.open(catalog, silentLogger);
    const alice = { user: 'alice', admin: false };
    const conditional = Object.entries(PERMISSIONS).flatMap(([key, p]) => (typeof p.needs === 'string' ? [] : p.needs.flatMap((c) => c.when ?? []).map((field) => [key, field] as const)));
    expect(conditional.length).toBeGreaterThan(SUBSCRIPTION_SETTINGS.length);
    for (const [key, field] of conditional) {
      const parts = (value?: unknown) => ({
        params: { groupId: 'g' }, body: { groupId: 'g', topic: 't', topics: ['t'], ...(value === undefined ? {} : { [field.replace(/^body\./, '')]: value }) },
      });
      expect(() => authorize(acls, alice, key, parts()), `${key} without ${field}`).not.toThrow();
      for (const value of [null, 'x', 0, false, {}]) {
        expect(() => authorize(acls, alice, key, parts(value)), `${key} with ${field}: ${JSON.stringify(value)}`).toThrow(/may not alter group "g".*sets/);
      }
    }
    await catalog.close();
  });

  it('is what docs/security.md shows', () => {
    expect(fs.readFileSync(new URL('../../docs/security.md', import.meta.url), 'utf8')).toContain(permissionsMarkdown());
  });
});

describe('ACLs', () => {
  it('deny wins over any allow; with no matching allow an operation is refused; admins are never refused; create on the cluster creates any topic no ACL denies', async () => {
    const catalog = await openSqliteCatalog(path.join(tmpDir(), 'catalog.sqlite'));
    const ops = ['read', 'write', 'create', 'delete', 'alter', 'describe', 'reset', 'all'] as const;
    const arbitraryAcl = fc.record({
      principal: fc.constantFrom('alice', 'bob', '*'), resourceType: fc.constantFrom('topic' as const, 'group' as const),
      resourceName: fc.constantFrom('orders', 'orders.eu', 'ord', '*', 'payments'), patternType: fc.constantFrom('literal' as const, 'prefix' as const),
      operation: fc.constantFrom(...ops), permission: fc.constantFrom('allow' as const, 'deny' as const),
    }).filter((a) => a.operation !== 'reset' || a.resourceType === 'group');
    const clusterAcl = fc.record({
      principal: fc.constantFrom('alice', 'bob', '*'), resourceType: fc.constant('cluster' as const), resourceName: fc.constant(''), patternType: fc.constant('literal' as const),
      operation: fc.constantFrom('create' as const, 'all' as const, 'alter' as const), permission: fc.constantFrom('allow' as const, 'deny' as const),
    });
    await fc.assert(fc.asyncProperty(fc.uniqueArray(fc.oneof(arbitraryAcl, clusterAcl), { maxLength: 8, selector: (a) => JSON.stringify(a) }),
      fc.constantFrom('orders', 'orders.eu', 'payments'), fc.constantFrom(...ops.filter((o) => o !== 'all' && o !== 'reset')),
      async (list, name, operation) => {
        for (const a of await catalog.acls.list()) await catalog.acls.remove(a);
        for (const a of list) await catalog.acls.add(a);
        const acls = await Acls.open(catalog, silentLogger);
        const matches = (a: AclBinding) => a.resourceType === 'topic' && (a.principal === 'alice' || a.principal === '*') &&
          (a.patternType === 'prefix' ? name.startsWith(a.resourceName) : a.resourceName === name || a.resourceName === '*');
        const implies = (a: AclBinding) => a.operation === operation || a.operation === 'all' ||
          (operation === 'describe' && ['read', 'write', 'delete', 'alter', 'reset'].includes(a.operation));
        const denied = list.some((a) => matches(a) && a.permission === 'deny' && (a.operation === operation || a.operation === 'all'));
        const allowed = list.some((a) => matches(a) && a.permission === 'allow' && implies(a));
        // Kafka's CreateTopics: CREATE on the cluster, when no topic ACL allows or denies it.
        const onCluster = (permission: 'allow' | 'deny') => list.some((a) => a.resourceType === 'cluster' && (a.principal === 'alice' || a.principal === '*') &&
          a.permission === permission && (a.operation === 'create' || a.operation === 'all'));
        const byCluster = operation === 'create' && !allowed && !denied && onCluster('allow') && !onCluster('deny');
        expect(acls.allows({ user: 'alice', admin: false }, 'topic', name, operation)).toBe((allowed && !denied) || byCluster);
        expect(acls.allows({ user: 'alice', admin: true }, 'topic', name, operation)).toBe(true);
      }), { numRuns: 150 });
    await catalog.close();
  });

  it('topics: create, write, read and describe by literal name, prefix and *; a refused produce stores nothing', async () => {
    const { url, ops, user } = await serve();
    const alice = await user('alice');
    expect(await asyncCodeOf(alice.createTopic({ topic: 'orders.eu', partitions: 1 }))).toBe('FORBIDDEN');
    await ops.addAcl(acl('alice', 'topic', 'orders.', 'create', { patternType: 'prefix' }));
    await alice.createTopic({ topic: 'orders.eu', partitions: 1 });
    await ops.createTopic({ topic: 'payments', partitions: 1 });
    expect(await asyncCodeOf(alice.createTopic({ topic: 'payments2', partitions: 1 }))).toBe('FORBIDDEN');

    // create alone does not let alice write, describe or even see the topic.
    expect(await asyncCodeOf(alice.produce({ topic: 'orders.eu', records: [one('a')] }))).toBe('FORBIDDEN');
    expect(await alice.listTopics()).toEqual([]);
    expect((await ops.describeTopic('orders.eu')).partitions[0]!.highWatermark).toBe(0);

    await ops.addAcl(acl('alice', 'topic', 'orders.', 'write', { patternType: 'prefix' }));
    await alice.produce({ topic: 'orders.eu', records: [one('a'), one('b')] });
    expect((await alice.describeTopic('orders.eu')).partitions[0]!.highWatermark).toBe(2); // write implies describe
    expect((await alice.listTopics()).map((t) => t.topic)).toEqual(['orders.eu']);
    expect(await asyncCodeOf(alice.fetch({ topic: 'orders.eu', partitions: [{ partition: 0, offset: 0 }] }))).toBe('FORBIDDEN');
    expect(await asyncCodeOf(alice.produce({ topic: 'payments', records: [one('x')] }))).toBe('FORBIDDEN');

    // `*` names every topic; a deny wins over it and over the prefix.
    await ops.addAcl(acl('alice', 'topic', '*', 'read'));
    expect((await alice.fetch({ topic: 'payments', partitions: [{ partition: 0, offset: 0 }] })).partitions[0]!.records).toEqual([]);
    await ops.addAcl(acl('alice', 'topic', 'payments', 'read', { permission: 'deny' }));
    expect(await asyncCodeOf(alice.fetch({ topic: 'payments', partitions: [{ partition: 0, offset: 0 }] }))).toBe('FORBIDDEN');
    await ops.addAcl(acl('*', 'topic', 'orders.eu', 'all', { permission: 'deny' }));
    expect(await asyncCodeOf(alice.produce({ topic: 'orders.eu', records: [one('c')] }))).toBe('FORBIDDEN');
    expect((await ops.describeTopic('orders.eu')).partitions[0]!.highWatermark).toBe(2);
    await ops.produce({ topic: 'orders.eu', records: [one('c')] }); // admins are never refused

    // A name in the body never replaces the one in the path the ACLs were checked on.
    const raw = (path: string, body: unknown) => fetch(`${url}${path}`, {
      method: 'POST', headers: { 'content-type': 'application/json', authorization: alice.connection.headers.authorization! }, body: JSON.stringify(body),
    }).then(async (r) => ({ status: r.status, body: await r.json() as { code?: string } }));
    await ops.addAcl(acl('alice', 'topic', 'orders.eu', 'read'));
    expect(await raw('/topics/orders.eu/fetch', { topic: 'payments', partitions: [{ partition: 0, offset: 0 }] }))
      .toMatchObject({ status: 400, body: { code: 'INVALID_REQUEST' } });
    expect(await raw('/topics/orders.eu/delete-records', { topic: 'payments', partition: 0, beforeOffset: 0 })).toMatchObject({ status: 400 });

    // The refusal names what is missing, with the error body of every other error.
    const refusal = (p: Promise<unknown>) => p.then(() => undefined, (e: unknown) => e as { code: string; message: string; context: Record<string, unknown> });
    const denied = await refusal(alice.deleteTopic('orders.eu'));
    expect(denied).toMatchObject({ code: 'FORBIDDEN', context: { user: 'alice', operation: 'delete', resourceType: 'topic', resourceName: 'orders.eu', reason: 'denied' } });
    expect(denied?.message).toContain('an ACL denies it');
    const missing = await refusal(alice.deleteTopic('payments'));
    expect(missing).toMatchObject({ code: 'FORBIDDEN', context: { resourceName: 'payments', reason: 'no-acl' } });
    expect(missing?.message).toContain('onelog acls add --principal alice --topic payments --operation delete');
  });

  it('groups: consuming needs read on the topic and the group; a reset or redrive needs reset on the group', async () => {
    const { ops, user } = await serve();
    const alice = await user('alice');
    await ops.createTopic({ topic: 'edits', partitions: 1 });
    await ops.produce({ topic: 'edits', records: [one('a'), one('b'), one('c')] });
    await ops.subscribe({ groupId: 'team-a.loader', topic: 'edits', startPolicy: 'earliest' });

    const join = () => alice.joinGroup({ groupId: 'team-a.loader', topics: ['edits'] });
    await ops.addAcl(acl('alice', 'topic', 'edits', 'read'));
    expect(await asyncCodeOf(join())).toBe('FORBIDDEN'); // the group is missing
    expect(await asyncCodeOf(alice.fetch({ topic: 'edits', groupId: 'team-a.loader', partitions: [{ partition: 0, offset: 0 }] }))).toBe('FORBIDDEN');
    await ops.addAcl(acl('alice', 'group', 'team-a.', 'read', { patternType: 'prefix' }));
    const member = await join();
    await alice.commitOffsets({ groupId: 'team-a.loader', topic: 'edits', offsets: [{ partition: 0, offset: 2 }], memberId: member.memberId, generationId: member.generationId });
    expect((await alice.describeGroup('team-a.loader')).subscriptions[0]!.partitions[0]).toMatchObject({ committedOffset: 2 }); // read implies describe
    expect((await alice.listGroups()).map((g) => g.groupId)).toEqual(['team-a.loader']);
    await ops.subscribe({ groupId: 'team-b.audit', topic: 'edits', startPolicy: 'earliest' });
    expect((await alice.listGroups()).map((g) => g.groupId)).toEqual(['team-a.loader']);

    // A topic's description shows only the groups alice may describe.
    expect((await alice.describeTopic('edits', { groups: true })).groups?.map((g) => g.groupId)).toEqual(['team-a.loader']);

    // A retry policy needs alter on the group; a dead-letter topic of one's own, read, write and delete on it.
    const withRetry = (deadLetterTopic?: string) => alice.subscribe({
      groupId: 'team-a.loader', topic: 'edits', retry: { delaysMs: [1000], maxAttempts: 2, ...(deadLetterTopic ? { deadLetterTopic } : {}) },
    });
    expect(await asyncCodeOf(withRetry())).toBe('FORBIDDEN');
    await ops.addAcl(acl('alice', 'group', 'team-a.loader', 'alter'));
    await ops.createTopic({ topic: 'shared-dlq', partitions: 1 });
    await ops.addAcl(acl('alice', 'topic', 'shared-dlq', 'write'));
    expect(await asyncCodeOf(withRetry('shared-dlq'))).toBe('FORBIDDEN');
    await withRetry();

    const reset = () => alice.resetOffsets({ groupId: 'team-a.loader', topic: 'edits', spec: { to: 'earliest' }, execute: true });
    expect(await asyncCodeOf(reset())).toBe('FORBIDDEN');
    expect(await asyncCodeOf(alice.redriveDeadLetters({ groupId: 'team-a.loader', topic: 'edits', all: true, execute: true }))).toBe('FORBIDDEN');
    expect(await asyncCodeOf(alice.deleteGroup('team-a.loader'))).toBe('FORBIDDEN');
    await ops.addAcl(acl('alice', 'group', 'team-a.loader', 'reset'));
    await alice.leaveGroup({ groupId: 'team-a.loader', memberId: member.memberId });
    // A reset also needs read on its topic: it would show and move offsets of a topic alice cannot read.
    await ops.createTopic({ topic: 'secret', partitions: 1 });
    expect(await asyncCodeOf(alice.resetOffsets({ groupId: 'team-a.loader', topic: 'secret', spec: { to: 'latest' } }))).toBe('FORBIDDEN');
    await reset();
    expect((await ops.describeGroup('team-a.loader')).subscriptions[0]!.partitions[0]).toMatchObject({ committedOffset: 0 });
    expect((await ops.listAudit()).find((e) => e.action === 'offsets-reset')).toMatchObject({ principal: 'alice', target: 'group:team-a.loader' });
  });

  it('changing any subscription setting needs alter on the group: set or null, even to the stored value; joining as it is needs read', async () => {
    const { url, ops, user } = await serve();
    const alice = await user('alice');
    await ops.createTopic({ topic: 'edits', partitions: 1 });
    await ops.subscribe({ groupId: 'g', topic: 'edits', startPolicy: 'earliest', retry: { delaysMs: [1000], maxAttempts: 2 } });
    await ops.addAcl(acl('alice', 'topic', 'edits', 'read'));
    await ops.addAcl(acl('alice', 'group', 'g', 'read'));
    const stored = async () => (await ops.describeGroup('g')).subscriptions.map(({ partitions: _p, ...s }) => s);
    const before = await stored();
    expect(before[0]).toMatchObject({ startPolicy: 'earliest', retry: { delaysMs: [1000] } });

    // A valid value of every setting a subscribe request takes (the type makes the list complete).
    const values: Required<Omit<SubscribeRequest, 'groupId' | 'topic'>> = {
      startPolicy: 'latest', deliveryMode: 'push', onOutOfRange: 'earliest', pushEndpoint: 'https://hooks.example.invalid/in', maxInFlight: 2,
      retry: { delaysMs: [500], maxAttempts: 3 }, maxDeliveries: 4, type: 'share', lockMs: 5000, ordering: 'key', maxInFlightRecords: 100,
      deadLetterAlertDepth: 5, webhookMaxAttempts: 3, headroomWarnRatio: 0.5, stallMs: 60_000,
    };
    expect(Object.keys(values).sort()).toEqual([...SUBSCRIPTION_SETTINGS].sort());
    const post = (path: string, body: unknown) => fetch(`${url}${path}`, {
      method: 'POST', headers: { 'content-type': 'application/json', authorization: alice.connection.headers.authorization! }, body: JSON.stringify(body),
    }).then(async (r) => ({ status: r.status, body: await r.json() as { code?: string; fields?: string[]; operation?: string } }));
    for (const field of SUBSCRIPTION_SETTINGS) {
      expect(await post('/groups/g/subscriptions', { topic: 'edits', [field]: values[field] }), field)
        .toMatchObject({ status: 403, body: { code: 'FORBIDDEN', operation: 'alter', fields: [field] } });
      // null: refused by the permission check where the schema takes it (a null retry once removed the policy), else by the schema.
      const nulled = await post('/groups/g/subscriptions', { topic: 'edits', [field]: null });
      expect(nulled.status, `${field}: null`).toBe(field === 'retry' || field === 'pushEndpoint' || field === 'maxDeliveries' ? 403 : 400);
    }
    // The stored value itself: a request naming a setting writes it.
    expect(await post('/groups/g/subscriptions', { topic: 'edits', startPolicy: 'earliest' })).toMatchObject({ status: 403 });
    expect(await stored()).toEqual(before);
    // Absent: joining the subscription as it is needs read only.
    expect((await post('/groups/g/subscriptions', { topic: 'edits' })).status).toBe(200);
    // A member's join and a push stream's subscribe frame set the start and out-of-range policies too.
    for (const field of ['startPolicy', 'onOutOfRange'] as const) {
      expect(await post('/groups/g/members', { topics: ['edits'], [field]: values[field] })).toMatchObject({ status: 403, body: { fields: [field] } });
    }
    expect(await new Promise((resolve, reject) => {
      const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/groups/g/stream`, { headers: { authorization: alice.connection.headers.authorization! } });
      ws.on('open', () => ws.send(JSON.stringify({ type: 'subscribe', topics: ['edits'], startPolicy: 'latest' })));
      ws.on('message', (data) => { resolve(JSON.parse(data.toString())); ws.close(); });
      ws.on('error', reject);
    })).toMatchObject({ type: 'error', code: 'FORBIDDEN', operation: 'alter' });
    expect(await stored()).toEqual(before);
    const member = await alice.joinGroup({ groupId: 'g', topics: ['edits'] });
    await alice.leaveGroup({ groupId: 'g', memberId: member.memberId });

    // With alter, a null removes the retry policy; a value sets it.
    await ops.addAcl(acl('alice', 'group', 'g', 'alter'));
    await alice.subscribe({ groupId: 'g', topic: 'edits', retry: null, startPolicy: 'latest' });
    expect((await stored())[0]).toMatchObject({ retry: null, startPolicy: 'latest' });
  });

  it('a group\'s list and description show only the topics the user may describe', async () => {
    const { ops, user } = await serve();
    const alice = await user('alice');
    for (const topic of ['edits', 'secret']) {
      await ops.createTopic({ topic, partitions: 1 });
      await ops.produce({ topic, records: [one('a')] });
    }
    for (const topic of ['edits', 'secret']) await ops.subscribe({ groupId: 'g', topic, startPolicy: 'earliest' });
    await ops.resetOffsets({ groupId: 'g', topic: 'secret', spec: { to: 'latest' }, execute: true });
    await ops.saveCheckpoint({ groupId: 'g', name: 'before' });
    await ops.joinGroup({ groupId: 'g', topics: ['edits', 'secret'] });
    await ops.addAcl(acl('alice', 'group', 'g', 'describe'));
    await ops.addAcl(acl('alice', 'topic', 'edits', 'describe'));

    const full = await ops.describeGroup('g');
    expect(full.subscriptions.map((s) => s.topic).sort()).toEqual(['edits', 'secret']);
    expect(full.resets.map((r) => r.topic)).toContain('secret');
    expect(full.members.flatMap((m) => m.assignment.map((a) => a.topic)).sort()).toEqual(['edits', 'secret']);
    expect((await ops.listGroups())[0]!.topics.sort()).toEqual(['edits', 'secret']);

    expect((await alice.listGroups()).map((g) => [g.groupId, g.topics])).toEqual([['g', ['edits']]]);
    const seen = await alice.describeGroup('g');
    expect(seen.subscriptions.map((s) => s.topic)).toEqual(['edits']);
    expect(seen.members.flatMap((m) => m.assignment.map((a) => a.topic))).toEqual(['edits']);
    expect(seen.resets.filter((r) => r.topic === 'secret')).toEqual([]);
    expect(seen.checkpoints.map((c) => c.topics)).toEqual([['edits']]);
    expect(JSON.stringify(seen)).not.toContain('secret');
    expect(JSON.stringify(await alice.groupHistory('g'))).not.toContain('secret');
  });

  it('push streams and data sockets authorize every frame', async () => {
    const { url, ops } = await serve();
    const created = await ops.createUser('alice');
    const alice = new BinaryApi(url, { token: created.token });
    await ops.createTopic({ topic: 'edits', partitions: 1 });
    expect(await asyncCodeOf(alice.produce({ topic: 'edits', records: [one('a')] }))).toBe('FORBIDDEN');
    expect((await ops.describeTopic('edits')).partitions[0]!.highWatermark).toBe(0);
    await ops.addAcl(acl('alice', 'topic', 'edits', 'write'));
    await alice.produce({ topic: 'edits', records: [one('a')] });
    expect(await asyncCodeOf(alice.fetch({ topic: 'edits', partitions: [{ partition: 0, offset: 0 }] }))).toBe('FORBIDDEN');

    const firstFrame = () => new Promise<Record<string, unknown>>((resolve, reject) => {
      const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/groups/g/stream`, { headers: { authorization: `Bearer ${created.token}` } });
      ws.on('open', () => ws.send(JSON.stringify({ type: 'subscribe', topics: ['edits'] })));
      ws.on('message', (data) => { resolve(JSON.parse(data.toString()) as Record<string, unknown>); ws.close(); });
      ws.on('error', reject);
    });
    expect(await firstFrame()).toMatchObject({ type: 'error', code: 'FORBIDDEN', operation: 'read' });
    expect(await asyncCodeOf(ops.describeGroup('g'))).toBe('UNKNOWN_GROUP'); // the refused subscribe joined nothing
  });

  it('only who may alter the cluster manages ACLs; deleting a user deletes its ACLs; changes are audited', async () => {
    const { ops, user } = await serve();
    const alice = await user('alice');
    const mine = acl('alice', 'topic', 'edits', 'write');
    expect(await asyncCodeOf(alice.addAcl(mine))).toBe('FORBIDDEN');
    expect(await asyncCodeOf(alice.listAcls())).toBe('FORBIDDEN');
    expect(await ops.addAcl({ ...mine, resourceName: 'x' })).toEqual({ ...mine, resourceName: 'x' });
    expect(await asyncCodeOf(ops.addAcl({ ...mine, resourceName: 'x' }))).toBe('ALREADY_EXISTS');
    expect(await asyncCodeOf(ops.addAcl({ ...mine, operation: 'reset' }))).toBe('INVALID_REQUEST');
    expect(await asyncCodeOf(ops.addAcl({ ...mine, principal: 'no spaces' }))).toBe('INVALID_REQUEST');
    expect(await asyncCodeOf(ops.addAcl({ ...mine, resourceName: '' }))).toBe('INVALID_REQUEST');
    await ops.addAcl(acl('alice', 'cluster', 'ignored', 'alter'));
    await alice.addAcl(mine); // now alice may
    expect(await alice.listAcls('alice')).toHaveLength(3); // alter on the cluster implies describe

    await ops.removeAcl({ ...mine, resourceName: 'x' });
    expect(await asyncCodeOf(ops.removeAcl({ ...mine, resourceName: 'x' }))).toBe('NOT_FOUND');
    await ops.deleteUser('alice');
    expect(await ops.listAcls()).toEqual([]);
    // A new alice starts with nothing.
    const again = await user('alice');
    expect(await asyncCodeOf(again.listAcls())).toBe('FORBIDDEN');
    expect((await ops.listAudit()).filter((e) => e.action.startsWith('acl-')).map((e) => [e.principal, e.action, e.target, e.outcome])).toEqual([
      ['ops', 'acl-remove', 'topic:x', 'done'], ['alice', 'acl-add', 'topic:edits', 'done'], ['ops', 'acl-add', 'cluster', 'done'], ['ops', 'acl-add', 'topic:x', 'done'],
      ['alice', 'acl-add', 'cluster', 'refused'], // she needed alter on the cluster; her refused list is a read, not recorded
    ]);
  });
});

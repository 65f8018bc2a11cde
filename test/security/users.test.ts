/**
 * Users and bearer tokens against a real broker's HTTP server: protected mode while no user exists, then every
 * request (HTTP, push stream, data socket) authenticated; tokens stored only as salted hashes; rotation and
 * deletion take effect at once; only admins manage users.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import WebSocket from 'ws';
import { describe, expect, it, vi } from 'vitest';
import type { Broker } from '../../src/broker/broker.js';
import { HttpApi } from '../../src/client/http-api.js';
import { KafkaListener } from '../../src/kafka/listener.js';
import { silentLogger } from '../../src/common/logger.js';
import net from 'node:net';
import { encodeFrame, FRAME_KIND } from '../../src/protocol/data-frames.js';
import { LOOPBACK_ADMIN } from '../../src/security/principal.js';
import { newToken, tokenMatches } from '../../src/security/tokens.js';
import { serveSecured } from '../helpers/secured-broker.js';
import { kafkaSession, METADATA, openSocket } from '../helpers/sessions.js';

let broker: Broker;
let app: FastifyInstance;

async function serve(dataDir?: string, insecure = false): Promise<{ url: string; dataDir: string }> {
  const served = await serveSecured({ ...(dataDir !== undefined ? { dataDir } : {}), insecure });
  ({ broker, app } = served);
  return served;
}

/** Serves a broker and its Kafka listener (SASL against its users, its ACLs) for `run`, then closes the listener. */
async function withKafka(run: (url: string, kafkaPort: number) => Promise<void>): Promise<void> {
  const { url } = await serve();
  const kafka = await KafkaListener.start(broker, { port: 0, logger: silentLogger, users: broker.users, acls: broker.acls });
  try {
    await run(url, kafka.port);
  } finally {
    await kafka.close();
  }
}

/** The status and error code of an upgrade to `path` with `headers`, or 101 once it opened. */
function upgrade(url: string, pathname: string, headers: Record<string, string> = {}): Promise<{ status: number; code?: string }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${url.replace(/^http/, 'ws')}${pathname}`, { headers });
    ws.on('open', () => { ws.close(); resolve({ status: 101 }); });
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => { body += d.toString(); });
      res.on('end', () => resolve({ status: res.statusCode!, code: (JSON.parse(body) as { code: string }).code }));
    });
  });
}

/** The secret part of a token (base64url: it may itself hold '_'). */
const secretOf = (token: string) => token.replace(/^onelog_[0-9a-f]{16}_/, '');
const codeOf = (p: Promise<unknown>) => p.then(() => 'ok', (err: { code?: string }) => err.code);

describe('users and tokens', () => {
  it('tokens are random, checked in constant time against a salted hash, and never match another', () => {
    const a = newToken();
    const b = newToken();
    expect(a.token).toMatch(/^onelog_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
    expect(a.stored.tokenHash).not.toContain(secretOf(a.token));
    expect(tokenMatches(a.token, a.stored)).toBe(true);
    expect(tokenMatches(b.token, a.stored)).toBe(false);
    expect(tokenMatches(`${a.token.slice(0, -1)}${a.token.endsWith('A') ? 'B' : 'A'}`, a.stored)).toBe(false);
    expect(tokenMatches('garbage', a.stored)).toBe(false);
  });

  it('protected mode answers loopback only; the first user is an admin; then every request needs a valid token', async () => {
    const { url, dataDir } = await serve();
    expect((await app.inject({ method: 'GET', url: '/topics', remoteAddress: '10.1.2.3' })).json()).toMatchObject({ code: 'FORBIDDEN', reason: 'protected-mode' });
    expect((await app.inject({ method: 'GET', url: '/topics' })).statusCode).toBe(200); // loopback

    const anonymous = new HttpApi(url, { token: '' });
    const admin = await anonymous.createUser('ops');
    expect(admin).toMatchObject({ user: 'ops', admin: true });
    expect(await codeOf(anonymous.listTopics())).toBe('UNAUTHENTICATED');
    expect(await codeOf(new HttpApi(url, { token: newToken().token }).listTopics())).toBe('UNAUTHENTICATED');
    const ops = new HttpApi(url, { token: admin.token });
    expect(await ops.listTopics()).toEqual([]);

    // The catalog holds no token.
    expect(fs.readFileSync(path.join(dataDir, 'catalog.sqlite')).includes(Buffer.from(secretOf(admin.token)))).toBe(false);

    const reader = await ops.createUser('reader');
    expect(reader.admin).toBe(false);
    const readerApi = new HttpApi(url, { token: reader.token });
    expect(await readerApi.listTopics()).toEqual([]);
    expect(await codeOf(readerApi.createUser('x'))).toBe('FORBIDDEN');
    expect(await codeOf(readerApi.listUsers())).toBe('FORBIDDEN');
    expect(await codeOf(ops.createUser('reader'))).toBe('ALREADY_EXISTS');
    expect(await codeOf(ops.createUser('bad name'))).toBe('INVALID_REQUEST');
    expect((await ops.listUsers()).map((u) => [u.user, u.admin])).toEqual([['ops', true], ['reader', false]]);

    // A user rotates its own token: the old one stops at once.
    const rotated = await readerApi.rotateUser('reader');
    expect(await codeOf(readerApi.listTopics())).toBe('UNAUTHENTICATED');
    expect(await new HttpApi(url, { token: rotated.token }).listTopics()).toEqual([]);
    await ops.deleteUser('reader');
    expect(await codeOf(new HttpApi(url, { token: rotated.token }).listTopics())).toBe('UNAUTHENTICATED');
    expect(await codeOf(ops.deleteUser('reader'))).toBe('NOT_FOUND');
    expect(await codeOf(ops.deleteUser('ops'))).toBe('FORBIDDEN'); // the last admin stays
    const spaced = await fetch(`${url}/topics`, { headers: { authorization: `Bearer   ${admin.token}  ` } });
    expect(spaced.status).toBe(200);

    // /health needs no token; without one it names each dependency's status only, not where it is or its errors.
    const health = async (headers: Record<string, string> = {}) => (await fetch(`${url}/health`, { headers })).json() as Promise<{
      status: string; dependencies: Record<string, Record<string, unknown>>;
    }>;
    const bare = await health();
    expect(bare.status).toBe('ok');
    expect(Object.values(bare.dependencies).map((d) => Object.keys(d).sort())).toEqual([['since', 'status'], ['since', 'status'], ['since', 'status']]);
    expect(Object.values((await health({ authorization: `Bearer ${admin.token}` })).dependencies).map((d) => d.engine)).toEqual(['sqlite', 'lmdb', 'segment files']);

    // Push streams and the data socket: the same check at the upgrade, with the same error body.
    for (const pathname of ['/data', '/groups/g/stream']) {
      expect(await upgrade(url, pathname)).toEqual({ status: 401, code: 'UNAUTHENTICATED' });
      for (const stale of [reader.token, rotated.token, newToken().token]) {
        expect(await upgrade(url, pathname, { authorization: `Bearer ${stale}` })).toEqual({ status: 401, code: 'UNAUTHENTICATED' });
      }
      expect((await upgrade(url, pathname, { authorization: `Bearer ${admin.token}` })).status).toBe(101);
    }
    expect(await ops.listGroups()).toEqual([]); // nothing the refused upgrades asked for happened
  });

  it('the Kafka listener answers loopback clients while no user exists, and only SASL\'s first steps once one does', async () => {
    const { url } = await serve();
    const kafka = await KafkaListener.start(broker, { port: 0, logger: silentLogger, users: broker.users });
    const send = (hex: string) => new Promise<'answered' | 'closed'>((resolve) => {
      const socket = net.connect(kafka.port, '127.0.0.1');
      socket.on('connect', () => socket.write(Buffer.from(hex, 'hex')));
      socket.on('data', () => { socket.destroy(); resolve('answered'); });
      socket.on('close', () => resolve('closed'));
    });
    const apiVersions = '0000000a00120000000000010000';
    const metadata = '0000000f0003000100000001000174ffffffff';
    try {
      expect(await send(metadata)).toBe('answered');
      await new HttpApi(url, { token: '' }).createUser('ops');
      expect(await send(apiVersions)).toBe('answered');
      expect(await send(metadata)).toBe('closed');
    } finally {
      await kafka.close();
    }
  });

  it('deleting a user closes its open Kafka connections, data sockets and push streams; creating the first one closes protected mode\'s', async () => {
    await withKafka(async (url, kafkaPort) => {
      // Protected mode: a loopback data socket, anonymous, an admin until the first user exists.
      const anonymous = await openSocket(url, '/data');
      const ops = new HttpApi(url, { token: (await new HttpApi(url, { token: '' }).createUser('ops')).token });
      expect(await anonymous.next()).toEqual({ close: 1008, reason: 'UNAUTHENTICATED' });

      await ops.createTopic({ topic: 'edits', partitions: 1 });
      await ops.produce({ topic: 'edits', records: [{ key: null, value: Buffer.from('a') }] });
      await ops.subscribe({ groupId: 'g', topic: 'edits', startPolicy: 'earliest' });
      const alice = await ops.createUser('alice', true); // an admin: deleted, it keeps nothing
      const connection = await kafkaSession(kafkaPort, 'alice', alice.token);
      expect(await connection.send(METADATA)).toBeInstanceOf(Buffer);
      const data = await openSocket(url, '/data', alice.token);
      const fetchFrame = encodeFrame(FRAME_KIND.FETCH, 7, { topic: 'edits', partitions: [{ partition: 0, offset: 0 }] });
      data.ws.send(fetchFrame);
      expect((await data.next() as { message: Buffer }).message.readUInt8(0)).toBe(FRAME_KIND.FETCHED);
      const push = await openSocket(url, '/groups/g/stream', alice.token);
      push.ws.send(JSON.stringify({ type: 'subscribe', topics: ['edits'] }));
      await vi.waitFor(async () => expect((await ops.describeGroup('g')).members).toHaveLength(1), { timeout: 5000, interval: 20 });
      expect(broker.users.sessions.size).toBe(3);

      await ops.deleteUser('alice');
      // Each is closed at once, before it asks anything more; what it sends after is not answered.
      await connection.closed;
      expect(await connection.send(METADATA)).toBe('closed');
      data.ws.send(fetchFrame);
      expect(await data.next()).toEqual({ close: 1008, reason: 'UNAUTHENTICATED' });
      push.ws.send(JSON.stringify({ type: 'credit', records: 10, bytes: 1_000_000 }));
      expect(JSON.parse((await push.next() as { message: Buffer }).message.toString())).toMatchObject({ type: 'error', code: 'UNAUTHENTICATED', reason: 'user-deleted' });
      expect(await push.next()).toEqual({ close: 1008, reason: 'UNAUTHENTICATED' });
      await vi.waitFor(async () => expect((await ops.describeGroup('g')).members).toEqual([]), { timeout: 5000, interval: 20 }); // the member left
      expect(broker.users.sessions.size).toBe(0);
      expect(await upgrade(url, '/data', { authorization: `Bearer ${alice.token}` })).toEqual({ status: 401, code: 'UNAUTHENTICATED' });
    });
  });

  it('rotating a token closes the connections and streams opened with the old one; the new one connects', async () => {
    await withKafka(async (url, kafkaPort) => {
      const opsToken = (await new HttpApi(url, { token: '' }).createUser('ops')).token;
      const ops = new HttpApi(url, { token: opsToken });
      const opsData = await openSocket(url, '/data', opsToken);
      const old = await ops.createUser('alice');
      const connection = await kafkaSession(kafkaPort, 'alice', old.token);
      const data = await openSocket(url, '/data', old.token);
      const push = await openSocket(url, '/groups/g/stream', old.token);
      const scram = broker.users.scramCredentialOf('alice')!; // a SCRAM exchange begun with the old token

      const rotated = await new HttpApi(url, { token: old.token }).rotateUser('alice');
      await connection.closed;
      expect(await connection.send(METADATA)).toBe('closed');
      expect(await data.next()).toEqual({ close: 1008, reason: 'UNAUTHENTICATED' });
      expect(JSON.parse((await push.next() as { message: Buffer }).message.toString())).toMatchObject({ code: 'UNAUTHENTICATED', reason: 'token-rotated' });
      expect(() => broker.users.principalOf('alice', scram)).toThrow(/rotated during the SCRAM exchange/);

      const again = await kafkaSession(kafkaPort, 'alice', rotated.token);
      expect(await again.send(METADATA)).toBeInstanceOf(Buffer);
      const fresh = await openSocket(url, '/data', rotated.token);
      fresh.ws.send(encodeFrame(FRAME_KIND.FETCH, 1, { topic: 'nope', partitions: [{ partition: 0, offset: 0 }] }));
      expect((await fresh.next() as { message: Buffer }).message.readUInt8(0)).toBe(FRAME_KIND.ERROR); // answered (FORBIDDEN), still open
      expect(broker.users.sessions.size).toBe(3);
      // An admin rotating it does the same; another user's sessions stay open.
      await ops.rotateUser('alice');
      await again.closed;
      expect(await fresh.next()).toEqual({ close: 1008, reason: 'UNAUTHENTICATED' });
      await broker.users.create('bob', LOOPBACK_ADMIN);
      expect(broker.users.sessions.size).toBe(1);
      opsData.ws.send(encodeFrame(FRAME_KIND.FETCH, 2, { topic: 'nope', partitions: [{ partition: 0, offset: 0 }] }));
      expect((await opsData.next() as { message: Buffer }).message.readUInt8(0)).toBe(FRAME_KIND.ERROR); // UNKNOWN_TOPIC: answered
    });
  });

  it('audits executed resets, deletions and user changes with the authenticated principal, not the claimed one', async () => {
    const { url } = await serve();
    const admin = await new HttpApi(url, { token: '' }).createUser('ops');
    const ops = new HttpApi(url, { token: admin.token });
    const reader = await ops.createUser('reader');
    await ops.createTopic({ topic: 'edits', partitions: 1 });
    await ops.produce({ topic: 'edits', records: Array.from({ length: 10 }, (_, i) => ({ key: null, value: Buffer.from(`e${i}`) })) });
    await ops.subscribe({ groupId: 'g', topic: 'edits', startPolicy: 'earliest' });
    await ops.resetOffsets({ groupId: 'g', topic: 'edits', spec: { to: 'latest' }, requestedBy: 'mallory' }); // a dry run: not audited
    await ops.resetOffsets({ groupId: 'g', topic: 'edits', spec: { to: 'latest' }, execute: true, requestedBy: 'mallory' });
    expect((await ops.describeGroup('g')).resets[0]).toMatchObject({ requestedBy: 'ops' });
    await ops.deleteRecords({ topic: 'edits', partition: 0, beforeOffset: 4 });
    // A query cannot hide an executed reset from the audit (only the body says whether it executes).
    const hidden = await fetch(`${url}/groups/g/offsets/reset?execute=no`, {
      method: 'POST', headers: { authorization: `Bearer ${admin.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ topic: 'edits', spec: { to: 'earliest' }, execute: true }),
    });
    expect(hidden.status).toBe(200);
    // The path names the target, whatever the query says.
    expect((await fetch(`${url}/topics/edits?topic=payments`, { method: 'DELETE', headers: { authorization: `Bearer ${admin.token}` } })).status).toBe(200);
    await ops.deleteUser('reader');

    const entries = await ops.listAudit();
    expect(entries.map((e) => [e.principal, e.action, e.target])).toEqual([
      ['ops', 'user-delete', 'user:reader'], ['ops', 'topic-delete', 'topic:edits'], ['ops', 'offsets-reset', 'group:g'], ['ops', 'delete-records', 'topic:edits'],
      ['ops', 'offsets-reset', 'group:g'], ['ops', 'user-create', 'user:reader'], ['anonymous', 'user-create', 'user:ops'],
    ]);
    expect(entries[4]!.details).toMatchObject({ groupId: 'g', topic: 'edits', execute: true });
    expect(entries[4]!.details).not.toHaveProperty('requestedBy');
    expect(entries[6]!.details).toMatchObject({ user: 'ops', admin: true }); // what was done: the first user is an admin
    expect(await codeOf(new HttpApi(url, { token: reader.token }).listAudit())).toBe('UNAUTHENTICATED'); // deleted
    const again = await ops.createUser('reader2');
    expect(await codeOf(new HttpApi(url, { token: again.token }).listAudit())).toBe('FORBIDDEN');
    expect((await ops.listAudit(2)).map((e) => e.action)).toEqual(['user-create', 'user-delete']);

    // A client that hangs up as soon as it sent the request does not skip the audit.
    await ops.createTopic({ topic: 'short-lived', partitions: 1 });
    const { port } = new URL(url);
    const socket = net.connect(Number(port), '127.0.0.1', () => {
      socket.end(`DELETE /topics/short-lived HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${admin.token}\r\n\r\n`);
      socket.destroy();
    });
    await vi.waitFor(async () => expect((await ops.listAudit(1))[0]).toMatchObject({ action: 'topic-delete', target: 'topic:short-lived' }), { timeout: 5000, interval: 50 });
  });

  it('keeps users across a restart; --insecure answers everyone while none exists', async () => {
    const first = await serveSecured({ insecure: true });
    expect((await first.app.inject({ method: 'GET', url: '/topics', remoteAddress: '10.1.2.3' })).statusCode).toBe(200);
    const created = await new HttpApi(first.url, { token: '' }).createUser('ops');
    expect((await first.app.inject({ method: 'GET', url: '/topics', remoteAddress: '10.1.2.3' })).json()).toMatchObject({ code: 'UNAUTHENTICATED' });
    await first.stop();
    const again = await serveSecured({ dataDir: first.dataDir });
    expect(await codeOf(new HttpApi(again.url, { token: '' }).listTopics())).toBe('UNAUTHENTICATED');
    expect(await new HttpApi(again.url, { token: created.token }).listTopics()).toEqual([]);
  });
});

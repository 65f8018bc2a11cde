/**
 * SASL and ACLs on the Kafka listener (docs/security.md), against a real broker with users: kafkajs with PLAIN and
 * SCRAM-SHA-256 and kcat (librdkafka) with both, the token as the password; a wrong password or no SASL refused;
 * what an authenticated user may do decided by its ACLs, answered with TOPIC_ / GROUP_AUTHORIZATION_FAILED;
 * deletions through Kafka audited with the principal.
 */
import { spawn } from 'node:child_process';
import net from 'node:net';
import { Kafka, logLevel } from 'kafkajs';
import type { SASLOptions } from 'kafkajs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { KafkaListener } from '../../src/kafka/listener.js';
import { silentLogger } from '../../src/common/logger.js';
import type { AclBinding } from '../../src/protocol/security.js';
import { LOOPBACK_ADMIN } from '../../src/security/principal.js';
import { ScramExchange, parseScramCredential, scramCredential } from '../../src/security/scram.js';
import { incrementalAlterConfigsRequest, incrementalAlterConfigsResponse } from '../../src/kafka/messages/admin.js';
import { shareFetchRequest, shareFetchResponse, shareGroupHeartbeatRequest, shareGroupHeartbeatResponse } from '../../src/kafka/messages/share-groups.js';
import type { Struct } from '../../src/kafka/codec/interpreter.js';
import type { MessageDefinition } from '../../src/kafka/codec/schema.js';
import { callAs } from '../helpers/kafka-wire.js';
import { tmpDir } from '../helpers/tmp.js';
import { KCAT, hasTool } from '../helpers/tools.js';

let broker: Broker;
let listener: KafkaListener;
let tokens: { ops: string; alice: string };

beforeEach(async () => {
  broker = await Broker.open({ dataDir: tmpDir(), retentionCheckIntervalMs: 0, monitoring: { alertCheckIntervalMs: 0 } });
  listener = await KafkaListener.start(broker, { port: 0, logger: silentLogger, users: broker.users, acls: broker.acls, audit: broker.audit });
  tokens = {
    ops: (await broker.users.create('ops', LOOPBACK_ADMIN)).token,
    alice: (await broker.users.create('alice', LOOPBACK_ADMIN)).token,
  };
  await broker.createTopic({ topic: 'edits', partitions: 1 });
  await broker.createTopic({ topic: 'payments', partitions: 1 });
});
afterEach(async () => {
  await listener.close();
  await broker.close();
});

const kafka = (sasl: SASLOptions | undefined) => new Kafka({
  brokers: [`127.0.0.1:${listener.port}`], clientId: 't', logLevel: logLevel.NOTHING, retry: { retries: 2, initialRetryTime: 50 }, ...(sasl ? { sasl } : {}),
});
const allow = (acl: Omit<AclBinding, 'patternType' | 'permission'>) => broker.acls.add({ patternType: 'literal', permission: 'allow', ...acl }, LOOPBACK_ADMIN);

/** Runs kcat; resolves with its exit code and output. */
function kcat(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const proc = spawn('kcat', ['-b', `127.0.0.1:${listener.port}`, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => proc.kill('SIGKILL'), 30_000);
    proc.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
}

describe('SASL on the Kafka listener', () => {
  it('PLAIN: the token is the password; ACLs decide per topic; a wrong password and no SASL are refused', async () => {
    const alice = kafka({ mechanism: 'plain', username: 'alice', password: tokens.alice });
    const admin = alice.admin();
    await admin.connect();
    try {
      expect(await admin.listTopics()).toEqual([]); // alice may describe nothing yet
      const producer = alice.producer();
      await producer.connect();
      await expect(producer.send({ topic: 'edits', messages: [{ value: 'refused' }] })).rejects.toThrow(/authoriz/i);
      await allow({ principal: 'alice', resourceType: 'topic', resourceName: 'edits', operation: 'write' });
      await producer.send({ topic: 'edits', messages: [{ value: 'one' }] });
      await producer.disconnect();
      expect(await admin.listTopics()).toEqual(['edits']); // write implies describe
      expect((await broker.describeTopic('edits')).partitions[0]!.highWatermark).toBe(1);
      await expect(admin.deleteTopics({ topics: ['payments'] })).rejects.toThrow(/authoriz/i);
    } finally {
      await admin.disconnect();
    }

    await expect(kafka({ mechanism: 'plain', username: 'alice', password: tokens.ops }).admin().connect()).rejects.toThrow(/SASL|authentication/i);
    await expect(kafka({ mechanism: 'plain', username: 'alice', password: 'wrong' }).admin().connect()).rejects.toThrow(/SASL|authentication/i);
    // Without SASL, a Metadata request (v1, all topics) closes the connection unanswered.
    const closed = await new Promise<boolean>((resolve) => {
      const socket = net.connect(listener.port, '127.0.0.1', () => socket.write(Buffer.from('0000000f0003000100000001000174ffffffff', 'hex')));
      socket.on('data', () => resolve(false));
      socket.on('close', () => resolve(true));
    });
    expect(closed).toBe(true);
  });

  it('SCRAM-SHA-256: a consumer group reads with read on the topic and the group; the group ACL is checked', async () => {
    await broker.produce({ topic: 'edits', records: ['a', 'b', 'c'].map((v) => ({ key: null, value: Buffer.from(v), headers: [] })) });
    await allow({ principal: 'alice', resourceType: 'topic', resourceName: 'edits', operation: 'read' });
    const alice = kafka({ mechanism: 'scram-sha-256', username: 'alice', password: tokens.alice });
    const admin = alice.admin();
    await admin.connect();
    await expect(admin.fetchOffsets({ groupId: 'loader', topics: ['edits'] })).rejects.toThrow(/authoriz/i);
    await admin.disconnect();

    await allow({ principal: 'alice', resourceType: 'group', resourceName: 'loader', operation: 'read' });
    const consumer = alice.consumer({ groupId: 'loader' });
    await consumer.connect();
    await consumer.subscribe({ topic: 'edits', fromBeginning: true });
    const seen: string[] = [];
    await new Promise<void>((resolve) => {
      void consumer.run({
        eachMessage: async ({ message }) => {
          seen.push(message.value!.toString());
          if (seen.length === 3) resolve();
        },
      });
    });
    await consumer.disconnect();
    expect(seen).toEqual(['a', 'b', 'c']);
  });

  it.runIf(hasTool(KCAT, 'the SASL test of kcat'))('kcat authenticates with PLAIN and SCRAM-SHA-256, and is refused with a wrong token', async () => {
    const sasl = (mechanism: string, user: string, password: string) => [
      '-X', 'security.protocol=sasl_plaintext', '-X', `sasl.mechanisms=${mechanism}`, '-X', `sasl.username=${user}`, '-X', `sasl.password=${password}`,
    ];
    for (const mechanism of ['PLAIN', 'SCRAM-SHA-256']) {
      const listed = await kcat([...sasl(mechanism, 'ops', tokens.ops), '-L', '-J']);
      expect(listed.code, listed.err).toBe(0);
      expect((JSON.parse(listed.out) as { topics: Array<{ topic: string }> }).topics.map((t) => t.topic).sort()).toEqual(['edits', 'payments']);
      const wrong = await kcat([...sasl(mechanism, 'ops', `${tokens.ops.slice(0, -2)}xx`), '-L', '-m', '5']);
      expect(wrong.code).not.toBe(0);
      expect(wrong.err).toMatch(/SASL|[Aa]uthentication/);
    }
  });

  it('records deletions through Kafka in the audit with the principal', async () => {
    await allow({ principal: 'alice', resourceType: 'topic', resourceName: 'payments', operation: 'delete' });
    const admin = kafka({ mechanism: 'plain', username: 'alice', password: tokens.alice }).admin();
    await admin.connect();
    try {
      await admin.deleteTopics({ topics: ['payments'] });
    } finally {
      await admin.disconnect();
    }
    const audit = await broker.audit.list(LOOPBACK_ADMIN);
    expect(audit.find((e) => e.action === 'topic-delete')).toMatchObject({ principal: 'alice', target: 'topic:payments', outcome: 'done' });
  });

  it('records refused writes and deletions through Kafka in the audit, not refused reads', async () => {
    await allow({ principal: 'alice', resourceType: 'topic', resourceName: 'edits', operation: 'describe' }); // sees it, may not write it
    const client = kafka({ mechanism: 'plain', username: 'alice', password: tokens.alice });
    const admin = client.admin();
    const producer = client.producer();
    await Promise.all([admin.connect(), producer.connect()]);
    try {
      await expect(admin.deleteTopics({ topics: ['payments'] })).rejects.toThrow();
      await expect(producer.send({ topic: 'edits', messages: [{ value: 'x' }] })).rejects.toThrow();
      await expect(admin.fetchTopicOffsets('payments')).rejects.toThrow(); // a read: not recorded
    } finally {
      await Promise.all([admin.disconnect(), producer.disconnect()]);
    }
    const refused = (await broker.audit.list(LOOPBACK_ADMIN)).filter((e) => e.outcome === 'refused');
    expect(refused.find((e) => e.action === 'topic-delete')).toMatchObject({
      principal: 'alice', target: 'topic:payments', details: { request: 'KAFKA deleteTopic', operation: 'delete', code: 'FORBIDDEN' },
    });
    expect(refused.find((e) => e.action === 'KAFKA produceBatches')).toMatchObject({ principal: 'alice', target: 'topic:edits', details: { operation: 'write' } });
    expect(refused.every((e) => e.action === 'topic-delete' || e.action === 'KAFKA produceBatches')).toBe(true);
  });
});

describe('SCRAM-SHA-256', () => {
  it('checks the proof against what is stored, never the password, and refuses a replayed or wrong one', async () => {
    const { createHash, createHmac, pbkdf2Sync } = await import('node:crypto');
    const stored = scramCredential('s3cret');
    expect(stored).not.toContain('s3cret');
    const credential = parseScramCredential(stored);
    const exchange = new ScramExchange((user) => (user === 'alice' ? credential : undefined));
    // The client side of RFC 5802, written out.
    const clientFirstBare = 'n=alice,r=clientnonce';
    const serverFirst = exchange.first(`n,,${clientFirstBare}`);
    const attrs = new Map(serverFirst.split(',').map((p) => [p[0], p.slice(2)]));
    const salted = pbkdf2Sync('s3cret', Buffer.from(attrs.get('s')!, 'base64'), Number(attrs.get('i')), 32, 'sha256');
    const clientKey = createHmac('sha256', salted).update('Client Key').digest();
    const withoutProof = `c=biws,r=${attrs.get('r')}`;
    const authMessage = `${clientFirstBare},${serverFirst},${withoutProof}`;
    const signature = createHmac('sha256', createHash('sha256').update(clientKey).digest()).update(authMessage).digest();
    const proof = Buffer.from(clientKey.map((b, i) => b ^ signature[i]!)).toString('base64');
    const { user, serverFinal } = exchange.final(`${withoutProof},p=${proof}`);
    expect(user).toBe('alice');
    expect(serverFinal).toBe(`v=${createHmac('sha256', createHmac('sha256', salted).update('Server Key').digest()).update(authMessage).digest('base64')}`);
    expect(() => exchange.final(`${withoutProof},p=${proof}`)).toThrow(/before the client-first/); // no replay
    exchange.first(`n,,${clientFirstBare}`);
    expect(() => exchange.final(`${withoutProof},p=${proof}`)).toThrow(/nonce/); // a new server nonce each time
    // An unknown user is told what a wrong password is told, at the same step, with the same salt each time.
    const unknown = new ScramExchange(() => undefined);
    const first = unknown.first('n,,n=bob,r=x');
    expect(new ScramExchange(() => undefined).first('n,,n=bob,r=x').split(',')[1]).toBe(first.split(',')[1]);
    const nonce = first.split(',')[0]!.slice(2);
    expect(() => unknown.final(`c=biws,r=${nonce},p=${Buffer.alloc(32).toString('base64')}`)).toThrow(/wrong user name or password/);
  });
});

describe('share groups on the Kafka listener, with ACLs', () => {
  it('needs read on the group and the topic to join and fetch; alter on the group to set its configs', async () => {
    await broker.produce({ topic: 'edits', records: [{ key: Buffer.from('k'), value: Buffer.from('v'), partition: 0 }] });
    const heartbeat = (user: 'ops' | 'alice') => callAs(user, tokens[user], listener.port, 76, 1, shareGroupHeartbeatRequest, shareGroupHeartbeatResponse, {
      groupId: 'workers', memberId: `${user}-1`, memberEpoch: 0, rackId: null, subscribedTopicNames: ['edits'],
    }) as Promise<unknown> as Promise<{ errorCode: number; errorMessage: string | null }>;
    const configure = (user: 'ops' | 'alice') => callAs(user, tokens[user], listener.port, 44, 1, incrementalAlterConfigsRequest, incrementalAlterConfigsResponse, {
      resources: [{ resourceType: 32, resourceName: 'workers', configs: [{ name: 'share.auto.offset.reset', configOperation: 0, value: 'earliest' }] }], validateOnly: false,
    }) as Promise<unknown> as Promise<{ responses: Array<{ errorCode: number }> }>;
    // alice has nothing yet: her heartbeat is refused on the group (30), and nothing is created.
    expect((await heartbeat('alice')).errorCode).toBe(30);
    await allow({ principal: 'alice', resourceType: 'group', resourceName: 'workers', operation: 'read' });
    expect((await heartbeat('alice')).errorCode).toBe(29); // the topic next: TOPIC_AUTHORIZATION_FAILED
    await allow({ principal: 'alice', resourceType: 'topic', resourceName: 'edits', operation: 'read' });
    expect((await heartbeat('alice')).errorCode).toBe(0);
    expect((await broker.describeGroup('workers')).subscriptions.map((s) => [s.topic, s.type])).toEqual([['edits', 'share']]);
    // Setting the group's configs needs alter on it.
    expect((await configure('alice')).responses[0]!.errorCode).toBe(30);
    await allow({ principal: 'alice', resourceType: 'group', resourceName: 'workers', operation: 'alter' });
    expect((await configure('alice')).responses[0]!.errorCode).toBe(0);
    expect((await broker.describeGroup('workers')).subscriptions[0]!.startPolicy).toBe('earliest');
    // mallory has no right on the group: she can neither make alice leave nor touch her share session.
    const mallory = (await broker.users.create('mallory', LOOPBACK_ADMIN)).token;
    const asMallory = (key: number, version: number, req: MessageDefinition, res: MessageDefinition, value: Struct) => callAs('mallory', mallory, listener.port, key, version, req, res, value) as Promise<{ errorCode: number }>;
    expect((await asMallory(76, 1, shareGroupHeartbeatRequest, shareGroupHeartbeatResponse, { groupId: 'workers', memberId: 'alice-1', memberEpoch: -1, rackId: null, subscribedTopicNames: null })).errorCode).toBe(30);
    const fetchAsAlice = (epoch: number) => callAs('alice', tokens.alice, listener.port, 78, 1, shareFetchRequest, shareFetchResponse, {
      groupId: 'workers', memberId: 'alice-1', shareSessionEpoch: epoch, maxWaitMs: 0, minBytes: 1, maxBytes: 1 << 20, maxRecords: 10, batchSize: 10, topics: [], forgottenTopicsData: [],
    }) as Promise<unknown> as Promise<{ errorCode: number }>;
    expect((await fetchAsAlice(0)).errorCode).toBe(0);
    expect((await asMallory(78, 1, shareFetchRequest, shareFetchResponse, {
      groupId: 'workers', memberId: 'alice-1', shareSessionEpoch: -1, maxWaitMs: 0, minBytes: 1, maxBytes: 1, maxRecords: 1, batchSize: 1, topics: [], forgottenTopicsData: [],
    })).errorCode).toBe(30);
    expect((await fetchAsAlice(1)).errorCode).toBe(0); // her session is as she left it
    expect((await broker.describeGroup('workers')).subscriptions).toHaveLength(1);
  });
});

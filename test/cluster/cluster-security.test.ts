/**
 * Users and ACLs across the brokers of one cluster (real PostgreSQL, Redis, s3rver): a change made through one broker
 * reaches every other at once, by the catalog's NOTIFY, so a deleted user, a rotated token or a removed ACL is refused
 * everywhere and the sessions opened with them on another broker are closed; and a change whose notification was
 * missed is read when the listening connection comes back.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { HttpApi } from '../../src/client/http-api.js';
import { KafkaListener } from '../../src/kafka/listener.js';
import { silentLogger } from '../../src/common/logger.js';
import type { AclBinding } from '../../src/protocol/security.js';
import { encodeFrame, FRAME_KIND } from '../../src/protocol/data-frames.js';
import { testCluster } from '../helpers/cluster.js';
import { startS3 } from '../helpers/s3.js';
import type { S3Server } from '../helpers/s3.js';
import { serveSecured } from '../helpers/secured-broker.js';
import { uniqueName } from '../helpers/services.js';
import { kafkaSession, METADATA, openSocket } from '../helpers/sessions.js';

let s3: S3Server;
beforeAll(async () => {
  s3 = await startS3();
});
afterAll(async () => {
  await s3?.close();
});

const codeOf = (p: Promise<unknown>) => p.then(() => 'ok', (err: { code?: string }) => err.code);
const readEdits = (principal: string): AclBinding =>
  ({ principal, resourceType: 'topic', resourceName: 'edits', patternType: 'literal', operation: 'read', permission: 'allow' });
/** Until `request` answers `code` (another broker's change arrives by notification, within milliseconds). */
const eventually = (request: () => Promise<unknown>, code: string) =>
  vi.waitFor(async () => expect(await codeOf(request())).toBe(code), { timeout: 5000, interval: 20 });

describe('users and ACLs in a cluster', () => {
  it('a user deleted, a token rotated or an ACL removed through one broker is refused by the other, its sessions there closed', async () => {
    const c = await testCluster(s3, 'security');
    // Broker 2's connections carry a name of their own, so the test can end its catalog's LISTEN connection.
    const bName = uniqueName('b');
    const aOptions = c.options(1);
    const bOptions = c.options(2, { catalog: `${c.pgUrl}&application_name=${bName}` });
    const a = await serveSecured({ dataDir: aOptions.dataDir, broker: aOptions });
    const b = await serveSecured({ dataDir: bOptions.dataDir, broker: bOptions });
    const kafka = await KafkaListener.start(b.broker, { port: 0, logger: silentLogger, users: b.broker.users, acls: b.broker.acls });
    const db = new pg.Client({ connectionString: c.pgUrl });
    await db.connect();
    try {
      const onA = (token: string) => new HttpApi(a.url, { token });
      const onB = (token: string) => new HttpApi(b.url, { token });
      // The first user, created through a, ends protected mode on b too.
      const ops = onA((await onA('').createUser('ops')).token);
      await eventually(() => onB('').listTopics(), 'UNAUTHENTICATED');
      await ops.createTopic({ topic: 'edits', partitions: 1 });
      await ops.produce({ topic: 'edits', records: [{ key: null, value: Buffer.from('a') }] });

      // Deleted through a: b refuses the token and closes the Kafka connection and the data socket opened with it.
      const alice = await ops.createUser('alice');
      await ops.addAcl(readEdits('alice'));
      await eventually(() => onB(alice.token).describeTopic('edits'), 'ok');
      const connection = await kafkaSession(kafka.port, 'alice', alice.token);
      expect(await connection.send(METADATA)).toBeInstanceOf(Buffer);
      const data = await openSocket(b.url, '/data', alice.token);
      const fetchFrame = encodeFrame(FRAME_KIND.FETCH, 7, { topic: 'edits', partitions: [{ partition: 0, offset: 0 }] });
      data.ws.send(fetchFrame);
      expect((await data.next() as { message: Buffer }).message.readUInt8(0)).toBe(FRAME_KIND.FETCHED);
      await ops.deleteUser('alice');
      await connection.closed;
      expect(await data.next()).toEqual({ close: 1008, reason: 'UNAUTHENTICATED' });
      expect(await codeOf(onB(alice.token).describeTopic('edits'))).toBe('UNAUTHENTICATED');

      // Rotated through a: b closes the old token's connection, refuses the old token, accepts the new one.
      const bob = await ops.createUser('bob');
      await eventually(() => onB(bob.token).listTopics(), 'ok');
      const bobs = await kafkaSession(kafka.port, 'bob', bob.token);
      const rotated = await ops.rotateUser('bob');
      await bobs.closed;
      expect(await codeOf(onB(bob.token).listTopics())).toBe('UNAUTHENTICATED');
      expect(await onB(rotated.token).listTopics()).toEqual([]);
      const again = await kafkaSession(kafka.port, 'bob', rotated.token);
      expect(await again.send(METADATA)).toBeInstanceOf(Buffer);

      // An ACL removed through a: b refuses what it allowed.
      const carol = await ops.createUser('carol');
      await ops.addAcl(readEdits('carol'));
      await eventually(() => onB(carol.token).describeTopic('edits'), 'ok');
      await ops.removeAcl(readEdits('carol'));
      await eventually(() => onB(carol.token).describeTopic('edits'), 'FORBIDDEN');

      // A change b never heard of (no notification: as one sent while its LISTEN connection was down) is read when
      // that connection comes back.
      const dave = await ops.createUser('dave');
      await eventually(() => onB(dave.token).listTopics(), 'ok');
      const daves = await kafkaSession(kafka.port, 'dave', dave.token);
      await db.query(`DELETE FROM users WHERE name = 'dave'`);
      expect(await onB(dave.token).listTopics()).toEqual([]); // b did not hear of it
      const ended = await db.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'LISTEN onelog_catalog_%'`, [bName]);
      expect(ended.rowCount).toBe(1);
      await daves.closed;
      expect(await codeOf(onB(dave.token).listTopics())).toBe('UNAUTHENTICATED');
      expect(await again.send(METADATA)).toBeInstanceOf(Buffer); // bob's session stays
    } finally {
      await db.end();
      await kafka.close();
      await b.stop();
      await a.stop();
      await c.dispose();
    }
  });
});

/**
 * Refused operations in the audit (docs/security.md), against a real broker's HTTP server with users: a refusal of
 * anything that changes something is recorded with the principal, the operation, the resource and why, over HTTP, the
 * data socket and the push stream alike (Kafka: test/kafka/sasl.test.ts); a refused read is not; and a principal's
 * refusals are recorded at a bounded rate, those left out counted in the next one.
 */
import { describe, expect, it } from 'vitest';
import { HttpApi } from '../../src/client/http-api.js';
import { ManualClock } from '../../src/common/clock.js';
import type { AuditEntry } from '../../src/protocol/security.js';
import { encodeFrame, FRAME_KIND } from '../../src/protocol/data-frames.js';
import { serveSecured } from '../helpers/secured-broker.js';
import { openSocket } from '../helpers/sessions.js';

const codeOf = (p: Promise<unknown>) => p.then(() => 'ok', (err: { code?: string }) => err.code);

/** A served broker with an admin `ops`, a topic `edits` read by group `g`, and a user `reader` that may reset `g` only. */
async function setUp(clock?: ManualClock): Promise<{ url: string; ops: HttpApi; reader: HttpApi; readerToken: string; refusals: () => Promise<AuditEntry[]> }> {
  const { url } = await serveSecured(clock ? { broker: { clock } } : {});
  const ops = new HttpApi(url, { token: (await new HttpApi(url, { token: '' }).createUser('ops')).token });
  const readerToken = (await ops.createUser('reader')).token;
  await ops.createTopic({ topic: 'edits', partitions: 1 });
  await ops.subscribe({ groupId: 'g', topic: 'edits', startPolicy: 'earliest' });
  await ops.addAcl({ principal: 'reader', resourceType: 'group', resourceName: 'g', patternType: 'literal', operation: 'reset', permission: 'allow' });
  const refusals = async () => (await ops.listAudit(1000)).filter((e) => e.outcome === 'refused');
  return { url, ops, reader: new HttpApi(url, { token: readerToken }), readerToken, refusals };
}

describe('refused operations in the audit', () => {
  it('records a refused offsets reset with the principal, operation, resource and reason; not a refused read', async () => {
    const { reader, refusals } = await setUp();
    expect(await codeOf(reader.resetOffsets({ groupId: 'g', topic: 'edits', spec: { to: 'earliest' }, execute: true }))).toBe('FORBIDDEN');
    expect(await codeOf(reader.fetch({ topic: 'edits', partitions: [{ partition: 0, offset: 0 }] }))).toBe('FORBIDDEN'); // a read
    expect(await codeOf(reader.describeTopic('edits'))).toBe('FORBIDDEN'); // a GET
    const entries = await refusals();
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      principal: 'reader', action: 'offsets-reset', target: 'topic:edits', outcome: 'refused',
      details: { request: 'POST /groups/:groupId/offsets/reset', operation: 'read', code: 'FORBIDDEN', suppressed: 0 },
    });
    expect(entries[0]!.details.reason).toContain('user reader may not read topic "edits": no ACL allows it');
    // A refused dry run is an attempt at the operation too, marked as such.
    expect(await codeOf(reader.resetOffsets({ groupId: 'g', topic: 'edits', spec: { to: 'earliest' } }))).toBe('FORBIDDEN');
    const both = await refusals();
    expect(both.map((e) => e.details.dryRun)).toEqual([true, undefined]);
  });

  it('records an admin\'s operation refused to a user, with the target the request named', async () => {
    const { reader, refusals } = await setUp();
    expect(await codeOf(reader.createUser('mallory'))).toBe('FORBIDDEN');
    expect(await refusals()).toMatchObject([{ principal: 'reader', action: 'user-create', target: 'user:mallory', details: { operation: 'admin' } }]);
  });

  it('records refused frames of the data socket and the push stream, not a refused fetch frame', async () => {
    const { url, readerToken, refusals } = await setUp();
    const data = await openSocket(url, '/data', readerToken);
    data.ws.send(encodeFrame(FRAME_KIND.PRODUCE, 1, { topic: 'edits', batches: [] }));
    expect((await data.next() as { message: Buffer }).message.readUInt8(0)).toBe(FRAME_KIND.ERROR);
    data.ws.send(encodeFrame(FRAME_KIND.FETCH, 2, { topic: 'edits', partitions: [{ partition: 0, offset: 0 }] }));
    expect((await data.next() as { message: Buffer }).message.readUInt8(0)).toBe(FRAME_KIND.ERROR);
    data.ws.close();

    const push = await openSocket(url, '/groups/other/stream', readerToken);
    push.ws.send(JSON.stringify({ type: 'subscribe', topics: ['edits'] }));
    expect(JSON.parse((await push.next() as { message: Buffer }).message.toString())).toMatchObject({ type: 'error', code: 'FORBIDDEN' });

    expect((await refusals()).map((e) => [e.principal, e.action, e.target, e.details.operation])).toEqual([
      ['reader', 'WS /groups/:groupId/stream subscribe', 'group:other', 'read'],
      ['reader', 'WS /data produce', 'topic:edits', 'write'],
    ]);
  });

  it('records ten refusals of a principal at once, then one every 6 s, naming those left out', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const { reader, refusals } = await setUp(clock);
    const produce = () => codeOf(reader.produce({ topic: 'edits', records: [{ key: null, value: Buffer.from('x') }] }));
    for (let i = 0; i < 15; i++) expect(await produce()).toBe('FORBIDDEN');
    expect(await refusals()).toHaveLength(10);
    clock.advance(5_999);
    await produce();
    expect(await refusals()).toHaveLength(10);
    clock.advance(1);
    await produce();
    const entries = await refusals();
    expect(entries).toHaveLength(11);
    expect(entries[0]!.details.suppressed).toBe(6); // the 5 past the burst and the one before the refill
    expect(entries.slice(1).every((e) => e.details.suppressed === 0)).toBe(true);
  });
});

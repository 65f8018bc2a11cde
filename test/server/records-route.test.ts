/**
 * `GET /topics/:topic/records` over real HTTP on loopback: the Wikipedia edits paged as JSON (UTF-8 text or base64),
 * searched by key, a timestamp given as ISO-8601; the HTTP client answering what the embedded broker does, binary keys
 * included; bad query values refused with registry codes; and the route needing read on the topic once the broker
 * has users.
 */
import { describe, expect, it } from 'vitest';
import { HttpApi } from '../../src/client/http-api.js';
import type { AclBinding } from '../../src/protocol/security.js';
import { asyncCodeOf } from '../helpers/errors.js';
import { serveSecured } from '../helpers/secured-broker.js';
import { readEdits } from '../helpers/wikiticker.js';

const edits = readEdits().slice(0, 2000);
const KEY = edits[1500]!.key;

async function served(insecure = true) {
  const server = await serveSecured({ insecure });
  await server.broker.createTopic({ topic: 'edits', partitions: 1, config: { retentionMs: -1 } });
  await server.broker.produce({
    topic: 'edits', records: edits.map((e) => ({ key: Buffer.from(e.key), value: Buffer.from(e.value), timestamp: e.timestamp, partition: 0 })),
  });
  return server;
}

async function get(url: string, query: string, token?: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${url}/topics/edits/records?${query}`, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('GET /topics/:topic/records', () => {
  it('answers a page as JSON records with each value\'s size, from an offset, an ISO time or the newest, searched by key', async () => {
    const { url } = await served();
    const page = await get(url, 'partition=0&offset=10&limit=2&maxValueBytes=50');
    expect(page.status).toBe(200);
    expect(page.body).toMatchObject({
      topic: 'edits', partition: 0, logStartOffset: 0, highWatermark: 2000, nextOffset: 12, scanLimitReached: false,
      scanned: { fromOffset: 10, toOffset: 12, records: 2 },
      records: [10, 11].map((o) => ({
        offset: o, timestamp: edits[o]!.timestamp, key: edits[o]!.key, headers: {},
        value: edits[o]!.value.slice(0, 50), valueBytes: Buffer.byteLength(edits[o]!.value), valueTruncated: true,
      })),
    });
    const iso = new Date(edits[700]!.timestamp).toISOString();
    const fromTime = await get(url, `partition=0&timestamp=${encodeURIComponent(iso)}&limit=1`);
    expect((fromTime.body.records as Array<{ offset: number }>)[0]!.offset).toBe(edits.findIndex((e) => e.timestamp >= edits[700]!.timestamp));
    const newest = await get(url, 'partition=0&newest=true&limit=1&encoding=base64');
    expect(newest.body.records).toEqual([expect.objectContaining({ offset: 1999, value: Buffer.from(edits[1999]!.value).toString('base64') })]);
    const search = await get(url, `partition=0&offset=0&key=${encodeURIComponent(KEY)}`);
    expect((search.body.records as Array<{ offset: number }>).map((r) => r.offset)).toEqual(edits.flatMap((e, i) => (e.key === KEY ? [i] : [])));
  });

  it('refuses bad query values with INVALID_REQUEST, and answers the broker\'s own refusals with their codes', async () => {
    const { url } = await served();
    for (const query of ['offset=0', 'partition=x', 'partition=0&limit=-1', 'partition=0&newest=yes', 'partition=0&keyMatch=regex&key=a',
      'partition=0&timestamp=yesterday', 'partition=0&key=***&encoding=base64', 'partition=0&offset=1&newest=true', 'partition=0&colour=red',
      'partition=0&limit=5000']) {
      const answer = await get(url, query);
      expect([query, answer.status, answer.body.code]).toEqual([query, 400, 'INVALID_REQUEST']);
      expect(answer.body.message).toEqual(expect.any(String));
    }
    expect((await get(url, 'partition=0&offset=2001')).body).toMatchObject({ code: 'OFFSET_OUT_OF_RANGE', logStartOffset: 0, highWatermark: 2000 });
    expect((await get(url, 'partition=3')).body.code).toBe('UNKNOWN_PARTITION');
    const unknown = await fetch(`${url}/topics/nope/records?partition=0`);
    expect([unknown.status, ((await unknown.json()) as { code: string }).code]).toEqual([404, 'UNKNOWN_TOPIC']);
  });

  it('is served by the HTTP client as by the embedded broker, binary keys included', async () => {
    const { url, broker } = await served();
    const api = new HttpApi(url);
    const binary = Buffer.from([0xff, 0x00, 0xfe, 0x7f]);
    await broker.produce({ topic: 'edits', records: [{ key: binary, value: Buffer.from([1, 2, 3]), partition: 0, headers: [{ key: 'h', value: Buffer.from([0x80]) }] }] });
    for (const request of [
      { offset: 100, limit: 5, maxValueBytes: 64 }, { newest: true, limit: 3 }, { timestamp: edits[900]!.timestamp, limit: 2 },
      { offset: 0, key: Buffer.from(KEY.slice(0, 15)), keyMatch: 'prefix' as const, limit: 7, maxScanRecords: 1500 },
      { newest: true, key: binary },
    ]) {
      const remote = await api.browseRecords({ topic: 'edits', partition: 0, ...request });
      expect(remote).toEqual(await broker.browseRecords({ topic: 'edits', partition: 0, ...request }));
    }
    const last = await api.browseRecords({ topic: 'edits', partition: 0, newest: true, key: binary });
    expect(last.records).toEqual([expect.objectContaining({ offset: 2000, key: binary, value: Buffer.from([1, 2, 3]), headers: [{ key: 'h', value: Buffer.from([0x80]) }] })]);
    expect(await asyncCodeOf(api.browseRecords({ topic: 'edits', partition: 0, limit: 0 }))).toBe('INVALID_REQUEST');
  });

  it('needs read on the topic once the broker has users', async () => {
    const { url } = await served(false);
    const ops = new HttpApi(url, { token: (await new HttpApi(url, { token: '' }).createUser('ops')).token });
    const { token } = await ops.createUser('alice');
    expect((await get(url, 'partition=0&limit=1')).status).toBe(401);
    const refused = await get(url, 'partition=0&limit=1', token);
    expect([refused.status, refused.body.code]).toEqual([403, 'FORBIDDEN']);
    const read: AclBinding = { principal: 'alice', resourceType: 'topic', resourceName: 'edits', operation: 'read', patternType: 'literal', permission: 'allow' };
    await ops.addAcl(read);
    const allowed = await get(url, 'partition=0&limit=1', token);
    expect([allowed.status, (allowed.body.records as unknown[]).length]).toEqual([200, 1]);
  });
});

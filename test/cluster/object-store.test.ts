/**
 * The S3 object store against a real S3-compatible server (s3rver on loopback): writes, whole and ranged reads,
 * listing past a page, deletes, a missing key; the `s3://` URL's parsing and its refusals.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3ObjectStore } from '../../src/log/objects/object-store.js';
import { parseS3Url } from '../../src/log/objects/s3-location.js';
import { startS3 } from '../helpers/s3.js';
import type { S3Server } from '../helpers/s3.js';

let s3: S3Server;
let store: S3ObjectStore;
beforeAll(async () => {
  s3 = await startS3();
  store = new S3ObjectStore(parseS3Url(`s3://${s3.bucket}/cluster-a?endpoint=${s3.endpoint}`));
});
afterAll(async () => {
  store?.close();
  await s3?.close();
});

describe('S3 object store', () => {
  it('puts, gets whole and by range, lists in key order under its prefix, deletes', async () => {
    const body = Buffer.alloc(300_000);
    for (let i = 0; i < body.length; i++) body[i] = (i * 31 + 7) & 0xff;
    await store.put('objects/1/a', body);
    await store.put('objects/1/b', Buffer.from('second'));
    await store.put('objects/2/c', Buffer.alloc(0));
    expect((await store.get('objects/1/a')).equals(body)).toBe(true);
    expect((await store.get('objects/1/a', { position: 123_457, length: 1000 })).equals(body.subarray(123_457, 124_457))).toBe(true);
    expect((await store.get('objects/1/b', { position: 5, length: 1 })).toString()).toBe('d');
    const listed = [];
    for await (const o of store.list('objects/')) listed.push([o.key, o.sizeBytes]);
    expect(listed).toEqual([['objects/1/a', 300_000], ['objects/1/b', 6], ['objects/2/c', 0]]);
    const other = new S3ObjectStore(parseS3Url(`s3://${s3.bucket}/cluster-b?endpoint=${s3.endpoint}`));
    const none = [];
    for await (const o of other.list('objects/')) none.push(o);
    expect(none).toEqual([]); // another prefix is another cluster
    other.close();
    await store.delete(['objects/1/b', 'objects/9/never']);
    await expect(store.get('objects/1/b')).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('lists page after page', async () => {
    // Pages of 100 keys: s3rver itself fails to list more than 1,000 keys (InternalError), AWS S3 does not.
    const paged = new S3ObjectStore(parseS3Url(`s3://${s3.bucket}/cluster-a?endpoint=${s3.endpoint}`), 100);
    const keys = Array.from({ length: 250 }, (_, i) => `many/${String(i).padStart(5, '0')}`);
    for (let i = 0; i < keys.length; i += 50) await Promise.all(keys.slice(i, i + 50).map((k) => store.put(k, Buffer.from(k))));
    const listed: string[] = [];
    for await (const o of paged.list('many/')) listed.push(o.key);
    paged.close();
    expect(listed).toEqual(keys);
    await store.delete(keys);
    const after = [];
    for await (const o of store.list('many/')) after.push(o);
    expect(after).toEqual([]);
  });

  it('a server that does not answer is STORAGE_ERROR naming the action', async () => {
    const dead = new S3ObjectStore(parseS3Url('s3://b?endpoint=http://127.0.0.1:1'));
    await expect(dead.put('k', Buffer.from('x'))).rejects.toMatchObject({ code: 'STORAGE_ERROR', context: { store: 's3', action: 'put' } });
    dead.close();
  });

  it('reads s3:// URLs and refuses what is not one', () => {
    expect(parseS3Url('s3://bucket?endpoint=http://127.0.0.1:9000')).toEqual({ bucket: 'bucket', prefix: '', endpoint: 'http://127.0.0.1:9000', region: 'us-east-1' });
    expect(parseS3Url('s3://bucket/a/b?region=eu-west-1')).toEqual({ bucket: 'bucket', prefix: 'a/b/', region: 'eu-west-1' });
    expect(() => parseS3Url('http://bucket')).toThrow(/--log takes s3:\/\/BUCKET/);
    expect(() => parseS3Url('s3://bucket?endpont=x')).toThrow(/unknown parameter endpont/);
    expect(() => parseS3Url('s3://bucket?endpoint=ftp://x')).toThrow(/endpoint must be an http/);
  });
});

/**
 * The broker when its offset store (LMDB) or catalog (SQLite) fails under it. Their file I/O is native, below
 * node:fs, so the faults are injected at their engines: the LMDB store's commit and better-sqlite3's
 * statement run throw as they do on a sick disk (a real full disk: test/integration/disk-full.test.ts). A disk error stops every write of the broker (appends, commits, catalog
 * changes) with STORAGE_ERROR, logged once, while reads go on; a full disk refuses the write with
 * RESOURCE_EXHAUSTED and writes resume once space is free; after a restart everything acknowledged is there.
 */
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { ManualClock } from '../../src/common/clock.js';
import { LmdbOffsetStore } from '../../src/offsets/lmdb-offset-store.js';
import { errnoError, FaultyDisk } from '../helpers/faulty-disk.js';
import { asyncErrorOf } from '../helpers/errors.js';
import { tmpDir } from '../helpers/tmp.js';
import { RecordingLogger } from '../log/log-fixtures.js';
import { serveSecured } from '../helpers/secured-broker.js';

const brokers: Broker[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const b of brokers.splice(0)) await b.close();
});

async function broker(dataDir: string, logger = new RecordingLogger()): Promise<Broker> {
  const b = await Broker.open({ dataDir, logger, clock: new ManualClock(1_700_000_000_000), compactionIntervalMs: 0, retentionCheckIntervalMs: 0 });
  brokers.push(b);
  return b;
}

async function restart(b: Broker, dataDir: string): Promise<Broker> {
  brokers.splice(brokers.indexOf(b), 1);
  await b.close();
  return broker(dataDir);
}

const rec = (value: string) => ({ key: null, value: Buffer.from(value), partition: 0 });

async function values(b: Broker, topic: string): Promise<string[]> {
  const { partitions } = await b.fetch({ topic, partitions: [{ partition: 0, offset: 0 }], maxRecords: 100 });
  return partitions[0]!.records.map((r) => r.value!.toString());
}

/**
 * Every commit of the LMDB engine fails with `err` from now on, as lmdb-js's write transaction rejects on a
 * sick disk (lmdb-js makes a class per environment, so its own methods cannot be reached from here).
 */
function failLmdbWrites(err: Error) {
  return vi.spyOn(LmdbOffsetStore.prototype, 'commit').mockRejectedValue(err);
}

/** Every better-sqlite3 statement run (the catalog's writes) throws SQLite's `code` from now on. */
function failSqliteWrites(code: string) {
  const statement = new Database(':memory:').prepare('select 1');
  return vi.spyOn(Object.getPrototypeOf(statement) as { run(): unknown }, 'run').mockImplementation(() => {
    throw new Database.SqliteError(code === 'SQLITE_FULL' ? 'database or disk is full' : 'disk I/O error', code);
  });
}

describe('the broker on a failing store', () => {
  it('an offset store write error stops every write of the broker; reads go on; a restart keeps every acknowledged commit and record', async () => {
    const dataDir = tmpDir();
    const logger = new RecordingLogger();
    let b = await broker(dataDir, logger);
    await b.createTopic({ topic: 't', partitions: 1 });
    await b.produce({ topic: 't', records: [rec('a'), rec('b'), rec('c')] });
    await b.commitOffsets({ groupId: 'g', topic: 't', offsets: [{ partition: 0, offset: 1 }] });
    const lmdb = failLmdbWrites(errnoError('EIO', 'write'));
    const err = await asyncErrorOf(b.commitOffsets({ groupId: 'g', topic: 't', offsets: [{ partition: 0, offset: 2 }] }));
    expect(err).toMatchObject({ code: 'STORAGE_ERROR', context: { store: 'offset store', errno: 'EIO' } });
    expect(err.message).toMatch(/broker stopped accepting writes.*reads go on/);
    lmdb.mockRestore(); // healthy again, but what the failed write left is unknown: still no writes
    expect(await asyncErrorOf(b.commitOffsets({ groupId: 'g', topic: 't', offsets: [{ partition: 0, offset: 3 }] }))).toBe(err);
    expect(await asyncErrorOf(b.produce({ topic: 't', records: [rec('d')] }))).toBe(err);
    expect(await asyncErrorOf(b.createTopic({ topic: 'u', partitions: 1 }))).toBe(err);
    expect(logger.errors).toHaveLength(1);
    expect(await values(b, 't')).toEqual(['a', 'b', 'c']);
    expect(await b.committedOffsets('g')).toMatchObject([{ topic: 't', partition: 0, offset: 1 }]);
    b = await restart(b, dataDir);
    expect(await values(b, 't')).toEqual(['a', 'b', 'c']);
    expect(await b.committedOffsets('g')).toMatchObject([{ topic: 't', partition: 0, offset: 1 }]);
    await b.commitOffsets({ groupId: 'g', topic: 't', offsets: [{ partition: 0, offset: 3 }] });
    await b.produce({ topic: 't', records: [rec('d')] });
    expect(await values(b, 't')).toEqual(['a', 'b', 'c', 'd']);
  });

  it('a first commit the offset store refuses marks nothing: the next start is not taken for a lost offset store', async () => {
    const dataDir = tmpDir();
    let b = await broker(dataDir);
    await b.createTopic({ topic: 't', partitions: 1 });
    await b.produce({ topic: 't', records: [rec('a'), rec('b')] });
    const lmdb = failLmdbWrites(errnoError('ENOSPC', 'write'));
    expect(await asyncErrorOf(b.commitOffsets({ groupId: 'g', topic: 't', offsets: [{ partition: 0, offset: 1 }] }))).toMatchObject({ code: 'RESOURCE_EXHAUSTED' });
    lmdb.mockRestore();
    b = await restart(b, dataDir);
    expect(await b.committedOffsets('g')).toEqual([]);
    await b.commitOffsets({ groupId: 'g', topic: 't', offsets: [{ partition: 0, offset: 1 }] });
    b = await restart(b, dataDir);
    expect(await b.committedOffsets('g')).toMatchObject([{ topic: 't', partition: 0, offset: 1 }]);
  });

  it('a full disk under the offset store refuses the commit with RESOURCE_EXHAUSTED; commits resume once space is free', async () => {
    const b = await broker(tmpDir());
    await b.createTopic({ topic: 't', partitions: 1 });
    await b.produce({ topic: 't', records: [rec('a'), rec('b')] });
    const lmdb = failLmdbWrites(errnoError('ENOSPC', 'write'));
    const err = await asyncErrorOf(b.commitOffsets({ groupId: 'g', topic: 't', offsets: [{ partition: 0, offset: 1 }] }));
    expect(err).toMatchObject({ code: 'RESOURCE_EXHAUSTED', context: { resource: 'disk' } });
    lmdb.mockRestore();
    await b.commitOffsets({ groupId: 'g', topic: 't', offsets: [{ partition: 0, offset: 2 }] });
    await b.produce({ topic: 't', records: [rec('c')] });
    expect(await b.committedOffsets('g')).toMatchObject([{ offset: 2 }]);
  });

  it('a catalog I/O error stops every write of the broker; reads and lookups go on; a restart has what was acknowledged', async () => {
    const dataDir = tmpDir();
    const logger = new RecordingLogger();
    let b = await broker(dataDir, logger);
    await b.createTopic({ topic: 't', partitions: 1 });
    await b.produce({ topic: 't', records: [rec('a')] });
    const sqlite = failSqliteWrites('SQLITE_IOERR_WRITE');
    const err = await asyncErrorOf(b.createTopic({ topic: 'u', partitions: 1 }));
    expect(err).toMatchObject({ code: 'STORAGE_ERROR', context: { store: 'catalog', errno: 'SQLITE_IOERR_WRITE' } });
    sqlite.mockRestore();
    expect(await asyncErrorOf(b.produce({ topic: 't', records: [rec('b')] }))).toBe(err);
    expect(await asyncErrorOf(b.commitOffsets({ groupId: 'g', topic: 't', offsets: [{ partition: 0, offset: 1 }] }))).toBe(err);
    expect(logger.errors).toHaveLength(1);
    expect(await values(b, 't')).toEqual(['a']);
    expect((await b.listTopics()).map((t) => t.topic)).toEqual(['t']);
    b = await restart(b, dataDir);
    expect((await b.listTopics()).map((t) => t.topic)).toEqual(['t']);
    await b.createTopic({ topic: 'u', partitions: 1 });
    await b.produce({ topic: 't', records: [rec('b')] });
    expect(await values(b, 't')).toEqual(['a', 'b']);
  });

  it('a full disk under the catalog refuses the change with RESOURCE_EXHAUSTED and stops nothing', async () => {
    const b = await broker(tmpDir());
    await b.createTopic({ topic: 't', partitions: 1 });
    const sqlite = failSqliteWrites('SQLITE_FULL');
    expect(await asyncErrorOf(b.createTopic({ topic: 'u', partitions: 1 }))).toMatchObject({ code: 'RESOURCE_EXHAUSTED', context: { resource: 'disk' } });
    sqlite.mockRestore();
    await b.createTopic({ topic: 'u', partitions: 1 });
    await b.produce({ topic: 't', records: [rec('a')] });
    expect((await b.listTopics()).map((t) => t.topic).sort()).toEqual(['t', 'u']);
  });

  it('a power loss under flush.policy=interval that takes records a group committed past: the group pauses with OFFSET_OUT_OF_RANGE, it does not skip the offsets new records take', async () => {
    const disk = new FaultyDisk();
    try {
      const dataDir = tmpDir();
      const b = await broker(dataDir);
      await b.createTopic({ topic: 't', partitions: 1, config: { flushPolicy: 'always' } });
      await b.produce({ topic: 't', records: [rec('a'), rec('b')] });
      await b.alterTopic({ topic: 't', config: { flushPolicy: 'interval', flushMs: 60_000 } });
      await b.produce({ topic: 't', records: [rec('c'), rec('d'), rec('e')] }); // acknowledged, not yet synced
      await b.commitOffsets({ groupId: 'g', topic: 't', offsets: [{ partition: 0, offset: 5 }] });
      const after = tmpDir();
      disk.powerLossCopy(dataDir, after);
      const reopened = await broker(after);
      expect(await values(reopened, 't')).toEqual(['a', 'b']);
      const { positions } = await reopened.subscribe({ groupId: 'g', topic: 't' });
      expect(positions[0]!.error).toMatchObject({ code: 'OFFSET_OUT_OF_RANGE', committedOffset: 5, highWatermark: 2 });
    } finally {
      disk.uninstall();
    }
  });

  it('an error of the request itself (a constraint) passes through and stops nothing', async () => {
    const b = await broker(tmpDir());
    await b.createTopic({ topic: 't', partitions: 1 });
    expect(await asyncErrorOf(b.createTopic({ topic: 't', partitions: 1 }))).toMatchObject({ code: 'TOPIC_ALREADY_EXISTS' });
    const sqlite = failSqliteWrites('SQLITE_CONSTRAINT_UNIQUE');
    const err = await b.createTopic({ topic: 'v', partitions: 1 }).then(() => null, (e: { code?: string }) => e);
    expect(err?.code).toBe('SQLITE_CONSTRAINT_UNIQUE');
    sqlite.mockRestore();
    await b.produce({ topic: 't', records: [rec('a')] });
    await b.createTopic({ topic: 'v', partitions: 1 });
  });
});

/**
 * The catalog's SQLite connection of a broker opened by `open` (captured at its first pragma), to fill its file for
 * real: `PRAGMA max_page_count` makes SQLite answer SQLITE_FULL as on a full disk, rolling the transaction back itself.
 */
async function withCatalogHandle<T>(open: () => Promise<T>): Promise<{ opened: T; db: Database.Database }> {
  const pragma = vi.spyOn(Database.prototype, 'pragma');
  try {
    const opened = await open();
    return { opened, db: pragma.mock.contexts[0] as Database.Database };
  } finally {
    pragma.mockRestore();
  }
}

describe('a catalog whose disk is full, over HTTP', () => {
  it('creating a user or a subscription answers RESOURCE_EXHAUSTED, writes nothing of it and stops nothing', async () => {
    const { opened: served, db } = await withCatalogHandle(() => serveSecured());
    const post = (path: string, body: unknown, token?: string) => fetch(`${served.url}${path}`, {
      method: 'POST', body: JSON.stringify(body),
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    });
    const first = await post('/users', { user: 'admin' });
    const { token } = await first.json() as { token: string };
    expect((await post('/topics', { topic: 't', partitions: 1 }, token)).status).toBe(201);
    const fill = () => db.pragma(`max_page_count = ${db.pragma('page_count', { simple: true }) as number}`);
    const room = () => db.pragma('max_page_count = 1073741823');
    const refused = (r: Response) => r.status !== 201 && r.status !== 200;

    fill(); // the file cannot grow by a page: creations succeed while their rows fit in pages it has
    let users = 0;
    let answer: Response | undefined;
    for (; users < 10_000 && !refused(answer = await post('/users', { user: `u${users}` }, token)); users++);
    expect(answer!.status).toBe(503);
    expect(await answer!.json()).toMatchObject({ code: 'RESOURCE_EXHAUSTED', resource: 'disk' });
    expect(db.prepare('select count(*) as n from users where name = ?').get(`u${users}`)).toEqual({ n: 0 });
    room();
    expect((await post('/users', { user: `u${users}` }, token)).status).toBe(201);

    fill();
    let groups = 0;
    for (; groups < 10_000 && !refused(answer = await post(`/groups/g${groups}/subscriptions`, { topic: 't' }, token)); groups++);
    expect(answer!.status).toBe(503);
    expect(await answer!.json()).toMatchObject({ code: 'RESOURCE_EXHAUSTED', resource: 'disk' });
    // Its group and its subscription, one transaction: neither row is there.
    expect(db.prepare('select count(*) as n from groups where group_id = ?').get(`g${groups}`)).toEqual({ n: 0 });
    expect(db.prepare('select count(*) as n from subscriptions where group_id = ?').get(`g${groups}`)).toEqual({ n: 0 });
    room();
    expect((await post(`/groups/g${groups}/subscriptions`, { topic: 't' }, token)).status).toBe(200);
    expect((await post('/topics/t/records', { records: [{ value: 'a' }] }, token)).status).toBe(200);
  });
});

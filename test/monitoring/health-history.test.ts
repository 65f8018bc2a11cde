/**
 * The stored health history on a SQLite catalog and a manual clock: one sample per group partition and minute (the
 * last of the minute), written once the minute ended or before a read, pruned after 24 hours, at most `maxSeries`
 * group partitions, and kept across a reopen of the catalog (a broker's restart).
 */
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Catalog } from '../../src/catalog/catalog.js';
import { openSqliteCatalog } from '../../src/catalog/sqlite.js';
import { ManualClock } from '../../src/common/clock.js';
import type { Logger } from '../../src/common/logger.js';
import { HealthHistory } from '../../src/monitoring/health-history.js';
import type { HealthSample } from '../../src/protocol/monitoring-api.js';
import { tmpDir } from '../helpers/tmp.js';

const T0 = Date.UTC(2026, 0, 1);
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

const catalogs: Catalog[] = [];
afterEach(async () => {
  for (const c of catalogs.splice(0)) await c.close();
});

async function open(file: string): Promise<Catalog> {
  const c = await openSqliteCatalog(file);
  catalogs.push(c);
  return c;
}

/** A history over a new catalog, with the warnings it logs. */
async function history(maxSeries?: number) {
  const file = path.join(tmpDir(), 'catalog.sqlite');
  const catalog = await open(file);
  const clock = new ManualClock(T0);
  const warnings: string[] = [];
  const logger: Logger = { info: () => {}, warn: (_o, msg) => void warnings.push(msg), error: () => {} };
  return { file, catalog, clock, warnings, history: new HealthHistory(catalog, clock, logger, maxSeries) };
}

/** A sample at `at` with lag `lag`, committed offset `committed`. */
function sample(at: number, lag: number, committed = 100): HealthSample {
  return { at, lag, timeLagMs: lag * 1000, headroomMs: HOUR - lag * 1000, headroomBytes: null, committedOffset: committed };
}

const g = (partition: number, groupId = 'g', topic = 't') => ({ groupId, topic, partition });

describe('health history', () => {
  it('keeps the last sample of each minute', async () => {
    const { history: h, clock } = await history();
    for (const [s, lag] of [[0, 1], [20, 2], [50, 3], [70, 4], [110, 5]] as const) {
      clock.advance(T0 + s * 1000 - clock.now());
      h.record(g(0), sample(clock.now(), lag));
    }
    h.record(g(0), sample(T0 + 55_000, 9)); // taken in the first minute by an evaluation that ended late: too old
    const [p] = (await h.of('g', T0)).partitions;
    expect(p!.samples.map((s) => [(s.at - T0) / 1000, s.lag])).toEqual([[50, 3], [110, 5]]);
  });

  it('writes a minute\'s sample once the minute ended, without a read', async () => {
    const { history: h, clock, catalog } = await history();
    h.record(g(0), sample(T0 + 10_000, 1));
    h.record(g(1), sample(T0 + 10_000, 7));
    clock.advance(MINUTE);
    h.record(g(0), sample(T0 + MINUTE, 2)); // a sample of the next minute: the first minute's are final
    await vi.waitFor(async () => expect((await catalog.healthHistory.ofGroup('g', T0)).map((p) => p.samples.map((s) => s.lag)).sort())
      .toEqual([[1], [7]]));
  });

  it('prunes samples older than 24 hours, and the series left without one', async () => {
    const { history: h, clock, catalog } = await history();
    h.record(g(0), sample(T0, 1));
    h.record(g(1), sample(T0, 1));
    expect((await h.of('g', T0)).partitions.map((p) => p.partition)).toEqual([0, 1]);
    clock.advance(24 * HOUR - MINUTE); // minute 1,439 after: the first minute is still inside the 1,440 kept
    h.record(g(0), sample(clock.now(), 2));
    expect((await h.of('g', T0)).partitions.map((p) => p.samples.length)).toEqual([2, 1]);
    clock.advance(MINUTE);
    h.record(g(0), sample(clock.now(), 3));
    const kept = (await h.of('g', T0)).partitions;
    expect(kept.map((p) => [p.partition, p.samples.map((s) => s.lag)])).toEqual([[0, [2, 3]]]);
    expect((await catalog.healthHistory.series()).map((s) => s.partition)).toEqual([0]);
  });

  it('keeps at most maxSeries group partitions; pruning frees room', async () => {
    const { history: h, clock, warnings } = await history(2);
    for (const p of [0, 1, 2]) h.record(g(p), sample(T0, p));
    expect((await h.of('g', T0)).partitions.map((p) => p.partition)).toEqual([0, 1]);
    expect(warnings).toEqual(['the health history keeps at most maxSeries group partitions: samples of others were not kept']);
    h.record(g(2), sample(T0 + MINUTE, 8)); // still no room: dropped at once, not held in memory
    clock.advance(24 * HOUR);
    await h.flush(); // a day later the next write prunes both series first
    h.record(g(2), sample(clock.now(), 9));
    expect((await h.of('g', T0)).partitions.map((p) => [p.partition, p.samples.map((s) => s.lag)])).toEqual([[2, [9]]]);
  });

  it('answers the samples from the range\'s start, in topic and partition order', async () => {
    const { history: h, clock } = await history();
    for (let m = 0; m < 5; m++) {
      for (const key of [g(1, 'g', 'b'), g(0, 'g', 'b'), g(0, 'g', 'a'), g(0, 'other')]) h.record(key, sample(clock.now(), m));
      clock.advance(MINUTE);
    }
    const answer = (await h.of('g', T0 + 3 * MINUTE + 30_000)).partitions;
    expect(answer.map((p) => [`${p.topic}/${p.partition}`, p.samples.map((s) => s.lag)])).toEqual([['a/0', [3, 4]], ['b/0', [3, 4]], ['b/1', [3, 4]]]);
  });

  it('is kept across a reopen of the catalog, its samples waiting in memory written at the flush of a stop', async () => {
    const { history: h, clock, file, catalog } = await history();
    h.record(g(0), sample(T0, 5, 10));
    clock.advance(MINUTE);
    h.record(g(0), sample(clock.now(), 3, 12));
    await h.flush();
    await catalog.close();
    catalogs.splice(catalogs.indexOf(catalog), 1);
    const again = new HealthHistory(await open(file), clock, { info: () => {}, warn: () => {}, error: () => {} });
    const [p] = (await again.of('g', T0)).partitions;
    expect(p!.samples).toEqual([sample(T0, 5, 10), sample(T0 + MINUTE, 3, 12)]);
    expect(p!.drain).toMatchObject({ consumeRecordsPerSec: 2 / 60, drainMs: 90_000, outcome: 'drains-first' });
  });

  it('forgets a deleted group and a deleted topic, stored or waiting', async () => {
    const { history: h } = await history();
    for (const key of [g(0, 'g', 't'), g(0, 'g', 'u'), g(0, 'h', 't'), g(0, 'h', 'u')]) h.record(key, sample(T0, 1));
    await h.flush();
    h.record(g(0, 'g', 'u'), sample(T0 + 1, 2)); // waiting
    await h.deleteGroup('g');
    expect((await h.of('g', T0)).partitions).toEqual([]);
    await h.deleteTopic('u');
    expect((await h.of('h', T0)).partitions.map((p) => p.topic)).toEqual(['t']);
  });

  it('answers a group of many partitions one sample every k minutes (at most MAX_HISTORY_SAMPLES), its drain estimates from every recent sample', async () => {
    const { history: h, clock, catalog } = await history();
    const keys = Array.from({ length: 40 }, (_, p) => g(p));
    await catalog.healthHistory.addSeries(keys);
    const rows = [];
    for (const s of await catalog.healthHistory.series()) {
      for (let m = 0; m < 1440; m++) rows.push({ seriesId: s.id, minute: T0 + m * MINUTE, ...sample(T0 + m * MINUTE, 100, m * 60) });
    }
    await catalog.healthHistory.write(rows);
    clock.advance(1439 * MINUTE);
    const answer = await h.of('g', clock.now() - 24 * HOUR); // 40 partitions x 1,441 minutes: over 50,000
    expect(answer.stepMs).toBe(2 * MINUTE);
    expect(answer.partitions).toHaveLength(40);
    for (const p of answer.partitions) {
      expect(p.samples).toHaveLength(720);
      expect(p.samples.slice(0, 2).map((s) => s.at - T0)).toEqual([0, 2 * MINUTE]);
      expect(p.drain).toMatchObject({ consumeRecordsPerSec: 1, windowMs: 15 * MINUTE, drainMs: 100_000, outcome: 'drains-first' });
    }
    expect((await h.of('g', clock.now() - HOUR)).stepMs).toBe(MINUTE); // 40 x 61: every minute
  });
});

/**
 * Delivery semantics on real processes: `onelog serve` on port 0, consumers as child processes that SIGKILL
 * themselves (or are SIGKILLed) at chosen or random points, restarted in the same group, on the real
 * Wikipedia edits.
 * - at-most-once (`commitMode: 'before-processing'`): the record in hand at the crash is never processed;
 * - at-least-once (`'after-processing'`): the record processed but not committed is processed again;
 * - exactly-once effect (PostgresOffsetStore, against the real PostgreSQL at 127.0.0.1:5432, database `test`,
 *   or ONELOG_TEST_PG_URL): 20 SIGKILLs at random moments, and every record's row is in the table once.
 * Needs the build (`npm run build`, done by `npm test`).
 */
import path from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpApi, Producer } from '../../src/client/index.js';
import { PostgresOffsetStore } from '../../src/client/postgres/index.js';
import { processedRecords, startChild, stopCleanly, waitFor, waitForAllCommitted } from '../helpers/children.js';
import { startServer } from '../helpers/processes.js';
import type { ServerProcess } from '../helpers/processes.js';
import { tmpDir } from '../helpers/tmp.js';
import { readEdits } from '../helpers/wikiticker.js';

const PG_URL = process.env.ONELOG_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const edits = readEdits();

const running: ServerProcess[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop('SIGKILL');
});

/** A server on a fresh data dir with a topic holding the first `records` edits; answers the high watermarks and each record's value. */
async function setup(topic: string, partitions: number, records: number) {
  const server = await startServer(tmpDir());
  running.push(server);
  const api = new HttpApi(server.url);
  await api.createTopic({ topic, partitions, config: { retentionMs: -1 } });
  const producer = new Producer(api);
  const values = new Map<string, string>();
  for (let i = 0; i < records; i += 500) {
    const batch = edits.slice(i, Math.min(i + 500, records));
    const { offsets } = await producer.send({ topic, messages: batch.map((e) => ({ key: e.key, value: e.value, timestamp: e.timestamp })) });
    offsets.forEach((o, j) => values.set(`${o.partition}:${o.offset}`, batch[j]!.value));
  }
  const highWatermarks = (await api.describeTopic(topic)).partitions.map((p) => p.highWatermark);
  return { server, api, highWatermarks, values, dir: tmpDir('onelog-consumers-') };
}

/** How many times each `partition:offset` was processed. */
function countProcessed(files: string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of files.flatMap(processedRecords)) counts.set(`${r.partition}:${r.offset}`, (counts.get(`${r.partition}:${r.offset}`) ?? 0) + 1);
  return counts;
}

describe('delivery semantics across a consumer crash', () => {
  /**
   * One consumer crashes itself at record X of partition 1 (`die`), another in the same group then consumes
   * to the end; answers how often each record was processed.
   */
  async function crashAndRestart(commitMode: 'before-processing' | 'after-processing', die: 'dieBefore' | 'dieAfter') {
    const topic = 'edits';
    const groupId = `g-${commitMode}`;
    const { server, api, highWatermarks, dir } = await setup(topic, 2, 300);
    const X = { partition: 1, offset: 57 };
    const base = { url: server.url, groupId, topic, commitMode, maxRecords: 1, maxWaitMs: 200, sessionTimeoutMs: 2000 };
    const files = [path.join(dir, 'first.txt'), path.join(dir, 'second.txt')];

    const first = startChild('group-consumer.mjs', { ...base, out: files[0], [die]: X });
    expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });
    const firstRun = processedRecords(files[0]!);
    expect(firstRun.filter((r) => r.partition === 1).at(-1)).toEqual(die === 'dieAfter' ? X : { partition: 1, offset: X.offset - 1 });

    // The dead member holds its partitions until its session timeout; then the new one gets them.
    const second = startChild('group-consumer.mjs', { ...base, out: files[1] });
    await waitForAllCommitted(api, groupId);
    await stopCleanly(second);
    const counts = countProcessed(files);
    return { counts, highWatermarks, X };
  }

  function expectEachOnceExcept(counts: Map<string, number>, highWatermarks: number[], key: string, times: number) {
    const wrong: string[] = [];
    highWatermarks.forEach((hw, p) => {
      for (let offset = 0; offset < hw; offset++) {
        const k = `${p}:${offset}`;
        const n = counts.get(k) ?? 0;
        if (n !== (k === key ? times : 1)) wrong.push(`${k} x${n}`);
      }
    });
    expect(wrong).toEqual([]);
    expect([...counts.keys()].filter((k) => !/^[01]:\d+$/.test(k) || Number(k.split(':')[1]) >= highWatermarks[Number(k[0])]!)).toEqual([]);
  }

  it('at-most-once: a consumer killed at the start of record X\'s handler never processes X after the restart; every other record once', async () => {
    const { counts, highWatermarks, X } = await crashAndRestart('before-processing', 'dieBefore');
    expectEachOnceExcept(counts, highWatermarks, `${X.partition}:${X.offset}`, 0);
  });

  it('at-most-once loses records only in a crash: a clean stop first processes the batch it committed', async () => {
    const topic = 'edits';
    const groupId = 'g-stop';
    const { server, api, dir } = await setup(topic, 2, 300);
    const out = path.join(dir, 'stopped.txt');
    // The handler of the batch's first record asks to stop; the batch (20 records) was committed before it ran.
    const child = startChild('group-consumer.mjs', {
      url: server.url, groupId, topic, out, commitMode: 'before-processing', maxRecords: 20, maxWaitMs: 200, stopAfter: 1,
    });
    const { code } = await child.exited;
    expect(code).toBe(0);
    expect(child.lines).toContain('stopped');
    const committed = (await api.describeGroup(groupId)).subscriptions[0]!.partitions.map((p) => p.committedOffset ?? 0);
    expect(committed.reduce((x, y) => x + y, 0)).toBe(20);
    const expected = committed.flatMap((c, partition) => Array.from({ length: c }, (_, offset) => ({ partition, offset })));
    expect(processedRecords(out).sort((x, y) => x.partition - y.partition || x.offset - y.offset)).toEqual(expected);
  });

  it('at-least-once: a consumer killed after processing record X, before committing it, processes X again after the restart; every other record once', async () => {
    const { counts, highWatermarks, X } = await crashAndRestart('after-processing', 'dieAfter');
    expectEachOnceExcept(counts, highWatermarks, `${X.partition}:${X.offset}`, 2);
  });

  it('at-least-once on the binary data path (each commit beside the next fetch): 8 SIGKILLs at random moments, each redelivering at most one batch', async () => {
    const KILLS = 8;
    const MAX_RECORDS = 20;
    const topic = 'edits';
    const groupId = 'g-binary';
    const { server, api, highWatermarks, dir } = await setup(topic, 2, 3000);
    const config = { url: server.url, groupId, topic, binary: true, maxRecords: MAX_RECORDS, maxWaitMs: 200, sessionTimeoutMs: 2000, handlerMs: 1 };
    let seed = 20_261_201;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const files: string[] = [];
    for (let i = 0; i < KILLS; i++) {
      const out = path.join(dir, `run-${i}.txt`);
      files.push(out);
      const child = startChild('group-consumer.mjs', { ...config, out });
      await child.line((l) => l.startsWith('member '), 'its member id');
      await new Promise((resolve) => setTimeout(resolve, 100 + Math.floor(random() * 300)));
      child.proc.kill('SIGKILL');
      expect(await child.exited).toMatchObject({ signal: 'SIGKILL' });
      await api.leaveGroup({ groupId, memberId: child.memberId() });
    }
    const last = startChild('group-consumer.mjs', { ...config, handlerMs: 0, out: path.join(dir, 'last.txt') });
    files.push(path.join(dir, 'last.txt'));
    await waitForAllCommitted(api, groupId);
    await stopCleanly(last);

    const runs = files.map((f) => processedRecords(f).map((r) => `${r.partition}:${r.offset}`));
    // What a killed run processed and a later run processed again: at most the batch in hand.
    const redelivered = runs.slice(0, KILLS).map((run, i) => {
      const later = new Set(runs.slice(i + 1).flat());
      return run.filter((k) => later.has(k)).length;
    });
    console.log(`redelivered per kill: ${redelivered.join(", ")}; processed per run: ${runs.map((r) => r.length).join(", ")}`);
    expect(redelivered.every((n) => n <= MAX_RECORDS), `redelivered per kill: ${redelivered.join(', ')}`).toBe(true);
    expect(runs.slice(0, KILLS).filter((r) => r.length > 0).length).toBeGreaterThanOrEqual(KILLS / 2);
    // Nothing lost: every record processed at least once.
    const seen = new Set(runs.flat());
    const missing = highWatermarks.flatMap((hw, p) => Array.from({ length: hw }, (_, o) => `${p}:${o}`)).filter((k) => !seen.has(k));
    expect(missing).toEqual([]);
  });

  it('exactly-once effect with PostgresOffsetStore: 20 SIGKILLs at random moments, each record\'s row written once', async () => {
    const KILLS = 20;
    const RECORDS = 5000;
    const topic = 'edits';
    const groupId = 'ledger';
    const run = `${process.pid}_${Date.now()}`;
    const offsetsTable = `onelog_eo_offsets_${run}`;
    const effectsTable = `onelog_eo_effects_${run}`;
    const pool = new pg.Pool({ connectionString: PG_URL, max: 2 });
    try {
      await new PostgresOffsetStore({ pool, table: offsetsTable }).setup();
      // No unique constraint: a record applied twice would show as two rows.
      await pool.query(`CREATE TABLE "${effectsTable}" (topic text NOT NULL, partition int NOT NULL, "offset" bigint NOT NULL, value text)`);
      const { server, api, highWatermarks, values } = await setup(topic, 3, RECORDS);
      const config = { url: server.url, pgUrl: PG_URL, groupId, topic, offsetsTable, effectsTable, sessionTimeoutMs: 10_000, maxRecords: 100 };
      const rows = async () => Number((await pool.query<{ n: string }>(`SELECT count(*) AS n FROM "${effectsTable}"`)).rows[0]!.n);

      let seed = 20_151_209;
      const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
      let runsThatWrote = 0;
      for (let i = 0; i < KILLS; i++) {
        const child = startChild('pg-consumer.mjs', config);
        await child.line((l) => l.startsWith('member '), 'its member id');
        await new Promise((resolve) => setTimeout(resolve, 50 + Math.floor(random() * 350)));
        child.proc.kill('SIGKILL');
        expect(await child.exited).toMatchObject({ signal: 'SIGKILL' });
        if (child.lines.includes('first')) runsThatWrote++;
        // The dead member would hold its partitions until its session timeout: remove it at once, as an
        // operator would (the consumer-groups test covers expiry).
        await api.leaveGroup({ groupId, memberId: child.memberId() });
      }
      const beforeLastRun = await rows();
      // Most kills land while records are being written (each kill comes 50-400 ms after the child joined).
      expect(beforeLastRun).toBeGreaterThan(0);
      expect(runsThatWrote).toBeGreaterThanOrEqual(KILLS / 4);

      const last = startChild('pg-consumer.mjs', config);
      // Joined (and so handling SIGTERM) before anything else: the killed runs may have stored every position already.
      await last.line((l) => l.startsWith('member '), 'its member id');
      await waitFor('every position stored in PostgreSQL at the high watermark', async () => {
        const { rows: stored } = await pool.query<{ partition: number; next_offset: string | null }>(
          `SELECT partition, next_offset FROM "${offsetsTable}" WHERE group_id = $1 ORDER BY partition`, [groupId]);
        return stored.length === 3 && stored.every((r) => Number(r.next_offset) === highWatermarks[r.partition]);
      }, 30_000, 100);
      // onelog's committed offsets follow the stored positions (for lag), also where the store was already done.
      await waitForAllCommitted(api, groupId);
      await stopCleanly(last);

      const { rows: [totals] } = await pool.query<{ n: string; distinct_records: string }>(
        `SELECT count(*) AS n, count(DISTINCT (topic, partition, "offset")) AS distinct_records FROM "${effectsTable}"`);
      expect(totals).toEqual({ n: String(RECORDS), distinct_records: String(RECORDS) });
      // Each row is the record at its partition and offset.
      const { rows: effects } = await pool.query<{ topic: string; partition: number; offset: string; value: string }>(
        `SELECT topic, partition, "offset", value FROM "${effectsTable}"`);
      const mismatched = effects.filter((e) => e.topic !== topic || values.get(`${e.partition}:${e.offset}`) !== e.value);
      expect(mismatched).toEqual([]);
      // onelog's committed offsets followed the stored positions.
      const d = await api.describeGroup(groupId);
      expect(d.subscriptions[0]!.partitions.map((p) => p.committedOffset)).toEqual(highWatermarks);
      console.log(`exactly-once: ${beforeLastRun} rows before the last run; ${runsThatWrote} of ${KILLS} killed runs had written`);
    } finally {
      await pool.query(`DROP TABLE IF EXISTS "${effectsTable}"`);
      await pool.query(`DROP TABLE IF EXISTS "${offsetsTable}"`);
      await pool.end();
    }
  });
});

/**
 * A storage fuzzer in the manner of Redpanda's: random sequences of append / concurrent append / read /
 * close-reopen / crash / byte flip / delete-records / offset-for-timestamp / time retention / compaction against
 * a partition log (segments roll on small segment sizes), checked after every step against a simple in-memory
 * model.
 *
 * A crash is modelled as: the process dies (nothing closed), the active segment's `.log` file is cut at a random
 * byte after what the last roll or clean close synced (the recovery point), and the log reopens. Everything from
 * the first batch the cut touches onwards is lost; every whole batch before it must survive, exactly. A byte flip
 * rots a byte of a batch below the recovery point after a clean close: reopening cuts nothing and moves no offset,
 * reads answer CORRUPT_MESSAGE for that batch and serve the records before it, and appends get the next offsets;
 * the byte is then put back (with the segment's index files, caches rebuilt from it).
 */
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/common/clock.js';
import type { StoredRecord } from '../../src/protocol/types.js';
import type { PartitionLog } from '../../src/log/segments/partition-log.js';
import { tmpDir } from '../helpers/tmp.js';
import { activeLogPath, batchSpans, codeOf, logConfig, logFiles, openLog, readAll, smallFileCache, T0 } from './log-fixtures.js';
import type { BatchSpan } from './log-fixtures.js';

interface ModelRecord {
  offset: number;
  key: string;
  value: string;
  timestamp: number;
  /** Last offset of the batch the record was appended in. */
  batchLast: number;
}

interface Model {
  records: ModelRecord[];
  logStart: number;
  logEnd: number;
  /** Every offset ever acknowledged and not lost to a crash, with its value: never to be given to another record. */
  acked: Map<number, string>;
}

const recordSpec = fc.record({
  pad: fc.nat({ max: 60 }),
  /** One of a few keys, so that compaction has versions to drop. */
  key: fc.nat({ max: 4 }),
  /** An explicit timestamp (ms after T0), or the clock's time. */
  timestamp: fc.option(fc.integer({ min: -1000, max: 1000 }), { nil: undefined }),
});
const batchSpec = fc.array(recordSpec, { minLength: 1, maxLength: 5 });

const opSpec = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('append' as const), batch: batchSpec }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('appendConcurrent' as const), batches: fc.array(batchSpec, { minLength: 2, maxLength: 8 }) }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('read' as const),
      /** Picks the offset: log start + at % (readable offsets + 1). */
      at: fc.nat(),
      maxRecords: fc.integer({ min: 1, max: 40 }),
      maxBytes: fc.integer({ min: 1, max: 3000 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('readOutOfRange' as const), below: fc.boolean(), by: fc.integer({ min: 1, max: 5 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('reopen' as const) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('crash' as const), cut: fc.nat(), atBoundary: fc.boolean() }) },
  /** Picks a batch (`batch` % batches at or after the log start) and a byte of it covered by its check (from the magic on). */
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('flip' as const), batch: fc.nat(), at: fc.nat(), bit: fc.nat({ max: 7 }) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('deleteBefore' as const),
      where: fc.constantFrom('below' as const, 'within' as const, 'end' as const, 'above' as const, 'segmentEdge' as const),
      n: fc.nat(),
      segment: fc.nat(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.nat({ max: 500 }) }) },
  /** Time retention with retention.ms = `ms`, at the clock's time. */
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('retention' as const), ms: fc.integer({ min: 0, max: 3000 }) }) },
  /** On-demand compaction (the active segment sealed first). */
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('compact' as const) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('offsetForTimestamp' as const),
      /** A time in ms after T0, or (when `near` is set) one within 1 ms of a stored record's timestamp. */
      t: fc.integer({ min: -1200, max: 2000 }),
      near: fc.option(fc.record({ pick: fc.nat(), delta: fc.integer({ min: -1, max: 1 }) }), { nil: undefined }),
    }),
  },
);
type Op = typeof opSpec extends fc.Arbitrary<infer T> ? T : never;

const configSpec = fc.record({
  segmentBytes: fc.constantFrom(200, 600, 1 << 20),
  indexIntervalBytes: fc.constantFrom(64, 4096),
});

function checkAgainstModel(log: PartitionLog, model: Model): void {
  expect([log.logStartOffset, log.logEndOffset, log.highWatermark]).toEqual([model.logStart, model.logEnd, model.logEnd]);
  const got = readAll(log, model.logStart, 7).map((r) => [r.offset, r.key!.toString(), r.value!.toString(), r.timestamp]);
  expect(got).toEqual(model.records.map((r) => [r.offset, r.key, r.value, r.timestamp]));
}

/** The offset `recovery-point.json` names (0 without one): what the last roll or clean close synced. */
function recoveryPoint(dir: string): number {
  const file = path.join(dir, 'recovery-point.json');
  return fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as { recoveryPoint: number }).recoveryPoint : 0;
}

/** Every batch of every segment file, with its file. */
function allBatches(dir: string): (BatchSpan & { file: string })[] {
  return logFiles(dir).flatMap((f) => batchSpans(path.join(dir, f)).map((span) => ({ ...span, file: path.join(dir, f) })));
}

/** XORs the byte at `position` of `file` with `mask`. */
function flipByte(file: string, position: number, mask: number): void {
  const fd = fs.openSync(file, 'r+');
  try {
    const byte = Buffer.alloc(1);
    fs.readSync(fd, byte, 0, 1, position);
    fs.writeSync(fd, Buffer.from([byte[0]! ^ mask]), 0, 1, position);
  } finally {
    fs.closeSync(fd);
  }
}

/** The records fetched from `from` until the fetch meets the corrupt batch (whose error it checks) at `bad`. */
function readUpToCorrupt(log: PartitionLog, from: number, bad: BatchSpan & { file: string }): StoredRecord[] {
  const out: StoredRecord[] = [];
  for (let next = from; ;) {
    let got: { records: StoredRecord[]; nextOffset: number };
    try {
      got = log.fetch(next, { maxBytes: 1 << 20, maxRecords: 1000 });
    } catch (err) {
      expect(err).toMatchObject({ code: 'CORRUPT_MESSAGE', context: { segment: bad.file, position: bad.position, offset: bad.baseOffset } });
      return out;
    }
    expect(got.nextOffset).toBeLessThanOrEqual(bad.baseOffset);
    out.push(...got.records);
    next = got.nextOffset;
  }
}

async function run(config: { segmentBytes: number; indexIntervalBytes: number }, ops: Op[]): Promise<void> {
  const dir = tmpDir('onelog-fuzz-');
  const clock = new ManualClock(T0);
  // One cache for every log opened here, so a crash can drop a log's descriptors without closing it.
  const files = smallFileCache();
  const options = { ...config, clock, files, cleanupPolicy: 'compact,delete' as const, retentionMs: -1 };
  let log = openLog(dir, options);
  const model: Model = { records: [], logStart: 0, logEnd: 0, acked: new Map() };
  let seq = 0;

  const append = (batch: { pad: number; key: number; timestamp: number | undefined }[]) => {
    const inputs = batch.map((r) => ({
      key: `k${r.key}`,
      value: `r${seq++}.${'x'.repeat(r.pad)}`,
      timestamp: r.timestamp === undefined ? undefined : T0 + r.timestamp,
    }));
    const now = clock.now();
    const promise = log.append(inputs.map((r) => ({
      key: Buffer.from(r.key), value: Buffer.from(r.value), ...(r.timestamp === undefined ? {} : { timestamp: r.timestamp }),
    })));
    // Offsets are given when append is called, in call order, from the log end offset.
    const base = model.logEnd;
    const last = base + inputs.length - 1;
    inputs.forEach((r, i) => {
      expect(model.acked.has(base + i)).toBe(false);
      model.records.push({ offset: base + i, key: r.key, value: r.value, timestamp: r.timestamp ?? now, batchLast: last });
      model.acked.set(base + i, r.value);
    });
    model.logEnd = last + 1;
    return promise.then((result) => expect(result).toEqual({ baseOffset: base, lastOffset: last }));
  };

  const reopen = () => {
    log = openLog(dir, options);
  };

  try {
    for (const op of ops) {
      switch (op.kind) {
        case 'append':
          await append(op.batch);
          break;
        case 'appendConcurrent':
          await Promise.all(op.batches.map(append));
          break;
        case 'read': {
          const from = model.logStart + (op.at % (model.logEnd - model.logStart + 1));
          const got: StoredRecord[] = log.read(from, { maxRecords: op.maxRecords, maxBytes: op.maxBytes });
          const want = model.records.filter((r) => r.offset >= from);
          expect(got.length).toBeLessThanOrEqual(op.maxRecords);
          // Never less than the rest of the first batch (up to maxRecords), whatever maxBytes says.
          if (want.length > 0) {
            const restOfFirstBatch = want.filter((r) => r.offset <= want[0]!.batchLast).length;
            expect(got.length).toBeGreaterThanOrEqual(Math.min(op.maxRecords, restOfFirstBatch));
          }
          expect(got.map((r) => [r.offset, r.value!.toString(), r.timestamp])).toEqual(
            want.slice(0, got.length).map((r) => [r.offset, r.value, r.timestamp]),
          );
          break;
        }
        case 'readOutOfRange': {
          if (op.below && model.logStart === 0) break;
          const at = op.below ? model.logStart - op.by : model.logEnd + op.by;
          expect(codeOf(() => log.read(at, { maxRecords: 10, maxBytes: 1000 }))).toBe('OFFSET_OUT_OF_RANGE');
          break;
        }
        case 'reopen':
          await log.close();
          reopen();
          checkAgainstModel(log, model);
          break;
        case 'crash': {
          files.closeAll(); // the process dies: nothing is closed or synced
          const file = activeLogPath(dir);
          const spans = batchSpans(file);
          const size = fs.statSync(file).size;
          // What the last roll or clean close synced stays; the cut tears what was written since.
          const synced = recoveryPoint(dir);
          const kept = spans.filter((b) => b.baseOffset < synced).reduce((end, b) => b.position + b.bytes, 0);
          let cut = kept + (op.cut % (size - kept + 1));
          const above = spans.filter((b) => b.baseOffset >= synced);
          if (op.atBoundary && above.length > 0) cut = above[op.cut % above.length]!.position;
          fs.truncateSync(file, cut);
          const lost = spans.find((s) => s.position + s.bytes > cut);
          if (lost) {
            model.records = model.records.filter((r) => r.offset < lost.baseOffset);
            for (const o of [...model.acked.keys()]) if (o >= lost.baseOffset) model.acked.delete(o);
            // The log never restarts below its start offset, even when what lay above it was lost.
            model.logEnd = Math.max(lost.baseOffset, model.logStart);
          }
          reopen();
          checkAgainstModel(log, model);
          break;
        }
        case 'flip': {
          await log.close(); // a clean close: every batch is below the recovery point
          const candidates = allBatches(dir).filter((b) => b.baseOffset >= model.logStart);
          if (candidates.length === 0) {
            reopen();
            break;
          }
          const bad = candidates[op.batch % candidates.length]!;
          const sizes = () => logFiles(dir).map((f) => fs.statSync(path.join(dir, f)).size);
          const before = sizes();
          const position = bad.position + 16 + (op.at % (bad.bytes - 16)); // from the magic on: the check covers it
          flipByte(bad.file, position, 1 << op.bit);
          reopen();
          expect(sizes()).toEqual(before); // nothing cut
          expect([log.logStartOffset, log.logEndOffset, log.highWatermark]).toEqual([model.logStart, model.logEnd, model.logEnd]);
          const below = model.records.filter((r) => r.offset < bad.baseOffset);
          expect(readUpToCorrupt(log, model.logStart, bad).map((r) => [r.offset, r.value!.toString()])).toEqual(below.map((r) => [r.offset, r.value]));
          expect(codeOf(() => log.fetch(bad.baseOffset, { maxBytes: 1 << 20, maxRecords: 10 }))).toBe('CORRUPT_MESSAGE');
          await append([{ pad: 0, key: 0, timestamp: undefined }]); // the next offset, never one given before
          // Put back, as a restore of the segment from a backup: its index files, caches, are rebuilt from it.
          await log.close();
          flipByte(bad.file, position, 1 << op.bit);
          for (const ext of ['.index', '.timeindex']) fs.rmSync(bad.file.replace(/\.log$/, ext), { force: true });
          reopen();
          checkAgainstModel(log, model);
          break;
        }
        case 'deleteBefore': {
          const segmentBases = logFiles(dir).map((f) => Number(f.slice(0, 20)));
          const target = {
            below: model.logStart - 1 - (op.n % (model.logStart + 1)), // may be -1: nothing to delete
            within: model.logStart + (op.n % (model.logEnd - model.logStart + 1)),
            end: model.logEnd,
            above: model.logEnd + 1 + (op.n % 3),
            // Just before, at or just after the base offset of a segment on disk.
            segmentEdge: segmentBases[op.segment % segmentBases.length]! + (op.n % 3) - 1,
          }[op.where];
          if (target > model.logEnd) {
            expect(codeOf(() => log.deleteRecordsBefore(target, 'delete-records'))).toBe('OFFSET_OUT_OF_RANGE');
          } else {
            expect(log.deleteRecordsBefore(target, 'delete-records')).toBe(Math.max(target, model.logStart));
            if (target > model.logStart) {
              model.logStart = target;
              model.records = model.records.filter((r) => r.offset >= target);
            }
          }
          break;
        }
        case 'advance':
          clock.advance(op.ms);
          break;
        case 'retention': {
          log.setConfig(logConfig({ ...options, retentionMs: op.ms }));
          log.enforceRetention();
          const cutoff = clock.now() - op.ms;
          const first = model.records.find((r) => r.timestamp >= cutoff)?.offset ?? model.logEnd;
          if (first > model.logStart) {
            model.logStart = first;
            model.records = model.records.filter((r) => r.offset >= first);
          }
          log.setConfig(logConfig(options));
          break;
        }
        case 'compact': {
          // Past every timestamp the ops can write, so every sealed segment is old enough to compact.
          clock.advance(2000);
          await log.compact(true);
          const latest = new Map(model.records.map((r) => [r.key, r.offset]));
          // Gaps now split batches: a read's first batch may hold a single record.
          model.records = model.records.filter((r) => latest.get(r.key) === r.offset).map((r) => ({ ...r, batchLast: r.offset }));
          break;
        }
        case 'offsetForTimestamp': {
          const near = op.near && model.records[op.near.pick % Math.max(1, model.records.length)];
          const t = near && op.near ? near.timestamp + op.near.delta : T0 + op.t;
          const want = model.records.find((r) => r.timestamp >= t)?.offset ?? model.logEnd;
          expect(log.offsetForTimestamp(t)).toBe(want);
          break;
        }
      }
      expect([log.logStartOffset, log.logEndOffset, log.highWatermark]).toEqual([model.logStart, model.logEnd, model.logEnd]);
    }
    checkAgainstModel(log, model);
    await log.close();
    reopen();
    checkAgainstModel(log, model);
  } finally {
    await log.close();
  }
}

describe('PartitionLog against a model', () => {
  it('keeps every acknowledged record through random appends, reads, reopens, crashes, byte flips below the recovery point, deletes, retention and compaction', async () => {
    await fc.assert(
      fc.asyncProperty(configSpec, fc.array(opSpec, { minLength: 1, maxLength: 50 }), run),
      {
        numRuns: Number(process.env.ONELOG_FUZZ_RUNS ?? 200),
        examples: [
          // Found at 5,000 runs: a crash after a clean close left the checkpoint behind the log end, and the next clean
          // close did not move it, so a flip below the log end was cut as a torn tail.
          [{ segmentBytes: 200, indexIntervalBytes: 64 }, [
            { kind: 'reopen' },
            { kind: 'flip', batch: 0, at: 0, bit: 0 }, // nothing to flip yet: a clean close and open
            { kind: 'appendConcurrent', batches: [[{ pad: 0, key: 0, timestamp: undefined }], [{ pad: 0, key: 0, timestamp: undefined }]] },
            { kind: 'crash', cut: 593757739, atBoundary: true },
            { kind: 'flip', batch: 0, at: 0, bit: 0 },
            { kind: 'compact' },
          ]],
          [{"segmentBytes":1048576,"indexIntervalBytes":64},[{"kind":"append","batch":[{"pad":0,"key":0,"timestamp":undefined}]},{"kind":"reopen"},{"kind":"appendConcurrent","batches":[[{"pad":0,"key":0,"timestamp":undefined}],[{"pad":0,"key":0,"timestamp":undefined}]]},{"kind":"crash","cut":186983926,"atBoundary":false},{"kind":"flip","batch":195077175,"at":0,"bit":0},{"kind":"crash","cut":0,"atBoundary":false}]],
          // Found by CI: a flip in the first batch's last offset delta made reads pass it, silently skipping its records.
          [{ segmentBytes: 600, indexIntervalBytes: 64 }, [
            { kind: 'append', batch: [{ pad: 5, key: 0, timestamp: 0 }, { pad: 43, key: 0, timestamp: undefined }, { pad: 51, key: 0, timestamp: -64 },
              { pad: 51, key: 0, timestamp: undefined }, { pad: 20, key: 0, timestamp: undefined }] },
            { kind: 'append', batch: [{ pad: 0, key: 0, timestamp: undefined }] },
            { kind: 'flip', batch: 0, at: 1422270862, bit: 7 },
            { kind: 'append', batch: [{ pad: 0, key: 0, timestamp: undefined }] },
          ]],
        ],
      },
    );
  });
});

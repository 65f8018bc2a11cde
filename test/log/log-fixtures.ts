/** Shared helpers of the storage tests: opening logs on temp dirs, records, reading a whole log back. */
import fs from 'node:fs';
import path from 'node:path';
import { ManualClock } from '../../src/common/clock.js';
import { LOG_OVERHEAD, readBatchHeader } from '../../src/protocol/record-batch.js';
import type { RecordInput, StoredRecord } from '../../src/protocol/types.js';
import { FileCache, MIN_OPEN_FILES } from '../../src/log/segments/file-cache.js';
import type { Logger } from '../../src/common/logger.js';
import { PartitionLog } from '../../src/log/segments/partition-log.js';
import type { PartitionLogOptions } from '../../src/log/segments/partition-log.js';
import type { LogConfig } from '../../src/log/partition.js';
import { DEFAULT_TOPIC_CONFIG } from '../../src/protocol/topic-config.js';
import { vi } from 'vitest';

export const T0 = 1_700_000_000_000;

/** A logger that keeps what it is told, so tests can check what recovery reported. */
export class RecordingLogger implements Logger {
  readonly infos: { obj: object; msg: string }[] = [];
  readonly warns: { obj: object; msg: string }[] = [];
  readonly errors: { obj: object; msg: string }[] = [];
  info(obj: object, msg: string): void {
    this.infos.push({ obj, msg });
  }
  warn(obj: object, msg: string): void {
    this.warns.push({ obj, msg });
  }
  error(obj: object, msg: string): void {
    this.errors.push({ obj, msg });
  }
}

/** Log options and topic settings, flat, as the tests override them. */
export type LogOverrides = Partial<Omit<PartitionLogOptions, 'config'>> & Partial<LogConfig>;

/** A topic's settings for tests: defaults, 1 GiB segments, flush policy `always`, then `overrides`. */
export function logConfig(overrides: Partial<LogConfig> = {}): LogConfig {
  return { ...DEFAULT_TOPIC_CONFIG, segmentBytes: 1 << 30, flushPolicy: 'always', ...overrides };
}

/**
 * Options with large defaults and the flush policy `always`; override `segmentBytes` / `indexIntervalBytes`
 * to force rolls and index entries, or any other setting.
 */
export function logOptions(overrides: LogOverrides = {}): PartitionLogOptions {
  const {
    indexIntervalBytes = 4096, clock = new ManualClock(T0), logger = new RecordingLogger(), files = smallFileCache(), cleaner,
    recoverActiveSegment, onCorrupt, maxProducers, beforeFirstWrite, ...config
  } = overrides;
  const rest = { cleaner, recoverActiveSegment, onCorrupt, maxProducers, beforeFirstWrite };
  const given = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined)) as Partial<PartitionLogOptions>;
  return { indexIntervalBytes, clock, logger, files, ...given, config: logConfig(config) };
}

/**
 * A file cache of the smallest budget, so the storage tests run with files evicted and reopened all along.
 */
export function smallFileCache(): FileCache {
  return new FileCache({ maxOpenFiles: MIN_OPEN_FILES });
}

export function openLog(dir: string, overrides: LogOverrides = {}): PartitionLog {
  return PartitionLog.open(dir, 't', 0, logOptions(overrides));
}

/** A record with a null key and a UTF-8 value. */
export function rec(value: string, timestamp?: number): RecordInput {
  return { key: null, value: Buffer.from(value), ...(timestamp === undefined ? {} : { timestamp }) };
}

/** `[offset, value]` pairs: compact to compare. */
export function pairs(records: readonly StoredRecord[]): [number, string | undefined][] {
  return records.map((r) => [r.offset, r.value?.toString()]);
}

/** Reads every record from `from` up to the high watermark, one small read at a time. */
export function readAll(log: PartitionLog, from = log.logStartOffset, maxRecords = 1000, maxBytes = 1 << 20): StoredRecord[] {
  const out: StoredRecord[] = [];
  let next = from;
  while (next < log.highWatermark) {
    const { records, nextOffset } = log.fetch(next, { maxBytes, maxRecords });
    if (nextOffset <= next) throw new Error(`fetch at ${next} did not move on, below the high watermark ${log.highWatermark}`);
    if (records.length > 0 && nextOffset <= records.at(-1)!.offset) throw new Error(`nextOffset ${nextOffset} is not past the last record`);
    out.push(...records);
    next = nextOffset;
  }
  return out;
}

/** Segment `.log` files of a partition directory, sorted. */
export function logFiles(dir: string): string[] {
  return fs.readdirSync(dir).filter((f) => f.endsWith('.log')).sort();
}

/** Path of the last (active) segment's `.log` file. */
export function activeLogPath(dir: string): string {
  const files = logFiles(dir);
  return path.join(dir, files[files.length - 1]!);
}

/** Where each batch of a segment file lies, parsed from the file itself. */
export interface BatchSpan {
  position: number;
  bytes: number;
  baseOffset: number;
  lastOffset: number;
}

export function batchSpans(file: string): BatchSpan[] {
  const data = fs.readFileSync(file);
  const out: BatchSpan[] = [];
  for (let pos = 0; pos < data.length; ) {
    const h = readBatchHeader(data, pos);
    const bytes = LOG_OVERHEAD + h.batchLength;
    out.push({ position: pos, bytes, baseOffset: h.baseOffset, lastOffset: h.baseOffset + h.lastOffsetDelta });
    pos += bytes;
  }
  return out;
}

export { codeOf } from '../helpers/errors.js';

/** Releases the fdatasyncs the last {@link holdSyncs} holds. */
let releaseLastHeld = () => {};

/** Lets every fdatasync still held by {@link holdSyncs} go, so a failed test's logs can still close; for an afterEach. */
export function releaseHeldSyncs(): void {
  releaseLastHeld();
}

/**
 * Holds fdatasync calls until released: `count` of calls so far, `held` waiting, `releaseAll()` lets them go.
 * Restore with `vi.restoreAllMocks()`.
 */
export function holdSyncs() {
  const real = fs.fdatasync;
  const pending: Array<() => void> = [];
  vi.spyOn(fs, 'fdatasync').mockImplementation(((fd: number, cb: (err: NodeJS.ErrnoException | null) => void) => {
    pending.push(() => real(fd, cb));
  }) as typeof fs.fdatasync);
  const releaseAll = () => {
    for (const go of pending.splice(0)) go();
  };
  releaseLastHeld = releaseAll;
  return {
    get count() {
      return (fs.fdatasync as unknown as { mock: { calls: unknown[] } }).mock.calls.length;
    },
    get held() {
      return pending.length;
    },
    releaseAll,
  };
}

/**
 * The record browser (the console's records page, `GET /topics/:topic/records`): a page of one partition's records
 * read through the log's own read path, from an offset, from a timestamp (the log's offset for it) or the newest;
 * a key search (exact or prefix) reads at most `maxScanRecords` records and says which offsets it read and where to
 * go on; values are cut past `maxValueBytes`. Every bound is checked first, with an error naming what is allowed.
 */
import { OnelogError } from '../protocol/errors.js';
import { KEY_MATCHES, RECORD_PAGE_LIMITS } from '../protocol/record-pages.js';
import type { KeyMatch, PageRecord, RecordPage, RecordPageRequest } from '../protocol/record-pages.js';
import type { StoredRecord } from '../protocol/types.js';
import { checkInteger, checkOneOf } from '../protocol/validate.js';
import type { Logs } from '../log/logs.js';
import type { Partition } from '../log/partition.js';

/** One read of the log while scanning: at most this many records and bytes (the first batch always fits). */
const CHUNK = { maxRecords: 1000, maxBytes: 1024 * 1024 };

/** A request with its defaults applied and its bounds checked. */
interface CheckedRequest {
  start: { offset: number } | { timestamp: number } | 'newest';
  limit: number;
  key: { bytes: Buffer; match: KeyMatch } | null;
  /** Most records read: `limit` without a key, `maxScanRecords` with one. */
  scanRecords: number;
  maxValueBytes: number;
}

/** Pages of a partition's records, read through {@link Logs} (either engine); the broker's facade serves it as `browseRecords`. */
export class RecordBrowser {
  /** @param logs the broker's log store, whose partitions it reads */
  constructor(private readonly logs: Logs) {}

  /**
   * A page of a partition's records, oldest first (see {@link RecordPageRequest}). The caller brings the partition up
   * to date first (cluster mode).
   * @throws OnelogError `UNKNOWN_TOPIC`, `UNKNOWN_PARTITION`; `INVALID_REQUEST` (more than one of offset, timestamp and
   *   newest; a limit, scan bound, value bound or key out of its bounds; `keyMatch` without `key`); `INVALID_OFFSET`
   *   (an offset that is not an integer >= 0); `OFFSET_OUT_OF_RANGE` (an offset below the log start offset or above
   *   the high watermark, naming both)
   */
  async page(request: RecordPageRequest): Promise<RecordPage> {
    const checked = checkRequest(request);
    const log = this.logs.get(request.topic, request.partition);
    const from = await startOffset(log, checked);
    const { limit, key } = checked;
    const matches: PageRecord[] = [];
    // The newest matches are the last ones of the window; forward, the first `limit` fill the page.
    const keepLast = checked.start === 'newest';
    let offset = from;
    let scanned = 0;
    scan: for (;;) {
      const before = offset;
      const read = await log.fetch(offset, { maxRecords: Math.min(CHUNK.maxRecords, checked.scanRecords - scanned), maxBytes: CHUNK.maxBytes });
      for (const r of read.records) {
        scanned++;
        offset = r.offset + 1;
        if (key !== null && !keyMatches(r, key.bytes, key.match)) continue;
        matches.push(cutValue(r, checked.maxValueBytes));
        if (keepLast && matches.length >= 2 * limit) matches.splice(0, matches.length - limit);
        if (!keepLast && matches.length === limit) break scan;
      }
      offset = Math.max(offset, read.nextOffset);
      if (scanned >= checked.scanRecords || offset >= log.highWatermark || offset === before) break;
    }
    const records = keepLast ? matches.slice(-limit) : matches;
    const searchedAll = keepLast ? from <= log.logStartOffset : offset >= log.highWatermark;
    return {
      topic: log.topic, partition: log.partition, logStartOffset: log.logStartOffset, highWatermark: log.highWatermark,
      records,
      scanned: { fromOffset: from, toOffset: offset, records: scanned },
      scanLimitReached: key !== null && scanned >= checked.scanRecords && records.length < limit && !searchedAll,
      nextOffset: offset,
    };
  }
}

/** Where the page's scan starts: the offset given, the log's offset for the timestamp, or the newest window's start. */
async function startOffset(log: Partition, checked: CheckedRequest): Promise<number> {
  const { start } = checked;
  if (start === 'newest') return Math.max(log.logStartOffset, log.highWatermark - checked.scanRecords);
  if ('offset' in start) return start.offset;
  return log.offsetForTimestamp(start.timestamp);
}

function keyMatches(r: StoredRecord, key: Buffer, match: KeyMatch): boolean {
  if (r.key === null) return false;
  if (match === 'exact') return r.key.equals(key);
  return r.key.length >= key.length && r.key.compare(key, 0, key.length, 0, key.length) === 0;
}

/** The record with its value cut to `maxValueBytes` (copied, so the batch it was read from is not held). */
function cutValue(r: StoredRecord, maxValueBytes: number): PageRecord {
  const valueBytes = r.value === null ? null : r.value.length;
  if (r.value === null || r.value.length <= maxValueBytes) return { ...r, valueBytes, valueTruncated: false };
  return { ...r, value: Buffer.from(r.value.subarray(0, maxValueBytes)), valueBytes, valueTruncated: true };
}

/** @throws OnelogError `INVALID_REQUEST`, `INVALID_OFFSET` naming the field and what is allowed */
function checkRequest(request: RecordPageRequest): CheckedRequest {
  const L = RECORD_PAGE_LIMITS;
  const given = (['offset', 'timestamp', 'newest'] as const).filter((f) => request[f] !== undefined && request[f] !== false);
  if (given.length > 1) {
    throw new OnelogError('INVALID_REQUEST', `a record page starts at one of offset, timestamp or newest, not ${given.join(' and ')}`, { given });
  }
  if (request.newest !== undefined && typeof request.newest !== 'boolean') {
    throw new OnelogError('INVALID_REQUEST', `newest must be true or false, got ${JSON.stringify(request.newest)}`, { newest: request.newest });
  }
  const limit = checkInteger(request.limit ?? L.defaultLimit, 'limit', 1, L.maxLimit);
  const maxValueBytes = checkInteger(request.maxValueBytes ?? L.defaultValueBytes, 'maxValueBytes', 0);
  if (limit * maxValueBytes > L.maxPageValueBytes) {
    const most = Math.floor(L.maxPageValueBytes / limit);
    throw new OnelogError('INVALID_REQUEST', `maxValueBytes ${maxValueBytes} with limit ${limit} could answer more than ${L.maxPageValueBytes} bytes ` +
      `of values (64 MiB): at limit ${limit} give at most ${most} bytes, or ask for fewer records`, { maxValueBytes, limit, maxPageValueBytes: L.maxPageValueBytes });
  }
  let key: CheckedRequest['key'] = null;
  if (request.key !== undefined) {
    if (!Buffer.isBuffer(request.key) || request.key.length === 0 || request.key.length > L.maxKeyBytes) {
      throw new OnelogError('INVALID_REQUEST', `a key to search for must be 1 to ${L.maxKeyBytes} bytes`, { keyBytes: Buffer.isBuffer(request.key) ? request.key.length : null });
    }
    key = { bytes: request.key, match: checkOneOf(request.keyMatch ?? 'exact', 'keyMatch', KEY_MATCHES) };
  } else if (request.keyMatch !== undefined) {
    throw new OnelogError('INVALID_REQUEST', `keyMatch ${JSON.stringify(request.keyMatch)} needs a key to search for`, { keyMatch: request.keyMatch });
  }
  const maxScanRecords = checkInteger(request.maxScanRecords ?? L.defaultScanRecords, 'maxScanRecords', 1, L.maxScanRecords);
  const start = request.offset !== undefined ? { offset: checkInteger(request.offset, 'offset', 0, Number.MAX_SAFE_INTEGER, 'INVALID_OFFSET') }
    : request.timestamp !== undefined ? { timestamp: checkInteger(request.timestamp, 'timestamp', 0) }
      : 'newest' as const;
  return { start, limit, key, scanRecords: key === null ? limit : maxScanRecords, maxValueBytes };
}

/**
 * How a read turns stored batches into an answer, the same on every log engine (the segment files, objects) and in the
 * client that decodes a binary fetch's batches: an engine finds the whole batches from the one holding an offset (a segment's bytes, a ranged GET), and these rules
 * decide which records, or which whole batches, are answered and where the next read starts.
 */
import { batchSize, decodeRecordsOrEnd, readLastOffset, readRecordCount } from './record-batch.js';
import type { StoredRecord } from './types.js';

/** Where {@link takeRecords} stopped. */
export interface TakenRecords {
  /**
   * Where the next read starts: the first record left out when `maxRecords` cut a batch; the start of a corrupt
   * batch; else the offset after the last batch (past offsets compaction emptied), at most `end`.
   */
  nextOffset: number;
  /** True when `maxRecords` or a corrupt batch ended the answer before the end of `buf`. */
  cut: boolean;
}

/**
 * Decodes the whole batches `buf` holds, in order, appending to `records` those at or after `from` and below `end`,
 * until `records` holds `maxRecords`. A batch that cannot be decoded ends the answer before it when `records` holds
 * some already (so a corrupt batch never withholds the readable records before it); a read that starts at it gets its
 * error.
 * @param end the high watermark, or Infinity when the engine read nothing past it
 * @throws OnelogError `CORRUPT_MESSAGE` naming the batch, when nothing precedes a batch that cannot be decoded
 */
export function takeRecords(buf: Buffer, from: number, end: number, maxRecords: number, records: StoredRecord[]): TakenRecords {
  let next = from;
  for (let pos = 0; pos < buf.length; pos += batchSize(buf, pos)) {
    const batch = decodeRecordsOrEnd(buf, pos, records.length);
    if (batch === undefined) return { nextOffset: next, cut: true };
    for (const r of batch) {
      if (r.offset < from || r.offset >= end) continue;
      if (records.length === maxRecords) return { nextOffset: r.offset, cut: true };
      records.push(r);
    }
    next = Math.min(readLastOffset(buf, pos) + 1, end);
  }
  return { nextOffset: next, cut: false };
}

/**
 * The whole batches of `buf`, from its first, that cover `maxRecords` records at or after `from` (header reads only,
 * nothing decoded: the binary data path answers batches as stored, and its reader trims the records before `from`).
 * @param end the high watermark, or Infinity when the engine read nothing past it
 * @returns the bytes those batches take, and the offset after the last of them (at most `end`); `from` when none
 */
export function coverRecords(buf: Buffer, from: number, end: number, maxRecords: number): { bytes: number; nextOffset: number } {
  let pos = 0;
  let records = 0;
  let next = from;
  while (pos < buf.length && records < maxRecords) {
    const lastOffset = readLastOffset(buf, pos);
    records += Math.min(lastOffset + 1 - from, readRecordCount(buf, pos));
    next = Math.min(lastOffset + 1, end);
    pos += batchSize(buf, pos);
  }
  return { bytes: pos, nextOffset: next };
}

/**
 * Reads records for `onelog produce` from a file or stdin: NDJSON (one JSON object per line) or CSV with a
 * header row (csv-parse), plain or gzip. The format comes from the extension (`.json`, `.ndjson`, `.jsonl`,
 * `.csv`, each optionally `.gz`) or from `--format` for stdin. Each row becomes a record:
 *
 * - value: the NDJSON line exactly as written; for CSV, a JSON object of the row (`{"column": "text"}`);
 * - key: the `--key-field` values joined with `|`, or null without `--key-field`;
 * - timestamp: the `--timestamp-field` value, ISO-8601 or epoch ms; default: the broker's clock.
 */
import fs from 'node:fs';
import readline from 'node:readline';
import { Transform } from 'node:stream';
import type { Readable } from 'node:stream';
import zlib from 'node:zlib';
import { parse } from 'csv-parse';
import type { ProduceRecord } from '../protocol/api.js';
import { OnelogError } from '../protocol/errors.js';
import { parseTimestamp } from '../protocol/json-records.js';

/** An input format. */
export type InputFormat = 'ndjson' | 'csv';

/** Where and how to read. */
export interface InputSpec {
  /** A path, or undefined / `-` for stdin. */
  file?: string;
  /** Required for stdin unless NDJSON; otherwise taken from the extension. */
  format?: InputFormat;
  /** gzip for stdin; otherwise from a `.gz` extension. */
  gzip?: boolean;
  keyFields: string[];
  timestampField?: string;
  /** Called with the count of input bytes read so far (compressed bytes for gzip files). */
  onBytes?: (bytes: number) => void;
}

/** The format a file name implies. @throws OnelogError `INVALID_REQUEST` for an unknown extension */
export function formatOf(file: string): { format: InputFormat; gzip: boolean } {
  const gzip = file.endsWith('.gz');
  const base = gzip ? file.slice(0, -3) : file;
  if (/\.(json|ndjson|jsonl)$/i.test(base)) return { format: 'ndjson', gzip };
  if (/\.csv$/i.test(base)) return { format: 'csv', gzip };
  throw new OnelogError(
    'INVALID_REQUEST',
    `cannot tell the format of ${file}: use .json, .ndjson, .jsonl or .csv (optionally .gz), or --format`,
    { file },
  );
}

function open(spec: InputSpec): { stream: Readable; format: InputFormat } {
  const fromStdin = spec.file === undefined || spec.file === '-';
  const implied = fromStdin ? { format: spec.format ?? 'ndjson', gzip: spec.gzip ?? false } : formatOf(spec.file!);
  const format = spec.format ?? implied.format;
  let raw: Readable = fromStdin ? process.stdin : fs.createReadStream(spec.file!);
  if (spec.onBytes) {
    let bytes = 0;
    const report = spec.onBytes;
    raw = raw.pipe(new Transform({
      transform(chunk: Buffer, _enc, done) {
        bytes += chunk.length;
        report(bytes);
        done(null, chunk);
      },
    }));
  }
  return { stream: implied.gzip ? raw.pipe(zlib.createGunzip()) : raw, format };
}

/** One input row, before it becomes a record. */
interface Row {
  line: number;
  value: string;
  fields: Record<string, unknown>;
}

async function* ndjsonRows(stream: Readable): AsyncGenerator<Row> {
  let line = 0;
  for await (const text of readline.createInterface({ input: stream, crlfDelay: Infinity })) {
    line++;
    if (text.trim() === '') continue;
    let fields: unknown;
    try {
      fields = JSON.parse(text);
    } catch (err) {
      throw new OnelogError('INVALID_RECORD', `line ${line} is not valid JSON: ${(err as Error).message}`, { line });
    }
    const isObject = typeof fields === 'object' && fields !== null && !Array.isArray(fields);
    yield { line, value: text, fields: isObject ? (fields as Record<string, unknown>) : {} };
  }
}

async function* csvRows(stream: Readable): AsyncGenerator<Row> {
  const parser = stream.pipe(parse({ columns: true, info: true, skip_empty_lines: true, bom: true }));
  for await (const { record, info } of parser as AsyncIterable<{ record: Record<string, string>; info: { lines: number } }>) {
    yield { line: info.lines, value: JSON.stringify(record), fields: record };
  }
}

function fieldText(row: Row, field: string, flag: string): string {
  const v = row.fields[field];
  if (v === undefined || v === null) {
    const known = Object.keys(row.fields).slice(0, 20).join(', ');
    throw new OnelogError('INVALID_RECORD', `line ${row.line} has no field ${JSON.stringify(field)} for ${flag}; its fields are ${known}`, {
      line: row.line, field,
    });
  }
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/**
 * Reads records one by one, in input order.
 * @throws OnelogError `INVALID_RECORD` naming the line of a row that is not JSON, lacks a key field or has
 *   a bad timestamp; rows before it have already been yielded
 */
export async function* readRecords(spec: InputSpec): AsyncGenerator<ProduceRecord> {
  const { stream, format } = open(spec);
  const rows = format === 'csv' ? csvRows(stream) : ndjsonRows(stream);
  for await (const row of rows) {
    const key = spec.keyFields.length === 0 ? null : spec.keyFields.map((f) => fieldText(row, f, '--key-field')).join('|');
    const record: ProduceRecord = { key: key === null ? null : Buffer.from(key, 'utf8'), value: Buffer.from(row.value, 'utf8') };
    if (spec.timestampField !== undefined) {
      record.timestamp = parseTimestamp(row.fields[spec.timestampField], `line ${row.line} field ${spec.timestampField}`);
    }
    yield record;
  }
}

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
import { pipeline, Transform } from 'node:stream';
import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
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

/**
 * The input as one stream of plain bytes. Built with `pipeline`, so a failure anywhere (a missing file, bad
 * gzip) ends iteration with that error instead of leaving an unhandled `error` event.
 */
function open(spec: InputSpec): { stream: Readable; format: InputFormat } {
  const fromStdin = spec.file === undefined || spec.file === '-';
  const gzip = fromStdin ? spec.gzip ?? false : spec.file!.endsWith('.gz');
  const format = spec.format ?? (fromStdin ? 'ndjson' : formatOf(spec.file!).format);
  const stages: Array<NodeJS.ReadableStream | NodeJS.ReadWriteStream> = [fromStdin ? process.stdin : fs.createReadStream(spec.file!)];
  if (spec.onBytes) {
    let bytes = 0;
    const report = spec.onBytes;
    stages.push(new Transform({
      transform(chunk: Buffer, _enc, done) {
        bytes += chunk.length;
        report(bytes);
        done(null, chunk);
      },
    }));
  }
  if (gzip) stages.push(zlib.createGunzip());
  if (stages.length === 1) return { stream: stages[0] as Readable, format };
  const stream = (pipeline as (...args: unknown[]) => Readable)(...stages, () => {});
  return { stream, format };
}

/** One input row, before it becomes a record. */
interface Row {
  line: number;
  value: string;
  fields: Record<string, unknown>;
}

/** Lines of a byte stream (UTF-8, `\n` or `\r\n`), each with its 1-based number; a stream error is thrown. */
async function* lines(stream: Readable): AsyncGenerator<{ line: number; text: string }> {
  const decoder = new StringDecoder('utf8');
  let pending = '';
  let line = 0;
  const emit = (text: string) => ({ line: ++line, text: text.endsWith('\r') ? text.slice(0, -1) : text });
  for await (const chunk of stream) {
    pending += decoder.write(chunk as Buffer);
    let nl: number;
    while ((nl = pending.indexOf('\n')) >= 0) {
      yield emit(pending.slice(0, nl));
      pending = pending.slice(nl + 1);
    }
  }
  pending += decoder.end();
  if (pending !== '') yield emit(pending);
}

async function* ndjsonRows(stream: Readable): AsyncGenerator<Row> {
  for await (const { line, text } of lines(stream)) {
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
  const parser = pipeline(stream, parse({ columns: true, info: true, skip_empty_lines: true, bom: true }), () => {});
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
/** A record read from the input and the line it came from. */
export interface InputRecord {
  record: ProduceRecord;
  line: number;
}

export async function* readRecords(spec: InputSpec): AsyncGenerator<InputRecord> {
  const { stream, format } = open(spec);
  const rows = format === 'csv' ? csvRows(stream) : ndjsonRows(stream);
  for await (const row of rows) {
    const key = spec.keyFields.length === 0 ? null : spec.keyFields.map((f) => fieldText(row, f, '--key-field')).join('|');
    const record: ProduceRecord = { key: key === null ? null : Buffer.from(key, 'utf8'), value: Buffer.from(row.value, 'utf8') };
    if (spec.timestampField !== undefined) {
      record.timestamp = parseTimestamp(row.fields[spec.timestampField], `line ${row.line} field ${spec.timestampField}`);
    }
    yield { record, line: row.line };
  }
}

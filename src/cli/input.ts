/**
 * Reads records for `onelog produce` from a file or stdin: NDJSON (one JSON object per line) or CSV with a
 * header row (papaparse), plain or gzip, in batches (one per chunk of input: no promise per row). The format
 * comes from the extension (`.json`, `.ndjson`, `.jsonl`, `.csv`, each optionally `.gz`) or from `--format` for
 * stdin. Each row becomes a record:
 *
 * - value: the NDJSON line exactly as written; for CSV, a JSON object of the row (`{"column": "text"}`);
 * - key: the `--key-field` values joined with `|`, or null without `--key-field`;
 * - timestamp: the `--timestamp-field` value, ISO-8601 or epoch ms; default: the producing clock's time.
 *
 * Records are text here (the key and value as strings): `onelog produce` writes them into its batches as UTF-8.
 */
import fs from 'node:fs';
import { pipeline, Transform } from 'node:stream';
import type { Readable } from 'node:stream';
import zlib from 'node:zlib';
import Papa from 'papaparse';
import { OnelogError } from '../protocol/errors.js';
import { parseTimestamp } from '../protocol/json-records.js';
import type { ValueWriter } from '../protocol/record-batch.js';
import { jsonString } from './json-text.js';

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

/** One input row, before it becomes a record: its fields as an object (NDJSON) or as values by column (CSV). */
interface Row {
  line: number;
  value: string | CsvRowJson;
  fields: Record<string, unknown> | { columns: ReadonlyMap<string, number>; values: string[] };
}

/** The value of `field` in `row`, or undefined. */
function fieldOf(row: Row, field: string): unknown {
  const f = row.fields;
  if (!(f.columns instanceof Map)) return (f as Record<string, unknown>)[field];
  const i = f.columns.get(field);
  return i === undefined ? undefined : (f.values as string[])[i];
}

/** Most CSV rows parsed ahead of the reader; past it the input pauses (a small live set keeps GC pauses short). */
const HIGH_WATER_ROWS = 500;

/** Lines of a byte stream (UTF-8, `\n` or `\r\n`) a chunk at a time, each with its 1-based number; a stream error is thrown. */
async function* lineBatches(stream: Readable): AsyncGenerator<Array<{ line: number; text: string }>> {
  stream.setEncoding('utf8');
  let pending = '';
  let line = 0;
  const emit = (text: string) => ({ line: ++line, text: text.endsWith('\r') ? text.slice(0, -1) : text });
  for await (const chunk of stream) {
    pending += chunk as string;
    const batch: Array<{ line: number; text: string }> = [];
    let start = 0;
    let nl: number;
    while ((nl = pending.indexOf('\n', start)) >= 0) {
      batch.push(emit(pending.slice(start, nl)));
      start = nl + 1;
    }
    pending = pending.slice(start);
    if (batch.length > 0) yield batch;
  }
  if (pending !== '') yield [emit(pending)];
}

async function* ndjsonRows(stream: Readable): AsyncGenerator<Row[]> {
  for await (const lines of lineBatches(stream)) {
    const rows: Row[] = [];
    for (const { line, text } of lines) {
      if (text.trim() === '') continue;
      let fields: unknown;
      try {
        fields = JSON.parse(text);
      } catch (err) {
        // The rows before it are kept: yielded first.
        if (rows.length > 0) yield rows;
        throw new OnelogError('INVALID_RECORD', `line ${line} is not valid JSON: ${(err as Error).message}`, { line });
      }
      const isObject = typeof fields === 'object' && fields !== null && !Array.isArray(fields);
      rows.push({ line, value: text, fields: isObject ? (fields as Record<string, unknown>) : {} });
    }
    yield rows;
  }
}

/**
 * Counts lines of the text a parser consumed: {@link lineAt} answers the line on which the text before an offset
 * ends. Offsets only grow, so chunks before the last one asked about are dropped.
 */
class LineCounter {
  private readonly chunks: string[] = [];
  /** Offset of chunks[0] in the whole text, and where counting stopped in it. */
  private chunkStart = 0;
  private at = 0;
  private newlines = 0;

  add(chunk: string): void {
    this.chunks.push(chunk);
  }

  /** 1 + the newlines in the text before `offset - 1`: the line of the character just before `offset`. */
  lineAt(offset: number): number {
    const until = offset - 1;
    while (this.chunks.length > 0 && this.chunkStart + this.at < until) {
      const chunk = this.chunks[0]!;
      const end = Math.min(chunk.length, until - this.chunkStart);
      for (let i = chunk.indexOf('\n', this.at); i >= 0 && i < end; i = chunk.indexOf('\n', i + 1)) this.newlines++;
      this.at = end;
      if (end < chunk.length) break;
      this.chunks.shift();
      this.chunkStart += chunk.length;
      this.at = 0;
    }
    return this.newlines + 1;
  }
}

/**
 * CSV rows with a header row, as papaparse streams them (comma-separated, `"` quotes, blank lines skipped, a BOM
 * dropped, rows ending all in LF or all in CRLF, as the first line does); each row's value is the JSON object of
 * its columns in header order, and its line is the one it ends on.
 * @throws OnelogError `INVALID_RECORD` naming the line of a row with another number of fields than the header,
 *   or an unclosed quote
 */
async function* csvRows(stream: Readable): AsyncGenerator<Row[]> {
  const counter = new LineCounter();
  let first = true;
  stream.setEncoding('utf8');
  const text = (pipeline as (...args: unknown[]) => Readable)(stream, new Transform({
    decodeStrings: false,
    encoding: 'utf8',
    transform(chunk: string, _enc, done) {
      const t = first && chunk.charCodeAt(0) === 0xfeff ? chunk.slice(1) : chunk;
      first = false;
      counter.add(t);
      done(null, t);
    },
  }), () => {});

  let header: string[] | null = null;
  let names: Buffer[] = [];
  let columns = new Map<string, number>();
  let pending: Row[] = [];
  let failure: unknown = null;
  let ended = false;
  // Backpressure on the text stream, not the parser: papaparse's row positions (meta.cursor) restart after its own pause.
  let paused = false;
  let wake: (() => void) | null = null;
  const signal = () => {
    wake?.();
    wake = null;
  };
  const fail = (err: unknown) => {
    failure ??= err;
    signal();
  };
  Papa.parse<string[], Readable>(text, {
    delimiter: ',',
    quoteChar: '"',
    skipEmptyLines: true,
    step: (result) => {
      if (failure !== null) return;
      const line = counter.lineAt(result.meta.cursor);
      const quoteError = result.errors.find((e) => e.type === 'Quotes');
      if (quoteError) return fail(new OnelogError('INVALID_RECORD', `line ${line}: ${quoteError.message}`, { line }));
      const fields = result.data;
      if (header === null) {
        header = fields;
        names = header.map((h, i) => Buffer.from(`${i === 0 ? '{' : ','}${JSON.stringify(h)}:`, 'utf8'));
        // A repeated column name answers its last value, as the row's JSON object does.
        columns = new Map(header.map((h, i) => [h, i]));
        return;
      }
      if (fields.length !== header.length) {
        return fail(new OnelogError('INVALID_RECORD', `line ${line} has ${fields.length} fields, the header has ${header.length}`, { line }));
      }
      pending.push({ line, value: rowJson(header, names, fields), fields: { columns, values: fields } });
      if (pending.length >= HIGH_WATER_ROWS && !paused) {
        paused = true;
        text.pause();
        signal();
      }
    },
    complete: () => {
      ended = true;
      signal();
    },
    error: (err: Error) => fail(err),
  });

  for (;;) {
    if (pending.length === 0 && failure === null && !ended) await new Promise<void>((resolve) => (wake = resolve));
    if (pending.length > 0) {
      const rows = pending;
      pending = [];
      yield rows;
    }
    if (failure !== null) throw failure;
    if (ended && pending.length === 0) return;
    if (paused) {
      paused = false;
      text.resume();
    }
  }
}

/**
 * Whether `v` is written in JSON as it is between quotes: ASCII without `"`, `\` or control characters (then its JSON
 * string is `v.length + 2` bytes, one per character).
 */
function plainAscii(v: string): boolean {
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c < 0x20 || c === 0x22 || c === 0x5c || c >= 0x80) return false;
  }
  return true;
}

/**
 * A CSV row's value: the JSON object of its columns in header order, `{"column":"text",...}`, written by the produce
 * batch builder straight from the fields into the batch (no string of it is made: for the S&P file that string, its
 * concatenation and its UTF-8 length were a fifth of `onelog produce`'s time). `toString()` gives the same text.
 */
export class CsvRowJson implements ValueWriter {
  readonly byteLength: number;

  /** @param names each column's `"name":` (after a `,` but for the first) as UTF-8 bytes */
  constructor(private readonly names: readonly Buffer[], private readonly fields: readonly string[]) {
    let bytes = 1;
    for (let i = 0; i < fields.length; i++) {
      const v = fields[i]!;
      bytes += names[i]!.length + (plainAscii(v) ? v.length + 2 : Buffer.byteLength(jsonString(v), 'utf8'));
    }
    this.byteLength = fields.length === 0 ? 2 : bytes;
  }

  writeTo(buf: Buffer, pos: number): number {
    const { names, fields } = this;
    if (fields.length === 0) return pos + buf.write('{}', pos, 'latin1');
    for (let i = 0; i < fields.length; i++) {
      const name = names[i]!;
      for (let k = 0; k < name.length; k++) buf[pos++] = name[k]!;
      const v = fields[i]!;
      if (plainAscii(v)) {
        buf[pos++] = 0x22;
        for (let k = 0; k < v.length; k++) buf[pos++] = v.charCodeAt(k);
        buf[pos++] = 0x22;
      } else {
        pos += buf.write(jsonString(v), pos, 'utf8');
      }
    }
    buf[pos++] = 0x7d; // }
    return pos;
  }

  toString(): string {
    const bytes = Buffer.allocUnsafe(this.byteLength);
    this.writeTo(bytes, 0);
    return bytes.toString('utf8');
  }
}

/** A row as the JSON object of its columns (header order; a repeated column name keeps its last value, as an object would). */
function rowJson(header: string[], names: Buffer[], fields: string[]): string | CsvRowJson {
  if (new Set(header).size !== header.length) return JSON.stringify(Object.fromEntries(header.map((h, i) => [h, fields[i]])));
  return new CsvRowJson(names, fields);
}

function fieldText(row: Row, field: string, flag: string): string {
  const v = fieldOf(row, field);
  if (v === undefined || v === null) {
    const f = row.fields;
    const known = (f.columns instanceof Map ? [...f.columns.keys()] : Object.keys(f)).slice(0, 20).join(', ');
    throw new OnelogError('INVALID_RECORD', `line ${row.line} has no field ${JSON.stringify(field)} for ${flag}; its fields are ${known}`, {
      line: row.line, field,
    });
  }
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/**
 * A record as text: the key (the `--key-field` values joined, or null), the value (the NDJSON line, or a CSV row's
 * JSON object, which `toString()` gives as text), and the `--timestamp-field` time (ms).
 */
export interface TextRecord {
  key: string | null;
  value: string | CsvRowJson;
  timestamp?: number;
}

/** A record read from the input and the line it came from. */
export interface InputRecord {
  record: TextRecord;
  line: number;
}

/**
 * Reads records in input order, a batch (one chunk of input) at a time.
 * @throws OnelogError `INVALID_RECORD` naming the line of a row that is not JSON, lacks a key field, has a bad
 *   timestamp or (CSV) another number of fields than the header, once every row before it was yielded
 */
export async function* readRecordBatches(spec: InputSpec): AsyncGenerator<InputRecord[]> {
  const { stream, format } = open(spec);
  const batches = format === 'csv' ? csvRows(stream) : ndjsonRows(stream);
  for await (const rows of batches) {
    const records: InputRecord[] = [];
    try {
      for (const row of rows) {
        const { keyFields } = spec;
        const key = keyFields.length === 0 ? null
          : keyFields.length === 1 ? fieldText(row, keyFields[0]!, '--key-field') : keyFields.map((f) => fieldText(row, f, '--key-field')).join('|');
        const record: TextRecord = { key, value: row.value };
        if (spec.timestampField !== undefined) {
          record.timestamp = parseTimestamp(fieldOf(row, spec.timestampField), `line ${row.line} field ${spec.timestampField}`);
        }
        records.push({ record, line: row.line });
      }
    } catch (err) {
      if (records.length > 0) yield records;
      throw err;
    }
    if (records.length > 0) yield records;
  }
}

/**
 * Reads records one by one, in input order.
 * @throws as {@link readRecordBatches}; the rows before a bad one have been yielded
 */
export async function* readRecords(spec: InputSpec): AsyncGenerator<InputRecord> {
  for await (const batch of readRecordBatches(spec)) yield* batch;
}

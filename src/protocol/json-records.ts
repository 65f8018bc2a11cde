/**
 * Records in JSON, as the HTTP API carries them. Keys, values and header values are bytes; JSON carries
 * them as text in one of two encodings chosen per request:
 *
 * - `utf8` (default, for curl and simple clients): strings are UTF-8 text. A produced `value` that is any
 *   other JSON (object, number, ...) is stored as its JSON text.
 * - `base64`: strings are base64, so any bytes round-trip (the TypeScript client uses this).
 *
 * Headers are a JSON object `{ name: value }`; a record with a repeated header name shows the last value.
 */
import { OnelogError } from './errors.js';
import type { RecordHeader, StoredRecord } from './types.js';

/** How bytes are written as JSON strings. */
export type BytesEncoding = 'utf8' | 'base64';
export const BYTES_ENCODINGS: readonly BytesEncoding[] = ['utf8', 'base64'];

/** A record as JSON. */
export interface JsonRecord {
  offset: number;
  timestamp: number;
  key: string | null;
  value: string | null;
  headers: Record<string, string | null>;
}

/** A record to produce, as JSON. */
export interface JsonProduceRecord {
  key?: string | null;
  value?: unknown;
  headers?: Record<string, string | null>;
  /** ms since the epoch, or an ISO-8601 string */
  timestamp?: number | string;
  partition?: number;
}

/** Characters outside base64's alphabet (padding aside); a class, no repetition, so any length is checked without backtracking. */
const NOT_BASE64 = /[^A-Za-z0-9+/]/;

/** Whether `text` is canonical base64: groups of 4 of the alphabet, the last with at most 2 `=` of padding. */
function isBase64(text: string): boolean {
  if (text.length % 4 !== 0) return false;
  const padding = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  return !NOT_BASE64.test(padding === 0 ? text : text.slice(0, -padding));
}

/** Bytes as a JSON string (null stays null). */
export function bytesToJson(bytes: Buffer | null, encoding: BytesEncoding): string | null {
  return bytes === null ? null : bytes.toString(encoding);
}

/**
 * A JSON field back to bytes. `undefined` and `null` give null; with `utf8`, a non-string value becomes its
 * JSON text when `allowJson` is set.
 * @throws OnelogError `INVALID_RECORD` naming the field
 */
export function jsonToBytes(value: unknown, encoding: BytesEncoding, field: string, allowJson = false): Buffer | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string') {
    // Node's base64 decoder skips what it cannot read: check first, so bad input is refused, not stored changed.
    if (encoding === 'base64' && !isBase64(value)) {
      throw new OnelogError('INVALID_RECORD', `${field} is not valid base64 (encoding base64)`, { field });
    }
    return Buffer.from(value, encoding);
  }
  if (allowJson && encoding === 'utf8') return Buffer.from(JSON.stringify(value), 'utf8');
  throw new OnelogError('INVALID_RECORD', `${field} must be a string or null with encoding ${encoding}`, { field });
}

/** Headers as a JSON object. */
export function headersToJson(headers: readonly RecordHeader[], encoding: BytesEncoding): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  for (const h of headers) out[h.key] = bytesToJson(h.value, encoding);
  return out;
}

/** A JSON headers object back to headers. @throws OnelogError `INVALID_RECORD` */
export function jsonToHeaders(headers: unknown, encoding: BytesEncoding, field: string): RecordHeader[] {
  if (headers === undefined || headers === null) return [];
  if (typeof headers !== 'object' || Array.isArray(headers)) {
    throw new OnelogError('INVALID_RECORD', `${field} must be an object of name to string or null`, { field });
  }
  return Object.entries(headers).map(([key, v]) => ({ key, value: jsonToBytes(v, encoding, `${field}.${key}`) }));
}

/** A stored record as JSON. */
export function recordToJson(r: StoredRecord, encoding: BytesEncoding): JsonRecord {
  return {
    offset: r.offset,
    timestamp: r.timestamp,
    key: bytesToJson(r.key, encoding),
    value: bytesToJson(r.value, encoding),
    headers: headersToJson(r.headers, encoding),
  };
}

/** A JSON record back to a stored record. */
export function jsonToRecord(r: JsonRecord, encoding: BytesEncoding): StoredRecord {
  return {
    offset: r.offset,
    timestamp: r.timestamp,
    key: jsonToBytes(r.key, encoding, 'key'),
    value: jsonToBytes(r.value, encoding, 'value'),
    headers: jsonToHeaders(r.headers, encoding, 'headers'),
  };
}

/**
 * A timestamp given as epoch ms or as an ISO-8601 string, to epoch ms.
 * @param code the error code for a bad value: `INVALID_RECORD` for a record's timestamp (default),
 *   `INVALID_REQUEST` for a flag
 * @throws OnelogError naming the field and the value
 */
export function parseTimestamp(value: unknown, field: string, code: 'INVALID_RECORD' | 'INVALID_REQUEST' = 'INVALID_RECORD'): number {
  if (typeof value === 'number' && Number.isSafeInteger(value)) return value;
  if (typeof value === 'string') {
    if (/^-?\d+$/.test(value)) return Number(value);
    const ms = Date.parse(value);
    if (!Number.isNaN(ms)) return ms;
  }
  throw new OnelogError(
    code,
    `${field} must be epoch milliseconds or an ISO-8601 date-time, got ${JSON.stringify(value)}`,
    { field, value },
  );
}

/**
 * Request and response headers. A request header is v1 (api key, api version, correlation id, client id) or,
 * for a flexible request version, v2 (the same, then tagged fields; the client id stays a classic nullable
 * string). A response header is the correlation id, then tagged fields for a flexible version (v1), except
 * ApiVersions, whose response header is always v0 so a client can read it whatever version it asked for.
 */
import type { ByteReader, ByteWriter } from './bytes.js';

export interface RequestHeader {
  apiKey: number;
  apiVersion: number;
  correlationId: number;
  clientId: string | null;
}

/** Reads the fixed part of a request header (v1); {@link skipHeaderTags} reads v2's tagged fields. */
export function readRequestHeader(r: ByteReader): RequestHeader {
  const apiKey = r.int16();
  const apiVersion = r.int16();
  const correlationId = r.int32();
  const n = r.int16();
  const clientId = n < 0 ? null : r.bytes(n).toString('utf8');
  return { apiKey, apiVersion, correlationId, clientId };
}

/** Skips a v2 request header's tagged fields (onelog reads none). */
export function skipHeaderTags(r: ByteReader): void {
  for (let n = r.uvarint(); n > 0; n--) {
    r.uvarint();
    r.bytes(r.uvarint());
  }
}

/** Writes a response header: v0 (correlation id) or v1 (then no tagged fields). */
export function writeResponseHeader(w: ByteWriter, correlationId: number, flexible: boolean): void {
  w.int32(correlationId);
  if (flexible) w.uvarint(0);
}

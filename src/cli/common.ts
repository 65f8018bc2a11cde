/**
 * What every CLI command shares: the server address (`--server URL`, env `ONELOG_URL`, default
 * `http://127.0.0.1:7070`), flag parsing with clear errors, tables, and error output (code, message and
 * context on stderr, exit code 1).
 */
import type { Command } from 'commander';
import type { BinaryApi } from '../client/binary-api.js';
import { HttpApi, defaultServerUrl } from '../client/http-api.js';
import type { HttpApiOptions } from '../client/http-api.js';
import { readTlsFiles } from '../client/connection.js';
import type { GroupDescription } from '../protocol/groups.js';
import { OnelogError } from '../protocol/errors.js';
import { redactUrl } from '../protocol/urls.js';

/** The client options of `--server`, `--token`, `--ca`, `--cert`, `--key` (else env ONELOG_URL, ONELOG_TOKEN, ONELOG_CA, ...). */
function clientOptions(command: Command): [string, HttpApiOptions] {
  const { server, token, ca, cert, key } = command.optsWithGlobals<{ server?: string; token?: string; ca?: string; cert?: string; key?: string }>();
  const flags = ca !== undefined || cert !== undefined || key !== undefined;
  return [server ?? defaultServerUrl(), {
    ...(token !== undefined ? { token } : {}),
    ...(flags ? { tls: readTlsFiles({ ca: ca ?? process.env.ONELOG_CA, cert: cert ?? process.env.ONELOG_CERT, key: key ?? process.env.ONELOG_KEY }) } : {}),
  }];
}

/**
 * The API of the server named by `--server` (or `ONELOG_URL`), as the user of `--token` (or `ONELOG_TOKEN`), with
 * the TLS files of `--ca`, `--cert`, `--key` (or `ONELOG_CA`, `ONELOG_CERT`, `ONELOG_KEY`).
 * @throws OnelogError `INVALID_REQUEST` for a bad URL or an unreadable TLS file
 */
export function apiFor(command: Command): HttpApi {
  return new HttpApi(...clientOptions(command));
}

/**
 * As {@link apiFor}, with produce, fetch and commit on the binary data path (a WebSocket: `close()` it when done).
 * Loaded on use: the commands that do not move records do not load the WebSocket client.
 */
export async function binaryApiFor(command: Command): Promise<BinaryApi> {
  const { BinaryApi } = await import('../client/binary-api.js');
  return new BinaryApi(...clientOptions(command));
}

/** The group's description, or undefined when the group does not exist (other errors pass). */
export async function describeGroupIfAny(api: HttpApi, groupId: string): Promise<GroupDescription | undefined> {
  return api.describeGroup(groupId).catch((err: unknown) => {
    if ((err as OnelogError).code === 'UNKNOWN_GROUP') return undefined;
    throw err;
  });
}

/**
 * An integer flag value.
 * @throws OnelogError `INVALID_REQUEST` naming the flag
 */
export function parseInteger(flag: string, min = Number.MIN_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    const n = Number(value);
    if (!/^-?\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < min || n > max) {
      const range = min === Number.MIN_SAFE_INTEGER ? 'an integer' : max === Number.MAX_SAFE_INTEGER ? `an integer >= ${min}` : `an integer from ${min} to ${max}`;
      throw new OnelogError('INVALID_REQUEST', `${flag} must be ${range}, got ${JSON.stringify(value)}`);
    }
    return n;
  };
}

/** Prints rows as an aligned table with a header line; `null` shows as `-`. */
export function printTable(headers: string[], rows: Array<Array<string | number | null>>): void {
  const cells = [headers, ...rows.map((r) => r.map((c) => (c === null ? '-' : String(c))))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => r[i]!.length)));
  for (const r of cells) console.log(r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd());
}

/**
 * Prints an error with its code and context on stderr. System and library errors that carry a code (ENOENT,
 * EADDRINUSE, Z_DATA_ERROR, CSV_...) print as `error CODE: message` too; only an error without a code shows
 * its stack, since that is a bug to report. Every URL's credentials are cut out of all of it ({@link redactUrl}):
 * a library's message may quote a URL it was given, password and all.
 */
export function reportError(err: unknown): void {
  const write = (text: string) => process.stderr.write(redactUrl(text));
  if (err instanceof OnelogError) {
    write(`error ${err.code}: ${err.message}\n`);
    if (Object.keys(err.context).length > 0) write(`  context: ${JSON.stringify(err.context)}\n`);
  } else if (typeof (err as { code?: unknown })?.code === 'string') {
    write(`error ${(err as { code: string }).code}: ${(err as Error).message}\n`);
  } else {
    write(`error: ${(err as Error)?.stack ?? String(err)}\n`);
  }
}

/** Wraps a command action: errors are reported and set exit code 1. */
export function action<A extends unknown[]>(fn: (...args: A) => Promise<void>): (...args: A) => Promise<void> {
  return async (...args: A) => {
    try {
      await fn(...args);
    } catch (err) {
      reportError(err);
      process.exitCode = 1;
    }
  };
}

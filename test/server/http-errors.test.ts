/**
 * Every error the HTTP server answers carries a code of onelog's registry, never fastify's own (`FST_ERR_BAD_URL`)
 * nor its code-less `{ error, message, statusCode }`: bytes sent over a real socket to a server as `onelog serve`
 * builds it (malformed percent-escapes and over-long names in the path, bad content types, bad JSON, oversized
 * bodies and headers, mismatched or contradictory lengths, bytes that are not HTTP), as a table and fast-check.
 */
import net from 'node:net';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ERRORS } from '../../src/protocol/errors.js';
import { serveSecured } from '../helpers/secured-broker.js';

const CODES = new Set(Object.keys(ERRORS));

/** Sends `bytes` on a new connection, half-closes it, and resolves with everything the server wrote before closing. */
function exchange(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', (err) => (chunks.length > 0 ? resolve(Buffer.concat(chunks).toString('latin1')) : reject(err)));
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    socket.end(bytes, 'latin1');
  });
}

/** The status and JSON body of the first response in `raw`. */
function parse(raw: string): { status: number; body: Record<string, unknown> } {
  const head = /^HTTP\/1\.1 (\d{3}) /.exec(raw);
  expect(head, raw.slice(0, 200)).not.toBeNull();
  const at = raw.indexOf('\r\n\r\n');
  const length = Number(/\r\ncontent-length: *(\d+)/i.exec(raw.slice(0, at))?.[1]);
  return { status: Number(head![1]), body: JSON.parse(raw.slice(at + 4, at + 4 + length)) as Record<string, unknown> };
}

/** A request's bytes: `Connection: close` so the server ends the connection after its answer. */
function request(method: string, target: string, headers: Record<string, string> = {}, body = ''): string {
  const lines = Object.entries({ host: 'x', connection: 'close', ...headers }).map(([k, v]) => `${k}: ${v}\r\n`).join('');
  return `${method} ${target} HTTP/1.1\r\n${lines}\r\n${body}`;
}

const json = (body: string, headers: Record<string, string> = {}) => ({ 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body, 'latin1')), ...headers });

/** Each case and the code and status it must get. */
const CASES: Array<{ name: string; bytes: string; code: string; status: number }> = [
  { name: 'a lone % in the path', bytes: request('GET', '/%'), code: 'INVALID_REQUEST', status: 400 },
  { name: 'a cut UTF-8 escape in a topic', bytes: request('GET', '/topics/%E0%A4%A'), code: 'INVALID_REQUEST', status: 400 },
  { name: 'a bad escape in a group of a POST', bytes: request('POST', '/groups/%zz/offsets', json('{}'), '{}'), code: 'INVALID_REQUEST', status: 400 },
  { name: 'a name longer than 4096 characters', bytes: request('GET', `/topics/${'a'.repeat(5000)}`), code: 'INVALID_REQUEST', status: 400 },
  { name: 'JSON that is not', bytes: request('POST', '/topics', json('{x}'), '{x}'), code: 'INVALID_REQUEST', status: 400 },
  { name: 'an empty JSON body', bytes: request('POST', '/topics', json('')), code: 'INVALID_REQUEST', status: 400 },
  { name: 'no content type', bytes: request('POST', '/topics', { 'content-length': '2' }, '{}'), code: 'INVALID_REQUEST', status: 400 },
  { name: 'an unknown content type', bytes: request('POST', '/topics', { 'content-type': 'application/x-what', 'content-length': '2' }, '{}'), code: 'INVALID_REQUEST', status: 400 },
  { name: 'a body above --max-body-bytes', bytes: request('POST', '/topics', json('x'.repeat(2048)), 'x'.repeat(2048)), code: 'REQUEST_TOO_LARGE', status: 413 },
  { name: 'a content-length longer than the body', bytes: request('POST', '/topics', { 'content-type': 'application/json', 'content-length': '10' }, '{}'), code: 'INVALID_REQUEST', status: 400 },
  { name: 'a content-length that is not a number', bytes: request('POST', '/topics', { 'content-type': 'application/json', 'content-length': 'abc' }, '{}'), code: 'INVALID_REQUEST', status: 400 },
  { name: 'both transfer-encoding and content-length', bytes: request('POST', '/topics', json('{}', { 'transfer-encoding': 'chunked' }), '2\r\n{}\r\n0\r\n\r\n'), code: 'INVALID_REQUEST', status: 400 },
  { name: 'headers above 16 KiB', bytes: request('GET', '/topics', { 'x-big': 'a'.repeat(20_000) }), code: 'REQUEST_TOO_LARGE', status: 431 },
  { name: 'bytes that are not HTTP', bytes: 'GARBAGE\r\n\r\n', code: 'INVALID_REQUEST', status: 400 },
  { name: 'an unknown route', bytes: request('OPTIONS', '/topics'), code: 'NOT_FOUND', status: 404 },
];

describe('HTTP errors carry registry codes', () => {
  it('answers each malformed request with its registry code and no FST_ code', async () => {
    const served = await serveSecured({ server: { limits: { maxBodyBytes: 1024 } } });
    const port = Number(new URL(served.url).port);
    for (const c of CASES) {
      const raw = await exchange(port, c.bytes);
      expect(raw, c.name).not.toMatch(/FST_|"statusCode"/);
      expect({ name: c.name, ...parse(raw) }).toMatchObject({ name: c.name, status: c.status, body: { code: c.code } });
    }
  });

  it('a request not received in time is REQUEST_TIMED_OUT, 408, as node reports it', async () => {
    const served = await serveSecured();
    const port = Number(new URL(served.url).port);
    // Node checks request timeouts every 30 s: its report (the clientError event) is raised on a real connection here.
    const raw = new Promise<string>((resolve) => {
      served.app.server.once('connection', (socket: net.Socket) => {
        socket.once('data', () => served.app.server.emit('clientError', Object.assign(new Error('Request timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }), socket));
      });
      const client = net.connect(port, '127.0.0.1', () => client.write('POST /topics HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n{'));
      const chunks: Buffer[] = [];
      client.on('data', (chunk) => chunks.push(chunk));
      client.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    });
    expect(parse(await raw)).toMatchObject({ status: 408, body: { code: 'REQUEST_TIMED_OUT' } });
  });

  it('fast-check: any path, method, content type and body is answered with a registry code', async () => {
    const served = await serveSecured({ server: { limits: { maxBodyBytes: 4096 } } });
    const port = Number(new URL(served.url).port);
    const escape = fc.oneof(
      fc.constantFrom('%', '%E0', '%E0%A4%A', '%zz', '%%', '%0', '%C3%28', '%ED%A0%80', '%FF', '%00', '%2F', '%F0%9F%92'),
      fc.stringMatching(/^%[0-9A-Fa-f]{0,2}$/),
    );
    const segment = fc.oneof(fc.stringMatching(/^[A-Za-z0-9._-]{0,12}$/), escape, fc.tuple(fc.stringMatching(/^[a-z]{0,4}$/), escape).map(([a, b]) => a + b));
    const path = fc.tuple(
      fc.constantFrom('/topics', '/topics/t', '/groups', '/groups/g', '/users', '/acls', '/alerts', '/', ''),
      fc.array(segment, { maxLength: 3 }),
      fc.constantFrom('', '/records', '/fetch', '/subscriptions', '/offsets', '/stream', '/config'),
    ).map(([base, segments, tail]) => `${base}/${segments.join('/')}${tail}`);
    const contentType = fc.constantFrom(undefined, 'application/json', 'text/plain', 'application/octet-stream', '', 'application/json; charset=latin1', 'multipart/form-data; boundary=x');
    const body = fc.oneof(fc.constant(''), fc.constantFrom('{}', '{x}', '[]', 'null', '{"topic":"t","partitions":1}', '{"a":'), fc.string({ maxLength: 64 }), fc.constant('y'.repeat(5000)));
    await fc.assert(fc.asyncProperty(fc.constantFrom('GET', 'POST', 'DELETE', 'PUT', 'PATCH'), path, contentType, body,
      fc.constantFrom('exact', 'short', 'long'), async (method, target, type, payload, lengthIs) => {
        const length = Buffer.byteLength(payload, 'latin1') + (lengthIs === 'short' ? -1 : lengthIs === 'long' ? 3 : 0);
        const headers: Record<string, string> = { 'content-length': String(Math.max(0, length)), ...(type === undefined ? {} : { 'content-type': type }) };
        const raw = await exchange(port, request(method, target, headers, payload));
        if (raw === '') return; // the connection closed unanswered (a request cut short by its own length is not one)
        expect(raw).not.toMatch(/FST_|"statusCode"/);
        const { status, body: answered } = parse(raw);
        if (status >= 400) expect(CODES.has(answered.code as string), `${method} ${target}: ${JSON.stringify(answered)}`).toBe(true);
      }), { numRuns: Number(process.env.ONELOG_FUZZ_RUNS ?? 150) });
  });
});

/**
 * HTTP answers written straight to a socket, for the connections fastify does not answer: a WebSocket upgrade
 * refused (bad path, bad headers, no token), a connection over the limit, a request node's HTTP parser refused. Each carries onelog's JSON error body
 * (`{ code, message, ...context }`) with the registry's HTTP status, as every route's error does.
 */
import { STATUS_CODES } from 'node:http';
import type net from 'node:net';
import type { Duplex } from 'node:stream';
import type { WebSocketServer } from 'ws';
import { OnelogError } from '../protocol/errors.js';

/**
 * `error` as a whole HTTP/1.1 response that closes the connection.
 * @param status the HTTP status, where HTTP has one more exact than the registry's (408, 431)
 * @default status the registry's, `error.httpStatus`
 */
export function httpErrorResponse(error: OnelogError, status = error.httpStatus): string {
  const body = JSON.stringify(error.toJSON());
  return `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\nconnection: close\r\n` +
    `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/** Answers an upgrade that will not be served with `error` ({@link httpErrorResponse}), then destroys its socket once written. */
export function refuseUpgrade(socket: Duplex, error: OnelogError): void {
  socket.on('error', () => socket.destroy());
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  socket.once('finish', () => socket.destroy());
  socket.end(httpErrorResponse(error));
}

/**
 * Makes `wss` answer a handshake it refuses (not GET, no `Upgrade: websocket`, a missing or bad
 * `Sec-WebSocket-Key`, `-Version`, `-Protocol` or `-Extensions`) with `INVALID_REQUEST` (400) in onelog's error
 * body, instead of ws's plain-text one.
 */
export function refuseBadHandshakes(wss: WebSocketServer): void {
  wss.on('wsClientError', (err, socket) => refuseUpgrade(socket, new OnelogError('INVALID_REQUEST',
    `not a WebSocket handshake onelog takes: ${err.message}; send GET with Upgrade: websocket, Sec-WebSocket-Key and ` +
    'Sec-WebSocket-Version: 13 (docs/delivery.md)')));
}

/** Answers an HTTP client over the connection limit with `RESOURCE_EXHAUSTED` (503) and closes the connection. */
export function refuseHttpConnection(max: number): (socket: net.Socket) => void {
  const error = new OnelogError('RESOURCE_EXHAUSTED', `the server has ${max} connections open, its limit (serve --max-connections); retry later`,
    { resource: 'connections', limit: max });
  const response = httpErrorResponse(error);
  return (socket) => {
    socket.on('error', () => undefined);
    socket.setTimeout(5_000, () => socket.destroy());
    socket.resume(); // the request is not read
    socket.end(response);
  };
}

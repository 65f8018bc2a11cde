/**
 * The HTTP(S) requests of the client's JSON API, on node:http and node:https with keep-alive agents: the platform's
 * `fetch` and the undici package take 90 to 190 ms to load, more than a CLI command's whole work, while node:http
 * is part of Node's start-up snapshot.
 */
import http from 'node:http';
import https from 'node:https';
import type { ClientTls } from './connection.js';

/** An answer: its status, its headers (names in lower case) and its body as UTF-8 text ('' when empty). */
export interface HttpAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** A request's method, headers, body and how long it may take in all, ms (Infinity: no limit). */
export interface HttpRequestInit {
  method: 'GET' | 'POST' | 'DELETE';
  headers: Readonly<Record<string, string>>;
  /** JSON text, sent with its content-length; null: no body. */
  body: string | null;
  timeoutMs: number;
}

/** How long a connection may take to open before the request fails unsent, ms (as undici's connect timeout). */
const CONNECT_TIMEOUT_MS = 10_000;

/**
 * A request that got no answer. `code` is node's (`ECONNREFUSED`, `ECONNRESET`, `ENOTFOUND`, a TLS code such as
 * `ERR_TLS_CERT_ALTNAME_INVALID`), `ECONNECT_TIMEOUT` when the connection did not open within 10 s, `TIMEOUT` when
 * the whole request outlived its `timeoutMs`; `sent` says whether the request reached an open connection (false: the
 * server cannot have seen it, so it may go to another server whatever it does).
 */
export class RequestFailure extends Error {
  constructor(message: string, readonly code: string, readonly sent: boolean) {
    super(message);
    this.name = 'RequestFailure';
  }
}

/** A client's connections: one keep-alive agent for http:// servers, one with its TLS settings for https:// servers. */
export class HttpConnections {
  private plain: http.Agent | undefined;
  private secure: https.Agent | undefined;

  constructor(private readonly tls: ClientTls) {}

  /**
   * Sends one request and reads its whole answer.
   * @throws RequestFailure when no answer came (see its `code` and `sent`)
   */
  request(url: string, init: HttpRequestInit): Promise<HttpAnswer> {
    const target = new URL(url);
    const secure = target.protocol === 'https:';
    const agent = secure ? (this.secure ??= new https.Agent({ keepAlive: true, ...this.tls })) : (this.plain ??= new http.Agent({ keepAlive: true }));
    const headers = init.body === null ? init.headers : { ...init.headers, 'content-length': String(Buffer.byteLength(init.body)) };
    return new Promise<HttpAnswer>((resolve, reject) => {
      let connected = false;
      const timers: NodeJS.Timeout[] = [];
      // Unreferenced, as AbortSignal.timeout's: a request nothing is left to wait for ends the process (the CLI says so).
      const after = (ms: number, failure: () => RequestFailure) => setTimeout(() => req.destroy(failure()), ms).unref();
      const fail = (err: NodeJS.ErrnoException) => {
        timers.forEach(clearTimeout);
        reject(err instanceof RequestFailure ? err : new RequestFailure(err.message, err.code ?? 'ECONNRESET', connected));
      };
      const req = (secure ? https : http).request(target, { method: init.method, headers, agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          timers.forEach(clearTimeout);
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') });
        });
        res.on('error', fail);
      });
      req.on('socket', (socket) => {
        if (!socket.connecting) {
          connected = true; // a kept-alive connection
          return;
        }
        const connecting = after(CONNECT_TIMEOUT_MS, () =>
          new RequestFailure(`connect to ${target.host} timed out after ${CONNECT_TIMEOUT_MS} ms`, 'ECONNECT_TIMEOUT', false));
        timers.push(connecting);
        socket.once(secure ? 'secureConnect' : 'connect', () => {
          connected = true;
          clearTimeout(connecting);
        });
      });
      if (Number.isFinite(init.timeoutMs)) {
        timers.push(after(init.timeoutMs, () => new RequestFailure(`no answer within ${init.timeoutMs} ms`, 'TIMEOUT', connected)));
      }
      req.on('error', fail);
      req.end(init.body ?? undefined);
    });
  }

  /** Closes the connections kept open (the client is no longer used). */
  close(): void {
    this.plain?.destroy();
    this.secure?.destroy();
  }
}

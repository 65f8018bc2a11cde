/**
 * Limits of the broker's listeners (docs/security.md), each with a clear answer when reached: request bodies
 * (`REQUEST_TOO_LARGE`, 413), WebSocket frames (the socket is closed with 1009, "message too big"), open
 * connections (an HTTP client is answered `RESOURCE_EXHAUSTED`, 503, `resource: connections`, and closed; a Kafka
 * client is closed), and requests in flight on one connection (reading pauses until answers go out, as Kafka mutes
 * a connection: memory stays bounded and nothing fails). Records per request and record bytes are the broker's
 * (BrokerOptions); rates per principal are {@link Quotas}.
 */
import net from 'node:net';
import tls from 'node:tls';
import type { Logger } from '../common/logger.js';
import type { Acls } from './acls.js';
import type { Audit } from './audit.js';
import type { Quotas } from './quotas.js';
import type { Users } from './users.js';

export interface ServerLimits {
  /** Largest HTTP request body, bytes. @default 67108864 (64 MiB) */
  maxBodyBytes: number;
  /** Largest WebSocket frame a client may send (push streams, the data path), bytes. @default 16777216 (16 MiB) */
  maxFrameBytes: number;
  /** Connections open at once, per listener. @default 1024 */
  maxConnections: number;
  /** Requests a data socket or Kafka connection has in flight before reading pauses. @default 64 */
  maxInFlightPerConnection: number;
  /**
   * An HTTP connection that sends nothing for this long is closed (one that never sends a request too, so idle
   * sockets cannot hold the connection limit), ms; not while a request waits for its answer (a long poll, a
   * compaction with wait: true); WebSockets are not timed out. @default 60000
   */
  idleTimeoutMs: number;
  /**
   * A request not received whole this long after it began (a slow client trickling bytes) is answered 408 and its
   * connection closed, ms; its headers must arrive within min(10 s, this). Checked every 30 s. @default 120000
   */
  requestTimeoutMs: number;
}

/**
 * What the WebSocket servers check: ACLs and quotas (none: no checks) and the limits; the users whose deletion or
 * token rotation closes a socket at once (none: a socket lives as long as its client keeps it); and where a
 * handler's throw is logged.
 */
export interface SocketChecks {
  acls?: Acls | undefined;
  /** Where refused frames that would change something are recorded. @default none */
  audit?: Audit | undefined;
  users?: Users | undefined;
  quotas?: Quotas | undefined;
  limits: ServerLimits;
  logger: Logger;
}

export const DEFAULT_SERVER_LIMITS: Readonly<ServerLimits> = {
  maxBodyBytes: 64 * 1024 * 1024,
  maxFrameBytes: 16 * 1024 * 1024,
  maxConnections: 1024,
  maxInFlightPerConnection: 64,
  idleTimeoutMs: 60_000,
  requestTimeoutMs: 120_000,
};

/**
 * Holds `server` to `max` open connections: beyond it, `refuse` gets the socket instead of the server. Call once
 * the server's own connection listeners are installed (it wraps them); for a TLS server the count is of
 * connections past their handshake.
 */
export function limitConnections(server: net.Server, max: number, refuse: (socket: net.Socket) => void): void {
  const event = server instanceof tls.Server ? 'secureConnection' : 'connection';
  const listeners = server.listeners(event) as Array<(socket: net.Socket) => void>;
  server.removeAllListeners(event);
  let open = 0;
  server.on(event, (socket: net.Socket) => {
    if (open >= max) {
      refuse(socket);
      return;
    }
    open++;
    socket.once('close', () => open--);
    for (const listener of listeners) listener.call(server, socket);
  });
}

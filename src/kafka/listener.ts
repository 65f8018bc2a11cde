/**
 * The Kafka listener (`onelog serve --kafka-port K`, docs/kafka.md): Kafka's binary protocol over TCP, in front of
 * the same broker as the HTTP API. Each frame is a 32-bit size then a request; requests of one connection are
 * handled one at a time and answered in order. A frame larger than `maxFrameBytes` (before SASL, when SASL is
 * required, `maxUnauthenticatedFrameBytes`), a request the listener cannot parse, an unknown API or a version it
 * does not serve closes the connection (as a Kafka broker does), except ApiVersions at a version above its own,
 * answered with UNSUPPORTED_VERSION (35) in the v0 layout so the client can retry with a version both know. The
 * bytes received and not yet handled, over all connections, are held to `maxBufferedBytes` by pausing reading
 * (src/kafka/receive-budget.ts). Every handler of a connection is guarded (src/common/guard.ts): whatever it throws is
 * logged and closes that connection, and the process goes on.
 */
import net from 'node:net';
import tls from 'node:tls';
import { systemClock } from '../common/clock.js';
import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import { guarded } from '../common/guard.js';
import { OnelogError } from '../protocol/errors.js';
import { ByteReader, ByteWriter } from './codec/bytes.js';
import { readRequestHeader, skipHeaderTags, writeResponseHeader } from './codec/headers.js';
import type { RequestHeader } from './codec/headers.js';
import { decode, encode } from './codec/interpreter.js';
import type { Struct } from './codec/interpreter.js';
import { inRange } from './codec/schema.js';
import type { KafkaApi, KafkaCluster, KafkaConnection, KafkaDataApi } from './apis/api.js';
import { authorizedApi } from './authorized-api.js';
import { authenticateStep, saslAuthenticate, saslHandshake } from './apis/sasl.js';
import type { Acls } from '../security/acls.js';
import type { Audit } from '../security/audit.js';
import { LOOPBACK_ADMIN, principalName } from '../security/principal.js';
import type { Quotas } from '../security/quotas.js';
import type { Principal } from '../security/principal.js';
import { apiVersions } from './apis/api-versions.js';
import { metadata } from './apis/metadata.js';
import { initProducerId, produce } from './apis/produce.js';
import { fetch, listOffsets } from './apis/fetch.js';
import { findCoordinator, offsetCommit, offsetFetch } from './apis/offsets.js';
import { heartbeat, joinGroup, leaveGroup, syncGroup } from './apis/groups.js';
import { alterShareGroupOffsets, describeShareGroupOffsets, shareAcknowledge, shareFetch, shareGroupDescribe, shareGroupHeartbeat } from './apis/share-groups.js';
import { KafkaMembers } from './kafka-members.js';
import { KafkaShareMembers } from './share-members.js';
import { TopicIds } from './topic-ids.js';
import {
  createTopics, deleteGroups, deleteRecords, deleteTopics, describeConfigs, describeGroups, incrementalAlterConfigs, listGroups, offsetForLeaderEpoch,
} from './apis/admin.js';
import { KAFKA_ERROR } from './errors.js';
import { FrameReader } from './frames.js';
import { ReceiveBudget } from './receive-budget.js';
import type { Users } from '../security/users.js';
import type { ServerTls } from '../security/tls.js';
import { DEFAULT_SERVER_LIMITS, limitConnections } from '../security/limits.js';

/** The APIs served, by key. */
export const KAFKA_APIS: readonly KafkaApi[] = [
  apiVersions, metadata, produce, initProducerId, listOffsets, fetch, findCoordinator, offsetCommit, offsetFetch,
  joinGroup, syncGroup, heartbeat, leaveGroup,
  createTopics, deleteTopics, listGroups, describeGroups, deleteRecords, deleteGroups, describeConfigs, incrementalAlterConfigs, offsetForLeaderEpoch,
  shareGroupHeartbeat, shareGroupDescribe, shareFetch, shareAcknowledge, describeShareGroupOffsets, alterShareGroupOffsets,
  saslHandshake, saslAuthenticate,
];

/** The requests a connection may send before SASL: the versions served and SASL itself. */
const BEFORE_SASL = new Set([apiVersions.key, saslHandshake.key, saslAuthenticate.key]);

/** Options of the listener. */
export interface KafkaListenerOptions {
  /** @default '127.0.0.1' */
  host?: string;
  /** 0 = any free port. */
  port: number;
  /** The host clients are told to connect to (Metadata). @default host */
  advertisedHost?: string;
  /** The port clients are told to connect to (Metadata, FindCoordinator), e.g. a proxy's in front of this listener. @default the port listened on */
  advertisedPort?: number;
  /**
   * A connection with no traffic for this long is closed, ms (Kafka's connections.max.idle.ms).
   * @default 600000
   */
  idleTimeoutMs?: number;
  /** Largest request frame, bytes; a larger one closes the connection. @default 104857600 (100 MiB, Kafka's socket.request.max.bytes) */
  maxFrameBytes?: number;
  /**
   * Largest frame a connection may send before it has authenticated, while SASL is required (users exist), bytes:
   * a frame declaring more closes the connection as soon as its 4-byte size is read, before any of its body is
   * buffered (Kafka's `sasl.server.max.receive.size`). Before SASL such a connection also has one request in
   * flight at a time (the next frame's size is read once the previous request, which may authenticate it, has
   * been answered). @default 524288 (512 KiB, Kafka's)
   */
  maxUnauthenticatedFrameBytes?: number;
  /**
   * Bytes received and not yet handled, over every connection (`serve --kafka-max-buffered-bytes`): while they
   * reach this, a connection between two frames stops reading until answers free enough (backpressure, as Kafka's
   * `queued.max.request.bytes` blocks reading until its memory pool frees; nothing is refused); a frame already
   * begun is read to its end. Gauged as `onelog_kafka_buffered_bytes` and `onelog_kafka_connections_paused`.
   * @default 268435456 (256 MiB)
   */
  maxBufferedBytes?: number;
  /**
   * Creates a topic a Kafka client names and no topic has, with this many partitions (`serve --auto-create-topics
   * --default-partitions N`; Kafka's auto.create.topics.enable and num.partitions): at a Metadata request that allows it
   * (allow.auto.create.topics) and at a Produce. With ACLs the principal needs `create` on the topic or the cluster.
   * @default null: never (an unknown topic answers UNKNOWN_TOPIC_OR_PARTITION, as Redpanda by default)
   */
  autoCreateTopics?: { partitions: number } | null;
  /**
   * How long the first JoinGroup round of a group with no Kafka member waits for more members, each arrival extending
   * it up to the round's rebalance timeout, ms (kafka/join-rounds.ts); and how long a share group that gets its first
   * Kafka member assigns nothing (share-members.ts), so members started together split its partitions from their first
   * fetch. @default 3000 (Kafka's group.initial.rebalance.delay.ms)
   */
  initialRebalanceDelayMs?: number;
  /**
   * Caps the highest version served of some APIs, by API key (`{ 18: 0 }`: ApiVersions v0 only), as an older
   * Kafka broker serves fewer: for a client that mishandles a version, and to test clients' fallback. A version
   * above the cap is answered as any version not served (ApiVersions: UNSUPPORTED_VERSION, 35).
   * @default none: every version of the table in docs/kafka.md
   * @throws OnelogError `INVALID_REQUEST` (at start) for an API not served or a cap below its lowest version
   */
  maxVersions?: Readonly<Record<number, number>>;
  logger: Logger;
  /**
   * The users of the broker (docs/security.md): while none exists, only loopback clients are answered (unless the
   * broker is `--insecure`); once one exists, a connection must authenticate with SASL (PLAIN or SCRAM-SHA-256)
   * before any request but ApiVersions. @default none: no check
   */
  users?: Users;
  /** What an authenticated principal may do (the permission table's `KAFKA` entries). @default none: anything */
  acls?: Acls;
  /** Where topic, group and record deletions are recorded with the principal. @default none */
  audit?: Audit;
  /**
   * Per-principal rates: a request above them is answered late, once the principal's bucket allows it (as Kafka
   * throttles a connection), never refused. @default none: unlimited
   */
  quotas?: Quotas;
  /** Requests a connection may have waiting before reading pauses (as Kafka mutes a connection). @default 64 */
  maxInFlightPerConnection?: number;
  /** Connections open at once; one more is closed at once. @default 1024 */
  maxConnections?: number;
  /** Serve TLS with these settings (`serve --tls-cert --tls-key [--tls-ca]`). @default none: plain TCP */
  tls?: ServerTls;
  /** @default the system clock */
  clock?: Clock;
}

export class KafkaListener {
  private readonly sockets = new Set<net.Socket>();
  /** The bytes received and not yet handled, over every connection, and their bound. */
  private readonly budget: ReceiveBudget;
  /** The APIs served, by key, with the versions served. */
  private readonly apis: Map<number, KafkaApi>;
  private readonly members: KafkaMembers;
  private readonly shareMembers: KafkaShareMembers;
  private readonly topicIds = new TopicIds();

  private constructor(
    private readonly api: KafkaDataApi & KafkaCluster,
    private readonly server: net.Server,
    private readonly options: Required<Omit<KafkaListenerOptions, 'advertisedHost' | 'advertisedPort' | 'users' | 'tls' | 'acls' | 'audit' | 'quotas' | 'autoCreateTopics'>> &
      { autoCreateTopics: { partitions: number } | null } &
      Pick<KafkaListenerOptions, 'users' | 'acls' | 'audit' | 'quotas'> & { advertisedHost: string; advertisedPort?: number },
  ) {
    this.members = new KafkaMembers(options.clock, options.initialRebalanceDelayMs);
    this.shareMembers = new KafkaShareMembers(options.clock, options.initialRebalanceDelayMs);
    for (const name of ['maxFrameBytes', 'maxUnauthenticatedFrameBytes', 'maxBufferedBytes'] as const) {
      if (!Number.isSafeInteger(options[name]) || options[name] < 1) {
        throw new OnelogError('INVALID_REQUEST', `${name}: ${options[name]} is not a positive whole number of bytes`, { [name]: options[name] });
      }
    }
    this.budget = new ReceiveBudget(options.maxBufferedBytes);
    this.apis = new Map(KAFKA_APIS.map((a) => [a.key, a]));
    for (const [key, max] of Object.entries(options.maxVersions)) {
      const api = this.apis.get(Number(key));
      if (api === undefined || !Number.isInteger(max) || max < api.minVersion) {
        throw new OnelogError('INVALID_REQUEST', `maxVersions: ${key} -> ${max} is not a served API key with a version it serves`, { apiKey: key, maxVersion: max });
      }
      this.apis.set(api.key, { ...api, maxVersion: Math.min(max, api.maxVersion) });
    }
  }

  /**
   * Listens on `options.host:options.port`; resolves once listening.
   * @param api the broker: its API, and its cluster for Metadata and FindCoordinator (src/kafka/placement.ts)
   */
  static async start(api: KafkaDataApi & KafkaCluster, options: KafkaListenerOptions): Promise<KafkaListener> {
    const host = options.host ?? '127.0.0.1';
    const server = options.tls ? tls.createServer(options.tls) : net.createServer();
    const listener = new KafkaListener(api, server, {
      host, port: options.port, advertisedHost: options.advertisedHost ?? host, advertisedPort: options.advertisedPort, maxFrameBytes: options.maxFrameBytes ?? 104_857_600, logger: options.logger,
      maxUnauthenticatedFrameBytes: options.maxUnauthenticatedFrameBytes ?? 524_288, maxBufferedBytes: options.maxBufferedBytes ?? 268_435_456,
      idleTimeoutMs: options.idleTimeoutMs ?? 600_000, maxInFlightPerConnection: options.maxInFlightPerConnection ?? DEFAULT_SERVER_LIMITS.maxInFlightPerConnection,
      maxConnections: options.maxConnections ?? DEFAULT_SERVER_LIMITS.maxConnections,
      clock: options.clock ?? systemClock, maxVersions: options.maxVersions ?? {}, initialRebalanceDelayMs: options.initialRebalanceDelayMs ?? 3000, autoCreateTopics: options.autoCreateTopics ?? null, users: options.users, acls: options.acls, audit: options.audit, quotas: options.quotas,
    });
    server.on(options.tls ? 'secureConnection' : 'connection', guarded((socket: net.Socket) => listener.serve(socket), {
      what: 'kafka connection closed', logger: options.logger, fields: (socket) => ({ remote: `${socket.remoteAddress}:${socket.remotePort}` }),
      answer: (_error, socket) => socket.destroy(),
    }));
    limitConnections(server, listener.options.maxConnections, (socket) => {
      listener.options.logger.warn({ remoteAddress: socket.remoteAddress, maxConnections: listener.options.maxConnections }, 'connection refused: at the connection limit');
      socket.destroy();
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port, host, () => resolve());
    });
    return listener;
  }

  /** The port it listens on. */
  get port(): number {
    return (this.server.address() as net.AddressInfo).port;
  }

  /** Bytes received on every connection and not yet handled (held to `maxBufferedBytes`). */
  get bufferedBytes(): number {
    return this.budget.bytes;
  }

  /** Connections not reading until the bytes buffered fall below `maxBufferedBytes`. */
  get pausedConnections(): number {
    return this.budget.paused;
  }

  /** Stops listening and closes every connection. */
  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /**
   * Serves one connection: its requests one at a time, answered in order. Backpressure: a response the socket
   * cannot take at once is waited for ('drain') before the next request is handled, and reading stops while
   * `maxInFlightPerConnection` requests wait (as Kafka mutes a connection), while the listener's buffered bytes
   * reach `maxBufferedBytes` (between frames), and before SASL while a request waits; so a client that sends
   * without reading holds a bounded amount of memory.
   */
  private serve(socket: net.Socket): void {
    this.sockets.add(socket);
    socket.setNoDelay(true);
    const { logger, users, maxInFlightPerConnection, maxUnauthenticatedFrameBytes, idleTimeoutMs } = this.options;
    const remote = `${socket.remoteAddress}:${socket.remotePort}`;
    const frames = new FrameReader(this.options.maxFrameBytes);
    const connection: KafkaConnection = {
      principal: null, mechanism: null, scram: null, bareTokens: false, closeAfterAnswer: false, authorized: null, remoteAddress: socket.remoteAddress ?? '',
    };
    let queue: Promise<void> = Promise.resolve();
    /** Frames taken and not yet handled. */
    let queued = 0;
    /** This connection's bytes in the listener's budget: what it buffers and its frames not yet handled. */
    let held = 0;
    // Guarded (src/common/guard.ts): whatever a handler throws is logged and closes the connection, as Kafka closes one on
    // a request it cannot handle; the process goes on.
    const guard = <A extends unknown[]>(handler: (...args: A) => unknown) => guarded(handler, {
      what: 'kafka connection closed', logger, fields: () => ({ remote }), answer: () => socket.destroy(),
    });
    // Once SASL named the principal: closed when its user is deleted or its token rotated (docs/security.md).
    let unregister: (() => void) | undefined;
    const ended = (error: OnelogError) => {
      logger.warn({ remote, code: error.code, ...error.context }, `kafka connection closed: ${error.message}`);
      socket.destroy();
    };
    const release = (n: number) => {
      const freed = Math.min(n, held);
      held -= freed;
      this.budget.release(freed);
    };
    /** Whether the connection must authenticate with SASL (users exist) and has not yet. */
    const unauthenticated = () => users?.any === true && connection.principal === null;
    /** Pauses or resumes reading, as the in-flight limit, SASL and the listener's budget allow. */
    const reading = () => {
      if (socket.destroyed) return;
      const overBudget = this.budget.exhausted && frames.pending === 0;
      if (overBudget) this.budget.wait(reading);
      if (overBudget || queued >= maxInFlightPerConnection || (queued > 0 && unauthenticated())) socket.pause();
      else socket.resume();
    };
    /** Takes the frames received whole, queued to be handled in order. @throws OnelogError for a frame refused by its size */
    const take = () => {
      // Before SASL one request at a time: the next frame's size is checked once the request that may authenticate
      // the connection has been answered.
      while (!socket.destroyed && !(queued > 0 && unauthenticated())) {
        const size = frames.nextSize();
        if (size === null) break;
        if (size > maxUnauthenticatedFrameBytes && unauthenticated()) {
          throw new OnelogError('REQUEST_TOO_LARGE', `a frame of ${size} bytes before SASL authentication is above the maximum ${maxUnauthenticatedFrameBytes} ` +
            '(as Kafka\'s sasl.server.max.receive.size): authenticate first (ApiVersions, SaslHandshake, SaslAuthenticate)', { size, maxUnauthenticatedFrameBytes });
        }
        const frame = frames.next();
        if (frame === null) break;
        queued++;
        queue = queue.then(() => handle(frame));
      }
      reading();
    };
    const handle = guard(async (frame: Buffer) => {
      let response: Buffer[] | null = null;
      try {
        if (!socket.destroyed) response = await this.answer(frame, connection, socket);
        if (connection.principal !== null && unregister === undefined && !socket.destroyed) unregister = users?.openSession(connection.principal, ended);
      } finally {
        queued--;
        release(4 + frame.length);
      }
      if (response !== null && !socket.destroyed) {
        socket.cork();
        let flushed = true;
        for (const part of response) flushed = socket.write(part);
        socket.uncork();
        if (connection.closeAfterAnswer) socket.end();
        else if (!flushed) await new Promise((resolve) => { socket.once('drain', resolve); socket.once('close', resolve); });
      }
      take();
    });
    // Kafka's connections.max.idle.ms: a connection silent that long (or stuck in a partial frame) is closed.
    socket.setTimeout(idleTimeoutMs, guard(() => {
      logger.warn({ remote, idleTimeoutMs, pendingBytes: frames.pending }, 'kafka connection closed: idle');
      socket.destroy();
    }));
    socket.on('data', guard((chunk: Buffer) => {
      held += chunk.length;
      this.budget.take(chunk.length);
      frames.push(chunk);
      take();
    }));
    socket.on('error', guard(() => socket.destroy()));
    socket.on('close', guard(() => {
      this.sockets.delete(socket);
      this.budget.forget(reading);
      release(held);
      unregister?.();
    }));
    reading(); // a connection opened while the budget is exhausted waits before its first read
  }

  /**
   * Who sends a request of `apiKey` on `connection`: null before SASL for the requests that come before it.
   * @throws OnelogError `FORBIDDEN` in protected mode for a client not on loopback, `UNAUTHENTICATED` for any other
   *   request before SASL once users exist (the connection closes)
   */
  private principalOf(apiKey: number, connection: KafkaConnection, socket: net.Socket): Principal | null {
    const { users } = this.options;
    if (users === undefined) return LOOPBACK_ADMIN;
    if (connection.principal !== null) return connection.principal;
    if (!users.any) return users.authenticate(undefined, socket.remoteAddress);
    if (BEFORE_SASL.has(apiKey)) return null;
    throw new OnelogError('UNAUTHENTICATED', 'this broker has users: authenticate with SASL (PLAIN or SCRAM-SHA-256; the password is the user\'s token) first', {});
  }

  /** The response frame to a request frame, in parts, or null when none is due. @throws when the connection must close */
  private async answer(frame: Buffer, connection: KafkaConnection, socket: net.Socket): Promise<Buffer[] | null> {
    if (connection.bareTokens && connection.principal === null) {
      // SASL after a SaslHandshake v0: a bare token in, a bare token out; a failure closes the connection.
      const token = authenticateStep(connection, this.options.users, frame);
      const size = Buffer.alloc(4);
      size.writeInt32BE(token.length, 0);
      return [size, token];
    }
    const r = new ByteReader(frame);
    const header = readRequestHeader(r);
    const api = this.apis.get(header.apiKey);
    if (api === undefined) throw new OnelogError('INVALID_REQUEST', `unknown api key ${header.apiKey}`);
    if (header.apiVersion < api.minVersion || header.apiVersion > api.maxVersion) {
      if (api.key === apiVersions.key) return this.unsupportedApiVersions(header);
      throw new OnelogError('INVALID_REQUEST', `${api.name} v${header.apiVersion} is not served (v${api.minVersion} to v${api.maxVersion})`);
    }
    const flexible = inRange(api.request.flexible, header.apiVersion);
    if (flexible) skipHeaderTags(r);
    const request = decode(api.request, header.apiVersion, r);
    const principal = this.principalOf(header.apiKey, connection, socket);
    if (principal !== null) await this.throttle(principal, header.apiKey === produce.key ? frame.length : 0);
    const response = await api.handle(request, {
      api: principal === null ? this.api : this.apiFor(principal, connection), connection, users: this.options.users, header, advertised: { host: this.options.advertisedHost, port: this.options.advertisedPort ?? this.port }, autoCreateTopics: this.options.autoCreateTopics, cluster: this.api, apis: [...this.apis.values()], members: this.members, shareMembers: this.shareMembers, topicIds: this.topicIds,
    });
    return response === null ? null : this.frame(header, api, response);
  }

  /** The broker as `principal` may use it, kept on the connection while its principal stays the same user. */
  private apiFor(principal: Principal, connection: KafkaConnection): KafkaDataApi {
    const kept = connection.authorized;
    if (kept === null || kept.principal.user !== principal.user || kept.principal.admin !== principal.admin) {
      connection.authorized = { principal, api: authorizedApi(this.api, principal, this.options) };
    }
    return connection.authorized!.api;
  }

  /** Waits until `principal`'s quotas let a request (of `producedBytes`) through. */
  private async throttle(principal: Principal, producedBytes: number): Promise<void> {
    const { quotas, clock } = this.options;
    if (!quotas?.limited) return;
    for (;;) {
      try {
        quotas.take(principalName(principal), producedBytes);
        return;
      } catch (err) {
        if (!(err instanceof OnelogError) || err.code !== 'RATE_LIMITED') throw err;
        await clock.sleep(err.context.retryAfterMs as number);
      }
    }
  }

  /** A response frame, in parts: record batches go out as the slices read from the log. */
  private frame(header: RequestHeader, api: KafkaApi, body: Struct): Buffer[] {
    const w = new ByteWriter();
    w.int32(0); // the size, set below
    // ApiVersions' response header stays v0 whatever the version, so a client can read it before it knows any.
    writeResponseHeader(w, header.correlationId, api.key !== apiVersions.key && inRange(api.response.flexible, header.apiVersion));
    encode(api.response, header.apiVersion, body, w);
    const size = w.length - 4;
    const parts = w.parts();
    parts[0]!.writeInt32BE(size, 0);
    return parts;
  }

  /** ApiVersions above the highest version served: error 35 and the versions served, in the v0 layout. */
  private unsupportedApiVersions(header: RequestHeader): Buffer[] {
    return this.frame({ ...header, apiVersion: 0 }, apiVersions, {
      errorCode: KAFKA_ERROR.UNSUPPORTED_VERSION,
      apiKeys: [...this.apis.values()].map((a) => ({ apiKey: a.key, minVersion: a.minVersion, maxVersion: a.maxVersion })),
    });
  }
}

/**
 * {@link OnelogApi} over HTTP/JSON: what the TypeScript client uses to reach `onelog serve`. Bytes travel
 * base64-encoded so any key, value or header round-trips. Error answers become {@link OnelogError}s with
 * the server's code and context; a connection failure is `NETWORK_ERROR` (retriable).
 *
 * Several server URLs (the brokers of a cluster, `http://a:7070,http://b:7070`) fail over: a request whose
 * connection could not be made, or that a broker shutting down refused (`BROKER_CLOSED`), goes to the next URL
 * at once, as does a read (GET) whose connection broke; a write whose connection broke after it was sent is
 * answered `NETWORK_ERROR` (its outcome is unknown: the caller's retry decides, as with Kafka's producer) and the
 * next request goes to the next URL.
 *
 * Cluster mode routes requests as Kafka's clients do: a group's requests (`/groups/ID/...`, and a fetch naming a
 * group) go to the broker that coordinates the group, a topic's produce to the broker that sequences its partitions.
 * A broker that does not answers `NOT_COORDINATOR` naming the one that does (`coordinatorUrl`), or, for a produce,
 * `NOT_LEADER_OR_FOLLOWER` naming the partition's leader (`leaderUrl`); the API sends the request (of a produce, the
 * records not stored) there at once and remembers it for the group's or topic's next requests, forgetting it when
 * that broker cannot be reached. Other requests stay on the URL in use.
 */
import type { OnelogApi } from '../protocol/api.js';
import type { ClusterDescription, ClusterDrainStart } from '../protocol/cluster.js';
import { LEASE_MS_HEADER } from '../protocol/cluster.js';
import type { Overview, OverviewRequest } from '../protocol/overview.js';
import type { DeadLetterList, DeadLetterListRequest, PurgeRequest, PurgeResult, RedriveRequest, RedriveResult } from '../protocol/dead-letters.js';
import type { FetchRequest, FetchResult } from '../protocol/fetch.js';
import { SpreadReads } from './spread-reads.js';
import type { GroupDescription, GroupSummary, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, MemberAssignment } from '../protocol/groups.js';
import type {
  AcknowledgeAlertRequest, AlertListRequest, AlertSink, GroupAlert, GroupHistory, HistoryRange, TopicHistory,
} from '../protocol/monitoring-api.js';
import type { NackBatchRequest, NackRequest, NackResult } from '../protocol/nacks.js';
import type { CheckpointDescription, CheckpointRequest, CommitRequest, ResetOffsetsRequest, ResetOffsetsResult } from '../protocol/offsets.js';
import type { ProduceRequest, ProduceResult, ProducerIdentity } from '../protocol/produce.js';
import type { JsonRecordPage, RecordPage, RecordPageRequest } from '../protocol/record-pages.js';
import type { AccessRights, AclBinding, AuditEntry, CreatedUser, UserSummary } from '../protocol/security.js';
import type { ShareAckRequest, ShareAckResult, SharedRecord, ShareFetchRequest, ShareFetchResult } from '../protocol/share-groups.js';
import type { SubscribeRequest, SubscribeResult } from '../protocol/subscriptions.js';
import type {
  AlterTopicRequest, CompactionResult, CompactTopicRequest, CreateTopicRequest, DeleteRecordsRequest, DeleteRecordsResult, DeleteTopicResult,
  DescribeTopicOptions, RetentionResult, TopicDescription, TopicSummary,
} from '../protocol/topics.js';
import { OnelogError } from '../protocol/errors.js';
import { checkInteger } from '../protocol/validate.js';
import { backoffDelayMs } from '../common/backoff.js';
import { systemClock } from '../common/clock.js';
import type { RecordOutcome } from '../protocol/produce-plan.js';
import { redactUrl } from '../protocol/urls.js';
import { connectionOf } from './connection.js';
import type { Connection, ConnectionOptions } from './connection.js';
import { HttpConnections, RequestFailure } from './http-request.js';
import type { HttpAnswer } from './http-request.js';
import { bytesToJson, headersToJson, jsonToRecord } from '../protocol/json-records.js';
import type { JsonRecord } from '../protocol/json-records.js';

/** The server address used when none is given: env `ONELOG_URL`, else `http://127.0.0.1:7070`. */
export function defaultServerUrl(): string {
  return process.env.ONELOG_URL ?? 'http://127.0.0.1:7070';
}

/**
 * Server URLs from `--server` / `ONELOG_URL`: one, or several separated by commas.
 * @throws OnelogError `INVALID_REQUEST` for an empty list, a URL that is not http:// or https://, or one with a user
 *   name or password (`http://admin:secret@host`: tokens authenticate, see {@link ConnectionOptions})
 */
export function parseServerUrls(text: string): string[] {
  const urls = text.split(',').map((u) => u.trim().replace(/\/+$/, '')).filter((u) => u !== '');
  if (urls.length === 0) throw new OnelogError('INVALID_REQUEST', `no server URL in ${JSON.stringify(text)}: give http://HOST:PORT[,http://HOST:PORT...]`);
  return urls.map((u) => {
    let url: URL | undefined;
    try {
      url = new URL(u);
    } catch {
      url = undefined;
    }
    if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:') || /\s|;/.test(u)) {
      throw new OnelogError('INVALID_REQUEST', `server URL ${JSON.stringify(redactUrl(u))} is not an http:// or https:// URL; several are separated by commas`, { url: redactUrl(u) });
    }
    // fetch refuses such a URL (quoting it, password and all): onelog authenticates with a token, never the URL.
    if (url.username !== '' || url.password !== '') {
      throw new OnelogError('INVALID_REQUEST', `server URL ${JSON.stringify(redactUrl(u))} holds a user name or password: onelog takes none in ` +
        'the URL; give the server as http(s)://HOST:PORT and a token with --token TOKEN or ONELOG_TOKEN (docs/security.md)', { url: redactUrl(u) });
    }
    // The scheme as the URL parser spells it (HTTP:// is http://); the rest as given.
    return `${url.protocol}${u.slice(u.indexOf(':') + 1)}`;
  });
}

/** How many times one request follows `NOT_COORDINATOR` to another broker before its answer is the caller's. */
export const MAX_REDIRECTS = 3;

/** Waits between retries of a refused request (another broker's lease not yet expired). */
const REFUSAL_BACKOFF = { initialMs: 100, maxMs: 1000 };

/** Options of {@link HttpApi}: the connection's, and how long a request may take. */
export interface HttpApiOptions extends ConnectionOptions {
  /**
   * How long a request may wait for its answer, ms, beyond a fetch's own `maxWaitMs` (Kafka's request.timeout.ms):
   * a broker that does not answer (paused, cut off) is given up, a read going to the next URL, a write answered
   * `NETWORK_ERROR` (its outcome unknown). It is also how long a request refused because another broker's lease has
   * not yet expired (`NOT_LEADER_OR_FOLLOWER`, `NOT_COORDINATOR`: a lost broker's) is retried, with backoff (100 ms
   * doubling to 1 s). 0 = no limit. A compaction or reset asked to wait has none.
   *
   * In cluster mode it is bounded by the cluster's lease: once a broker's answer named the lease length (the
   * `x-onelog-lease-ms` header, `serve --lease-ms`), a request waits for one broker's answer at most that lease plus
   * {@link LEASE_ANSWER_MARGIN_MS} (beyond a fetch's `maxWaitMs`), so a paused broker holds a client about a lease, not
   * the whole pause: by then its partitions and groups can be taken by another broker, where the retry goes (issue 38).
   * @default 30000
   */
  requestTimeoutMs?: number;
}

/** How long past the cluster's lease a request waits for a broker's answer, ms (see {@link HttpApiOptions.requestTimeoutMs}). */
export const LEASE_ANSWER_MARGIN_MS = 1000;

/** A request's state across its attempts: refusals followed, and until when it may be retried. */
export interface RequestAttempts {
  redirects: number;
  /** performance.now() past which a refusal is the caller's */
  deadline: number;
}

export class HttpApi implements OnelogApi {
  /** The server URLs, in the order given; {@link url} is the one in use. */
  readonly urls: readonly string[];
  private current = 0;
  /**
   * Where a route's requests go when not to {@link url}: `group:ID` to the group's coordinator, `produce:TOPIC` to
   * the topic's partition leader, as a broker named them.
   */
  private readonly routes = new Map<string, string>();
  /** What every request and WebSocket upgrade carries: the bearer token, the TLS settings. */
  readonly connection: Connection;
  /** The connections the API keeps open, with the client's TLS settings. */
  private readonly connections: HttpConnections;
  /** @see HttpApiOptions.requestTimeoutMs */
  readonly requestTimeoutMs: number;
  /** The cluster's lease length, ms, as the last answer that named it said; null until one did (or on the embedded default). */
  private leaseMs: number | null = null;
  /** Where a group member reads each partition besides its coordinator (cluster mode; {@link SpreadReads}). */
  protected readonly spreadReads = new SpreadReads();

  /**
   * @param url server address, `http://127.0.0.1:7070` or `https://...` (docs/security.md); several, separated by
   *   commas, fail over (see the file's comment)
   * @param options the token (sent as `Authorization: Bearer TOKEN`) and TLS settings; defaults from the environment
   *   (`ONELOG_TOKEN`, `ONELOG_CA`, `ONELOG_CERT`, `ONELOG_KEY`); the request timeout
   * @throws OnelogError `INVALID_REQUEST` when a TLS file named by the environment cannot be read, for a bad URL or
   *   a negative timeout
   */
  constructor(url: string = defaultServerUrl(), options: HttpApiOptions = {}) {
    this.requestTimeoutMs = checkInteger(options.requestTimeoutMs ?? 30_000, 'requestTimeoutMs', 0);
    this.urls = parseServerUrls(url);
    this.connection = connectionOf(options);
    this.connections = new HttpConnections(this.connection.tls);
  }

  /**
   * How long a request waits for one broker's answer beyond a fetch's `maxWaitMs`, ms: {@link requestTimeoutMs}, at most
   * the cluster's lease plus {@link LEASE_ANSWER_MARGIN_MS} once a broker named it; Infinity for no limit.
   */
  get answerTimeoutMs(): number {
    const requestMs = this.requestTimeoutMs === 0 ? Infinity : this.requestTimeoutMs;
    return this.leaseMs === null ? requestMs : Math.min(requestMs, this.leaseMs + LEASE_ANSWER_MARGIN_MS);
  }

  /** Notes the lease length an answer names ({@link LEASE_MS_HEADER}); an answer without one changes nothing. */
  private noteLease(answer: HttpAnswer): void {
    const named = Number(answer.headers[LEASE_MS_HEADER]);
    if (Number.isSafeInteger(named) && named > 0) this.leaseMs = named;
  }

  /** The server address this API talks to now. */
  get url(): string {
    return this.urls[this.current]!;
  }

  /**
   * Moves to the next server URL after `failed` failed (unless another request moved already).
   * @returns whether there is another URL to go to
   */
  protected failOver(failed: string): boolean {
    if (this.urls.length === 1) return false;
    if (this.url === failed) this.current = (this.current + 1) % this.urls.length;
    return true;
  }

  /** The URL a request of `route` ({@link routeOf}) goes to: the broker last named for it, else {@link url}. */
  protected baseFor(route: string | undefined): string {
    if (route?.startsWith(READ_ROUTE)) return route.slice(READ_ROUTE.length);
    return (route === undefined ? undefined : this.routes.get(route)) ?? this.url;
  }

  /**
   * A request sent to `base` could not be served there (connection failed, broker shutting down): the broker named
   * for its route is forgotten (its requests go back to {@link url}), else the API fails over ({@link failOver}).
   * @returns whether there is another URL to go to
   */
  protected lost(base: string, route: string | undefined): boolean {
    if (route?.startsWith(READ_ROUTE)) return false; // a member's read at a broker named: its caller goes to the coordinator
    if (route !== undefined && this.routes.get(route) === base) {
      this.routes.delete(route);
      if (base !== this.url) return true;
    }
    return this.failOver(base);
  }

  /**
   * Follows a broker's answer that another one serves the request (`NOT_COORDINATOR`, `NOT_LEADER_OR_FOLLOWER`): the
   * route's requests go to the URL it names (`coordinatorUrl`, `leaderUrl`) from now on; one naming none (never
   * advertised, or the lease is changing hands) sends them back to {@link url}, or on.
   */
  private follow(route: string, error: OnelogError, base: string): void {
    const named = error.context.coordinatorUrl ?? error.context.leaderUrl;
    if (typeof named === 'string') this.routeTo(route, named);
    else this.lost(base, route);
  }

  /** Sends the produces of `topic` to `leaderUrl` from now on (a broker named it the leader). @returns false for a URL that does not parse */
  protected followLeader(topic: string, leaderUrl: string): boolean {
    return this.routeTo(`produce:${topic}`, leaderUrl);
  }

  /** Sends a route's requests to `named` from now on. @returns false for a URL that does not parse */
  private routeTo(route: string, named: string): boolean {
    let url: string;
    try {
      url = parseServerUrls(named)[0]!;
    } catch {
      return false;
    }
    if (url === this.url) this.routes.delete(route);
    else this.routes.set(route, url);
    return true;
  }

  /**
   * Completes a produce a broker stored in part (cluster mode: `NOT_LEADER_OR_FOLLOWER` naming the leader of the
   * partitions it refused, `leaderUrl`, and where each record went, `records`; see {@link withRecordOutcomes}): the
   * records not stored are sent, each to the partition the broker chose for it, to that leader, and so on at most
   * {@link MAX_REDIRECTS} times. What was stored is never sent again.
   * @param send sends a produce, `depth` deep in this chain
   * @returns every record's offset, or undefined when `err` is not such a refusal
   */
  protected async produceRest(
    request: ProduceRequest, err: unknown, depth: number, send: (request: ProduceRequest, depth: number) => Promise<ProduceResult>,
  ): Promise<ProduceResult | undefined> {
    if (!(err instanceof OnelogError) || err.code !== 'NOT_LEADER_OR_FOLLOWER' || depth >= MAX_REDIRECTS) return undefined;
    const { records: outcomes, leaderUrl } = err.context as { records?: RecordOutcome[]; leaderUrl?: unknown };
    if (!Array.isArray(outcomes) || outcomes.length !== request.records.length || typeof leaderUrl !== 'string') return undefined;
    if (!this.followLeader(request.topic, leaderUrl)) return undefined;
    const rest = outcomes.flatMap((o, i) => (o.offset === undefined ? [i] : []));
    const sent = await send({ ...request, records: rest.map((i) => ({ ...request.records[i]!, partition: outcomes[i]!.partition })) }, depth + 1);
    const offsets = outcomes.map((o) => ({ partition: o.partition, offset: o.offset ?? -1 }));
    rest.forEach((i, k) => (offsets[i] = sent.offsets[k]!));
    return { topic: request.topic, offsets };
  }

  /** Lets go of the connections this API keeps, once it is no longer used. */
  close(): void {
    this.connections.close();
  }

  /** A new request's {@link RequestAttempts}. */
  protected attempts(): RequestAttempts {
    return { redirects: 0, deadline: this.requestTimeoutMs === 0 ? Infinity : performance.now() + this.requestTimeoutMs };
  }

  /**
   * Whether a request refused with `error` at `base` goes again: a broker naming another for it ({@link follow}) is
   * followed at once up to {@link MAX_REDIRECTS} times, then, while the refusal stands (the lease of a broker lost or
   * paused has not expired yet), again after a backoff until the request's deadline.
   */
  protected async refusedAgain(route: string | undefined, error: OnelogError, base: string, state: RequestAttempts): Promise<boolean> {
    if (route === undefined || route.startsWith(READ_ROUTE) || error.code !== (route.startsWith('group:') ? 'NOT_COORDINATOR' : 'NOT_LEADER_OR_FOLLOWER')) return false;
    if (error.context.stored !== undefined) return false;
    this.follow(route, error, base);
    if (++state.redirects <= MAX_REDIRECTS) return true;
    if (performance.now() >= state.deadline) return false;
    await systemClock.sleep(backoffDelayMs(state.redirects - MAX_REDIRECTS, REFUSAL_BACKOFF));
    return true;
  }

  /**
   * Sends a request to the URL its route names (else the one in use), failing over and following refusals as the
   * file's comment says.
   * @param waitMs how long the server may take beyond {@link requestTimeoutMs} (a long-poll's maxWaitMs); Infinity: no limit
   * @param route where it goes ({@link routeOf}; `read:URL`: to that broker only, never failing over or following a refusal)
   */
  private async call<T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown, waitMs = 0, route = routeOf(path, body)): Promise<T> {
    const state = this.attempts();
    for (let attempt = 1; ; attempt++) {
      const base = this.baseFor(route);
      const url = `${base}${path}`;
      const last = attempt >= this.urls.length;
      const timeoutMs = this.answerTimeoutMs + waitMs;
      let response: HttpAnswer;
      try {
        response = await this.connections.request(url, {
          method,
          headers: body === undefined ? this.connection.headers : { ...this.connection.headers, 'content-type': 'application/json' },
          body: body === undefined ? null : JSON.stringify(body),
          timeoutMs,
        });
      } catch (err) {
        if (!(err instanceof RequestFailure)) throw err;
        // A broker another one named (coordinator, leader) gone: back to the URL in use, whose refusal decides.
        const routed = base !== this.url;
        if (this.lost(base, route) && (routed || !last) && (!err.sent || method === 'GET')) {
          if (routed) attempt--;
          continue;
        }
        const others = this.urls.length > 1 ? ` (servers: ${this.urls.map(redactUrl).join(', ')})` : '';
        if (err.code === 'TIMEOUT') {
          throw new OnelogError('NETWORK_ERROR', `the onelog server at ${redactUrl(base)} did not answer within ${timeoutMs} ms (requestTimeoutMs` +
            `${this.leaseMs === null ? '' : `, at most the cluster's lease + ${LEASE_ANSWER_MARGIN_MS} ms`}): ` +
            `${method === 'GET' ? 'it' : 'the request may or may not have been carried out; it'} is paused, overloaded or cut off${others}`, { url: redactUrl(url) });
        }
        const named = base === this.url ? '' : ` (named by a broker as where ${route?.startsWith('group:') ? 'the group\'s coordinator' : 'the partition\'s leader'} ` +
          'answers: check that broker\'s --advertised-url)';
        throw new OnelogError('NETWORK_ERROR', `cannot reach the onelog server at ${redactUrl(base)}${named}: ${networkFailure(err, base)}${others}`, { url: redactUrl(url) });
      }
      this.noteLease(response);
      if (response.status === 204) return undefined as T;
      const { text } = response;
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        throw new OnelogError('INTERNAL_ERROR', `the server answered ${response.status} with non-JSON: ${text.slice(0, 200)}`, { url: redactUrl(url) });
      }
      if (response.status < 200 || response.status > 299) {
        const error = OnelogError.fromJSON(parsed as { code?: unknown; message?: unknown });
        // A broker shutting down did nothing of the request: the next one may.
        if (error.code === 'BROKER_CLOSED' && this.lost(base, route) && !last) continue;
        // Nothing of the request was done: the group's coordinator or the partition's leader does it.
        if (await this.refusedAgain(route, error, base, state)) {
          attempt--;
          continue;
        }
        throw error;
      }
      return parsed as T;
    }
  }

  createTopic(request: CreateTopicRequest): Promise<TopicDescription> {
    return this.call('POST', '/topics', request);
  }

  async listTopics(): Promise<TopicSummary[]> {
    return (await this.call<{ topics: TopicSummary[] }>('GET', '/topics')).topics;
  }

  /** The route answers each partition's leader whatever `options.leaders` says. */
  describeTopic(topic: string, options: DescribeTopicOptions = {}): Promise<TopicDescription> {
    return this.call('GET', `/topics/${encodeURIComponent(topic)}${options.groups ? '?groups=true' : ''}`);
  }

  alterTopic(request: AlterTopicRequest): Promise<TopicDescription> {
    return this.call('POST', `/topics/${encodeURIComponent(request.topic)}/config`, { config: request.config });
  }

  enforceRetention(topic: string): Promise<RetentionResult> {
    return this.call('POST', `/topics/${encodeURIComponent(topic)}/enforce-retention`, {});
  }

  compactTopic(request: CompactTopicRequest): Promise<CompactionResult> {
    return this.call('POST', `/topics/${encodeURIComponent(request.topic)}/compact`, { wait: request.wait ?? true }, request.wait === false ? 0 : Infinity);
  }

  deleteRecords(request: DeleteRecordsRequest): Promise<DeleteRecordsResult> {
    const { topic, ...body } = request;
    return this.call('POST', `/topics/${encodeURIComponent(topic)}/delete-records`, body);
  }

  /** Creates a user (the first is an admin); its token is in the answer, once. Needs an admin (docs/security.md). */
  createUser(user: string, admin = false): Promise<CreatedUser> {
    return this.call('POST', '/users', { user, admin });
  }

  /** Every user (never their tokens). Needs an admin. */
  async listUsers(): Promise<UserSummary[]> {
    return (await this.call<{ users: UserSummary[] }>('GET', '/users')).users;
  }

  /** Deletes a user: its token stops working at once. Needs an admin. */
  deleteUser(user: string): Promise<void> {
    return this.call('DELETE', `/users/${encodeURIComponent(user)}`);
  }

  /** Gives a user a new token (shown once); the old one stops working. Needs an admin, or the user itself. */
  rotateUser(user: string): Promise<CreatedUser> {
    return this.call('POST', `/users/${encodeURIComponent(user)}/rotate`);
  }

  /** Adds an ACL (needs alter on the cluster, as admins have; docs/security.md). @returns it as stored */
  addAcl(acl: AclBinding): Promise<AclBinding> {
    return this.call('POST', '/acls', acl);
  }

  /** Every ACL, or those naming `principal` (needs describe on the cluster). */
  async listAcls(principal?: string): Promise<AclBinding[]> {
    return (await this.call<{ acls: AclBinding[] }>('GET', `/acls${principal === undefined ? '' : `?principal=${encodeURIComponent(principal)}`}`)).acls;
  }

  /** Removes an ACL (needs alter on the cluster). @throws OnelogError `NOT_FOUND` when there is no such ACL */
  removeAcl(acl: AclBinding): Promise<void> {
    return this.call('DELETE', `/acls?${new URLSearchParams({ ...acl }).toString()}`);
  }

  /** What this client's user may do with a group's subscription to a topic (`GET /access`; docs/security.md). */
  accessRights(groupId: string, topic: string): Promise<AccessRights> {
    return this.call('GET', `/access?${new URLSearchParams({ group: groupId, topic }).toString()}`);
  }

  /** The most recent audited operations, newest first (admins only; docs/security.md). */
  async listAudit(limit?: number): Promise<AuditEntry[]> {
    return (await this.call<{ entries: AuditEntry[] }>('GET', `/audit${limit === undefined ? '' : `?limit=${limit}`}`)).entries;
  }

  deleteTopic(topic: string): Promise<DeleteTopicResult> {
    return this.call('DELETE', `/topics/${encodeURIComponent(topic)}`);
  }

  /** Appends records; in cluster mode, what a broker leading only some of their partitions left is sent on ({@link produceRest}). */
  produce(request: ProduceRequest): Promise<ProduceResult> {
    return this.produceAt(request, 0);
  }

  private async produceAt(request: ProduceRequest, depth: number): Promise<ProduceResult> {
    try {
      return await this.produceOnce(request);
    } catch (err) {
      const done = await this.produceRest(request, err, depth, (rest, d) => this.produceAt(rest, d));
      if (done === undefined) throw err;
      return done;
    }
  }

  private produceOnce(request: ProduceRequest): Promise<ProduceResult> {
    const records = request.records.map((r) => ({
      key: bytesToJson(r.key, 'base64'),
      value: bytesToJson(r.value, 'base64'),
      ...(r.headers?.length ? { headers: headersToJson(r.headers, 'base64') } : {}),
      ...(r.timestamp === undefined ? {} : { timestamp: r.timestamp }),
      ...(r.partition === undefined ? {} : { partition: r.partition }),
    }));
    return this.call('POST', `/topics/${encodeURIComponent(request.topic)}/records`, {
      encoding: 'base64', records, ...(request.idempotence ? { idempotence: request.idempotence } : {}),
    });
  }

  /**
   * Reads partitions from offsets. A group member's fetch goes to its coordinator, and in cluster mode each partition
   * the coordinator named another broker for (`readFrom`) to that broker ({@link SpreadReads}), the answers merged.
   * @throws OnelogError as the broker answers (`NOT_COORDINATOR` followed as the file's comment says)
   */
  async fetch(request: FetchRequest): Promise<FetchResult> {
    return this.spreadReads.fetch(request, (r, readFrom) => this.fetchJsonAt(r, readFrom));
  }

  /** One fetch over HTTP/JSON: to `readFrom` when given, else where {@link routeOf} sends it. */
  private async fetchJsonAt(request: FetchRequest, readFrom?: string): Promise<FetchResult> {
    const { topic, ...body } = request;
    type JsonPartition = Omit<FetchResult['partitions'][number], 'records'> & { records: JsonRecord[] };
    const path = `/topics/${encodeURIComponent(topic)}/fetch`;
    const result = await this.call<{ topic: string; partitions: JsonPartition[] }>(
      'POST', path, { ...body, encoding: 'base64' }, request.maxWaitMs ?? 0, readFrom === undefined ? routeOf(path, body) : `${READ_ROUTE}${readFrom}`,
    );
    return {
      ...result,
      partitions: result.partitions.map((p) => ({ ...p, records: p.records.map((r) => jsonToRecord(r, 'base64')) })),
    };
  }

  async browseRecords(request: RecordPageRequest): Promise<RecordPage> {
    const { topic, key, ...rest } = request;
    const query = new URLSearchParams({ encoding: 'base64', ...(key === undefined ? {} : { key: bytesToJson(key, 'base64')! }) });
    for (const [name, value] of Object.entries(rest)) if (value !== undefined) query.set(name, String(value));
    const page = await this.call<JsonRecordPage>('GET', `/topics/${encodeURIComponent(topic)}/records?${query}`);
    return { ...page, records: page.records.map((r) => ({ ...jsonToRecord(r, 'base64'), valueBytes: r.valueBytes, valueTruncated: r.valueTruncated })) };
  }

  subscribe(request: SubscribeRequest): Promise<SubscribeResult> {
    const { groupId, ...body } = request;
    return this.call('POST', `/groups/${encodeURIComponent(groupId)}/subscriptions`, body);
  }

  commitOffsets(request: CommitRequest): Promise<void> {
    const { groupId, ...body } = request;
    return this.call('POST', `/groups/${encodeURIComponent(groupId)}/offsets`, body);
  }

  async listGroups(): Promise<GroupSummary[]> {
    return (await this.call<{ groups: GroupSummary[] }>('GET', '/groups')).groups;
  }

  describeGroup(groupId: string): Promise<GroupDescription> {
    return this.call('GET', `/groups/${encodeURIComponent(groupId)}`);
  }

  resetOffsets(request: ResetOffsetsRequest): Promise<ResetOffsetsResult> {
    const { groupId, ...body } = request;
    // Executed with live members, it waits for them to let the partitions go (a session timeout at most).
    return this.call('POST', `/groups/${encodeURIComponent(groupId)}/offsets/reset`, body, request.execute === true ? Infinity : 0);
  }

  async joinGroup(request: JoinGroupRequest): Promise<MemberAssignment> {
    const { groupId, ...body } = request;
    const answer = await this.call<MemberAssignment>('POST', `/groups/${encodeURIComponent(groupId)}/members`, body);
    this.spreadReads.assigned(answer);
    return answer;
  }

  async heartbeat(request: HeartbeatRequest): Promise<MemberAssignment> {
    const { groupId, memberId, ...body } = request;
    const answer = await this.call<MemberAssignment>('POST', `/groups/${encodeURIComponent(groupId)}/members/${encodeURIComponent(memberId)}/heartbeat`, body);
    this.spreadReads.assigned(answer);
    return answer;
  }

  async leaveGroup(request: LeaveGroupRequest): Promise<void> {
    this.spreadReads.forgetMember(request.groupId, request.memberId);
    await this.call('DELETE', `/groups/${encodeURIComponent(request.groupId)}/members/${encodeURIComponent(request.memberId)}`);
  }

  deleteGroup(groupId: string): Promise<void> {
    return this.call('DELETE', `/groups/${encodeURIComponent(groupId)}`);
  }

  saveCheckpoint(request: CheckpointRequest): Promise<CheckpointDescription> {
    return this.call('POST', `/groups/${encodeURIComponent(request.groupId)}/checkpoints`, { name: request.name });
  }

  initProducerId(): Promise<ProducerIdentity> {
    return this.call('POST', '/producers', {});
  }

  nack(request: NackRequest): Promise<NackResult> {
    const { groupId, ...body } = request;
    return this.call('POST', `/groups/${encodeURIComponent(groupId)}/nacks`, body);
  }

  async shareFetch(request: ShareFetchRequest): Promise<ShareFetchResult> {
    const { groupId, ...body } = request;
    type JsonShared = JsonRecord & Pick<SharedRecord, 'partition' | 'deliveryCount'>;
    const result = await this.call<Omit<ShareFetchResult, 'records'> & { records: JsonShared[] }>(
      'POST', `/groups/${encodeURIComponent(groupId)}/share-fetch`, { ...body, encoding: 'base64' }, request.maxWaitMs ?? 0,
    );
    return { ...result, records: result.records.map((r) => ({ ...jsonToRecord(r, 'base64'), partition: r.partition, deliveryCount: r.deliveryCount })) };
  }

  shareAcknowledge(request: ShareAckRequest): Promise<ShareAckResult> {
    const { groupId, ...body } = request;
    return this.call('POST', `/groups/${encodeURIComponent(groupId)}/share-acks`, body);
  }

  async nackBatch(request: NackBatchRequest): Promise<NackResult[]> {
    const { groupId, ...body } = request;
    return (await this.call<{ results: NackResult[] }>('POST', `/groups/${encodeURIComponent(groupId)}/nacks/batch`, body)).results;
  }

  listDeadLetters(request: DeadLetterListRequest): Promise<DeadLetterList> {
    const query = new URLSearchParams({ topic: request.topic, ...(request.limit !== undefined ? { limit: String(request.limit) } : {}) });
    return this.call('GET', `/groups/${encodeURIComponent(request.groupId)}/dead-letters?${query}`);
  }

  redriveDeadLetters(request: RedriveRequest): Promise<RedriveResult> {
    const { groupId, ...body } = request;
    return this.call('POST', `/groups/${encodeURIComponent(groupId)}/dead-letters/redrive`, body);
  }

  purgeDeadLetters(request: PurgeRequest): Promise<PurgeResult> {
    const { groupId, ...body } = request;
    return this.call('POST', `/groups/${encodeURIComponent(groupId)}/dead-letters/purge`, body);
  }

  async listAlerts(request: AlertListRequest = {}): Promise<GroupAlert[]> {
    const query = new URLSearchParams({
      ...(request.active ? { active: 'true' } : {}),
      ...(request.groupId !== undefined ? { group: request.groupId } : {}),
      ...(request.limit !== undefined ? { limit: String(request.limit) } : {}),
    });
    return (await this.call<{ alerts: GroupAlert[] }>('GET', `/alerts?${query}`)).alerts;
  }

  acknowledgeAlert(request: AcknowledgeAlertRequest): Promise<GroupAlert> {
    return this.call('POST', `/alerts/${encodeURIComponent(request.id)}/ack`, request.requestedBy !== undefined ? { requestedBy: request.requestedBy } : {});
  }

  addAlertSink(url: string): Promise<AlertSink> {
    return this.call('POST', '/alerts/sinks', { url });
  }

  async listAlertSinks(): Promise<AlertSink[]> {
    return (await this.call<{ sinks: AlertSink[] }>('GET', '/alerts/sinks')).sinks;
  }

  removeAlertSink(id: number): Promise<void> {
    return this.call('DELETE', `/alerts/sinks/${encodeURIComponent(id)}`);
  }

  groupHistory(groupId: string, range: HistoryRange = {}): Promise<GroupHistory> {
    return this.call('GET', `/groups/${encodeURIComponent(groupId)}/history${historyQuery(range)}`);
  }

  topicHistory(topic: string, range: HistoryRange = {}): Promise<TopicHistory> {
    return this.call('GET', `/topics/${encodeURIComponent(topic)}/history${historyQuery(range)}`);
  }

  overview(request: OverviewRequest = {}): Promise<Overview> {
    return this.call('GET', `/overview${request.limit === undefined ? '' : `?limit=${request.limit}`}`);
  }

  describeCluster(): Promise<ClusterDescription> {
    return this.call('GET', '/cluster');
  }

  drainBroker(brokerId: number): Promise<ClusterDrainStart> {
    return this.call('POST', `/cluster/brokers/${encodeURIComponent(brokerId)}/drain`, {});
  }
}

/** The query string of a history's range (none for the default). */
function historyQuery(range: HistoryRange): string {
  return range.hours === undefined ? '' : `?hours=${encodeURIComponent(range.hours)}`;
}

/** The route of a group member's read sent to the broker its coordinator named ({@link SpreadReads}): `read:URL`. */
export const READ_ROUTE = 'read:';

/**
 * Which broker a request is for, in cluster mode: `group:ID` for a group's (`/groups/ID/...`, or a fetch naming its
 * group), `produce:TOPIC` for a produce (`/topics/TOPIC/records`); undefined for any broker.
 */
export function routeOf(path: string, body: unknown): string | undefined {
  const group = /^\/groups\/([^/?]+)/.exec(path);
  if (group) return `group:${decodeURIComponent(group[1]!)}`;
  const produce = /^\/topics\/([^/?]+)\/records$/.exec(path);
  if (produce) return `produce:${decodeURIComponent(produce[1]!)}`;
  const groupId = (body as { groupId?: unknown } | undefined)?.groupId;
  return typeof groupId === 'string' ? `group:${groupId}` : undefined;
}

/** Why a request could not be sent, and what to do. */
function networkFailure(err: RequestFailure, base: string): string {
  const { code } = err;
  const what = `${code} ${err.message}`;
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') return `${what} (the server's certificate is not for this host name: use the name or address it was issued for)`;
  if (/CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS/.test(code)) {
    return `${what} (give the CA that signed the server's certificate: --ca FILE or ONELOG_CA; docs/security.md)`;
  }
  if (code.startsWith('ERR_OSSL')) return `${what} (check the TLS files: --cert and --key must be a certificate and its own key, --ca a CA certificate)`;
  if (base.startsWith('http:') && code === 'ECONNRESET') {
    return `${what} (the connection was closed: if the server uses TLS, use an https:// URL)`;
  }
  if (base.startsWith('https:') && code === 'ECONNRESET') {
    return `${what} (the server closed the connection: if it asks for client certificates, give --cert FILE and --key FILE)`;
  }
  return `${what} (start it with \`onelog serve\`, or set --server / ONELOG_URL)`;
}

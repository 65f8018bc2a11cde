/**
 * {@link OnelogApi} over HTTP/JSON: what the TypeScript client uses to reach `onelog serve`. Bytes travel
 * base64-encoded so any key, value or header round-trips. Error answers become {@link OnelogError}s with
 * the server's code and context; a connection failure is `NETWORK_ERROR` (retriable).
 */
import type {
  AlterTopicRequest, CheckpointDescription, CheckpointRequest, CommitRequest, CompactionResult, CreateTopicRequest,
  AclBinding, AuditEntry, CreatedUser, DeleteRecordsRequest, DeleteRecordsResult, DeleteTopicResult, UserSummary, FetchRequest, FetchResult, GroupDescription, GroupSummary, HeartbeatRequest,
  JoinGroupRequest, LeaveGroupRequest, MemberAssignment, OnelogApi, ProduceRequest, ProduceResult, ProducerIdentity,
  ResetOffsetsRequest, ResetOffsetsResult, RetentionResult, SubscribeRequest, SubscribeResult, TopicDescription, TopicSummary,
  NackBatchRequest, NackRequest, NackResult, DeadLetterList, DeadLetterListRequest, RedriveRequest, RedriveResult, PurgeRequest, PurgeResult,
  AcknowledgeAlertRequest, AlertListRequest, AlertSink, DescribeTopicOptions, GroupAlert, GroupHistory,
} from '../protocol/api.js';
import { Agent, fetch } from 'undici';
import type { Dispatcher, Response } from 'undici';
import { OnelogError } from '../protocol/errors.js';
import { connectionOf } from './connection.js';
import type { Connection, ConnectionOptions } from './connection.js';
import { bytesToJson, headersToJson, jsonToRecord } from '../protocol/json-records.js';
import type { JsonRecord } from '../protocol/json-records.js';

/** The server address used when none is given: env `ONELOG_URL`, else `http://127.0.0.1:7070`. */
export function defaultServerUrl(): string {
  return process.env.ONELOG_URL ?? 'http://127.0.0.1:7070';
}

export class HttpApi implements OnelogApi {
  private readonly base: string;
  /** What every request and WebSocket upgrade carries: the bearer token, the TLS settings. */
  readonly connection: Connection;
  /** Connections with the client's TLS settings; none: the default. */
  private readonly dispatcher: Dispatcher | undefined;

  /**
   * @param url server address, `http://127.0.0.1:7070` or `https://...` (docs/security.md)
   * @param options the token (sent as `Authorization: Bearer TOKEN`) and TLS settings; defaults from the environment
   *   (`ONELOG_TOKEN`, `ONELOG_CA`, `ONELOG_CERT`, `ONELOG_KEY`)
   * @throws OnelogError `INVALID_REQUEST` when a TLS file named by the environment cannot be read
   */
  constructor(url: string = defaultServerUrl(), options: ConnectionOptions = {}) {
    this.base = url.replace(/\/+$/, '');
    this.connection = connectionOf(options);
    this.dispatcher = Object.keys(this.connection.tls).length > 0 ? new Agent({ connect: { ...this.connection.tls } }) : undefined;
  }

  /** The server address this API talks to. */
  get url(): string {
    return this.base;
  }

  /** Lets go of the connections this API keeps (a TLS agent's), once it is no longer used. */
  close(): void {
    void this.dispatcher?.close();
  }

  private async call<T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<T> {
    const url = `${this.base}${path}`;
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        headers: body === undefined ? this.connection.headers : { ...this.connection.headers, 'content-type': 'application/json' },
        body: body === undefined ? null : JSON.stringify(body),
        ...(this.dispatcher ? { dispatcher: this.dispatcher } : {}),
      });
    } catch (err) {
      throw new OnelogError('NETWORK_ERROR', `cannot reach the onelog server at ${this.base}: ${networkFailure(err, this.base)}`, { url });
    }
    if (response.status === 204) return undefined as T;
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new OnelogError('INTERNAL_ERROR', `the server answered ${response.status} with non-JSON: ${text.slice(0, 200)}`, { url });
    }
    if (!response.ok) throw OnelogError.fromJSON(parsed as { code?: unknown; message?: unknown });
    return parsed as T;
  }

  createTopic(request: CreateTopicRequest): Promise<TopicDescription> {
    return this.call('POST', '/topics', request);
  }

  async listTopics(): Promise<TopicSummary[]> {
    return (await this.call<{ topics: TopicSummary[] }>('GET', '/topics')).topics;
  }

  describeTopic(topic: string, options: DescribeTopicOptions = {}): Promise<TopicDescription> {
    return this.call('GET', `/topics/${encodeURIComponent(topic)}${options.groups ? '?groups=true' : ''}`);
  }

  alterTopic(request: AlterTopicRequest): Promise<TopicDescription> {
    return this.call('POST', `/topics/${encodeURIComponent(request.topic)}/config`, { config: request.config });
  }

  enforceRetention(topic: string): Promise<RetentionResult> {
    return this.call('POST', `/topics/${encodeURIComponent(topic)}/enforce-retention`, {});
  }

  compactTopic(request: { topic: string; wait?: boolean }): Promise<CompactionResult> {
    return this.call('POST', `/topics/${encodeURIComponent(request.topic)}/compact`, { wait: request.wait ?? true });
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

  /** The most recent audited operations, newest first (admins only; docs/security.md). */
  async listAudit(limit?: number): Promise<AuditEntry[]> {
    return (await this.call<{ entries: AuditEntry[] }>('GET', `/audit${limit === undefined ? '' : `?limit=${limit}`}`)).entries;
  }

  deleteTopic(topic: string): Promise<DeleteTopicResult> {
    return this.call('DELETE', `/topics/${encodeURIComponent(topic)}`);
  }

  produce(request: ProduceRequest): Promise<ProduceResult> {
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

  async fetch(request: FetchRequest): Promise<FetchResult> {
    const { topic, ...body } = request;
    type JsonPartition = Omit<FetchResult['partitions'][number], 'records'> & { records: JsonRecord[] };
    const result = await this.call<{ topic: string; partitions: JsonPartition[] }>(
      'POST', `/topics/${encodeURIComponent(topic)}/fetch`, { ...body, encoding: 'base64' },
    );
    return {
      ...result,
      partitions: result.partitions.map((p) => ({ ...p, records: p.records.map((r) => jsonToRecord(r, 'base64')) })),
    };
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
    return this.call('POST', `/groups/${encodeURIComponent(groupId)}/offsets/reset`, body);
  }

  joinGroup(request: JoinGroupRequest): Promise<MemberAssignment> {
    const { groupId, ...body } = request;
    return this.call('POST', `/groups/${encodeURIComponent(groupId)}/members`, body);
  }

  heartbeat(request: HeartbeatRequest): Promise<MemberAssignment> {
    const { groupId, memberId, ...body } = request;
    return this.call('POST', `/groups/${encodeURIComponent(groupId)}/members/${encodeURIComponent(memberId)}/heartbeat`, body);
  }

  leaveGroup(request: LeaveGroupRequest): Promise<void> {
    return this.call('DELETE', `/groups/${encodeURIComponent(request.groupId)}/members/${encodeURIComponent(request.memberId)}`);
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

  groupHistory(groupId: string): Promise<GroupHistory> {
    return this.call('GET', `/groups/${encodeURIComponent(groupId)}/history`);
  }
}

/** Why a request could not be sent, and what to do. */
function networkFailure(err: unknown, base: string): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  const code = cause?.code ?? '';
  const what = [code, cause?.message ?? (err as Error).message].filter(Boolean).join(' ');
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') return `${what} (the server's certificate is not for this host name: use the name or address it was issued for)`;
  if (/CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS/.test(code)) {
    return `${what} (give the CA that signed the server's certificate: --ca FILE or ONELOG_CA; docs/security.md)`;
  }
  if (code.startsWith('ERR_OSSL')) return `${what} (check the TLS files: --cert and --key must be a certificate and its own key, --ca a CA certificate)`;
  if (base.startsWith('http:') && /UND_ERR_SOCKET|ECONNRESET/.test(code)) {
    return `${what} (the connection was closed: if the server uses TLS, use an https:// URL)`;
  }
  if (base.startsWith('https:') && /UND_ERR_SOCKET|ECONNRESET/.test(code)) {
    return `${what} (the server closed the connection: if it asks for client certificates, give --cert FILE and --key FILE)`;
  }
  return `${what} (start it with \`onelog serve\`, or set --server / ONELOG_URL)`;
}

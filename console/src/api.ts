/**
 * The console talks to the broker through the same HTTP API as every client (docs/http-api.md), on the origin
 * that served it. Once the broker has users, it sends the token the user gave (kept in this tab's sessionStorage
 * only); an UNAUTHENTICATED answer asks for one ({@link TOKEN_NEEDED}).
 */
import type { GroupDescription, GroupSummary } from '../../src/protocol/groups.js';
import type { GroupAlert, GroupHistory, TopicHistory } from '../../src/protocol/monitoring-api.js';
import type { JsonRecordPage, KeyMatch } from '../../src/protocol/record-pages.js';
import type { TopicDescription, TopicSummary } from '../../src/protocol/topics.js';
import type { DeadLetterList, PurgeResult, RedriveResult } from '../../src/protocol/dead-letters.js';
import type { JsonRecord } from '../../src/protocol/json-records.js';
import type { CheckpointDescription, ResetOffsetsResult, ResetSpec } from '../../src/protocol/offsets.js';
import type { AccessRights } from '../../src/protocol/security.js';
import type { ClusterDescription } from '../../src/protocol/cluster.js';
import type { Overview } from '../../src/protocol/overview.js';

export type { GroupDescription, GroupPartition, GroupSummary } from '../../src/protocol/groups.js';
export type { DrainEstimate, GroupAlert, GroupHistory, TopicHistory } from '../../src/protocol/monitoring-api.js';
export type { TopicDescription, TopicSummary } from '../../src/protocol/topics.js';
export type { DeadLetter, DeadLetterList, PurgeResult, RedriveResult } from '../../src/protocol/dead-letters.js';
export type { JsonRecord } from '../../src/protocol/json-records.js';
export type { ResetOffsetsResult, ResetSpec } from '../../src/protocol/offsets.js';
export type { ClusterDescription } from '../../src/protocol/cluster.js';
export type { Overview } from '../../src/protocol/overview.js';

/** An error answer: the registry's code and message. */
export class ApiError extends Error {
  constructor(readonly code: string, message: string) {
    super(message);
  }
}

const TOKEN_KEY = 'onelog-token';
/** The window event sent when the broker asks for a token (401). */
export const TOKEN_NEEDED = 'onelog-token-needed';

/** The token this tab uses, if any. */
export const token = {
  get: (): string | null => sessionStorage.getItem(TOKEN_KEY),
  set: (value: string | null): void => (value ? sessionStorage.setItem(TOKEN_KEY, value) : sessionStorage.removeItem(TOKEN_KEY)),
};

async function call<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
  // A group another broker coordinates (cluster mode) is answered by that broker (docs/cluster.md).
  const headers: Record<string, string> = { 'x-onelog-forward': 'coordinator', ...(body === undefined ? {} : { 'content-type': 'application/json' }) };
  const bearer = token.get();
  if (bearer) headers.authorization = `Bearer ${bearer}`;
  const res = await fetch(path, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const json = (await res.json()) as T & { code?: string; message?: string };
  if (res.status === 401) dispatchEvent(new Event(TOKEN_NEEDED));
  if (!res.ok) throw new ApiError(json.code ?? 'ERROR', json.message ?? res.statusText);
  return json;
}

const enc = encodeURIComponent;

export const api = {
  topics: async () => (await call<{ topics: TopicSummary[] }>('GET', '/topics')).topics,
  topic: (topic: string) => call<TopicDescription>('GET', `/topics/${enc(topic)}?groups=true`),
  groups: async () => (await call<{ groups: GroupSummary[] }>('GET', '/groups')).groups,
  group: (groupId: string) => call<GroupDescription>('GET', `/groups/${enc(groupId)}`),
  alerts: async (active: boolean) => (await call<{ alerts: GroupAlert[] }>('GET', `/alerts?active=${active}&limit=500`)).alerts,
  ack: (id: number) => call<GroupAlert>('POST', `/alerts/${id}/ack`, { requestedBy: 'console' }),
  // The overview page.
  overview: () => call<Overview>('GET', '/overview?limit=100'),
  cluster: () => call<ClusterDescription>('GET', '/cluster'),
};

// Dead letters and replay (pages/dead-letters.ts, pages/replay.ts): what the signed-in user may do, plans (dry runs)
// and their execution. `requestedBy` is what a broker without users records; with users the broker records the user.

/** Which dead letters a redrive names: one, a selection, or every waiting one. */
export type RedriveSelection = { offset: number } | { offsets: number[] } | { all: true };

/**
 * The calls of the dead-letters and replay pages. `redrive`, `purge` and `reset` are dry runs unless `execute`;
 * `recordsFrom` reads a partition without a group (the records a reset would re-read). Each rejects with {@link ApiError}.
 */
export const operatorApi = {
  access: (groupId: string, topic: string) => call<AccessRights>('GET', `/access?group=${enc(groupId)}&topic=${enc(topic)}`),
  deadLetters: (groupId: string, topic: string, limit: number) =>
    call<DeadLetterList>('GET', `/groups/${enc(groupId)}/dead-letters?topic=${enc(topic)}&limit=${limit}`),
  redrive: (groupId: string, topic: string, selection: RedriveSelection, execute: boolean) =>
    call<RedriveResult>('POST', `/groups/${enc(groupId)}/dead-letters/redrive`, { topic, ...selection, execute, requestedBy: 'console' }),
  purge: (groupId: string, topic: string, beforeOffset: number, execute: boolean) =>
    call<PurgeResult>('POST', `/groups/${enc(groupId)}/dead-letters/purge`, { topic, beforeOffset, execute, requestedBy: 'console' }),
  reset: (groupId: string, topic: string, spec: ResetSpec, partition: number | null, execute: boolean) =>
    call<ResetOffsetsResult>('POST', `/groups/${enc(groupId)}/offsets/reset`, {
      topic, spec, execute, requestedBy: 'console', ...(partition === null ? {} : { partition }),
    }),
  checkpoint: (groupId: string, name: string) => call<CheckpointDescription>('POST', `/groups/${enc(groupId)}/checkpoints`, { name }),
  /** The first `maxRecords` records of a partition from `offset` (values as UTF-8 text), read without a group. */
  recordsFrom: async (topic: string, partition: number, offset: number, maxRecords: number) =>
    (await call<{ partitions: Array<{ records: JsonRecord[] }> }>('POST', `/topics/${enc(topic)}/fetch`, { partitions: [{ partition, offset }], maxRecords }))
      .partitions[0]?.records ?? [],
};

// The record browser (docs/monitoring.md, "Console: records"): pages of one partition's records. Bytes travel in
// base64, so the console can show any of them (record-bytes.ts): JSON pretty-printed, text as text, else hex.
export type { JsonPageRecord, JsonRecordPage, KeyMatch } from '../../src/protocol/record-pages.js';

/** Where a record page starts (an offset, a time in ms since the epoch, or the newest) and what it searches for. */
export interface RecordQuery {
  partition: number;
  start: { offset: number } | { timestamp: number } | 'newest';
  /** Records answered. */
  limit: number;
  /** A key to search for, as text (sent as its UTF-8 bytes). */
  key?: string;
  keyMatch?: KeyMatch;
  /** Bytes of each value answered; the broker's default (4 KiB) when absent. */
  maxValueBytes?: number;
}

/** Text as the base64 of its UTF-8 bytes. */
const base64Utf8 = (text: string): string => btoa(Array.from(new TextEncoder().encode(text), (b) => String.fromCharCode(b)).join(''));

/** A record query as `GET /topics/:topic/records`'s query string. */
function recordsQuery(q: RecordQuery): string {
  const params = new URLSearchParams({ partition: String(q.partition), limit: String(q.limit), encoding: 'base64' });
  if (q.start === 'newest') params.set('newest', 'true');
  else if ('offset' in q.start) params.set('offset', String(q.start.offset));
  else params.set('timestamp', String(q.start.timestamp));
  if (q.key) params.set('key', base64Utf8(q.key));
  if (q.key && q.keyMatch) params.set('keyMatch', q.keyMatch);
  if (q.maxValueBytes !== undefined) params.set('maxValueBytes', String(q.maxValueBytes));
  return params.toString();
}

/** The record browser's calls: `page` answers one page of a partition's records (bytes in base64). */
export const recordsApi = {
  page: (topic: string, query: RecordQuery) => call<JsonRecordPage>('GET', `/topics/${enc(topic)}/records?${recordsQuery(query)}`),
};

/** Charts that last (docs/monitoring.md): a group's health and a topic's rates, one point a minute, kept 24 hours. */
export const historyApi = {
  group: (groupId: string, hours = 24) => call<GroupHistory>('GET', `/groups/${enc(groupId)}/history?hours=${hours}`),
  topic: (topic: string, hours = 24) => call<TopicHistory>('GET', `/topics/${enc(topic)}/history?hours=${hours}`),
};

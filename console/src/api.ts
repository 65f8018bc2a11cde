/**
 * The console talks to the broker through the same HTTP API as every client (docs/http-api.md), on the origin
 * that served it. Once the broker has users, it sends the token the user gave (kept in this tab's sessionStorage
 * only); an UNAUTHENTICATED answer asks for one ({@link TOKEN_NEEDED}).
 */
import type { GroupDescription, GroupSummary } from '../../src/protocol/groups.js';
import type { GroupAlert, GroupHistory } from '../../src/protocol/monitoring-api.js';
import type { TopicDescription, TopicSummary } from '../../src/protocol/topics.js';
import type { DeadLetterList, PurgeResult, RedriveResult } from '../../src/protocol/dead-letters.js';
import type { JsonRecord } from '../../src/protocol/json-records.js';
import type { CheckpointDescription, ResetOffsetsResult, ResetSpec } from '../../src/protocol/offsets.js';
import type { AccessRights } from '../../src/protocol/security.js';

export type { GroupDescription, GroupPartition, GroupSummary } from '../../src/protocol/groups.js';
export type { GroupAlert, GroupHistory } from '../../src/protocol/monitoring-api.js';
export type { TopicDescription, TopicSummary } from '../../src/protocol/topics.js';
export type { DeadLetter, DeadLetterList, PurgeResult, RedriveResult } from '../../src/protocol/dead-letters.js';
export type { JsonRecord } from '../../src/protocol/json-records.js';
export type { ResetOffsetsResult, ResetSpec } from '../../src/protocol/offsets.js';

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
  const headers: Record<string, string> = body === undefined ? {} : { 'content-type': 'application/json' };
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
  history: (groupId: string) => call<GroupHistory>('GET', `/groups/${enc(groupId)}/history`),
  alerts: async (active: boolean) => (await call<{ alerts: GroupAlert[] }>('GET', `/alerts?active=${active}&limit=500`)).alerts,
  ack: (id: number) => call<GroupAlert>('POST', `/alerts/${id}/ack`, { requestedBy: 'console' }),
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

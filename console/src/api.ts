/**
 * The console talks to the broker through the same HTTP API as every client (docs/http-api.md), on the origin
 * that served it. Once the broker has users, it sends the token the user gave (kept in this tab's sessionStorage
 * only); an UNAUTHENTICATED answer asks for one ({@link TOKEN_NEEDED}).
 */
import type { DeadLetterList, RedriveResult } from '../../src/protocol/dead-letters.js';
import type { GroupDescription, GroupSummary } from '../../src/protocol/groups.js';
import type { GroupAlert, GroupHistory, TopicHistory } from '../../src/protocol/monitoring-api.js';
import type { TopicDescription, TopicSummary } from '../../src/protocol/topics.js';

export type { DeadLetterList } from '../../src/protocol/dead-letters.js';
export type { GroupDescription, GroupPartition, GroupSummary } from '../../src/protocol/groups.js';
export type { DrainEstimate, GroupAlert, GroupHistory, TopicHistory } from '../../src/protocol/monitoring-api.js';
export type { TopicDescription, TopicSummary } from '../../src/protocol/topics.js';

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
  alerts: async (active: boolean) => (await call<{ alerts: GroupAlert[] }>('GET', `/alerts?active=${active}&limit=500`)).alerts,
  ack: (id: number) => call<GroupAlert>('POST', `/alerts/${id}/ack`, { requestedBy: 'console' }),
  deadLetters: (groupId: string, topic: string) => call<DeadLetterList>('GET', `/groups/${enc(groupId)}/dead-letters?topic=${enc(topic)}&limit=50`),
  redrive: (groupId: string, topic: string, offset: number) =>
    call<RedriveResult>('POST', `/groups/${enc(groupId)}/dead-letters/redrive`, { topic, offset, execute: true, requestedBy: 'console' }),
};

/** Charts that last (docs/monitoring.md): a group's health and a topic's rates, one point a minute, kept 24 hours. */
export const historyApi = {
  group: (groupId: string, hours = 24) => call<GroupHistory>('GET', `/groups/${enc(groupId)}/history?hours=${hours}`),
  topic: (topic: string, hours = 24) => call<TopicHistory>('GET', `/topics/${enc(topic)}/history?hours=${hours}`),
};

/**
 * The console talks to the broker through the same HTTP API as every client (docs/http-api.md), on the origin
 * that served it.
 */
import type {
  DeadLetterList, GroupAlert, GroupDescription, GroupHistory, GroupSummary, RedriveResult, TopicDescription, TopicSummary,
} from '../../src/protocol/api.js';

export type { DeadLetterList, GroupAlert, GroupDescription, GroupHistory, GroupPartition, GroupSummary, TopicDescription, TopicSummary } from '../../src/protocol/api.js';

/** An error answer: the registry's code and message. */
export class ApiError extends Error {
  constructor(readonly code: string, message: string) {
    super(message);
  }
}

async function call<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
  const res = await fetch(path, {
    method, ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  const json = (await res.json()) as T & { code?: string; message?: string };
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
  deadLetters: (groupId: string, topic: string) => call<DeadLetterList>('GET', `/groups/${enc(groupId)}/dead-letters?topic=${enc(topic)}&limit=50`),
  redrive: (groupId: string, topic: string, offset: number) =>
    call<RedriveResult>('POST', `/groups/${enc(groupId)}/dead-letters/redrive`, { topic, offset, execute: true, requestedBy: 'console' }),
};

/** Reads `GET /events` of a server over real HTTP, as the console does (fetch, a reader, the bearer token). */
import type { BrokerChanges } from '../../src/protocol/changes.js';
import { EventStreamParser } from '../../src/protocol/event-stream.js';

export interface EventStreamClient {
  /** The `changes` messages so far, in order, each with when it arrived (performance.now()). */
  messages: Array<BrokerChanges & { at: number }>;
  /** The raw text so far (heartbeat comments included). */
  text: string;
  /** Resolves when the server ended the stream. */
  ended: Promise<void>;
  /** Closes the stream from this side. */
  close(): void;
}

/**
 * Opens the stream and resolves once its `ready` event arrived (the server listens from then on).
 * @throws Error with the server's answer when it refuses the stream
 */
export async function openEvents(url: string, token?: string): Promise<EventStreamClient> {
  const abort = new AbortController();
  const res = await fetch(`${url}/events`, { headers: token ? { authorization: `Bearer ${token}` } : {}, signal: abort.signal });
  if (!res.ok) throw Object.assign(new Error(`${res.status} ${await res.text()}`), { status: res.status });
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  const parser = new EventStreamParser();
  const client: EventStreamClient = { messages: [], text: '', ended: Promise.resolve(), close: () => abort.abort() };
  let ready!: () => void;
  const readied = new Promise<void>((resolve) => (ready = resolve));
  client.ended = (async () => {
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        client.text += value;
        for (const e of parser.push(value)) {
          if (e.event === 'ready') ready();
          else if (e.event === 'changes') client.messages.push({ ...(JSON.parse(e.data) as BrokerChanges), at: performance.now() });
        }
      }
    } catch {
      // closed from this side
    }
  })();
  await readied;
  return client;
}

/** Every change the messages so far carry. */
export const changesOf = (client: EventStreamClient) => client.messages.flatMap((m) => m.changes);

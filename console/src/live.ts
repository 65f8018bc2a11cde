/**
 * Live reloads: one stream of the broker's changes per tab (`GET /events`, server-sent events read with fetch so
 * that it carries the token), handed to every page's {@link onChanges} listener. A dropped stream is opened again
 * after 1 s, doubling to 30 s; meanwhile pages poll ({@link isLive} is false). When the stream opens again, listeners
 * get a `truncated` batch: changes may have been missed, reload everything (not at its first opening: the pages
 * have just loaded).
 */
import type { BrokerChanges } from '../../src/protocol/changes.js';
import { EventStreamParser } from '../../src/protocol/event-stream.js';
import { token } from './api.js';

export type { BrokerChange, BrokerChanges } from '../../src/protocol/changes.js';

/** The window event sent when the stream opens or drops (the header's live badge follows it). */
export const LIVE_CHANGED = 'onelog-live-changed';

const listeners = new Set<(changes: BrokerChanges) => void>();
let live = false;
let started = false;
/** Whether the stream has been open before: a reopening may have missed changes. */
let openedBefore = false;

/** Whether the stream is open now: pages need not poll. */
export const isLive = (): boolean => live;

/** Calls `listener` with each batch of changes; opens the stream on the first call. @returns the listener's removal */
export function onChanges(listener: (changes: BrokerChanges) => void): () => void {
  listeners.add(listener);
  if (!started) {
    started = true;
    void connect(1000);
  }
  return () => void listeners.delete(listener);
}

function setLive(value: boolean): void {
  if (live === value) return;
  live = value;
  dispatchEvent(new Event(LIVE_CHANGED));
  if (value && openedBefore) tell({ changes: [], truncated: true });
  if (value) openedBefore = true;
}

function tell(changes: BrokerChanges): void {
  for (const listener of listeners) listener(changes);
}

/** Reads the stream until it ends, then opens it again after `delayMs` (1 s once it had opened, else doubling to 30 s). */
async function connect(delayMs: number): Promise<void> {
  let opened = false;
  try {
    const bearer = token.get();
    const res = await fetch('/events', { headers: bearer ? { authorization: `Bearer ${bearer}` } : {} });
    if (res.status === 401) return; // the pages ask for a token, and reload once it is given
    if (res.ok && res.body) {
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      const parser = new EventStreamParser();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        for (const event of parser.push(value)) {
          if (event.event === 'ready') {
            opened = true;
            setLive(true);
          } else if (event.event === 'changes') {
            tell(JSON.parse(event.data) as BrokerChanges);
          }
        }
      }
    }
  } catch {
    // a network error: opened again below
  }
  setLive(false);
  const next = opened ? 1000 : Math.min(30_000, delayMs * 2);
  setTimeout(() => void connect(next), opened ? 1000 : delayMs);
}

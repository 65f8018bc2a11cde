/**
 * The broker's changes as server-sent events (`GET /events`, docs/monitoring.md "Console: live"): the web console
 * reloads what a change concerns instead of polling. Each stream hears the broker's {@link ChangeSource}, keeps only
 * the changes about topics and groups its principal may describe, and sends the distinct ones as one message at most
 * every `coalesceMs`. Bounded: at most `maxStreams` open at once (more are refused `RESOURCE_EXHAUSTED`), at most
 * `maxChanges` changes in a message (past them it says `truncated`: reload everything), a stream whose client stops
 * reading (`maxBufferedBytes` unsent) is ended, and a comment every `heartbeatMs` keeps proxies from closing an idle
 * stream. The server's close ends every stream first, so it never waits on one.
 *
 * The stream is `text/event-stream`: `event: ready` once it listens, then `event: changes` with
 * {@link BrokerChanges} as its JSON data.
 */
import { PassThrough } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { BrokerChange, BrokerChanges, ChangeSource } from '../../protocol/changes.js';
import { OnelogError } from '../../protocol/errors.js';
import { checkInteger } from '../../protocol/validate.js';
import type { Acls } from '../../security/acls.js';
import type { Principal } from '../../security/principal.js';
import { principalOf } from '../access.js';

/** Bounds and pace of the event streams (each an integer within the bounds it names). */
export interface EventStreamOptions {
  /** Most streams open at once, 1 to 100,000; one more is refused `RESOURCE_EXHAUSTED` (`resource: event-streams`). @default 100 */
  maxStreams?: number;
  /** Shortest time between two messages of a stream, ms, 0 to 60,000: changes meanwhile are sent together. @default 250 */
  coalesceMs?: number;
  /** A comment line is sent after this long without a message, ms, 10 to 3,600,000, so that proxies keep the stream. @default 15000 */
  heartbeatMs?: number;
  /** Most distinct changes one message lists, 1 to 100,000; past them it is `truncated`. @default 1000 */
  maxChanges?: number;
  /** A stream with more unsent bytes than this (its client stopped reading) is ended, bytes, 1 KiB to 1 GiB. @default 1048576 */
  maxBufferedBytes?: number;
}

/** Each option's bounds: [min, max]. */
const BOUNDS: Record<keyof EventStreamOptions, [number, number]> = {
  maxStreams: [1, 100_000], coalesceMs: [0, 60_000], heartbeatMs: [10, 3_600_000], maxChanges: [1, 100_000], maxBufferedBytes: [1024, 2 ** 30],
};

/** The event streams of a server: {@link close} ends them all. */
export interface EventStreams {
  /** Ends every open stream (the server is closing). */
  close(): void;
}

const DEFAULTS: Required<EventStreamOptions> = { maxStreams: 100, coalesceMs: 250, heartbeatMs: 15_000, maxChanges: 1000, maxBufferedBytes: 1 << 20 };

/**
 * Registers `GET /events` over `source`.
 * @param acls what each stream's principal may describe (none: a server without access control sends everything)
 * @throws OnelogError `INVALID_CONFIG` for an option outside its bounds, naming them
 */
export function registerEventRoutes(app: FastifyInstance, source: ChangeSource, acls: Acls | undefined, options: EventStreamOptions = {}): EventStreams {
  const o = { ...DEFAULTS, ...options };
  for (const [name, [min, max]] of Object.entries(BOUNDS)) checkInteger(o[name as keyof EventStreamOptions], `events.${name}`, min, max, 'INVALID_CONFIG');
  const open = new Set<() => void>();
  app.get('/events', async (request, reply) => {
    if (open.size >= o.maxStreams) {
      throw new OnelogError('RESOURCE_EXHAUSTED', `${o.maxStreams} event streams are open, the most this server keeps: close one (a console tab) ` +
        'and retry', { resource: 'event-streams', maxStreams: o.maxStreams });
    }
    const principal = principalOf(request);
    const out = new PassThrough();
    const end = openStream(out, source, (change) => acls === undefined || visible(acls, principal, change), o, () => open.delete(end));
    open.add(end);
    reply.raw.on('close', end);
    return reply.header('content-type', 'text/event-stream; charset=utf-8').header('cache-control', 'no-cache, no-transform')
      .header('x-accel-buffering', 'no').header('connection', 'close').send(out);
  });
  return {
    close: () => {
      for (const end of [...open]) end();
    },
  };
}

/**
 * Writes `source`'s changes that `keep` keeps to `out` as server-sent events, coalesced.
 * @returns the stream's end: stops hearing, ends `out`, calls `ended` (once, however often it is called)
 */
function openStream(out: PassThrough, source: ChangeSource, keep: (change: BrokerChange) => boolean, o: Required<EventStreamOptions>, ended: () => void): () => void {
  const pending = new Map<string, BrokerChange>();
  let truncated = false;
  let timer: NodeJS.Timeout | null = null;
  let lastSentAt = 0;
  let done = false;
  const write = (text: string) => {
    out.write(text);
    if (out.writableLength > o.maxBufferedBytes) end(); // its client stopped reading
  };
  const flush = () => {
    timer = null;
    const message: BrokerChanges = { changes: [...pending.values()], truncated };
    pending.clear();
    truncated = false;
    lastSentAt = Date.now();
    write(`event: changes\ndata: ${JSON.stringify(message)}\n\n`);
  };
  const stop = source.watchChanges((change) => {
    if (!keep(change)) return;
    const key = JSON.stringify(change);
    if (pending.size < o.maxChanges || pending.has(key)) pending.set(key, change);
    else truncated = true;
    timer ??= setTimeout(flush, Math.max(0, lastSentAt + o.coalesceMs - Date.now()));
  });
  const heartbeat = setInterval(() => {
    if (Date.now() - lastSentAt >= o.heartbeatMs) write(': heartbeat\n\n');
  }, o.heartbeatMs);
  const end = () => {
    if (done) return;
    done = true;
    stop();
    if (timer !== null) clearTimeout(timer);
    clearInterval(heartbeat);
    out.end();
    ended();
  };
  write('event: ready\ndata: {}\n\n');
  return end;
}

/** Whether `principal` may describe every topic and group `change` names. */
function visible(acls: Acls, principal: Principal, change: BrokerChange): boolean {
  const topic = 'topic' in change ? acls.allows(principal, 'topic', change.topic, 'describe') : true;
  const group = 'groupId' in change ? acls.allows(principal, 'group', change.groupId, 'describe') : true;
  return topic && group;
}

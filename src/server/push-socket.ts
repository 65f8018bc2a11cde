/**
 * WebSocket push: `GET /groups/:group/stream` upgraded to a WebSocket (the `ws` library) carries one
 * {@link PushSession} per connection. The member's first text frame subscribes, later ones grant credit and
 * acknowledge records:
 *
 * - `{ "type": "subscribe", "topics": [...], "commitMode"?, "startPolicy"?, "sessionTimeoutMs"?, "clientId"?, "assignments"? }`
 * - `{ "type": "credit", "records": N, "bytes": B }`: adds credit; nothing is sent before the first grant
 * - `{ "type": "ack", "topic": T, "partition": P, "offset": O }`: commits O + 1 (after-processing)
 * - `{ "type": "nack", "topic": T, "partition": P, "offset": O, "reason": R }`: moves the record to the
 *   subscription's next retry tier (docs/retries.md); answered `{ "type": "nacked", topic, partition, offset, movedTo }`
 *   or an `error` frame naming the same topic, partition and offset
 *
 * The broker sends `records` frames (bytes base64), `partition-error` (a paused partition), `assigned` (partitions
 * granted to the member, when the subscribe frame asked with `"assignments": true`) and `error`
 * (a refused frame; fatal ones close the socket with code 1008). Closing the socket leaves the group.
 * docs/delivery.md describes the protocol.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import type { RawData, WebSocket } from 'ws';
import { guarded } from '../common/guard.js';
import { refuseBadHandshakes } from './socket-answers.js';
import { PUSH_FRAMES, PushSession } from '../delivery/push-session.js';
import type { PushFrames, PushStats, PushSubscribe } from '../delivery/push-session.js';
import type { OnelogApi } from '../protocol/api.js';
import { OnelogError } from '../protocol/errors.js';
import { authorize } from '../security/permissions.js';
import type { RequestParts } from '../security/permissions.js';
import type { Principal } from '../security/principal.js';
import type { SocketChecks } from '../security/limits.js';

const STREAM_PATH = /^\/groups\/([^/?]+)\/stream(?:\?.*)?$/;

/** The push streams of one server. */
export interface PushSockets {
  /** Takes an HTTP upgrade for `/groups/:group/stream` by `principal`; answers false for any other path. */
  upgrade(request: IncomingMessage, socket: Duplex, head: Buffer, principal: Principal): boolean;
  /** Every open session's counters, by member id. */
  stats(): Array<PushStats & { memberId: string; groupId: string }>;
  /** Closes every stream (members leave their groups). */
  close(): Promise<void>;
}

/** The frames a member sends on a push stream. */
export const PUSH_FRAME_TYPES: readonly string[] = ['subscribe', 'credit', 'ack', 'nack'];

/**
 * Push streams over `api` (the server routes upgrades to {@link PushSockets.upgrade}).
 * @param checks every frame is authorized against the ACLs (the permission table's `WS /groups/:groupId/stream TYPE`);
 *   a frame above `limits.maxFrameBytes` closes the socket (1009). Quotas do not apply: credits bound the stream.
 */
export function pushSockets(api: OnelogApi, { acls, audit, users, limits, logger }: SocketChecks): PushSockets {
  const wss = new WebSocketServer({ noServer: true, maxPayload: limits.maxFrameBytes });
  refuseBadHandshakes(wss);
  const sessions = new Map<WebSocket, { groupId: string; session: PushSession | null }>();

  function serve(ws: WebSocket, groupId: string, principal: Principal): void {
    const entry: { groupId: string; session: PushSession | null } = { groupId, session: null };
    sessions.set(ws, entry);
    const refuse = (err: unknown, fatal: boolean) => {
      const e = err instanceof OnelogError ? err : new OnelogError('INVALID_REQUEST', (err as Error).message);
      ws.send(JSON.stringify({ type: 'error', ...e.toJSON() }));
      if (fatal) ws.close(1008, e.code);
    };
    const guard = <A extends unknown[]>(what: string, handler: (...args: A) => unknown) =>
      guarded(handler, { what, logger, fields: () => ({ groupId }), answer: (e, ..._args: A) => refuse(e, true) });
    // Closed (an error frame, then 1008) when the principal's user is deleted or its token rotated; frames after the
    // close began are dropped.
    const unregister = users?.openSession(principal, (e) => refuse(e, true));
    // A frame above maxPayload: ws closes the socket with 1009 and reports it here.
    ws.on('error', () => undefined);
    ws.on('message', guard('push stream frame', (data: RawData, isBinary: boolean) => {
      if (ws.readyState !== ws.OPEN) return;
      let checked: { key: string; parts: RequestParts } | undefined;
      try {
        if (isBinary) throw new OnelogError('INVALID_REQUEST', 'send JSON text frames: subscribe, credit, ack, nack');
        const frame = JSON.parse(data.toString()) as Record<string, unknown>;
        if (typeof frame.type !== 'string' || !PUSH_FRAME_TYPES.includes(frame.type)) {
          throw new OnelogError('INVALID_REQUEST', `unknown frame type ${JSON.stringify(frame.type)}; allowed: ${PUSH_FRAME_TYPES.join(', ')}`);
        }
        checked = { key: `WS /groups/:groupId/stream ${frame.type}`, parts: { params: { groupId }, body: frame } };
        if (acls) authorize(acls, principal, checked.key, checked.parts);
        if (!entry.session) {
          if (frame.type !== 'subscribe') throw new OnelogError('INVALID_REQUEST', 'the first frame must be { "type": "subscribe", "topics": [...] }');
          entry.session = new PushSession(api, subscribeRequest(groupId, frame), (data) => ws.send(data), (code) => ws.close(1008, code),
            () => ws.readyState === ws.OPEN);
          return;
        }
        if (frame.type === 'credit') entry.session.grant(frame.records, frame.bytes);
        else if (frame.type === 'ack') {
          entry.session.ack(String(frame.topic), Number(frame.partition), frame.offset as number).catch((err: unknown) => refuse(err, false));
        } else if (frame.type === 'nack') {
          const where = { topic: String(frame.topic), partition: Number(frame.partition), offset: frame.offset as number };
          entry.session.nack(where.topic, where.partition, where.offset, frame.reason).then(
            (movedTo) => ws.send(JSON.stringify({ type: 'nacked', ...where, movedTo })),
            (err: unknown) => {
              const e = err instanceof OnelogError ? err : new OnelogError('INTERNAL_ERROR', (err as Error).message);
              ws.send(JSON.stringify({ type: 'error', ...e.toJSON(), ...where }));
            },
          );
        } else throw new OnelogError('INVALID_REQUEST', 'a stream subscribes once: send credit, ack or nack frames');
      } catch (err) {
        const fatal = !entry.session;
        if (audit && checked && err instanceof OnelogError && err.code === 'FORBIDDEN') {
          // A refusal is recorded before it is answered; the frames after it go on meanwhile (it changed nothing).
          void audit.refused(checked.key, principal, err, checked.parts).then(() => refuse(err, fatal));
        } else {
          refuse(err instanceof SyntaxError ? new OnelogError('INVALID_REQUEST', `malformed JSON frame: ${err.message}`) : err, fatal);
        }
      }
    }));
    // 1006: the connection ended without a close frame (the client process died): its member is abandoned, not left.
    ws.on('close', guard('push stream close', (code: number) => {
      sessions.delete(ws);
      unregister?.();
      return entry.session?.close({ abandoned: code === 1006 });
    }));
  }

  return {
    upgrade: (request, socket, head, principal) => {
      const match = STREAM_PATH.exec(request.url ?? '');
      if (!match) return false;
      const groupId = groupIdOf(match[1]!);
      wss.handleUpgrade(request, socket, head, (ws) => serve(ws, groupId, principal));
      return true;
    },
    stats: () => [...sessions.values()].flatMap(({ groupId, session }) =>
      session ? [{ groupId, memberId: session.memberId, ...session.stats() }] : []),
    close: async () => {
      const closing = [...sessions.entries()].map(([ws, { session }]) => {
        ws.close(1001, 'server shutting down');
        return session?.close();
      });
      sessions.clear();
      await Promise.all(closing);
      wss.close();
    },
  };
}

/** The group id of a stream's path, percent-decoded. @throws OnelogError `INVALID_REQUEST` for a malformed escape (`%E0%A4%A`, `%`) */
function groupIdOf(encoded: string): string {
  try {
    return decodeURIComponent(encoded);
  } catch {
    throw new OnelogError('INVALID_REQUEST', `the group id in the stream's path, ${JSON.stringify(encoded)}, is not valid percent-encoding ` +
      '(each % starts an escape of two hex digits, together UTF-8): encode it as encodeURIComponent does', { path: encoded });
  }
}

/** The subscribe frame as a session request. @throws OnelogError `INVALID_REQUEST` */
function subscribeRequest(groupId: string, frame: Record<string, unknown>): PushSubscribe {
  const topics = frame.topics;
  if (!Array.isArray(topics) || topics.length === 0 || !topics.every((t) => typeof t === 'string')) {
    throw new OnelogError('INVALID_REQUEST', 'subscribe needs "topics": a non-empty array of topic names');
  }
  return {
    groupId, topics: topics as string[],
    ...(frame.commitMode !== undefined ? { commitMode: frame.commitMode as PushSubscribe['commitMode'] } : {}),
    ...(frame.startPolicy !== undefined ? { startPolicy: frame.startPolicy as PushSubscribe['startPolicy'] } : {}),
    ...(frame.sessionTimeoutMs !== undefined ? { sessionTimeoutMs: Number(frame.sessionTimeoutMs) } : {}),
    ...(frame.clientId !== undefined ? { clientId: String(frame.clientId) } : {}),
    ...(frame.assignments === true ? { assignments: true } : {}),
    ...(frame.frames !== undefined ? { frames: pushFrames(frame.frames) } : {}),
  };
}

/** @throws OnelogError `INVALID_REQUEST` for a `frames` that is not one of {@link PUSH_FRAMES} */
function pushFrames(frames: unknown): PushFrames {
  if (!PUSH_FRAMES.includes(frames as PushFrames)) {
    throw new OnelogError('INVALID_REQUEST', `subscribe's "frames" must be one of ${PUSH_FRAMES.join(', ')}, got ${JSON.stringify(frames)}`);
  }
  return frames as PushFrames;
}

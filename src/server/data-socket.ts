/**
 * The binary data path: WebSocket binary messages on `GET /data`, framed as src/protocol/data-frames.ts
 * says. A `PRODUCE` frame's batches (one request, stored or refused whole) are validated whole (each record decoded once, src/protocol/batch-validator.ts) and appended as they are; a `FETCH`
 * answers the stored batches undecoded; a `COMMIT` is a group member's commit, so a consumer's commit and its
 * next fetch travel together; a `SHARE_FETCH` and a `SHARE_ACK` are a share group member's acquisition (answered as one
 * batch per partition of exactly the records acquired) and acknowledgements. Requests on one socket run concurrently; each answer repeats its
 * request id. Errors answer an `ERROR` frame with the registry code; a frame that cannot be read closes the
 * socket (1003).
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import type { RawData, WebSocket } from 'ws';
import { asOnelogError, guarded } from '../common/guard.js';
import { refuseBadHandshakes } from './socket-answers.js';
import type { BinaryDataApi } from '../protocol/api.js';
import type { FetchRequest } from '../protocol/fetch.js';
import type { CommitRequest } from '../protocol/offsets.js';
import type { ShareAckRequest, ShareFetchRequest } from '../protocol/share-groups.js';
import { decodeFrame, encodeFrame, encodeSharedBatches, FRAME_KIND } from '../protocol/data-frames.js';
import { ioBuffers } from '../common/buffer-pool.js';
import { OnelogError } from '../protocol/errors.js';
import { authorizeAudited } from '../security/audit.js';
import { principalName } from '../security/principal.js';
import type { Principal } from '../security/principal.js';
import type { SocketChecks } from '../security/limits.js';

/** The data sockets of one server. */
export interface DataSockets {
  /** Takes an HTTP upgrade for `/data` by `principal`; answers false for any other path. */
  upgrade(request: IncomingMessage, socket: Duplex, head: Buffer, principal: Principal): boolean;
  close(): void;
}

/** The request frames, by the name the permission table gives them (`WS /data produce`). */
export const DATA_REQUEST_FRAMES = {
  produce: FRAME_KIND.PRODUCE, fetch: FRAME_KIND.FETCH, commit: FRAME_KIND.COMMIT, 'share-fetch': FRAME_KIND.SHARE_FETCH, 'share-ack': FRAME_KIND.SHARE_ACK,
} as const;

/**
 * The binary data path over `api`.
 * @param checks every frame is authorized against the ACLs (the permission table's `WS /data produce|fetch`) and
 *   held to the principal's quotas; a frame above `limits.maxFrameBytes` closes the socket (1009); with
 *   `limits.maxInFlightPerConnection` requests unanswered, reading pauses until one is
 */
export function dataSockets(api: BinaryDataApi, { acls, audit, users, quotas, limits, logger }: SocketChecks): DataSockets {
  const wss = new WebSocketServer({ noServer: true, maxPayload: limits.maxFrameBytes });
  refuseBadHandshakes(wss);
  wss.on('connection', (ws: WebSocket, principal: Principal) => {
    // A throw that no request's answer caught closes the socket (1011), logged; the process goes on.
    const guard = <A extends unknown[]>(what: string, handler: (...args: A) => unknown) =>
      guarded(handler, { what, logger, fields: () => ({ principal: principalName(principal) }), answer: (e, ..._args: A) => ws.close(1011, e.code) });
    const run = guard('data socket request', (request: () => Promise<void>) => request());
    // Requests past the in-flight limit wait here, reading paused; at most what one read held.
    const waiting: Buffer[] = [];
    let inFlight = 0;
    const answered = () => {
      inFlight--;
      while (waiting.length > 0 && inFlight < limits.maxInFlightPerConnection) handle(waiting.shift()!);
      if (waiting.length === 0 && ws.isPaused) ws.resume();
    };
    // Closed (1008) when the principal's user is deleted or its token rotated; frames after the close began are dropped.
    const unregister = users?.openSession(principal, (e) => ws.close(1008, e.code));
    ws.on('close', () => unregister?.());
    // A frame above maxPayload: ws closes the socket with 1009 and reports it here.
    ws.on('error', () => undefined);
    ws.on('message', guard('data socket frame', (data: RawData, isBinary: boolean) => {
      if (ws.readyState !== ws.OPEN) return;
      if (!isBinary) {
        ws.close(1003, 'the data path takes binary frames');
        return;
      }
      const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);
      if (inFlight < limits.maxInFlightPerConnection) handle(bytes);
      else {
        waiting.push(bytes);
        ws.pause();
      }
    }));

    function handle(bytes: Buffer): void {
      inFlight++;
      let requestId = 0;
      void run(async () => {
        try {
          if (ws.readyState !== ws.OPEN) return;
          const frame = decodeFrame(bytes);
          requestId = frame.requestId;
          const check = async (kind: keyof typeof DATA_REQUEST_FRAMES) => {
            if (acls) await authorizeAudited(acls, audit, principal, `WS /data ${kind}`, { body: frame.json });
            if (quotas?.limited) quotas.take(principalName(principal), kind === 'produce' ? frame.payload.length : 0);
          };
          if (frame.kind === DATA_REQUEST_FRAMES.produce) {
            await check('produce');
            const { topic, batches } = frame.json as { topic: string; batches: Array<{ partition: number; bytes: number }> };
            if (!Array.isArray(batches) || !batches.every((b) => b !== null && typeof b === 'object' && Number.isSafeInteger(b.bytes) && b.bytes >= 0)) {
              throw new OnelogError('INVALID_REQUEST', 'a produce frame names its batches: { topic, batches: [{ partition, bytes }] }, bytes a count >= 0');
            }
            let pos = 0;
            const parts = batches.map(({ partition, bytes }) => {
              const batch = frame.payload.subarray(pos, pos + bytes);
              pos += bytes;
              return { partition, batch };
            });
            if (pos !== frame.payload.length) {
              throw new OnelogError('INVALID_REQUEST', `a produce frame's batches add up to ${pos} bytes, its payload holds ${frame.payload.length}`);
            }
            ws.send(encodeFrame(FRAME_KIND.PRODUCED, requestId, await api.produceBatches({ topic, batches: parts })));
          } else if (frame.kind === DATA_REQUEST_FRAMES.fetch) {
            await check('fetch');
            const result = await api.fetchBatches(frame.json as FetchRequest);
            const partitions = result.partitions.map(({ batches, ...p }) => ({ ...p, batchBytes: batches.length }));
            // Read into pooled buffers and answered from one: each goes back once copied, the frame once written.
            const answer = encodeFrame(FRAME_KIND.FETCHED, requestId, { ...result, partitions }, result.partitions.map((p) => p.batches), ioBuffers.take);
            for (const p of result.partitions) ioBuffers.give(p.batches);
            ws.send(answer, () => ioBuffers.give(answer));
          } else if (frame.kind === DATA_REQUEST_FRAMES.commit) {
            await check('commit');
            await api.commitOffsets(frame.json as CommitRequest);
            ws.send(encodeFrame(FRAME_KIND.COMMITTED, requestId, {}));
          } else if (frame.kind === DATA_REQUEST_FRAMES['share-fetch']) {
            await check('share-fetch');
            const { json, batches } = encodeSharedBatches(await api.shareFetchSections(frame.json as ShareFetchRequest));
            const answer = encodeFrame(FRAME_KIND.SHARE_FETCHED, requestId, json, batches, ioBuffers.take);
            ws.send(answer, () => ioBuffers.give(answer));
          } else if (frame.kind === DATA_REQUEST_FRAMES['share-ack']) {
            await check('share-ack');
            ws.send(encodeFrame(FRAME_KIND.SHARE_ACKED, requestId, await api.shareAcknowledge(frame.json as ShareAckRequest)));
          } else {
            throw new OnelogError('INVALID_REQUEST', `unknown data frame kind ${frame.kind}; allowed: 1 (produce), 2 (fetch), 3 (commit), 4 (share-fetch), 5 (share-ack)`);
          }
        } catch (err) {
          if (ws.readyState === ws.OPEN) ws.send(encodeFrame(FRAME_KIND.ERROR, requestId, asOnelogError(err).toJSON()));
        } finally {
          answered();
        }
      });
    }
  });
  return {
    upgrade: (request, socket, head, principal) => {
      if (!/^\/data(?:\?.*)?$/.test(request.url ?? '')) return false;
      wss.handleUpgrade(request, socket, head, (ws) => wss.emit('connection', ws, principal));
      return true;
    },
    close: () => {
      for (const ws of wss.clients) ws.close(1001, 'server shutting down');
      wss.close();
    },
  };
}

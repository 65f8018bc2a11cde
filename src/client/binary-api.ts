/**
 * {@link OnelogApi} with a binary data path: produce and fetch travel as RecordBatch v2 bytes in WebSocket
 * binary frames on `GET /data` (src/protocol/data-frames.ts), encoded and decoded here, so the broker
 * appends and serves batches as they are (validated, never re-encoded) and no JSON or base64 touches the records. Commits,
 * and a share group member's acquisitions (records as batches) and acknowledgements, travel on the same socket; every other operation goes over HTTP/JSON as {@link HttpApi}. One socket per server
 * URL in use (a group's fetches and commits go to its coordinator, as {@link HttpApi} routes them), opened on first
 * use and again after a failure; requests on it run concurrently. With several server URLs, a socket that cannot be
 * opened is opened at the next URL, and a socket that breaks sends the next requests to the next URL (the requests
 * in flight on it fail with `NETWORK_ERROR`: their outcome is unknown).
 */
import WebSocket from 'ws';
import type { FetchRequest, FetchResult } from '../protocol/fetch.js';
import type { CommitRequest } from '../protocol/offsets.js';
import type { ProduceRequest, ProduceResult } from '../protocol/produce.js';
import type { ShareAckRequest, ShareAckResult, ShareFetchRequest, ShareFetchResult } from '../protocol/share-groups.js';
import { ioBuffers } from '../common/buffer-pool.js';
import { decodeFrame, decodeSharedBatches, encodeFrame, FRAME_KIND } from '../protocol/data-frames.js';
import type { DataFrame, FrameKind, SharedBatchesJson } from '../protocol/data-frames.js';
import { OnelogError } from '../protocol/errors.js';
import { Partitioner } from '../protocol/partitioner.js';
import { planProduce } from '../protocol/produce-plan.js';
import { takeRecords } from '../protocol/batch-reads.js';
import { encodeBatch } from '../protocol/record-batch.js';
import type { StoredRecord } from '../protocol/types.js';
import { HttpApi, MAX_REDIRECTS, READ_ROUTE, routeOf } from './http-api.js';

/** Records per produced batch are cut at about this many bytes. */
const BATCH_BYTES = 1024 * 1024;

type FetchedJson = Omit<FetchResult, 'partitions'> & {
  partitions: Array<Omit<FetchResult['partitions'][number], 'records'> & { batchBytes: number }>;
};

/**
 * A refusal naming a record by its index in one partition's batch (`context.partition`, `context.index`) names it
 * by its index in the request instead, as the HTTP path does.
 */
function requestIndexed(err: unknown, batches: ReadonlyArray<{ partition: number; indexes: number[] }>): unknown {
  if (!(err instanceof OnelogError) || typeof err.context.index !== 'number') return err;
  const index = batches.find((b) => b.partition === err.context.partition)?.indexes[err.context.index];
  return index === undefined ? err : new OnelogError(err.code, err.message.replace(`record ${err.context.index} of the batch`, `record ${index} of the request`), {
    ...err.context, index,
  });
}

export class BinaryApi extends HttpApi {
  /** One data socket per server URL in use: the URL's, or a group's coordinator's. */
  private readonly sockets = new Map<string, Promise<WebSocket>>();
  private nextRequestId = 1;
  private readonly pending = new Map<number, { ws: WebSocket; resolve: (frame: DataFrame) => void; reject: (err: Error) => void }>();
  private readonly partitionCounts = new Map<string, number>();
  private readonly partitioner = new Partitioner();

  /**
   * Appends records as RecordBatch v2 batches, one per partition (cut at about 1 MiB), all in one binary
   * frame, so the broker stores or refuses the request whole.
   * Partitions are chosen here as the broker would ({@link Partitioner}).
   * @throws OnelogError as {@link HttpApi.produce}; `NETWORK_ERROR` when the socket fails
   */
  override async produce(request: ProduceRequest): Promise<ProduceResult> {
    const { topic, records } = request;
    const partitions = await this.partitionCount(topic);
    // Record size, keys on compacted topics and partition bounds are the broker's to check, per batch.
    const batches = planProduce(request, {
      partitions, compacted: false, maxRecordBytes: Infinity, maxBatchBytes: BATCH_BYTES,
      choosePartition: (r, bytes) => r.partition ?? this.partitioner.partitionOf(topic, r.key, bytes, partitions),
    });
    const now = Date.now();
    const encoded = batches.map(({ indexes, producer }) => encodeBatch(indexes.map((i) => records[i]!), 0, now, producer, { alloc: ioBuffers.take }));
    let baseOffsets: number[];
    try {
      baseOffsets = await this.produceBatches(topic, batches.map((b, i) => ({ partition: b.partition, bytes: encoded[i]! })));
    } catch (err) {
      throw requestIndexed(err, batches);
    } finally {
      // Every frame holds a copy of the batches by now (or was never built).
      for (const batch of encoded) ioBuffers.give(batch);
    }
    const offsets = new Array<{ partition: number; offset: number }>(records.length);
    batches.forEach(({ partition, indexes }, b) => {
      indexes.forEach((i, k) => (offsets[i] = { partition, offset: baseOffsets[b]! + k }));
    });
    return { topic, offsets };
  }

  /**
   * Appends batches the caller encoded (RecordBatch v2, such as protocol/record-batch.ts's RecordBatchBuilder builds; the broker validates
   * them as every produced batch), all in one binary frame, so the broker stores or refuses the request whole. In
   * cluster mode, the batches a broker leading only some of their partitions did not store (`NOT_LEADER_OR_FOLLOWER`
   * naming the leader, `leaderUrl`, and what it stored, `stored`) are sent on to that leader, at most
   * {@link MAX_REDIRECTS} times; what was stored is never sent again.
   * @returns each batch's base offset, in the order given
   * @throws OnelogError as {@link HttpApi.produce}; a refused record is named by its batch's partition and its index in
   *   that batch (`context.partition`, `context.index`); `NETWORK_ERROR` when the socket fails
   */
  produceBatches(topic: string, batches: ReadonlyArray<{ partition: number; bytes: Buffer }>): Promise<number[]> {
    return this.produceBatchesAt(topic, batches, 0);
  }

  /** {@link produceBatches}, `depth` deep in a chain of sends of what brokers leading only some partitions left. */
  private async produceBatchesAt(topic: string, batches: ReadonlyArray<{ partition: number; bytes: Buffer }>, depth: number): Promise<number[]> {
    try {
      const answer = await this.request(FRAME_KIND.PRODUCE, {
        topic, batches: batches.map((b) => ({ partition: b.partition, bytes: b.bytes.length })),
      }, batches.map((b) => b.bytes), FRAME_KIND.PRODUCED);
      return (answer.json as { batches: Array<{ baseOffset: number }> }).batches.map((b) => b.baseOffset);
    } catch (err) {
      const stored = depth < MAX_REDIRECTS ? this.storedInPart(topic, err) : undefined;
      if (stored === undefined) throw err;
      // A partition's batches of one request are stored, or refused, together.
      const rest = batches.flatMap((b, i) => (stored.has(b.partition) ? [] : [i]));
      const restOffsets = await this.produceBatchesAt(topic, rest.map((i) => batches[i]!), depth + 1);
      const offsets = batches.map((b) => stored.get(b.partition)?.shift() ?? -1);
      rest.forEach((i, k) => (offsets[i] = restOffsets[k]!));
      return offsets;
    }
  }

  /**
   * What a broker that leads only some partitions of a produce stored (`NOT_LEADER_OR_FOLLOWER` with `stored`, in request
   * order, and the leader of the others, `leaderUrl`, which the topic's produces go to from now on): base offsets by
   * partition. Undefined for any other error.
   */
  private storedInPart(topic: string, err: unknown): Map<number, number[]> | undefined {
    if (!(err instanceof OnelogError) || err.code !== 'NOT_LEADER_OR_FOLLOWER') return undefined;
    const { stored, leaderUrl } = err.context as { stored?: unknown; leaderUrl?: unknown };
    if (!Array.isArray(stored) || typeof leaderUrl !== 'string' || !this.followLeader(topic, leaderUrl)) return undefined;
    const byPartition = new Map<number, number[]>();
    for (const s of stored as Array<{ partition: number; baseOffset: number }>) byPartition.set(s.partition, [...(byPartition.get(s.partition) ?? []), s.baseOffset]);
    return byPartition;
  }

  /**
   * Fetches stored batches in a binary frame and decodes them here; `maxRecords` is applied here (the
   * partition's `nextOffset` then points at the first record left out). A group member's partitions go where
   * {@link HttpApi.fetch} sends them (its coordinator, or the broker it named to read each from).
   */
  override async fetch(request: FetchRequest): Promise<FetchResult> {
    return this.spreadReads.fetch(request, (r, readFrom) => this.fetchBatchesAt(r, readFrom));
  }

  /** One binary fetch: on the data socket to `readFrom` when given, else where {@link routeOf} sends it. */
  private async fetchBatchesAt(request: FetchRequest, readFrom?: string): Promise<FetchResult> {
    const route = readFrom === undefined ? routeOf('', request) : `${READ_ROUTE}${readFrom}`;
    const answer = await this.request(FRAME_KIND.FETCH, request, Buffer.alloc(0), FRAME_KIND.FETCHED, route);
    const json = answer.json as FetchedJson;
    let pos = 0;
    let recordsLeft = request.maxRecords ?? 500;
    const partitions = json.partitions.map(({ batchBytes, ...p }) => {
      const bytes = answer.payload.subarray(pos, pos + batchBytes);
      pos += batchBytes;
      const from = request.partitions.find((r) => r.partition === p.partition)?.offset ?? 0;
      const records: StoredRecord[] = [];
      // Not past what the broker handed out (a partition handed out one record at a time).
      const taken = takeRecords(bytes, from, p.nextOffset, recordsLeft, records);
      recordsLeft -= records.length;
      const nextOffset = taken.cut ? taken.nextOffset : p.nextOffset;
      return { ...p, records, nextOffset };
    });
    return { ...json, partitions };
  }

  /**
   * Commits on the data socket, so a consumer's commit and its next fetch travel together (and neither waits
   * for an HTTP connection).
   * @throws OnelogError as {@link HttpApi.commitOffsets}; `NETWORK_ERROR` when the socket fails
   */
  override async commitOffsets(request: CommitRequest): Promise<void> {
    await this.request(FRAME_KIND.COMMIT, request, Buffer.alloc(0), FRAME_KIND.COMMITTED);
  }

  /**
   * A share group member's acquisition on the data socket: the records come as batches, not JSON.
   * @throws OnelogError as {@link HttpApi.shareFetch}; `NETWORK_ERROR` when the socket fails
   */
  override async shareFetch(request: ShareFetchRequest): Promise<ShareFetchResult> {
    const answer = await this.request(FRAME_KIND.SHARE_FETCH, request, Buffer.alloc(0), FRAME_KIND.SHARE_FETCHED);
    return decodeSharedBatches(answer.json as SharedBatchesJson, answer.payload);
  }

  /**
   * A share group member's acknowledgements on the data socket.
   * @throws OnelogError as {@link HttpApi.shareAcknowledge}; `NETWORK_ERROR` when the socket fails
   */
  override async shareAcknowledge(request: ShareAckRequest): Promise<ShareAckResult> {
    return (await this.request(FRAME_KIND.SHARE_ACK, request, Buffer.alloc(0), FRAME_KIND.SHARE_ACKED)).json as ShareAckResult;
  }

  /** Closes the data sockets (pending requests fail with `NETWORK_ERROR`) and the HTTP connections. */
  override close(): void {
    super.close();
    for (const socket of this.sockets.values()) void socket.then((ws) => ws.close(1000, 'client closed')).catch(() => {});
    this.sockets.clear();
  }

  /**
   * Sends one frame and waits for its answer, on the socket of the broker its route names ({@link routeOf}: a
   * group's coordinator for a group's fetch or commit, a topic's leader for a produce; followed as {@link HttpApi}
   * follows them), else of the URL in use; `route` says otherwise (`read:URL`: that broker's socket only).
   */
  private async request(
    kind: FrameKind, json: unknown, payload: Buffer | readonly Buffer[], expected: FrameKind,
    route = kind === FRAME_KIND.PRODUCE ? `produce:${(json as { topic: string }).topic}` : routeOf('', json),
  ): Promise<DataFrame> {
    const state = this.attempts();
    const waitMs = kind === FRAME_KIND.FETCH || kind === FRAME_KIND.SHARE_FETCH ? (json as { maxWaitMs?: number }).maxWaitMs ?? 0 : 0;
    for (;;) {
      const ws = await this.connect(route, this.urls.length);
      const base = ws.url.replace(/^ws/, 'http').replace(/\/data$/, '');
      const answer = await this.exchange(ws, base, route, kind, json, payload, waitMs);
      if (answer.kind === FRAME_KIND.ERROR) {
        const error = OnelogError.fromJSON(answer.json as { code?: unknown; message?: unknown });
        if (await this.refusedAgain(route, error, base, state)) continue;
        throw error;
      }
      if (answer.kind !== expected) throw new OnelogError('INTERNAL_ERROR', `the data path answered frame kind ${answer.kind}, expected ${expected}`);
      return answer;
    }
  }

  /**
   * Sends one frame on `ws` and waits for its answer, at most {@link answerTimeoutMs} beyond `waitMs`: a broker that
   * does not answer (paused, cut off) has its socket closed, failing what waits on it with `NETWORK_ERROR`, and the
   * next requests go to the next URL.
   */
  private exchange(
    ws: WebSocket, base: string, route: string | undefined, kind: FrameKind, json: unknown, payload: Buffer | readonly Buffer[], waitMs: number,
  ): Promise<DataFrame> {
    const requestId = this.nextRequestId++ % 0xffff_ffff || this.nextRequestId++;
    const answerMs = this.answerTimeoutMs;
    return new Promise<DataFrame>((resolve, reject) => {
      const timer = answerMs === Infinity ? undefined : setTimeout(() => {
        this.pending.delete(requestId);
        reject(new OnelogError('NETWORK_ERROR', `the data path at ${ws.url} did not answer within ${answerMs + waitMs} ms ` +
          `(requestTimeoutMs): ${kind === FRAME_KIND.FETCH ? 'it' : 'the request may or may not have been carried out; it'} is paused, ` +
          'overloaded or cut off', { url: ws.url }));
        this.lost(base, route);
        ws.terminate();
      }, answerMs + waitMs);
      const settle = { resolve: (frame: DataFrame) => (clearTimeout(timer), resolve(frame)), reject: (err: Error) => (clearTimeout(timer), reject(err)) };
      this.pending.set(requestId, { ws, ...settle });
      const frame = encodeFrame(kind, requestId, json, payload, ioBuffers.take);
      ws.send(frame, (err) => {
        ioBuffers.give(frame);
        if (!err) return;
        this.pending.delete(requestId);
        settle.reject(new OnelogError('NETWORK_ERROR', `sending to ${ws.url} failed: ${err.message}`, { url: ws.url }));
      });
    });
  }

  /**
   * The data socket to the URL a request goes to ({@link baseFor}), opened on first use; one that cannot be opened
   * is opened at the next URL ({@link lost}), `tries` in all. A socket that breaks fails the requests sent on it.
   */
  private connect(route: string | undefined, tries: number): Promise<WebSocket> {
    const base = this.baseFor(route);
    let socket = this.sockets.get(base);
    if (socket !== undefined) return socket;
    socket = new Promise<WebSocket>((resolve, reject) => {
      const url = `${base.replace(/^http/, 'ws')}/data`;
      let opened = false;
      let failed = false;
      // A zero masking key: ws then neither copies nor XORs a frame on either side. Masking (RFC 6455 section 10.3)
      // keeps a browser script's frames from poisoning proxy caches; a Node client is not such a script.
      const ws = new WebSocket(url, {
        headers: this.connection.headers, ...this.connection.tls, generateMask: (mask) => void mask.fill(0),
        ...(this.answerTimeoutMs === Infinity ? {} : { handshakeTimeout: this.answerTimeoutMs }), // a paused broker: on to the next URL
      });
      const fail = (message: string) => {
        if (failed) return; // an error, then its close
        failed = true;
        if (this.sockets.get(base) === socket) this.sockets.delete(base);
        const routed = base !== this.url; // a broker another one named: back to the URL in use
        const moved = this.lost(base, route);
        if (!opened && moved && (routed || tries > 1)) {
          this.connect(route, routed ? tries : tries - 1).then(resolve, reject);
          return;
        }
        const err = new OnelogError('NETWORK_ERROR', `the data path at ${url}: ${message}`, { url });
        for (const [id, p] of this.pending) {
          if (p.ws !== ws) continue;
          this.pending.delete(id);
          p.reject(err);
        }
        reject(err);
      };
      ws.on('open', () => {
        opened = true;
        resolve(ws);
      });
      ws.on('error', (err) => fail(err.message));
      ws.on('close', (code) => fail(`closed (${code})`));
      ws.on('message', (data: Buffer) => {
        const frame = decodeFrame(data);
        const waiter = this.pending.get(frame.requestId);
        this.pending.delete(frame.requestId);
        waiter?.resolve(frame);
      });
    });
    this.sockets.set(base, socket);
    return socket;
  }

  private async partitionCount(topic: string): Promise<number> {
    let n = this.partitionCounts.get(topic);
    if (n === undefined) {
      n = (await this.describeTopic(topic)).partitions.length;
      this.partitionCounts.set(topic, n);
    }
    return n;
  }
}

/**
 * Clients of the cluster crash test (test/cluster/cluster-chaos.test.ts), beside test/chaos/workloads.ts's: a
 * producer that names one partition per request and finds each partition's leader on its own, a watcher of a
 * group's committed offsets in the offset store, a raw HTTP request with its own deadline (to leave a request with a
 * stopped broker and read its late answer) and the final read of a partition. Every outcome goes into a
 * {@link History} as it was known to the client.
 */
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { HttpApi } from '../../src/client/http-api.js';
import { OnelogError } from '../../src/protocol/errors.js';
import type { SendOp } from '../history/checker.js';
import type { History } from '../history/recording-api.js';
import type { Workload } from './workloads.js';

/** What a send attempt that was not acknowledged tells: refused (nothing stored) or unknown. */
export function failedSend(err: unknown): SendOp['outcome'] {
  if (!(err instanceof OnelogError)) return { ok: null };
  // A partition another broker leads: nothing of it stored (a refusal naming what was stored is not one).
  if (err.code === 'NOT_LEADER_OR_FOLLOWER' && err.context.stored === undefined) return { ok: false, error: err.code };
  // The connection was never made: the request was not sent.
  if (err.code === 'NETWORK_ERROR' && /\bECONNREFUSED\b/.test(err.message)) return { ok: false, error: 'NETWORK_ERROR (connection refused)' };
  // A broker's own refusal of the request; an internal error may have come after the write.
  if (!err.retriable && err.code !== 'INTERNAL_ERROR') return { ok: false, error: err.code };
  return { ok: null };
}

/** A producer of the cluster test. */
export interface RoutedProducerOptions {
  name: string;
  /** One API per broker (a single URL each), the producer's own broker first. */
  apis: readonly HttpApi[];
  topic: string;
  partitions: number;
  history: History;
  /** Records per request (all to one partition). */
  batch: number;
  /** Requests in flight at once (independent loops, each going round the partitions from its own start). @default 1 */
  concurrency?: number;
  /** The first partition of loop `loop`. @default loop */
  firstPartition?: (loop: number) => number;
  /** Pause after a failed round of every broker, ms. @default 50 */
  backoffMs?: number;
}

/**
 * Sends numbered records (values `NAME-LOOP-SEQ`, unique), each request to one partition named explicitly. A
 * partition's requests go to the broker that last acknowledged one of it (at first the producer's own); a refusal
 * (`NOT_LEADER_OR_FOLLOWER`) or a network error (a broker killed, a stopped one's request timing out) sends the same
 * records again to the next broker, round the list, pausing after each full round, until acknowledged or stopped.
 * Every attempt is recorded with its own outcome: acknowledged, refused (nothing stored), or unknown (then the
 * records may be stored by it and by the retry: the checker allows a copy per unknown attempt).
 */
export function routedProducer(options: RoutedProducerOptions): Workload {
  const { name, apis, topic, partitions, history, batch } = options;
  const backoffMs = options.backoffMs ?? 50;
  /** Per partition, the index in `apis` its requests go to. */
  const route = new Map<number, number>();
  let stopping = false;
  const send = async (values: string[], partition: number, process: string) => {
    for (let attempt = 0; !(stopping && attempt > 0); attempt++) {
      const target = route.get(partition) ?? 0;
      const start = history.now();
      const record = (outcome: (i: number) => SendOp['outcome']) => {
        const end = history.now();
        values.forEach((value, i) => history.add({ type: 'send', start, end, process, topic, value, outcome: outcome(i) }));
      };
      try {
        const result = await apis[target]!.produce({ topic, records: values.map((v) => ({ key: null, value: Buffer.from(v), partition })) });
        record((i) => ({ ok: true, ...result.offsets[i]! }));
        return;
      } catch (err) {
        const outcome = failedSend(err);
        record(() => outcome);
        if ((route.get(partition) ?? 0) === target) route.set(partition, (target + 1) % apis.length);
        if ((attempt + 1) % apis.length === 0) await sleep(backoffMs);
      }
    }
  };
  const loops = Array.from({ length: options.concurrency ?? 1 }, async (_, loop) => {
    let seq = 0;
    for (let k = options.firstPartition?.(loop) ?? loop; !stopping; k++) {
      const values = Array.from({ length: batch }, () => `${name}-${loop}-${seq++}`);
      await send(values, k % partitions, `${name}-${loop}`);
    }
  });
  return { name, stop: async () => { stopping = true; await Promise.all(loops); } };
}

/** Reads a group's committed offsets every `intervalMs` and records each partition's as a `committed` operation. */
export function committedWatcher(
  list: () => Promise<Array<{ topic: string; partition: number; offset: number }>>, group: string, history: History, intervalMs = 100,
): Workload & { read(): Promise<Map<string, number>> } {
  let stopping = false;
  const read = async () => {
    const start = history.now();
    const offsets = await list();
    const end = history.now();
    for (const o of offsets) history.add({ type: 'committed', start, end, process: 'watcher', group, topic: o.topic, partition: o.partition, offset: o.offset });
    return new Map(offsets.map((o) => [`${o.topic}/${o.partition}`, o.offset]));
  };
  const done = (async () => {
    while (!stopping) {
      await read().catch(() => {});
      await sleep(intervalMs);
    }
  })();
  return { name: 'committed-watcher', read, stop: async () => { stopping = true; await done; } };
}

/** An HTTP answer: its status and parsed body, or why none came. */
export type RawAnswer = { status: number; body: Record<string, unknown> | null; at: number } | { failure: string; at: number };

/**
 * Sends one JSON request on a connection of its own, waiting up to `timeoutMs` for the answer (a stopped broker's
 * kernel accepts the connection and holds the request until the process resumes). `at`: when the answer (or the
 * failure) came, on `history`'s clock.
 */
export function rawRequest(url: string, method: string, path: string, body: unknown, timeoutMs: number, history: History): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const payload = body === undefined ? null : Buffer.from(JSON.stringify(body));
    const headers = payload === null ? {} : { 'content-type': 'application/json', 'content-length': payload.length };
    const req = http.request(`${url}${path}`, { method, agent: false, timeout: timeoutMs, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, body: text === '' ? null : JSON.parse(text) as Record<string, unknown>, at: history.now() });
      });
      res.on('error', (err) => resolve({ failure: err.message, at: history.now() }));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (err) => resolve({ failure: err.message, at: history.now() }));
    req.end(payload ?? undefined);
  });
}

/**
 * Reads `topic/partition` whole from `logStartOffset` up to `highWatermark` through `api` and records it as a
 * `final-read` by `process`.
 * @throws when the broker serves nothing more before reaching the high watermark within `deadlineMs`
 */
export async function finalRead(api: HttpApi, topic: string, partition: number, logStartOffset: number, highWatermark: number,
  history: History, process: string, deadlineMs = 15_000): Promise<void> {
  const start = history.now();
  const deadline = Date.now() + deadlineMs;
  const records: Array<{ offset: number; value: string }> = [];
  for (let offset = logStartOffset; offset < highWatermark;) {
    const fetched = (await api.fetch({ topic, partitions: [{ partition, offset }], maxRecords: 5000, maxWaitMs: 100 })).partitions[0]!;
    if (fetched.error) throw new Error(`the final read of ${topic}/${partition} at ${offset} from ${api.url} failed: ${fetched.error.code} ${fetched.error.message}`);
    for (const r of fetched.records) records.push({ offset: r.offset, value: r.value?.toString('utf8') ?? '' });
    if (fetched.nextOffset <= offset && Date.now() > deadline) {
      throw new Error(`${api.url} serves ${topic}/${partition} only up to ${offset}, below the high watermark ${highWatermark}`);
    }
    offset = Math.max(offset, fetched.nextOffset);
  }
  history.add({ type: 'final-read', start, end: history.now(), process, topic, partition, logStartOffset, records });
}

/**
 * Records what a client saw, for {@link checkHistory}: wraps an {@link OnelogApi} so that every group member's
 * fetch answer becomes a `poll` per partition with records, and every commit a `commit` per partition with its
 * outcome (acknowledged; refused with a non-retriable error; unknown after a retriable one such as a network error
 * or a broker that went away). Everything else passes through untouched.
 */
import type { OnelogApi } from '../../src/protocol/api.js';
import type { FetchRequest } from '../../src/protocol/fetch.js';
import type { CommitRequest } from '../../src/protocol/offsets.js';
import { OnelogError } from '../../src/protocol/errors.js';
import type { Operation } from './checker.js';

/** The operations of a run, on one monotonic clock (ms). */
export class History {
  readonly operations: Operation[] = [];

  /** Now, ms on the machine's monotonic clock (shared by every process of the machine). */
  now(): number {
    return Number(process.hrtime.bigint()) / 1e6;
  }

  add(operation: Operation): void {
    this.operations.push(operation);
  }
}

/** A commit's or send's outcome from its error: a non-retriable error refused it; a retriable one leaves it unknown. */
export function refused(err: unknown): boolean | null {
  return err instanceof OnelogError && !err.retriable ? false : null;
}

/** `record.value` as the history's string (records here carry UTF-8 text values; a tombstone is ''). */
const text = (bytes: Buffer | null | undefined): string => bytes?.toString('utf8') ?? '';

/**
 * `api`, recording the fetches and commits of group members into `history` as `process` (with the member id
 * appended: a member that rejoins is a new process, its polls checked from its new start).
 */
export function recordingApi<T extends OnelogApi>(api: T, history: History, process: string): T {
  const fetch = async (request: FetchRequest) => {
    const start = history.now();
    const result = await api.fetch(request);
    const end = history.now();
    if (request.groupId !== undefined && request.memberId !== undefined) {
      for (const p of result.partitions) {
        if (p.records.length === 0) continue;
        history.add({
          type: 'poll', start, end, process: `${process} ${request.memberId}`, group: request.groupId,
          generation: request.generationId ?? null, topic: request.topic, partition: p.partition,
          records: p.records.map((r) => ({ offset: r.offset, value: text(r.value), ...(r.key ? { key: text(r.key) } : {}) })),
        });
      }
    }
    return result;
  };
  const commitOffsets = async (request: CommitRequest) => {
    const start = history.now();
    const done = (ok: boolean | null) => {
      const end = history.now();
      for (const o of request.offsets) {
        history.add({
          type: 'commit', start, end, process: `${process} ${request.memberId ?? ''}`, group: request.groupId,
          topic: request.topic, partition: o.partition, offset: o.offset, ok,
        });
      }
    };
    try {
      await api.commitOffsets(request);
      done(true);
    } catch (err) {
      done(refused(err));
      throw err;
    }
  };
  return new Proxy(api, {
    get(target, property) {
      if (property === 'fetch') return fetch;
      if (property === 'commitOffsets') return commitOffsets;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

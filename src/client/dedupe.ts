/**
 * Idempotent processing, way (b) of an exactly-once effect (DESIGN.md "Delivery semantics"): remember which
 * records were handled and skip the ones seen before. The engine-neutral part: the {@link Dedupe}
 * interface, the in-memory engine and the key helpers. The PostgreSQL engine is in `onelog/postgres`.
 *
 * **Which tool when**
 * - Handler writes only into one PostgreSQL database: keep the consumer's positions there with
 *   `PostgresOffsetStore` (`onelog/postgres`), in the same transaction as the writes. Exactly-once effect;
 *   no dedupe table needed for redeliveries.
 * - Dedupe keyed by a **record id** ({@link recordIdKey}, or any id from the payload): skips every copy of a
 *   logical message, whatever its offset: redeliveries, and duplicates appended by producer retries
 *   (without the idempotent producer), replays from an earlier position, or the same event produced twice
 *   upstream. Needs the producer to put a stable id on each message.
 * - Dedupe keyed by **offset** ({@link recordKey}): skips redeliveries of the same record (a crash between
 *   the handler and the commit, a rebalance) and nothing else; a duplicate appended at another offset is
 *   processed again. Needs nothing from the producer.
 * - Engine: `PostgresDedupe` marks the key inside the caller's transaction, so the mark and the effect
 *   commit (or roll back) together: exactly-once effect for writes into that database, across restarts.
 *   {@link MemoryDedupe} only remembers within one process's lifetime and up to `maxKeys` keys: it removes
 *   duplicates that arrive close together (a redelivery after a rebalance inside a running process), not
 *   those after a restart; use it for effects that are cheap to repeat, or in tests.
 */
import { OnelogError } from '../protocol/errors.js';
import type { RecordHeader } from '../protocol/types.js';

/** What {@link Dedupe.once} did: ran `fn` (with its value), or skipped it because the key was seen. */
export type OnceResult<T> = { ran: true; value: T } | { ran: false };

/**
 * A set of keys already handled, to make a handler idempotent. `Tx` is the transaction the mark is written
 * in (for `PostgresDedupe`, a `pg` client inside `BEGIN`); engines without transactions ignore it.
 */
export interface Dedupe<Tx = unknown> {
  /**
   * Marks `key` as seen.
   * @returns true when this call marked it (first sighting: go ahead), false when it was already marked
   */
  claim(tx: Tx, key: string): Promise<boolean>;
  /**
   * Runs `fn` unless `key` was seen, marking it. If `fn` throws, the mark does not stay (for transactional
   * engines: as long as the caller rolls its transaction back, which it should when `fn` throws) and the
   * error goes through.
   */
  once<T>(tx: Tx, key: string, fn: () => Promise<T> | T): Promise<OnceResult<T>>;
}

/** Options of {@link MemoryDedupe}. */
export interface MemoryDedupeOptions {
  /**
   * Most keys remembered, 1 or more. Past it, the least recently marked or hit key is forgotten, and a
   * duplicate of it would then be processed again.
   * @default 100_000
   */
  maxKeys?: number;
}

/**
 * An in-memory {@link Dedupe}, bounded to `maxKeys` keys with least-recently-used eviction (a hit refreshes
 * a key). It covers ONE process's lifetime only: after a restart every key is forgotten, so it does not
 * make a handler exactly-once across crashes; see the module docs for when to prefer `PostgresDedupe`.
 * The `tx` argument is ignored (pass anything, e.g. `null`).
 *
 * `once` on a key whose `fn` is still running waits for it: if that run succeeds the second call skips,
 * if it throws the second call runs `fn` itself.
 */
export class MemoryDedupe implements Dedupe<unknown> {
  /** The bound on remembered keys. */
  readonly maxKeys: number;
  /** key -> 'done', or the run of `once` still in flight for it. Map order is recency order (oldest first). */
  private readonly keys = new Map<string, 'done' | Promise<unknown>>();

  /** @throws OnelogError `INVALID_CONFIG` when `maxKeys` is not a positive integer */
  constructor(options: MemoryDedupeOptions = {}) {
    const maxKeys = options.maxKeys ?? 100_000;
    if (!Number.isSafeInteger(maxKeys) || maxKeys < 1) {
      throw new OnelogError('INVALID_CONFIG', `maxKeys ${maxKeys} is not a positive integer`, { maxKeys });
    }
    this.maxKeys = maxKeys;
  }

  /** How many keys are remembered now (at most `maxKeys`). */
  get size(): number {
    return this.keys.size;
  }

  /** Whether `key` is remembered (marked, or its `once` in flight). Does not refresh it. */
  has(key: string): boolean {
    return this.keys.has(key);
  }

  /** Forgets `key`, e.g. after a failed effect that was marked with {@link claim}. */
  forget(key: string): void {
    this.keys.delete(key);
  }

  /** Forgets every key. */
  clear(): void {
    this.keys.clear();
  }

  /**
   * Marks `key` as seen (refreshing it if it was). A key whose `once` is in flight counts as marked.
   * @returns true when this call marked it, false when it was already marked
   */
  async claim(_tx: unknown, key: string): Promise<boolean> {
    const entry = this.keys.get(key);
    if (entry !== undefined) {
      this.touch(key, entry);
      return false;
    }
    this.touch(key, 'done');
    return true;
  }

  /**
   * Runs `fn` unless `key` was seen, marking it; waits for a run of the same key still in flight. When `fn`
   * throws, the key is unmarked and the error goes through.
   * @returns `{ ran: true, value }` when `fn` ran, `{ ran: false }` when it was skipped
   */
  async once<T>(_tx: unknown, key: string, fn: () => Promise<T> | T): Promise<OnceResult<T>> {
    for (;;) {
      const entry = this.keys.get(key);
      if (entry === 'done') {
        this.touch(key, entry);
        return { ran: false };
      }
      if (entry === undefined) break;
      await entry.then(
        () => undefined,
        () => undefined,
      );
    }
    const run = Promise.resolve().then(fn); // fn starts after the key is marked in flight
    this.touch(key, run);
    try {
      const value = await run;
      this.touch(key, 'done');
      return { ran: true, value };
    } catch (err) {
      if (this.keys.get(key) === run) this.keys.delete(key);
      throw err;
    }
  }

  /** Sets `key` as the most recent entry, evicting the oldest past `maxKeys`. */
  private touch(key: string, entry: 'done' | Promise<unknown>): void {
    this.keys.delete(key);
    this.keys.set(key, entry);
    while (this.keys.size > this.maxKeys) {
      const oldest = this.keys.keys().next().value as string;
      this.keys.delete(oldest);
    }
  }
}

/**
 * The key of one record by its position: `topic/partition/offset`, e.g. `payments/3/1042`. Unambiguous,
 * since topic names cannot contain `/`. Accepts a consumer's `EachMessagePayload` as is.
 *
 * Dedupe by this key removes redeliveries of the same record only (not a copy of the message appended at
 * another offset). A dedupe table shared by several consumer groups needs the group in the key
 * (`${groupId}/${recordKey(payload)}`), or each group would skip what the others handled.
 */
export function recordKey(record: { topic: string; partition: number; message: { offset: number } }): string {
  return `${record.topic}/${record.partition}/${record.message.offset}`;
}

/**
 * The key of one record by the id its producer put in header `headerName`: the first header of that name,
 * decoded as UTF-8. Dedupe by this key removes every copy of the message: redeliveries, and duplicates
 * produced at other offsets (producer retries, replays, the same event sent twice).
 *
 * Ids are only as unique as the producer makes them: prefix the key with the topic (or the group, for a
 * table shared by several groups) when the same id can mean different messages there.
 * @throws OnelogError `INVALID_RECORD` (context `offset`, `header`) when the header is missing, null or empty
 */
export function recordIdKey(message: { offset: number; headers: RecordHeader[] }, headerName: string): string {
  const header = message.headers.find((h) => h.key === headerName);
  const id = header?.value ? header.value.toString('utf8') : '';
  if (id === '') {
    throw new OnelogError(
      'INVALID_RECORD',
      `record at offset ${message.offset} has no ${JSON.stringify(headerName)} header to dedupe by (missing, null or empty)`,
      { offset: message.offset, header: headerName },
    );
  }
  return id;
}

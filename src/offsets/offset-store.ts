/**
 * The offset store: the key-value store of committed offsets, `(groupId, topic, partition) -> committed
 * offset`. The committed offset is the NEXT offset the group will read (Kafka's convention). Engines:
 * LMDB (embedded default, lmdb-offset-store.ts), Redis (redis-offset-store.ts) and a key-value table in
 * PostgreSQL (postgres-offset-store.ts), for cluster mode. Every engine passes the same contract test suite
 * (test/offsets/offset-store.contract.ts).
 *
 * The store also keeps each group's highest generation and its fence: a commit that carries a generation below
 * the fence is refused, in the same atomic step as the write, so the members of a coordinator that lost the
 * group (a broker paused past its lease) cannot overwrite what the group's new coordinator committed.
 */
import { OnelogError } from '../protocol/errors.js';

/** A committed offset and what came with it. */
export interface CommittedOffset {
  /** The next offset to read. */
  offset: number;
  /** Free text the committer attached (Kafka's offset metadata). @default '' */
  metadata: string;
  /** When the commit happened, ms since the epoch (from the broker's clock). */
  commitTimestamp: number;
}

/** One entry of a commit. */
export interface OffsetCommit {
  topic: string;
  partition: number;
  offset: number;
  metadata?: string;
}

/**
 * What a member's commit carries to be fenced: its generation. The store refuses the commit, writing nothing of
 * it, with `ILLEGAL_GENERATION` when the group's fence ({@link OffsetStore.advanceGeneration}) is higher. Within
 * one coordinator's tenure members at different generations commit side by side (the incremental protocol
 * moves each member to a new generation at its own next heartbeat); the coordinator checks those in memory.
 */
export interface GenerationFence {
  generationId: number;
}

/**
 * What the consumer manager keeps of one partition's records beyond a group's committed offset (DESIGN.md: per-record
 * state): the delivery counts of records a member ended holding (coordinator/delivery-counts.ts), a share group's
 * in-flight records (coordinator/share-partition.ts). A JSON object the store keeps as it is given, opaque; small
 * (bounded by what is in flight), written whole and durably. Beside it a partition may keep {@link RecordEntries}.
 */
export type RecordState = { readonly [field: string]: unknown };

/**
 * Changes to the entries a partition's record state keeps by offset (a share-partition's records one by one, so a
 * change writes what changed, not the whole window): `set` writes each `[offset, value]` (a short text, opaque to the
 * store), `remove` deletes the entries at those offsets (absent ones are fine). Offsets are integers >= 0.
 */
export interface RecordEntries {
  set?: ReadonlyArray<readonly [number, string]>;
  remove?: readonly number[];
}

/** How a commit is acknowledged ({@link OffsetStore.commit}). */
export interface CommitOptions {
  /**
   * Resolve only once the commit is synced to disk, so that it survives a power loss (the group coordinator asks it
   * for a topic with `flush.policy=always`). Without it an engine may resolve once the commit survives a crash of the
   * broker's process: the embedded LMDB store journals it (commit-journal.ts) and syncs it with its next
   * transaction. Engines whose every write is as durable as their server makes it (Redis, PostgreSQL) ignore it.
   * @default false
   */
  sync?: boolean;
}

/** A stored offset with its key. */
export interface GroupOffset extends CommittedOffset {
  topic: string;
  partition: number;
}

/**
 * The operations of one store take effect in the order they are called, also when the caller does not await
 * each before calling the next (a commit called after deleteGroup survives it; of two commits of one key, the
 * later call wins).
 */
export interface OffsetStore {
  /** The committed offset of one partition for a group, or undefined when the group never committed it. */
  get(groupId: string, topic: string, partition: number): Promise<CommittedOffset | undefined>;
  /**
   * Stores several offsets atomically (one write transaction) and durably: when the promise resolves the
   * commit survives a crash of the broker's process, and with {@link CommitOptions.sync} a power loss too.
   * @param now commit timestamp, ms since the epoch
   */
  commit(groupId: string, offsets: readonly OffsetCommit[], now: number, fence?: GenerationFence, options?: CommitOptions): Promise<void>;
  /**
   * The highest generation of the group recorded so far ({@link advanceGeneration}), 0 when none: a coordinator
   * that takes a group over numbers its generations above it.
   */
  generation(groupId: string): Promise<number>;
  /**
   * Records that the group's generation `generationId` is handed out (the highest recorded never goes down),
   * durably, before any member hears of it. With `fence`, commits of generations below `generationId` are
   * refused from then on: a coordinator taking a group over (a broker's start, a moved group lease) fences the
   * members of the coordinator before it, whose generations are all lower.
   * @returns the highest generation recorded after the call (above `generationId` if another coordinator went further)
   */
  advanceGeneration(groupId: string, generationId: number, options?: { fence?: boolean }): Promise<number>;
  /** Every committed offset of a group, ordered by topic then partition. */
  list(groupId: string): Promise<GroupOffset[]>;
  /** The group's {@link RecordState} of one partition, or undefined when it has none. */
  recordState(groupId: string, topic: string, partition: number): Promise<RecordState | undefined>;
  /**
   * Replaces the group's {@link RecordState} of one partition and applies `entries` to its entries, in one durable
   * write as a commit is; `null` removes the state and every entry (`entries` is then ignored).
   */
  setRecordState(groupId: string, topic: string, partition: number, state: RecordState | null, entries?: RecordEntries): Promise<void>;
  /** The group's record-state entries of one partition ({@link RecordEntries}), in offset order. */
  recordEntries(groupId: string, topic: string, partition: number): Promise<Array<[number, string]>>;
  /**
   * Removes every committed offset and record state (entries included) of a group. Its generation and fence stay, so a group created
   * again under the id numbers its generations on from there and the deleted group's members stay refused.
   */
  deleteGroup(groupId: string): Promise<void>;
  /**
   * Removes every group's committed offsets and record states of a topic (the topic was deleted: a topic created
   * again under its name starts with no committed offsets, as Kafka drops a deleted topic's offsets).
   * @returns how many partitions' offsets were removed
   */
  deleteTopic(topic: string): Promise<number>;
  /**
   * Checks that the store's server answers (the broker's `/health`): Redis's PING, PostgreSQL's `SELECT 1`. Absent on
   * the embedded default's LMDB, a file of this process. It does not bound its own time: the caller does.
   * @throws OnelogError `STORAGE_ERROR` when the server fails
   */
  probe?(): Promise<void>;
  /**
   * Closes the store once the calls in flight have settled (what they wrote is kept). A call after close
   * is refused with `BROKER_CLOSED`; closing twice is harmless.
   */
  close(): Promise<void>;
}

/**
 * Checks a write's entries before anything of it is written.
 * @returns the entries to set and the offsets to remove (empty arrays for none)
 * @throws RangeError for an offset that is not an integer from 0 to 2^53-1
 */
export function checkRecordEntries(entries: RecordEntries): { set: ReadonlyArray<readonly [number, string]>; remove: readonly number[] } {
  const set = entries.set ?? [];
  const remove = entries.remove ?? [];
  for (const offset of [...set.map(([o]) => o), ...remove]) {
    if (!Number.isSafeInteger(offset) || offset < 0) throw new RangeError(`offset store: a record entry's offset must be an integer >= 0, got ${offset}`);
  }
  return { set, remove };
}

/**
 * The error of a commit refused by its generation fence (every engine throws this one).
 * @param stored the group's fence, above the commit's generation
 */
export function staleGeneration(groupId: string, fence: GenerationFence, stored: number): OnelogError {
  return new OnelogError('ILLEGAL_GENERATION', `group ${groupId} is at generation ${stored}: a commit of generation ` +
    `${fence.generationId} is refused (its coordinator was replaced; join again)`, { groupId, generationId: fence.generationId, currentGenerationId: stored });
}

/**
 * The close of an engine (every engine holds one): {@link run} refuses calls once {@link close} began and
 * `close` waits for the calls in flight. A write handed to a closed LMDB environment would throw on lmdb-js's
 * write thread callback, outside any caller, and end the process.
 */
export class CloseGate {
  private closing = false;
  private readonly inFlight = new Set<Promise<unknown>>();

  /** @param engine the engine's name for the error, e.g. `LMDB` */
  constructor(private readonly engine: string) {}

  /** Throws OnelogError `BROKER_CLOSED` once close began (for the synchronous reads of an engine). */
  check(): void {
    if (this.closing) throw new OnelogError('BROKER_CLOSED', `the offset store (${this.engine}) is closed`);
  }

  /** Runs `work` unless close began. @throws OnelogError `BROKER_CLOSED` (as a rejection) once close began */
  run<T>(work: () => Promise<T>): Promise<T> {
    let call: Promise<T>;
    try {
      this.check();
      call = work();
    } catch (err) {
      return Promise.reject(err);
    }
    this.inFlight.add(call);
    const done = () => this.inFlight.delete(call);
    call.then(done, done);
    return call;
  }

  /** Refuses calls from now on and waits for those in flight. @returns false when close had begun already */
  async close(): Promise<boolean> {
    if (this.closing) return false;
    this.closing = true;
    await Promise.allSettled([...this.inFlight]);
    return true;
  }
}

/** The offset store `engines` name, for messages: what it is and where, and how such a store is usually lost. */
export interface OffsetStoreDescription {
  /** e.g. `LMDB in /var/lib/onelog/offsets`, `Redis redis://***@host:6379/0?keyPrefix=p:` (credentials redacted) */
  name: string;
  /** The usual ways of losing it, as a question to the operator. */
  lostHow: string;
}

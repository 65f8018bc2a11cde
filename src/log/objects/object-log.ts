/**
 * The log store of cluster mode (docs/cluster.md): records as immutable objects in S3-compatible storage,
 * PostgreSQL ({@link Sequencer}) as the single commit point that assigns offsets and fences writers.
 *
 * Writes: appended batches wait in memory for the flush window (`flushWindowMs`, or until `flushBytes` are
 * waiting), then one object holding the batches of every partition that received some is PUT under a fresh
 * key (`objects/<brokerId>/<time>-<uuid>`: keys are never reused, no conditional PUT is needed), then the
 * sequencer commits it: each partition's chunk is checked against this broker's lease and given its offsets.
 * An append resolves only after both. Commits run one after the other in flush order, so batches of a partition
 * keep the order they were appended in; PUTs of successive flushes may overlap. A partition this broker holds
 * no lease of, and cannot take, answers `NOT_LEADER_OR_FOLLOWER` (retriable) at once; one whose lease was lost
 * while its object was being written is refused by the commit the same way, and its object's bytes for it are
 * never indexed (an object no commit took is an orphan, swept later). Idempotent producers' batches are checked
 * by the lease holder against the partition's producer state, kept in PostgreSQL (partition-producers.ts):
 * retries are answered with the stored offsets, also after a failover to another broker.
 *
 * Reads: any broker serves any partition: the index rows from the offset, a ranged GET of each chunk (kept in a
 * bounded in-memory block cache, offsets stamped), the batches from the one holding the offset. Long-polls wait
 * for the sequencer's notifications (LISTEN), which name each partition's new high watermark.
 */
import { randomUUID } from 'node:crypto';
import { OnelogError } from '../../protocol/errors.js';
import { LOG_OVERHEAD, readBatchHeader } from '../../protocol/record-batch.js';
import type { AppendResult } from '../partition.js';
import { buildObject, stampChunk } from './object-format.js';
import type { ObjectStore } from './object-store.js';
import { chunkProducerBatches, isIdempotent, PartitionProducers } from './partition-producers.js';
import type { IndexEntry, Lease, Sequencer, SequencerListener } from './sequencer.js';

/** A partition's readable range. */
export interface PartitionPositions {
  /** The first offset still readable. */
  logStartOffset: number;
  /** The offset the next appended record will get. */
  highWatermark: number;
}

/** Whole batches read from a partition, and where the next read starts. */
export interface LogRead extends PartitionPositions {
  /** Batches as stored (RecordBatch v2, offsets stamped), concatenated; empty at the high watermark. */
  batches: Buffer;
  /** The offset after the last batch read (the requested one when nothing was read). */
  nextOffset: number;
}

/** One batch to append, to one partition. */
export interface AppendRequest {
  topic: string;
  partition: number;
  /** An encoded RecordBatch v2 (its base offset is assigned by the sequencer). */
  batch: Buffer;
}

/** What an append did with one batch: where it was stored, or why it was not (nothing of it stored). */
export type AppendOutcome = AppendResult | { error: OnelogError };

/** Options of {@link ObjectLogStore.open}. */
export interface ObjectLogOptions {
  /** The sequencer; its {@link Sequencer.listenCommits} wakes the long-polls. */
  sequencer: Sequencer;
  objects: ObjectStore;
  /** How long appended batches wait to share an object, ms (`serve --flush-window-ms`). @default 50 */
  flushWindowMs?: number;
  /** An object is written at once when this many bytes wait. @default 8388608 (8 MiB) */
  flushBytes?: number;
  /** Most bytes of chunks the block cache keeps (least recently used go first). @default 67108864 (64 MiB) */
  blockCacheBytes?: number;
  /** Index rows one read looks up at most. @default 16 */
  indexRowsPerRead?: number;
  /**
   * Called when a flush finds the lease of a partition this broker held lost: taken by another broker (its commit
   * refused, or the lease not renewed), or taken anew by this one at a new epoch after it expired (the broker was
   * paused or cut off past it; its commits under the old epoch are refused). `newEpoch` is this broker's new epoch,
   * null when another broker holds the partition.
   * @default none
   */
  onLeaseLost?: (lost: { topic: string; partition: number; epoch: number; newEpoch: number | null }) => void;
}

/** Counters of the store's work since it opened (the cost in PUTs and transactions, docs/cluster.md). */
export interface ObjectLogStats {
  objectsPut: number;
  bytesPut: number;
  commits: number;
  rangedGets: number;
  cacheHits: number;
}

interface Waiting {
  batch: Buffer;
  resolve(outcome: AppendOutcome): void;
}

interface Waiter {
  offset: number;
  wake(): void;
}

const partitionKey = (topic: string, partition: number): string => `${partition}:${topic}`;

export class ObjectLogStore {
  private pending = new Map<string, { topic: string; partition: number; batches: Waiting[] }>();
  private pendingBytes = 0;
  private timer: NodeJS.Timeout | null = null;
  /** The commit of the flush before: each commit waits for it, so a partition's batches keep their order. */
  private lastCommit: Promise<void> = Promise.resolve();
  private readonly leases = new Map<string, Lease>();
  /** Partitions being handed over (see {@link handOver}), to the broker named: their appends are refused meanwhile. */
  private readonly leaving = new Map<string, number>();
  /** Draining (see {@link setDraining}): takes no lease it does not hold. */
  private draining = false;
  /** The idempotent producers of partitions this broker wrote idempotent batches to, under their lease epoch. */
  private readonly producers = new Map<string, PartitionProducers>();
  private readonly cache = new Map<string, Buffer>();
  private cacheBytes = 0;
  private readonly waiters = new Map<string, Set<Waiter>>();
  private closed = false;
  private committed: (topic: string, partition: number, highWatermark: number) => void = () => {};
  readonly stats: ObjectLogStats = { objectsPut: 0, bytesPut: 0, commits: 0, rangedGets: 0, cacheHits: 0 };

  /** Hears the commits of every broker (set by {@link open}). */
  private listener: SequencerListener | null = null;

  private constructor(private readonly options: Required<ObjectLogOptions>) {}

  /**
   * Starts hearing the sequencer's commits.
   * @throws OnelogError `INVALID_CONFIG` for a bad flush window or size; `STORAGE_ERROR` if the sequencer cannot be heard
   */
  static async open(options: ObjectLogOptions): Promise<ObjectLogStore> {
    const resolved = {
      sequencer: options.sequencer, objects: options.objects, flushWindowMs: options.flushWindowMs ?? 50,
      flushBytes: options.flushBytes ?? 8 * 1024 * 1024, blockCacheBytes: options.blockCacheBytes ?? 64 * 1024 * 1024,
      indexRowsPerRead: options.indexRowsPerRead ?? 16, onLeaseLost: options.onLeaseLost ?? (() => {}),
    };
    if (!Number.isInteger(resolved.flushWindowMs) || resolved.flushWindowMs < 0 || resolved.flushWindowMs > 10_000) {
      throw new OnelogError('INVALID_CONFIG', `flush window must be an integer from 0 to 10000 ms, got ${resolved.flushWindowMs}`, { flushWindowMs: resolved.flushWindowMs });
    }
    if (!Number.isInteger(resolved.flushBytes) || resolved.flushBytes < 1) {
      throw new OnelogError('INVALID_CONFIG', `flush bytes must be a positive integer, got ${resolved.flushBytes}`, { flushBytes: resolved.flushBytes });
    }
    const store = new ObjectLogStore(resolved);
    store.listener = await options.sequencer.listenCommits((topic, partition, highWatermark) => store.wake(topic, partition, highWatermark));
    return store;
  }

  append(batches: readonly AppendRequest[]): Promise<AppendOutcome[]> {
    if (this.closed) return Promise.resolve(batches.map(() => ({ error: new OnelogError('BROKER_CLOSED', 'the object log is closed') })));
    const outcomes = batches.map((b) => new Promise<AppendOutcome>((resolve) => {
      const key = partitionKey(b.topic, b.partition);
      let entry = this.pending.get(key);
      if (entry === undefined) {
        entry = { topic: b.topic, partition: b.partition, batches: [] };
        this.pending.set(key, entry);
      }
      entry.batches.push({ batch: b.batch, resolve });
      this.pendingBytes += b.batch.length;
    }));
    if (this.pendingBytes >= this.options.flushBytes) this.flushNow();
    else this.timer ??= setTimeout(() => this.flushNow(), this.options.flushWindowMs);
    return Promise.all(outcomes);
  }

  /** Writes what waits as one object now (the window ended, or enough bytes wait). */
  private flushNow(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (this.pending.size === 0) return;
    const taken = [...this.pending.values()];
    this.pending = new Map();
    this.pendingBytes = 0;
    const previous = this.lastCommit;
    const done = this.flush(taken, previous).catch((err: unknown) => {
      const error = err instanceof OnelogError ? err : new OnelogError('STORAGE_ERROR', `object log: flush failed: ${(err as Error).message}`);
      for (const entry of taken) for (const w of entry.batches) w.resolve({ error });
    });
    this.lastCommit = done;
  }

  private async flush(taken: Array<{ topic: string; partition: number; batches: Waiting[] }>, previous: Promise<void>): Promise<void> {
    const leased = await this.leasesFor(taken);
    const held = taken.filter((e) => {
      if (leased.has(partitionKey(e.topic, e.partition))) return true;
      void this.refuseNotLeader(e);
      return false;
    });
    // Idempotent batches are sorted against a producer state that holds every commit before this one.
    const idempotent = held.some((e) => e.batches.some((w) => isIdempotent(w.batch)));
    if (idempotent) await previous;
    const writable: Array<{ topic: string; partition: number; written: Waiting[]; retries: Array<{ index: number; waiting: Waiting }> }> = [];
    for (const e of held) {
      const plans = idempotent && e.batches.some((w) => isIdempotent(w.batch))
        ? (await this.producersOf(e.topic, e.partition, leased.get(partitionKey(e.topic, e.partition))!.epoch)).plan(e.batches.map((w) => w.batch))
        : e.batches.map(() => ({ kind: 'write' } as const));
      const entry = { topic: e.topic, partition: e.partition, written: [] as Waiting[], retries: [] as Array<{ index: number; waiting: Waiting }> };
      plans.forEach((plan, i) => {
        const waiting = e.batches[i]!;
        if (plan.kind === 'write') entry.written.push(waiting);
        else if (plan.kind === 'same-as') entry.retries.push({ index: plan.index, waiting });
        else waiting.resolve(plan.outcome);
      });
      if (entry.written.length > 0) writable.push(entry);
    }
    if (writable.length === 0) return;
    const { body, chunks } = buildObject(writable.map((e) => ({ topic: e.topic, partition: e.partition, batches: e.written.map((w) => w.batch) })));
    const putStartedAt = Date.now();
    const key = `objects/${this.options.sequencer.brokerId}/${putStartedAt.toString(36)}-${randomUUID()}`;
    await this.options.objects.put(key, body);
    this.stats.objectsPut++;
    this.stats.bytesPut += body.length;
    await previous;
    const results = await this.options.sequencer.commit(key, body.length, chunks.map((c, i) => ({
      ...c, epoch: leased.get(partitionKey(c.topic, c.partition))!.epoch, producerBatches: chunkProducerBatches(writable[i]!.written.map((w) => w.batch)),
    })), putStartedAt);
    this.stats.commits++;
    writable.forEach((entry, i) => {
      const result = results[i]!;
      const key = partitionKey(entry.topic, entry.partition);
      if ('error' in result) {
        const lease = leased.get(key)!;
        if (result.error.code === 'NOT_LEADER_OR_FOLLOWER' && this.leases.get(key) === lease) {
          this.options.onLeaseLost({ topic: entry.topic, partition: entry.partition, epoch: lease.epoch, newEpoch: null });
        }
        this.leases.delete(key);
        this.producers.delete(key);
        for (const w of [...entry.written, ...entry.retries.map((r) => r.waiting)]) w.resolve({ error: result.error });
        return;
      }
      const outcomes: AppendResult[] = [];
      let next = result.baseOffset;
      for (const w of entry.written) {
        const lastOffsetDelta = readBatchHeader(w.batch).lastOffsetDelta;
        outcomes.push({ baseOffset: next, lastOffset: next + lastOffsetDelta });
        next += lastOffsetDelta + 1;
      }
      this.producers.get(key)?.committed(entry.written.map((w) => w.batch), outcomes.map((o) => o.baseOffset));
      entry.written.forEach((w, k) => w.resolve(outcomes[k]!));
      for (const r of entry.retries) r.waiting.resolve({ ...outcomes[r.index]!, duplicate: true });
      this.wake(entry.topic, entry.partition, result.highWatermark);
    });
  }

  /** Answers a partition's batches `NOT_LEADER_OR_FOLLOWER`, naming the broker that leads it (`leaderBrokerId`). */
  private async refuseNotLeader(e: { topic: string; partition: number; batches: Waiting[] }): Promise<void> {
    const { brokerId } = this.options.sequencer;
    const leader = this.leaving.get(partitionKey(e.topic, e.partition)) ?? (await this.options.sequencer.state(e.topic, e.partition).catch(() => undefined))?.leaderBrokerId ?? null;
    const error = new OnelogError('NOT_LEADER_OR_FOLLOWER', `broker ${brokerId} does not hold ${e.topic}/${e.partition}: ` +
      `${leader === null ? 'another broker' : `broker ${leader}`} leads it; send it there`, { topic: e.topic, partition: e.partition, brokerId, leaderBrokerId: leader });
    for (const w of e.batches) w.resolve({ error });
  }

  /** The partition's idempotent producers, rebuilt from the sequencer when the lease epoch is new to this broker. */
  private async producersOf(topic: string, partition: number, leaseEpoch: number): Promise<PartitionProducers> {
    const key = partitionKey(topic, partition);
    let producers = this.producers.get(key);
    if (producers === undefined || producers.leaseEpoch !== leaseEpoch) {
      producers = await PartitionProducers.load(this.options.sequencer, topic, partition, leaseEpoch);
      this.producers.set(key, producers);
    }
    return producers;
  }

  /** The leases of the flush's partitions: those held and not near their end, the rest taken or renewed now. */
  private async leasesFor(taken: ReadonlyArray<{ topic: string; partition: number }>): Promise<Map<string, Lease>> {
    // Renewed a third of the lease (at most 2 s) before its end, so a short --lease-ms is not taken again at every flush.
    const soon = Date.now() + Math.min(2_000, Math.floor(this.options.sequencer.leaseMs / 3));
    const wanted = taken.filter((e) => {
      const key = partitionKey(e.topic, e.partition);
      const held = this.leases.get(key);
      return !this.leaving.has(key) && (held === undefined ? !this.draining : held.expiresAt < soon);
    });
    const acquired = new Map((await this.options.sequencer.acquire(wanted)).map((lease) => [partitionKey(lease.topic, lease.partition), lease]));
    for (const e of wanted) {
      const key = partitionKey(e.topic, e.partition);
      const previous = this.leases.get(key);
      const lease = acquired.get(key);
      if (previous !== undefined && lease?.epoch !== previous.epoch) {
        this.options.onLeaseLost({ topic: e.topic, partition: e.partition, epoch: previous.epoch, newEpoch: lease?.epoch ?? null });
      }
      if (lease === undefined) this.leases.delete(key);
      else this.leases.set(key, lease);
    }
    const out = new Map<string, Lease>();
    for (const e of taken) {
      const key = partitionKey(e.topic, e.partition);
      if (this.leaving.has(key)) continue;
      const lease = this.leases.get(key);
      if (lease !== undefined && lease.expiresAt > Date.now()) out.set(key, lease);
    }
    return out;
  }

  /**
   * Hands partitions this broker holds over to other brokers (the lease balance, a drain: src/cluster/lease-balance.ts):
   * from the call on, appends to them are refused `NOT_LEADER_OR_FOLLOWER` naming the broker they go to (the client
   * sends them there); the flushes already under way are committed first, under the epoch they were sequenced with, so
   * every append acknowledged stays; then the sequencer moves each lease at its epoch ({@link Sequencer.handOver}). A
   * partition no longer held at the epoch given stays as it is.
   * @throws OnelogError `STORAGE_ERROR` when the sequencer fails (the partitions stay this broker's, appends resume)
   */
  async handOver(moves: ReadonlyArray<{ topic: string; partition: number; epoch: number; toBrokerId: number }>): Promise<void> {
    const keys = moves.map((m) => partitionKey(m.topic, m.partition));
    moves.forEach((m, i) => this.leaving.set(keys[i]!, m.toBrokerId));
    try {
      // Flushes are chained: the last one's commit follows every flush taken before the refusals began.
      this.flushNow();
      await this.lastCommit;
      await this.options.sequencer.handOver(moves);
      for (const key of keys) {
        this.leases.delete(key);
        this.producers.delete(key);
      }
    } finally {
      for (const key of keys) this.leaving.delete(key);
    }
  }

  /**
   * Draining or not (`onelog cluster drain`, docs/cluster.md): a draining broker takes no partition lease it does not
   * hold (a produce to such a partition is refused `NOT_LEADER_OR_FOLLOWER`; another broker takes it), and renews those
   * it holds until they are handed over.
   */
  setDraining(draining: boolean): void {
    this.draining = draining;
  }

  async read(topic: string, partition: number, offset: number, maxBytes: number): Promise<LogRead> {
    try {
      return await this.readOnce(topic, partition, offset, maxBytes);
    } catch (err) {
      // A merge replaced the rows just read and the sweep deleted their objects: the rows read again name the merged one.
      if ((err as OnelogError).code !== 'NOT_FOUND') throw err;
      return this.readOnce(topic, partition, offset, maxBytes);
    }
  }

  private async readOnce(topic: string, partition: number, offset: number, maxBytes: number): Promise<LogRead> {
    const positions = await this.positions(topic, partition);
    if (offset < positions.logStartOffset || offset > positions.highWatermark) {
      throw new OnelogError('OFFSET_OUT_OF_RANGE', `offset ${offset} is outside ${topic}/${partition}: readable offsets are ` +
        `${positions.logStartOffset} to ${positions.highWatermark}`, { topic, partition, offset, ...positions });
    }
    const parts: Buffer[] = [];
    let bytes = 0;
    let next = offset;
    if (offset < positions.highWatermark) {
      const entries = await this.options.sequencer.lookup(topic, partition, offset, this.options.indexRowsPerRead);
      for (const entry of entries) {
        if (entry.baseOffset >= positions.highWatermark) break;
        const chunk = await this.chunk(entry);
        let pos = 0;
        let batchBase = entry.baseOffset;
        while (pos < chunk.length) {
          const header = readBatchHeader(chunk, pos);
          const size = LOG_OVERHEAD + header.batchLength;
          const end = batchBase + header.lastOffsetDelta + 1;
          if (end > next) {
            if (parts.length > 0 && bytes + size > maxBytes) return { batches: Buffer.concat(parts), nextOffset: next, ...positions };
            parts.push(chunk.subarray(pos, pos + size));
            bytes += size;
            next = end;
          }
          batchBase = end;
          pos += size;
        }
      }
      // No row holds an offset from here below the high watermark: compaction removed them all (offsets are positions).
      if (entries.length === 0) next = positions.highWatermark;
    }
    return { batches: parts.length === 1 ? parts[0]! : Buffer.concat(parts), nextOffset: next, ...positions };
  }

  /** A chunk's bytes with its offsets stamped: from the block cache, or a ranged GET. */
  private async chunk(entry: IndexEntry): Promise<Buffer> {
    const key = `${entry.objectKey}@${entry.position}`;
    const cached = this.cache.get(key);
    if (cached !== undefined) {
      this.cache.delete(key);
      this.cache.set(key, cached); // most recently used last
      this.stats.cacheHits++;
      return cached;
    }
    const bytes = await this.options.objects.get(entry.objectKey, { position: entry.position, length: entry.length });
    this.stats.rangedGets++;
    stampChunk(bytes, entry.baseOffset);
    if (bytes.length <= this.options.blockCacheBytes) {
      this.cache.set(key, bytes);
      this.cacheBytes += bytes.length;
      for (const [k, v] of this.cache) {
        if (this.cacheBytes <= this.options.blockCacheBytes) break;
        this.cache.delete(k);
        this.cacheBytes -= v.length;
      }
    }
    return bytes;
  }

  async positions(topic: string, partition: number): Promise<PartitionPositions> {
    const state = await this.options.sequencer.state(topic, partition);
    if (state === undefined) throw new OnelogError('UNKNOWN_PARTITION', `partition ${topic}/${partition} does not exist`, { topic, partition });
    return { logStartOffset: state.logStartOffset, highWatermark: state.highWatermark };
  }

  deleteRecordsBefore(topic: string, partition: number, offset: number): Promise<number> {
    return this.options.sequencer.deleteRecordsBefore(topic, partition, offset);
  }

  async waitForData(topic: string, partition: number, offset: number, maxWaitMs: number): Promise<void> {
    if (this.closed || maxWaitMs <= 0) return;
    const key = partitionKey(topic, partition);
    let timer: NodeJS.Timeout | undefined;
    let waiter: Waiter | undefined;
    const woken = new Promise<void>((resolve) => {
      waiter = { offset, wake: resolve };
      timer = setTimeout(resolve, maxWaitMs);
    });
    // Registered before the high watermark is read: a commit in between wakes it.
    let set = this.waiters.get(key);
    if (set === undefined) this.waiters.set(key, (set = new Set()));
    set.add(waiter!);
    try {
      if ((await this.positions(topic, partition)).highWatermark > offset) return;
      await woken;
    } finally {
      clearTimeout(timer);
      set.delete(waiter!);
      if (set.size === 0 && this.waiters.get(key) === set) this.waiters.delete(key);
    }
  }

  /**
   * Calls `listener` with each partition's new high watermark, at every commit of this broker and every
   * notification of another's (one listener: a later call replaces it).
   */
  onCommit(listener: (topic: string, partition: number, highWatermark: number) => void): void {
    this.committed = listener;
  }

  /** Wakes the waits of a partition whose high watermark reached `highWatermark`. */
  private wake(topic: string, partition: number, highWatermark: number): void {
    this.committed(topic, partition, highWatermark);
    const set = this.waiters.get(partitionKey(topic, partition));
    if (set === undefined) return;
    for (const w of set) if (highWatermark > w.offset) w.wake();
  }

  /** Writes what waits, waits for its commit, gives the leases up and stops listening. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.flushNow();
    await this.lastCommit;
    for (const set of this.waiters.values()) for (const w of set) w.wake();
    await this.options.sequencer.release([...this.leases.values()]).catch(() => {});
    this.leases.clear();
    await this.listener?.close();
  }
}

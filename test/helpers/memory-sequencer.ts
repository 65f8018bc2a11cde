/**
 * The sequencer in memory, for the unit tier's runs of the object engine (test/log/logs-contract.test.ts): the
 * {@link Sequencer} of PostgreSQL (src/log/objects/postgres-sequencer.ts) with its rules kept: partition leases
 * with epochs raised at every change of holder and expiry by one clock (the "database's": the tables' clock, a manual one where a test moves time),
 * commits that check each chunk's lease and assign offsets strictly after the high watermark, index rows, retired
 * and committed objects, each idempotent producer's last batches, and the announcements of commits and topic
 * changes. Every method runs whole between two awaits, so each is atomic as PostgreSQL's transaction is.
 *
 * Brokers sharing a cluster share one {@link MemorySequencerTables}: `new MemorySequencer(tables, { brokerId })`
 * each. A test double: nothing survives the process, so no broker uses it.
 */
import { systemClock } from '../../src/common/clock.js';
import type { Clock } from '../../src/common/clock.js';
import { OnelogError } from '../../src/protocol/errors.js';
import {
  byTopicPartition, deleteRecordsRefusal, notLeaderError, PRODUCER_BATCHES_KEPT,
} from '../../src/log/objects/sequencer.js';
import type {
  ChunkResult, IndexEntry, Lease, ObjectChunk, PartitionLease, PartitionState, Sequencer, SequencerListener, StoredProducerBatch,
} from '../../src/log/objects/sequencer.js';

interface PartitionRow extends PartitionState {
  topic: string;
  partition: number;
  /** Index rows, by base offset. */
  index: IndexEntry[];
  /** Idempotent producers' batches, by base offset. */
  producers: StoredProducerBatch[];
}

/** What PostgreSQL's tables hold, shared by the sequencers of one cluster's brokers. */
export class MemorySequencerTables {
  /** @param clock the database's clock, by which leases expire and objects age (default: the system's) */
  constructor(readonly clock: Clock = systemClock) {}

  readonly partitions = new Map<string, PartitionRow>();
  readonly objects = new Map<string, { retiredAt: number | null }>();
  readonly commitListeners = new Set<(topic: string, partition: number, highWatermark: number) => void>();
  readonly topicListeners = new Set<(topic: string) => void>();

  row(topic: string, partition: number): PartitionRow | undefined {
    return this.partitions.get(`${partition}:${topic}`);
  }
}

export class MemorySequencer implements Sequencer {
  readonly brokerId: number;
  readonly leaseMs: number;
  readonly maxObjectAgeMs: number;

  constructor(private readonly tables: MemorySequencerTables, options: { brokerId: number; leaseMs?: number; maxObjectAgeMs?: number }) {
    this.brokerId = options.brokerId;
    this.leaseMs = options.leaseMs ?? 10_000;
    this.maxObjectAgeMs = options.maxObjectAgeMs ?? 300_000;
  }

  async addPartitions(topic: string, partitions: number): Promise<void> {
    for (let partition = 0; partition < partitions; partition++) {
      if (this.tables.row(topic, partition) !== undefined) continue;
      this.tables.partitions.set(`${partition}:${topic}`, {
        topic, partition, logStartOffset: 0, highWatermark: 0, leaderBrokerId: null, leaderEpoch: 0, leaseExpiresAt: null, index: [], producers: [],
      });
    }
  }

  async acquire(partitions: ReadonlyArray<{ topic: string; partition: number }>): Promise<Lease[]> {
    const now = this.tables.clock.now();
    const out: Lease[] = [];
    for (const wanted of new Set(partitions.map((p) => this.tables.row(p.topic, p.partition)))) {
      if (wanted === undefined || !(wanted.leaderBrokerId === null || wanted.leaderBrokerId === this.brokerId || wanted.leaseExpiresAt! <= now)) continue;
      if (!(wanted.leaderBrokerId === this.brokerId && wanted.leaseExpiresAt! > now)) wanted.leaderEpoch++;
      wanted.leaderBrokerId = this.brokerId;
      wanted.leaseExpiresAt = now + this.leaseMs;
      out.push({ topic: wanted.topic, partition: wanted.partition, epoch: wanted.leaderEpoch, expiresAt: wanted.leaseExpiresAt });
    }
    return out.sort(byTopicPartition);
  }

  async release(leases: readonly Lease[]): Promise<void> {
    for (const l of leases) {
      const row = this.tables.row(l.topic, l.partition);
      if (row === undefined || row.leaderBrokerId !== this.brokerId || row.leaderEpoch !== l.epoch) continue;
      row.leaderBrokerId = null;
      row.leaseExpiresAt = null;
    }
  }

  async handOver(moves: ReadonlyArray<{ topic: string; partition: number; epoch: number; toBrokerId: number }>): Promise<Array<{ topic: string; partition: number }>> {
    const now = this.tables.clock.now();
    const out: Array<{ topic: string; partition: number }> = [];
    for (const m of moves) {
      const row = this.tables.row(m.topic, m.partition);
      if (row === undefined || row.leaderBrokerId !== this.brokerId || row.leaderEpoch !== m.epoch || row.leaseExpiresAt! <= now) continue;
      row.leaderBrokerId = m.toBrokerId;
      row.leaderEpoch++;
      row.leaseExpiresAt = now + this.leaseMs;
      out.push({ topic: m.topic, partition: m.partition });
    }
    return out.sort(byTopicPartition);
  }

  async commit(objectKey: string, sizeBytes: number, chunks: readonly ObjectChunk[], putStartedAt = this.tables.clock.now()): Promise<ChunkResult[]> {
    const ageMs = this.tables.clock.now() - putStartedAt;
    if (ageMs > this.maxObjectAgeMs) {
      const error = new OnelogError('REQUEST_TIMED_OUT', `object ${objectKey} was written ${ageMs} ms ago, more than ${this.maxObjectAgeMs} ms: ` +
        'not committed (the orphan sweep may delete it); send the records again', { objectKey, ageMs, maxObjectAgeMs: this.maxObjectAgeMs });
      return chunks.map(() => ({ error }));
    }
    // Checked before anything changes: PostgreSQL's transaction would roll back whole.
    const bad = chunks.find((c) => !Number.isSafeInteger(c.offsets) || c.offsets < 1);
    if (bad !== undefined) throw new OnelogError('INVALID_REQUEST', `a chunk takes at least one offset, got ${bad.offsets}`, { topic: bad.topic, partition: bad.partition });
    const now = this.tables.clock.now();
    const results = chunks.map((c): ChunkResult => {
      const row = this.tables.row(c.topic, c.partition);
      if (row === undefined || row.leaderBrokerId !== this.brokerId || row.leaderEpoch !== c.epoch || row.leaseExpiresAt! <= now) {
        return { error: notLeaderError(this.brokerId, c, row) };
      }
      const baseOffset = row.highWatermark;
      row.highWatermark += c.offsets;
      row.index.push({ baseOffset, endOffset: row.highWatermark, objectKey, position: c.position, length: c.length, maxTimestamp: c.maxTimestamp });
      for (const b of c.producerBatches ?? []) {
        const base = baseOffset + b.offsetInChunk;
        row.producers.push({
          producerId: b.producerId, producerEpoch: b.producerEpoch, baseSequence: b.baseSequence, lastSequence: b.lastSequence, baseOffset: base,
          lastOffset: base + b.lastOffsetDelta,
        });
        const mine = row.producers.filter((p) => p.producerId === b.producerId);
        const dropped = new Set(mine.slice(0, Math.max(0, mine.length - PRODUCER_BATCHES_KEPT)));
        row.producers = row.producers.filter((p) => !dropped.has(p));
      }
      return { baseOffset, highWatermark: row.highWatermark };
    });
    const accepted = chunks.flatMap((c, i) => {
      const r = results[i]!;
      return 'error' in r ? [] : [{ topic: c.topic, partition: c.partition, highWatermark: r.highWatermark }];
    });
    if (accepted.length === 0) return results;
    this.tables.objects.set(objectKey, { retiredAt: null });
    // Heard after the commit, as PostgreSQL delivers a notification at COMMIT.
    setImmediate(() => {
      for (const c of accepted) for (const heard of this.tables.commitListeners) heard(c.topic, c.partition, c.highWatermark);
    });
    return results;
  }

  async lookup(topic: string, partition: number, offset: number, limit = 16): Promise<IndexEntry[]> {
    return (this.tables.row(topic, partition)?.index ?? []).filter((r) => r.endOffset > offset).slice(0, limit).map((r) => ({ ...r }));
  }

  async deleteRecordsBefore(topic: string, partition: number, offset: number): Promise<number> {
    const row = this.tables.row(topic, partition);
    if (row === undefined || offset > row.highWatermark) throw deleteRecordsRefusal(topic, partition, offset, row);
    row.logStartOffset = Math.max(row.logStartOffset, offset);
    const gone = row.index.filter((r) => r.endOffset <= row.logStartOffset);
    row.index = row.index.filter((r) => r.endOffset > row.logStartOffset);
    this.retireUnreferenced(gone.map((r) => r.objectKey));
    return row.logStartOffset;
  }

  async deletePartitions(topic: string): Promise<void> {
    const rows = [...this.tables.partitions.values()].filter((r) => r.topic === topic);
    for (const r of rows) this.tables.partitions.delete(`${r.partition}:${topic}`);
    this.retireUnreferenced(rows.flatMap((r) => r.index.map((i) => i.objectKey)));
  }

  async states(topic: string, partitions: readonly number[]): Promise<Map<number, { logStartOffset: number; highWatermark: number }>> {
    const out = new Map<number, { logStartOffset: number; highWatermark: number }>();
    for (const p of partitions) {
      const row = this.tables.row(topic, p);
      if (row !== undefined) out.set(p, { logStartOffset: row.logStartOffset, highWatermark: row.highWatermark });
    }
    return out;
  }

  async allStates(): Promise<Array<{ topic: string; partition: number; logStartOffset: number; highWatermark: number }>> {
    return [...this.tables.partitions.values()].map((r) => ({ topic: r.topic, partition: r.partition, logStartOffset: r.logStartOffset, highWatermark: r.highWatermark }));
  }

  async sizes(topic: string): Promise<Map<number, number>> {
    const out = new Map<number, number>();
    for (const r of this.tables.partitions.values()) {
      const readable = r.index.filter((i) => i.endOffset > r.logStartOffset);
      if (r.topic === topic && readable.length > 0) out.set(r.partition, readable.reduce((sum, i) => sum + i.length, 0));
    }
    return out;
  }

  async bytesFrom(topic: string, partition: number, offset: number): Promise<number> {
    return (await this.lookup(topic, partition, offset, Infinity)).reduce((sum, i) => sum + i.length, 0);
  }

  async firstChunkAtOrAfter(topic: string, partition: number, timestamp: number, fromOffset: number): Promise<IndexEntry | undefined> {
    return (await this.lookup(topic, partition, fromOffset, Infinity)).find((r) => r.maxTimestamp >= timestamp);
  }

  async sizeBoundary(topic: string, partition: number, retentionBytes: number): Promise<number> {
    const row = this.tables.row(topic, partition);
    if (row === undefined) return 0;
    let boundary = row.highWatermark;
    let after = 0;
    for (const r of (await this.lookup(topic, partition, row.logStartOffset, Infinity)).reverse()) {
      after += r.length;
      if (after <= retentionBytes) boundary = r.baseOffset;
    }
    return boundary;
  }

  async producerBatches(topic: string, partition: number): Promise<StoredProducerBatch[]> {
    return (this.tables.row(topic, partition)?.producers ?? []).map((b) => ({ ...b }));
  }

  async rewriteIndexRows(
    topic: string, partition: number, rows: readonly IndexEntry[], replacements: readonly IndexEntry[],
    created: ReadonlyArray<{ objectKey: string; sizeBytes: number }>,
  ): Promise<boolean> {
    const row = this.tables.row(topic, partition);
    if (rows.length === 0 || row === undefined) return false;
    const same = (a: IndexEntry, b: IndexEntry) =>
      a.baseOffset === b.baseOffset && a.endOffset === b.endOffset && a.objectKey === b.objectKey && a.position === b.position && a.length === b.length;
    const matched = row.index.filter((r) => rows.some((given) => same(r, given)));
    if (matched.length !== rows.length) return false; // another change won: nothing is done
    row.index = [...row.index.filter((r) => !matched.includes(r)), ...replacements.map((r) => ({ ...r }))].sort((a, b) => a.baseOffset - b.baseOffset);
    for (const o of created) this.tables.objects.set(o.objectKey, { retiredAt: null });
    this.retireUnreferenced(rows.map((r) => r.objectKey));
    return true;
  }

  async retiredObjects(beforeMs: number): Promise<string[]> {
    return [...this.tables.objects].filter(([, o]) => o.retiredAt !== null && o.retiredAt < beforeMs).map(([key]) => key).sort();
  }

  async forgetObjects(keys: readonly string[]): Promise<void> {
    for (const k of keys) if (this.tables.objects.get(k)?.retiredAt != null) this.tables.objects.delete(k);
  }

  async committedObjects(keys: readonly string[]): Promise<Set<string>> {
    return new Set(keys.filter((k) => this.tables.objects.has(k)));
  }

  async state(topic: string, partition: number): Promise<PartitionState | undefined> {
    const row = this.tables.row(topic, partition);
    if (row === undefined) return undefined;
    const { logStartOffset, highWatermark, leaderBrokerId, leaderEpoch, leaseExpiresAt } = row;
    return { logStartOffset, highWatermark, leaderBrokerId, leaderEpoch, leaseExpiresAt };
  }

  async leaders(topics: readonly string[]): Promise<Map<string, Map<number, number>>> {
    const out = new Map<string, Map<number, number>>();
    const now = this.tables.clock.now();
    for (const r of this.tables.partitions.values()) {
      if (!topics.includes(r.topic) || r.leaderBrokerId === null || r.leaseExpiresAt! <= now) continue;
      let partitions = out.get(r.topic);
      if (partitions === undefined) out.set(r.topic, (partitions = new Map()));
      partitions.set(r.partition, r.leaderBrokerId);
    }
    return out;
  }

  async partitionLeases(topic?: string): Promise<PartitionLease[]> {
    const now = this.tables.clock.now();
    return [...this.tables.partitions.values()].filter((r) => r.leaderBrokerId !== null && r.leaseExpiresAt! > now && (topic === undefined || r.topic === topic))
      .sort(byTopicPartition)
      .map((r) => ({ topic: r.topic, partition: r.partition, brokerId: r.leaderBrokerId!, epoch: r.leaderEpoch, expiresAt: r.leaseExpiresAt! }));
  }

  async listenCommits(committed: (topic: string, partition: number, highWatermark: number) => void): Promise<SequencerListener> {
    return this.hear(this.tables.commitListeners, committed);
  }

  async listenTopics(changed: (topic: string) => void): Promise<SequencerListener> {
    return this.hear(this.tables.topicListeners, changed);
  }

  async announceTopic(topic: string): Promise<void> {
    setImmediate(() => {
      for (const heard of this.tables.topicListeners) heard(topic);
    });
  }

  private hear<T>(listeners: Set<T>, listener: T): SequencerListener {
    listeners.add(listener);
    return { close: async () => void listeners.delete(listener) };
  }

  /** Marks retired those of `keys` no index row refers to any more. */
  private retireUnreferenced(keys: readonly string[]): void {
    const now = this.tables.clock.now();
    for (const key of new Set(keys)) {
      const o = this.tables.objects.get(key);
      if (o === undefined || o.retiredAt !== null) continue;
      const referenced = [...this.tables.partitions.values()].some((r) => r.index.some((i) => i.objectKey === key));
      if (!referenced) o.retiredAt = now;
    }
  }
}

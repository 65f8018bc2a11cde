/**
 * Crash-counted deliveries (docs/retries.md, "A consumer that dies on a record"): the poison pill, a record that
 * takes its consumer down every time it is processed, is bounded as a failing handler is. A member that ends
 * without leaving (its session timed out, or it held a revoked partition past its deadline) while it held records
 * of a partition past the group's committed offset leaves a {@link DeliveryState} in the offset store (its record state):
 *
 * - the records it held, from the committed offset to the end of what it was handed, become suspect, and a member's
 *   fetch is handed them one at a time, so the next end falls on the one record that was in hand;
 * - the deliveries are counted: alone in hand, of that record; with a batch in hand (which record did it is unknown),
 *   of every record of the batch;
 * - a record held alone whose deliveries reach the subscription's limit (with its earlier attempts through the retry
 *   tiers, `maxAttempts`) is dead-lettered, and the group's committed offset moves past it: the partition flows on.
 *
 * The suspect range ends once the group commits past it. A subscription with no bound (no retry policy, no
 * `maxDeliveries`) counts nothing. The states are kept in memory for the partitions a member
 * of this coordinator was granted (read at the grant), so a fetch asks nothing of the store.
 */
import type { OffsetStore, RecordState } from '../offsets/offset-store.js';
import type { Logger } from '../common/logger.js';
import type { Member } from './group-membership.js';
import { parsePartitionKey } from './group-membership.js';

/**
 * What a group knows of one partition's records beyond its committed offset: the records that were in a member's hand
 * when it ended without committing or nacking past them, and how often each such record was handed out before such
 * an end. Kept in the offset store as the partition's record state.
 */
export interface DeliveryState {
  /**
   * The records from `suspectFrom` (inclusive) to `suspectTo` (exclusive) were in hand when a member ended: they are
   * handed out one at a time until the group's committed offset passes `suspectTo`. Equal when none are.
   */
  suspectFrom: number;
  suspectTo: number;
  /** Per offset (decimal text), the deliveries of the record, held alone, that ended with its member ending, >= 1. */
  crashes: Record<string, number>;
  /**
   * `[from, to)` of each batch a member ended holding (several records in hand: which did it is unknown): a delivery
   * of every record in it that ended with its member ending.
   */
  batches: Array<[number, number]>;
}

/** The deliveries of the record at `offset` that ended with their member ending: alone, and within batches. */
function crashesOf(state: DeliveryState | undefined, offset: number): number {
  if (state === undefined) return 0;
  return (state.crashes[offset] ?? 0) + state.batches.filter(([from, to]) => offset >= from && offset < to).length;
}

/** A stored record state as a {@link DeliveryState}; undefined when there is none. @throws Error for another shape */
function asDeliveryState(state: RecordState | undefined): DeliveryState | undefined {
  if (state === undefined) return undefined;
  const { suspectFrom, suspectTo, crashes, batches = [] } = state;
  if (typeof suspectFrom !== 'number' || typeof suspectTo !== 'number' || crashes === null || typeof crashes !== 'object' || !Array.isArray(batches)) {
    throw new Error(`a record state that is not a delivery state: ${JSON.stringify(state).slice(0, 200)}`);
  }
  return { suspectFrom, suspectTo, crashes: crashes as Record<string, number>, batches: batches as Array<[number, number]> };
}

/** `state` without what lies below `offset` (committed past, or dead-lettered): the suspect range and counts from there on. */
function trimmed(state: DeliveryState, offset: number): DeliveryState {
  return {
    suspectFrom: Math.min(Math.max(state.suspectFrom, offset), state.suspectTo),
    suspectTo: state.suspectTo,
    crashes: Object.fromEntries(Object.entries(state.crashes).filter(([o]) => Number(o) >= offset)),
    batches: state.batches.flatMap(([from, to]): Array<[number, number]> => (to <= offset ? [] : [[Math.max(from, offset), to]])),
  };
}

/** Where a partition's records go once a crash-counted record is spent. */
export interface DeadLetterSink {
  /**
   * The most deliveries a record of the group's partition of `topic` (a subscribed topic or its tier) may have: the
   * retry policy's `maxAttempts`, else the subscription's `maxDeliveries`; null when unbounded (a member's end then
   * counts nothing, as before there were counts).
   */
  deliveryLimit(groupId: string, topic: string): Promise<number | null>;
  /**
   * Dead-letters the record at `offset` if its deliveries are spent: its attempts through the retry path before
   * this one, and `crashes` deliveries that ended with their member ending, reach the subscription's limit.
   * Resolves once it is on disk. @returns whether it was dead-lettered (false: no limit, or not reached yet)
   */
  deadLetterIfSpent(groupId: string, topic: string, partition: number, offset: number, crashes: number): Promise<boolean>;
}

const keyOf = (groupId: string, topic: string, partition: number) => `${groupId}\0${topic}/${partition}`;

export class DeliveryCounts {
  /** `group \0 topic/partition` -> its delivery state, for partitions granted to a member of this coordinator. */
  private readonly states = new Map<string, DeliveryState>();

  constructor(
    private readonly offsets: OffsetStore,
    private readonly sink: DeadLetterSink,
    private readonly logger: Logger,
    /** Commits the group's offset of a partition past a dead-lettered record (unfenced, as an admin's). */
    private readonly commitPast: (groupId: string, topic: string, partition: number, offset: number) => Promise<void>,
  ) {}

  /** Reads the delivery states of partitions granted to a member, for {@link maxRecords}. */
  async load(groupId: string, partitions: ReadonlyArray<{ topic: string; partition: number }>): Promise<void> {
    for (const { topic, partition } of partitions) {
      const state = asDeliveryState(await this.offsets.recordState(groupId, topic, partition));
      if (state === undefined) this.states.delete(keyOf(groupId, topic, partition));
      else this.states.set(keyOf(groupId, topic, partition), state);
    }
  }

  /** 1 when a member's fetch of the partition from `offset` is in its suspect range (one record at a time); else undefined. */
  maxRecords(groupId: string, topic: string, partition: number, offset: number): 1 | undefined {
    const state = this.states.get(keyOf(groupId, topic, partition));
    return state !== undefined && offset >= state.suspectFrom && offset < state.suspectTo ? 1 : undefined;
  }

  /** The deliveries of the record at `offset` that ended with their member ending (0 when none). */
  crashes(groupId: string, topic: string, partition: number, offset: number): number {
    return crashesOf(this.states.get(keyOf(groupId, topic, partition)), offset);
  }

  /**
   * A member ended without leaving: counts the delivery of the first record it held past the committed offset in
   * each partition, marks what it held suspect, and dead-letters a record held alone whose deliveries are spent.
   * Call before the member's partitions are granted to another.
   */
  async memberEnded(groupId: string, member: Member): Promise<void> {
    for (const [key, held] of member.handedOut) {
      const { topic, partition } = parsePartitionKey(key);
      if (await this.sink.deliveryLimit(groupId, topic) === null) continue;
      const from = (await this.offsets.get(groupId, topic, partition))?.offset ?? held.first;
      if (from >= held.end) continue;
      const stored = this.states.get(keyOf(groupId, topic, partition)) ?? asDeliveryState(await this.offsets.recordState(groupId, topic, partition));
      const alone = held.end - from === 1;
      let state = trimmed({ suspectFrom: from, suspectTo: Math.max(held.end, stored?.suspectTo ?? 0), crashes: { ...stored?.crashes }, batches: [...stored?.batches ?? []] }, from);
      // Held alone, the end falls on that record; with a batch in hand, on each record of it.
      if (alone) state.crashes[from] = (state.crashes[from] ?? 0) + 1;
      else state.batches.push([from, held.end]);
      const deliveries = crashesOf(state, from);
      this.logger.warn({ groupId, memberId: member.memberId, topic, partition, offset: from, heldTo: held.end, deliveries },
        'a member ended holding records it had not committed: they are handed out one at a time');
      if (alone && await this.sink.deadLetterIfSpent(groupId, topic, partition, from, deliveries)) {
        this.logger.warn({ groupId, topic, partition, offset: from, deliveries }, 'dead-lettered a record whose consumer ended each time it had it');
        state = trimmed(state, from + 1);
        await this.commitPast(groupId, topic, partition, from + 1);
      }
      await this.save(groupId, topic, partition, state);
    }
  }

  /** The group committed `offset` of a partition: the records below it are done with. */
  async committed(groupId: string, topic: string, partition: number, offset: number): Promise<void> {
    const state = this.states.get(keyOf(groupId, topic, partition));
    if (state === undefined || offset <= state.suspectFrom) return;
    await this.save(groupId, topic, partition, trimmed(state, offset));
  }

  /** Forgets what is known of a group's partitions of `topic` (an executed reset moved its offsets). */
  async reset(groupId: string, topic: string, partitions: readonly number[]): Promise<void> {
    for (const partition of partitions) await this.save(groupId, topic, partition, { suspectFrom: 0, suspectTo: 0, crashes: {}, batches: [] });
  }

  /** Forgets a deleted group's states (the offset store deleted them with its offsets). */
  deleteGroup(groupId: string): void {
    for (const key of [...this.states.keys()]) if (key.startsWith(`${groupId}\0`)) this.states.delete(key);
  }

  /** Stores a state, or removes it when nothing is suspect and no count is left. */
  private async save(groupId: string, topic: string, partition: number, state: DeliveryState): Promise<void> {
    const empty = state.suspectFrom >= state.suspectTo && Object.keys(state.crashes).length === 0 && state.batches.length === 0;
    await this.offsets.setRecordState(groupId, topic, partition, empty ? null : { ...state });
    if (empty) this.states.delete(keyOf(groupId, topic, partition));
    else this.states.set(keyOf(groupId, topic, partition), state);
  }
}

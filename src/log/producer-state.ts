/**
 * The idempotent producer's state in one partition (Kafka's ProducerStateManager), the rules both engines
 * follow: for every producer id seen, its epoch and its last {@link RETAINED_BATCHES_PER_PRODUCER} batches
 * (sequence range and offsets). {@link ProducerStateManager.check} runs before a batch gets offsets and says
 * whether it goes on, is a retry of a stored batch (answer with the original offsets), or is refused;
 * {@link ProducerStateManager.update} records it once written. Both are O(1) and allocate nothing on the
 * accepted path. The state lives in memory; each engine keeps it durable its own way (segments/producer-snapshots.ts:
 * snapshot files and a replay of the segments; objects/partition-producers.ts: the batches the sequencer recorded).
 *
 * Forgetting: a producer whose newest batch lies wholly below the log start offset (retention,
 * delete-records) is forgotten, at once and on every rebuild; and at most `maxProducers` producers are kept,
 * the one that appended least recently evicted first. A forgotten producer's next batch must start at
 * sequence 0, else it gets `UNKNOWN_PRODUCER_ID`.
 */
import { OnelogError } from '../protocol/errors.js';
import type { BatchHeader } from '../protocol/record-batch.js';

/** Batches remembered per producer for retry detection (Kafka's NUM_BATCHES_TO_RETAIN, its max.in.flight bound). */
export const RETAINED_BATCHES_PER_PRODUCER = 5;
/** Producers remembered per partition unless {@link ProducerStateOptions.maxProducers} says otherwise. */
export const DEFAULT_MAX_PRODUCERS = 10_000;
/** Sequences are int32 and wrap from this to 0, as Kafka's. */
export const MAX_SEQUENCE = 0x7fff_ffff;
const R = RETAINED_BATCHES_PER_PRODUCER;

/** The sequence of a batch's last record: `baseSequence + lastOffsetDelta`, wrapping past {@link MAX_SEQUENCE}. */
export function lastSequenceOf(baseSequence: number, lastOffsetDelta: number): number {
  return baseSequence > MAX_SEQUENCE - lastOffsetDelta
    ? lastOffsetDelta - (MAX_SEQUENCE - baseSequence) - 1
    : baseSequence + lastOffsetDelta;
}

/** The sequence after `sequence` (0 after {@link MAX_SEQUENCE}). */
export function nextSequence(sequence: number): number {
  return sequence === MAX_SEQUENCE ? 0 : sequence + 1;
}

/** The producer fields of a batch header that the state needs. */
export type ProducerBatchFields = Pick<BatchHeader, 'producerId' | 'producerEpoch' | 'baseSequence' | 'lastOffsetDelta'>;

/** One stored batch of a producer. */
export interface ProducerBatchMetadata {
  baseSequence: number;
  lastSequence: number;
  baseOffset: number;
  lastOffset: number;
}

/** What the partition remembers of one producer. */
export interface ProducerStateView {
  producerId: number;
  producerEpoch: number;
  /** The last batches stored, oldest first; at most {@link RETAINED_BATCHES_PER_PRODUCER}. */
  batches: ProducerBatchMetadata[];
}

/** Where the stored copy of a retried batch lies. */
export interface DuplicateBatch {
  baseOffset: number;
  lastOffset: number;
}

/**
 * A producer as the state remembers it, in the compact form snapshots store: each batch is
 * `[baseSequence, lastSequence, baseOffset, lastOffset]`, oldest first.
 */
export interface RememberedProducer {
  producerId: number;
  producerEpoch: number;
  batches: [number, number, number, number][];
}

/** Options of a partition's producer state. */
export interface ProducerStateOptions {
  /** Producers remembered; past it, the one that appended least recently is forgotten. @default 10000 */
  maxProducers: number;
  topic: string;
  partition: number;
}

/** One producer: its epoch, the last batches in a ring, and its place in the least-recently-appended list. */
class ProducerEntry {
  /** Ring of `[baseSequence, lastSequence, baseOffset, lastOffset]` per slot. */
  readonly ring = new Float64Array(4 * R);
  count = 0;
  /** Slot of the newest batch. */
  newest = 0;
  older: ProducerEntry | null = null;
  newer: ProducerEntry | null = null;

  constructor(
    readonly producerId: number,
    public epoch: number,
  ) {}

  get lastSequence(): number {
    return this.ring[this.newest * 4 + 1]!;
  }

  get lastOffset(): number {
    return this.ring[this.newest * 4 + 3]!;
  }

  push(baseSequence: number, lastSequence: number, baseOffset: number, lastOffset: number): void {
    this.newest = this.count === 0 ? 0 : (this.newest + 1) % R;
    if (this.count < R) this.count++;
    const at = this.newest * 4;
    this.ring[at] = baseSequence;
    this.ring[at + 1] = lastSequence;
    this.ring[at + 2] = baseOffset;
    this.ring[at + 3] = lastOffset;
  }

  /** The ring slot holding exactly this sequence range, or -1. */
  find(baseSequence: number, lastSequence: number): number {
    for (let i = 0; i < this.count; i++) {
      if (this.ring[i * 4] === baseSequence && this.ring[i * 4 + 1] === lastSequence) return i;
    }
    return -1;
  }

  /** The stored batches, oldest first. */
  batches(): [number, number, number, number][] {
    const out: [number, number, number, number][] = [];
    for (let k = this.count - 1; k >= 0; k--) {
      const at = ((this.newest - k + R) % R) * 4;
      out.push([this.ring[at]!, this.ring[at + 1]!, this.ring[at + 2]!, this.ring[at + 3]!]);
    }
    return out;
  }
}

export class ProducerStateManager {
  private readonly entries = new Map<number, ProducerEntry>();
  /** Least and most recently appended producers: appends come in offset order, so this is also newest-batch order. */
  private oldest: ProducerEntry | null = null;
  private newest: ProducerEntry | null = null;

  constructor(private readonly options: ProducerStateOptions) {}

  /** A copy of the state: checks and updates of it leave this one as it is. */
  copy(): ProducerStateManager {
    const c = new ProducerStateManager(this.options);
    c.replace(this.producers());
    return c;
  }

  /** Producers remembered. */
  get size(): number {
    return this.entries.size;
  }

  /**
   * Checks an idempotent batch (producer id >= 0) against the state, before it gets offsets.
   * @returns null if the batch is to be appended; where its stored copy lies if it is a retry of one of
   *   the producer's last {@link RETAINED_BATCHES_PER_PRODUCER} batches (same epoch and sequence range)
   * @throws OnelogError `INVALID_PRODUCER_EPOCH` (epoch older than stored), `OUT_OF_ORDER_SEQUENCE` (a new
   *   epoch not starting at 0, or a sequence not following the last stored), `UNKNOWN_PRODUCER_ID` (an
   *   unknown producer not starting at 0), `INVALID_RECORD` (negative epoch or sequence)
   */
  check(batch: ProducerBatchFields): DuplicateBatch | null {
    const { producerId, producerEpoch, baseSequence } = batch;
    if (producerEpoch < 0 || baseSequence < 0) {
      throw new OnelogError(
        'INVALID_RECORD',
        `producer ${producerId} sends epoch ${producerEpoch} and sequence ${baseSequence} to ${this.name()}: an idempotent batch needs both >= 0`,
        { ...this.where(), producerId, producerEpoch, baseSequence },
      );
    }
    const entry = this.entries.get(producerId);
    if (entry === undefined) {
      if (baseSequence === 0) return null;
      throw new OnelogError(
        'UNKNOWN_PRODUCER_ID',
        `producer ${producerId} is not known in ${this.name()} (never seen, or forgotten after its batches expired or it ` +
        `was evicted) and its batch starts at sequence ${baseSequence}, not 0`,
        { ...this.where(), producerId, producerEpoch, baseSequence },
      );
    }
    if (producerEpoch < entry.epoch) {
      throw new OnelogError(
        'INVALID_PRODUCER_EPOCH',
        `producer ${producerId} sends epoch ${producerEpoch} to ${this.name()}, older than its epoch ${entry.epoch} there: a newer instance took over`,
        { ...this.where(), producerId, producerEpoch, currentEpoch: entry.epoch },
      );
    }
    let expectedSequence = 0;
    if (producerEpoch === entry.epoch) {
      const slot = entry.find(baseSequence, lastSequenceOf(baseSequence, batch.lastOffsetDelta));
      if (slot >= 0) return { baseOffset: entry.ring[slot * 4 + 2]!, lastOffset: entry.ring[slot * 4 + 3]! };
      expectedSequence = nextSequence(entry.lastSequence);
    }
    if (baseSequence === expectedSequence) return null;
    throw new OnelogError(
      'OUT_OF_ORDER_SEQUENCE',
      producerEpoch === entry.epoch
        ? `producer ${producerId} (epoch ${producerEpoch}) sends sequence ${baseSequence} to ${this.name()}, expected ${expectedSequence}`
        : `producer ${producerId} starts epoch ${producerEpoch} at sequence ${baseSequence} in ${this.name()}: a new epoch starts at 0`,
      { ...this.where(), producerId, producerEpoch, expectedSequence, baseSequence },
    );
  }

  /**
   * Records an idempotent batch written at `baseOffset` (after {@link check}, or replaying the log). A batch
   * of a new epoch, or one that does not follow the last stored (a forgotten producer starting over),
   * replaces the remembered batches.
   */
  update(batch: ProducerBatchFields, baseOffset: number): void {
    const { producerId, producerEpoch, baseSequence } = batch;
    let entry = this.entries.get(producerId);
    if (entry === undefined) {
      if (this.entries.size >= this.options.maxProducers && this.oldest !== null) this.forget(this.oldest);
      entry = new ProducerEntry(producerId, producerEpoch);
      this.entries.set(producerId, entry);
    } else {
      this.unlink(entry);
      if (producerEpoch !== entry.epoch || baseSequence !== nextSequence(entry.lastSequence)) {
        entry.epoch = producerEpoch;
        entry.count = 0;
      }
    }
    this.linkNewest(entry);
    entry.push(baseSequence, lastSequenceOf(baseSequence, batch.lastOffsetDelta), baseOffset, baseOffset + batch.lastOffsetDelta);
  }

  /**
   * Forgets every producer whose newest batch ends below `logStartOffset` (its batches expired or were deleted).
   * @returns how many were forgotten
   */
  evictBelow(logStartOffset: number): number {
    let n = 0;
    while (this.oldest !== null && this.oldest.lastOffset < logStartOffset) {
      this.forget(this.oldest);
      n++;
    }
    return n;
  }

  /** What is remembered of `producerId`, or undefined. */
  get(producerId: number): ProducerStateView | undefined {
    const entry = this.entries.get(producerId);
    if (entry === undefined) return undefined;
    return {
      producerId,
      producerEpoch: entry.epoch,
      batches: entry.batches().map(([baseSequence, lastSequence, baseOffset, lastOffset]) => ({ baseSequence, lastSequence, baseOffset, lastOffset })),
    };
  }

  /** Every producer remembered, least recently appended first. */
  producers(): RememberedProducer[] {
    const producers: RememberedProducer[] = [];
    for (let e = this.oldest; e !== null; e = e.newer) producers.push({ producerId: e.producerId, producerEpoch: e.epoch, batches: e.batches() });
    return producers;
  }

  /**
   * Replaces the state with `producers` (distinct ids, each with 1 to {@link RETAINED_BATCHES_PER_PRODUCER}
   * batches), ordered by their newest batch; past `maxProducers`, the oldest are forgotten.
   */
  replace(producers: readonly RememberedProducer[]): void {
    const loaded = producers.map(({ producerId, producerEpoch, batches }) => {
      const entry = new ProducerEntry(producerId, producerEpoch);
      for (const b of batches) entry.push(b[0], b[1], b[2], b[3]);
      return entry;
    });
    this.clear();
    loaded.sort((a, b) => a.lastOffset - b.lastOffset);
    for (const entry of loaded) {
      if (this.entries.size >= this.options.maxProducers) this.forget(this.oldest!);
      this.entries.set(entry.producerId, entry);
      this.linkNewest(entry);
    }
  }

  private clear(): void {
    this.entries.clear();
    this.oldest = this.newest = null;
  }

  private forget(entry: ProducerEntry): void {
    this.unlink(entry);
    this.entries.delete(entry.producerId);
  }

  private unlink(entry: ProducerEntry): void {
    if (entry.older) entry.older.newer = entry.newer;
    else this.oldest = entry.newer;
    if (entry.newer) entry.newer.older = entry.older;
    else this.newest = entry.older;
    entry.older = entry.newer = null;
  }

  private linkNewest(entry: ProducerEntry): void {
    entry.older = this.newest;
    if (this.newest) this.newest.newer = entry;
    else this.oldest = entry;
    this.newest = entry;
  }

  private name(): string {
    return `${this.options.topic}/${this.options.partition}`;
  }

  private where(): { topic: string; partition: number } {
    return { topic: this.options.topic, partition: this.options.partition };
  }
}

/**
 * Which records a group has moved out of the way (nacked to a retry tier or the dead-letter topic, or redriven
 * from it), keyed by their source position. It makes a move idempotent: a nack retried after a lost answer,
 * or repeated after a crash between the move and the commit, finds the record already moved and appends
 * nothing; and a fetch by the group skips records already moved, so the handler is never handed the same
 * attempt twice. The moved records themselves are the truth: each names its source in its `onelog.source`
 * header, and {@link MovedRecords.scan} rebuilds the index from the tier and dead-letter partitions.
 */
import { movedAttempt, sourceOf } from '../protocol/retry-policy.js';
import type { Partition } from '../log/partition.js';

/** Where a moved record went. */
export interface MovedTo {
  topic: string;
  partition: number;
  offset: number;
  /** The attempt its delivery will be (tier), or the attempts made (dead-letter topic). */
  attempt: number;
  deadLettered: boolean;
}

/** Records per read while scanning a partition. */
const SCAN_RECORDS = 1000;

export class MovedRecords {
  /** `topic/partition` of the source -> source offset -> where it went. */
  private readonly bySource = new Map<string, Map<number, MovedTo>>();
  /** Moves under way, by `topic/partition/offset`: a second request for the same source waits for the first. */
  private readonly pending = new Map<string, Promise<MovedTo>>();

  /**
   * Reads every record of `log` (a tier or dead-letter partition) and indexes those whose source still counts:
   * `counts(topic, partition, offset)` says whether the source may still be delivered or nacked (at or above the
   * group's committed offset there).
   * @param deadLettered whether `log` is a dead-letter partition
   */
  async scan(log: Partition, deadLettered: boolean, counts: (topic: string, partition: number, offset: number) => boolean): Promise<void> {
    let offset = log.logStartOffset;
    while (offset < log.highWatermark) {
      const { records, nextOffset } = await log.fetch(offset, { maxRecords: SCAN_RECORDS, maxBytes: 4 * 1024 * 1024 });
      for (const r of records) {
        const source = parseSource(sourceOf(r));
        if (!source || !counts(source.topic, source.partition, source.offset)) continue;
        this.add(source, { topic: log.topic, partition: log.partition, offset: r.offset, attempt: movedAttempt(r), deadLettered });
      }
      if (nextOffset <= offset) break;
      offset = nextOffset;
    }
  }

  /** Where the record at `offset` of `topic/partition` was moved, or undefined. */
  get(topic: string, partition: number, offset: number): MovedTo | undefined {
    return this.bySource.get(`${topic}/${partition}`)?.get(offset);
  }

  /** The offsets of `topic/partition` moved away, or undefined when none (the common case: nothing to skip). */
  movedOf(topic: string, partition: number): ReadonlyMap<number, MovedTo> | undefined {
    const moved = this.bySource.get(`${topic}/${partition}`);
    return moved && moved.size > 0 ? moved : undefined;
  }

  /** Records that the source record was moved. */
  add(source: { topic: string; partition: number; offset: number }, to: MovedTo): void {
    const key = `${source.topic}/${source.partition}`;
    let moved = this.bySource.get(key);
    if (!moved) this.bySource.set(key, (moved = new Map()));
    moved.set(source.offset, to);
  }

  /** Forgets what was moved out of `topic` (an executed reset: the group reads it again, moved records included). */
  forgetTopic(topic: string): void {
    for (const key of [...this.bySource.keys()]) if (key.slice(0, key.lastIndexOf('/')) === topic) this.bySource.delete(key);
  }

  /** Forgets sources of `topic/partition` below `offset` (committed past: never delivered or nacked again). */
  forgetBelow(topic: string, partition: number, offset: number): void {
    const moved = this.bySource.get(`${topic}/${partition}`);
    if (!moved) return;
    for (const o of moved.keys()) if (o < offset) moved.delete(o);
    if (moved.size === 0) this.bySource.delete(`${topic}/${partition}`);
  }

  /**
   * Moves the source record once: answers where it went and whether it had been moved before (by an earlier
   * request, or one still under way, which this one waits for). `move` runs only for a first request, and the
   * index learns the move only once `move` resolved (the record is durable).
   */
  async once(source: { topic: string; partition: number; offset: number }, move: () => Promise<MovedTo>): Promise<{ to: MovedTo; duplicate: boolean }> {
    const done = this.get(source.topic, source.partition, source.offset);
    if (done) return { to: done, duplicate: true };
    const key = `${source.topic}/${source.partition}/${source.offset}`;
    const running = this.pending.get(key);
    if (running) return { to: await running, duplicate: true };
    const moving = move();
    this.pending.set(key, moving);
    try {
      const to = await moving;
      this.add(source, to);
      return { to, duplicate: false };
    } finally {
      this.pending.delete(key);
    }
  }
}

/** `topic/partition/offset` as a position (topic names hold no `/`), or undefined. */
export function parseSource(text: string | undefined): { topic: string; partition: number; offset: number } | undefined {
  if (text === undefined) return undefined;
  const parts = text.split('/');
  if (parts.length !== 3) return undefined;
  const partition = Number(parts[1]);
  const offset = Number(parts[2]);
  if (!Number.isSafeInteger(partition) || !Number.isSafeInteger(offset)) return undefined;
  return { topic: parts[0]!, partition, offset };
}

/**
 * One partition of a share group (Kafka's share-partition, KIP-932; docs/consumer-groups.md): the records between the
 * share-partition start offset (below it, every record is accepted or dead-lettered) and the end of what the group
 * has taken from the log, each with its state, delivery count and acquisition lock. Any number of members acquire
 * records side by side; each record is held by one member at a time, under a lock of `lockMs`; the member accepts it
 * (done), releases it (deliver again, not before a delay), rejects it (dead letters at once) or renews its lock; a
 * lock that expires releases it. Each acquisition counts a delivery; a record released at `maxDeliveries` deliveries
 * goes to the dead letters instead. With `ordering: 'key'` a record is acquired only while no earlier record of its
 * key is unfinished, so each key's records are processed one at a time, in order.
 *
 * Pure: the caller gives the time (ms since the epoch), reads the log ({@link SharePartition.extend}), moves dead
 * letters durably ({@link SharePartition.deadLetters}, then {@link SharePartition.deadLettered}) and persists
 * {@link SharePartition.takeChanges} in the offset store before it answers: the start offset, and the records ever
 * delivered as runs (share-runs.ts: an entry per range of records with the same state, count and delay, so a batch
 * acquired or accepted together is one entry), rewriting only the runs a change touches. A record of the window in no
 * run was never delivered: after a crash, {@link restoreSnapshot} rebuilds the window from the runs and the log,
 * every delivery count kept; a record acquired then is available again (its member's lock went with the broker).
 */
import { OnelogError } from '../protocol/errors.js';
import { StoredRuns } from './share-runs.js';

/**
 * A record's state: `available` (to acquire, from `notBefore`), `acquired` (held by `memberId` until `lockUntil`),
 * `accepted` (done), `dead` (to move to the dead letters), `archived` (in the dead letters: done).
 */
export type ShareRecordStatus = 'available' | 'acquired' | 'accepted' | 'dead' | 'archived';

/**
 * What key order knows of a record's key: the key itself, or a hash of it (equal keys, equal hashes; two keys that
 * share a hash only hold each other back).
 */
export type ShareKey = string | number;

/** A record of the share-partition's window. */
export interface ShareRecord {
  offset: number;
  /** The record's key (for key order); null without a key. */
  key: ShareKey | null;
  status: ShareRecordStatus;
  /** Acquisitions so far, 0 to `maxDeliveries`. */
  deliveries: number;
  /** While acquired: the member holding it; else null. */
  memberId: string | null;
  /** While acquired: when its lock ends, ms since the epoch; else 0. */
  lockUntil: number;
  /** While available: not acquired before this, ms since the epoch (a release with a delay); else 0. */
  notBefore: number;
  /** Why it is dead (rejected, or out of deliveries); null otherwise. */
  reason: string | null;
}

/** How a share group hands out a partition's records. */
export interface SharePartitionSettings {
  /** How long a member holds an acquired record before it is released, ms. @default 30000 (as Kafka's group.share.record.lock.duration.ms) */
  lockMs: number;
  /** Deliveries of a record before it goes to the dead letters instead of back. @default 5 (Kafka's group.share.delivery.count.limit) */
  maxDeliveries: number;
  /** Most records of the partition in flight (taken from the log, not yet done), records. @default 2000 (Kafka's group.share.partition.max.record.locks) */
  maxInFlight: number;
  /** `key`: a record waits while an earlier record of its key is unfinished; `none`: no order. @default 'none' */
  ordering: 'none' | 'key';
}

export const DEFAULT_SHARE_SETTINGS: Readonly<SharePartitionSettings> = { lockMs: 30_000, maxDeliveries: 5, maxInFlight: 2000, ordering: 'none' };

/** A share-partition's window to start from: a new one, or one restored after a crash ({@link restoreSnapshot}). */
export interface SharePartitionSnapshot {
  /** Every offset below it is accepted or dead-lettered (or was deleted from the log). */
  startOffset: number;
  /** The next offset to take from the log into the window. */
  endOffset: number;
  /** The window's records, in offset order, each as `[offset, key, status, deliveries, notBefore, reason]`. */
  records: Array<[number, ShareKey | null, 'available' | 'acquired' | 'dead' | 'accepted', number, number, string | null]>;
  /** The runs the offset store holds, `[first, last]`. @default none */
  runs?: Array<[number, number]>;
}

/**
 * What changed since the last {@link SharePartition.takeChanges}, to write to the offset store in one write: the start
 * offset, entries to set (`[first offset of a run, text]`, as {@link encodeRun} writes it) and entries that go (runs
 * rewritten from another first offset, or passed by the start offset).
 */
export interface SharePartitionChanges {
  startOffset: number;
  set: Array<[number, string]>;
  remove: number[];
}

const ENTRY_STATUS = { available: 'a', acquired: 'q', dead: 'd', accepted: 'x', archived: 'x' } as const;
const STATUS_OF_ENTRY = { a: 'available', q: 'acquired', d: 'dead', x: 'accepted' } as const;

/** A record's stored fields as JSON text, `[status, deliveries, notBefore, reason]`, status a, q, d or x (done): equal texts share a run. */
function storedFields(r: ShareRecord): string {
  return JSON.stringify([ENTRY_STATUS[r.status], r.deliveries, r.notBefore, r.reason]);
}

/** Whether two records' {@link storedFields} are equal (they share a run). */
function sameStoredFields(a: ShareRecord, b: ShareRecord): boolean {
  return ENTRY_STATUS[a.status] === ENTRY_STATUS[b.status] && a.deliveries === b.deliveries && a.notBefore === b.notBefore && a.reason === b.reason;
}

/** A run's entry: `[last, status, deliveries, notBefore, reason]` as JSON. */
function encodeRun(last: number, fields: string): string {
  return `[${last},${fields.slice(1)}`;
}

/** @throws Error for an entry that is not one {@link encodeRun} wrote */
function decodeRun(text: string): [number, string, number, number, string | null] {
  const e = JSON.parse(text) as [number, string, number, number, string | null];
  if (!Array.isArray(e) || typeof e[0] !== 'number' || !(e[1]! in STATUS_OF_ENTRY) || typeof e[2] !== 'number') {
    throw new Error(`a share-partition entry that is not a run: ${text.slice(0, 200)}`);
  }
  return e;
}

/**
 * The last offset the stored runs hold (-1 for none): {@link restoreSnapshot} needs the log's records up to it.
 * @throws Error for an entry that is not one {@link encodeRun} wrote
 */
export function runsEnd(entries: ReadonlyArray<readonly [number, string]>): number {
  return entries.reduce((max, [, text]) => Math.max(max, decodeRun(text)[0]), -1);
}

/**
 * The window to restart from after a crash: the runs the offset store holds and the log's records from the start
 * offset to the last run's end (for their keys; a record in no run was never delivered). A run that holds no record
 * the log still has (retention, compaction) is dropped from the store at the next write (`orphans`).
 * @param entries the stored runs, by first offset, in offset order
 * @param log the records at or after `startOffset` up to the last run's end at least, in offset order
 * @throws Error for an entry that is not one {@link encodeRun} wrote
 */
export function restoreSnapshot(startOffset: number, entries: ReadonlyArray<readonly [number, string]>,
  log: ReadonlyArray<{ offset: number; key: ShareKey | null }>): { snapshot: SharePartitionSnapshot; orphans: number[] } {
  const runs = entries.map(([first, text]) => {
    const e = decodeRun(text);
    return { first, last: e[0], status: STATUS_OF_ENTRY[e[1] as keyof typeof STATUS_OF_ENTRY], deliveries: e[2], notBefore: e[3], reason: e[4], used: false };
  });
  const end = runsEnd(entries);
  const records: SharePartitionSnapshot['records'] = [];
  let i = 0;
  for (const { offset, key } of log) {
    if (offset < startOffset || offset > end) continue;
    while (i < runs.length && runs[i]!.last < offset) i++;
    const run = runs[i];
    if (run === undefined || run.first > offset) records.push([offset, key, 'available', 0, 0, null]);
    else {
      run.used = true;
      records.push([offset, key, run.status, run.deliveries, run.notBefore, run.reason]);
    }
  }
  return {
    snapshot: { startOffset, endOffset: Math.max(startOffset, end + 1), records, runs: runs.filter((r) => r.used).map((r) => [r.first, r.last]) },
    orphans: runs.filter((r) => !r.used).map((r) => r.first),
  };
}

/** The outcome a member reports for a record it holds. */
export type ShareAcknowledgement = { offset: number } & (
  | { type: 'accept' }
  | { type: 'release'; delayMs?: number; reason?: string }
  | { type: 'reject'; reason?: string }
  | { type: 'renew' }
);

const UNFINISHED: ReadonlySet<ShareRecordStatus> = new Set(['available', 'acquired', 'dead']);

export class SharePartition {
  /** The window, in offset order; records before `head` are done and about to be dropped. */
  private records: ShareRecord[] = [];
  private head = 0;
  private start: number;
  private end: number;
  /** Records whose stored fields changed since the last {@link takeChanges}. */
  private readonly changed = new Set<ShareRecord>();
  /** The runs the offset store holds (as of the last {@link takeChanges}). */
  private readonly runs: StoredRuns;
  /**
   * Window index before which no record is available to acquire now (without key order), so an acquisition does not
   * walk past the records held before it again; lowered when a record becomes available.
   */
  private scanFrom = 0;
  /** No lock ends before this (ms since the epoch; a lower bound), so {@link expire} walks the window only once one may. */
  private locksEndFrom = Infinity;
  /** The window's records in each unfinished state, kept at every change of state ({@link setStatus}). */
  private readonly tally = { available: 0, acquired: 0, dead: 0 };

  /**
   * @param snapshot what was persisted (a new partition: `{ startOffset, endOffset: startOffset, records: [] }`)
   * @throws OnelogError `INVALID_REQUEST` for settings out of bounds
   */
  constructor(snapshot: SharePartitionSnapshot, private settings: SharePartitionSettings) {
    checkShareSettings(settings);
    this.start = snapshot.startOffset;
    this.end = snapshot.endOffset;
    this.runs = new StoredRuns(snapshot.runs);
    for (const [offset, key, status, deliveries, notBefore, reason] of snapshot.records) {
      const r: ShareRecord = { offset, key, status, deliveries, memberId: null, lockUntil: 0, notBefore, reason };
      if (status !== 'accepted') this.tally[status]++;
      this.records.push(r);
      // A lock does not outlive the broker that granted it: released as an expired one is, its deliveries kept.
      if (status === 'acquired') this.releaseRecord(r, 0, 'its broker stopped while it was held');
    }
    this.advance();
  }

  /**
   * New settings (the subscription was altered): a new lock period applies to the next acquisition or renewal, a new
   * delivery limit to the next release, a new window size to the next {@link extend}, a new order to the next acquisition.
   * @throws OnelogError `INVALID_REQUEST` for settings out of bounds
   */
  configure(settings: SharePartitionSettings): void {
    checkShareSettings(settings);
    this.settings = settings;
  }

  /** The share-partition start offset: every offset below it is accepted or dead-lettered. */
  get startOffset(): number {
    return this.start;
  }

  /** The next offset {@link extend} takes from the log. */
  get endOffset(): number {
    return this.end;
  }

  /** How many more records the window takes from the log ({@link extend}), records. */
  get room(): number {
    return Math.max(0, this.settings.maxInFlight - (this.records.length - this.head));
  }

  /** Records of the window that wait to be acquired (available), records. */
  get available(): number {
    return this.tally.available;
  }

  /** Records held by a member (`acquired`) and waiting to be acquired (`available`, delayed releases included). */
  counts(): { acquired: number; available: number } {
    return { acquired: this.tally.acquired, available: this.tally.available };
  }

  /** The window's unfinished records, in offset order (copies). */
  inFlight(): ShareRecord[] {
    return this.records.slice(this.head).filter((r) => UNFINISHED.has(r.status)).map(copy);
  }

  /**
   * Takes records read from the log at {@link endOffset} into the window, available, at most {@link room}.
   * @param read records at or after `endOffset`, in offset order (gaps allowed: compaction)
   * @param nextOffset where the read ended (past offsets compaction emptied); the window ends there if every
   *   record read was taken
   * @returns how many were taken
   */
  extend(read: ReadonlyArray<{ offset: number; key: ShareKey | null }>, nextOffset: number): number {
    let taken = 0;
    for (const r of read) {
      if (r.offset < this.end) continue;
      if (this.room === 0) {
        this.end = r.offset;
        return taken;
      }
      this.records.push({ offset: r.offset, key: r.key, status: 'available', deliveries: 0, memberId: null, lockUntil: 0, notBefore: 0, reason: null });
      this.tally.available++;
      this.end = r.offset + 1;
      taken++;
    }
    this.end = Math.max(this.end, nextOffset);
    return taken;
  }

  /**
   * Acquires up to `maxRecords` available records for `memberId`, in offset order (in key order: only the first
   * unfinished record of each key), each counting a delivery and locked until `now + lockMs`. Locks expired by `now`
   * are released first.
   * @returns the records acquired (copies)
   */
  acquire(memberId: string, now: number, maxRecords: number): ShareRecord[] {
    this.expire(now);
    const out: ShareRecord[] = [];
    const keyed = this.settings.ordering === 'key';
    const seen = keyed ? new Set<ShareKey>() : null;
    // In key order every unfinished record from the head counts (its key holds later ones back); else none before scanFrom.
    let i = keyed ? this.head : Math.max(this.head, this.scanFrom);
    let delayed = Infinity; // the first record skipped only for its delay: available again later
    const lockUntil = now + this.settings.lockMs;
    for (; i < this.records.length && out.length < maxRecords; i++) {
      const r = this.records[i]!;
      if (!UNFINISHED.has(r.status)) continue;
      if (seen !== null && r.key !== null) {
        if (seen.has(r.key)) continue; // an earlier record of its key is unfinished
        seen.add(r.key);
      }
      if (r.status !== 'available') continue;
      if (r.notBefore > now) {
        delayed = Math.min(delayed, i);
        continue;
      }
      this.setStatus(r, 'acquired');
      r.deliveries++;
      r.memberId = memberId;
      r.lockUntil = lockUntil;
      r.notBefore = 0;
      this.changed.add(r);
      out.push(copy(r));
    }
    if (!keyed) this.scanFrom = Math.min(delayed, i);
    if (out.length > 0) this.locksEndFrom = Math.min(this.locksEndFrom, lockUntil);
    return out;
  }

  /**
   * Applies a member's acknowledgements of records it holds, once the locks ended by `now` are released. A record not
   * held by `memberId` (its lock expired, another member has it, or it never was this member's) refuses them whole
   * before anything changes, as does an offset named twice.
   * @throws OnelogError `INVALID_RECORD_STATE` naming the offset, `INVALID_REQUEST` for a bad delay or an offset named twice
   */
  acknowledge(memberId: string, acks: readonly ShareAcknowledgement[], now: number): void {
    const named = new Set<number>();
    for (const a of acks) {
      if (named.has(a.offset)) {
        throw new OnelogError('INVALID_REQUEST', `offset ${a.offset} is acknowledged twice in one request; one outcome per record`, { offset: a.offset });
      }
      named.add(a.offset);
    }
    this.expire(now);
    const found = acks.map((a) => {
      const r = this.find(a.offset);
      if (r === undefined || r.status !== 'acquired' || r.memberId !== memberId) {
        throw new OnelogError('INVALID_RECORD_STATE', `offset ${a.offset} is not held by member ${memberId}: ${r === undefined ? 'not in flight' :
          r.status === 'acquired' ? 'another member holds it (its lock expired and it was acquired again)' : `it is ${r.status}`}`, { offset: a.offset, memberId });
      }
      if (a.type === 'release' && a.delayMs !== undefined && !(Number.isSafeInteger(a.delayMs) && a.delayMs >= 0)) {
        throw new OnelogError('INVALID_REQUEST', `a release's delayMs must be an integer >= 0, got ${JSON.stringify(a.delayMs)}`, { offset: a.offset });
      }
      return r;
    });
    acks.forEach((a, i) => {
      const r = found[i]!;
      if (a.type === 'accept') this.finish(r, 'accepted', null);
      else if (a.type === 'reject') this.finish(r, 'dead', a.reason ?? 'rejected by the consumer');
      else if (a.type === 'renew') r.lockUntil = now + this.settings.lockMs;
      else this.releaseRecord(r, now + (a.delayMs ?? 0), a.reason === undefined ? 'released by the consumer' : `released by the consumer: ${a.reason}`);
    });
    this.advance();
  }

  /**
   * Records just acquired by `memberId` that it will not be handed after all (past its byte budget): available again as
   * they were, their deliveries not counted.
   */
  giveBack(memberId: string, offsets: readonly number[]): void {
    for (const offset of offsets) {
      const r = this.find(offset);
      if (r === undefined || r.status !== 'acquired' || r.memberId !== memberId) continue;
      this.changed.add(r);
      this.setStatus(r, 'available');
      r.deliveries--;
      r.memberId = null;
      r.lockUntil = 0;
      this.scanFrom = Math.min(this.scanFrom, this.indexAtOrAfter(r.offset));
    }
  }

  /**
   * The records at `offsets` are no longer in the log (compaction removed them, or retention or a deletion moved the
   * log start past them): done with, as nothing is left to deliver or to dead-letter.
   */
  gone(offsets: readonly number[]): void {
    for (const offset of offsets) {
      const r = this.find(offset);
      if (r !== undefined && UNFINISHED.has(r.status)) this.finish(r, 'archived', null);
    }
    this.advance();
  }

  /**
   * Releases the records whose locks ended by `now` (their members are gone or too slow).
   * @returns how many were released (or, at their limit, made dead)
   */
  expire(now: number): number {
    if (now < this.locksEndFrom) return 0;
    let released = 0;
    let next = Infinity;
    for (let i = this.head; i < this.records.length; i++) {
      const r = this.records[i]!;
      if (r.status !== 'acquired') continue;
      if (r.lockUntil <= now) {
        this.releaseRecord(r, 0, 'its acquisition lock expired');
        released++;
      } else next = Math.min(next, r.lockUntil);
    }
    this.locksEndFrom = next;
    return released;
  }

  /**
   * A member left or ended: the records it holds are released at once.
   * @returns how many it held
   */
  memberGone(memberId: string): number {
    let held = 0;
    for (let i = this.head; i < this.records.length; i++) {
      const r = this.records[i]!;
      if (r.status === 'acquired' && r.memberId === memberId) {
        this.releaseRecord(r, 0, 'its member ended');
        held++;
      }
    }
    return held;
  }

  /**
   * The next moment after `now` at which a record becomes acquirable without a member acting: a lock that ends, a
   * release delay that passes (ms since the epoch); null when none will.
   */
  nextChangeAt(now: number): number | null {
    let next = Infinity;
    for (let i = this.head; i < this.records.length; i++) {
      const r = this.records[i]!;
      if (r.status === 'acquired') next = Math.min(next, r.lockUntil);
      else if (r.status === 'available' && r.notBefore > now) next = Math.min(next, r.notBefore);
    }
    return next === Infinity ? null : next;
  }

  /** Records to move to the dead letters, in offset order (copies); {@link deadLettered} once they are on disk. */
  deadLetters(): ShareRecord[] {
    const dead: ShareRecord[] = [];
    if (this.tally.dead === 0) return dead;
    for (let i = this.head; i < this.records.length; i++) if (this.records[i]!.status === 'dead') dead.push(copy(this.records[i]!));
    return dead;
  }

  /** The dead records at `offsets` are in the dead letters now: done. */
  deadLettered(offsets: readonly number[]): void {
    for (const offset of offsets) {
      const r = this.find(offset);
      if (r?.status === 'dead') {
        this.setStatus(r, 'archived');
        this.changed.add(r);
      }
    }
    this.advance();
  }

  /** The log start moved to `logStartOffset` (retention, delete-records): records below it are gone, done with. */
  logStartMoved(logStartOffset: number): void {
    for (let i = this.head; i < this.records.length && this.records[i]!.offset < logStartOffset; i++) this.finish(this.records[i]!, 'archived', null);
    this.start = Math.max(this.start, Math.min(logStartOffset, this.end));
    this.end = Math.max(this.end, logStartOffset);
    this.advance();
  }

  /**
   * What changed since the last call, to persist before answering (then it is taken: the next call has only what changes
   * after this one): the runs holding a changed record are derived again from the window, the runs the start offset
   * passed go.
   * @param orphans entries to remove that hold no record of the window (see {@link restoreSnapshot})
   */
  takeChanges(orphans: readonly number[] = []): SharePartitionChanges {
    const set: Array<[number, string]> = [];
    const remove = [...orphans, ...this.runs.takeBelow(this.start)];
    // Each changed record's range: the stored run holding it, else itself; ranges with no record between them merged.
    const ranges: Array<[number, number]> = [];
    for (const r of this.changed) if (r.offset >= this.start) ranges.push(this.runs.at(r.offset) ?? [r.offset, r.offset]);
    this.changed.clear();
    ranges.sort((a, b) => a[0] - b[0]);
    for (let k = 0; k < ranges.length;) {
      const from = ranges[k]![0];
      let to = ranges[k]![1];
      for (k++; k < ranges.length && ranges[k]![0] <= (this.records[this.indexAtOrAfter(to + 1)]?.offset ?? Infinity); k++) to = Math.max(to, ranges[k]![1]);
      const gone = new Set(this.runs.takeWithin(from, to));
      // The range's delivered records as runs of equal stored fields; a record never delivered ends a run.
      let run: { first: number; last: number; r: ShareRecord } | null = null;
      const close = () => {
        if (run === null) return;
        set.push([run.first, encodeRun(run.last, storedFields(run.r))]);
        this.runs.add(run.first, run.last);
        gone.delete(run.first);
        run = null;
      };
      for (let i = this.indexAtOrAfter(from); i < this.records.length && this.records[i]!.offset <= to; i++) {
        const r = this.records[i]!;
        if (r.deliveries === 0) {
          close();
          continue;
        }
        if (run !== null && sameStoredFields(run.r, r)) run.last = r.offset;
        else {
          close();
          run = { first: r.offset, last: r.offset, r };
        }
      }
      close();
      remove.push(...gone);
    }
    return { startOffset: this.start, set, remove };
  }

  /** The index of the window's first record at or after `offset` (binary search from the head). */
  private indexAtOrAfter(offset: number): number {
    let lo = this.head;
    let hi = this.records.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.records[mid]!.offset < offset) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private releaseRecord(r: ShareRecord, notBefore: number, why: string): void {
    this.changed.add(r);
    if (r.deliveries >= this.settings.maxDeliveries) {
      this.finish(r, 'dead', `delivered ${r.deliveries} times (maxDeliveries ${this.settings.maxDeliveries}), the last ${why}`);
      return;
    }
    this.setStatus(r, 'available');
    r.memberId = null;
    r.lockUntil = 0;
    r.notBefore = notBefore;
    this.scanFrom = Math.min(this.scanFrom, this.indexAtOrAfter(r.offset));
  }

  private finish(r: ShareRecord, status: 'accepted' | 'dead' | 'archived', reason: string | null): void {
    this.changed.add(r);
    this.setStatus(r, status);
    r.memberId = null;
    r.lockUntil = 0;
    r.notBefore = 0;
    r.reason = reason;
  }

  /** Changes a record's state, keeping {@link tally}. */
  private setStatus(r: ShareRecord, status: ShareRecordStatus): void {
    if (r.status !== 'accepted' && r.status !== 'archived') this.tally[r.status]--;
    if (status !== 'accepted' && status !== 'archived') this.tally[status]++;
    r.status = status;
  }

  /** Moves the start offset over the done records at the head of the window. */
  private advance(): void {
    while (this.head < this.records.length && !UNFINISHED.has(this.records[this.head]!.status)) this.head++;
    this.start = this.head < this.records.length ? this.records[this.head]!.offset : this.end;
    // Drop what is done at once it is a good share of the array (amortized: no shift per record).
    if (this.head > 1024 && this.head * 2 > this.records.length) {
      this.records = this.records.slice(this.head);
      this.scanFrom = Math.max(0, this.scanFrom - this.head);
      this.head = 0;
    }
  }

  /** The window's record at `offset` (binary search), if any. */
  private find(offset: number): ShareRecord | undefined {
    let lo = this.head;
    let hi = this.records.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const at = this.records[mid]!.offset;
      if (at === offset) return this.records[mid];
      if (at < offset) lo = mid + 1;
      else hi = mid - 1;
    }
    return undefined;
  }
}

/** A record as the share-partition's answers give it: a copy. */
function copy(r: ShareRecord): ShareRecord {
  return { ...r };
}

/** @throws OnelogError `INVALID_REQUEST` naming the setting out of its bounds */
export function checkShareSettings(s: SharePartitionSettings): void {
  const bounds: Array<[keyof SharePartitionSettings, number, number]> = [['lockMs', 1000, 3_600_000], ['maxDeliveries', 1, 100], ['maxInFlight', 1, 100_000]];
  for (const [name, min, max] of bounds) {
    const value = s[name];
    if (!(Number.isSafeInteger(value) && (value as number) >= min && (value as number) <= max)) {
      throw new OnelogError('INVALID_REQUEST', `${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(value)}`, { [name]: value });
    }
  }
  if (s.ordering !== 'none' && s.ordering !== 'key') {
    throw new OnelogError('INVALID_REQUEST', `ordering must be none or key, got ${JSON.stringify(s.ordering)}`, { ordering: s.ordering });
  }
}

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
 * {@link SharePartition.takeChanges} in the offset store before it answers: the start offset, and one entry per record
 * that was ever delivered (what changed since the last write, not the whole window). A record of the window with no
 * entry was never delivered: after a crash, {@link restoreSnapshot} rebuilds the window from the entries and the log,
 * every delivery count kept; a record acquired then is available again (its member's lock went with the broker).
 */
import { OnelogError } from '../protocol/errors.js';

/**
 * A record's state: `available` (to acquire, from `notBefore`), `acquired` (held by `memberId` until `lockUntil`),
 * `accepted` (done), `dead` (to move to the dead letters), `archived` (in the dead letters: done).
 */
export type ShareRecordStatus = 'available' | 'acquired' | 'accepted' | 'dead' | 'archived';

/** A record of the share-partition's window. */
export interface ShareRecord {
  offset: number;
  /** The record's key as text (for key order); null without a key. */
  key: string | null;
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
  /**
   * The window's records, in offset order, each as `[offset, key, status, deliveries, notBefore, reason, stored]`
   * (`stored`: the offset store holds an entry for it).
   */
  records: Array<[number, string | null, 'available' | 'acquired' | 'dead' | 'accepted', number, number, string | null, boolean]>;
}

/**
 * What changed since the last {@link SharePartition.takeChanges}, to write to the offset store in one write: the start
 * offset, entries to set (`[offset, text]`, a record as {@link encodeEntry} writes it) and offsets whose entries go
 * (records below the start offset).
 */
export interface SharePartitionChanges {
  startOffset: number;
  set: Array<[number, string]>;
  remove: number[];
}

/** A record of the window as the share-partition keeps it. */
interface WindowRecord extends ShareRecord {
  /** The offset store holds an entry for it (so it goes once the start offset passes it). */
  stored: boolean;
}

const ENTRY_STATUS = { available: 'a', acquired: 'q', dead: 'd', accepted: 'x', archived: 'x' } as const;
const STATUS_OF_ENTRY = { a: 'available', q: 'acquired', d: 'dead', x: 'accepted' } as const;

/** A record's offset-store entry: `[status, deliveries, notBefore, reason]` as JSON, status a, q, d or x (done). */
function encodeEntry(r: ShareRecord): string {
  return JSON.stringify([ENTRY_STATUS[r.status], r.deliveries, r.notBefore, r.reason]);
}

/**
 * The window to restart from after a crash: the entries the offset store holds and the log's records from the start
 * offset to the last entry (for their keys; one without an entry was never delivered). An entry whose record the log
 * no longer has (retention, compaction) is dropped from the store at the next write.
 * @param log the records at or after `startOffset` up to the last entry's offset at least, in offset order
 * @throws Error for an entry that is not one {@link encodeEntry} wrote
 */
export function restoreSnapshot(startOffset: number, entries: ReadonlyArray<readonly [number, string]>,
  log: ReadonlyArray<{ offset: number; key: string | null }>): { snapshot: SharePartitionSnapshot; orphans: number[] } {
  const byOffset = new Map<number, [string, number, number, string | null]>();
  for (const [offset, text] of entries) {
    const e = JSON.parse(text) as [string, number, number, string | null];
    if (!Array.isArray(e) || !(e[0]! in STATUS_OF_ENTRY) || typeof e[1] !== 'number') throw new Error(`a share-partition entry that is not one: ${text.slice(0, 200)}`);
    byOffset.set(offset, e);
  }
  const last = entries.length === 0 ? -1 : entries[entries.length - 1]![0];
  const records: SharePartitionSnapshot['records'] = [];
  for (const { offset, key } of log) {
    if (offset < startOffset || offset > last) continue;
    const e = byOffset.get(offset);
    byOffset.delete(offset);
    records.push(e === undefined ? [offset, key, 'available', 0, 0, null, false]
      : [offset, key, STATUS_OF_ENTRY[e[0] as keyof typeof STATUS_OF_ENTRY], e[1], e[2], e[3], true]);
  }
  return { snapshot: { startOffset, endOffset: Math.max(startOffset, last + 1), records }, orphans: [...byOffset.keys()] };
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
  private records: WindowRecord[] = [];
  private head = 0;
  private start: number;
  private end: number;
  /** Records whose persisted fields changed since the last {@link takeChanges}. */
  private readonly changed = new Set<WindowRecord>();
  /** Offsets whose entries go at the next {@link takeChanges}. */
  private removals: number[] = [];

  /**
   * @param snapshot what was persisted (a new partition: `{ startOffset, endOffset: startOffset, records: [] }`)
   * @throws OnelogError `INVALID_REQUEST` for settings out of bounds
   */
  constructor(snapshot: SharePartitionSnapshot, private settings: SharePartitionSettings) {
    checkShareSettings(settings);
    this.start = snapshot.startOffset;
    this.end = snapshot.endOffset;
    for (const [offset, key, status, deliveries, notBefore, reason, stored] of snapshot.records) {
      const r: WindowRecord = { offset, key, status, deliveries, memberId: null, lockUntil: 0, notBefore, reason, stored };
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
    let n = 0;
    for (let i = this.head; i < this.records.length; i++) if (this.records[i]!.status === 'available') n++;
    return n;
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
  extend(read: ReadonlyArray<{ offset: number; key: string | null }>, nextOffset: number): number {
    let taken = 0;
    for (const r of read) {
      if (r.offset < this.end) continue;
      if (this.room === 0) {
        this.end = r.offset;
        return taken;
      }
      this.records.push({ offset: r.offset, key: r.key, status: 'available', deliveries: 0, memberId: null, lockUntil: 0, notBefore: 0, reason: null, stored: false });
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
    const seen = keyed ? new Set<string>() : null;
    for (let i = this.head; i < this.records.length && out.length < maxRecords; i++) {
      const r = this.records[i]!;
      if (!UNFINISHED.has(r.status)) continue;
      if (seen !== null && r.key !== null) {
        if (seen.has(r.key)) continue; // an earlier record of its key is unfinished
        seen.add(r.key);
      }
      if (r.status !== 'available' || r.notBefore > now) continue;
      r.status = 'acquired';
      r.deliveries++;
      r.memberId = memberId;
      r.lockUntil = now + this.settings.lockMs;
      r.notBefore = 0;
      this.changed.add(r);
      out.push(copy(r));
    }
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
   * Releases the records whose locks ended by `now` (their members are gone or too slow).
   * @returns how many were released (or, at their limit, made dead)
   */
  expire(now: number): number {
    let released = 0;
    for (let i = this.head; i < this.records.length; i++) {
      const r = this.records[i]!;
      if (r.status === 'acquired' && r.lockUntil <= now) {
        this.releaseRecord(r, 0, 'its acquisition lock expired');
        released++;
      }
    }
    return released;
  }

  /** A member left or ended: the records it holds are released at once. */
  memberGone(memberId: string): void {
    for (let i = this.head; i < this.records.length; i++) {
      const r = this.records[i]!;
      if (r.status === 'acquired' && r.memberId === memberId) this.releaseRecord(r, 0, 'its member ended');
    }
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
    return this.records.slice(this.head).filter((r) => r.status === 'dead').map(copy);
  }

  /** The dead records at `offsets` are in the dead letters now: done. */
  deadLettered(offsets: readonly number[]): void {
    for (const offset of offsets) {
      const r = this.find(offset);
      if (r?.status === 'dead') {
        r.status = 'archived';
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
   * after this one). A record's entry is written once it was delivered and whenever it changes again; it goes once the
   * start offset passes it.
   * @param orphans entries to remove that the window does not hold (see {@link restoreSnapshot})
   */
  takeChanges(orphans: readonly number[] = []): SharePartitionChanges {
    const set: Array<[number, string]> = [];
    for (const r of this.changed) {
      if (r.offset < this.start) continue; // passed by the start offset: its entry, if any, is among the removals
      set.push([r.offset, encodeEntry(r)]);
      r.stored = true;
    }
    this.changed.clear();
    const remove = orphans.length === 0 ? this.removals : [...this.removals, ...orphans];
    this.removals = [];
    return { startOffset: this.start, set, remove };
  }

  private releaseRecord(r: WindowRecord, notBefore: number, why: string): void {
    this.changed.add(r);
    if (r.deliveries >= this.settings.maxDeliveries) {
      this.finish(r, 'dead', `delivered ${r.deliveries} times (maxDeliveries ${this.settings.maxDeliveries}), the last ${why}`);
      return;
    }
    r.status = 'available';
    r.memberId = null;
    r.lockUntil = 0;
    r.notBefore = notBefore;
  }

  private finish(r: WindowRecord, status: 'accepted' | 'dead' | 'archived', reason: string | null): void {
    this.changed.add(r);
    r.status = status;
    r.memberId = null;
    r.lockUntil = 0;
    r.notBefore = 0;
    r.reason = reason;
  }

  /** Moves the start offset over the done records at the head of the window. */
  private advance(): void {
    while (this.head < this.records.length && !UNFINISHED.has(this.records[this.head]!.status)) {
      const r = this.records[this.head++]!;
      if (r.stored) this.removals.push(r.offset);
      r.stored = false;
    }
    this.start = this.head < this.records.length ? this.records[this.head]!.offset : this.end;
    // Drop what is done at once it is a good share of the array (amortized: no shift per record).
    if (this.head > 1024 && this.head * 2 > this.records.length) {
      this.records = this.records.slice(this.head);
      this.head = 0;
    }
  }

  /** The window's record at `offset` (binary search), if any. */
  private find(offset: number): WindowRecord | undefined {
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

/** A record as the share-partition's answers give it: a copy, without what only persistence needs. */
function copy(r: WindowRecord): ShareRecord {
  return { offset: r.offset, key: r.key, status: r.status, deliveries: r.deliveries, memberId: r.memberId, lockUntil: r.lockUntil, notBefore: r.notBefore, reason: r.reason };
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

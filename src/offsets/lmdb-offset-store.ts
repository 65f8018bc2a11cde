/**
 * The embedded offset store on LMDB (`lmdb` package): a memory-mapped B+tree, so a lookup is a read of
 * mapped pages and a commit of many offsets is one write transaction. A commit resolves once it is written to the
 * commit journal (commit-journal.ts: one `write()`, so it survives kill -9) and LMDB writes it in the background;
 * with `sync` (a topic with `flush.policy=always`) it resolves once LMDB's transaction is synced (lmdb-js joins the
 * writes queued while a transaction is written in the next synced one). Until LMDB holds a journaled commit, reads
 * answer it from memory. Every other write (generations, record states, deletions) resolves once synced.
 *
 * Keys are binary and sort by group, then topic, then partition:
 * `utf8(groupId) 0x00 utf8(topic) 0x00 uint32be(partition)`, so a group's offsets are one key range.
 *
 * Values are a fixed binary record, not MessagePack (format 1, 17 bytes + metadata):
 * `0x01 float64le(offset) float64le(commitTimestamp) utf8(metadata)`. A float64 keeps every JS number as given
 * (offsets up to 2^53 - 1 exactly). Offsets kept by an older build as MessagePack objects, in the sub-database
 * `committed-offsets`, are moved into this format (sub-database `committed-offsets-v1`) when the store opens.
 */
import os from 'node:os';
import { open } from 'lmdb';
import type { Database, RootDatabase } from 'lmdb';
import { OnelogError } from '../protocol/errors.js';
import { FILE_MODE, makeDir } from '../common/file-modes.js';
import { CommitJournal } from './commit-journal.js';
import type { CommitJournalOptions } from './commit-journal.js';
import { checkRecordEntries, CloseGate, staleGeneration } from './offset-store.js';
import type {
  CommitOptions, CommittedOffset, RecordEntries, RecordState, GenerationFence, GroupOffset, OffsetCommit, OffsetStore,
} from './offset-store.js';

/** The sub-database of the binary value format 1. */
const DB_NAME = 'committed-offsets-v1';
/** The sub-database of each group's generations: `utf8(groupId) -> float64le(highest) float64le(fence)`. */
const GENERATIONS_DB_NAME = 'group-generations';
/** The sub-database of record states: the offsets' key layout, the value the state as JSON text. */
const RECORD_STATES_DB_NAME = 'record-states';
/** A record state's entries: the partition's key (as the record state's) followed by the offset, 8 bytes big-endian. */
const RECORD_ENTRIES_DB_NAME = 'record-entries';
/** The sub-database of the commit journal's mark: key {@link APPLIED_KEY}, value float64le(sequence number). */
const JOURNAL_DB_NAME = 'commit-journal';
/** The last journal record LMDB holds (written in the same transaction as the record's puts). */
const APPLIED_KEY = Buffer.from('applied');
/** The sub-database of the older MessagePack values, migrated on open. */
const LEGACY_DB_NAME = 'committed-offsets';

/** lmdb-js's key size limit with the default page size. */
const MAX_KEY_BYTES = 1978;

const VALUE_FORMAT = 1;
/** Format byte, offset, commit timestamp. */
const VALUE_HEADER_BYTES = 17;

/**
 * Writes `s` as UTF-8 into `buf` at `at` and returns where it ends. ASCII (group ids and topic names, almost
 * always) is copied code unit by code unit, cheaper for short strings than a call into Buffer.write; anything
 * else is written by Buffer.write. `buf` must have room for `3 * s.length` bytes from `at`.
 */
function writeUtf8(buf: Buffer, s: string, at: number): number {
  const start = at;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) return start + buf.write(s, start, 'utf8');
    buf[at++] = c;
  }
  return at;
}

/**
 * Builds keys into one reused buffer: no Buffer per part, no concat. A key it returns is a view of that
 * buffer, valid until the next key is built; lmdb-js copies a key when it is given one (puts are queued with
 * their key bytes), so a view can be handed to `get`, `put` and `remove` and then forgotten.
 */
class KeyBuilder {
  private buf = Buffer.allocUnsafeSlow(1024);
  /** Length of the group prefix (`utf8(groupId) 0x00`) now at the start of the buffer. */
  private prefixBytes = 0;

  /** Writes `utf8(groupId) 0x00` at the start; {@link key} then appends topic and partition to it. */
  group(groupId: string, maxTopicLength: number): void {
    // UTF-8 takes at most 3 bytes per UTF-16 code unit; 2 separators and 4 partition bytes.
    const worst = 3 * (groupId.length + maxTopicLength) + 6;
    if (worst > this.buf.length) this.buf = Buffer.allocUnsafeSlow(Math.max(worst, 2 * this.buf.length));
    const end = writeUtf8(this.buf, groupId, 0);
    this.buf[end] = 0;
    this.prefixBytes = end + 1;
  }

  /** The key of `topic`, `partition` in the group last given to {@link group}. */
  key(topic: string, partition: number): Buffer {
    const buf = this.buf;
    let at = writeUtf8(buf, topic, this.prefixBytes);
    buf[at++] = 0;
    at = buf.writeUInt32BE(partition, at);
    return buf.subarray(0, at);
  }

  /** One whole key, for lookups. */
  full(groupId: string, topic: string, partition: number): Buffer {
    this.group(groupId, topic.length);
    return this.key(topic, partition);
  }
}

/**
 * Checks a commit before anything of it is queued (what the key builder or LMDB would otherwise throw
 * halfway through, leaving part of the commit queued), and returns the longest topic name, in code units.
 */
function checkCommit(groupId: string, offsets: readonly OffsetCommit[]): number {
  let maxTopicLength = 0;
  for (const o of offsets) {
    if (!Number.isInteger(o.partition) || o.partition < 0 || o.partition > 0xffffffff) {
      throw new RangeError(`offset store: partition ${o.partition} of topic '${o.topic}' is not an integer in 0..2^32-1`);
    }
    if (o.topic.length > maxTopicLength) maxTopicLength = o.topic.length;
    if (3 * (groupId.length + o.topic.length) + 6 > MAX_KEY_BYTES) {
      const bytes = Buffer.byteLength(groupId) + Buffer.byteLength(o.topic) + 6;
      if (bytes > MAX_KEY_BYTES) {
        throw new RangeError(`offset store: key of group '${groupId}', topic '${o.topic}' is ${bytes} bytes, over ${MAX_KEY_BYTES}`);
      }
    }
  }
  return maxTopicLength;
}

/** The key range holding every offset of one group: the prefix, up to the prefix with its 0x00 made 0x01. */
function groupRange(groupId: string): { start: Buffer; end: Buffer } {
  const id = Buffer.from(groupId, 'utf8');
  const start = Buffer.alloc(id.length + 1);
  id.copy(start);
  const end = Buffer.from(start);
  end[end.length - 1] = 1;
  return { start, end };
}

/** The key range of every key that starts with `prefix` (a record state's entries). */
function prefixRange(prefix: Buffer): { start: Buffer; end: Buffer } {
  return { start: prefix, end: Buffer.concat([prefix, Buffer.alloc(8, 0xff)]) };
}

/**
 * The values of one commit, each a view of one buffer allocated for the commit (lmdb-js keeps a pointer to a
 * queued value until the write is done, so values are not built in a reused buffer).
 */
function encodeValues(offsets: readonly OffsetCommit[], now: number): Buffer[] {
  let total = 0;
  for (const o of offsets) total += VALUE_HEADER_BYTES + (o.metadata ? 3 * o.metadata.length : 0);
  const buf = Buffer.allocUnsafe(total);
  const values: Buffer[] = new Array<Buffer>(offsets.length);
  let at = 0;
  for (let i = 0; i < offsets.length; i++) {
    const o = offsets[i]!;
    const start = at;
    buf[at] = VALUE_FORMAT;
    buf.writeDoubleLE(o.offset, at + 1);
    buf.writeDoubleLE(now, at + 9);
    at += VALUE_HEADER_BYTES;
    if (o.metadata) at = writeUtf8(buf, o.metadata, at);
    values[i] = buf.subarray(start, at);
  }
  return values;
}

function encodeValue(value: CommittedOffset): Buffer {
  return encodeValues([{ topic: '', partition: 0, offset: value.offset, metadata: value.metadata }], value.commitTimestamp)[0]!;
}

function decodeValue(bytes: Uint8Array): CommittedOffset {
  const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.length < VALUE_HEADER_BYTES || buf[0] !== VALUE_FORMAT) {
    throw new Error(`offset store: unknown value format ${buf[0]} (${buf.length} bytes)`);
  }
  return {
    offset: buf.readDoubleLE(1),
    metadata: buf.length > VALUE_HEADER_BYTES ? buf.toString('utf8', VALUE_HEADER_BYTES) : '',
    commitTimestamp: buf.readDoubleLE(9),
  };
}

/** Moves offsets kept as MessagePack objects by an older build into the binary format, in one transaction. */
function migrateLegacy(root: RootDatabase, db: Database<Buffer, Buffer>): void {
  // `create: false` (not in lmdb's typings): openDB returns undefined when the sub-database does not exist.
  const options = { name: LEGACY_DB_NAME, keyEncoding: 'binary', create: false } as const;
  const legacy = root.openDB<CommittedOffset, Buffer>(options) as Database<CommittedOffset, Buffer> | undefined;
  if (legacy === undefined) return;
  root.transactionSync(() => {
    for (const { key, value } of legacy.getRange()) {
      db.putSync(key, encodeValue({ offset: value.offset, metadata: value.metadata ?? '', commitTimestamp: value.commitTimestamp }));
    }
    legacy.dropSync();
  });
}

const ignore = (): void => {};

/** A journal sequence number as the mark's value. */
function seqValue(seq: number): Buffer {
  const value = Buffer.allocUnsafe(8);
  value.writeDoubleLE(seq, 0);
  return value;
}

/** `EIO` for 5, ...: the errno name of a number LMDB reports, or the number as text. */
function errnoName(errno: number): string {
  return Object.entries(os.constants.errno).find(([, n]) => n === errno)?.[0] ?? String(errno);
}

/** A journaled commit's offset that LMDB may not hold yet, as reads answer it. */
interface PendingOffset {
  groupId: string;
  topic: string;
  partition: number;
  /** The journal record it came in. */
  seq: number;
  value: CommittedOffset;
}

/** The key of {@link LmdbOffsetStore}'s pending offsets. */
function pendingKey(groupId: string, topic: string, partition: number): string {
  return `${groupId}\u0000${topic}\u0000${partition}`;
}

/** Options of {@link LmdbOffsetStore.open}. */
export interface LmdbOffsetStoreOptions {
  /** The commit journal's options. */
  journal?: CommitJournalOptions;
}

export class LmdbOffsetStore implements OffsetStore {
  private readonly keys = new KeyBuilder();
  /** Set by a failed write (see {@link close}). */
  private failed = false;
  /** The failure of a commit's background LMDB write: every later write throws it (the journal keeps the commits). */
  private failure: Error | undefined;
  private readonly gate = new CloseGate('LMDB');
  /** Journaled commits' offsets by {@link pendingKey}, until LMDB's transaction holding them is committed. */
  private readonly pending = new Map<string, PendingOffset>();
  /**
   * Each group's fence as this process knows it: read from LMDB once, then moved at each {@link advanceGeneration}
   * call, so a commit is checked at its call against every fence called before it (this process is LMDB's only writer).
   */
  private readonly fences = new Map<string, number>();
  /** The setImmediate this turn's journaled commits answer in ({@link turnEnd}). */
  private nextTurn: Promise<void> | undefined;

  private constructor(
    private readonly root: RootDatabase,
    private readonly db: Database<Buffer, Buffer>,
    private readonly generations: Database<Buffer, Buffer>,
    private readonly recordStates: Database<Buffer, Buffer>,
    private readonly recordEntriesDb: Database<Buffer, Buffer>,
    private readonly journalDb: Database<Buffer, Buffer>,
    private readonly journal: CommitJournal,
    /** The last journal record's sequence number. */
    private seq: number,
  ) {}

  /**
   * Opens (or creates) the store in directory `path`, first writing to LMDB (one synced transaction) the journaled
   * commits it does not hold (those acknowledged before a crash).
   * @param path a directory; LMDB keeps `data.mdb` and `lock.mdb` in it, the commit journal its `journal-*` files
   */
  static open(path: string, storeOptions: LmdbOffsetStoreOptions = {}): LmdbOffsetStore {
    // eventTurnBatching off: with it, lmdb-js wraps each event turn's writes in a batch of its own whose promise
    // no caller holds, so a failed commit (an I/O error) rejects it unhandled and ends the process. Commits
    // queued while one is written still share the next transaction, at the same throughput.
    // The directory, data.mdb and lock.mdb owner-only (common/file-modes.ts): lmdb-js hands permissionsMode (not in
    // its typings) to mdb_env_open, whose default is 0664.
    makeDir(path);
    const options = { path, name: undefined, eventTurnBatching: false, permissionsMode: FILE_MODE };
    const root = open(options);
    // strictAsyncOrder: deleteGroup's transaction callback runs in call order with the puts commits queue (by
    // default lmdb-js runs queued transaction callbacks after the queued puts of the same batch).
    const db = root.openDB<Buffer, Buffer>({ name: DB_NAME, keyEncoding: 'binary', encoding: 'binary', strictAsyncOrder: true });
    const generations = root.openDB<Buffer, Buffer>({ name: GENERATIONS_DB_NAME, keyEncoding: 'binary', encoding: 'binary', strictAsyncOrder: true });
    const recordStates = root.openDB<Buffer, Buffer>({ name: RECORD_STATES_DB_NAME, keyEncoding: 'binary', encoding: 'binary', strictAsyncOrder: true });
    const recordEntries = root.openDB<Buffer, Buffer>({ name: RECORD_ENTRIES_DB_NAME, keyEncoding: 'binary', encoding: 'binary', strictAsyncOrder: true });
    const journalDb = root.openDB<Buffer, Buffer>({ name: JOURNAL_DB_NAME, keyEncoding: 'binary', encoding: 'binary', strictAsyncOrder: true });
    migrateLegacy(root, db);
    const { records, start } = CommitJournal.read(path);
    const mark = journalDb.getBinary(APPLIED_KEY);
    const applied = mark === undefined ? 0 : mark.readDoubleLE(0);
    let last = applied;
    const missing = records.filter((r) => r.seq > applied);
    for (const r of records) last = Math.max(last, r.seq);
    if (missing.length > 0) {
      root.transactionSync(() => {
        for (const r of missing) for (const put of r.puts) db.putSync(put.key, put.value);
        journalDb.putSync(APPLIED_KEY, seqValue(last));
      });
    }
    return new LmdbOffsetStore(root, db, generations, recordStates, recordEntries, journalDb, start(last + 1, storeOptions.journal), last);
  }

  async get(groupId: string, topic: string, partition: number): Promise<CommittedOffset | undefined> {
    this.gate.check();
    const pending = this.pending.size === 0 ? undefined : this.pending.get(pendingKey(groupId, topic, partition));
    if (pending !== undefined) return { ...pending.value };
    // getBinaryFast returns a view of a buffer the next read reuses: decoded at once.
    const bytes = this.db.getBinaryFast(this.keys.full(groupId, topic, partition));
    return bytes === undefined ? undefined : decodeValue(bytes);
  }

  /**
   * As {@link OffsetStore.commit}: checked (fence included) and journaled at the call, written to LMDB after.
   * @throws RangeError for a bad partition or an oversized key, value or metadata; OnelogError `ILLEGAL_GENERATION`;
   *   the journal's write error (ENOSPC, EIO); the error of an earlier commit's LMDB write, once one failed
   */
  async commit(groupId: string, offsets: readonly OffsetCommit[], now: number, fence?: GenerationFence, options: CommitOptions = {}): Promise<void> {
    if (offsets.length === 0) return;
    this.gate.check();
    if (this.failure !== undefined) throw this.failure;
    const maxTopicLength = checkCommit(groupId, offsets);
    if (fence !== undefined) {
      const stored = this.fenceOf(groupId);
      if (stored > fence.generationId) throw staleGeneration(groupId, fence, stored);
    }
    const values = encodeValues(offsets, now);
    const { keys, journal, db } = this;
    keys.group(groupId, maxTopicLength);
    try {
      for (let i = 0; i < offsets.length; i++) journal.add(keys.key(offsets[i]!.topic, offsets[i]!.partition), values[i]!);
    } catch (err) {
      journal.discard();
      throw err;
    }
    const seq = this.seq + 1;
    journal.append(seq);
    this.seq = seq;
    const pendingKeys = offsets.map((o) => {
      const key = pendingKey(groupId, o.topic, o.partition);
      this.pending.set(key, { groupId, topic: o.topic, partition: o.partition, seq, value: { offset: o.offset, metadata: o.metadata ?? '', commitTimestamp: now } });
      return key;
    });
    // One block of queued puts with the journal's mark: lmdb-js writes them in one transaction (with whatever else was
    // queued meanwhile) on its write thread and resolves once that transaction is committed and synced. Each put's
    // own promise fails with the batch's: handled here, the batch's failure is the one reported.
    const mark = seqValue(seq);
    const written = this.written(() => db.batch(() => {
      keys.group(groupId, maxTopicLength);
      for (let i = 0; i < offsets.length; i++) db.put(keys.key(offsets[i]!.topic, offsets[i]!.partition), values[i]!).catch(ignore);
      this.journalDb.put(APPLIED_KEY, mark).catch(ignore);
    })).then(() => {
      journal.applied(seq);
      for (const key of pendingKeys) if (this.pending.get(key)?.seq === seq) this.pending.delete(key);
    });
    written.catch((err: unknown) => {
      this.failure ??= err as Error;
    });
    await (options.sync ? written : this.turnEnd());
  }

  /**
   * Resolves in the next event-loop turn (one setImmediate shared by every commit of this turn): a journaled commit
   * answers there, not in the same turn, so a caller that commits in a loop (an in-process consumer working through a
   * backlog) still lets timers and I/O run (log flushes, heartbeats, LMDB's own completions), as waiting for LMDB's
   * synced transaction made it. Without it such a loop never yields.
   */
  private turnEnd(): Promise<void> {
    return this.nextTurn ??= new Promise<void>((resolve) => setImmediate(() => {
      this.nextTurn = undefined;
      resolve();
    }));
  }

  /** The group's fence ({@link fences}). */
  private fenceOf(groupId: string): number {
    let fence = this.fences.get(groupId);
    if (fence === undefined) this.fences.set(groupId, fence = this.storedGenerations(groupId).fence);
    return fence;
  }

  async generation(groupId: string): Promise<number> {
    this.gate.check();
    return this.storedGenerations(groupId).highest;
  }

  async advanceGeneration(groupId: string, generationId: number, options: { fence?: boolean } = {}): Promise<number> {
    if (options.fence) this.fences.set(groupId, Math.max(this.fenceOf(groupId), generationId));
    return this.written(() => this.generations.transaction(() => {
      const stored = this.storedGenerations(groupId);
      const highest = Math.max(stored.highest, generationId);
      const fence = options.fence ? Math.max(stored.fence, generationId) : stored.fence;
      if (highest !== stored.highest || fence !== stored.fence) {
        const value = Buffer.allocUnsafe(16);
        value.writeDoubleLE(highest, 0);
        value.writeDoubleLE(fence, 8);
        this.generations.put(Buffer.from(groupId, 'utf8'), value).catch(ignore);
      }
      return highest;
    }));
  }

  private storedGenerations(groupId: string): { highest: number; fence: number } {
    const bytes = this.generations.getBinaryFast(Buffer.from(groupId, 'utf8'));
    if (bytes === undefined) return { highest: 0, fence: 0 };
    const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    return { highest: buf.readDoubleLE(0), fence: buf.readDoubleLE(8) };
  }

  async list(groupId: string): Promise<GroupOffset[]> {
    this.gate.check();
    const range = groupRange(groupId);
    const out: GroupOffset[] = [];
    for (const { key, value } of this.db.getRange(range)) {
      const rest = key.subarray(range.start.length);
      const topic = rest.subarray(0, rest.length - 5).toString('utf8');
      out.push({ topic, partition: rest.readUInt32BE(rest.length - 4), ...decodeValue(value) });
    }
    return this.pending.size === 0 ? out : this.withPending(groupId, out);
  }

  /** `stored` (a group's offsets LMDB holds, in key order) with the group's pending offsets over them, in key order. */
  private withPending(groupId: string, stored: GroupOffset[]): GroupOffset[] {
    const at = new Map(stored.map((o, i) => [pendingKey(groupId, o.topic, o.partition), i]));
    let added = false;
    for (const [key, p] of this.pending) {
      if (p.groupId !== groupId) continue;
      const i = at.get(key);
      if (i === undefined) added = true;
      const offset = { topic: p.topic, partition: p.partition, ...p.value };
      if (i === undefined) stored.push(offset);
      else stored[i] = offset;
    }
    // Key order: the topic's UTF-8 bytes, then the partition.
    if (added) stored.sort((a, b) => Buffer.compare(Buffer.from(a.topic), Buffer.from(b.topic)) || a.partition - b.partition);
    return stored;
  }

  async recordState(groupId: string, topic: string, partition: number): Promise<RecordState | undefined> {
    this.gate.check();
    checkCommit(groupId, [{ topic, partition, offset: 0 }]);
    const bytes = this.recordStates.getBinary(this.keys.full(groupId, topic, partition));
    return bytes === undefined ? undefined : JSON.parse(bytes.toString('utf8')) as RecordState;
  }

  async setRecordState(groupId: string, topic: string, partition: number, state: RecordState | null, entries: RecordEntries = {}): Promise<void> {
    checkCommit(groupId, [{ topic, partition, offset: 0 }]);
    const key = Buffer.from(this.keys.full(groupId, topic, partition));
    const value = state === null ? null : Buffer.from(JSON.stringify(state), 'utf8');
    const checked = checkRecordEntries(entries);
    const entryKey = (offset: number) => {
      if (key.length + 8 > MAX_KEY_BYTES) throw new RangeError(`offset store: record entry keys of group '${groupId}', topic '${topic}' are over ${MAX_KEY_BYTES} bytes`);
      const k = Buffer.allocUnsafe(key.length + 8);
      key.copy(k, 0);
      k.writeUInt32BE(Math.floor(offset / 0x1_0000_0000), key.length);
      k.writeUInt32BE(offset % 0x1_0000_0000, key.length + 4);
      return k;
    };
    const set = checked.set.map(([offset, text]) => [entryKey(offset), Buffer.from(text, 'utf8')] as const);
    const remove = checked.remove.map(entryKey);
    // One write transaction across both databases, committed and synced before it resolves.
    await this.written(() => this.recordStates.transaction(() => {
      if (value === null) {
        this.recordStates.remove(key).catch(ignore);
        for (const k of this.recordEntriesDb.getKeys(prefixRange(key))) this.recordEntriesDb.remove(k).catch(ignore);
        return;
      }
      this.recordStates.put(key, value).catch(ignore);
      for (const [k, v] of set) this.recordEntriesDb.put(k, v).catch(ignore);
      for (const k of remove) this.recordEntriesDb.remove(k).catch(ignore);
    }));
  }

  async recordEntries(groupId: string, topic: string, partition: number): Promise<Array<[number, string]>> {
    this.gate.check();
    checkCommit(groupId, [{ topic, partition, offset: 0 }]);
    const key = Buffer.from(this.keys.full(groupId, topic, partition));
    const out: Array<[number, string]> = [];
    for (const { key: k, value } of this.recordEntriesDb.getRange(prefixRange(key))) {
      out.push([k.readUInt32BE(key.length) * 0x1_0000_0000 + k.readUInt32BE(key.length + 4), value.toString('utf8')]);
    }
    return out;
  }

  async deleteGroup(groupId: string): Promise<void> {
    // The group's pending offsets go now: their puts were queued before the deletion, which removes them after.
    for (const [key, p] of this.pending) if (p.groupId === groupId) this.pending.delete(key);
    // A transaction callback runs inside the write transaction, so it sees (and removes) every earlier commit.
    await this.written(() => this.db.transaction(() => {
      for (const db of [this.db, this.recordStates, this.recordEntriesDb]) for (const key of db.getKeys(groupRange(groupId))) db.remove(key).catch(ignore);
    }));
  }

  /** Scans every key (topic deletion is rare; keys are ordered by group, not by topic). */
  async deleteTopic(topic: string): Promise<number> {
    const name = Buffer.from(topic, 'utf8');
    // group \0 topic \0 partition(4 bytes): the topic ends 5 bytes before the key does.
    const ofTopic = (key: Buffer) => {
      const end = key.length - 5;
      const start = end - name.length;
      return start >= 1 && key[start - 1] === 0 && name.compare(key, start, end) === 0;
    };
    for (const [key, p] of this.pending) if (p.topic === topic) this.pending.delete(key);
    let removed = 0;
    await this.written(() => this.db.transaction(() => {
      for (const key of this.db.getKeys()) {
        if (!ofTopic(key)) continue;
        this.db.remove(key).catch(ignore);
        removed++;
      }
      for (const key of this.recordStates.getKeys()) if (ofTopic(key)) this.recordStates.remove(key).catch(ignore);
      for (const key of this.recordEntriesDb.getKeys()) if (ofTopic(key.subarray(0, key.length - 8))) this.recordEntriesDb.remove(key).catch(ignore);
    }));
    return removed;
  }

  /**
   * Closes the store once the calls in flight have settled, with the commit journal (whose files are removed when
   * LMDB holds every commit). After a failed write it does not wait for the environment: lmdb-js's close would wait
   * for that transaction's flush, which never comes; the journal then stays for the next open to replay.
   */
  async close(): Promise<void> {
    if (!(await this.gate.close())) return;
    this.journal.close(!this.failed);
    if (this.failed) {
      this.root.close().catch(ignore);
      return;
    }
    await this.root.close();
  }

  /**
   * Waits for an LMDB write. lmdb-js rejects a failed transaction with a generic "Commit failed" whose
   * `commitError` promise carries the cause (an I/O error, errno in `code`); that promise is handled here (left
   * unhandled it would end the process) and its cause thrown instead. Once a commit's background write failed, every
   * later write throws that failure without writing.
   * @throws Error naming the cause, with `code` the system's errno name where LMDB gave a number (5 is EIO)
   */
  private async written<T>(write: () => Promise<T>): Promise<T> {
    if (this.failure !== undefined) throw this.failure;
    try {
      return await this.gate.run(write);
    } catch (err) {
      if (err instanceof OnelogError) throw err;
      this.failed = true;
      const pending = (err as { commitError?: Promise<unknown> }).commitError;
      if (pending === undefined) throw err;
      const cause = await pending.then(() => err, (c: unknown) => c) as Error & { code?: unknown };
      const code = typeof cause.code === 'number' ? errnoName(cause.code) : cause.code;
      throw Object.assign(new Error(`LMDB write failed: ${cause.message}`), code === undefined ? {} : { code });
    }
  }
}

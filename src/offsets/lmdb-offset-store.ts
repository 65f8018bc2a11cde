/**
 * The embedded offset store on LMDB (`lmdb` package): a memory-mapped B+tree, so a lookup is a read of
 * mapped pages and a commit of many offsets is one write transaction. Commits are synced to disk before they
 * resolve (LMDB's default durability; lmdb-js joins the writes queued while a transaction is written in the next synced one).
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
import { checkRecordEntries, CloseGate, staleGeneration } from './offset-store.js';
import type { CommittedOffset, RecordEntries, RecordState, GenerationFence, GroupOffset, OffsetCommit, OffsetStore } from './offset-store.js';

/** The sub-database of the binary value format 1. */
const DB_NAME = 'committed-offsets-v1';
/** The sub-database of each group's generations: `utf8(groupId) -> float64le(highest) float64le(fence)`. */
const GENERATIONS_DB_NAME = 'group-generations';
/** The sub-database of record states: the offsets' key layout, the value the state as JSON text. */
const RECORD_STATES_DB_NAME = 'record-states';
/** A record state's entries: the partition's key (as the record state's) followed by the offset, 8 bytes big-endian. */
const RECORD_ENTRIES_DB_NAME = 'record-entries';
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

/** `EIO` for 5, ...: the errno name of a number LMDB reports, or the number as text. */
function errnoName(errno: number): string {
  return Object.entries(os.constants.errno).find(([, n]) => n === errno)?.[0] ?? String(errno);
}

export class LmdbOffsetStore implements OffsetStore {
  private readonly keys = new KeyBuilder();
  /** Set by a failed write (see {@link close}). */
  private failed = false;
  private readonly gate = new CloseGate('LMDB');

  private constructor(
    private readonly root: RootDatabase,
    private readonly db: Database<Buffer, Buffer>,
    private readonly generations: Database<Buffer, Buffer>,
    private readonly recordStates: Database<Buffer, Buffer>,
    private readonly recordEntriesDb: Database<Buffer, Buffer>,
  ) {}

  /**
   * Opens (or creates) the store in directory `path`.
   * @param path a directory; LMDB keeps `data.mdb` and `lock.mdb` in it
   */
  static open(path: string): LmdbOffsetStore {
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
    migrateLegacy(root, db);
    return new LmdbOffsetStore(root, db, generations, recordStates, recordEntries);
  }

  async get(groupId: string, topic: string, partition: number): Promise<CommittedOffset | undefined> {
    this.gate.check();
    // getBinaryFast returns a view of a buffer the next read reuses: decoded at once.
    const bytes = this.db.getBinaryFast(this.keys.full(groupId, topic, partition));
    return bytes === undefined ? undefined : decodeValue(bytes);
  }

  async commit(groupId: string, offsets: readonly OffsetCommit[], now: number, fence?: GenerationFence): Promise<void> {
    if (offsets.length === 0) return;
    const maxTopicLength = checkCommit(groupId, offsets);
    const values = encodeValues(offsets, now);
    const keys = this.keys;
    const db = this.db;
    if (fence !== undefined) {
      // Inside the write transaction the stored generation cannot change between the check and the puts.
      const stored = await this.written(() => db.transaction(() => {
        const { fence: stored } = this.storedGenerations(groupId);
        if (stored > fence.generationId) return stored;
        keys.group(groupId, maxTopicLength);
        for (let i = 0; i < offsets.length; i++) db.put(keys.key(offsets[i]!.topic, offsets[i]!.partition), values[i]!).catch(ignore);
        return -1;
      }));
      if (stored >= 0) throw staleGeneration(groupId, fence, stored);
      return;
    }
    // One block of queued puts: lmdb-js writes them in one transaction (with whatever else was queued meanwhile)
    // on its write thread and resolves once that transaction is committed and synced. Each put's own
    // promise fails with the batch's: handled here, the batch's failure is the one reported.
    await this.written(() => db.batch(() => {
      keys.group(groupId, maxTopicLength);
      for (let i = 0; i < offsets.length; i++) {
        const o = offsets[i]!;
        db.put(keys.key(o.topic, o.partition), values[i]!).catch(ignore);
      }
    }));
  }

  async generation(groupId: string): Promise<number> {
    this.gate.check();
    return this.storedGenerations(groupId).highest;
  }

  async advanceGeneration(groupId: string, generationId: number, options: { fence?: boolean } = {}): Promise<number> {
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
    return out;
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
   * Closes the store once the calls in flight have settled. After a failed write it does not wait for the
   * environment: lmdb-js's close would wait for that transaction's flush, which never comes.
   */
  async close(): Promise<void> {
    if (!(await this.gate.close())) return;
    if (this.failed) {
      this.root.close().catch(ignore);
      return;
    }
    await this.root.close();
  }

  /**
   * Waits for an LMDB write. lmdb-js rejects a failed transaction with a generic "Commit failed" whose
   * `commitError` promise carries the cause (an I/O error, errno in `code`); that promise is handled here (left
   * unhandled it would end the process) and its cause thrown instead.
   * @throws Error naming the cause, with `code` the system's errno name where LMDB gave a number (5 is EIO)
   */
  private async written<T>(write: () => Promise<T>): Promise<T> {
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

/**
 * The embedded offset store on LMDB (`lmdb` package): a memory-mapped B+tree, so a lookup is a read of
 * mapped pages and a commit of many offsets is one write transaction. Keys are binary and sort by group,
 * then topic, then partition: `utf8(groupId) 0x00 utf8(topic) 0x00 uint32be(partition)`, so a group's
 * offsets are one key range. Commits are synced to disk before they resolve (LMDB's default durability).
 */
import { open } from 'lmdb';
import type { Database, RootDatabase } from 'lmdb';
import type { CommittedOffset, GroupOffset, OffsetCommit, OffsetStore } from './offset-store.js';

function groupPrefix(groupId: string): Buffer {
  return Buffer.concat([Buffer.from(groupId, 'utf8'), Buffer.from([0])]);
}

/** The key range holding every offset of one group: the prefix, up to the prefix with its 0x00 made 0x01. */
function groupRange(groupId: string): { start: Buffer; end: Buffer } {
  const start = groupPrefix(groupId);
  const end = Buffer.from(start);
  end[end.length - 1] = 1;
  return { start, end };
}

function encodeKey(groupId: string, topic: string, partition: number): Buffer {
  const tail = Buffer.allocUnsafe(4);
  tail.writeUInt32BE(partition);
  return Buffer.concat([groupPrefix(groupId), Buffer.from(topic, 'utf8'), Buffer.from([0]), tail]);
}

export class LmdbOffsetStore implements OffsetStore {
  private constructor(
    private readonly root: RootDatabase,
    private readonly db: Database<CommittedOffset, Buffer>,
  ) {}

  /**
   * Opens (or creates) the store in directory `path`.
   * @param path a directory; LMDB keeps `data.mdb` and `lock.mdb` in it
   */
  static open(path: string): LmdbOffsetStore {
    const root = open({ path, name: undefined });
    const db = root.openDB<CommittedOffset, Buffer>({ name: 'committed-offsets', keyEncoding: 'binary' });
    return new LmdbOffsetStore(root, db);
  }

  async get(groupId: string, topic: string, partition: number): Promise<CommittedOffset | undefined> {
    return this.db.get(encodeKey(groupId, topic, partition));
  }

  async commit(groupId: string, offsets: readonly OffsetCommit[], now: number): Promise<void> {
    await this.db.transaction(() => {
      for (const o of offsets) {
        const value: CommittedOffset = { offset: o.offset, metadata: o.metadata ?? '', commitTimestamp: now };
        void this.db.put(encodeKey(groupId, o.topic, o.partition), value);
      }
    });
  }

  async list(groupId: string): Promise<GroupOffset[]> {
    const range = groupRange(groupId);
    const out: GroupOffset[] = [];
    for (const { key, value } of this.db.getRange(range)) {
      const rest = key.subarray(range.start.length);
      const topic = rest.subarray(0, rest.length - 5).toString('utf8');
      out.push({ topic, partition: rest.readUInt32BE(rest.length - 4), ...value });
    }
    return out;
  }

  async deleteGroup(groupId: string): Promise<void> {
    await this.db.transaction(() => {
      for (const key of this.db.getKeys(groupRange(groupId))) void this.db.remove(key);
    });
  }

  async close(): Promise<void> {
    await this.root.close();
  }
}

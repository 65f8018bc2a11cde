/**
 * An offset store whose writes run through the broker's {@link WriteFence}: a commit or deletion that fails
 * for any reason but a bad argument stops the broker's writes (see write-fence.ts); reads pass through.
 */
import { OnelogError } from '../protocol/errors.js';
import type { WriteFence } from '../write-fence.js';
import type { CommittedOffset, GroupOffset, OffsetCommit, OffsetStore } from './offset-store.js';

/** A failure of the store: anything but a typed error or a refused argument (RangeError, TypeError). */
function isStoreFailure(err: unknown): boolean {
  return !(err instanceof OnelogError || err instanceof RangeError || err instanceof TypeError);
}

export class FencedOffsetStore implements OffsetStore {
  constructor(private readonly store: OffsetStore, private readonly fence: WriteFence) {}

  get(groupId: string, topic: string, partition: number): Promise<CommittedOffset | undefined> {
    return this.store.get(groupId, topic, partition);
  }

  list(groupId: string): Promise<GroupOffset[]> {
    return this.store.list(groupId);
  }

  /** As {@link OffsetStore.commit}. @throws as {@link WriteFence.guard} */
  commit(groupId: string, offsets: readonly OffsetCommit[], now: number): Promise<void> {
    return this.fence.guard('offset store', 'commit', isStoreFailure, () => this.store.commit(groupId, offsets, now));
  }

  /** As {@link OffsetStore.deleteGroup}. @throws as {@link WriteFence.guard} */
  deleteGroup(groupId: string): Promise<void> {
    return this.fence.guard('offset store', 'group deletion', isStoreFailure, () => this.store.deleteGroup(groupId));
  }

  /** As {@link OffsetStore.deleteTopic}. @throws as {@link WriteFence.guard} */
  deleteTopic(topic: string): Promise<number> {
    return this.fence.guard('offset store', 'topic deletion', isStoreFailure, () => this.store.deleteTopic(topic));
  }

  close(): Promise<void> {
    return this.store.close();
  }
}

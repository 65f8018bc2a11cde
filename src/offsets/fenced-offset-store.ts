/**
 * An offset store whose writes run through the broker's {@link WriteFence}: a commit or deletion that fails
 * for any reason but a bad argument stops the broker's writes (see write-fence.ts); reads pass through. A
 * write first checks that the disk has room (LMDB reports a full disk as an I/O error, which would stop every
 * write until a restart), so a full disk refuses it with `RESOURCE_EXHAUSTED` and stops nothing.
 */
import { OnelogError } from '../protocol/errors.js';
import type { WriteFence } from '../common/write-fence.js';
import type { CommitOptions, CommittedOffset, RecordEntries, RecordState, GenerationFence, GroupOffset, OffsetCommit, OffsetStore } from './offset-store.js';

/** A failure of the store: anything but a typed error or a refused argument (RangeError, TypeError). */
function isStoreFailure(err: unknown): boolean {
  return !(err instanceof OnelogError || err instanceof RangeError || err instanceof TypeError);
}

export class FencedOffsetStore implements OffsetStore {
  /**
   * @param checkRoom throws OnelogError `RESOURCE_EXHAUSTED` when the store's disk is (nearly) full; called
   *   before every write
   */
  constructor(private readonly store: OffsetStore, private readonly fence: WriteFence, private readonly checkRoom: () => void) {}

  get(groupId: string, topic: string, partition: number): Promise<CommittedOffset | undefined> {
    return this.store.get(groupId, topic, partition);
  }

  list(groupId: string): Promise<GroupOffset[]> {
    return this.store.list(groupId);
  }

  /** As {@link OffsetStore.commit}. @throws as {@link WriteFence.guard}; `RESOURCE_EXHAUSTED` for a full disk */
  commit(groupId: string, offsets: readonly OffsetCommit[], now: number, fence?: GenerationFence, options?: CommitOptions): Promise<void> {
    return this.write('commit', () => this.store.commit(groupId, offsets, now, fence, options));
  }

  recordState(groupId: string, topic: string, partition: number): Promise<RecordState | undefined> {
    return this.store.recordState(groupId, topic, partition);
  }

  /** As {@link OffsetStore.setRecordState}. @throws as {@link WriteFence.guard}; `RESOURCE_EXHAUSTED` for a full disk */
  setRecordState(groupId: string, topic: string, partition: number, state: RecordState | null, entries?: RecordEntries): Promise<void> {
    return this.write('record state', () => this.store.setRecordState(groupId, topic, partition, state, entries));
  }

  recordEntries(groupId: string, topic: string, partition: number): Promise<Array<[number, string]>> {
    return this.store.recordEntries(groupId, topic, partition);
  }

  generation(groupId: string): Promise<number> {
    return this.store.generation(groupId);
  }

  /** As {@link OffsetStore.advanceGeneration}. @throws as {@link WriteFence.guard} */
  advanceGeneration(groupId: string, generationId: number, options?: { fence?: boolean }): Promise<number> {
    return this.write('generation', () => this.store.advanceGeneration(groupId, generationId, options));
  }

  /** As {@link OffsetStore.deleteGroup}. @throws as {@link WriteFence.guard} */
  deleteGroup(groupId: string): Promise<void> {
    return this.write('group deletion', () => this.store.deleteGroup(groupId));
  }

  /** As {@link OffsetStore.deleteTopic}. @throws as {@link WriteFence.guard} */
  deleteTopic(topic: string): Promise<number> {
    return this.write('topic deletion', () => this.store.deleteTopic(topic));
  }

  private async write<T>(action: string, work: () => Promise<T>): Promise<T> {
    this.fence.check();
    this.checkRoom();
    return this.fence.guard('offset store', action, isStoreFailure, work);
  }

  close(): Promise<void> {
    return this.store.close();
  }
}

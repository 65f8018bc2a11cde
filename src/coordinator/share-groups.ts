/**
 * Share groups (docs/consumer-groups.md; Kafka's share groups, KIP-932): queues on the log. Any number of members
 * acquire records of the same partitions side by side; each partition's state is a {@link SharePartition}, loaded on
 * first use from the offset store (its record state: the start offset, and an entry per record delivered) and
 * written back, what changed only, durably, before every answer that changed it, so after any crash every record is
 * accepted or dead-lettered, none lost, and a redelivery is a count. Records read from the log for the window are kept
 * as stored until their first delivery (share-read-ahead.ts: a read-ahead of at most {@link READ_AHEAD_BYTES} per
 * partition), and handed out as sections of the stored bytes: the broker neither decodes nor encodes a record.
 *
 * Members are known by the member id they acquire and acknowledge with (a client's own id): one not heard from for its
 * session timeout ends, and the records it holds are released at once (before their locks would end).
 * Every operation on one partition runs in order (a queue per partition), so two acquisitions never interleave halfway.
 */
import type { Clock } from '../common/clock.js';
import { KeyedTurns } from '../common/turns.js';
import type { SubscriptionRecord } from '../catalog/subscriptions.js';
import type { Logger } from '../common/logger.js';
import type { SharePartitionLoad } from '../monitoring/metrics.js';
import type { OffsetStore, RecordState } from '../offsets/offset-store.js';
import type { RecordSection } from '../protocol/record-batch.js';
import type { GroupDescription } from '../protocol/groups.js';
import type { ShareAckRequest, ShareAckResult, SharedSections, ShareFetchRequest } from '../protocol/share-groups.js';
import { OnelogError } from '../protocol/errors.js';
import { checkInteger } from '../protocol/validate.js';
import type { Logs } from '../log/logs.js';
import { restoreSnapshot, runsEnd, SharePartition } from './share-partition.js';
import type { ShareAcknowledgement, ShareKey, SharePartitionSettings } from './share-partition.js';
import { indexBatches, indexOf, keyAt, SectionBuilder, ShareReadAhead } from './share-read-ahead.js';
import type { IndexedRecords } from './share-read-ahead.js';

/** What share groups read and write beyond the log and the offset store. */
export interface ShareGroupSources {
  logs: Logs;
  offsets: OffsetStore;
  clock: Clock;
  logger: Logger;
  /** The group's share subscription to `topic`. @throws OnelogError `UNKNOWN_GROUP` / `INVALID_REQUEST` when it has none */
  subscription(groupId: string, topic: string): Promise<SubscriptionRecord>;
  /** Moves a record to the subscription's dead letters, once, durably. */
  deadLetter(sub: SubscriptionRecord, partition: number, offset: number, deliveries: number, reason: string): Promise<void>;
  /**
   * Commits the group's offset of a partition (the share-partition start offset: below it every record is done), as
   * a commit without a member is: lag, time lag, retention headroom, states and alerts follow it as for any group.
   */
  commit(groupId: string, topic: string, partition: number, offset: number): Promise<void>;
}

/** A member's session when its acquire names none, ms (Kafka's group.share.session.timeout.ms). */
const DEFAULT_SESSION_TIMEOUT_MS = 45_000;
/** Bytes of records one partition's read from the log takes at most (the first batch is read whole). */
const READ_AHEAD_BYTES = 1 << 20;
/** Defaults and bounds of an acquisition. */
const FETCH = { maxRecords: 500, maxRecordsBound: 10_000, maxBytes: 16 << 20, maxBytesBound: 64 << 20, maxWaitMsBound: 30_000 };
/** Reads from the log one acquisition makes at most to fill a partition's window (each up to {@link READ_AHEAD_BYTES}). */
const MAX_READS = 16;

/** A share acquisition's `partitions` as a set. @throws OnelogError `INVALID_REQUEST` for one out of range or named twice */
function checkPartitions(partitions: readonly number[], count: number): Set<number> {
  const set = new Set<number>();
  for (const p of partitions) {
    checkInteger(p, 'partitions[]', 0, count - 1);
    if (set.has(p)) throw new OnelogError('INVALID_REQUEST', `partitions names partition ${p} twice`, { partition: p });
    set.add(p);
  }
  return set;
}

/** A share-partition with what serves it. */
interface PartitionState {
  sp: SharePartition;
  /** The start offset last committed as the group's offset (see {@link ShareGroupSources.commit}); -1 before any. */
  committed: number;
  /** Records read from the log past the window's end, and the window's records not yet handed out: as stored. */
  readAhead: ShareReadAhead;
  /** Entries the offset store holds that the window does not (see restoreSnapshot), removed at the next write. */
  orphans: number[];
  /** A write of its state failed: what is in memory may be ahead of the store, so it is read again before the next operation. */
  stale: boolean;
}

type LoadedPartition = PartitionState;

interface ShareMember {
  lastSeenAt: number;
  sessionTimeoutMs: number;
}

const partitionKey = (groupId: string, topic: string, partition: number) => `${groupId}\0${topic}\0${partition}`;

export class ShareGroups {
  private readonly partitions = new Map<string, Promise<LoadedPartition>>();
  /** Every operation on one partition runs in order, by the partition's key. */
  private readonly turns = new KeyedTurns<string>();
  /** group -> member -> its session */
  private readonly members = new Map<string, Map<string, ShareMember>>();
  /** group \0 topic -> the partition the next acquisition starts at (so none starves). */
  private readonly nextPartition = new Map<string, number>();

  constructor(private readonly s: ShareGroupSources) {}

  /**
   * Acquires up to `maxRecords` records of the topic's partitions for the member, each locked for the group's
   * `lockMs`; waits up to `maxWaitMs` while none can be acquired (new records, an expired lock, a release delay).
   * @throws OnelogError `INVALID_REQUEST` for a bad field, or when the group is not a share group of the topic; the
   *   offset store's and the log's errors
   */
  async acquire(request: ShareFetchRequest): Promise<SharedSections> {
    const { groupId, topic, memberId } = request;
    const sub = await this.s.subscription(groupId, topic);
    checkMemberId(memberId);
    const maxRecords = checkInteger(request.maxRecords ?? FETCH.maxRecords, 'maxRecords', 1, FETCH.maxRecordsBound);
    const maxWaitMs = checkInteger(request.maxWaitMs ?? 0, 'maxWaitMs', 0, FETCH.maxWaitMsBound);
    const maxBytes = checkInteger(request.maxBytes ?? FETCH.maxBytes, 'maxBytes', 1, FETCH.maxBytesBound);
    this.seen(groupId, memberId, request.sessionTimeoutMs);
    const count = this.s.logs.partitionCount(topic);
    const only = request.partitions === undefined ? null : checkPartitions(request.partitions, count);
    const deadline = this.s.clock.now() + maxWaitMs;
    for (;;) {
      const first = this.nextPartition.get(`${groupId}\0${topic}`) ?? 0;
      this.nextPartition.set(`${groupId}\0${topic}`, (first + 1) % count);
      const partitions: SharedSections['partitions'] = [];
      let records = 0;
      const writes: Array<Promise<void>> = [];
      let nextChange = Infinity;
      let bytes = 0;
      let failure: unknown;
      for (let i = 0; i < count && records < maxRecords && bytes < maxBytes; i++) {
        const partition = (first + i) % count;
        if (only !== null && !only.has(partition)) continue;
        const budget = { records: maxRecords - records, bytes: maxBytes - bytes, first: records === 0 };
        let got: Awaited<ReturnType<ShareGroups['acquireFrom']>>;
        try {
          got = await this.inOrder(sub, partition, (loaded) => this.acquireFrom(sub, loaded, partition, memberId, budget));
        } catch (err) {
          // One partition's failure (nothing of it acquired) does not take back what the others handed out.
          this.s.logger.warn({ groupId, topic, partition, err: (err as Error).message }, 'share acquisition failed on a partition');
          failure ??= err;
          continue;
        }
        if (got.deliveryCounts.length > 0) partitions.push({ partition, sections: got.sections, deliveryCounts: got.deliveryCounts });
        records += got.deliveryCounts.length;
        bytes += got.bytes;
        if (got.written) writes.push(got.written);
        nextChange = Math.min(nextChange, got.nextChangeAt ?? Infinity);
      }
      await Promise.all(writes); // what was acquired is on disk before it is handed out
      if (records === 0 && failure !== undefined) throw failure;
      const now = this.s.clock.now();
      if (records > 0 || now >= deadline) return { groupId, topic, memberId, lockMs: sub.share!.lockMs, partitions };
      await this.waitForChange(topic, count, Math.min(deadline, nextChange) - now);
    }
  }

  /**
   * Applies a member's acknowledgements, per partition as a whole: a partition whose acknowledgements name a record
   * the member does not hold answers `INVALID_RECORD_STATE` as a value and changes nothing; the others apply. Each
   * partition's new state (and its dead letters) is on disk before this resolves.
   * @throws OnelogError `INVALID_REQUEST` for a bad field or a group that is not a share group of the topic
   */
  async acknowledge(request: ShareAckRequest): Promise<ShareAckResult> {
    const { groupId, topic, memberId } = request;
    const sub = await this.s.subscription(groupId, topic);
    checkMemberId(memberId);
    const leave = request.leave === true;
    if (!Array.isArray(request.acks) || request.acks.length === 0 && !leave || request.acks.length > 10_000) {
      throw new OnelogError('INVALID_REQUEST', 'acks must be an array of 1 to 10,000 { partition, offset, type } (or none with leave: true)', { groupId, topic });
    }
    this.touch(groupId, memberId);
    const byPartition = new Map<number, ShareAcknowledgement[]>();
    const count = this.s.logs.partitionCount(topic);
    for (const a of request.acks) {
      const partition = checkInteger(a?.partition, 'partition', 0, count - 1, 'UNKNOWN_PARTITION');
      const offset = checkInteger(a.offset, 'offset', 0, Number.MAX_SAFE_INTEGER, 'INVALID_OFFSET');
      let acks = byPartition.get(partition);
      if (acks === undefined) byPartition.set(partition, (acks = []));
      acks.push(toAcknowledgement(a, offset));
    }
    const partitions: ShareAckResult['partitions'] = [];
    const writes: Array<Promise<void>> = [];
    for (const [partition, acks] of byPartition) {
      const error = await this.inOrder(sub, partition, async (loaded) => {
        try {
          loaded.sp.acknowledge(memberId, acks, this.s.clock.now());
        } catch (err) {
          if (err instanceof OnelogError && err.code === 'INVALID_RECORD_STATE') return err.toJSON();
          throw err;
        }
        writes.push((await this.settle(sub, loaded, partition)).written);
        return undefined;
      });
      partitions.push({ partition, ...(error ? { error } : {}) });
    }
    await Promise.all(writes);
    if (leave) await this.leave(groupId, memberId);
    return { groupId, topic, partitions: partitions.sort((a, b) => a.partition - b.partition) };
  }

  /** A member leaves: it is no longer listed, and what it holds in any of the group's loaded partitions is released at once. */
  private async leave(groupId: string, memberId: string): Promise<void> {
    this.members.get(groupId)?.delete(memberId);
    this.s.logger.info({ groupId, memberId }, 'share group member left: its records are released');
    for (const { topic, partition } of this.loaded(groupId)) {
      const sub = await this.s.subscription(groupId, topic).catch(() => undefined);
      if (sub === undefined) continue;
      await this.inOrder(sub, partition, async (loaded) => {
        if (loaded.sp.memberGone(memberId) > 0) await (await this.settle(sub, loaded, partition)).written;
      });
    }
  }

  /**
   * Ends the members not heard from for their session timeout (the records they hold are released at once),
   * releases the records whose locks ended (at their delivery limit, to the dead letters), whether or not a member
   * acquires meanwhile, and commits each start offset that moved as the group's offset. Run on the broker's session timer.
   */
  async expire(): Promise<void> {
    const now = this.s.clock.now();
    const ended = new Map<string, string[]>();
    for (const [groupId, members] of this.members) {
      const gone = [...members].filter(([, m]) => now - m.lastSeenAt > m.sessionTimeoutMs).map(([id]) => id);
      if (gone.length === 0) continue;
      for (const id of gone) members.delete(id);
      ended.set(groupId, gone);
      this.s.logger.info({ groupId, members: gone }, 'share group members ended (session timeout): their records are released');
    }
    for (const { groupId, topic, partition } of this.loaded()) {
      const sub = await this.s.subscription(groupId, topic).catch(() => undefined);
      if (sub === undefined) continue; // the group or its subscription is gone
      await this.inOrder(sub, partition, async (loaded) => {
        const { sp } = loaded;
        for (const id of ended.get(groupId) ?? []) sp.memberGone(id);
        if (sp.expire(this.s.clock.now()) > 0 || ended.has(groupId) || sp.deadLetters().length > 0) await (await this.settle(sub, loaded, partition)).written;
        await this.commitStart(sub, loaded, partition);
      }).catch((err: unknown) => {
        // One partition's failure (its store write) leaves the others' expiry to go on.
        this.s.logger.warn({ groupId, topic, partition, err: (err as Error).message }, 'share-partition expiry failed; retried at the next tick');
      });
    }
  }

  /** The group's subscription to `topic` changed: its loaded share-partitions take the new settings at once. */
  async configure(groupId: string, topic: string): Promise<void> {
    const sub = await this.s.subscription(groupId, topic);
    for (const p of this.loaded(groupId)) if (p.topic === topic) await this.inOrder(sub, p.partition, async ({ sp }) => sp.configure(settingsOf(sub)));
  }

  /**
   * An executed offset reset of the group's `topic` (Kafka's AlterShareGroupOffsets): each partition's share-partition
   * starts again at the group's committed offset, which the reset just wrote, with nothing in flight (a member's
   * acknowledgement of a record it held before is refused with INVALID_RECORD_STATE). Written before it resolves.
   */
  async reset(groupId: string, topic: string): Promise<void> {
    const sub = await this.s.subscription(groupId, topic);
    for (let partition = 0; partition < this.s.logs.partitionCount(topic); partition++) {
      await this.inOrder(sub, partition, async (loaded) => {
        const start = (await this.s.offsets.get(groupId, topic, partition))?.offset ?? loaded.sp.startOffset;
        await this.s.offsets.setRecordState(groupId, topic, partition, null); // every entry
        Object.assign(loaded, fresh(new SharePartition({ startOffset: start, endOffset: start, records: [] }, settingsOf(sub)), start));
        await this.s.offsets.setRecordState(groupId, topic, partition, shareHeader(start));
      });
    }
  }

  /**
   * A group's description with what only share groups have: its members, and each share partition's records in flight
   * (a consumer group's is returned as it is).
   */
  async describe(d: GroupDescription): Promise<GroupDescription> {
    if (!d.subscriptions.some((s) => s.type === 'share')) return d;
    const subscriptions = await Promise.all(d.subscriptions.map(async (s) => {
      if (s.type !== 'share') return s;
      const sub = await this.s.subscription(d.groupId, s.topic);
      const partitions = await Promise.all(s.partitions.map(async (p) => {
        return { ...p, share: (await this.loadPartition(sub, p.partition)).sp.counts() };
      }));
      return { ...s, partitions };
    }));
    const shareMembers = [...(this.members.get(d.groupId) ?? [])].map(([memberId, m]) => ({ memberId, lastSeenAt: m.lastSeenAt }));
    return { ...d, shareMembers, subscriptions };
  }

  /**
   * Whether this broker holds any of the group's share-partitions in memory: only then has {@link commitStarts}
   * anything to commit. A request that reads a group's offsets in the group's order awaits the commits first only then,
   * so a classic group's request takes its place at once.
   */
  holdsPartitions(groupId: string): boolean {
    return this.loaded(groupId).length > 0;
  }

  /**
   * Commits the start offset of each of the group's loaded partitions (every group's without `groupId`) that moved since
   * its last commit as the group's offset ({@link ShareGroupSources.commit}): before the group's offsets are read
   * (described, listed, reset, checkpointed) and at a clean stop, so what they show is current.
   * Resolves at once when the broker holds none of the group's partitions.
   */
  async commitStarts(groupId?: string): Promise<void> {
    for (const { groupId: g, topic, partition } of this.loaded(groupId)) {
      const sub = await this.s.subscription(g, topic).catch(() => undefined);
      if (sub !== undefined) await this.inOrder(sub, partition, (loaded) => this.commitStart(sub, loaded, partition));
    }
  }

  /**
   * The start offset as the group's committed offset, if it moved: lag, time lag, headroom, states and alerts follow
   * it. Not at every change (a commit is a durable write of its own): on the session timer and before a describe.
   */
  private async commitStart(sub: SubscriptionRecord, loaded: LoadedPartition, partition: number): Promise<void> {
    if (loaded.sp.startOffset === loaded.committed) return;
    const start = loaded.sp.startOffset;
    await this.s.commit(sub.groupId, sub.topic, partition, start);
    loaded.committed = start;
  }

  /**
   * What this broker serves of share groups now, for /metrics: each loaded share-partition's records acquired and
   * available, and each group's members.
   */
  async gauges(): Promise<{ partitions: SharePartitionLoad[]; members: Array<{ groupId: string; members: number }> }> {
    const partitions: SharePartitionLoad[] = [];
    for (const p of this.loaded()) {
      const loaded = await this.partitions.get(partitionKey(p.groupId, p.topic, p.partition))?.catch(() => undefined);
      if (loaded !== undefined) partitions.push({ ...p, ...loaded.sp.counts() });
    }
    return { partitions, members: [...this.members].map(([groupId, m]) => ({ groupId, members: m.size })) };
  }

  /**
   * Refuses the deletion of a share group while members are live (heard from within their session timeout), as a
   * consumer group's. @throws OnelogError `NON_EMPTY_GROUP`
   */
  checkEmpty(groupId: string): void {
    const now = this.s.clock.now();
    const live = [...(this.members.get(groupId) ?? [])].filter(([, m]) => now - m.lastSeenAt < m.sessionTimeoutMs).map(([id]) => id);
    if (live.length > 0) {
      throw new OnelogError('NON_EMPTY_GROUP', `share group ${groupId} has ${live.length} live members (${live.slice(0, 3).join(', ')}); stop them first`, { groupId, members: live.length });
    }
  }

  /**
   * Forgets a deleted topic's share-partitions, every group's (the offset store deleted their states): a topic created
   * again under the name starts with no state, where its subscription's start policy says.
   */
  topicDeleted(topic: string): void {
    for (const p of this.loaded()) if (p.topic === topic) this.partitions.delete(partitionKey(p.groupId, p.topic, p.partition));
    for (const key of this.nextPartition.keys()) if (key.endsWith(`\0${topic}`)) this.nextPartition.delete(key);
  }

  /** Forgets a deleted group's partitions and members (the offset store deleted their states). */
  deleteGroup(groupId: string): void {
    for (const p of this.loaded(groupId)) this.partitions.delete(partitionKey(p.groupId, p.topic, p.partition));
    this.members.delete(groupId);
  }

  /** The share-partitions loaded now (of one group, or every group's), as they are when called. */
  private loaded(groupId?: string): Array<{ groupId: string; topic: string; partition: number }> {
    const out: Array<{ groupId: string; topic: string; partition: number }> = [];
    for (const key of this.partitions.keys()) {
      const [g, topic, partition] = key.split('\0') as [string, string, string];
      if (groupId === undefined || g === groupId) out.push({ groupId: g, topic, partition: Number(partition) });
    }
    return out;
  }

  /**
   * Acquires from one partition: fills its window from the log, acquires within the budget (what passes its bytes is
   * given back), persists, hands out the records.
   * @param budget records and bytes left of the request's; `first`: nothing acquired yet (one record goes whatever its size)
   */
  private async acquireFrom(sub: SubscriptionRecord, loaded: LoadedPartition, partition: number, memberId: string,
    budget: { records: number; bytes: number; first: boolean }): Promise<{ sections: RecordSection[]; deliveryCounts: number[]; bytes: number; nextChangeAt: number | null; written?: Promise<void> }> {
    const { sp, readAhead } = loaded;
    const log = this.s.logs.get(sub.topic, partition);
    let changed = await this.fillWindow(loaded, log, budget.records);
    const now = this.s.clock.now();
    if (sp.expire(now) > 0) changed = true;
    const acquired = sp.acquire(memberId, now, budget.records);
    const again = await this.readAgain(log, acquired.filter((r) => !readAhead.holds(r.offset)).map((r) => r.offset));
    // What the log no longer has (compaction, retention) is done with; what passes the byte budget goes back.
    const sections = new SectionBuilder();
    const deliveryCounts: number[] = [];
    const missing: number[] = [];
    const over: number[] = [];
    let bytes = 0;
    for (const r of acquired) {
      const held = readAhead.find(r.offset);
      const at = held ?? findIn(again, r.offset);
      if (at === undefined) {
        missing.push(r.offset);
        continue;
      }
      const size = at.ix.ends[at.i]! - at.ix.starts[at.i]!;
      if (bytes + size > budget.bytes && !(budget.first && deliveryCounts.length === 0)) {
        over.push(r.offset);
        continue;
      }
      bytes += size;
      if (held) readAhead.take(held, sections);
      else sections.add(at.ix, at.i);
      deliveryCounts.push(r.deliveries);
    }
    if (missing.length > 0) sp.gone(missing);
    if (over.length > 0) sp.giveBack(memberId, over);
    // An acquisition that changed nothing (an idle member's poll) writes nothing.
    const written = changed || acquired.length > 0 ? (await this.settle(sub, loaded, partition)).written : undefined;
    return {
      sections: sections.finish(), deliveryCounts, bytes, nextChangeAt: deliveryCounts.length === 0 ? sp.nextChangeAt(now) : null,
      ...(written ? { written } : {}),
    };
  }

  /**
   * Brings the window up to date with the log: what the log start passed is done with, and the window takes from the
   * log what an acquisition of `max` records and the next may need (not all it could hold), across segment ends.
   * @returns whether the window changed
   */
  private async fillWindow(loaded: LoadedPartition, log: ReturnType<Logs['get']>, max: number): Promise<boolean> {
    const { sp, readAhead } = loaded;
    let changed = false;
    if (sp.startOffset < log.logStartOffset) {
      sp.logStartMoved(log.logStartOffset);
      readAhead.dropBelow(log.logStartOffset);
      changed = true;
    }
    for (let reads = 0; reads < MAX_READS; reads++) {
      const wanted = Math.min(sp.room, 2 * max - sp.available);
      if (wanted <= 0 || !(await this.readAhead(loaded, log, wanted))) break;
      const { read, nextOffset } = readAhead.offer(sp.endOffset, wanted);
      const taken = sp.extend(read, nextOffset);
      readAhead.offered(taken);
      changed = true;
      if (taken === 0) break;
    }
    return changed;
  }

  /**
   * A redelivery's records (at `offsets`, ascending) read from the log again, in runs of consecutive offsets, indexed.
   * One the log no longer has is in none of them.
   */
  private async readAgain(log: ReturnType<Logs['get']>, offsets: readonly number[]): Promise<IndexedRecords[]> {
    const out: IndexedRecords[] = [];
    for (let i = 0; i < offsets.length;) {
      let j = i + 1;
      while (j < offsets.length && offsets[j] === offsets[j - 1]! + 1) j++;
      const last = offsets[j - 1]!;
      out.push(...await readIndexed(log, offsets[i]!, last));
      i = j;
    }
    return out;
  }

  /**
   * Makes sure the read-ahead holds records at the window's end (reading the log from there when it holds none).
   * @returns whether there is anything to take into the window
   */
  private async readAhead(loaded: LoadedPartition, log: ReturnType<Logs['get']>, wanted: number): Promise<boolean> {
    const end = loaded.sp.endOffset;
    if (loaded.readAhead.pendingFrom(end) > 0) return true;
    if (end >= log.highWatermark) return false;
    const read = await log.readBatches(end, READ_AHEAD_BYTES, Math.max(wanted, loaded.sp.room));
    loaded.readAhead.add(read.batches, end, read.nextOffset);
    return loaded.readAhead.pending > 0 || loaded.readAhead.nextOffset > end;
  }

  /**
   * Moves the partition's dead records to the dead letters, then writes what changed: what every change ends with.
   * Resolves once the write is issued, to `written`, a promise of it being on disk: the partition's next operation need not
   * wait for that (the offset store applies writes in call order, and a burst of them shares one sync), but an answer
   * that depends on the change does. A failed write leaves the partition {@link PartitionState.stale}.
   */
  private async settle(sub: SubscriptionRecord, loaded: LoadedPartition, partition: number): Promise<{ written: Promise<void> }> {
    const { sp } = loaded;
    const dead = sp.deadLetters();
    for (const r of dead) {
      await this.s.deadLetter(sub, partition, r.offset, r.deliveries, r.reason ?? 'dead-lettered').catch((err: unknown) => {
        const code = (err as OnelogError).code;
        if (code !== 'INVALID_OFFSET' && code !== 'OFFSET_OUT_OF_RANGE') throw err;
        // Compaction or retention removed it from the log: nothing is left to move, and it is done with.
        this.s.logger.warn({ groupId: sub.groupId, topic: sub.topic, partition, offset: r.offset, reason: r.reason },
          'a share group\'s dead record is no longer in the log: not dead-lettered');
      });
    }
    if (dead.length > 0) sp.deadLettered(dead.map((r) => r.offset));
    const { startOffset, set, remove } = sp.takeChanges(loaded.orphans);
    loaded.orphans = [];
    const written = this.s.offsets.setRecordState(sub.groupId, sub.topic, partition, shareHeader(startOffset), { set, remove }).catch((err: unknown) => {
      loaded.stale = true;
      throw err;
    });
    written.catch(() => undefined); // its caller awaits it; a failure is its caller's to report
    return { written };
  }

  /** Runs `work` on the partition's state once the operations on it given before ended (its place is taken now). */
  private inOrder<T>(sub: SubscriptionRecord, partition: number, work: (loaded: LoadedPartition) => Promise<T>): Promise<T> {
    const loading = this.loadPartition(sub, partition);
    return this.turns.run(partitionKey(sub.groupId, sub.topic, partition), async () => {
      const loaded = await loading;
      if (loaded.stale) Object.assign(loaded, await this.read(sub, partition));
      try {
        return await work(loaded);
      } catch (err) {
        // What the operation changed in memory may not be in the store: read it again before the next one.
        loaded.stale = true;
        throw err;
      }
    }, loading);
  }

  /** The partition's state, read from the offset store on first use ({@link read}). */
  private loadPartition(sub: SubscriptionRecord, partition: number): Promise<LoadedPartition> {
    const key = partitionKey(sub.groupId, sub.topic, partition);
    let loading = this.partitions.get(key);
    if (loading === undefined) {
      loading = this.read(sub, partition);
      this.partitions.set(key, loading);
      loading.catch(() => this.partitions.delete(key));
    }
    return loading;
  }

  /**
   * The partition's state as the offset store has it: its start offset and entries, with the log's records up to the
   * last entry (see restoreSnapshot). A new share-partition starts where the subscription resolved it (committed at the
   * subscribe), else as its policy says.
   */
  private async read(sub: SubscriptionRecord, partition: number): Promise<PartitionState> {
    const { groupId, topic } = sub;
    const log = this.s.logs.get(topic, partition);
    const committed = (await this.s.offsets.get(groupId, topic, partition))?.offset ?? -1;
    const header = asShareHeader(await this.s.offsets.recordState(groupId, topic, partition));
    if (header === undefined) {
      const start = committed >= 0 ? committed : sub.startPolicy === 'earliest' ? log.logStartOffset : log.highWatermark;
      return fresh(new SharePartition({ startOffset: start, endOffset: start, records: [] }, settingsOf(sub)), committed);
    }
    const entries = await this.s.offsets.recordEntries(groupId, topic, partition);
    const last = runsEnd(entries);
    const read: Array<{ offset: number; key: ShareKey | null }> = [];
    for (const ix of await readIndexed(log, Math.max(header.startOffset, log.logStartOffset), last)) {
      for (let i = 0; i < ix.n; i++) read.push({ offset: ix.offsets[i]!, key: keyAt(ix, i) });
    }
    const { snapshot, orphans } = restoreSnapshot(header.startOffset, entries, read);
    return { ...fresh(new SharePartition(snapshot, settingsOf(sub)), committed), orphans };
  }

  /** A known member was heard from (an acknowledgement registers nobody: only an acquisition makes a member). */
  private touch(groupId: string, memberId: string): void {
    const member = this.members.get(groupId)?.get(memberId);
    if (member) member.lastSeenAt = this.s.clock.now();
  }

  private seen(groupId: string, memberId: string, sessionTimeoutMs?: number): void {
    let members = this.members.get(groupId);
    if (members === undefined) this.members.set(groupId, (members = new Map()));
    const timeout = sessionTimeoutMs === undefined ? members.get(memberId)?.sessionTimeoutMs ?? DEFAULT_SESSION_TIMEOUT_MS
      : checkInteger(sessionTimeoutMs, 'sessionTimeoutMs', 1000, 3_600_000);
    members.set(memberId, { lastSeenAt: this.s.clock.now(), sessionTimeoutMs: timeout });
  }

  /** Waits up to `ms` for new records in a partition of the topic (a lock's end or a delay's comes from the caller's bound). */
  private async waitForChange(topic: string, count: number, ms: number): Promise<void> {
    if (ms <= 0) return;
    const stop = new AbortController();
    await Promise.race([
      this.s.clock.sleep(ms, stop.signal),
      ...Array.from({ length: count }, (_, p) => {
        const log = this.s.logs.get(topic, p);
        return log.waitForData(log.highWatermark, ms);
      }),
    ]);
    stop.abort();
  }
}

/** A share subscription's settings as its share-partitions take them. */
function settingsOf(sub: SubscriptionRecord): SharePartitionSettings {
  return { lockMs: sub.share!.lockMs, maxDeliveries: sub.maxDeliveries!, maxInFlight: sub.share!.maxInFlightRecords, ordering: sub.share!.ordering };
}

/** A partition's state around `sp`, nothing read ahead. */
function fresh(sp: SharePartition, committed: number): PartitionState {
  return { sp, committed, readAhead: new ShareReadAhead(), orphans: [], stale: false };
}

/**
 * The log's records from `from` to `last`, indexed, read on across segment ends (a read stops at one); a corrupt batch
 * or the log start moving past them ends them early.
 */
async function readIndexed(log: ReturnType<Logs['get']>, from: number, last: number): Promise<IndexedRecords[]> {
  const out: IndexedRecords[] = [];
  for (let at = from; at <= last && at < log.highWatermark;) {
    const start = at;
    const read = await Promise.resolve().then(() => log.readBatches(start, READ_AHEAD_BYTES, last - start + 1)).catch((err: unknown) => {
      if ((err as OnelogError).code === 'OFFSET_OUT_OF_RANGE') return { batches: Buffer.alloc(0), nextOffset: start }; // the log start moved meanwhile
      throw err;
    });
    const { ix, stoppedAt } = indexBatches(read.batches, start);
    out.push(ix);
    const next = stoppedAt ?? read.nextOffset;
    if (next <= start) break;
    at = next;
  }
  return out;
}

/** Record `offset` in one of `reads`, if any. */
function findIn(reads: readonly IndexedRecords[], offset: number): { ix: IndexedRecords; i: number } | undefined {
  for (const ix of reads) {
    const i = indexOf(ix, offset);
    if (i >= 0) return { ix, i };
  }
  return undefined;
}

/** A share-partition's record state (its entries are beside it): the start offset. */
function shareHeader(startOffset: number): RecordState {
  return { share: { startOffset } };
}

/** A stored record state as a share-partition's; undefined when there is none. @throws Error for another shape */
function asShareHeader(state: RecordState | undefined): { startOffset: number } | undefined {
  if (state === undefined) return undefined;
  const share = state.share as { startOffset?: unknown } | undefined;
  if (share === undefined || typeof share.startOffset !== 'number') {
    throw new Error(`a record state that is not a share-partition's: ${JSON.stringify(state).slice(0, 200)}`);
  }
  return { startOffset: share.startOffset };
}

/** @throws OnelogError `INVALID_REQUEST` for a member id that is not 1 to 255 characters of text */
function checkMemberId(memberId: unknown): void {
  if (typeof memberId !== 'string' || memberId.length === 0 || memberId.length > 255) {
    throw new OnelogError('INVALID_REQUEST', `memberId must be 1 to 255 characters naming the member (any id it keeps), got ${JSON.stringify(memberId)}`);
  }
}

/** One acknowledgement of a request as the share-partition takes it. @throws OnelogError `INVALID_REQUEST` naming the bad field */
function toAcknowledgement(a: ShareAckRequest['acks'][number], offset: number): ShareAcknowledgement {
  switch (a.type) {
    case 'accept': return { offset, type: 'accept' };
    case 'renew': return { offset, type: 'renew' };
    case 'reject': return { offset, type: 'reject', ...(typeof a.reason === 'string' ? { reason: a.reason.slice(0, 4096) } : {}) };
    case 'release': return {
      offset, type: 'release', ...(a.delayMs !== undefined ? { delayMs: checkInteger(a.delayMs, 'delayMs', 0, 7 * 24 * 3_600_000) } : {}),
      ...(typeof a.reason === 'string' ? { reason: a.reason.slice(0, 4096) } : {}),
    };
    default:
      throw new OnelogError('INVALID_REQUEST', `an acknowledgement's type must be accept, release, reject or renew, got ${JSON.stringify((a as { type?: unknown }).type)}`, { offset });
  }
}

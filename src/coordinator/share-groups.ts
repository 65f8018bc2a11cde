/**
 * Share groups (docs/consumer-groups.md; Kafka's share groups, KIP-932): queues on the log. Any number of members
 * acquire records of the same partitions side by side; each partition's state is a {@link SharePartition}, loaded on
 * first use from the offset store (its record state) and written back, durably, before every answer that changed it,
 * so after any crash every record is accepted or dead-lettered, none lost, and a redelivery is a count.
 *
 * Members are known by the member id they acquire and acknowledge with (a client's own id): one not heard from for its
 * session timeout ends, and the records it holds are released at once (before their locks would end).
 * Every operation on one partition runs in order (a queue per partition), so two acquisitions never interleave halfway.
 */
import type { Clock } from '../clock.js';
import type { SubscriptionRecord } from '../catalog/catalog.js';
import type { Logger } from '../logger.js';
import type { OffsetStore, RecordState } from '../offsets/offset-store.js';
import type {
  GroupDescription, ShareAckRequest, ShareAckResult, ShareFetchRequest, ShareFetchResult, SharedRecord,
} from '../protocol/api.js';
import { OnelogError } from '../protocol/errors.js';
import { checkInteger } from '../protocol/validate.js';
import type { Logs } from '../storage/logs.js';
import { SharePartition } from './share-partition.js';
import type { ShareAcknowledgement, SharePartitionSettings, SharePartitionSnapshot } from './share-partition.js';

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
/** Bytes of records one partition's read into the window takes at most. */
const WINDOW_READ_BYTES = 4 << 20;
/** Defaults and bounds of an acquisition. */
const FETCH = { maxRecords: 500, maxRecordsBound: 10_000, maxWaitMsBound: 30_000 };

interface LoadedPartition {
  sp: SharePartition;
  /** The start offset last committed as the group's offset (see {@link ShareGroupSources.commit}); -1 before any. */
  committed: number;
  /** The tail of this partition's operations: each runs once the one before ended. */
  queue: Promise<unknown>;
}

interface ShareMember {
  lastSeenAt: number;
  sessionTimeoutMs: number;
}

const partitionKey = (groupId: string, topic: string, partition: number) => `${groupId}\0${topic}\0${partition}`;

export class ShareGroups {
  private readonly partitions = new Map<string, Promise<LoadedPartition>>();
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
  async acquire(request: ShareFetchRequest): Promise<ShareFetchResult> {
    const { groupId, topic, memberId } = request;
    const sub = await this.s.subscription(groupId, topic);
    checkMemberId(memberId);
    const maxRecords = checkInteger(request.maxRecords ?? FETCH.maxRecords, 'maxRecords', 1, FETCH.maxRecordsBound);
    const maxWaitMs = checkInteger(request.maxWaitMs ?? 0, 'maxWaitMs', 0, FETCH.maxWaitMsBound);
    this.seen(groupId, memberId, request.sessionTimeoutMs);
    const count = this.s.logs.partitionCount(topic);
    const deadline = this.s.clock.now() + maxWaitMs;
    for (;;) {
      const first = this.nextPartition.get(`${groupId}\0${topic}`) ?? 0;
      this.nextPartition.set(`${groupId}\0${topic}`, (first + 1) % count);
      const records: SharedRecord[] = [];
      let nextChange = Infinity;
      for (let i = 0; i < count && records.length < maxRecords; i++) {
        const partition = (first + i) % count;
        const got = await this.inOrder(sub, partition, (sp) => this.acquireFrom(sub, sp, partition, memberId, maxRecords - records.length));
        records.push(...got.records);
        nextChange = Math.min(nextChange, got.nextChangeAt ?? Infinity);
      }
      const now = this.s.clock.now();
      if (records.length > 0 || now >= deadline) return { groupId, topic, memberId, lockMs: sub.share!.lockMs, records };
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
    if (!Array.isArray(request.acks) || request.acks.length === 0 || request.acks.length > 10_000) {
      throw new OnelogError('INVALID_REQUEST', 'acks must be an array of 1 to 10,000 { partition, offset, type }', { groupId, topic });
    }
    this.touch(groupId, memberId);
    const byPartition = new Map<number, ShareAcknowledgement[]>();
    const count = this.s.logs.partitionCount(topic);
    for (const a of request.acks) {
      const partition = checkInteger(a?.partition, 'partition', 0, count - 1, 'UNKNOWN_PARTITION');
      const offset = checkInteger(a.offset, 'offset', 0, Number.MAX_SAFE_INTEGER, 'INVALID_OFFSET');
      const ack = toAcknowledgement(a, offset);
      byPartition.set(partition, [...(byPartition.get(partition) ?? []), ack]);
    }
    const partitions: ShareAckResult['partitions'] = [];
    for (const [partition, acks] of byPartition) {
      const error = await this.inOrder(sub, partition, async (sp) => {
        try {
          sp.acknowledge(memberId, acks, this.s.clock.now());
        } catch (err) {
          if (err instanceof OnelogError && err.code === 'INVALID_RECORD_STATE') return err.toJSON();
          throw err;
        }
        await this.settle(sub, sp, partition);
        return undefined;
      });
      partitions.push({ partition, ...(error ? { error } : {}) });
    }
    return { groupId, topic, partitions: partitions.sort((a, b) => a.partition - b.partition) };
  }

  /**
   * Ends the members not heard from for their session timeout (the records they hold are released at once) and
   * releases the records whose locks ended (at their delivery limit, to the dead letters), whether or not a member
   * acquires meanwhile. Run on the broker's session timer.
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
    for (const key of [...this.partitions.keys()]) {
      const [groupId, topic, partition] = key.split('\0') as [string, string, string];
      const sub = await this.s.subscription(groupId, topic).catch(() => undefined);
      if (sub === undefined) continue; // the group or its subscription is gone
      await this.inOrder(sub, Number(partition), async (sp) => {
        for (const id of ended.get(groupId) ?? []) sp.memberGone(id);
        if (sp.expire(this.s.clock.now()) > 0 || ended.has(groupId) || sp.deadLetters().length > 0) await this.settle(sub, sp, Number(partition));
      });
    }
  }

  /** The group's subscription to `topic` changed: its loaded share-partitions take the new settings at once. */
  async configure(groupId: string, topic: string): Promise<void> {
    const sub = await this.s.subscription(groupId, topic);
    for (const key of [...this.partitions.keys()]) {
      const [g, t, partition] = key.split('\0') as [string, string, string];
      if (g === groupId && t === topic) await this.inOrder(sub, Number(partition), async (sp) => sp.configure(settingsOf(sub)));
    }
  }

  /**
   * An executed offset reset of the group's `topic` (Kafka's AlterShareGroupOffsets): each partition's share-partition
   * starts again at the group's committed offset, which the reset just wrote, with nothing in flight (a member's
   * acknowledgement of a record it held before is refused with INVALID_RECORD_STATE). Written before it resolves.
   */
  async reset(groupId: string, topic: string): Promise<void> {
    const sub = await this.s.subscription(groupId, topic);
    for (let partition = 0; partition < this.s.logs.partitionCount(topic); partition++) {
      await this.inOrder(sub, partition, async (sp, loaded) => {
        const start = (await this.s.offsets.get(groupId, topic, partition))?.offset ?? sp.startOffset;
        loaded.sp = new SharePartition({ startOffset: start, endOffset: start, records: [] }, settingsOf(sub));
        loaded.committed = start; // the reset committed it
        await this.s.offsets.setRecordState(groupId, topic, partition, { share: loaded.sp.snapshot() });
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
        const records = (await this.load(sub, p.partition)).sp.inFlight();
        return { ...p, share: { acquired: records.filter((r) => r.status === 'acquired').length, available: records.filter((r) => r.status === 'available').length } };
      }));
      return { ...s, partitions };
    }));
    const shareMembers = [...(this.members.get(d.groupId) ?? [])].map(([memberId, m]) => ({ memberId, lastSeenAt: m.lastSeenAt }));
    return { ...d, shareMembers, subscriptions };
  }

  /** Forgets a deleted group's partitions and members (the offset store deleted their states). */
  deleteGroup(groupId: string): void {
    for (const key of [...this.partitions.keys()]) if (key.startsWith(`${groupId}\0`)) this.partitions.delete(key);
    this.members.delete(groupId);
  }

  /** Acquires from one partition: fills its window from the log, acquires, persists, reads the records. */
  private async acquireFrom(sub: SubscriptionRecord, sp: SharePartition, partition: number, memberId: string, max: number):
    Promise<{ records: SharedRecord[]; nextChangeAt: number | null }> {
    const log = this.s.logs.get(sub.topic, partition);
    let changed = false;
    if (sp.endOffset < log.logStartOffset) {
      sp.logStartMoved(log.logStartOffset);
      changed = true;
    }
    // The window takes from the log what this acquisition may need (what waits there first), not all it could hold:
    // its state is written whole at every change, so it stays as small as what is in flight.
    const wanted = Math.min(sp.room, Math.max(0, max - sp.available) + max);
    if (wanted > 0 && sp.endOffset < log.highWatermark) {
      const read = await log.fetch(sp.endOffset, { maxRecords: wanted, maxBytes: WINDOW_READ_BYTES });
      sp.extend(read.records.map((r) => ({ offset: r.offset, key: r.key === null ? null : r.key.toString('base64') })), read.nextOffset);
      changed = true;
    }
    const now = this.s.clock.now();
    if (sp.expire(now) > 0) changed = true;
    const acquired = sp.acquire(memberId, now, max);
    // An acquisition that changed nothing (an idle member's poll) writes nothing.
    if (changed || acquired.length > 0) await this.settle(sub, sp, partition);
    if (acquired.length === 0) return { records: [], nextChangeAt: sp.nextChangeAt(now) };
    // The records themselves, read again from the log in runs of consecutive offsets.
    const records: SharedRecord[] = [];
    const deliveries = new Map(acquired.map((r) => [r.offset, r.deliveries]));
    for (let i = 0; i < acquired.length;) {
      let j = i + 1;
      while (j < acquired.length && acquired[j]!.offset === acquired[j - 1]!.offset + 1) j++;
      const { records: run } = await log.fetch(acquired[i]!.offset, { maxRecords: j - i, maxBytes: Number.MAX_SAFE_INTEGER });
      for (const r of run) if (deliveries.has(r.offset)) records.push({ ...r, partition, deliveryCount: deliveries.get(r.offset)! });
      i = j;
    }
    return { records, nextChangeAt: null };
  }

  /** Moves the partition's dead records to the dead letters, then persists its state: what every change ends with. */
  private async settle(sub: SubscriptionRecord, sp: SharePartition, partition: number): Promise<void> {
    const dead = sp.deadLetters();
    for (const r of dead) await this.s.deadLetter(sub, partition, r.offset, r.deliveries, r.reason ?? 'dead-lettered');
    if (dead.length > 0) sp.deadLettered(dead.map((r) => r.offset));
    await this.s.offsets.setRecordState(sub.groupId, sub.topic, partition, { share: sp.snapshot() });
  }

  /** Runs `work` on the partition's state once the operations queued on it before ended. */
  private inOrder<T>(sub: SubscriptionRecord, partition: number, work: (sp: SharePartition, loaded: LoadedPartition) => Promise<T>): Promise<T> {
    const running = this.load(sub, partition).then(async (loaded) => {
      const run = loaded.queue.then(async () => {
        const result = await work(loaded.sp, loaded);
        // The start offset as the group's committed offset, once the state that moved it is on disk.
        if (loaded.sp.startOffset !== loaded.committed) {
          await this.s.commit(sub.groupId, sub.topic, partition, loaded.sp.startOffset);
          loaded.committed = loaded.sp.startOffset;
        }
        return result;
      });
      loaded.queue = run.catch(() => undefined);
      return run;
    });
    return running;
  }

  /** The partition's state, read from the offset store on first use (a new one starts where the subscription says). */
  private load(sub: SubscriptionRecord, partition: number): Promise<LoadedPartition> {
    const key = partitionKey(sub.groupId, sub.topic, partition);
    let loading = this.partitions.get(key);
    if (loading === undefined) {
      loading = (async () => {
        const stored = await this.s.offsets.recordState(sub.groupId, sub.topic, partition);
        const log = this.s.logs.get(sub.topic, partition);
        // A new share-partition starts where the subscription resolved it (committed at the subscribe), else as its policy says.
        const committed = (await this.s.offsets.get(sub.groupId, sub.topic, partition))?.offset ?? -1;
        const start = committed >= 0 ? committed : sub.startPolicy === 'earliest' ? log.logStartOffset : log.highWatermark;
        const snapshot = asShareSnapshot(stored) ?? { startOffset: start, endOffset: start, records: [] };
        return { sp: new SharePartition(snapshot, settingsOf(sub)), queue: Promise.resolve(), committed };
      })();
      this.partitions.set(key, loading);
      loading.catch(() => this.partitions.delete(key));
    }
    return loading;
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

/** A stored record state as a share-partition's snapshot; undefined when there is none. @throws Error for another shape */
function asShareSnapshot(state: RecordState | undefined): SharePartitionSnapshot | undefined {
  if (state === undefined) return undefined;
  const share = state.share as SharePartitionSnapshot | undefined;
  if (share === undefined || typeof share.startOffset !== 'number' || typeof share.endOffset !== 'number' || !Array.isArray(share.records)) {
    throw new Error(`a record state that is not a share-partition's: ${JSON.stringify(state).slice(0, 200)}`);
  }
  return share;
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

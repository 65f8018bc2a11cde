/**
 * The broker's read path: a fetch by offset (decoded records, or the stored batches for the binary data path), a
 * member's fetch fenced and capped by its group, a group's fetch of a topic with retry tiers read through them, and
 * share groups' acquisitions and acknowledgements; each counted in the metrics.
 */
import { offsetOutOfRange } from '../coordinator/out-of-range.js';
import type { GroupCoordinator } from '../coordinator/group-coordinator.js';
import { checkMember } from '../coordinator/request-checks.js';
import type { ShareGroups } from '../coordinator/share-groups.js';
import { fetchPartitionBatches, fetchPartitions } from '../delivery/fetch.js';
import type { FetchLimits, FetchTarget } from '../delivery/fetch.js';
import { recordsAsBatches } from '../delivery/retries.js';
import type { Retries } from '../delivery/retries.js';
import type { BrokerMetrics } from '../monitoring/metrics.js';
import type { BatchFetchResult, FetchedPartition, FetchRequest, FetchResult } from '../protocol/fetch.js';
import type { ShareAckRequest, ShareAckResult, SharedSections, ShareFetchRequest } from '../protocol/share-groups.js';
import { OnelogError } from '../protocol/errors.js';
import { checkGroupId, checkInteger } from '../protocol/validate.js';
import type { Logs } from '../log/logs.js';
import type { ClusterRouting } from './cluster-routing.js';

/** A fetch's limits when the request leaves them out: 500 records, 1 MiB, no wait. */
const FETCH_DEFAULTS = { maxRecords: 500, maxBytes: 1024 * 1024, maxWaitMs: 0 };
/** The longest a fetch may wait for records, ms. */
const MAX_WAIT_MS = 30_000;

export class FetchPath {
  constructor(
    private readonly logs: Logs,
    private readonly routing: ClusterRouting,
    private readonly groups: GroupCoordinator,
    private readonly retries: Retries,
    private readonly shareGroups: ShareGroups,
    private readonly metrics: BrokerMetrics,
  ) {}

  /**
   * Reads partitions of a topic from given offsets (long-poll up to `maxWaitMs`). A partition whose offset is
   * outside its log answers with `OFFSET_OUT_OF_RANGE` as a value, naming the group when one is given. A
   * member's fetch is fenced (see {@link GroupCoordinator.checkFetch}), and an offset below the log start
   * applies the subscription's out-of-range policy (pause, or jump via `nextOffset`); in cluster mode its answer
   * names where the member may read each partition next (`readFrom`). A member's `readAnywhere` fetch reaching a
   * broker that does not coordinate its group is served as a fetch naming only the group, when the group's reads of
   * the topic may spread (docs/cluster.md, "The read path"), else refused `NOT_COORDINATOR` as a member's.
   * @throws OnelogError `INVALID_REQUEST`, `INVALID_OFFSET`; `UNKNOWN_MEMBER_ID`, `ILLEGAL_GENERATION`, `NOT_ASSIGNED`,
   *   `NOT_COORDINATOR` for a member's fetch
   */
  async fetch(request: FetchRequest): Promise<FetchResult> {
    const result = await this.groupFetch(request, fetchPartitions, (parts) => parts);
    let bytes = 0;
    let records = 0;
    for (const p of result.partitions) {
      records += p.records.length;
      for (const r of p.records) bytes += (r.key?.length ?? 0) + (r.value?.length ?? 0);
    }
    this.metrics.fetched(request.topic, records, bytes);
    return result;
  }

  /**
   * As {@link fetch}, but answers each partition's batches as stored, undecoded (the binary data path):
   * whole batches, so the answer may hold a few records more than `maxRecords` (the reader trims).
   * @throws OnelogError as {@link fetch}
   */
  async fetchBatches(request: FetchRequest): Promise<BatchFetchResult> {
    const result = await this.groupFetch(request, fetchPartitionBatches, (parts) => parts.map(({ records, ...p }) => ({ ...p, batches: recordsAsBatches(records) })));
    // Offsets read past, as records: whole batches are answered, and the reader trims.
    const records = result.partitions.reduce((sum, p, i) => sum + Math.max(0, p.nextOffset - request.partitions[i]!.offset), 0);
    this.metrics.fetched(request.topic, records, result.partitions.reduce((sum, p) => sum + p.batches.length, 0));
    return result;
  }

  /**
   * What {@link fetch} and {@link fetchBatches} share: checks, member fencing, long-poll, out-of-range handling.
   * A group's fetch of a topic with retry tiers (or of a tier) reads through {@link Retries.fetch}, whose
   * decoded records `fromRecords` shapes as `read` would have.
   */
  private async groupFetch<P extends Pick<FetchedPartition, 'partition' | 'error' | 'nextOffset' | 'logStartOffset' | 'highWatermark' | 'readFrom'>>(
    request: FetchRequest,
    read: (targets: FetchTarget[], limits: FetchLimits) => Promise<P[]>,
    fromRecords: (partitions: FetchedPartition[]) => P[],
  ): Promise<{ topic: string; partitions: P[]; generationId?: number; assignmentChanged?: boolean }> {
    const { topic, groupId, memberId } = request;
    if (!Array.isArray(request.partitions) || !request.partitions.every((p) => p !== null && typeof p === 'object')) {
      throw new OnelogError('INVALID_REQUEST', 'a fetch names its partitions: [{ partition, offset }]', { topic });
    }
    if (groupId !== undefined) checkGroupId(groupId);
    if (memberId !== undefined && groupId === undefined) {
      throw new OnelogError('INVALID_REQUEST', 'a fetch with memberId needs its groupId', { memberId });
    }
    checkMember(request);
    await this.routing.current(topic, request.partitions.map((p) => p.partition));
    // A member's fetch sent where its coordinator named (`readAnywhere`) is served here as Kafka's fetch is, carrying
    // no membership, when nothing of it needs the coordinator; else, and at the coordinator, as a member's.
    const anywhere = memberId !== undefined && request.readAnywhere === true && !this.groups.coordinates(groupId!) &&
      await this.groups.readsSpread(groupId!, topic);
    const member = anywhere ? undefined : memberId;
    if (member !== undefined) await this.groups.claim(groupId!); // cluster mode: the group's coordinator serves it
    const membership = member === undefined ? undefined : this.groups.checkFetch({ ...request, memberId: member });
    // A member's suspect records (ones a member ended holding) are handed out one at a time.
    const caps = member === undefined ? [] : this.groups.fetchCaps({ ...request, groupId: groupId!, memberId: member });
    const targets = request.partitions.map((p, i) => ({
      log: this.logs.get(topic, p.partition),
      offset: checkInteger(p.offset, 'offset', 0, Number.MAX_SAFE_INTEGER, 'INVALID_OFFSET'),
      maxRecords: caps[i],
    }));
    const limits = {
      maxRecords: checkInteger(request.maxRecords ?? FETCH_DEFAULTS.maxRecords, 'maxRecords', 1),
      maxBytes: checkInteger(request.maxBytes ?? FETCH_DEFAULTS.maxBytes, 'maxBytes', 1),
      maxWaitMs: checkInteger(request.maxWaitMs ?? FETCH_DEFAULTS.maxWaitMs, 'maxWaitMs', 0, MAX_WAIT_MS),
    };
    this.metrics.fetchServed(memberId !== undefined, member === undefined ? 'any' : 'coordinator');
    const partitions = groupId !== undefined && this.retries.filters(groupId, topic)
      ? fromRecords(await this.retries.fetch(groupId, topic, targets, limits))
      : await read(targets, limits);
    if (member !== undefined) {
      this.groups.handedOut({ ...request, groupId: groupId!, memberId: member }, partitions);
      if (request.ahead !== true) await this.groups.afterFetch({ ...request, groupId: groupId! }, partitions);
      await this.nameReadBrokers(groupId!, topic, caps, partitions);
      return { topic, partitions, ...membership };
    }
    if (groupId !== undefined) {
      partitions.forEach((p, i) => {
        if (p.error?.code !== 'OFFSET_OUT_OF_RANGE') return;
        // The position the group fetched from is its committed offset or what it read since.
        p.error = offsetOutOfRange({
          groupId, topic, partition: p.partition, committedOffset: targets[i]!.offset,
          logStartOffset: p.logStartOffset, highWatermark: p.highWatermark,
        }).toJSON();
      });
    }
    return { topic, partitions };
  }

  /**
   * Names, in a member's fetch answered by its coordinator (cluster mode), the broker the member may read each
   * partition from next ({@link FetchedPartition.readFrom}: its leader, see {@link ClusterRouting.readBrokers}), where
   * nothing of the read needs the coordinator: the partition answered no error and is in no suspect range (no cap),
   * and the group's reads of the topic may spread ({@link GroupCoordinator.readsSpread}).
   */
  private async nameReadBrokers(
    groupId: string, topic: string, caps: ReadonlyArray<0 | 1 | undefined>, partitions: Array<Pick<FetchedPartition, 'partition' | 'error' | 'readFrom'>>,
  ): Promise<void> {
    if (this.routing.brokerId === null) return;
    const brokers = await this.routing.readBrokers(topic);
    if (brokers.size === 0 || !(await this.groups.readsSpread(groupId, topic))) return;
    partitions.forEach((p, i) => {
      const broker = brokers.get(p.partition);
      if (broker !== undefined && p.error === undefined && caps[i] === undefined) p.readFrom = broker;
    });
  }

  /**
   * A share group member's acquisition, with the records as the log stores them (sections of the stored batches:
   * nothing decoded); see {@link ShareGroups.acquire}. In cluster mode the group's coordinator serves it.
   * @throws OnelogError `INVALID_REQUEST` (not a share group, a bad field), `UNKNOWN_TOPIC`, `NOT_COORDINATOR`
   */
  async shareFetchSections(request: ShareFetchRequest): Promise<SharedSections> {
    checkGroupId(request.groupId);
    await this.routing.current(request.topic, 'all');
    this.logs.partitionCount(request.topic); // UNKNOWN_TOPIC
    await this.groups.claim(request.groupId);
    const result = await this.shareGroups.acquire(request);
    let records = 0;
    let bytes = 0;
    let redeliveries = 0;
    for (const p of result.partitions) {
      records += p.deliveryCounts.length;
      for (const s of p.sections) bytes += s.bytes.length;
      for (const count of p.deliveryCounts) if (count > 1) redeliveries++;
    }
    this.metrics.fetched(request.topic, records, bytes);
    this.metrics.shareDelivered(request.groupId, request.topic, records - redeliveries, redeliveries);
    return result;
  }

  /**
   * A share group member's acknowledgements of records it holds (see {@link ShareGroups.acknowledge}).
   * @throws OnelogError `INVALID_REQUEST`, `UNKNOWN_TOPIC`, `NOT_COORDINATOR`; a partition's `INVALID_RECORD_STATE` is answered as a value
   */
  async shareAcknowledge(request: ShareAckRequest): Promise<ShareAckResult> {
    checkGroupId(request.groupId);
    this.logs.partitionCount(request.topic); // UNKNOWN_TOPIC
    await this.groups.claim(request.groupId);
    const result = await this.shareGroups.acknowledge(request);
    const taken = new Set(result.partitions.filter((p) => p.error === undefined).map((p) => p.partition));
    const kinds = new Map<string, number>();
    for (const a of request.acks) if (taken.has(a.partition)) kinds.set(a.type, (kinds.get(a.type) ?? 0) + 1);
    for (const [kind, n] of kinds) this.metrics.shareAcknowledged(request.groupId, request.topic, kind, n);
    return result;
  }
}

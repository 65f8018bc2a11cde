/**
 * SpreadReads (src/client/spread-reads.ts), with a scripted `send` and a manual clock: a member's partitions go to the
 * broker its coordinator named, the rest to the coordinator, answers merged in the request's order; what fails at a
 * broker named (an error, a refusal, no answer) is fetched again from the coordinator and its hint forgotten; hints end
 * with the generation, the assignment and their lifetime; several parts long-poll only once none has anything new.
 */
import { describe, expect, it } from 'vitest';
import { OnelogError } from '../../src/protocol/errors.js';
import type { FetchedPartition, FetchRequest, FetchResult } from '../../src/protocol/fetch.js';
import { READ_HINT_MS, SpreadReads } from '../../src/client/spread-reads.js';

const COORDINATOR = 'coordinator';
const B2 = 'http://b2';
const B3 = 'http://b3';

interface Sent { url: string; partitions: number[]; readAnywhere: boolean; maxWaitMs: number | undefined }

/** A partition's answer: `records` records from `offset`, and a broker to read it from next if given. */
function part(partition: number, offset: number, records: number, readFrom?: string, error?: FetchedPartition['error']): FetchedPartition {
  return {
    partition, logStartOffset: 0, highWatermark: offset + records, nextOffset: offset + records,
    records: Array.from({ length: records }, (_, i) => ({ offset: offset + i, timestamp: 0, key: null, value: Buffer.from('x'), headers: [] })),
    ...(readFrom === undefined ? {} : { readFrom: { brokerId: readFrom === B2 ? 2 : 3, url: readFrom } }),
    ...(error === undefined ? {} : { error }),
  };
}

/**
 * A `send` answering each partition with `records(url, partition)` records (default 1), naming as the coordinator the
 * broker `leaders` maps it to; `fail(url)` makes a broker throw; every request is logged in `sent`.
 */
function broker(options: {
  leaders?: Record<number, string>; records?: (url: string, partition: number) => number; fail?: (url: string) => Error | undefined;
  errors?: (url: string, partition: number) => FetchedPartition['error'];
} = {}) {
  const sent: Sent[] = [];
  const send = async (request: FetchRequest, readFrom?: string): Promise<FetchResult> => {
    const url = readFrom ?? COORDINATOR;
    sent.push({ url, partitions: request.partitions.map((p) => p.partition), readAnywhere: request.readAnywhere === true, maxWaitMs: request.maxWaitMs });
    const failure = options.fail?.(url);
    if (failure) throw failure;
    return {
      topic: request.topic,
      partitions: request.partitions.map((p) => part(p.partition, p.offset, options.records?.(url, p.partition) ?? 1,
        url === COORDINATOR ? options.leaders?.[p.partition] : undefined, options.errors?.(url, p.partition))),
      ...(url === COORDINATOR ? { generationId: 1, assignmentChanged: false } : {}),
    };
  };
  return { sent, send };
}

const request = (offsets: number[], extra: Partial<FetchRequest> = {}): FetchRequest => ({
  topic: 't', groupId: 'g', memberId: 'm', generationId: 1, partitions: offsets.map((offset, partition) => ({ partition, offset })), ...extra,
});

describe('SpreadReads', () => {
  it('sends a fetch of no member, or with no hint yet, as it is; then reads each partition at the broker named', async () => {
    const reads = new SpreadReads(() => 0);
    const b = broker({ leaders: { 1: B2, 2: B3 } });
    await reads.fetch({ topic: 't', partitions: [{ partition: 0, offset: 0 }] }, b.send);
    const first = await reads.fetch(request([0, 0, 0]), b.send);
    expect(first.generationId).toBe(1);
    expect(b.sent.map((s) => [s.url, s.partitions, s.readAnywhere])).toEqual([[COORDINATOR, [0], false], [COORDINATOR, [0, 1, 2], false]]);
    expect(reads.size).toBe(2);
    b.sent.length = 0;
    const second = await reads.fetch(request([1, 1, 1]), b.send);
    expect(b.sent.map((s) => [s.url, s.partitions, s.readAnywhere])).toEqual([[COORDINATOR, [0], false], [B2, [1], true], [B3, [2], true]]);
    // One answer, in the request's order, the coordinator's generation in it.
    expect(second.partitions.map((p) => [p.partition, p.records[0]?.offset])).toEqual([[0, 1], [1, 1], [2, 1]]);
    expect(second).toMatchObject({ generationId: 1, assignmentChanged: false });
  });

  it('fetches a partition answered with an error at the broker named again from the coordinator, which decides', async () => {
    const reads = new SpreadReads(() => 0);
    const outOfRange = { code: 'OFFSET_OUT_OF_RANGE', message: 'below the log start', retriable: false } as FetchedPartition['error'];
    const b = broker({ leaders: { 0: B2, 1: B2 }, errors: (url, p) => (url === B2 && p === 1 ? outOfRange : undefined) });
    await reads.fetch(request([0, 0]), b.send);
    b.sent.length = 0;
    const answer = await reads.fetch(request([1, 1]), b.send);
    expect(b.sent.map((s) => [s.url, s.partitions])).toEqual([[B2, [0, 1]], [COORDINATOR, [1]]]);
    expect(answer.partitions.map((p) => [p.partition, p.error?.code])).toEqual([[0, undefined], [1, undefined]]);
    expect(answer.generationId).toBe(1);
  });

  it('falls back to the coordinator when the broker named refuses or cannot be reached, and forgets it', async () => {
    const reads = new SpreadReads(() => 0);
    let down = true;
    const b = broker({ leaders: { 0: B2 }, fail: (url) => (url === B2 && down ? new OnelogError('NETWORK_ERROR', 'cannot reach b2') : undefined) });
    await reads.fetch(request([0]), b.send);
    b.sent.length = 0;
    const answer = await reads.fetch(request([1]), b.send);
    expect(b.sent.map((s) => s.url)).toEqual([B2, COORDINATOR]);
    expect(answer.partitions[0]!.records).toHaveLength(1);
    down = false;
    b.sent.length = 0;
    await reads.fetch(request([2]), b.send); // the coordinator named it again in its last answer
    expect(b.sent.map((s) => s.url)).toEqual([B2]);
  });

  it('forgets hints at a new generation, a changed assignment, a leave, and after their lifetime', async () => {
    let now = 0;
    const reads = new SpreadReads(() => now);
    const b = broker({ leaders: { 0: B2 } });
    const urls = async (r: FetchRequest) => {
      b.sent.length = 0;
      await reads.fetch(r, b.send);
      return b.sent.map((s) => s.url);
    };
    await urls(request([0]));
    expect(await urls(request([1], { generationId: 2 }))).toEqual([COORDINATOR]);
    expect(await urls(request([2], { generationId: 2 }))).toEqual([B2]);
    const assignment = { groupId: 'g', memberId: 'm', generationId: 2, heartbeatIntervalMs: 3000, state: 'Stable' as const };
    reads.assigned({ ...assignment, assignment: [{ topic: 't', partition: 0, offset: 0 }] });
    expect(await urls(request([3], { generationId: 2 }))).toEqual([COORDINATOR]);
    reads.assigned({ ...assignment, assignment: [{ topic: 't', partition: 0, offset: 0 }] }); // the same: kept
    expect(await urls(request([4], { generationId: 2 }))).toEqual([B2]);
    now += READ_HINT_MS;
    expect(await urls(request([5], { generationId: 2 }))).toEqual([COORDINATOR]);
    reads.forgetMember('g', 'm');
    expect(reads.size).toBe(0);
  });

  it('with several parts, reads each without waiting first and long-polls only when none had anything new', async () => {
    const reads = new SpreadReads(() => 0);
    let records = 1;
    const b = broker({ leaders: { 1: B2 }, records: () => records });
    await reads.fetch(request([0, 0], { maxWaitMs: 500 }), b.send);
    b.sent.length = 0;
    await reads.fetch(request([1, 1], { maxWaitMs: 500 }), b.send);
    expect(b.sent.map((s) => [s.url, s.maxWaitMs])).toEqual([[COORDINATOR, 0], [B2, 0]]);
    records = 0;
    b.sent.length = 0;
    const idle = await reads.fetch(request([2, 2], { maxWaitMs: 500 }), b.send);
    expect(b.sent.map((s) => [s.url, s.maxWaitMs])).toEqual([[COORDINATOR, 0], [B2, 0], [COORDINATOR, 500], [B2, 500]]);
    expect(idle.partitions.map((p) => p.nextOffset)).toEqual([2, 2]);
  });

  it('answers at the first part with something new, and a next fetch asking the same waits for the long-poll in flight', async () => {
    const reads = new SpreadReads(() => 0);
    const b = broker({ leaders: { 1: B2 } });
    await reads.fetch(request([0, 0]), b.send);
    // The coordinator's long-poll never ends by itself here; b2's answers a record on its long-poll.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const sent: Array<[string, number | undefined]> = [];
    const send = async (r: FetchRequest, readFrom?: string): Promise<FetchResult> => {
      sent.push([readFrom ?? COORDINATOR, r.maxWaitMs]);
      const polling = (r.maxWaitMs ?? 0) > 0;
      if (polling && readFrom === undefined) await held;
      const n = polling && readFrom !== undefined ? 1 : 0;
      return { topic: 't', partitions: r.partitions.map((p) => part(p.partition, p.offset, n)), ...(readFrom === undefined ? { generationId: 1 } : {}) };
    };
    const answer = await reads.fetch(request([1, 1], { maxWaitMs: 500 }), send);
    expect(answer.partitions.map((p) => [p.partition, p.records.length])).toEqual([[0, 0], [1, 1]]);
    sent.length = 0;
    const next = reads.fetch(request([1, 2], { maxWaitMs: 500 }), send);
    await new Promise((resolve) => setImmediate(resolve));
    release();
    await next;
    // The coordinator's part asked the same (partition 0 from 1): its long-poll in flight was awaited, not sent again.
    expect(sent).toEqual([[COORDINATOR, 0], [B2, 0], [B2, 500]]);
  });

  it('answers at most maxRecords records in all: a partition cut ends where the next fetch starts', async () => {
    const reads = new SpreadReads(() => 0);
    const b = broker({ leaders: { 1: B2 }, records: () => 3 });
    await reads.fetch(request([0, 0]), b.send);
    const answer = await reads.fetch(request([10, 20], { maxRecords: 4 }), b.send);
    expect(answer.partitions.map((p) => [p.partition, p.records.length, p.nextOffset])).toEqual([[0, 3, 13], [1, 1, 21]]);
  });
});

import { describe, expect, it } from 'vitest';
import { checkHistory } from './checker.js';
import type { CommitOp, FinalReadOp, Operation, PollOp, ResetOp, SendOp } from './checker.js';

let clock = 0;
const at = () => ({ start: ++clock, end: ++clock, process: 'p1' });
const send = (value: string, partition: number, offset: number): SendOp => ({ ...at(), type: 'send', topic: 't', value, outcome: { ok: true, partition, offset } });
const records = (from: number, values: string[]) => values.map((value, i) => ({ offset: from + i, value }));
const poll = (from: number, values: string[], generation = 1, process = 'p1'): PollOp => ({
  ...at(), process, type: 'poll', group: 'g', generation, topic: 't', partition: 0, records: records(from, values),
});
const commit = (offset: number, ok: boolean | null = true): CommitOp => ({ ...at(), type: 'commit', group: 'g', topic: 't', partition: 0, offset, ok });
const reset = (offset: number): ResetOp => ({ ...at(), type: 'reset', group: 'g', topic: 't', partition: 0, offset });
const finalRead = (values: string[], logStartOffset = 0): FinalReadOp => ({
  ...at(), type: 'final-read', topic: 't', partition: 0, logStartOffset, records: records(logStartOffset, values),
});
const kinds = (history: Operation[], compacted?: string[]) => checkHistory(history, { compacted: new Set(compacted) }).map((a) => a.kind);

describe('checkHistory', () => {
  it('finds nothing in a clean history: sends, polls, commits, a redelivery of what was not committed, a reset back', () => {
    const history: Operation[] = [
      send('a', 0, 0), send('b', 0, 1), send('c', 0, 2),
      { ...at(), type: 'send', topic: 't', value: 'x', outcome: { ok: null } },
      poll(0, ['a', 'b']), commit(2), poll(2, ['c']), commit(3, null),
      poll(2, ['c'], 2, 'p2'), // the unknown commit did not land: redelivered to the next member, allowed
      reset(0), poll(0, ['a', 'b', 'c'], 3, 'p2'), commit(3),
      finalRead(['a', 'b', 'c']),
    ];
    expect(checkHistory(history)).toEqual([]);
  });

  it('reports a lost acknowledged write, naming the send and the final read', () => {
    const history: Operation[] = [send('a', 0, 0), send('b', 0, 1), finalRead(['a'])];
    const [anomaly] = checkHistory(history);
    expect(anomaly).toMatchObject({ kind: 'lost-write', operations: [history[1], history[2]] });
    // Below the log start it is retention's, not a loss.
    expect(kinds([send('a', 0, 0), send('b', 0, 1), finalRead(['b'], 1)])).toEqual([]);
  });

  it('reports a final read that skips offsets from its log start, except on a compacted topic', () => {
    const sends = [send('b', 0, 2), send('c', 0, 3), send('e', 0, 5)];
    const holey: FinalReadOp = { ...finalRead([], 1), records: [{ offset: 2, value: 'b' }, { offset: 3, value: 'c' }, { offset: 5, value: 'e' }] };
    const found = checkHistory([...sends, holey]);
    expect(found.map((a) => a.kind)).toEqual(['log-gap', 'log-gap']);
    expect(found.map((a) => a.message)).toEqual([
      'the final read of t/0 holds nothing at offsets 1-1', 'the final read of t/0 holds nothing at offsets 4-4',
    ]);
    expect(found[0]!.operations).toEqual([holey]);
    expect(kinds([...sends, holey], ['t'])).toEqual([]);
    expect(kinds([send('a', 0, 1), send('b', 0, 2), finalRead(['a', 'b'], 1)])).toEqual([]);
  });

  it('reports a duplicate offset and an offset reused for another record', () => {
    expect(kinds([send('a', 0, 0), send('b', 0, 0)])).toEqual(['duplicate-offset']);
    expect(kinds([send('a', 0, 0), poll(0, ['z'])])).toEqual(['offset-reused']);
    expect(kinds([poll(0, ['a']), poll(0, ['b'], 2, 'p2')])).toEqual(['offset-reused']);
  });

  it('reports a gap in a poll, except on a compacted topic', () => {
    const gappy: PollOp = { ...poll(0, []), records: [{ offset: 0, value: 'a' }, { offset: 2, value: 'c' }] };
    expect(kinds([gappy])).toEqual(['poll-gap']);
    expect(kinds([gappy], ['t'])).toEqual([]);
  });

  it('reports a member polling backwards within a generation, and offsets that do not increase within a poll', () => {
    expect(kinds([poll(0, ['a', 'b']), poll(1, ['b'])])).toEqual(['poll-not-monotonic']);
    // A new generation (a rebalance) may start again from the committed offset.
    expect(kinds([poll(0, ['a', 'b']), poll(0, ['a'], 2)])).toEqual([]);
    const unordered: PollOp = { ...poll(0, []), records: [{ offset: 1, value: 'b' }, { offset: 0, value: 'a' }] };
    expect(kinds([unordered])).toEqual(['poll-not-monotonic']);
  });

  it('reports a committed offset going backwards without a reset, from commits and from committed-offset reads', () => {
    expect(kinds([commit(5), commit(3)])).toEqual(['commit-backwards']);
    expect(kinds([commit(5), reset(3), commit(3)])).toEqual([]);
    expect(kinds([commit(5), { ...at(), type: 'committed', group: 'g', topic: 't', partition: 0, offset: 4 }])).toEqual(['commit-backwards']);
    // A refused or unknown commit says nothing about the committed offset.
    expect(kinds([commit(5), commit(3, false), commit(3, null)])).toEqual([]);
    // A read running beside a commit may see the offset before it; one started after the commit was answered may not.
    const first = commit(4);
    const committing = commit(5);
    const beside: Operation = { type: 'committed', start: committing.start - 1, end: committing.end + 1, process: 'w', group: 'g', topic: 't', partition: 0, offset: 4 };
    expect(kinds([first, committing, beside])).toEqual([]);
    const after: Operation = { ...beside, start: committing.end + 1, end: committing.end + 2 };
    expect(kinds([first, committing, after])).toEqual(['commit-backwards']);
    // A reset that may fall between them allows the lower offset.
    const resetting = reset(2);
    const overlapping: Operation = { ...resetting, type: 'committed', offset: 2, start: resetting.start + 1, end: resetting.end + 1 };
    expect(kinds([commit(5), resetting, overlapping])).toEqual([]);
    expect(kinds([commit(5), resetting, commit(6), commit(4)])).toEqual(['commit-backwards']);
  });

  it('reports a record delivered to the group below an offset it had committed, unless reset in between', () => {
    const history: Operation[] = [poll(0, ['a', 'b', 'c']), commit(3), poll(1, ['b', 'c'], 2, 'p2')];
    const [anomaly] = checkHistory(history);
    expect(anomaly).toMatchObject({ kind: 'redelivered-after-commit', operations: [history[1], history[2]] });
    expect(kinds([poll(0, ['a', 'b', 'c']), commit(3), reset(1), poll(1, ['b', 'c'], 2, 'p2')])).toEqual([]);
    // A poll that started before the commit was acknowledged may return what it covers.
    const overlapping: PollOp = { ...poll(1, ['b', 'c'], 2, 'p2'), start: 0 };
    expect(kinds([poll(0, ['a', 'b', 'c']), commit(3), overlapping])).toEqual([]);
  });

  it('reports a value stored more often than it was sent (a retry stored twice)', () => {
    expect(kinds([send('a', 0, 0), finalRead(['a', 'a'])])).toEqual(['duplicate-write']);
    // Sent twice (a retry after an unknown outcome, by the application): two copies are allowed.
    const unknown: SendOp = { ...at(), type: 'send', topic: 't', value: 'a', outcome: { ok: null } };
    expect(kinds([send('a', 0, 0), unknown, finalRead(['a', 'a'])])).toEqual([]);
    // A refused send stores nothing: its value in the log was refused but stored (a retry answered with an error).
    const refusedSend: SendOp = { ...at(), type: 'send', topic: 't', value: 'b', outcome: { ok: false, error: 'OUT_OF_ORDER_SEQUENCE' } };
    expect(kinds([send('a', 0, 0), refusedSend, finalRead(['a', 'b'])])).toEqual(['refused-but-stored']);
  });

  it('on a compacted topic, reports a key whose latest acknowledged record is gone with nothing later of its key', () => {
    const keyed = (key: string, value: string, offset: number): SendOp => ({ ...send(value, 0, offset), key });
    const held = (records: Array<[number, string, string]>): FinalReadOp => ({
      ...finalRead([]), records: records.map(([offset, key, value]) => ({ offset, key, value })),
    });
    const sends = [keyed('k', 'a', 0), keyed('k', 'b', 1), keyed('j', 'c', 2)];
    // Compaction dropped k's older record: allowed.
    expect(kinds([...sends, held([[1, 'k', 'b'], [2, 'j', 'c']])], ['t'])).toEqual([]);
    const history = [...sends, held([[0, 'k', 'a'], [2, 'j', 'c']])];
    const [anomaly] = checkHistory(history, { compacted: new Set(['t']) });
    expect(anomaly).toMatchObject({ kind: 'lost-latest', operations: [sends[1], history[3]] });
    // A later record of the key from a send whose outcome was unknown replaces it.
    const unknown: SendOp = { ...at(), type: 'send', topic: 't', key: 'k', value: 'x', outcome: { ok: null } };
    expect(kinds([...sends, unknown, held([[2, 'j', 'c'], [3, 'k', 'x']])], ['t'])).toEqual([]);
  });

  it('reports an acknowledged record a complete group never got, and a record an exactly-once group got twice', () => {
    const history: Operation[] = [send('a', 0, 0), send('b', 0, 1), poll(0, ['a']), finalRead(['a', 'b'])];
    const [anomaly] = checkHistory(history, { complete: [{ group: 'g', topic: 't' }] });
    expect(anomaly).toMatchObject({ kind: 'not-delivered', operations: [history[1]] });
    // Below the log start at the end, retention took it before the group came.
    expect(checkHistory([send('a', 0, 0), send('b', 0, 1), poll(1, ['b']), finalRead(['b'], 1)], { complete: [{ group: 'g', topic: 't' }] })).toEqual([]);
    const pushed = (from: number, values: string[]): PollOp => ({ ...poll(from, values), generation: null });
    expect(checkHistory([pushed(0, ['a', 'b']), pushed(1, ['b'])], { exactlyOnce: new Set(['g']) }).map((a) => a.kind)).toEqual(['delivered-twice']);
    // Without a generation, pushed records are not checked for moving forward (a redelivery after a crash).
    expect(kinds([pushed(0, ['a', 'b']), pushed(1, ['b'])])).toEqual([]);
  });
});

/**
 * A history checker for crash and fault tests (issue 15), in the manner of Jepsen's: a test records what each
 * client did and what it was told, as a list of operations with start and end times (ms on one monotonic clock),
 * and {@link checkHistory} reports every anomaly with the operations involved. Pure: no I/O.
 *
 * What it finds:
 * - `lost-write`: an acknowledged send whose offset a final read of its partition does not hold with its value;
 * - `log-gap`: a final read that skips an offset from its log start on (not checked on compacted topics): an offset
 *   given to no record, or a record the read did not return;
 * - `duplicate-offset`: two acknowledged sends given the same partition and offset;
 * - `offset-reused`: an offset read with a value other than the one acknowledged there, or read with two values;
 * - `poll-gap`: a poll whose records skip an offset (not checked on compacted topics, where gaps are normal);
 * - `poll-not-monotonic`: a member's poll of a partition that does not start past its previous poll of it in the
 *   same generation, or a poll whose offsets do not increase;
 * - `commit-backwards`: a group's committed offset (acknowledged commits and committed-offset reads) going down
 *   without a reset in between;
 * - `redelivered-after-commit`: a poll by a group, started after one of its commits was acknowledged, that returns a
 *   record below that committed offset, without a reset in between;
 * - `duplicate-write`: a value a final read holds at more offsets than sends of it were acknowledged or left unknown
 *   (a retry stored twice, or a value never sent at all);
 * - `refused-but-stored`: a value whose only sends were refused with an error, found in a final read;
 * - `lost-latest`: on a compacted topic, the latest acknowledged record of a key missing from the final read with
 *   no later record of its key there (compaction may drop any record but its key's latest);
 * - `not-delivered`: an acknowledged record (at or past the log start) that a group which must deliver everything
 *   ({@link CheckOptions.complete}) never delivered;
 * - `delivered-twice`: a record delivered twice to a group whose deliveries must not repeat
 *   ({@link CheckOptions.exactlyOnce}: the rows an exactly-once-effect consumer wrote).
 */

/** Times every operation carries: when it was invoked and when its outcome was known, ms (one monotonic clock). */
interface Timed {
  start: number;
  end: number;
  /** Who did it (a client process, a member id): names it in reports. */
  process: string;
}

/** A produce of one record: acknowledged with its place, refused, or unknown (a timeout, a crash). */
export interface SendOp extends Timed {
  type: 'send';
  topic: string;
  /** The record's key, when it has one (compacted topics are checked per key). */
  key?: string;
  value: string;
  outcome: { ok: true; partition: number; offset: number } | { ok: false; error: string } | { ok: null };
}

/** A record as a poll or a final read saw it. */
export interface ReadRecord {
  offset: number;
  key?: string;
  value: string;
}

/**
 * A group member's poll of one partition, or a delivery pushed to it (a push member's, a webhook's). Polls of one
 * process in one generation must move forward; `generation: null` (unknown, e.g. pushed records) is not checked so.
 */
export interface PollOp extends Timed {
  type: 'poll';
  group: string;
  generation: number | null;
  topic: string;
  partition: number;
  records: readonly ReadRecord[];
}

/** A commit of one partition's offset: acknowledged (`ok: true`), refused, or unknown. */
export interface CommitOp extends Timed {
  type: 'commit';
  group: string;
  topic: string;
  partition: number;
  offset: number;
  ok: boolean | null;
}

/** A read of a group's committed offset (null: none). */
export interface CommittedOp extends Timed {
  type: 'committed';
  group: string;
  topic: string;
  partition: number;
  offset: number | null;
}

/** An offset reset of a group's partition (an operator's, or the out-of-range policy's jump). */
export interface ResetOp extends Timed {
  type: 'reset';
  group: string;
  topic: string;
  partition: number;
  offset: number;
}

/** A read of a whole partition at the end of a run, from its log start: what survived. */
export interface FinalReadOp extends Timed {
  type: 'final-read';
  topic: string;
  partition: number;
  logStartOffset: number;
  records: readonly ReadRecord[];
}

export type Operation = SendOp | PollOp | CommitOp | CommittedOp | ResetOp | FinalReadOp;

export type AnomalyKind =
  | 'lost-write' | 'log-gap' | 'duplicate-offset' | 'offset-reused' | 'poll-gap' | 'poll-not-monotonic' | 'commit-backwards'
  | 'redelivered-after-commit' | 'duplicate-write' | 'refused-but-stored' | 'lost-latest' | 'not-delivered' | 'delivered-twice';

export interface Anomaly {
  kind: AnomalyKind;
  message: string;
  /** The operations that show it. */
  operations: Operation[];
}

export interface CheckOptions {
  /** Topics whose offsets may have gaps (compaction, retention) within a poll and a final read. @default none */
  compacted?: ReadonlySet<string>;
  /**
   * Groups that must have delivered every acknowledged record of their topic at or past the log start by the end
   * (at-least-once groups that were let catch up before the final read). @default none
   */
  complete?: ReadonlyArray<{ group: string; topic: string }>;
  /** Groups whose deliveries must not repeat a record (an exactly-once effect). @default none */
  exactlyOnce?: ReadonlySet<string>;
}

const place = (topic: string, partition: number, offset: number) => `${topic}/${partition}@${offset}`;
const cursor = (group: string, topic: string, partition: number) => `${group} ${topic}/${partition}`;

/** Every anomaly of `history` (in any order: operations are ordered by their times here). */
export function checkHistory(history: readonly Operation[], options: CheckOptions = {}): Anomaly[] {
  const ops = [...history].sort((a, b) => a.start - b.start || a.end - b.end);
  return [
    ...checkPlaces(ops), ...checkFinalReads(ops, options), ...checkPolls(ops, options), ...checkCommits(ops),
    ...checkDeliveries(ops, options),
  ];
}

type AckedSend = SendOp & { outcome: { ok: true } };

/** The first acknowledged send of each place. */
function acknowledged(ops: readonly Operation[]): Map<string, AckedSend> {
  const acked = new Map<string, AckedSend>();
  for (const op of ops) {
    if (op.type === 'send' && op.outcome.ok === true && !acked.has(place(op.topic, op.outcome.partition, op.outcome.offset))) {
      acked.set(place(op.topic, op.outcome.partition, op.outcome.offset), op as AckedSend);
    }
  }
  return acked;
}

/** Duplicate offsets, reused offsets. */
function checkPlaces(ops: readonly Operation[]): Anomaly[] {
  const anomalies: Anomaly[] = [];
  const acked = acknowledged(ops);
  for (const op of ops) {
    if (op.type !== 'send' || op.outcome.ok !== true) continue;
    const earlier = acked.get(place(op.topic, op.outcome.partition, op.outcome.offset))!;
    if (earlier !== op) anomalies.push({ kind: 'duplicate-offset', message: `two sends were acknowledged at ${place(op.topic, op.outcome.partition, op.outcome.offset)}`, operations: [earlier, op] });
  }
  // Every value read at a place: the acknowledged send's, and the first read's.
  const seen = new Map<string, { value: string; op: Operation }>();
  for (const op of ops) {
    if (op.type !== 'poll' && op.type !== 'final-read') continue;
    for (const r of op.records) {
      const at = place(op.topic, op.partition, r.offset);
      const sent = acked.get(at);
      if (sent && sent.value !== r.value) {
        anomalies.push({ kind: 'offset-reused', message: `${at} was acknowledged for ${JSON.stringify(sent.value)} and read as ${JSON.stringify(r.value)}`, operations: [sent, op] });
        continue;
      }
      const first = seen.get(at);
      if (first && first.value !== r.value) {
        anomalies.push({ kind: 'offset-reused', message: `${at} was read as ${JSON.stringify(first.value)} and as ${JSON.stringify(r.value)}`, operations: [first.op, op] });
      } else if (!first) seen.set(at, { value: r.value, op });
    }
  }
  return anomalies;
}

/** Lost writes (on compacted topics: lost latest records of a key), and values stored more often than sent. */
function checkFinalReads(ops: readonly Operation[], options: CheckOptions): Anomaly[] {
  const anomalies: Anomaly[] = [];
  const acked = acknowledged(ops);
  // Sends of each value that may have stored it (not refused), and the refused ones.
  const sendsOf = new Map<string, SendOp[]>();
  for (const op of ops) if (op.type === 'send') sendsOf.set(`${op.topic} ${op.value}`, [...(sendsOf.get(`${op.topic} ${op.value}`) ?? []), op]);
  for (const op of ops) {
    if (op.type !== 'final-read') continue;
    const held = new Map(op.records.map((r) => [r.offset, r.value]));
    const sends = [...acked.values()].filter((s) => s.topic === op.topic && s.outcome.partition === op.partition);
    const missing = (sent: AckedSend) =>
      sent.outcome.offset >= op.logStartOffset && held.get(sent.outcome.offset) !== sent.value;
    if (options.compacted?.has(op.topic)) {
      // Compaction keeps at least each key's latest record: the latest acknowledged one, or a later one of its key.
      const latestOf = new Map<string, AckedSend>();
      for (const s of sends) if (s.key !== undefined && !(s.outcome.offset < (latestOf.get(s.key)?.outcome.offset ?? -1))) latestOf.set(s.key, s);
      const lastHeld = new Map<string, number>();
      for (const r of op.records) if (r.key !== undefined) lastHeld.set(r.key, r.offset);
      for (const [key, sent] of latestOf) {
        if (!missing(sent) || (lastHeld.get(key) ?? -1) > sent.outcome.offset) continue;
        const at = place(op.topic, op.partition, sent.outcome.offset);
        anomalies.push({ kind: 'lost-latest', message: `${at}, the latest acknowledged record of key ${JSON.stringify(key)}, is not in the final read`, operations: [sent, op] });
      }
    } else {
      // Below the log start, retention took it.
      for (const sent of sends.filter(missing)) {
        const at = place(op.topic, op.partition, sent.outcome.offset);
        anomalies.push({ kind: 'lost-write', message: `${at} was acknowledged and is not in the final read`, operations: [sent, op] });
      }
      // Offsets are dense from the log start: every one holds a record.
      let expected = op.logStartOffset;
      for (const r of op.records) {
        if (r.offset > expected) {
          anomalies.push({ kind: 'log-gap', message: `the final read of ${op.topic}/${op.partition} holds nothing at offsets ${expected}-${r.offset - 1}`, operations: [op] });
        }
        expected = Math.max(expected, r.offset + 1);
      }
    }
    const offsetsOf = new Map<string, number[]>();
    for (const r of op.records) offsetsOf.set(r.value, [...(offsetsOf.get(r.value) ?? []), r.offset]);
    for (const [value, offsets] of offsetsOf) {
      const sends = sendsOf.get(`${op.topic} ${value}`) ?? [];
      const mayStore = sends.filter((s) => s.outcome.ok !== false).length;
      if (offsets.length <= mayStore) continue;
      const where = `${op.topic}/${op.partition} offsets ${offsets.join(', ')}`;
      anomalies.push(mayStore === 0 && sends.length > 0
        ? { kind: 'refused-but-stored', message: `${JSON.stringify(value)} is stored at ${where} and its send was refused`, operations: [...sends, op] }
        : { kind: 'duplicate-write', message: `${JSON.stringify(value)} is stored at ${where} and was sent ${mayStore} time(s)`, operations: [...sends, op] });
    }
  }
  return anomalies;
}

/** Groups that must deliver every acknowledged record, and groups that must not deliver one twice. */
function checkDeliveries(ops: readonly Operation[], options: CheckOptions): Anomaly[] {
  const anomalies: Anomaly[] = [];
  const polls = ops.filter((op): op is PollOp => op.type === 'poll');
  for (const { group, topic } of options.complete ?? []) {
    const delivered = new Set<string>();
    for (const p of polls) if (p.group === group && p.topic === topic) for (const r of p.records) delivered.add(place(topic, p.partition, r.offset));
    const logStart = new Map<number, number>();
    for (const op of ops) if (op.type === 'final-read' && op.topic === topic) logStart.set(op.partition, op.logStartOffset);
    for (const [at, sent] of acknowledged(ops)) {
      if (sent.topic !== topic || sent.outcome.offset < (logStart.get(sent.outcome.partition) ?? 0) || delivered.has(at)) continue;
      anomalies.push({ kind: 'not-delivered', message: `${at} was acknowledged and never delivered to group ${group}`, operations: [sent] });
    }
  }
  for (const group of options.exactlyOnce ?? []) {
    const first = new Map<string, PollOp>();
    for (const p of polls) {
      if (p.group !== group) continue;
      for (const r of p.records) {
        const at = place(p.topic, p.partition, r.offset);
        const earlier = first.get(at);
        if (earlier) anomalies.push({ kind: 'delivered-twice', message: `${at} was delivered twice to group ${group}`, operations: [earlier, p] });
        else first.set(at, p);
      }
    }
  }
  return anomalies;
}

/** Gaps within a poll, and polls of a member that do not move forward. */
function checkPolls(ops: readonly Operation[], options: CheckOptions): Anomaly[] {
  const anomalies: Anomaly[] = [];
  const last = new Map<string, PollOp>();
  for (const op of ops) {
    if (op.type !== 'poll' || op.records.length === 0) continue;
    for (let i = 1; i < op.records.length; i++) {
      const [before, after] = [op.records[i - 1]!.offset, op.records[i]!.offset];
      if (after <= before) {
        anomalies.push({ kind: 'poll-not-monotonic', message: `a poll of ${op.topic}/${op.partition} returned offset ${after} after ${before}`, operations: [op] });
      } else if (after !== before + 1 && !options.compacted?.has(op.topic)) {
        anomalies.push({ kind: 'poll-gap', message: `a poll of ${op.topic}/${op.partition} skipped offsets ${before + 1}-${after - 1}`, operations: [op] });
      }
    }
    if (op.generation === null) continue;
    const key = `${op.process} ${op.group} ${op.generation} ${op.topic}/${op.partition}`;
    const previous = last.get(key);
    const lastOffset = previous?.records.at(-1)?.offset;
    if (previous && lastOffset !== undefined && op.records[0]!.offset <= lastOffset) {
      anomalies.push({
        kind: 'poll-not-monotonic',
        message: `${op.process} polled ${op.topic}/${op.partition} from ${op.records[0]!.offset} after reaching ${lastOffset} in generation ${op.generation}`,
        operations: [previous, op],
      });
    }
    last.set(key, op);
  }
  return anomalies;
}

/**
 * Committed offsets going down without a reset, and records delivered below an acknowledged commit. Operations are
 * ordered in real time: `a` precedes `b` when `a` ended before `b` started; two that overlap may take effect in
 * either order (a committed-offset read running beside a commit may see the offset before it), so they are not
 * compared.
 */
function checkCommits(ops: readonly Operation[]): Anomaly[] {
  const anomalies: Anomaly[] = [];
  // Per cursor, in order of completion: acknowledged commits, committed-offset reads and resets.
  const events = ops.filter((op): op is CommitOp | CommittedOp | ResetOp =>
    (op.type === 'commit' && op.ok === true) || (op.type === 'committed' && op.offset !== null) || op.type === 'reset');
  const byCursor = new Map<string, Array<CommitOp | CommittedOp | ResetOp>>();
  for (const op of [...events].sort((a, b) => a.end - b.end)) {
    const key = cursor(op.group, op.topic, op.partition);
    const list = byCursor.get(key);
    if (list) list.push(op);
    else byCursor.set(key, [op]);
  }
  type Observed = CommitOp | CommittedOp;
  for (const [key, list] of byCursor) {
    const resets = list.filter((op): op is ResetOp => op.type === 'reset');
    const observed = list.filter((op): op is Observed => op.type !== 'reset'); // by end
    let preceding = 0;
    let high: Observed | null = null; // the highest of observed[0, preceding)
    for (const op of [...observed].sort((a, b) => a.start - b.start)) {
      for (; preceding < observed.length && observed[preceding]!.end < op.start; preceding++) {
        if (!high || observed[preceding]!.offset! > high.offset!) high = observed[preceding]!;
      }
      if (!high || op.offset! >= high.offset!) continue;
      // A reset that may have taken effect after an earlier operation and before this one allows it to be lower.
      let earlier: Observed | null = high;
      const resetUpTo = Math.max(-Infinity, ...resets.filter((r) => r.start <= op.end).map((r) => r.end));
      if (resetUpTo >= high.start) {
        earlier = null;
        for (const a of observed.slice(0, preceding)) if (a.start > resetUpTo && a.offset! > op.offset! && (!earlier || a.offset! > earlier.offset!)) earlier = a;
      }
      if (earlier) anomalies.push({ kind: 'commit-backwards', message: `${key}: committed ${earlier.offset} then ${op.offset} without a reset`, operations: [earlier, op] });
    }
  }
  for (const poll of ops) {
    if (poll.type !== 'poll' || poll.records.length === 0) continue;
    const list = byCursor.get(cursor(poll.group, poll.topic, poll.partition)) ?? [];
    // The highest commit acknowledged before the poll started, since the last reset before it.
    let committed: CommitOp | CommittedOp | null = null;
    for (const op of list) {
      if (op.end > poll.start) break;
      if (op.type === 'reset') committed = null;
      else if (op.type === 'commit' && (!committed || op.offset > committed.offset!)) committed = op;
    }
    const below = committed && poll.records.find((r) => r.offset < committed.offset!);
    if (committed && below) {
      anomalies.push({
        kind: 'redelivered-after-commit',
        message: `${poll.process} got ${place(poll.topic, poll.partition, below.offset)} after group ${poll.group} committed ${committed.offset}`,
        operations: [committed, poll],
      });
    }
  }
  return anomalies;
}

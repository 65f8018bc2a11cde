/**
 * A history checker for crash and fault tests (issue 15), in the manner of Jepsen's: a test records what each
 * client did and what it was told, as a list of operations with start and end times (ms on one monotonic clock),
 * and {@link checkHistory} reports every anomaly with the operations involved. Pure: no I/O.
 *
 * What it finds:
 * - `lost-write`: an acknowledged send whose offset a final read of its partition does not hold with its value;
 * - `duplicate-offset`: two acknowledged sends given the same partition and offset;
 * - `offset-reused`: an offset read with a value other than the one acknowledged there, or read with two values;
 * - `poll-gap`: a poll whose records skip an offset (not checked on compacted topics, where gaps are normal);
 * - `poll-not-monotonic`: a member's poll of a partition that does not start past its previous poll of it in the
 *   same generation, or a poll whose offsets do not increase;
 * - `commit-backwards`: a group's committed offset (acknowledged commits and committed-offset reads) going down
 *   without a reset in between;
 * - `redelivered-after-commit`: a poll by a group, started after one of its commits was acknowledged, that returns a
 *   record below that committed offset, without a reset in between.
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
  value: string;
  outcome: { ok: true; partition: number; offset: number } | { ok: false; error: string } | { ok: null };
}

/** A group member's poll of one partition. */
export interface PollOp extends Timed {
  type: 'poll';
  group: string;
  generation: number;
  topic: string;
  partition: number;
  records: ReadonlyArray<{ offset: number; value: string }>;
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
  records: ReadonlyArray<{ offset: number; value: string }>;
}

export type Operation = SendOp | PollOp | CommitOp | CommittedOp | ResetOp | FinalReadOp;

export type AnomalyKind =
  | 'lost-write' | 'duplicate-offset' | 'offset-reused' | 'poll-gap' | 'poll-not-monotonic' | 'commit-backwards'
  | 'redelivered-after-commit';

export interface Anomaly {
  kind: AnomalyKind;
  message: string;
  /** The operations that show it. */
  operations: Operation[];
}

export interface CheckOptions {
  /** Topics whose offsets may have gaps (compaction, retention) within a poll and a final read. @default none */
  compacted?: ReadonlySet<string>;
}

const place = (topic: string, partition: number, offset: number) => `${topic}/${partition}@${offset}`;
const cursor = (group: string, topic: string, partition: number) => `${group} ${topic}/${partition}`;

/** Every anomaly of `history` (in any order: operations are ordered by their times here). */
export function checkHistory(history: readonly Operation[], options: CheckOptions = {}): Anomaly[] {
  const ops = [...history].sort((a, b) => a.start - b.start || a.end - b.end);
  return [...checkPlaces(ops, options), ...checkPolls(ops, options), ...checkCommits(ops)];
}

/** Lost writes, duplicate offsets, reused offsets. */
function checkPlaces(ops: readonly Operation[], options: CheckOptions): Anomaly[] {
  const anomalies: Anomaly[] = [];
  const acked = new Map<string, SendOp>();
  for (const op of ops) {
    if (op.type !== 'send' || op.outcome.ok !== true) continue;
    const at = place(op.topic, op.outcome.partition, op.outcome.offset);
    const earlier = acked.get(at);
    if (earlier) anomalies.push({ kind: 'duplicate-offset', message: `two sends were acknowledged at ${at}`, operations: [earlier, op] });
    else acked.set(at, op);
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
  for (const op of ops) {
    if (op.type !== 'final-read') continue;
    const held = new Map(op.records.map((r) => [r.offset, r.value]));
    for (const [at, sent] of acked) {
      if (sent.topic !== op.topic || sent.outcome.ok !== true || sent.outcome.partition !== op.partition) continue;
      const { offset } = sent.outcome;
      // Below the log start, retention took it; on a compacted topic a later record of its key may replace it.
      if (offset < op.logStartOffset || options.compacted?.has(op.topic) || held.get(offset) === sent.value) continue;
      anomalies.push({ kind: 'lost-write', message: `${at} was acknowledged and is not in the final read`, operations: [sent, op] });
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

/** Committed offsets going down without a reset, and records delivered below an acknowledged commit. */
function checkCommits(ops: readonly Operation[]): Anomaly[] {
  const anomalies: Anomaly[] = [];
  // Per cursor, in order of completion: acknowledged commits, committed-offset reads and resets.
  const events = ops.filter((op): op is CommitOp | CommittedOp | ResetOp =>
    (op.type === 'commit' && op.ok === true) || (op.type === 'committed' && op.offset !== null) || op.type === 'reset');
  const byCursor = new Map<string, Array<CommitOp | CommittedOp | ResetOp>>();
  for (const op of [...events].sort((a, b) => a.end - b.end)) {
    const key = cursor(op.group, op.topic, op.partition);
    byCursor.set(key, [...(byCursor.get(key) ?? []), op]);
  }
  for (const [key, list] of byCursor) {
    let high: CommitOp | CommittedOp | null = null;
    for (const op of list) {
      if (op.type === 'reset') {
        high = null;
        continue;
      }
      if (high && op.offset! < high.offset!) {
        anomalies.push({ kind: 'commit-backwards', message: `${key}: committed ${high.offset} then ${op.offset} without a reset`, operations: [high, op] });
      }
      if (!high || op.offset! >= high.offset!) high = op;
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

/**
 * A group member's reads spread over the brokers (cluster mode, docs/cluster.md "The read path"), as a Kafka consumer
 * fetches each partition from its leader (or KIP-392's preferred read replica) while only its commits and heartbeats go
 * to the group's coordinator. The coordinator names, in its answer to a member's fetch, the broker the member may read
 * each partition from next (`readFrom`, the partition's leader); the member's next fetches of those partitions go there
 * with `readAnywhere`, the others to the coordinator, and the answers are merged into one, in the request's order.
 *
 * What needs the coordinator stays there: a partition answered with an error by the broker named (an offset outside
 * the log: the coordinator applies the subscription's out-of-range policy), or whose broker refused or could not be
 * reached, is fetched again from the coordinator in the same call, and its hint forgotten. A hint holds for the
 * member's generation and assignment (a heartbeat or join answering another assignment forgets the member's hints)
 * and for {@link READ_HINT_MS} at most, after which the coordinator decides again. Pure logic over a `send` given by
 * the API (HTTP/JSON or the binary data path): no I/O of its own.
 */
import type { FetchedPartition, FetchRequest, FetchResult } from '../protocol/fetch.js';
import type { MemberAssignment } from '../protocol/groups.js';

/** How long a broker named to read a partition from is used before the coordinator is asked again, ms. */
export const READ_HINT_MS = 10_000;
/** Most hints kept; past it the expired ones go, then the oldest. */
const MAX_HINTS = 100_000;
/** Most members whose last assignment is kept (a member that ended without leaving is forgotten, oldest first, past it). */
const MAX_MEMBERS = 10_000;

/** Sends a fetch: to the broker at `readFrom` (with `readAnywhere`), or, without it, as the API routes a group's fetch (its coordinator). */
export type SendFetch = (request: FetchRequest, readFrom?: string) => Promise<FetchResult>;

/** One part of a fetch: the partitions read at one broker (`url`), or at the coordinator (`url` undefined). */
interface Part {
  url: string | undefined;
  request: FetchRequest;
}

export class SpreadReads {
  /** `group \0 member \0 topic \0 partition` -> the broker to read it from, for which generation, until when (clock ms). */
  private readonly hints = new Map<string, { url: string; generationId: number; until: number }>();
  /** `group \0 member` -> its assignment as last answered (sorted `topic/partition` list, joined). */
  private readonly assignments = new Map<string, string>();
  /** A long-poll still in flight after its fetch was answered (see {@link fetch}), by what it asks. */
  private readonly polls = new Map<string, Promise<FetchResult>>();

  /** @param now the clock, ms (monotonic) */
  constructor(private readonly now: () => number = () => performance.now()) {}

  /**
   * Fetches as `request` asks: a member's partitions with a hint at the broker named, the rest at the coordinator,
   * concurrently; a fetch of no member, or with no hint, is sent as it is. With several parts, each is first read
   * without waiting; only when none has anything new do they long-poll (`maxWaitMs`), and the answer comes at the first
   * part with something new, the others' positions as read before (their long-polls go on, and a next fetch asking the
   * same of a broker waits for the one in flight instead of sending another). At most `maxRecords` records in all
   * (those cut from the end are fetched next: `nextOffset` is the first left out).
   * @throws OnelogError as the coordinator's fetch throws (a broker named failing falls back to the coordinator)
   */
  async fetch(request: FetchRequest, send: SendFetch): Promise<FetchResult> {
    const { groupId, memberId } = request;
    if (groupId === undefined || memberId === undefined) return send(request);
    const parts = this.split(request);
    if (parts.length === 1 && parts[0]!.url === undefined) return this.learn(request, await send(request));
    const waitMs = request.maxWaitMs ?? 0;
    const first = await Promise.all(parts.map((p) => this.read(p, { ...p.request, maxWaitMs: parts.length === 1 ? waitMs : 0 }, send)));
    let answers = first;
    if (parts.length > 1 && waitMs > 0 && first.every((a, i) => nothingNew(parts[i]!.request, a))) {
      answers = await firstNew(parts.map((p) => this.poll(p, send)), parts.map((p) => p.request), first);
    }
    return merged(request, answers);
  }

  /**
   * Notes a member's assignment as a join or heartbeat answered it: when it is not the one before, the member's hints
   * are forgotten (a partition granted again may be in a suspect range now: the coordinator decides again).
   */
  assigned(answer: MemberAssignment): void {
    const key = `${answer.groupId}\0${answer.memberId}`;
    const now = answer.assignment.map((a) => `${a.topic}/${a.partition}`).sort().join(',');
    if (this.assignments.get(key) === now) return;
    this.assignments.delete(key); // re-inserted last: the oldest go first past MAX_MEMBERS
    this.assignments.set(key, now);
    if (this.assignments.size > MAX_MEMBERS) this.assignments.delete(this.assignments.keys().next().value!);
    this.forgetMember(answer.groupId, answer.memberId, false);
  }

  /** Forgets a member's hints (and, when it left, its assignment). */
  forgetMember(groupId: string, memberId: string, left = true): void {
    const prefix = `${groupId}\0${memberId}\0`;
    for (const key of [...this.hints.keys()]) if (key.startsWith(prefix)) this.hints.delete(key);
    if (left) this.assignments.delete(`${groupId}\0${memberId}`);
  }

  /** The number of hints held (for tests). */
  get size(): number {
    return this.hints.size;
  }

  private key(request: FetchRequest, partition: number): string {
    return `${request.groupId}\0${request.memberId}\0${request.topic}\0${partition}`;
  }

  /** The request's parts: the coordinator's first (if any), then one per broker named. */
  private split(request: FetchRequest): Part[] {
    const now = this.now();
    const byUrl = new Map<string | undefined, FetchRequest['partitions']>();
    for (const p of request.partitions) {
      const hint = this.hints.get(this.key(request, p.partition));
      const url = hint !== undefined && hint.generationId === request.generationId && hint.until > now ? hint.url : undefined;
      if (hint !== undefined && url === undefined) this.hints.delete(this.key(request, p.partition));
      if (!byUrl.has(url)) byUrl.set(url, []);
      byUrl.get(url)!.push(p);
    }
    // The coordinator's part first (built so: sort() puts an undefined key last whatever its comparator says).
    const urls = [...(byUrl.has(undefined) ? [undefined] : []), ...[...byUrl.keys()].filter((url) => url !== undefined)];
    return urls.map((url) => ({ url, request: { ...request, partitions: byUrl.get(url)! } }));
  }

  /** Reads one part: at its broker, falling back to the coordinator for what failed there; at the coordinator, learning hints. */
  private async read(part: Part, request: FetchRequest, send: SendFetch): Promise<FetchResult> {
    if (part.url === undefined) return this.learn(request, await send(request));
    let answer: FetchResult;
    try {
      answer = await send({ ...request, readAnywhere: true }, part.url);
    } catch {
      // Refused (the group's reads must stay at its coordinator) or unreachable: the coordinator serves them.
      for (const p of request.partitions) this.hints.delete(this.key(request, p.partition));
      return this.learn(request, await send(request));
    }
    const failed = answer.partitions.filter((p) => p.error !== undefined).map((p) => p.partition);
    if (failed.length === 0) return answer;
    // An error (an offset outside the log) is decided by the coordinator: the subscription's out-of-range policy.
    for (const partition of failed) this.hints.delete(this.key(request, partition));
    const again = this.learn(request, await send({ ...request, partitions: request.partitions.filter((p) => failed.includes(p.partition)) }));
    const byPartition = new Map(again.partitions.map((p) => [p.partition, p]));
    return { ...again, partitions: answer.partitions.map((p) => byPartition.get(p.partition) ?? p) };
  }

  /** A part's long-poll, or the one in flight asking the same. */
  private poll(part: Part, send: SendFetch): Promise<FetchResult> {
    const r = part.request;
    const key = [part.url ?? '', r.groupId, r.memberId, r.generationId, r.topic, r.maxWaitMs, ...r.partitions.map((p) => `${p.partition}@${p.offset}`)].join('\0');
    let polling = this.polls.get(key);
    if (polling === undefined) {
      polling = this.read(part, r, send);
      this.polls.set(key, polling);
      const done = () => void this.polls.delete(key);
      polling.then(done, done);
    }
    return polling;
  }

  /** Takes the hints a coordinator's answer names (`readFrom`), and forgets those of its partitions it names none for. */
  private learn(request: FetchRequest, answer: FetchResult): FetchResult {
    if (request.generationId === undefined) return answer;
    const until = this.now() + READ_HINT_MS;
    for (const p of answer.partitions) {
      const key = this.key(request, p.partition);
      if (p.readFrom === undefined) this.hints.delete(key);
      else this.hints.set(key, { url: p.readFrom.url, generationId: request.generationId, until });
    }
    if (this.hints.size > MAX_HINTS) this.trim();
    return answer;
  }

  private trim(): void {
    const now = this.now();
    for (const [key, hint] of this.hints) if (hint.until <= now) this.hints.delete(key);
    for (const key of this.hints.keys()) {
      if (this.hints.size <= MAX_HINTS) break;
      this.hints.delete(key);
    }
  }
}

/** Whether an answer holds nothing new for `request`: no records, no error, no position moved. */
function nothingNew(request: FetchRequest, answer: FetchResult): boolean {
  return answer.partitions.every((p) =>
    p.records.length === 0 && p.error === undefined && p.nextOffset === request.partitions.find((r) => r.partition === p.partition)?.offset);
}

/**
 * Resolves with the answers once one of `polls` answers something new (or all answered): each part's long-poll
 * answer if in, else its answer `before`. A poll that fails counts as answered, with its answer before.
 */
function firstNew(polls: Array<Promise<FetchResult>>, requests: FetchRequest[], before: FetchResult[]): Promise<FetchResult[]> {
  return new Promise((resolve, reject) => {
    const answers = [...before];
    let pending = polls.length;
    let done = false;
    polls.forEach((poll, i) => {
      poll.then((answer) => {
        if (done) return;
        answers[i] = answer;
        pending--;
        if (pending === 0 || !nothingNew(requests[i]!, answer)) {
          done = true;
          resolve(answers);
        }
      }, (err: unknown) => {
        if (done) return;
        done = true;
        reject(err);
      });
    });
  });
}

/**
 * The parts' answers as one answer to `request`: its partitions in the request's order, at most `maxRecords`
 * records in all; the coordinator's `generationId` and `assignmentChanged` (the first part, when it has partitions).
 */
function merged(request: FetchRequest, answers: FetchResult[]): FetchResult {
  const byPartition = new Map<number, FetchedPartition>();
  for (const a of answers) for (const p of a.partitions) byPartition.set(p.partition, p);
  let left = request.maxRecords ?? 500;
  const partitions = request.partitions.flatMap((r) => {
    const p = byPartition.get(r.partition);
    if (p === undefined) return [];
    if (p.records.length <= left) {
      left -= p.records.length;
      return [p];
    }
    const records = p.records.slice(0, left);
    const cut = p.records[left]!.offset;
    left = 0;
    return [{ ...p, records, nextOffset: cut }];
  });
  const membership = answers.find((a) => a.generationId !== undefined);
  return {
    topic: request.topic, partitions,
    ...(membership?.generationId === undefined ? {} : { generationId: membership.generationId }),
    ...(membership?.assignmentChanged === undefined ? {} : { assignmentChanged: membership.assignmentChanged }),
  };
}

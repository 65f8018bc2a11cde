/**
 * The consumer: a member of a consumer group. It joins, gets partitions from the coordinator (which
 * rebalances incrementally as members come and go), pulls batches from its positions (the next batch's fetch
 * goes out while the handlers of the one before run, as Kafka's consumer fetches ahead) and commits as its
 * commit mode says:
 *
 * - `'after-processing'` (default, at-least-once): after the handlers of a fetched batch resolved. The commit
 *   goes out beside the next fetch, and the next batch is handled once it is answered: a crash redelivers at
 *   most the batch in hand (the records processed since the last commit); with `overlapCommits`, while it is
 *   answered, and a crash redelivers what was handled since the last answered commit. A handler that throws never
 *   has its record committed.
 * - `'before-processing'` (at-most-once): a fetched batch is committed before its first handler runs. A
 *   crash drops the records of that batch not yet processed (at most `maxRecords`).
 * - with an `offsetStore` (exactly-once effect): each handler runs inside a transaction of the user's
 *   database, which also stores the partition's next offset; onelog's committed offset follows for lag.
 *
 * `commit(message)` commits `message.offset + 1` at once, in any mode. A fencing error (`UNKNOWN_MEMBER_ID`,
 * `ILLEGAL_GENERATION`, `NOT_ASSIGNED`) never leads to a silent commit: the consumer drops what it has not
 * committed and joins again.
 */
import { backoff, backoffDelayMs } from '../common/backoff.js';
import type { Clock } from '../common/clock.js';
import { systemClock } from '../common/clock.js';
import type { OnelogApi } from '../protocol/api.js';
import type { FetchedPartition, FetchRequest, FetchResult } from '../protocol/fetch.js';
import type { AssignorName } from '../protocol/groups.js';
import type { NackResult } from '../protocol/nacks.js';
import type { PartitionError, TopicPartition } from '../protocol/partitions.js';
import { OnelogError } from '../protocol/errors.js';
import { deliveryInfo } from '../protocol/retry-policy.js';
import type { DeliveryInfo } from '../protocol/retry-policy.js';
import type { CommitMode, OutOfRangePolicy, StartPolicy, StoredRecord } from '../protocol/types.js';
import type { ExternalOffsetStore } from './external-offsets.js';
import { MemberSession } from './member-session.js';
import { NackPipeline } from './nack-pipeline.js';
import type { HeldPartition } from './member-session.js';

/** A commit's offsets: the next offset to read per `topic/partition`. */
type CommitOffsets = Map<string, { topic: string; partition: number; offset: number }>;

/** Consumer settings; units in the names. */
export interface ConsumerOptions<Tx = undefined> {
  groupId: string;
  /** Where a new group starts (as Kafka's auto.offset.reset); stored on the subscription. @default the subscription's, else 'latest' */
  startPolicy?: StartPolicy;
  /** What the group does when its committed offset falls below the log start; stored on the subscription. @default the subscription's, else 'pause' */
  onOutOfRange?: OutOfRangePolicy;
  /** @default 'after-processing' (at-least-once) */
  commitMode?: CommitMode;
  /** Commit each fetched batch as `commitMode` says; false: only {@link Consumer.commit} commits. @default true */
  autoCommit?: boolean;
  /**
   * In `'after-processing'` mode, go on handling batches while a commit is answered, as Kafka's `commitAsync` does: a
   * slow commit (the offset store syncs each one; a busy disk can hold it tens of ms) then delays no record. Commits
   * still go out one at a time, in order: the progress of batches handled meanwhile is merged and sent once the commit
   * in flight is answered. A crash redelivers what was handled since the last answered commit: the batches handled
   * while one commit was in flight, and the one in hand. false: the next batch is handled only once the commit is
   * answered, so a crash redelivers at most the batch in hand. @default false
   */
  overlapCommits?: boolean;
  /** Keeps offsets in the user's database, committed in the handler's transaction (exactly-once effect). */
  offsetStore?: ExternalOffsetStore<Tx>;
  /** Removed from the group after this long without a heartbeat, ms. @default 45000 (Kafka's session.timeout.ms); 1000 to 3600000 */
  sessionTimeoutMs?: number;
  /** @default 'sticky' */
  assignor?: AssignorName;
  /** Shown in `groups describe`; the member id's prefix. @default 'consumer' */
  clientId?: string;
  /** Most records per fetch. @default 500 */
  maxRecords?: number;
  /** Byte budget per fetch. @default 1048576 */
  maxBytes?: number;
  /**
   * Long-poll: how long a fetch waits for new records, ms. After an answer with nothing new (every partition at its
   * end), the next fetch starts no sooner than this after that one was sent, on a timer (unless another subscribed
   * topic had records). @default 500
   */
  maxWaitMs?: number;
  /**
   * Quick retries of a throwing handler before its record is nacked (with a retry policy) or stops the
   * partition (without), each after a backoff (100 ms doubling, at most 5 s) and never past the session
   * timeout since the first try. @default 0
   */
  maxInPlaceRetries?: number;
  /** Waits (in-place retries, retries after a failure) are taken on it. @default the system clock */
  clock?: Clock;
}

/**
 * A record as a handler gets it: where it comes from (a retry tier's records come from the tier topic), the
 * record, the attempt this delivery is (1 for the first delivery, 2 for the first retry, ...) and the original
 * record's position (the record's own for a first delivery).
 */
export interface ConsumedMessage extends StoredRecord, DeliveryInfo {
  topic: string;
  partition: number;
}

/**
 * The message a handler is given for `record` of `topic`/`partition`, with its delivery facts ({@link deliveryInfo}:
 * `fromTier` for a retry tier's record). Written out, not spread: an object built by spreading is slower for every
 * later use (JSON.stringify 5x), and a push consumer's spread messages lived long enough to be promoted (4x the
 * young-generation GC time).
 */
export function consumedMessage(record: StoredRecord, topic: string, partition: number, fromTier: boolean): ConsumedMessage {
  const { attempt, original } = deliveryInfo(record, topic, partition, fromTier);
  return {
    offset: record.offset, timestamp: record.timestamp, key: record.key, value: record.value, headers: record.headers,
    topic, partition, attempt, original,
  };
}

/** What a handler receives. */
export interface EachMessagePayload<Tx = undefined> {
  topic: string;
  partition: number;
  message: ConsumedMessage;
  /** With an `offsetStore`: the transaction to write with (its commit stores the offset too). */
  tx: Tx;
}

/** Handlers for {@link Consumer.run}. */
export interface RunOptions<Tx = undefined> {
  /** Called for each record in order per partition. */
  eachMessage: (payload: EachMessagePayload<Tx>) => Promise<void> | void;
  /**
   * Called once the handlers of a fetched batch ran, before its records are committed (in `'before-processing'`
   * mode they were committed before the handlers ran): to flush what the handlers buffered (output, writes). If
   * it throws, none of the batch is committed and {@link Consumer.run} rejects with its error. @default none
   */
  afterBatch?: () => Promise<void> | void;
  /**
   * Called when a partition stops for the group (e.g. `OFFSET_OUT_OF_RANGE`: paused until a reset); the
   * other partitions keep flowing. @default a process warning (`process.emitWarning`) with the error's code
   */
  onPartitionError?: (error: OnelogError, where: { topic: string; partition: number }) => void;
  /**
   * Called when the coordinator grants the member partitions (its first assignment, and each later one that adds
   * some), with the partitions added; retry tier partitions included. As Kafka's
   * ConsumerRebalanceListener.onPartitionsAssigned. @default none
   */
  onPartitionsAssigned?: (partitions: TopicPartition[]) => void;
}

/** Kafka's session.timeout.ms default, as the coordinator's. */
const DEFAULT_SESSION_TIMEOUT_MS = 45_000;
/** Backoff before trying again after the broker could not be reached (a restart is ridden out within the session timeout). */
const RECONNECT_BACKOFF = { initialMs: 250, maxMs: 4000 };
/** Backoff of in-place retries of a throwing handler. */
const IN_PLACE_BACKOFF = { initialMs: 100, maxMs: 5000 };

export class Consumer<Tx = undefined> {
  private readonly topics: string[] = [];
  private stopping = false;
  /** Whether the run leaves the group as a crashed member ends ({@link stop}'s `abandoned`). */
  private abandoned = false;
  private running: Promise<void> | null = null;
  private inHandler = false;
  /** Once a nack got through (the subscription has a retry policy), a batch's nacks go through {@link nacks}. */
  private pipelineNacks = false;
  /** The run's nacks off the fetch path (a new one per run, bound to its membership). */
  private nacks = new NackPipeline(async () => false);
  private session: MemberSession | null = null;
  /** The retriable error of the last commit, while no later commit got through. */
  private commitPending: OnelogError | null = null;
  /**
   * The last batch's commit while it is in flight: the next fetch goes out beside it, and the next batch is
   * handled only once it is answered (unless {@link ConsumerOptions.overlapCommits}), so a crash still redelivers
   * at most the batch in hand.
   */
  private commitInFlight: Promise<{ ok: boolean } | { error: unknown }> | null = null;
  /** With {@link ConsumerOptions.overlapCommits}: the progress of batches handled while a commit was in flight, sent once it is answered. */
  private commitsWaiting: CommitOffsets | null = null;
  /** Whether {@link commitInFlight} is not answered yet (a commit sent now waits behind it, with overlapCommits). */
  private commitUnanswered = false;
  /** Fetches sent ahead and not yet answered (settled promises that never reject). */
  private readonly fetchesAhead = new Set<Promise<void>>();
  private readonly options: ConsumerOptions<Tx>;

  constructor(
    private readonly api: OnelogApi,
    options: ConsumerOptions<Tx>,
  ) {
    this.options = { ...options };
  }

  /** Adds a topic to read; `fromBeginning` sets the start policy to earliest (kafkajs style). */
  subscribe(request: { topic: string; fromBeginning?: boolean }): void {
    if (!this.topics.includes(request.topic)) this.topics.push(request.topic);
    if (request.fromBeginning !== undefined) this.options.startPolicy = request.fromBeginning ? 'earliest' : 'latest';
  }

  /** The member id while running (shown by `groups describe`), else ''. */
  get memberId(): string {
    return this.session?.memberId ?? '';
  }

  /** The partitions this member consumes now (held, not being revoked); empty when not running. */
  get assignment(): TopicPartition[] {
    return [...(this.session?.held.values() ?? [])].filter((p) => !p.revoked).map((p) => ({ topic: p.topic, partition: p.partition }));
  }

  /**
   * Consumes until {@link stop} is called. Resolves once stopped with every processed record committed and
   * the group left; rejects with the handler's error (in after-processing mode the records before it are
   * committed, it and later ones not), or with the broker's error when nothing got through to it for a
   * whole session timeout (`NETWORK_ERROR`, `BROKER_CLOSED`: shorter outages, such as a broker restart, are
   * ridden out: the member rejoins and resumes from the committed offsets), or when it stopped while its
   * last commit could not be sent.
   */
  run(handlers: RunOptions<Tx>): Promise<void> {
    if (this.running) throw new OnelogError('INVALID_REQUEST', 'this consumer is already running');
    if (this.topics.length === 0) throw new OnelogError('INVALID_REQUEST', 'call subscribe({ topic }) before run()');
    this.stopping = false;
    this.abandoned = false;
    this.running = this.loop(handlers).finally(() => (this.running = null));
    return this.running;
  }

  /**
   * Stops after the record being processed, commits, leaves the group, and waits for {@link run} to finish.
   * In `'before-processing'` mode it first processes the rest of the batch in hand, which is committed
   * already (only a crash drops those records). Called from inside a handler it returns at once (waiting
   * there would wait for the handler itself).
   * @param options `abandoned: true` leaves as a crashed member ends: the broker counts the deliveries of the records
   *   it held uncommitted (docs/retries.md; for a broker-side member whose own client vanished). @default false
   */
  async stop(options: { abandoned?: boolean } = {}): Promise<void> {
    this.abandoned = options.abandoned ?? false;
    this.stopping = true;
    this.session?.wakeUp();
    if (!this.inHandler) await this.running?.catch(() => {});
  }

  /**
   * "I could not process this record": the broker moves it, durably, to the subscription's next retry tier (or
   * its dead-letter topic after `maxAttempts`; docs/retries.md). Called from the handler, the handler then
   * returns and the record counts as processed: it is committed past as usual, and comes back later as the
   * next attempt. A handler that throws is nacked the same way when the subscription has a retry policy.
   * @param reason kept in the moved record's `onelog.failure.reason` header
   * @throws OnelogError `NO_RETRY_POLICY` without a retry policy; `UNKNOWN_MEMBER_ID`, `ILLEGAL_GENERATION`,
   *   `NOT_ASSIGNED` when the member was fenced (it rejoins)
   */
  async nack(message: Pick<ConsumedMessage, 'topic' | 'partition' | 'offset'>, reason: string): Promise<NackResult> {
    const session = this.session;
    if (!session) throw new OnelogError('INVALID_REQUEST', 'nack() works while the consumer runs');
    try {
      return await session.serial(() => this.api.nack({
        groupId: this.options.groupId, topic: message.topic, partition: message.partition, offset: message.offset, reason,
        memberId: session.memberId, generationId: session.generationId,
      }));
    } catch (err) {
      session.noteFencing(err);
      throw err;
    }
  }

  /**
   * Commits `message.offset + 1` for the message's partition now: the group resumes after it.
   * @throws OnelogError `UNKNOWN_MEMBER_ID`, `ILLEGAL_GENERATION`, `NOT_ASSIGNED` when the member was fenced
   *   (then nothing is committed and the consumer rejoins)
   */
  async commit(message: Pick<ConsumedMessage, 'topic' | 'partition' | 'offset'>): Promise<void> {
    const session = this.session;
    if (!session) throw new OnelogError('INVALID_REQUEST', 'commit() works while the consumer runs');
    await this.commitOffsets(session, new Map([[`${message.topic}/${message.partition}`, {
      topic: message.topic, partition: message.partition, offset: message.offset + 1,
    }]]), true);
  }

  private async loop(handlers: RunOptions<Tx>): Promise<void> {
    const { groupId } = this.options;
    const store = this.options.offsetStore;
    const report = handlers.onPartitionError ?? ((error) => process.emitWarning(error.message, { code: error.code }));
    const session: MemberSession = new MemberSession(this.api, {
      groupId, topics: [...this.topics], clientId: this.options.clientId ?? 'consumer',
      commitMode: this.options.commitMode ?? 'after-processing',
      ...definedOptions(this.options),
    }, {
      onAssigned: async (p): Promise<number | undefined> => {
        if (!store) return undefined;
        const stored = await store.claim(groupId, session.memberId, p.topic, p.partition);
        if (stored === null) return undefined;
        // onelog's committed offset follows the store's, so lag is right even before anything is processed
        // (queued: it runs once this assignment is applied, with its generation).
        if (stored !== p.offset) {
          void this.commitOffsets(session, new Map([[`${p.topic}/${p.partition}`, { topic: p.topic, partition: p.partition, offset: stored }]]))
            .catch(() => {});
        }
        return stored;
      },
      onPaused: (p, error) => report(OnelogError.fromJSON(error), { topic: p.topic, partition: p.partition }),
      onGranted: (granted) => handlers.onPartitionsAssigned?.(granted.map((p) => ({ topic: p.topic, partition: p.partition }))),
    });
    this.session = session;
    this.nacks = new NackPipeline((h, records) => this.nackRecords(session, h, records));
    this.commitPending = null;
    this.commitsWaiting = null;
    const sessionTimeoutMs = this.options.sessionTimeoutMs ?? DEFAULT_SESSION_TIMEOUT_MS;
    let rotation = 0;
    /** Topics whose last fetch had records (true) or none (false); a topic not fetched yet may have some. */
    const busy = new Map<string, boolean>();
    /** The next fetch, sent while the batch before it is handled; used only if it asks what the loop then would. */
    let ahead: { request: FetchRequest; sent: Promise<FetchResult> } | null = null;
    try {
      await session.start();
      while (!this.stopping) {
        // Rides out a broker restart or network blip; stops once nothing got through for a session timeout.
        session.checkContact(sessionTimeoutMs);
        if (session.fenced) {
          await session.start().catch((err: unknown) => this.retryLater(session, err));
          continue;
        }
        if (this.nacks.failure !== undefined) throw this.nacks.failure;
        await this.releaseRevoked(session);
        const fetchable = session.fetchable();
        if (fetchable.length === 0) {
          // Idle while the group reconciles: ask for partitions at the fetch pace, not the heartbeat timer's.
          await session.waitForChange(this.options.maxWaitMs ?? 500);
          if (session.state !== 'Stable' && !this.stopping) await session.heartbeat().catch(() => {});
          continue;
        }
        const request = this.fetchRequest(session, fetchable, rotation++, busy);
        const fromAhead = ahead !== null && sameFetch(ahead.request, request);
        // A fetch sent ahead did not wait (see fetchAhead): nothing new in it is no reason to wait before the next fetch.
        const waitEnds = fromAhead ? 0 : performance.now() + (request.maxWaitMs ?? 0);
        let fetched = await this.fetch(session, request, fromAhead ? ahead!.sent : undefined);
        ahead = null;
        if (fromAhead && fetched?.partitions.some((p) => p.error?.code === 'OFFSET_OUT_OF_RANGE')) {
          // Fetched ahead and out of range: fetched again once the batch's commit is answered, so the pause or jump
          // (and its commit) lands after it, whichever connection each travels on.
          if (!(await this.settleCommit()) && session.fenced) continue;
          fetched = await this.fetch(session, request);
        }
        const { topic } = request;
        const moved = fetched !== null && (fetched.assignmentChanged || (fetched.generationId ?? 0) > session.generationId);
        if (fetched !== null) {
          busy.set(topic, fetched.partitions.some((p) => p.records.length > 0));
          // The broker reads the next batch while the commit before this one is answered and this one handled.
          if (!moved && busy.get(topic)) ahead = this.fetchAhead(session, fetched.partitions, topic, rotation, busy);
        }
        // A fenced member handles nothing more: it rejoins first. With overlapCommits the commit is settled before the
        // next one is sent instead (sendCommit), and a fencing it answers is seen there.
        if (this.options.overlapCommits ? session.fenced : !(await this.settleCommit()) && session.fenced) continue;
        if (!fetched) continue;
        if (moved) await session.heartbeat().catch(() => {});
        await this.handleBatch(session, topic, fetched.partitions, handlers, report);
        if (!session.fetchable().some((p) => busy.get(p.topic) ?? true) && nothingNew(request, fetched)) {
          // The answer may have come without any wait (maxWaitMs 0, or a broker ending its long-polls to shut down), all
          // in promises with an in-process broker: fetching again at once would be a loop that never yields to the event
          // loop. The next fetch starts on a timer, no sooner than the long-poll would have ended (or a stop).
          await session.waitForChange(Math.max(0, waitEnds - performance.now()));
        }
      }
      await this.settleCommit();
      await this.nacks.settled();
      await this.releaseRevoked(session);
      if (this.nacks.failure !== undefined) throw this.nacks.failure;
    } finally {
      await this.settleCommit().catch(() => {});
      await this.nacks.settled();
      // Fetches sent ahead, used or dropped, are answered (within maxWaitMs) before the member leaves: none outlives run().
      await Promise.all([...this.fetchesAhead]);
      this.session = null;
      await session.leave(this.abandoned).catch(() => {});
    }
    // Stopped while the broker was unreachable: what was processed since the last commit is not committed.
    if (this.commitPending) throw this.commitPending;
  }

  /** Waits after a retriable failure, longer with each in a row (the loop then tries again); rethrows any other error. */
  private async retryLater(session: MemberSession, err: unknown): Promise<void> {
    if (!session.noteFailure(err)) throw err;
    await backoff(this.options.clock ?? systemClock, session.failures, RECONNECT_BACKOFF);
  }

  /** Commits and lets go of revoked partitions, then tells the coordinator at once. */
  private async releaseRevoked(session: MemberSession): Promise<void> {
    const revoked = [...session.held.values()].filter((p) => p.revoked);
    if (revoked.length === 0) return;
    // Their progress is committed before they are let go.
    await this.settleCommit();
    await this.nacks.settled();
    for (const p of revoked) session.release(p);
    await session.heartbeat().catch(() => {});
  }

  /**
   * The fetch the loop sends next from `fetchable`'s positions: one topic in turn (the subscribed topics first,
   * then their retry tiers), its partitions in an order that rotates so one partition's backlog cannot take every
   * fetch's byte budget. Only the first of them long-polls, and only when every other topic's last fetch had no
   * records: an idle topic, or one not fetched yet, never holds up another, and a retry tier never waits while its
   * topic is fetched (a tier record due meanwhile is fetched at most `maxWaitMs` late). So a member with retry tiers
   * starts as quickly as one without: an empty tier costs one answer without a wait.
   */
  private fetchRequest(
    session: MemberSession, fetchable: ReadonlyArray<Pick<HeldPartition, 'topic' | 'partition' | 'position'>>, rotation: number,
    busy: ReadonlyMap<string, boolean>,
  ): FetchRequest {
    const rank = (t: string) => (this.topics.includes(t) ? this.topics.indexOf(t) : this.topics.length);
    const topics = [...new Set(fetchable.map((p) => p.topic))].sort((a, b) => rank(a) - rank(b));
    const topic = topics[rotation % topics.length]!;
    const partitions = fetchable.filter((p) => p.topic === topic);
    const order = partitions.map((_, i) => partitions[(i + rotation) % partitions.length]!);
    return {
      topic, groupId: this.options.groupId, memberId: session.memberId, generationId: session.generationId,
      partitions: order.map((p) => ({ partition: p.partition, offset: p.position })),
      maxRecords: this.options.maxRecords ?? 500,
      maxBytes: this.options.maxBytes ?? 1024 * 1024,
      maxWaitMs: topic !== topics[0] || topics.some((t) => t !== topic && (busy.get(t) ?? true)) ? 0 : this.options.maxWaitMs ?? 500,
    };
  }

  /**
   * Sends the fetch that will follow `fetched` (an answer with records) once every record of it is handled (as Kafka's
   * consumer fetches ahead while the application processes), so the broker reads the next batch while the handlers run. The loop
   * uses its answer only when it then asks for the same partitions at the same offsets in the same generation;
   * otherwise (a failure, a pause, a revocation, stopping) the answer is dropped. It is read only (`ahead`): an
   * offset that fell out of the log meanwhile is answered as an error, and the loop fetches again so the pause or
   * jump happens after this batch's commit (a jump's commit must not be overwritten by it). A dropped answer costs
   * only the read.
   */
  private fetchAhead(
    session: MemberSession, fetched: readonly FetchedPartition[], topic: string, rotation: number, busy: ReadonlyMap<string, boolean>,
  ): { request: FetchRequest; sent: Promise<FetchResult> } | null {
    if (this.stopping || session.fenced) return null;
    const next = new Map(fetched.map((p) => [p.partition, p]));
    const positions = session.fetchable().flatMap((h) => {
      const p = h.topic === topic ? next.get(h.partition) : undefined;
      if (p?.error) return []; // paused once the batch is handled
      return [{ topic: h.topic, partition: h.partition, position: p ? Math.max(h.position, p.nextOffset) : h.position }];
    });
    if (positions.length === 0) return null;
    const request = this.fetchRequest(session, positions, rotation, busy);
    // Read only: were an offset out of range, the pause or jump (and its commit) must come after this batch's commit.
    // It never long-polls: at the end of the partitions it is answered at once (the loop's next fetch waits), so a
    // consumer that stops there is not held up to maxWaitMs by it.
    const sent = this.api.fetch({ ...request, maxWaitMs: 0, ahead: true });
    // A dropped answer's failure is nobody's; a used one's is handled where it is awaited.
    const settled = sent.then(() => {}, () => {});
    this.fetchesAhead.add(settled);
    void settled.then(() => this.fetchesAhead.delete(settled));
    return { request, sent };
  }

  /**
   * Sends `request` (or awaits the same fetch `sent` ahead) and notes the contact.
   * @returns the answer, or null after a fencing error (the session rejoins) or a retriable one (after the backoff)
   * @throws any other error
   */
  private async fetch(session: MemberSession, request: FetchRequest, sent = this.api.fetch(request)): Promise<FetchResult | null> {
    try {
      const fetched = await sent;
      session.contact();
      return fetched;
    } catch (err) {
      if (!session.noteFencing(err, request.memberId)) await this.retryLater(session, err);
      return null;
    }
  }

  /** Processes one fetched batch as the commit mode says; positions move as records are processed. */
  private async handleBatch(
    session: MemberSession, topic: string, partitions: FetchedPartition[], handlers: RunOptions<Tx>,
    report: NonNullable<RunOptions<Tx>['onPartitionError']>,
  ): Promise<void> {
    const beforeProcessing = this.options.commitMode === 'before-processing';
    const autoCommit = this.options.autoCommit !== false && !this.options.offsetStore;
    const held = (p: FetchedPartition) => session.held.get(`${topic}/${p.partition}`);
    for (const p of partitions) {
      const h = held(p);
      if (!h) continue;
      if (p.error) {
        h.paused = p.error as PartitionError;
        report(OnelogError.fromJSON(p.error), { topic, partition: p.partition });
      }
    }
    if (beforeProcessing && autoCommit) {
      const upTo = new Map(partitions.filter((p) => !p.error && p.nextOffset > (held(p)?.position ?? p.nextOffset))
        .map((p) => [`${topic}/${p.partition}`, { topic, partition: p.partition, offset: p.nextOffset }]));
      if (!(await this.commitOffsets(session, upTo))) return;
    }
    // Committed before processing: stopping or a revocation must not skip these records (it would lose them).
    const committedAhead = beforeProcessing && autoCommit;
    const started = new Map(partitions.map((p) => [p.partition, held(p)?.position ?? 0]));
    let failure: unknown;
    try {
      for (const p of partitions) {
        const h = held(p);
        if (!h || p.error) continue;
        await this.process(session, h, p, handlers, committedAhead);
        if (!committedAhead && (session.fenced || this.stopping)) break;
      }
    } catch (err) {
      failure = err;
    }
    // What the handlers buffered is flushed before their records are committed; if it cannot be, none is.
    if (handlers.afterBatch && partitions.some((p) => p.records.length > 0)) await handlers.afterBatch();
    if (committedAhead && failure !== undefined) {
      // The batch was committed ahead and a handler failed: move the commit back to what was handed, so the
      // records no handler got are not committed (they go to whoever consumes the partition next).
      const handed = new Map(partitions.flatMap((p) => {
        const h = held(p);
        return h && h.position < p.nextOffset ? [[`${topic}/${p.partition}`, { topic, partition: p.partition, offset: h.position }] as const] : [];
      }));
      await this.commitOffsets(session, handed).catch(() => {});
    }
    const progress: CommitOffsets = new Map();
    for (const p of partitions) {
      const h = held(p);
      if (h && h.position > started.get(p.partition)!) progress.set(`${topic}/${p.partition}`, { topic, partition: p.partition, offset: h.position });
    }
    if (this.nacks.busy) {
      await this.nacks.endBatch(progress, autoCommit ? (p) => this.commitOffsets(session, p) : null, failure !== undefined);
    } else if (!beforeProcessing && (autoCommit || this.options.offsetStore)) {
      await this.sendCommit(session, progress);
    }
    if (failure !== undefined) {
      await this.settleCommit();
      throw failure;
    }
  }

  /**
   * Sends a batch's commit without waiting for it ({@link settleCommit} waits), once the commit before it was
   * answered: one commit in flight, so they land in order. With {@link ConsumerOptions.overlapCommits} a commit sent
   * while one is in flight waits behind it, merged with what waits there already, and goes out once it is answered.
   * A fenced member sends none (it rejoins).
   * @throws the earlier commit's error when the broker refused it otherwise than by fencing
   */
  private async sendCommit(session: MemberSession, offsets: CommitOffsets): Promise<void> {
    if (offsets.size === 0) return;
    if (this.options.overlapCommits && this.commitUnanswered) {
      this.commitsWaiting = new Map([...this.commitsWaiting ?? [], ...offsets]);
      return;
    }
    if (!(await this.settleCommit()) && session.fenced) return;
    this.startCommit(session, offsets);
  }

  /** Sends `offsets`, with what waited behind the commit before; once it got through, what waited behind it. */
  private startCommit(session: MemberSession, offsets: CommitOffsets): void {
    const merged = new Map([...this.commitsWaiting ?? [], ...offsets]);
    this.commitsWaiting = null;
    this.commitUnanswered = true;
    this.commitInFlight = this.commitOffsets(session, merged).then((ok) => {
      this.commitUnanswered = false;
      // A commit that did not get through (the broker unreachable) leaves what waits for the next one to carry.
      if (session.fenced) this.commitsWaiting = null; // dropped with what it has not committed: it rejoins
      if (ok && this.commitsWaiting !== null) this.startCommit(session, new Map());
      return { ok };
    }, (error: unknown) => {
      this.commitUnanswered = false;
      return { error };
    });
  }

  /**
   * Waits for the commit in flight, if any, and for those sent behind it.
   * @returns whether they got through (false: fenced, or the broker unreachable; the next commit carries their progress)
   * @throws a commit's error when the broker refused it otherwise
   */
  private async settleCommit(): Promise<boolean> {
    for (;;) {
      const sent = this.commitInFlight;
      if (sent === null) return true;
      const outcome = await sent;
      if (this.commitInFlight === sent) this.commitInFlight = null; // else one was sent behind it: wait for that too
      if ('error' in outcome) throw outcome.error;
      if (!outcome.ok) return false;
    }
  }

  /**
   * Nacks records of one partition in one request (beside the member's other requests: the broker accepts a
   * nack of the generation before, as a fetch); retried while the broker is unreachable, within a session
   * timeout.
   * @returns true once moved, false when the member was fenced
   * @throws the error when they cannot be nacked (e.g. `NO_RETRY_POLICY` once the policy was removed)
   */
  private async nackRecords(session: MemberSession, h: HeldPartition, records: Array<{ offset: number; reason: string }>): Promise<boolean> {
    for (;;) {
      const sentAs = session.memberId;
      try {
        await this.api.nackBatch({
          groupId: this.options.groupId, topic: h.topic, partition: h.partition, records, memberId: sentAs, generationId: session.generationId,
        });
        return true;
      } catch (err) {
        if (session.noteFencing(err, sentAs)) return false;
        session.checkContact(this.options.sessionTimeoutMs ?? DEFAULT_SESSION_TIMEOUT_MS);
        await this.retryLater(session, err);
      }
    }
  }

  /**
   * Runs the handler on a partition's records; its position follows each one, then moves to `nextOffset`.
   * Stopping or a revocation ends it after the record in hand, unless the records are `committedAhead`.
   */
  private async process(
    session: MemberSession, h: HeldPartition, p: FetchedPartition, handlers: RunOptions<Tx>, committedAhead: boolean,
  ): Promise<void> {
    const fromTier = !this.topics.includes(h.topic);
    for (const record of p.records) {
      // Committed ahead, every record is handed, whatever happens meanwhile: nobody else will get them.
      if (!committedAhead && (session.fenced || this.stopping || h.revoked)) return;
      if (record.offset < h.position) continue;
      // A topic the member did not subscribe to is a retry tier of one it did.
      const message = consumedMessage(record, h.topic, h.partition, fromTier);
      this.inHandler = true;
      try {
        if (!(await this.handle(session, h, message, handlers))) return;
      } catch (err) {
        if (committedAhead) h.position = record.offset + 1; // handed, though it failed
        throw err;
      } finally {
        this.inHandler = false;
      }
      h.position = record.offset + 1;
    }
    if (p.nextOffset > h.position) h.position = p.nextOffset; // every record handled: skip what compaction emptied
  }

  /**
   * Runs the handler on one record: again after a throw, up to `maxInPlaceRetries` times within the session
   * timeout, then nacks it (the record is processed: it comes back through the retry tiers) when the
   * subscription has a retry policy.
   * @returns false when the member was fenced meanwhile (the partition stops here)
   * @throws the handler's error when it cannot be nacked (no retry policy)
   */
  private async handle(session: MemberSession, h: HeldPartition, message: ConsumedMessage, handlers: RunOptions<Tx>): Promise<boolean> {
    const store = this.options.offsetStore;
    const clock = this.options.clock ?? systemClock;
    const sessionTimeoutMs = this.options.sessionTimeoutMs ?? DEFAULT_SESSION_TIMEOUT_MS;
    const firstTry = clock.now();
    for (let failures = 0; ; failures++) {
      try {
        if (store) {
          await store.transaction(this.options.groupId, session.memberId, { topic: h.topic, partition: h.partition, offset: message.offset + 1 },
            (tx) => Promise.resolve(handlers.eachMessage({ topic: h.topic, partition: h.partition, message, tx })));
        } else {
          // A synchronous handler costs no microtask per record.
          const done = handlers.eachMessage({ topic: h.topic, partition: h.partition, message, tx: undefined as Tx });
          if (done) await done;
        }
        return true;
      } catch (err) {
        if (session.noteFencing(err)) return false;
        const delayMs = backoffDelayMs(failures + 1, IN_PLACE_BACKOFF);
        const quick = failures < (this.options.maxInPlaceRetries ?? 0) && clock.now() - firstTry + delayMs < sessionTimeoutMs;
        if (quick && !this.stopping && !h.revoked && !session.fenced) {
          await clock.sleep(delayMs);
          continue;
        }
        if (this.pipelineNacks && this.options.commitMode !== 'before-processing' && !store) {
          // Sent without waiting, in order (the member's queue): the handler goes on, the batch's commit waits.
          // Nacked with the rest of the batch's failures when it ends: the handler goes on, the batch's commit waits.
          this.nacks.add(h, message.offset, err instanceof Error ? err.message : String(err));
          return true;
        }
        const nacked = await this.nackFailed(session, message, err);
        this.pipelineNacks ||= nacked;
        return nacked;
      }
    }
  }

  /**
   * Nacks a record whose handler threw, with the error's message as the reason; retries while the broker is
   * unreachable (within a session timeout).
   * @returns true once nacked, false when the member was fenced
   * @throws the handler's error when the subscription has no retry policy
   */
  private async nackFailed(session: MemberSession, message: ConsumedMessage, failure: unknown): Promise<boolean> {
    const reason = failure instanceof Error ? failure.message : String(failure);
    for (;;) {
      try {
        await this.nack(message, reason);
        return true;
      } catch (err) {
        if ((err as OnelogError).code === 'NO_RETRY_POLICY') throw failure;
        if (session.fenced) return false;
        session.checkContact(this.options.sessionTimeoutMs ?? DEFAULT_SESSION_TIMEOUT_MS);
        await this.retryLater(session, err);
      }
    }
  }

  /**
   * Commits in the member's queue and answers whether it got through. A fencing error marks the session for
   * a rejoin; a retriable one (broker unreachable) is remembered, and the next commit carries the same
   * progress (offsets are absolute). With `rethrow`, as for {@link commit}, the error is thrown after that.
   */
  private async commitOffsets(
    session: MemberSession, offsets: CommitOffsets, rethrow = false,
  ): Promise<boolean> {
    const byTopic = new Map<string, Array<{ partition: number; offset: number }>>();
    for (const o of offsets.values()) byTopic.set(o.topic, [...(byTopic.get(o.topic) ?? []), { partition: o.partition, offset: o.offset }]);
    let sentAs = session.memberId;
    try {
      for (const [topic, list] of byTopic) {
        await session.serial(() => {
          sentAs = session.memberId;
          return this.api.commitOffsets({
            groupId: this.options.groupId, topic, memberId: sentAs, generationId: session.generationId, offsets: list,
          });
        });
      }
      session.contact();
      this.commitPending = null;
      return true;
    } catch (err) {
      const fenced = session.noteFencing(err, sentAs);
      if (!fenced && !session.noteFailure(err)) throw err;
      if (!fenced) this.commitPending = err as OnelogError;
      if (rethrow) throw err;
      return false;
    }
  }
}

/** Whether a fetch's answer holds nothing new: no records, no error, no position moved (the log's end, at every partition). */
function nothingNew(request: FetchRequest, fetched: FetchResult): boolean {
  return fetched.partitions.every((p) =>
    p.records.length === 0 && !p.error && p.nextOffset === request.partitions.find((r) => r.partition === p.partition)?.offset);
}

/** Whether two fetches ask for the same thing: the same member, generation, partitions, offsets and wait. */
function sameFetch(a: FetchRequest, b: FetchRequest): boolean {
  return a.topic === b.topic && a.memberId === b.memberId && a.generationId === b.generationId && a.maxWaitMs === b.maxWaitMs &&
    a.partitions.length === b.partitions.length &&
    a.partitions.every((p, i) => p.partition === b.partitions[i]!.partition && p.offset === b.partitions[i]!.offset);
}

function definedOptions(o: ConsumerOptions<unknown>) {
  return {
    ...(o.startPolicy ? { startPolicy: o.startPolicy } : {}),
    ...(o.onOutOfRange ? { onOutOfRange: o.onOutOfRange } : {}),
    ...(o.sessionTimeoutMs ? { sessionTimeoutMs: o.sessionTimeoutMs } : {}),
    ...(o.assignor ? { assignor: o.assignor } : {}),
  };
}

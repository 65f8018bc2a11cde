/**
 * The consumer: reads a topic as a member of a consumer group, pulling batches from the group's positions
 * and committing after processing (at-least-once, the default commit mode): a record is committed only
 * after its handler resolved, so a crash re-delivers at most the records processed since the last commit.
 */
import type { FetchedPartition, OnelogApi } from '../protocol/api.js';
import { OnelogError } from '../protocol/errors.js';
import type { StartPolicy, StoredRecord } from '../protocol/types.js';

/** Consumer settings; units in the names. */
export interface ConsumerOptions {
  groupId: string;
  /** Where a new group starts (as Kafka's auto.offset.reset); stored on the subscription. @default the subscription's, else 'latest' */
  startPolicy?: StartPolicy;
  /** Most records per fetch. @default 500 */
  maxRecords?: number;
  /** Byte budget per fetch. @default 1048576 */
  maxBytes?: number;
  /** Long-poll: how long a fetch waits for new records, ms. @default 500 */
  maxWaitMs?: number;
}

/** What a handler receives. */
export interface EachMessagePayload {
  topic: string;
  partition: number;
  message: StoredRecord;
}

/** Handlers for {@link Consumer.run}. */
export interface RunOptions {
  /** Called for each record in order per partition; a record is committed only after this resolves. */
  eachMessage: (payload: EachMessagePayload) => Promise<void> | void;
}

export class Consumer {
  private topic: string | undefined;
  private stopping = false;
  private running: Promise<void> | null = null;
  private inHandler = false;
  private readonly options: ConsumerOptions;

  constructor(
    private readonly api: OnelogApi,
    options: ConsumerOptions,
  ) {
    this.options = { ...options };
  }

  /** Chooses the topic to read; `fromBeginning` sets the start policy to earliest (kafkajs style). */
  subscribe(request: { topic: string; fromBeginning?: boolean }): void {
    this.topic = request.topic;
    if (request.fromBeginning !== undefined) this.options.startPolicy = request.fromBeginning ? 'earliest' : 'latest';
  }

  /**
   * Consumes until {@link stop} is called. Resolves once stopped with every processed record committed;
   * rejects with the handler's error (records before it committed, it and later ones not) or with an
   * `OFFSET_OUT_OF_RANGE` error naming the group, partition, committed offset and records lost (nothing of
   * that partition delivered, its committed offset not moved).
   */
  run(handlers: RunOptions): Promise<void> {
    if (this.running) throw new OnelogError('INVALID_REQUEST', 'this consumer is already running');
    this.stopping = false;
    this.running = this.loop(handlers).finally(() => (this.running = null));
    return this.running;
  }

  /**
   * Stops after the record being processed, commits, and waits for {@link run} to finish. Called from inside
   * a handler it returns at once (waiting there would wait for the handler itself); `run` then resolves
   * after the handler returns and the commit is done.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    if (!this.inHandler) await this.running?.catch(() => {});
  }

  private async loop(handlers: RunOptions): Promise<void> {
    const topic = this.topic;
    if (topic === undefined) throw new OnelogError('INVALID_REQUEST', 'call subscribe({ topic }) before run()');
    const { groupId } = this.options;
    const joined = await this.api.subscribe({
      groupId, topic, ...(this.options.startPolicy ? { startPolicy: this.options.startPolicy } : {}),
    });
    const positions = joined.positions.map((p) => ({ ...p }));
    let rotation = 0;
    while (!this.stopping) {
      // Rotate the order so one partition's backlog cannot take every fetch's byte budget.
      const order = positions.map((_, i) => positions[(i + rotation) % positions.length]!);
      rotation++;
      const fetched = await this.api.fetch({
        topic, groupId, partitions: order,
        maxRecords: this.options.maxRecords ?? 500,
        maxBytes: this.options.maxBytes ?? 1024 * 1024,
        maxWaitMs: this.options.maxWaitMs ?? 500,
      });
      const advanced = new Map<number, number>();
      let failure: unknown;
      try {
        for (const p of fetched.partitions) {
          if (p.error) throw OnelogError.fromJSON(p.error);
          const from = positions.find((pos) => pos.partition === p.partition)!.offset;
          await this.process(topic, p, from, handlers, advanced);
          if (this.stopping) break;
        }
      } catch (err) {
        failure = err;
      }
      if (advanced.size > 0) {
        const offsets = [...advanced].map(([partition, offset]) => ({ partition, offset }));
        await this.api.commitOffsets({ groupId, topic, offsets });
        for (const pos of positions) pos.offset = advanced.get(pos.partition) ?? pos.offset;
      }
      if (failure !== undefined) throw failure;
    }
  }

  /** Hands a partition's records to the handler; once all are done, the position moves to `nextOffset`. */
  private async process(
    topic: string, p: FetchedPartition, from: number, handlers: RunOptions, advanced: Map<number, number>,
  ): Promise<void> {
    for (const message of p.records) {
      if (this.stopping) return;
      this.inHandler = true;
      try {
        await handlers.eachMessage({ topic, partition: p.partition, message });
      } finally {
        this.inHandler = false;
      }
      advanced.set(p.partition, message.offset + 1);
    }
    if (p.nextOffset > from) advanced.set(p.partition, p.nextOffset);
  }
}

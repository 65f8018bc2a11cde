/**
 * The producer: turns friendly messages (strings or bytes) into records and appends them. Without a
 * `partition`, a message goes to murmur2 of its key (Kafka's default partitioner) or, with no key, to the
 * topic's sticky partition, which moves on every 16 KiB (Kafka's uniform sticky partitioner, KIP-794).
 *
 * With `idempotent: true` (Kafka's enable.idempotence) the producer gets a producer id and epoch from the
 * broker, picks partitions itself, and numbers each partition's records with consecutive sequences; a send
 * that fails with a retriable error is retried with the same sequences, so the broker stores it once and
 * answers the original offsets. Sends then go one at a time (at most one request in flight), in call order.
 */
import type { OnelogApi } from '../protocol/api.js';
import type { ProduceRecord, ProduceRequest, ProduceResult, ProducerIdentity } from '../protocol/produce.js';
import { backoff } from '../common/backoff.js';
import { systemClock } from '../common/clock.js';
import { Turns } from '../common/turns.js';
import { OnelogError } from '../protocol/errors.js';
import { Partitioner } from '../protocol/partitioner.js';
import { recordBytes } from '../protocol/produce-plan.js';
import type { RecordHeader } from '../protocol/types.js';

/** Bytes given as a string (UTF-8) or a Buffer. */
export type BytesLike = string | Buffer;

/** A message to send. */
export interface Message {
  key?: BytesLike | null;
  /** null = tombstone */
  value: BytesLike | null;
  headers?: Record<string, BytesLike | null>;
  /** ms since the epoch; default: the broker's clock */
  timestamp?: number;
  partition?: number;
}

/** Producer settings. */
export interface ProducerOptions {
  /** Store each send once even when retried; a sequence gap is refused (`OUT_OF_ORDER_SEQUENCE`). @default false */
  idempotent?: boolean;
  /** Retries of a send that failed with a retriable error (network, timeout, storage), idempotent mode only. @default 5 */
  retries?: number;
  /** Wait before the first retry, ms; doubles each time. @default 100 */
  retryBackoffMs?: number;
  /**
   * Gather sends to one topic for up to this long and send them as one request (Kafka's linger.ms); each
   * `send` still resolves with its own offsets. 0: every send is its own request. @default 0
   */
  lingerMs?: number;
  /** With `lingerMs`: send as soon as the gathered records reach this many bytes (Kafka's batch.size). @default 1048576 */
  batchBytes?: number;
}

/** Sends gathered for one topic while lingering. */
interface Gathered {
  records: ProduceRecord[];
  bytes: number;
  sends: Array<{ from: number; count: number; resolve: (r: ProduceResult) => void; reject: (err: unknown) => void }>;
  timer: NodeJS.Timeout;
}

function toBytes(v: BytesLike | null | undefined): Buffer | null {
  if (v === null || v === undefined) return null;
  return typeof v === 'string' ? Buffer.from(v, 'utf8') : v;
}

/** A message as a record to produce. */
export function toProduceRecord(m: Message): ProduceRecord {
  const headers: RecordHeader[] = Object.entries(m.headers ?? {}).map(([key, v]) => ({ key, value: toBytes(v) }));
  const record: ProduceRecord = { key: toBytes(m.key), value: toBytes(m.value), headers };
  if (m.timestamp !== undefined) record.timestamp = m.timestamp;
  if (m.partition !== undefined) record.partition = m.partition;
  return record;
}

const SEQUENCE_WRAP = 2 ** 31;

export class Producer {
  private identity: Promise<ProducerIdentity> | null = null;
  /** `topic/partition` -> next sequence */
  private readonly sequences = new Map<string, number>();
  private readonly partitionCounts = new Map<string, number>();
  private readonly partitioner = new Partitioner();
  /** Idempotent sends, one at a time in order: each partition's sequences follow each other. */
  private readonly sends = new Turns();
  private readonly gathered = new Map<string, Gathered>();

  constructor(
    private readonly api: OnelogApi,
    private readonly options: ProducerOptions = {},
  ) {}

  /**
   * Appends messages to a topic in one request; resolves when they are durable on the broker.
   * With `lingerMs`, the send waits up to that long to go out with others to the same topic.
   * @returns each message's partition and offset, in order
   * @throws OnelogError `UNKNOWN_TOPIC`, `UNKNOWN_PARTITION`, `RECORD_TOO_LARGE` (then none is stored);
   *   idempotent: `OUT_OF_ORDER_SEQUENCE`, `INVALID_PRODUCER_EPOCH`, or the last retriable error after the
   *   retries. A send refused with `UNKNOWN_PRODUCER_ID` (the broker forgot the producer after its records
   *   expired) is sent again once under a new producer id.
   */
  send(request: { topic: string; messages: readonly Message[] }): Promise<ProduceResult> {
    const records = request.messages.map(toProduceRecord);
    if (!this.options.lingerMs) return this.produce(request.topic, records);
    return new Promise((resolve, reject) => {
      let g = this.gathered.get(request.topic);
      if (!g) {
        g = { records: [], bytes: 0, sends: [], timer: setTimeout(() => this.flush(request.topic), this.options.lingerMs) };
        this.gathered.set(request.topic, g);
      }
      g.sends.push({ from: g.records.length, count: records.length, resolve, reject });
      for (const r of records) {
        g.records.push(r);
        g.bytes += (r.key?.length ?? 0) + (r.value?.length ?? 0);
      }
      if (g.bytes >= (this.options.batchBytes ?? 1024 * 1024)) this.flush(request.topic);
    });
  }

  /** Sends what was gathered for `topic` now, as one request, and answers each send its own offsets. */
  private flush(topic: string): void {
    const g = this.gathered.get(topic);
    if (!g) return;
    this.gathered.delete(topic);
    clearTimeout(g.timer);
    this.produce(topic, g.records).then(
      (result) => g.sends.forEach((s) => s.resolve({ topic, offsets: result.offsets.slice(s.from, s.from + s.count) })),
      (err: unknown) => g.sends.forEach((s) => s.reject(err)),
    );
  }

  private produce(topic: string, records: ProduceRecord[]): Promise<ProduceResult> {
    if (!this.options.idempotent) return this.api.produce({ topic, records });
    return this.sends.run(() => this.sendIdempotent(topic, records));
  }

  private async sendIdempotent(topic: string, records: ProduceRecord[]): Promise<ProduceResult> {
    try {
      return await this.sendWithIdentity(topic, records);
    } catch (err) {
      // The broker forgot this producer (its batches all expired): start over as a new producer, once.
      // A refused request stored nothing, so sending it again under a new id cannot store it twice.
      if ((err as OnelogError).code !== 'UNKNOWN_PRODUCER_ID') throw err;
      this.identity = null;
      this.sequences.clear();
      return this.sendWithIdentity(topic, records);
    }
  }

  private async sendWithIdentity(topic: string, records: ProduceRecord[]): Promise<ProduceResult> {
    this.identity ??= this.api.initProducerId();
    const { producerId, producerEpoch } = await this.identity.catch((err: unknown) => {
      this.identity = null;
      throw err;
    });
    const partitions = await this.partitionCount(topic);
    const counts = new Map<number, number>();
    for (const r of records) {
      // A keyed record's size does not matter to the partitioner.
      r.partition ??= this.partitioner.partitionOf(topic, r.key, r.key ? 0 : recordBytes(r), partitions);
      counts.set(r.partition, (counts.get(r.partition) ?? 0) + 1);
    }
    const baseSequences: Record<number, number> = {};
    for (const p of counts.keys()) baseSequences[p] = this.sequences.get(`${topic}/${p}`) ?? 0;
    const request: ProduceRequest = { topic, records, idempotence: { producerId, producerEpoch, baseSequences } };
    const result = await this.withRetries(() => this.api.produce(request));
    for (const [p, n] of counts) this.sequences.set(`${topic}/${p}`, (baseSequences[p]! + n) % SEQUENCE_WRAP);
    return result;
  }

  private async withRetries<T>(call: () => Promise<T>): Promise<T> {
    const retries = this.options.retries ?? 5;
    const initialMs = this.options.retryBackoffMs ?? 100;
    for (let attempt = 0; ; attempt++) {
      try {
        return await call();
      } catch (err) {
        if (!(err instanceof OnelogError) || !err.retriable || attempt >= retries) throw err;
        await backoff(systemClock, attempt + 1, { initialMs, maxMs: initialMs * 2 ** retries });
      }
    }
  }

  private async partitionCount(topic: string): Promise<number> {
    let n = this.partitionCounts.get(topic);
    if (n === undefined) {
      n = (await this.api.describeTopic(topic)).partitions.length;
      this.partitionCounts.set(topic, n);
    }
    return n;
  }
}

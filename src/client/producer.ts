/**
 * The producer: turns friendly messages (strings or bytes) into records and appends them. Without a
 * `partition`, the broker picks one: murmur2 of the key (Kafka's default partitioner), or the next partition
 * in turn for a null key.
 */
import type { OnelogApi, ProduceRecord, ProduceResult } from '../protocol/api.js';
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

export class Producer {
  constructor(private readonly api: OnelogApi) {}

  /**
   * Appends messages to a topic in one request; resolves when they are durable on the broker.
   * @returns each message's partition and offset, in order
   * @throws OnelogError `UNKNOWN_TOPIC`, `UNKNOWN_PARTITION`, `RECORD_TOO_LARGE` (then none is stored)
   */
  send(request: { topic: string; messages: readonly Message[] }): Promise<ProduceResult> {
    return this.api.produce({ topic: request.topic, records: request.messages.map(toProduceRecord) });
  }
}

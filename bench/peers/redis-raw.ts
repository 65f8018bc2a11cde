/**
 * Redis Streams driven at its best from Node: one TCP connection writing pre-encoded RESP pipelines (as
 * `redis-benchmark -P N` does) and replies parsed by `redis-parser` (the parser ioredis 4 and node-redis 3
 * used) with buffers, so no client library's per-command objects stand between the harness and Redis.
 *
 * - produce: a pipeline is one buffer of N `XADD key * v VALUE` commands, written at once; K pipelines in flight;
 * - consume: `XREADGROUP ... COUNT N`, and each batch's `XACK` written together with the next read (pipelined).
 */
import net from 'node:net';
import RedisParser from 'redis-parser';

/** A RESP bulk string. */
function bulk(arg: Buffer | string): Buffer {
  const bytes = typeof arg === 'string' ? Buffer.from(arg) : arg;
  return Buffer.concat([Buffer.from(`$${bytes.length}\r\n`), bytes, Buffer.from('\r\n')]);
}

/** One RESP command (an array of bulk strings). */
export function command(...args: Array<Buffer | string>): Buffer {
  return Buffer.concat([Buffer.from(`*${args.length}\r\n`), ...args.map(bulk)]);
}

/** A stream entry as XREADGROUP answers it with buffers: [id, [field, value, ...]]. */
export type RawEntry = [Buffer, Buffer[]];

/** One connection: commands are answered in order, each reply resolving its waiter. */
export class RawRedis {
  private readonly waiting: Array<{ resolve: (reply: unknown) => void; reject: (err: Error) => void }> = [];
  private readonly parser: RedisParser;

  private constructor(private readonly socket: net.Socket) {
    this.parser = new RedisParser({
      returnBuffers: true,
      returnReply: (reply: unknown) => this.waiting.shift()?.resolve(reply),
      returnError: (err: Error) => this.waiting.shift()?.reject(err),
    });
    socket.setNoDelay(true);
    socket.on('data', (chunk) => this.parser.execute(chunk));
    socket.on('error', (err) => this.failAll(err));
    socket.on('close', () => this.failAll(new Error('the Redis connection closed')));
  }

  static connect(host: string, port: number): Promise<RawRedis> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(port, host, () => resolve(new RawRedis(socket)));
      socket.once('error', reject);
    });
  }

  /**
   * Writes `commands` (pre-encoded RESP, `count` commands in all) in one write; resolves with their replies
   * once all arrived.
   * @throws the first error reply
   */
  send(commands: Buffer, count: number): Promise<unknown[]> {
    const replies = Array.from({ length: count }, () => new Promise<unknown>((resolve, reject) => this.waiting.push({ resolve, reject })));
    this.socket.write(commands);
    return Promise.all(replies);
  }

  close(): void {
    this.socket.destroy();
  }

  private failAll(err: Error): void {
    for (const w of this.waiting.splice(0)) w.reject(err);
  }
}

/** `count` XADDs of `value` to `key` as one pre-encoded pipeline. */
export function xaddPipeline(key: string, value: Buffer, count: number): Buffer {
  const one = command('XADD', key, '*', 'v', value);
  return Buffer.concat(Array.from({ length: count }, () => one));
}

/** XREADGROUP of one stream for consumer `c1`; its entries (none when it timed out). */
export function entriesOf(reply: unknown): RawEntry[] {
  if (!Array.isArray(reply) || reply.length === 0) return [];
  // RESP2: [[stream, entries]].
  return ((reply[0] as unknown[])[1] ?? []) as RawEntry[];
}

/**
 * Reads `total` entries of `key` through group `group`, `count` per XREADGROUP, each batch's XACK pipelined
 * with the next read; calls `onEntry` with the value of each.
 */
export async function readAll(redis: RawRedis, key: string, group: string, count: number, total: number, onEntry: (value: Buffer) => void): Promise<void> {
  const read = command('XREADGROUP', 'GROUP', group, 'c1', 'COUNT', String(count), 'BLOCK', '1000', 'STREAMS', key, '>');
  let received = 0;
  let [reply] = await redis.send(read, 1);
  for (;;) {
    const entries = entriesOf(reply);
    if (entries.length === 0) throw new Error(`stalled after ${received} records`);
    for (const [, fields] of entries) onEntry(fields[1]!);
    received += entries.length;
    const ack = command('XACK', key, group, ...entries.map(([id]) => id));
    if (received >= total) {
      await redis.send(ack, 1);
      return;
    }
    [, reply] = await redis.send(Buffer.concat([ack, read]), 2);
  }
}

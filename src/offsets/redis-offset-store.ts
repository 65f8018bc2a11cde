/**
 * The offset store on Redis (`ioredis`), for cluster mode: every broker of a cluster reads and commits the same
 * offsets. Keys, under a prefix (default `onelog:`):
 *
 * - `<prefix>offsets:<groupId>`: a hash, field `topic 0x00 partition` (partition in decimal), value the same
 *   binary record as the LMDB engine's: `0x01 float64le(offset) float64le(commitTimestamp) utf8(metadata)`;
 * - `<prefix>generation:<groupId>`: a hash of the group's highest generation (`highest`) and its fence (`fence`);
 * - `<prefix>record-states:<groupId>`: a hash, field as the offsets', value the partition's record state as JSON;
 * - `<prefix>record-entries:<groupId> 0x00 <topic> 0x00 <partition>`: a hash of one partition's record-state entries,
 *   field the offset in decimal; `<prefix>record-entry-keys:<groupId>`: a set of the group's entry hashes;
 * - `<prefix>topic-groups:<topic>`: a set of the groups that committed offsets or kept a record state of the topic
 *   (for deleteTopic).
 *
 * Every write is one Lua script, so it is atomic: a commit checks the group's generation and writes its
 * offsets in the same step. Writes travel in call order on one connection, so operations take effect in the
 * order they were called (the store's contract). The scripts touch the keys of several groups (deleteTopic),
 * so the store needs a standalone Redis (or one behind Sentinel), not Redis Cluster.
 *
 * Durability is Redis's own: a commit is acknowledged once Redis has it in memory, and survives a Redis crash
 * only with `appendonly yes` and `appendfsync always` (with `everysec`, up to a second of commits can go).
 * {@link RedisOffsetStore.open} reads the server's setting and reports it (`durability`), so the broker can log
 * it at start. A connection lost mid-call fails the call with `STORAGE_ERROR` (retriable), naming Redis.
 */
import { Redis } from 'ioredis';
import { OnelogError } from '../protocol/errors.js';
import { checkRecordEntries, CloseGate, staleGeneration } from './offset-store.js';
import type { CommittedOffset, RecordEntries, RecordState, GenerationFence, GroupOffset, OffsetCommit, OffsetStore } from './offset-store.js';

/** Options of {@link RedisOffsetStore.open}. */
export interface RedisOffsetStoreOptions {
  /** `redis://[user:password@]host:port[/db]`, as ioredis reads it. */
  url: string;
  /** Prefix of every key, so several clusters (or tests) share one Redis. @default 'onelog:' */
  keyPrefix?: string;
  /**
   * How long a call waits for Redis before it fails with `STORAGE_ERROR`, ms (ioredis's commandTimeout).
   * @default 10000
   */
  commandTimeoutMs?: number;
}

const VALUE_FORMAT = 1;
const VALUE_HEADER_BYTES = 17;

/**
 * KEYS: offsets hash, generation key, then one topic-groups set per topic of the commit.
 * ARGV: the fence's generation ('' = unfenced), the group id, then field/value pairs.
 * Returns -1 when written, else the fence that refused it (nothing written).
 */
const COMMIT = `
local stored = tonumber(redis.call('HGET', KEYS[2], 'fence') or '0')
if ARGV[1] ~= '' and stored > tonumber(ARGV[1]) then return stored end
for i = 3, #ARGV, 2000 do
  redis.call('HSET', KEYS[1], unpack(ARGV, i, math.min(i + 1999, #ARGV)))
end
for i = 3, #KEYS do redis.call('SADD', KEYS[i], ARGV[2]) end
return -1`;

/** KEYS: generation key. ARGV: generation, '1' to fence. Returns the highest generation after the call. */
const ADVANCE = `
local highest = tonumber(redis.call('HGET', KEYS[1], 'highest') or '0')
local wanted = tonumber(ARGV[1])
if wanted > highest then redis.call('HSET', KEYS[1], 'highest', ARGV[1]); highest = wanted end
if ARGV[2] == '1' and wanted > tonumber(redis.call('HGET', KEYS[1], 'fence') or '0') then redis.call('HSET', KEYS[1], 'fence', ARGV[1]) end
return highest`;

/**
 * KEYS: the topic's topic-groups set. ARGV: the offsets-hash prefix, the topic, the record-states-hash prefix, the
 * entry-keys-set prefix, the entries-hash prefix. Removes the topic's fields from every group that committed it or kept a record state of it,
 * and its entry hashes; returns how many offsets were removed.
 */
const DELETE_TOPIC = `
local removed = 0
local prefix = ARGV[2] .. '\\0'
local function strip(hash)
  local fields = {}
  for _, field in ipairs(redis.call('HKEYS', hash)) do
    if string.sub(field, 1, #prefix) == prefix then fields[#fields + 1] = field end
  end
  local n = 0
  for i = 1, #fields, 2000 do
    n = n + redis.call('HDEL', hash, unpack(fields, i, math.min(i + 1999, #fields)))
  end
  return n
end
for _, group in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  removed = removed + strip(ARGV[1] .. group)
  strip(ARGV[3] .. group)
  local set = ARGV[4] .. group
  local want = ARGV[5] .. group .. '\\0' .. prefix
  for _, key in ipairs(redis.call('SMEMBERS', set)) do
    if string.sub(key, 1, #want) == want then
      redis.call('DEL', key)
      redis.call('SREM', set, key)
    end
  end
end
redis.call('DEL', KEYS[1])
return removed`;

/**
 * KEYS: the record-states hash, the topic-groups set, the partition's entries hash, the group's entry-keys set.
 * ARGV: the field, the group id, the state as JSON ('' removes it and every entry), the count of entries to set, then
 * offset/value pairs to set, then offsets to remove.
 */
const SET_RECORD_STATE = `
if ARGV[3] == '' then
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('DEL', KEYS[3])
  redis.call('SREM', KEYS[4], KEYS[3])
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('SADD', KEYS[2], ARGV[2])
local sets = tonumber(ARGV[4])
local first = 5 + 2 * sets
for i = 5, first - 1, 2000 do
  redis.call('HSET', KEYS[3], unpack(ARGV, i, math.min(i + 1999, first - 1)))
end
for i = first, #ARGV, 2000 do
  redis.call('HDEL', KEYS[3], unpack(ARGV, i, math.min(i + 1999, #ARGV)))
end
if sets > 0 then redis.call('SADD', KEYS[4], KEYS[3]) end
return 0`;

/** KEYS: the group's offsets hash, record-states hash and entry-keys set. Removes them and every entries hash of the group. */
const DELETE_GROUP = `
for _, key in ipairs(redis.call('SMEMBERS', KEYS[3])) do redis.call('DEL', key) end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
return 0`;

type Scripts = {
  onelogCommit(numKeys: number, ...args: Array<string | Buffer>): Promise<number>;
  onelogAdvance(key: string, generation: string, fence: '0' | '1'): Promise<number>;
  onelogDeleteTopic(key: string, hashPrefix: string, topic: string, recordStatesPrefix: string, entryKeysPrefix: string, entriesPrefix: string): Promise<number>;
  onelogSetRecordState(...args: string[]): Promise<number>;
  onelogDeleteGroup(offsetsKey: string, recordStatesKey: string, entryKeysKey: string): Promise<number>;
};

function encodeValue(offset: number, now: number, metadata: string | undefined): Buffer {
  const meta = metadata ? Buffer.from(metadata, 'utf8') : undefined;
  const buf = Buffer.allocUnsafe(VALUE_HEADER_BYTES + (meta?.length ?? 0));
  buf[0] = VALUE_FORMAT;
  buf.writeDoubleLE(offset, 1);
  buf.writeDoubleLE(now, 9);
  meta?.copy(buf, VALUE_HEADER_BYTES);
  return buf;
}

function decodeValue(buf: Buffer): CommittedOffset {
  if (buf.length < VALUE_HEADER_BYTES || buf[0] !== VALUE_FORMAT) {
    throw new Error(`offset store: unknown value format ${buf[0]} (${buf.length} bytes)`);
  }
  return { offset: buf.readDoubleLE(1), commitTimestamp: buf.readDoubleLE(9), metadata: buf.toString('utf8', VALUE_HEADER_BYTES) };
}

function checkPartition(topic: string, partition: number): void {
  if (!Number.isInteger(partition) || partition < 0 || partition > 0xffffffff) {
    throw new RangeError(`offset store: partition ${partition} of topic '${topic}' is not an integer in 0..2^32-1`);
  }
}

export class RedisOffsetStore implements OffsetStore {
  private readonly gate = new CloseGate('Redis');

  private constructor(
    private readonly redis: Redis & Scripts,
    private readonly prefix: string,
    /** What a commit survives, as the server is configured (read at open). */
    readonly durability: string,
    private readonly connection: ConnectionState,
  ) {}

  /**
   * Connects to Redis and reads its persistence setting.
   * @throws OnelogError `STORAGE_ERROR` if Redis cannot be reached
   */
  static async open(options: RedisOffsetStoreOptions): Promise<RedisOffsetStore> {
    const redis = new Redis(options.url, {
      lazyConnect: true,
      commandTimeout: options.commandTimeoutMs ?? 10_000,
      maxRetriesPerRequest: 2,
      // A broker keeps trying to reach Redis; each call in the meantime fails on its own timeout.
      retryStrategy: (times) => Math.min(times * 100, 2000),
    }) as Redis & Scripts;
    // Each call reports its own failure (ioredis reconnects meanwhile); the last connection error is kept for
    // it, since ioredis fails a call during an outage with only "Connection is closed." or its retry limit.
    const connection: ConnectionState = { lastError: undefined };
    redis.on('error', (err: Error) => (connection.lastError = err.message));
    redis.on('ready', () => (connection.lastError = undefined));
    redis.defineCommand('onelogCommit', { lua: COMMIT });
    redis.defineCommand('onelogAdvance', { lua: ADVANCE, numberOfKeys: 1 });
    redis.defineCommand('onelogDeleteTopic', { lua: DELETE_TOPIC, numberOfKeys: 1 });
    redis.defineCommand('onelogSetRecordState', { lua: SET_RECORD_STATE, numberOfKeys: 4 });
    redis.defineCommand('onelogDeleteGroup', { lua: DELETE_GROUP, numberOfKeys: 3 });
    try {
      await redis.connect();
      // ioredis reports a refused SELECT (a database beyond the server's count) as an event only, and goes on in 0.
      await selectDatabase(redis);
    } catch (err) {
      redis.disconnect();
      throw err instanceof OnelogError ? err : unavailable(err, 'connect', connection);
    }
    return new RedisOffsetStore(redis, options.keyPrefix ?? 'onelog:', await readDurability(redis), connection);
  }

  async get(groupId: string, topic: string, partition: number): Promise<CommittedOffset | undefined> {
    const value = await this.call('get', () => this.redis.hgetBuffer(this.offsetsKey(groupId), `${topic}\0${partition}`));
    return value === null ? undefined : decodeValue(value);
  }

  async commit(groupId: string, offsets: readonly OffsetCommit[], now: number, fence?: GenerationFence): Promise<void> {
    if (offsets.length === 0) return;
    const args: Array<string | Buffer> = [fence === undefined ? '' : String(fence.generationId), groupId];
    const topics = new Set<string>();
    for (const o of offsets) {
      checkPartition(o.topic, o.partition);
      topics.add(o.topic);
      args.push(`${o.topic}\0${o.partition}`, encodeValue(o.offset, now, o.metadata));
    }
    const keys = [this.offsetsKey(groupId), this.generationKey(groupId), ...[...topics].map((t) => this.topicKey(t))];
    const stored = await this.call('commit', () => this.redis.onelogCommit(keys.length, ...keys, ...args));
    if (stored >= 0) throw staleGeneration(groupId, fence!, stored);
  }

  async generation(groupId: string): Promise<number> {
    return Number(await this.call('generation', () => this.redis.hget(this.generationKey(groupId), 'highest')) ?? 0);
  }

  async advanceGeneration(groupId: string, generationId: number, options: { fence?: boolean } = {}): Promise<number> {
    return this.call('generation', () => this.redis.onelogAdvance(this.generationKey(groupId), String(generationId), options.fence ? '1' : '0'));
  }

  async list(groupId: string): Promise<GroupOffset[]> {
    const all = await this.call('list', () => this.redis.hgetallBuffer(this.offsetsKey(groupId)));
    const out: Array<GroupOffset & { topicBytes: Buffer }> = [];
    for (const [field, value] of Object.entries(all)) {
      const cut = field.lastIndexOf('\0');
      const topic = field.slice(0, cut);
      out.push({ topic, partition: Number(field.slice(cut + 1)), ...decodeValue(value), topicBytes: Buffer.from(topic, 'utf8') });
    }
    // As the LMDB engine orders its keys: topic by UTF-8 bytes, then partition.
    out.sort((a, b) => Buffer.compare(a.topicBytes, b.topicBytes) || a.partition - b.partition);
    return out.map(({ topicBytes: _, ...o }) => o);
  }

  async recordState(groupId: string, topic: string, partition: number): Promise<RecordState | undefined> {
    checkPartition(topic, partition);
    const value = await this.call('record state', () => this.redis.hget(this.recordStatesKey(groupId), `${topic}\0${partition}`));
    return value === null ? undefined : JSON.parse(value) as RecordState;
  }

  async setRecordState(groupId: string, topic: string, partition: number, state: RecordState | null, entries: RecordEntries = {}): Promise<void> {
    checkPartition(topic, partition);
    const { set, remove } = checkRecordEntries(entries);
    const args = [
      this.recordStatesKey(groupId), this.topicKey(topic), this.entriesKey(groupId, topic, partition), this.entryKeysKey(groupId),
      `${topic}\0${partition}`, groupId, state === null ? '' : JSON.stringify(state), String(set.length),
      ...set.flatMap(([offset, value]) => [String(offset), value]), ...remove.map(String),
    ];
    await this.call('record state', () => this.redis.onelogSetRecordState(...args));
  }

  async recordEntries(groupId: string, topic: string, partition: number): Promise<Array<[number, string]>> {
    checkPartition(topic, partition);
    const all = await this.call('record entries', () => this.redis.hgetall(this.entriesKey(groupId, topic, partition)));
    return Object.entries(all).map(([offset, value]): [number, string] => [Number(offset), value]).sort((a, b) => a[0] - b[0]);
  }

  async deleteGroup(groupId: string): Promise<void> {
    await this.call('group deletion', () => this.redis.onelogDeleteGroup(this.offsetsKey(groupId), this.recordStatesKey(groupId), this.entryKeysKey(groupId)));
  }

  async deleteTopic(topic: string): Promise<number> {
    return this.call('topic deletion', () => this.redis.onelogDeleteTopic(
      this.topicKey(topic), `${this.prefix}offsets:`, topic, `${this.prefix}record-states:`, `${this.prefix}record-entry-keys:`, `${this.prefix}record-entries:`,
    ));
  }

  /** @see OffsetStore.probe */
  async probe(): Promise<void> {
    await this.call('health probe', () => this.redis.ping());
  }

  async close(): Promise<void> {
    if (!(await this.gate.close())) return;
    await this.redis.quit().catch(() => this.redis.disconnect());
  }

  private offsetsKey(groupId: string): string {
    return `${this.prefix}offsets:${groupId}`;
  }

  private recordStatesKey(groupId: string): string {
    return `${this.prefix}record-states:${groupId}`;
  }

  private entriesKey(groupId: string, topic: string, partition: number): string {
    return `${this.prefix}record-entries:${groupId}\0${topic}\0${partition}`;
  }

  private entryKeysKey(groupId: string): string {
    return `${this.prefix}record-entry-keys:${groupId}`;
  }

  private generationKey(groupId: string): string {
    return `${this.prefix}generation:${groupId}`;
  }

  private topicKey(topic: string): string {
    return `${this.prefix}topic-groups:${topic}`;
  }

  private async call<T>(action: string, work: () => Promise<T>): Promise<T> {
    try {
      return await this.gate.run(work);
    } catch (err) {
      throw err instanceof OnelogError ? err : unavailable(err, action, this.connection);
    }
  }
}

/** What the store saw of its connection. */
interface ConnectionState {
  /** The message of the last connection error since the connection was last ready. */
  lastError: string | undefined;
}

/** @throws OnelogError `INVALID_CONFIG` naming the databases the server has, for a database it has not */
async function selectDatabase(redis: Redis): Promise<void> {
  const db = redis.options.db ?? 0;
  if (db === 0) return;
  try {
    await redis.select(db);
  } catch (err) {
    if (!/DB index/i.test((err as Error).message)) throw err;
    const [, count] = await redis.config('GET', 'databases').catch(() => []) as string[];
    throw new OnelogError('INVALID_CONFIG', `the offsets' Redis URL names database ${db}, which the server has not: ` +
      `${count === undefined ? (err as Error).message : `it has databases 0 to ${Number(count) - 1}`}`, { store: 'redis', db });
  }
}

function unavailable(err: unknown, action: string, connection: ConnectionState): OnelogError {
  const cause = err instanceof Error ? err.message : String(err);
  const message = connection.lastError === undefined ? cause : `${cause} (last connection error: ${connection.lastError})`;
  return new OnelogError('STORAGE_ERROR', `offset store (Redis): ${action} failed: ${message}`, { store: 'redis', action });
}

/** What an acknowledged commit survives, from the server's `appendonly` and `appendfsync`. */
async function readDurability(redis: Redis): Promise<string> {
  try {
    const appendonly = configValue(await redis.config('GET', 'appendonly'));
    const appendfsync = configValue(await redis.config('GET', 'appendfsync'));
    if (appendonly !== 'yes') return 'appendonly no: commits are in Redis\'s memory only, a Redis crash or restart loses them';
    if (appendfsync === 'always') return 'appendonly yes, appendfsync always: a commit survives a Redis crash and a power loss';
    return `appendonly yes, appendfsync ${appendfsync}: a Redis crash or power loss can lose about the last second of commits`;
  } catch {
    return 'unknown (CONFIG GET is not allowed): see the server\'s appendonly and appendfsync';
  }
}

/** A CONFIG GET answer's value: `[name, value]` in RESP2, `{ name: value }` in RESP3. */
function configValue(answer: unknown): string | undefined {
  if (Array.isArray(answer)) return answer[1] as string | undefined;
  if (answer instanceof Map) return [...(answer as Map<string, string>).values()][0];
  return answer !== null && typeof answer === 'object' ? Object.values(answer as Record<string, string>)[0] : undefined;
}
